// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/footer_reader.h"

#include <arrow/util/parallel.h>
#include <arrow/util/thread_pool.h>
#include <parquet/arrow/reader.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>

#include <algorithm>
#include <limits>

#include "manifest/counting_file.h"
#include "stoker/error.h"

namespace stoker {

namespace {

arrow::Result<Footer> ReadFooter(const SourceFile& file, Stats* stats) {
  // Opening by FileInfo skips a metadata request (the size is known from the listing), so a
  // footer costs one ranged GET (two when it is larger than Parquet's first read).
  arrow::fs::FileInfo info(file.path, arrow::fs::FileType::File);
  info.set_size(file.size);
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::io::RandomAccessFile> input,
                        file.filesystem->OpenInputFile(info));
  if (stats != nullptr) {
    input = std::make_shared<CountingFile>(std::move(input), stats, RequestKind::kMetadata);
  }
  std::shared_ptr<parquet::FileMetaData> metadata;
  BEGIN_PARQUET_CATCH_EXCEPTIONS
  metadata = parquet::ParquetFileReader::Open(input)->metadata();
  END_PARQUET_CATCH_EXCEPTIONS
  if (metadata->is_encryption_algorithm_set()) {
    // Stoker holds no keys; the plaintext footer of an encrypted file cannot even be
    // re-serialized without its signing key.
    return arrow::Status::IOError(
        "Parquet modular encryption (encrypted columns under a plaintext footer) is not "
        "supported");
  }
  ARROW_ASSIGN_OR_RAISE(Footer footer, DescribeFooter(*metadata));
  BEGIN_PARQUET_CATCH_EXCEPTIONS
  footer.bytes = SerializedFooter(metadata->SerializeToString());
  END_PARQUET_CATCH_EXCEPTIONS
  return footer;
}

}  // namespace

arrow::Result<Footer> DescribeFooter(const parquet::FileMetaData& metadata) {
  Footer footer;
  const parquet::ArrowReaderProperties properties;
  auto manifest = std::make_shared<parquet::arrow::SchemaManifest>();
  BEGIN_PARQUET_CATCH_EXCEPTIONS
  const auto& kv = metadata.key_value_metadata();
  ARROW_RETURN_NOT_OK(
      parquet::arrow::SchemaManifest::Make(metadata.schema(), kv, properties, manifest.get()));
  ARROW_RETURN_NOT_OK(
      parquet::arrow::FromParquetSchema(metadata.schema(), properties, kv, &footer.schema));
  END_PARQUET_CATCH_EXCEPTIONS
  footer.schema_manifest = std::move(manifest);
  return footer;
}

arrow::Result<std::shared_ptr<parquet::FileMetaData>> DecodeFooter(const std::string& serialized) {
  return CatchAll([&]() -> arrow::Result<std::shared_ptr<parquet::FileMetaData>> {
    BEGIN_PARQUET_CATCH_EXCEPTIONS
    parquet::ReaderProperties properties;
    properties.set_thrift_string_size_limit(std::numeric_limits<int32_t>::max());
    properties.set_thrift_container_size_limit(std::numeric_limits<int32_t>::max());
    return parquet::FileMetaData::Make(serialized.data(), static_cast<int64_t>(serialized.size()),
                                       properties);
    END_PARQUET_CATCH_EXCEPTIONS
  });
}

arrow::Result<std::vector<Footer>> ReadFooters(const std::vector<SourceFile>& sources,
                                               int concurrency, Stats* stats,
                                               std::vector<arrow::Status>* failed) {
  std::vector<arrow::Result<Footer>> results(sources.size());
  {
    // Owned for this call only: its threads wait on the network, not on the CPU.
    ARROW_ASSIGN_OR_RAISE(
        auto pool, arrow::internal::ThreadPool::Make(
                       std::max(1, std::min<int>(concurrency, static_cast<int>(sources.size())))));
    ARROW_RETURN_NOT_OK(arrow::internal::ParallelFor(
        static_cast<int>(sources.size()),
        [&](int i) {
          results[i] = CatchAll([&] { return ReadFooter(sources[i], stats); });
          return arrow::Status::OK();
        },
        pool.get()));
  }
  std::vector<Footer> footers;
  footers.reserve(sources.size());
  if (failed != nullptr) failed->assign(sources.size(), arrow::Status::OK());
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!results[i].ok()) {
      const auto& status = results[i].status();
      // A store that fails is not a file that is not Parquet: say which it is.
      arrow::Status error =
          status.IsIOError() && status.message().find("Parquet") == std::string::npos
              ? WithContext(ExplainStorageError(status, sources[i].display), "reading the footer")
              : WithContext(status, "'" + sources[i].display + "' could not be read as Parquet");
      if (failed == nullptr) return error;
      (*failed)[i] = std::move(error);
      footers.emplace_back();
      continue;
    }
    footers.push_back(std::move(*results[i]));
  }
  return footers;
}

}  // namespace stoker
