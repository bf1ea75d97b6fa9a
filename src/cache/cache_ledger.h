// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace stoker {

/// What the processes sharing a cache directory agree on: a lock (flock on DIR/ledger) held
/// while one of them evicts or adds an entry, and the bytes the entries hold, kept in that
/// file. Without it each process would judge the limit by its own writes alone, and the
/// directory would grow past it by what the others wrote.
///
/// The count is a hint a process trusts while it stays under the limit: a process that finds
/// the cache over its limit rescans the directory and writes the true total back, so entries
/// removed behind the ledger's back (`stoker cache clear`, a damaged entry) cost at most an
/// early rescan. A process killed between renaming an entry into place and writing the count
/// leaves it one entry short until the next rescan (the lock itself dies with the process).
class CacheLedger {
 public:
  /// Opens (creating) DIR/ledger; an invalid ledger (no file descriptor) when it cannot.
  explicit CacheLedger(const std::string& dir);
  ~CacheLedger();
  CacheLedger(const CacheLedger&) = delete;
  CacheLedger& operator=(const CacheLedger&) = delete;

  bool valid() const { return fd_ >= 0; }

  /// Holds the ledger's lock (exclusive, across processes) for its lifetime.
  class Lock {
   public:
    explicit Lock(const CacheLedger& ledger);
    ~Lock();
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    int fd_;
  };

  /// The bytes recorded (call with the lock held); nothing when the file holds no count yet.
  std::optional<int64_t> Read() const;
  /// Records `bytes` (call with the lock held).
  void Write(int64_t bytes) const;

 private:
  int fd_ = -1;
};

}  // namespace stoker
