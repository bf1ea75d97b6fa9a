// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/dataset_index.h"

#include <arrow/io/memory.h>
#include <arrow/util/key_value_metadata.h>
#include <parquet/arrow/writer.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>

#include "manifest/counting_file.h"
#include "stoker/error.h"

namespace stoker {

namespace {

// A data file as the summary records it: its size and modification time, when `stoker
// index` wrote the summary (-1 otherwise), and its row groups' indices in the summary.
struct IndexedFile {
  int64_t size = -1;
  int64_t mtime_ns = -1;
  std::vector<int> row_groups;
};

// The summary file's bytes, in one request.
arrow::Result<std::shared_ptr<parquet::FileMetaData>> ReadSummary(const SourceFile& summary,
                                                                  Stats* stats) {
  arrow::fs::FileInfo info(summary.path, arrow::fs::FileType::File);
  info.set_size(summary.size);
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::io::RandomAccessFile> input,
                        summary.filesystem->OpenInputFile(info));
  if (stats != nullptr) {
    input = std::make_shared<CountingFile>(std::move(input), stats, RequestKind::kMetadata);
  }
  ARROW_ASSIGN_OR_RAISE(auto bytes, input->ReadAt(0, summary.size));
  // A summary holds every row group of the dataset: lift the limits meant for one footer.
  parquet::ReaderProperties properties;
  properties.set_thrift_string_size_limit(std::numeric_limits<int32_t>::max());
  properties.set_thrift_container_size_limit(std::numeric_limits<int32_t>::max());
  BEGIN_PARQUET_CATCH_EXCEPTIONS
  auto reader = parquet::ParquetFileReader::Open(
      std::make_shared<arrow::io::BufferReader>(std::move(bytes)), properties);
  return reader->metadata();
  END_PARQUET_CATCH_EXCEPTIONS
}

// The files the summary describes, by path relative to its directory: from kIndexFilesKey
// when `stoker index` wrote it, and from the row groups' column chunks.
arrow::Result<std::map<std::string, IndexedFile>> IndexedFiles(const parquet::FileMetaData& summary,
                                                               const std::string& where) {
  std::map<std::string, IndexedFile> files;
  const auto& kv = summary.key_value_metadata();
  if (kv != nullptr && kv->Contains(kIndexFilesKey)) {
    std::istringstream lines(kv->Get(kIndexFilesKey).ValueOrDie());
    std::string line;
    while (std::getline(lines, line)) {
      IndexedFile file;
      size_t name_at = 0;
      if (std::sscanf(line.c_str(), "%" SCNd64 " %" SCNd64 " %zn", &file.size, &file.mtime_ns,
                      &name_at) != 2 ||
          name_at == 0 || name_at >= line.size()) {
        return arrow::Status::Invalid("'", where, "': malformed ", kIndexFilesKey, " entry '", line,
                                      "'");
      }
      files[line.substr(name_at)] = file;
    }
  }
  for (int rg = 0; rg < summary.num_row_groups(); ++rg) {
    auto row_group = summary.RowGroup(rg);
    if (row_group->num_columns() == 0) continue;
    const std::string path = row_group->ColumnChunk(0)->file_path();
    if (path.empty()) {
      return arrow::Status::Invalid("'", where, "': row group ", rg,
                                    " names no file (a summary file's column chunks must carry "
                                    "their file_path)");
    }
    files[path].row_groups.push_back(rg);
  }
  return files;
}

// Why the summary no longer describes the listing, naming the first file that differs; empty
// when it still does. A summary `stoker index` wrote is compared file by file (size and
// mtime); another tool's by names and by no data file being newer than it.
std::string StaleReason(const ResolvedSource& source,
                        const std::map<std::string, IndexedFile>& indexed) {
  std::vector<std::string> reasons;
  std::map<std::string, const SourceFile*> listed;
  for (const auto& file : source.files) listed[RelativeTo(source.root, file.path)] = &file;
  for (const auto& [name, file] : listed) {
    auto it = indexed.find(name);
    if (it == indexed.end()) {
      reasons.push_back("'" + file->display + "' is not in it (added after the index was written)");
      continue;
    }
    const IndexedFile& recorded = it->second;
    const bool by_stoker = recorded.size >= 0;
    if (by_stoker && (recorded.size != file->size || recorded.mtime_ns != file->mtime_ns)) {
      reasons.push_back("'" + file->display + "' was rewritten after the index was written (size " +
                        std::to_string(file->size) + " bytes, indexed " +
                        std::to_string(recorded.size) + ")");
    } else if (!by_stoker && file->mtime_ns > source.summary.mtime_ns) {
      reasons.push_back("'" + file->display + "' was modified after the index was written");
    }
  }
  for (const auto& [name, file] : indexed) {
    if (listed.count(name) == 0) {
      reasons.push_back("'" + name + "' is in it but not in the directory (removed)");
    }
  }
  if (reasons.empty()) return "";
  std::string out = reasons[0];
  if (reasons.size() > 1) out += " (and " + std::to_string(reasons.size() - 1) + " more)";
  return out;
}

// The summary without Stoker's own entry, so that the per-file footers made from it do not
// each carry a copy of the whole file list.
arrow::Result<std::shared_ptr<parquet::FileMetaData>> WithoutFileList(
    const std::shared_ptr<parquet::FileMetaData>& summary) {
  const auto& kv = summary->key_value_metadata();
  if (kv == nullptr || !kv->Contains(kIndexFilesKey)) return summary;
  auto kept = kv->Copy();
  ARROW_RETURN_NOT_OK(kept->Delete(kIndexFilesKey));
  BEGIN_PARQUET_CATCH_EXCEPTIONS
  auto properties = parquet::WriterProperties::Builder()
                        .created_by(summary->created_by())
                        ->version(summary->version())
                        ->build();
  std::shared_ptr<parquet::FileMetaData> clean =
      parquet::FileMetaDataBuilder::Make(summary->schema(), properties)->Finish(kept);
  clean->AppendRowGroups(*summary);
  return clean;
  END_PARQUET_CATCH_EXCEPTIONS
}

}  // namespace

arrow::Result<std::optional<std::vector<Footer>>> ReadSummaryFooters(const ResolvedSource& source,
                                                                     IndexPolicy policy,
                                                                     Stats* stats) {
  const std::string& where = source.summary.display;
  std::shared_ptr<parquet::FileMetaData> summary;
  std::map<std::string, IndexedFile> indexed;
  auto status = CatchAll([&]() -> arrow::Status {
    ARROW_ASSIGN_OR_RAISE(summary, ReadSummary(source.summary, stats));
    if (summary->is_encryption_algorithm_set()) {
      return arrow::Status::IOError("Parquet modular encryption is not supported");
    }
    BEGIN_PARQUET_CATCH_EXCEPTIONS
    ARROW_ASSIGN_OR_RAISE(indexed, IndexedFiles(*summary, where));
    END_PARQUET_CATCH_EXCEPTIONS
    return arrow::Status::OK();
  });
  if (!status.ok()) {
    if (status.IsIOError() && status.message().find("Parquet") == std::string::npos) {
      return WithContext(ExplainStorageError(status, where), "reading the dataset index");
    }
    return WithContext(status, "dataset index '" + where + "' could not be read as Parquet");
  }
  const std::string stale = StaleReason(source, indexed);
  if (!stale.empty()) {
    if (policy == IndexPolicy::kFallback) return std::nullopt;
    return arrow::Status::Invalid(
        "dataset index '", where, "' is stale: ", stale,
        "; rewrite it with `stoker index --overwrite ",
        where.substr(0, where.size() - sizeof(kSummaryFileName)),
        "`, or pass index=\"fallback\" (read every footer while it is stale) or "
        "index=\"ignore\"");
  }
  ARROW_ASSIGN_OR_RAISE(auto clean, WithoutFileList(summary));
  summary.reset();
  ARROW_ASSIGN_OR_RAISE(Footer shared, DescribeFooter(*clean));
  std::vector<Footer> footers;
  footers.reserve(source.files.size());
  auto made = CatchAll([&]() -> arrow::Status {
    BEGIN_PARQUET_CATCH_EXCEPTIONS
    for (const auto& file : source.files) {
      Footer footer = shared;
      const auto& row_groups = indexed[RelativeTo(source.root, file.path)].row_groups;
      footer.serialized = clean->Subset(row_groups)->SerializeToString();
      footers.push_back(std::move(footer));
    }
    END_PARQUET_CATCH_EXCEPTIONS
    return arrow::Status::OK();
  });
  ARROW_RETURN_NOT_OK(WithContext(made, "dataset index '" + where + "'"));
  return footers;
}

arrow::Result<IndexReport> WriteDatasetIndex(const std::string& source,
                                             const StorageOptions& storage, bool overwrite) {
  ARROW_ASSIGN_OR_RAISE(auto resolved, ResolveSourceList({source}, storage));
  const ResolvedSource& dir = resolved[0];
  if (dir.root.empty()) {
    return arrow::Status::Invalid("source '", source,
                                  "': an index is written for a directory, not a file or glob");
  }
  const auto& fs = dir.files[0].filesystem;
  IndexReport report;
  report.path = dir.root + "/" + kSummaryFileName;
  if (fs->type_name() != "local") report.path = fs->type_name() + "://" + report.path;
  if (!dir.summary.path.empty() && !overwrite) {
    return arrow::Status::Invalid("'", report.path,
                                  "' exists; pass --overwrite (overwrite=True) to replace it");
  }
  ARROW_ASSIGN_OR_RAISE(auto footers,
                        ReadFooters(dir.files, storage.ResolvedMetadataThreads(), nullptr));
  std::ostringstream file_list;
  std::shared_ptr<parquet::FileMetaData> summary;
  auto built = CatchAll([&]() -> arrow::Status {
    BEGIN_PARQUET_CATCH_EXCEPTIONS
    std::vector<std::shared_ptr<parquet::FileMetaData>> decoded;
    for (const auto& footer : footers) {
      ARROW_ASSIGN_OR_RAISE(auto metadata, DecodeFooter(footer.serialized));
      decoded.push_back(std::move(metadata));
    }
    const auto& first = *decoded[0];
    for (size_t i = 0; i < decoded.size(); ++i) {
      const SourceFile& file = dir.files[i];
      auto& metadata = *decoded[i];
      if (!metadata.schema()->Equals(*first.schema())) {
        return arrow::Status::Invalid(
            "'", file.display, "' has a Parquet schema other than '", dir.files[0].display,
            "': one index holds one schema (index the files apart, or read them without one)");
      }
      const std::string relative = RelativeTo(dir.root, file.path);
      if (relative.find('\n') != std::string::npos) {
        return arrow::Status::Invalid("'", file.display, "': a file name with a line break");
      }
      file_list << file.size << ' ' << file.mtime_ns << ' ' << relative << '\n';
      metadata.set_file_path(relative);
    }
    auto kv = first.key_value_metadata() == nullptr ? std::make_shared<arrow::KeyValueMetadata>()
                                                    : first.key_value_metadata()->Copy();
    kv->Append(kIndexFilesKey, file_list.str());
    auto properties = parquet::WriterProperties::Builder()
                          .created_by(first.created_by())
                          ->version(first.version())
                          ->build();
    summary = parquet::FileMetaDataBuilder::Make(first.schema(), properties)->Finish(kv);
    for (const auto& metadata : decoded) {
      summary->AppendRowGroups(*metadata);
      report.row_groups += metadata->num_row_groups();
    }
    END_PARQUET_CATCH_EXCEPTIONS
    return arrow::Status::OK();
  });
  ARROW_RETURN_NOT_OK(built);
  // Local: written beside and renamed into place, so a reader never sees half of it. Object
  // stores make a PUT visible only once it is complete.
  const std::string target = dir.root + "/" + kSummaryFileName;
  const bool local = fs->type_name() == "local";
  const std::string written =
      local ? dir.root + "/._metadata.stoker-" + std::to_string(getpid()) : target;
  auto write = [&]() -> arrow::Status {
    ARROW_ASSIGN_OR_RAISE(auto out, fs->OpenOutputStream(written));
    ARROW_RETURN_NOT_OK(parquet::arrow::WriteMetaDataFile(*summary, out.get()));
    ARROW_ASSIGN_OR_RAISE(report.bytes, out->Tell());
    ARROW_RETURN_NOT_OK(out->Close());
    if (local) ARROW_RETURN_NOT_OK(fs->Move(written, target));
    return arrow::Status::OK();
  };
  ARROW_RETURN_NOT_OK(ExplainStorageError(CatchAll(write), report.path));
  report.files = static_cast<int64_t>(dir.files.size());
  return report;
}

}  // namespace stoker
