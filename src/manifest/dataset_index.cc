// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/dataset_index.h"

#include <arrow/io/memory.h>
#include <arrow/util/key_value_metadata.h>
#include <arrow/util/thread_pool.h>
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

// The summary file's bytes, in one request.
arrow::Result<std::shared_ptr<arrow::Buffer>> ReadSummary(const SourceFile& summary, Stats* stats) {
  arrow::fs::FileInfo info(summary.path, arrow::fs::FileType::File);
  info.set_size(summary.size);
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::io::RandomAccessFile> input,
                        summary.filesystem->OpenInputFile(info));
  if (stats != nullptr) {
    input = std::make_shared<CountingFile>(std::move(input), stats, RequestKind::kMetadata);
  }
  return input->ReadAt(0, summary.size);
}

// The files the summary describes, by path relative to its directory: from kIndexFilesKey
// when `stoker index` wrote it, and from the row groups' column chunks.
arrow::Status IndexedFiles(const std::string& where, DatasetIndex* index) {
  auto& files = index->files;
  for (const auto& kv : index->skim.key_values) {
    if (kv.key != kIndexFilesKey) continue;
    index->by_stoker = true;
    std::istringstream lines{std::string(kv.value)};
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
  for (const auto& kv : index->skim.key_values) {
    if (kv.key != kIndexChecksumsKey) continue;
    std::istringstream lines{std::string(kv.value)};
    std::string line;
    while (std::getline(lines, line)) {
      const size_t space = line.find(' ');
      auto checksums = space == std::string::npos
                           ? arrow::Result<std::vector<uint64_t>>(arrow::Status::Invalid("no path"))
                           : DecodeChecksums(std::string_view(line).substr(0, space));
      if (!checksums.ok()) {
        return arrow::Status::Invalid("'", where, "': malformed ", kIndexChecksumsKey, " entry (",
                                      checksums.status().message(), ")");
      }
      files[line.substr(space + 1)].checksums = std::move(*checksums);
    }
  }
  const auto& row_groups = index->skim.row_groups;
  for (size_t rg = 0; rg < row_groups.size(); ++rg) {
    if (row_groups[rg].num_columns == 0) continue;
    if (row_groups[rg].file_path.empty()) {
      return arrow::Status::Invalid("'", where, "': row group ", rg,
                                    " names no file (a summary file's column chunks must carry "
                                    "their file_path)");
    }
    files[std::string(row_groups[rg].file_path)].row_groups.push_back(static_cast<int>(rg));
  }
  return arrow::Status::OK();
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

// Every column chunk's checksum in `file`, row group by row group, leaf by leaf; each row
// group's chunks are read in one request. Adds the bytes read to `bytes_read`.
arrow::Result<std::vector<uint64_t>> ChecksumChunks(const SourceFile& file,
                                                    const parquet::FileMetaData& metadata,
                                                    int64_t* bytes_read) {
  arrow::fs::FileInfo info(file.path, arrow::fs::FileType::File);
  info.set_size(file.size);
  ARROW_ASSIGN_OR_RAISE(auto input, file.filesystem->OpenInputFile(info));
  std::vector<uint64_t> out;
  for (int rg = 0; rg < metadata.num_row_groups(); ++rg) {
    const auto row_group = metadata.RowGroup(rg);
    std::vector<ChunkRange> ranges;
    int64_t first = file.size, end = 0;
    for (int leaf = 0; leaf < row_group->num_columns(); ++leaf) {
      const ChunkRange range = ChunkRangeOf(*row_group->ColumnChunk(leaf));
      if (range.start < 0 || range.length < 0 || range.start + range.length > file.size) {
        return arrow::Status::Invalid("'", file.display, "': column chunk ", leaf, " of row group ",
                                      rg, " lies outside the file's ", file.size, " bytes");
      }
      ranges.push_back(range);
      first = std::min(first, range.start);
      end = std::max(end, range.start + range.length);
    }
    if (ranges.empty()) continue;
    ARROW_ASSIGN_OR_RAISE(auto bytes, input->ReadAt(first, end - first));
    if (bytes->size() != end - first) {
      return arrow::Status::IOError("'", file.display, "': short read of row group ", rg);
    }
    *bytes_read += bytes->size();
    for (const auto& range : ranges) {
      out.push_back(ChunkChecksum(bytes->data() + (range.start - first), range.length));
    }
  }
  return out;
}

// The kIndexChecksumsKey entry for `files` (decoded[i] is files[i]'s footer), `concurrency`
// files at a time.
arrow::Result<std::string> ChecksumLines(
    const ResolvedSource& dir, const std::vector<std::shared_ptr<parquet::FileMetaData>>& decoded,
    int concurrency, int64_t* bytes_read) {
  ARROW_ASSIGN_OR_RAISE(auto pool, arrow::internal::ThreadPool::Make(concurrency));
  std::vector<int64_t> bytes(dir.files.size(), 0);
  std::vector<arrow::Future<std::vector<uint64_t>>> checksums;
  for (size_t i = 0; i < dir.files.size(); ++i) {
    ARROW_ASSIGN_OR_RAISE(auto future,
                          pool->Submit([&, i]() -> arrow::Result<std::vector<uint64_t>> {
                            auto result = CatchAll([&]() -> arrow::Result<std::vector<uint64_t>> {
                              BEGIN_PARQUET_CATCH_EXCEPTIONS
                              return ChecksumChunks(dir.files[i], *decoded[i], &bytes[i]);
                              END_PARQUET_CATCH_EXCEPTIONS
                            });
                            if (!result.ok())
                              return ExplainStorageError(result.status(), dir.files[i].display);
                            return result;
                          }));
    checksums.push_back(std::move(future));
  }
  std::ostringstream lines;
  for (size_t i = 0; i < dir.files.size(); ++i) {
    ARROW_ASSIGN_OR_RAISE(const auto& file_checksums, checksums[i].result());
    lines << EncodeChecksums(file_checksums) << ' ' << RelativeTo(dir.root, dir.files[i].path)
          << '\n';
    *bytes_read += bytes[i];
  }
  return lines.str();
}

}  // namespace

arrow::Result<DatasetIndex> ReadDatasetIndex(const ResolvedSource& source, Stats* stats) {
  const std::string& where = source.summary.display;
  DatasetIndex index;
  auto read = ReadSummary(source.summary, stats);
  if (!read.ok()) {
    return WithContext(ExplainStorageError(read.status(), where), "reading the dataset index");
  }
  index.bytes = std::move(*read);
  auto status = CatchAll([&]() -> arrow::Status {
    ARROW_ASSIGN_OR_RAISE(auto footer, FooterBytes(std::string_view(*index.bytes)));
    ARROW_ASSIGN_OR_RAISE(index.skim, SkimFileMetaData(footer));
    return IndexedFiles(where, &index);
  });
  if (!status.ok()) {
    return WithContext(status, "dataset index '" + where + "' could not be read as Parquet");
  }
  return index;
}

arrow::Status ListFromIndex(const DatasetIndex& index, ResolvedSource* source) {
  if (!index.by_stoker) {
    return arrow::Status::Invalid(
        "dataset index '", source->summary.display, "' records no file sizes (", kIndexFilesKey,
        "; another tool wrote it): index=\"trust\" needs them to check each file at its first "
        "read; rewrite it with `stoker index --overwrite`, or pass index=\"use\"");
  }
  if (index.files.empty()) {
    return arrow::Status::Invalid("dataset index '", source->summary.display,
                                  "' lists no data file");
  }
  const auto& fs = source->summary.filesystem;
  for (const auto& [name, file] : index.files) {
    if (file.size < 0) {
      return arrow::Status::Invalid("dataset index '", source->summary.display,
                                    "' has row groups of '", name, "', which its ", kIndexFilesKey,
                                    " list lacks");
    }
    arrow::fs::FileInfo info(source->root + "/" + name, arrow::fs::FileType::File);
    info.set_size(file.size);
    info.set_mtime(arrow::fs::TimePoint(std::chrono::nanoseconds(file.mtime_ns)));
    source->files.push_back(ToSourceFile(fs, info));
  }
  // The listing's order: sorted paths (the map is sorted by relative path, which is the same
  // order under one root).
  return arrow::Status::OK();
}

arrow::Result<std::optional<std::vector<Footer>>> FootersFromIndex(DatasetIndex index,
                                                                   const ResolvedSource& source,
                                                                   IndexPolicy policy) {
  const std::string& where = source.summary.display;
  const std::string stale = source.listed ? StaleReason(source, index.files) : "";
  if (!stale.empty()) {
    if (policy == IndexPolicy::kFallback) return std::nullopt;
    return arrow::Status::Invalid(
        "dataset index '", where, "' is stale: ", stale,
        "; rewrite it with `stoker index --overwrite ",
        where.substr(0, where.size() - sizeof(kSummaryFileName)),
        "`, or pass index=\"fallback\" (read every footer while it is stale) or "
        "index=\"ignore\"");
  }
  // Each file's footer is cut out of the summary's bytes, never decoded whole (SummarySkim).
  auto head = DecodeFooter(CutFooter(index.skim, {}, kIndexKeyPrefix));
  if (!head.ok()) {
    return WithContext(head.status(), "dataset index '" + where + "' could not be read as Parquet");
  }
  ARROW_ASSIGN_OR_RAISE(Footer shared, DescribeFooter(**head));
  // The summary's bytes are kept once; each file's footer is its row groups' cut of them.
  auto summary = std::make_shared<IndexSummary>();
  summary->bytes = std::move(index.bytes);
  summary->skim = std::move(index.skim);
  summary->drop_prefix = kIndexKeyPrefix;
  std::vector<Footer> footers;
  footers.reserve(source.files.size());
  for (const auto& file : source.files) {
    Footer footer = shared;
    IndexedFile& indexed = index.files[RelativeTo(source.root, file.path)];
    for (int rg : indexed.row_groups) {
      footer.skimmed_rows.push_back(summary->skim.row_groups[rg].num_rows);
    }
    footer.bytes = SerializedFooter(summary, std::move(indexed.row_groups));
    footer.checksums = std::move(indexed.checksums);
    footers.push_back(std::move(footer));
  }
  return footers;
}

namespace {

// The summary file of `dir`'s files (their `footers`, in order): one schema, each file's row
// groups with its path, the file list (size, mtime, path) and with `checksums` each column
// chunk's checksum in its key-value metadata. Counts the row groups and checksummed bytes
// in `report`.
arrow::Result<std::shared_ptr<parquet::FileMetaData>> BuildSummary(
    const ResolvedSource& dir, const std::vector<Footer>& footers, const StorageOptions& storage,
    bool checksums, IndexReport* report) {
  std::ostringstream file_list;
  std::shared_ptr<parquet::FileMetaData> summary;
  auto built = CatchAll([&]() -> arrow::Status {
    BEGIN_PARQUET_CATCH_EXCEPTIONS
    std::vector<std::shared_ptr<parquet::FileMetaData>> decoded;
    for (const auto& footer : footers) {
      ARROW_ASSIGN_OR_RAISE(auto metadata, DecodeFooter(footer.bytes.Serialized()));
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
    if (checksums) {
      ARROW_ASSIGN_OR_RAISE(auto lines,
                            ChecksumLines(dir, decoded, storage.ResolvedMetadataThreads(),
                                          &report->bytes_checksummed));
      kv->Append(kIndexChecksumsKey, lines);
    }
    auto properties = parquet::WriterProperties::Builder()
                          .created_by(first.created_by())
                          ->version(first.version())
                          ->build();
    summary = parquet::FileMetaDataBuilder::Make(first.schema(), properties)->Finish(kv);
    for (const auto& metadata : decoded) {
      summary->AppendRowGroups(*metadata);
      report->row_groups += metadata->num_row_groups();
    }
    END_PARQUET_CATCH_EXCEPTIONS
    return arrow::Status::OK();
  });
  ARROW_RETURN_NOT_OK(built);
  return summary;
}

// Writes `summary` as `dir`'s summary file, its size into `report`. Local: written beside
// and renamed into place, so a reader never sees half of it. Object stores make a PUT
// visible only once it is complete.
arrow::Status WriteSummary(const ResolvedSource& dir, const parquet::FileMetaData& summary,
                           IndexReport* report) {
  const auto& fs = dir.files[0].filesystem;
  const std::string target = dir.root + "/" + kSummaryFileName;
  const bool local = fs->type_name() == "local";
  const std::string written =
      local ? dir.root + "/._metadata.stoker-" + std::to_string(getpid()) : target;
  auto write = [&]() -> arrow::Status {
    ARROW_ASSIGN_OR_RAISE(auto out, fs->OpenOutputStream(written));
    ARROW_RETURN_NOT_OK(parquet::arrow::WriteMetaDataFile(summary, out.get()));
    ARROW_ASSIGN_OR_RAISE(report->bytes, out->Tell());
    ARROW_RETURN_NOT_OK(out->Close());
    if (local) ARROW_RETURN_NOT_OK(fs->Move(written, target));
    return arrow::Status::OK();
  };
  return ExplainStorageError(CatchAll(write), report->path);
}

}  // namespace

arrow::Result<IndexReport> WriteDatasetIndex(const std::string& source,
                                             const StorageOptions& storage, bool overwrite,
                                             bool checksums) {
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
  ARROW_ASSIGN_OR_RAISE(auto summary, BuildSummary(dir, footers, storage, checksums, &report));
  ARROW_RETURN_NOT_OK(WriteSummary(dir, *summary, &report));
  report.files = static_cast<int64_t>(dir.files.size());
  return report;
}

}  // namespace stoker
