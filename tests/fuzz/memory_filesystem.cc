// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "memory_filesystem.h"

#include <arrow/filesystem/filesystem.h>
#include <arrow/filesystem/mockfs.h>
#include <arrow/util/uri.h>

#include <chrono>
#include <memory>
#include <mutex>

namespace stoker::fuzz {

namespace {

// The one in-memory filesystem; a fixed clock, so a file's identity (and the dataset
// fingerprint) depends on its bytes only.
std::shared_ptr<arrow::fs::internal::MockFileSystem> Filesystem() {
  static auto* fs = new std::shared_ptr<arrow::fs::internal::MockFileSystem>(
      std::make_shared<arrow::fs::internal::MockFileSystem>(arrow::fs::TimePoint{}));
  return *fs;
}

}  // namespace

arrow::Status RegisterMemoryFileSystem() {
  static std::once_flag once;
  arrow::Status status;
  std::call_once(once, [&] {
    status = arrow::fs::RegisterFileSystemFactory(
        std::string(kMemoryScheme),
        {[](const arrow::util::Uri& uri, const arrow::io::IOContext&,
            std::string* out_path) -> arrow::Result<std::shared_ptr<arrow::fs::FileSystem>> {
           // "mem:///a.parquet": path "/a.parquet"; the mock filesystem's paths are relative.
           std::string path = uri.path();
           if (!path.empty() && path.front() == '/') path.erase(0, 1);
           if (out_path != nullptr) *out_path = path;
           return Filesystem();
         },
         __FILE__, __LINE__});
  });
  return status;
}

arrow::Result<std::string> PutMemoryFile(const std::string& name, const uint8_t* data,
                                         size_t size) {
  ARROW_RETURN_NOT_OK(RegisterMemoryFileSystem());
  ARROW_RETURN_NOT_OK(Filesystem()->CreateFile(
      name, std::string_view(reinterpret_cast<const char*>(data), size), /*recursive=*/true));
  return std::string(kMemoryScheme) + ":///" + name;
}

}  // namespace stoker::fuzz
