// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "cache/cache_ledger.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stoker {

namespace {

constexpr char kLedgerMagic[8] = {'S', 'T', 'K', 'L', 'E', 'D', 'G', '1'};

struct Record {
  char magic[8];
  int64_t bytes;
};

}  // namespace

CacheLedger::CacheLedger(const std::string& dir)
    : fd_(::open((dir + "/ledger").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {}

CacheLedger::~CacheLedger() {
  if (fd_ >= 0) ::close(fd_);
}

CacheLedger::Lock::Lock(const CacheLedger& ledger) : fd_(ledger.fd_) {
  if (fd_ < 0) return;
  while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
  }
}

CacheLedger::Lock::~Lock() {
  if (fd_ >= 0) ::flock(fd_, LOCK_UN);
}

std::optional<int64_t> CacheLedger::Read() const {
  Record record{};
  if (fd_ < 0 || ::pread(fd_, &record, sizeof(record), 0) != sizeof(record) ||
      std::memcmp(record.magic, kLedgerMagic, sizeof(kLedgerMagic)) != 0 || record.bytes < 0) {
    return std::nullopt;
  }
  return record.bytes;
}

void CacheLedger::Write(int64_t bytes) const {
  if (fd_ < 0) return;
  Record record{};
  std::memcpy(record.magic, kLedgerMagic, sizeof(kLedgerMagic));
  record.bytes = bytes;
  // A short write leaves a record Read() refuses: the next process rescans.
  [[maybe_unused]] const auto written = ::pwrite(fd_, &record, sizeof(record), 0);
}

}  // namespace stoker
