// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/source.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>

#include "stoker/error.h"

namespace stoker {

namespace {

bool IsUri(const std::string& source) { return source.find("://") != std::string::npos; }

bool HasGlob(const std::string& path) { return path.find_first_of("*?[") != std::string::npos; }

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

SourceFile ToSourceFile(const std::shared_ptr<arrow::fs::FileSystem>& fs,
                        const arrow::fs::FileInfo& info) {
  SourceFile file;
  file.filesystem = fs;
  file.path = info.path();
  file.display = fs->type_name() == "local" ? info.path() : fs->type_name() + "://" + info.path();
  file.size = info.size();
  file.mtime_ns =
      info.mtime() == arrow::fs::kNoTime
          ? 0
          : std::chrono::duration_cast<std::chrono::nanoseconds>(info.mtime().time_since_epoch())
                .count();
  return file;
}

std::string RelativeTo(const std::string& dir, const std::string& path) {
  std::string prefix = dir;
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  return path.rfind(prefix, 0) == 0 ? path.substr(prefix.size()) : path;
}

namespace {

void SortByPath(std::vector<SourceFile>* files) {
  std::sort(files->begin(), files->end(),
            [](const SourceFile& a, const SourceFile& b) { return a.path < b.path; });
}

// Lists regular files under `dir` (recursively), sorted; hidden paths are left out.
arrow::Result<std::vector<arrow::fs::FileInfo>> ListVisible(
    const std::shared_ptr<arrow::fs::FileSystem>& fs, const std::string& dir) {
  arrow::fs::FileSelector selector;
  selector.base_dir = dir;
  selector.recursive = true;
  ARROW_ASSIGN_OR_RAISE(auto infos, fs->GetFileInfo(selector));
  std::vector<arrow::fs::FileInfo> files;
  for (auto& info : infos) {
    if (info.type() == arrow::fs::FileType::File && !IsHiddenPath(RelativeTo(dir, info.path()))) {
      files.push_back(std::move(info));
    }
  }
  return files;
}

// The files a glob matches. `location` is the source made absolute, `base` the part of it
// before the glob and `base_path` that part in `fs`'s own terms.
arrow::Result<ResolvedSource> ResolveGlob(const std::string& source, const std::string& location,
                                          const std::string& base,
                                          const std::shared_ptr<arrow::fs::FileSystem>& fs,
                                          const std::string& base_path) {
  // The pattern in the filesystem's own path terms: the base's path, then the rest.
  std::string pattern = base_path;
  if (!pattern.empty() && pattern.back() == '/') pattern.pop_back();
  pattern += location.substr(base.size() - (base.back() == '/' ? 1 : 0));
  ARROW_ASSIGN_OR_RAISE(auto base_info, fs->GetFileInfo(base_path));
  if (base_info.type() != arrow::fs::FileType::Directory) {
    return NotFound("source '", source, "': directory '", base, "' does not exist");
  }
  ARROW_ASSIGN_OR_RAISE(auto infos, ListVisible(fs, base_path));
  ResolvedSource resolved;
  for (const auto& info : infos) {
    if (fnmatch(pattern.c_str(), info.path().c_str(), FNM_PATHNAME) == 0) {
      resolved.files.push_back(ToSourceFile(fs, info));
    }
  }
  if (resolved.files.empty()) {
    return NotFound("source '", source, "': the glob matches no file");
  }
  SortByPath(&resolved.files);
  return resolved;
}

// The *.parquet files under directory `dir`, and its summary file if it has one (the
// summary itself is hidden, so it is looked for apart from the listing's data files).
arrow::Result<ResolvedSource> ResolveDirectory(const std::string& source,
                                               const std::shared_ptr<arrow::fs::FileSystem>& fs,
                                               std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  arrow::fs::FileSelector selector;
  selector.base_dir = dir;
  selector.recursive = true;
  ARROW_ASSIGN_OR_RAISE(auto infos, fs->GetFileInfo(selector));
  ResolvedSource resolved;
  resolved.root = dir;
  for (const auto& info : infos) {
    if (info.type() != arrow::fs::FileType::File) continue;
    const std::string relative = RelativeTo(dir, info.path());
    if (relative == kSummaryFileName) {
      resolved.summary = ToSourceFile(fs, info);
    } else if (!IsHiddenPath(relative) && EndsWith(relative, ".parquet")) {
      resolved.files.push_back(ToSourceFile(fs, info));
    }
  }
  if (resolved.files.empty()) {
    return arrow::Status::Invalid("source '", source, "': directory contains no *.parquet files");
  }
  SortByPath(&resolved.files);
  return resolved;
}

// A directory's summary file, looked up without listing the directory: `files` left empty
// for the summary's own file list to fill. Nullopt when `path` holds no summary file.
arrow::Result<std::optional<ResolvedSource>> ResolveBySummary(
    const std::shared_ptr<arrow::fs::FileSystem>& fs, std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  ARROW_ASSIGN_OR_RAISE(auto info, fs->GetFileInfo(dir + "/" + kSummaryFileName));
  if (info.type() != arrow::fs::FileType::File) return std::nullopt;
  ResolvedSource resolved;
  resolved.root = dir;
  resolved.summary = ToSourceFile(fs, info);
  resolved.listed = false;
  return resolved;
}

// A file, or the *.parquet files under a directory (with `by_summary`, a directory's
// summary file alone when it has one).
arrow::Result<ResolvedSource> ResolvePath(const std::string& source,
                                          const std::shared_ptr<arrow::fs::FileSystem>& fs,
                                          const std::string& path, bool by_summary) {
  if (by_summary) {
    ARROW_ASSIGN_OR_RAISE(auto summary, ResolveBySummary(fs, path));
    if (summary.has_value()) return std::move(*summary);
  }
  ARROW_ASSIGN_OR_RAISE(auto info, fs->GetFileInfo(path));
  switch (info.type()) {
    case arrow::fs::FileType::File: {
      ResolvedSource resolved;
      resolved.files.push_back(ToSourceFile(fs, info));
      return resolved;
    }
    case arrow::fs::FileType::Directory:
      return ResolveDirectory(source, fs, path);
    default:
      return NotFound("source '", source, "': no such file or directory");
  }
}

arrow::Result<ResolvedSource> ResolveOne(const std::string& source, const StorageOptions& storage,
                                         const RetryCounter& retries, bool by_summary) {
  std::string location = source;
  if (!IsUri(source)) {
    location = std::filesystem::absolute(source).lexically_normal().string();
  }
  const bool glob = HasGlob(location);
  // The filesystem is chosen from the part before any glob character.
  std::string base = location;
  if (glob) {
    const auto slash = location.rfind('/', location.find_first_of("*?["));
    base = location.substr(0, slash == std::string::npos ? 0 : slash);
    if (base.empty() || EndsWith(base, ":/")) base += "/";
  }
  std::string base_path;
  ARROW_ASSIGN_OR_RAISE(auto fs, OpenFileSystem(base, storage, retries, &base_path));
  if (glob) return ResolveGlob(source, location, base, fs, base_path);
  return ResolvePath(source, fs, base_path, by_summary);
}

}  // namespace

bool IsHiddenPath(const std::string& relative_path) {
  size_t start = 0;
  while (start < relative_path.size()) {
    const char first = relative_path[start];
    if (first == '_' || first == '.') return true;
    const size_t slash = relative_path.find('/', start);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return false;
}

arrow::Result<std::vector<ResolvedSource>> ResolveSourceList(
    const std::vector<std::string>& sources, const StorageOptions& storage,
    const RetryCounter& retries, bool by_summary) {
  // Errors that already name the source pass through; the store's own are explained.
  std::vector<ResolvedSource> all;
  for (const auto& source : sources) {
    auto resolved = ResolveOne(source, storage, retries, by_summary);
    if (!resolved.ok()) {
      const auto& status = resolved.status();
      if (status.message().find(source) != std::string::npos) return status;
      return ExplainStorageError(status, source);
    }
    all.push_back(std::move(*resolved));
  }
  ARROW_RETURN_NOT_OK(CheckNoFileTwice(all));
  return all;
}

arrow::Status CheckNoFileTwice(const std::vector<ResolvedSource>& sources) {
  std::set<std::string> seen;
  for (const auto& source : sources) {
    for (const auto& file : source.files) {
      const std::string key = file.filesystem->type_name() + ":" + file.path;
      if (!seen.insert(key).second) {
        return arrow::Status::Invalid("file '", file.path,
                                      "' is named by more than one source; each row would be "
                                      "read twice");
      }
    }
  }
  return arrow::Status::OK();
}

arrow::Result<std::vector<SourceFile>> ResolveSources(const std::vector<std::string>& sources,
                                                      const StorageOptions& storage,
                                                      const RetryCounter& retries) {
  ARROW_ASSIGN_OR_RAISE(auto resolved, ResolveSourceList(sources, storage, retries));
  std::vector<SourceFile> all;
  for (auto& source : resolved) {
    for (auto& file : source.files) all.push_back(std::move(file));
  }
  return all;
}

}  // namespace stoker
