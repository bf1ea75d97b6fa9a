// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/identity_check.h"

#include "stoker/error.h"

namespace stoker {

namespace {

// The store's `file` against the identity the index recorded for it.
arrow::Status Compare(const SourceFile& file, const std::string& index_display) {
  auto info = file.filesystem->GetFileInfo(file.path);
  if (!info.ok()) return WithContext(ExplainStorageError(info.status(), file.display), "checking");
  const std::string rewrite =
      "; rewrite the index with `stoker index --overwrite` (index=\"trust\" "
      "reads no listing, so a changed file is found at its first read)";
  if (info->type() != arrow::fs::FileType::File) {
    return NotFound("'", file.display, "' is in the dataset index '", index_display,
                    "' but no longer in the store (removed after the index was written)", rewrite);
  }
  const SourceFile now = ToSourceFile(file.filesystem, *info);
  if (now.size != file.size || now.mtime_ns != file.mtime_ns) {
    return arrow::Status::Invalid("'", file.display, "' was rewritten after the dataset index '",
                                  index_display, "' was written (size ", now.size,
                                  " bytes, modified at ", now.mtime_ns, " ns; indexed ", file.size,
                                  " bytes at ", file.mtime_ns, " ns)", rewrite);
  }
  return arrow::Status::OK();
}

}  // namespace

arrow::Future<> IdentityCheck::Verify(int32_t index, const SourceFile& file,
                                      const std::string& index_display,
                                      arrow::internal::Executor* executor, Stats* stats) {
  MutexLock lock(mutex_);
  arrow::Future<>& check = checks_[index];
  if (check.is_valid()) return check;
  if (stats != nullptr) stats->AddMetadataRequest(0);
  check = arrow::DeferNotOk(
      executor->Submit([file, where = index_display] { return Compare(file, where); }));
  return check;
}

}  // namespace stoker
