// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "cache/cache_ledger.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>

#include "common/fixtures.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// The ledger's record as it lies on disk: 8 bytes of magic, then the count (host order).
std::string Record(const char (&magic)[9], int64_t bytes) {
  std::string record(magic, 8);
  record.append(reinterpret_cast<const char*>(&bytes), sizeof(bytes));
  return record;
}

void Overwrite(const fs::path& file, const std::string& contents) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << contents;
}

// Whether another open file description of `file` (what another process would hold) can take
// the exclusive lock now, without waiting.
bool LockFreeFromElsewhere(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
  EXPECT_GE(fd, 0) << file;
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  EXPECT_TRUE(free || errno == EWOULDBLOCK) << std::strerror(errno);
  ::close(fd);  // releases the lock if taken
  return free;
}

class CacheLedgerTest : public ::testing::Test {
 protected:
  fs::path LedgerFile() const { return dir_.path() / "ledger"; }
  testing::TempDir dir_;
};

TEST_F(CacheLedgerTest, OpensByCreatingAnEmptyLedgerThatHoldsNoCount) {
  ASSERT_FALSE(fs::exists(LedgerFile()));
  CacheLedger ledger(dir_.path().string());
  ASSERT_TRUE(ledger.valid());
  ASSERT_TRUE(fs::exists(LedgerFile()));
  EXPECT_EQ(fs::file_size(LedgerFile()), 0u);
  CacheLedger::Lock lock(ledger);
  EXPECT_EQ(ledger.Read(), std::nullopt);
}

TEST_F(CacheLedgerTest, ReadsBackWhatItWrote) {
  CacheLedger ledger(dir_.path().string());
  CacheLedger::Lock lock(ledger);
  ledger.Write(12345);
  EXPECT_EQ(ledger.Read(), 12345);
  ledger.Write(7);  // overwritten in place, not appended
  EXPECT_EQ(ledger.Read(), 7);
  EXPECT_EQ(fs::file_size(LedgerFile()), 16u);
}

TEST_F(CacheLedgerTest, ZeroAndTheLargestCountAreCounts) {
  CacheLedger ledger(dir_.path().string());
  CacheLedger::Lock lock(ledger);
  ledger.Write(0);
  EXPECT_EQ(ledger.Read(), 0);
  ledger.Write(std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ledger.Read(), std::numeric_limits<int64_t>::max());
}

TEST_F(CacheLedgerTest, TheRecordIsMagicThenTheCount) {
  {
    CacheLedger ledger(dir_.path().string());
    CacheLedger::Lock lock(ledger);
    ledger.Write(4096);
  }
  std::ifstream in(LedgerFile(), std::ios::binary);
  const std::string contents((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(contents, Record("STKLEDG1", 4096));
}

TEST_F(CacheLedgerTest, TwoLedgersOverOneDirectoryShareTheCount) {
  // As two processes sharing a cache directory see it: each its own descriptor on DIR/ledger.
  CacheLedger first(dir_.path().string());
  CacheLedger second(dir_.path().string());
  ASSERT_TRUE(first.valid());
  ASSERT_TRUE(second.valid());
  {
    CacheLedger::Lock lock(first);
    first.Write(1000);
  }
  {
    CacheLedger::Lock lock(second);
    ASSERT_EQ(second.Read(), 1000);
    second.Write(*second.Read() + 500);
  }
  CacheLedger::Lock lock(first);
  EXPECT_EQ(first.Read(), 1500);
}

TEST_F(CacheLedgerTest, ACountOutlivesTheLedgerThatWroteIt) {
  {
    CacheLedger ledger(dir_.path().string());
    CacheLedger::Lock lock(ledger);
    ledger.Write(321);
  }
  CacheLedger reopened(dir_.path().string());
  CacheLedger::Lock lock(reopened);
  EXPECT_EQ(reopened.Read(), 321);
}

TEST_F(CacheLedgerTest, ACountWrittenByAnotherProcessIsRead) {
  CacheLedger ledger(dir_.path().string());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    CacheLedger own(dir_.path().string());
    if (!own.valid()) _exit(2);
    {
      CacheLedger::Lock lock(own);
      own.Write(own.Read().value_or(0) + 4242);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  CacheLedger::Lock lock(ledger);
  EXPECT_EQ(ledger.Read(), 4242);
}

TEST_F(CacheLedgerTest, TheLockExcludesOtherHoldersUntilReleased) {
  CacheLedger ledger(dir_.path().string());
  ASSERT_TRUE(LockFreeFromElsewhere(LedgerFile()));
  {
    CacheLedger::Lock lock(ledger);
    EXPECT_FALSE(LockFreeFromElsewhere(LedgerFile()));
  }
  EXPECT_TRUE(LockFreeFromElsewhere(LedgerFile()));
}

TEST_F(CacheLedgerTest, ASecondLedgerWaitsForTheFirstOnesLock) {
  CacheLedger first(dir_.path().string());
  CacheLedger second(dir_.path().string());
  std::thread other;
  {
    CacheLedger::Lock lock(first);
    first.Write(1);
    // The other ledger's read-modify-write can only run once this one lets go, so it sees
    // the count written last under this lock, not the one before.
    other = std::thread([&] {
      CacheLedger::Lock its(second);
      second.Write(second.Read().value_or(-100) * 10);
    });
    first.Write(2);
  }
  other.join();
  CacheLedger::Lock lock(first);
  EXPECT_EQ(first.Read(), 20);
}

TEST_F(CacheLedgerTest, ARecordItCannotTrustReadsAsNoCount) {
  CacheLedger ledger(dir_.path().string());
  CacheLedger::Lock lock(ledger);
  // Another format's magic, a short write cut mid-count, a negative count: each makes the next
  // process rescan, none is taken as bytes held.
  for (const std::string& contents :
       {Record("STKLEDG0", 100), Record("STKLEDG1", 100).substr(0, 12), std::string("STKLEDG1"),
        Record("STKLEDG1", -1), std::string(16, '\0')}) {
    SCOPED_TRACE(::testing::PrintToString(contents));
    Overwrite(LedgerFile(), contents);
    EXPECT_EQ(ledger.Read(), std::nullopt);
  }
  // Writing replaces the untrusted record with a sound one.
  ledger.Write(99);
  EXPECT_EQ(ledger.Read(), 99);
}

TEST_F(CacheLedgerTest, ADirectoryItCannotOpenGivesAnInvalidLedgerThatDoesNothing) {
  const fs::path missing = dir_.path() / "no" / "such" / "dir";
  CacheLedger ledger(missing.string());
  EXPECT_FALSE(ledger.valid());
  CacheLedger::Lock lock(ledger);  // returns at once: nothing to lock
  ledger.Write(10);
  EXPECT_EQ(ledger.Read(), std::nullopt);
  EXPECT_FALSE(fs::exists(missing));
}

}  // namespace
}  // namespace stoker
