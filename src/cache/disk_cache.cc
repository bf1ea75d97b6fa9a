// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "cache/disk_cache.h"

#include <arrow/buffer.h>
#include <arrow/io/file.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <arrow/ipc/writer.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#define XXH_INLINE_ALL
#include <arrow/vendored/xxhash/xxhash.h>

#include <optional>

namespace stoker {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'S', 'T', 'O', 'K', 'E', 'R', 'C', '1'};
constexpr int64_t kHeaderBytes = 64;  // keeps the payload's buffers 64-byte aligned in the map
constexpr char kSuffix[] = ".stkc";
// Temp files older than this are left by a killed writer and may be deleted.
constexpr auto kStaleTemp = std::chrono::minutes(10);

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t reserved;
  uint64_t payload_bytes;
  uint64_t checksum;
  char padding[kHeaderBytes - 32];
};
static_assert(sizeof(Header) == kHeaderBytes);

uint64_t Checksum(const uint8_t* data, int64_t size) {
  return XXH3_64bits(data, static_cast<size_t>(size));
}

std::string UniqueSuffix() {
  static std::atomic<uint64_t> counter{0};
  return std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
}

Header MakeHeader(const arrow::Buffer& payload) {
  Header header{};
  std::memcpy(header.magic, kMagic, sizeof(kMagic));
  header.version = DiskCache::kFormatVersion;
  header.payload_bytes = static_cast<uint64_t>(payload.size());
  header.checksum = Checksum(payload.data(), payload.size());
  return header;
}

// The batch as an Arrow IPC file with 64-byte-aligned buffers.
arrow::Result<std::shared_ptr<arrow::Buffer>> Serialize(const arrow::RecordBatch& batch) {
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create());
  auto options = arrow::ipc::IpcWriteOptions::Defaults();
  options.alignment = 64;
  ARROW_ASSIGN_OR_RAISE(auto writer, arrow::ipc::MakeFileWriter(sink, batch.schema(), options));
  ARROW_RETURN_NOT_OK(writer->WriteRecordBatch(batch));
  ARROW_RETURN_NOT_OK(writer->Close());
  return sink->Finish();
}

// The entry's payload as a zero-copy slice of its memory map, or an error saying what is
// wrong with it.
arrow::Result<std::shared_ptr<arrow::Buffer>> MapPayload(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(auto file,
                        arrow::io::MemoryMappedFile::Open(path, arrow::io::FileMode::READ));
  ARROW_ASSIGN_OR_RAISE(int64_t size, file->GetSize());
  if (size < kHeaderBytes) return arrow::Status::IOError("truncated header");
  ARROW_ASSIGN_OR_RAISE(auto head, file->ReadAt(0, kHeaderBytes));
  Header header;
  std::memcpy(&header, head->data(), sizeof(header));
  if (std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0) {
    return arrow::Status::IOError("not a cache entry");
  }
  if (header.version != DiskCache::kFormatVersion) {
    return arrow::Status::IOError("format version ", header.version);
  }
  if (static_cast<int64_t>(header.payload_bytes) != size - kHeaderBytes) {
    return arrow::Status::IOError("truncated: ", size - kHeaderBytes, " of ", header.payload_bytes,
                                  " bytes");
  }
  ARROW_ASSIGN_OR_RAISE(auto payload, file->ReadAt(kHeaderBytes, size - kHeaderBytes));
  if (Checksum(payload->data(), payload->size()) != header.checksum) {
    return arrow::Status::IOError("checksum mismatch");
  }
  return payload;
}

// The one batch of an entry's payload (an Arrow IPC file), validated, sharing its memory.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadBatch(
    const std::shared_ptr<arrow::Buffer>& payload) {
  auto input = std::make_shared<arrow::io::BufferReader>(payload);
  ARROW_ASSIGN_OR_RAISE(auto reader, arrow::ipc::RecordBatchFileReader::Open(input));
  if (reader->num_record_batches() != 1) return arrow::Status::IOError("not one batch");
  ARROW_ASSIGN_OR_RAISE(auto batch, reader->ReadRecordBatch(0));
  ARROW_RETURN_NOT_OK(batch->Validate());
  return batch;
}

}  // namespace

std::shared_ptr<DiskCache> DiskCache::Open(const std::string& dir, int64_t limit_bytes,
                                           CachePolicy policy, std::shared_ptr<Stats> stats) {
  std::shared_ptr<DiskCache> cache(new DiskCache(dir, limit_bytes, policy, std::move(stats)));
  MutexLock lock(cache->mutex_);
  std::error_code error;
  fs::create_directories(fs::path(dir) / "tmp", error);
  if (error) {
    cache->DisableWrites("cannot create '" + dir + "/tmp': " + error.message());
  } else if (::access(dir.c_str(), W_OK) != 0) {
    cache->DisableWrites("'" + dir + "' is not writable: " + std::strerror(errno));
  }
  if (cache->writes_enabled_ && limit_bytes > 0) {
    cache->ledger_ = std::make_unique<CacheLedger>(dir);
    if (!cache->ledger_->valid()) {
      cache->DisableWrites("cannot open '" + dir + "/ledger': " + std::strerror(errno));
    }
  }
  cache->Rescan();
  return cache;
}

std::string DiskCache::PathOf(const std::string& key) const {
  return dir_ + "/" + key.substr(0, 2) + "/" + key.substr(2, 2) + "/" + key + kSuffix;
}

void DiskCache::DisableWrites(const std::string& why) {
  if (!writes_enabled_) return;
  writes_enabled_ = false;
  warning_ = "stoker cache at '" + dir_ + "': " + why +
             "; caching is off for writes, and loading goes on from the source";
}

std::string DiskCache::TakeWarning() {
  MutexLock lock(mutex_);
  return std::exchange(warning_, std::string());
}

void DiskCache::Rescan() {
  entries_.clear();
  total_bytes_ = 0;
  std::error_code error;
  const auto now = fs::file_time_type::clock::now();
  // Oldest first, so the logical clock orders them by modification (= last use) time.
  std::vector<std::pair<fs::file_time_type, std::pair<std::string, int64_t>>> found;
  for (fs::recursive_directory_iterator it(dir_, error), end; !error && it != end;
       it.increment(error)) {
    if (!it->is_regular_file(error)) continue;
    const auto& path = it->path();
    const auto time = it->last_write_time(error);
    if (path.parent_path().filename() == "tmp") {
      if (!error && now - time > kStaleTemp) fs::remove(path, error);  // a killed writer's
      continue;
    }
    if (path.extension() != kSuffix) continue;
    found.push_back({time, {path.string(), static_cast<int64_t>(it->file_size(error))}});
  }
  std::sort(found.begin(), found.end());
  for (const auto& [time, entry] : found) {
    entries_[entry.first] = Entry{entry.second, ++clock_};
    total_bytes_ += entry.second;
  }
}

std::pair<int64_t, int64_t> DiskCache::Usage() {
  MutexLock lock(mutex_);
  Rescan();
  return {static_cast<int64_t>(entries_.size()), total_bytes_};
}

std::shared_ptr<arrow::RecordBatch> DiskCache::Get(const std::string& key) {
  const std::string path = PathOf(key);
  struct ::stat info;
  if (::stat(path.c_str(), &info) != 0) {
    stats_->AddCacheMiss();
    return nullptr;
  }
  auto payload = MapPayload(path);
  std::shared_ptr<arrow::RecordBatch> batch;
  if (payload.ok()) {
    auto read = ReadBatch(*payload);
    if (read.ok()) batch = *read;
  }
  if (batch == nullptr) {
    stats_->AddCacheMiss();
    // Another process evicted the entry, or replaced it with its own copy, since the stat
    // above: a plain miss, and the new copy must not be removed.
    struct ::stat now;
    if (::stat(path.c_str(), &now) != 0 || now.st_ino != info.st_ino || now.st_dev != info.st_dev) {
      return nullptr;
    }
    // Damaged (a crash mid-write by a non-atomic writer, disk corruption): never delivered.
    std::error_code error;
    fs::remove(path, error);
    stats_->AddCacheCorrupt();
    MutexLock lock(mutex_);
    auto it = entries_.find(path);
    if (it != entries_.end()) {
      total_bytes_ -= it->second.bytes;
      entries_.erase(it);
    }
    return nullptr;
  }
  stats_->AddCacheHit((*payload)->size());
  if (policy_ == CachePolicy::kLru) {
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // last use, for other processes' scans
    MutexLock lock(mutex_);
    auto& entry = entries_[path];
    if (entry.bytes == 0) {
      entry.bytes = static_cast<int64_t>(info.st_size);
      total_bytes_ += entry.bytes;
    }
    entry.last_use = ++clock_;
  }
  return batch;
}

void DiskCache::EvictFor(int64_t incoming) {
  if (limit_ <= 0 || total_bytes_ + incoming <= limit_) return;
  // Other processes sharing the directory may have added entries: look again first.
  Rescan();
  std::vector<std::pair<uint64_t, std::string>> order;
  for (const auto& [path, entry] : entries_) order.push_back({entry.last_use, path});
  std::sort(order.begin(), order.end());
  for (const auto& [last_use, path] : order) {
    if (total_bytes_ + incoming <= limit_) break;
    std::error_code error;
    // Gone either way; counted only by the process that removed it. A process that has the
    // entry mapped keeps reading it: the file lives until its last mapping goes.
    if (fs::remove(path, error)) stats_->AddCacheEviction();
    total_bytes_ -= entries_[path].bytes;
    entries_.erase(path);
  }
}

void DiskCache::Put(const std::string& key, const arrow::RecordBatch& batch) {
  {
    MutexLock lock(mutex_);
    if (!writes_enabled_) return;
  }
  auto serialized = Serialize(batch);
  if (!serialized.ok()) return;  // not storable (a type IPC cannot write): simply not cached
  const arrow::Buffer& payload = **serialized;
  const int64_t bytes = kHeaderBytes + payload.size();
  if (limit_ > 0 && bytes > limit_) return;
  // Written outside the locks: only the rename into place is ordered with other writers.
  auto temp = WriteTemp(key, payload);

  MutexLock lock(mutex_);
  if (!temp.ok()) return DisableWrites(temp.status().message());
  std::optional<CacheLedger::Lock> shared;  // other processes' writes and evictions wait
  if (ledger_ != nullptr) {
    shared.emplace(*ledger_);
    const auto recorded = ledger_->Read();
    if (recorded.has_value()) {
      total_bytes_ = *recorded;
    } else {
      Rescan();
    }
  }
  if (!writes_enabled_ || !MakeRoom(bytes)) {
    std::error_code error;
    fs::remove(*temp, error);
    return;
  }
  Commit(*temp, key, bytes);
  if (ledger_ != nullptr) ledger_->Write(total_bytes_);
}

bool DiskCache::MakeRoom(int64_t bytes) {
  if (limit_ > 0 && bytes > limit_) return false;
  if (policy_ == CachePolicy::kFill) {
    return limit_ <= 0 || total_bytes_ + bytes <= limit_;  // full: keep what is there
  }
  EvictFor(bytes);
  return true;
}

arrow::Result<std::string> DiskCache::WriteTemp(const std::string& key,
                                                const arrow::Buffer& payload) const {
  const Header header = MakeHeader(payload);
  const std::string temp = dir_ + "/tmp/" + key + "." + UniqueSuffix();
  std::ofstream out(temp, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(&header), sizeof(header));
  out.write(reinterpret_cast<const char*>(payload.data()), payload.size());
  out.flush();
  if (!out) {
    const std::string why = std::strerror(errno);
    out.close();
    std::error_code error;
    fs::remove(temp, error);
    return arrow::Status::IOError("writing '", temp, "' failed (", why, ")");
  }
  return temp;
}

void DiskCache::Commit(const std::string& temp, const std::string& key, int64_t bytes) {
  const std::string path = PathOf(key);
  std::error_code error;
  fs::create_directories(fs::path(path).parent_path(), error);
  if (error) {
    fs::remove(temp, error);
    return DisableWrites("cannot create a directory for '" + path + "': " + error.message());
  }
  // Another process may have written the same key meanwhile (the same bytes): the rename
  // replaces its copy, which is then counted once.
  struct ::stat existing;
  const int64_t replaced =
      ::stat(path.c_str(), &existing) == 0 ? static_cast<int64_t>(existing.st_size) : 0;
  // Visible only when complete.
  fs::rename(temp, path, error);
  if (error) {
    fs::remove(temp, error);
    return DisableWrites("cannot rename into '" + path + "': " + error.message());
  }
  auto& entry = entries_[path];
  total_bytes_ += bytes - (ledger_ != nullptr ? replaced : entry.bytes);
  entry.bytes = bytes;
  entry.last_use = ++clock_;
  stats_->AddCacheWrite(bytes);
}

}  // namespace stoker
