// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/node_share.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <utility>
#include <vector>

namespace stoker {

namespace {

// One rank's record in the ledger, at offset slot × sizeof(Record).
struct Record {
  int64_t pid;           // 0: the slot is free
  int64_t threads;       // workers at work
  int64_t used_milli;    // CPUs used in the last window, in thousandths
  int64_t heartbeat_ns;  // CLOCK_MONOTONIC (one clock for the whole machine) at publication
};

constexpr auto kStale = std::chrono::seconds(30);

const char* Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

int64_t MonotonicNanos() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

bool Alive(int64_t pid) {
  return pid > 0 && (kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

// Holds flock(2) on the ledger for its lifetime: shared for reads, exclusive for writes.
class FileLock {
 public:
  FileLock(int fd, int operation) : fd_(fd) {
    while (flock(fd_, operation) != 0 && errno == EINTR) {
    }
  }
  ~FileLock() { flock(fd_, LOCK_UN); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

// Writes `record` into `slot`. A failed write (a full /dev/shm) leaves the slot as it was:
// the others then count this rank's last figures until they go stale.
void WriteSlot(int fd, const Record& record, int slot) {
  FileLock lock(fd, LOCK_EX);
  if (pwrite(fd, &record, sizeof(record), static_cast<off_t>(slot * sizeof(Record))) < 0) {
    return;
  }
}

}  // namespace

std::optional<NodeShareKey> NodeShareKeyFromEnv(const CpuBudget& budget) {
  if (budget.ranks_per_node < 2 || budget.own_cpus) return std::nullopt;
  NodeShareKey key;
  if (const char* v = Env("STOKER_NODE_SHARE")) {
    if (std::string(v) == "off") return std::nullopt;
    key.job = v;
    key.job_from = "STOKER_NODE_SHARE";
  } else if (const char* id = Env("TORCHELASTIC_RUN_ID")) {
    key.job = id;
    key.job_from = "TORCHELASTIC_RUN_ID";
  } else if (Env("MASTER_ADDR") != nullptr && Env("MASTER_PORT") != nullptr) {
    key.job = std::string(Env("MASTER_ADDR")) + ":" + Env("MASTER_PORT");
    key.job_from = "MASTER_ADDR:MASTER_PORT";
  } else if (const char* job = Env("SLURM_JOB_ID")) {
    key.job = std::string(job) + "." + (Env("SLURM_STEP_ID") ? Env("SLURM_STEP_ID") : "");
    key.job_from = "SLURM_JOB_ID";
  } else {
    return std::nullopt;
  }
  for (const char* name : {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK",
                           "MPI_LOCALRANKID", "HOROVOD_LOCAL_RANK"}) {
    const char* value = Env(name);
    if (value == nullptr) continue;
    char* end = nullptr;
    const long rank = std::strtol(value, &end, 10);
    if (*end != '\0' || rank < 0 || rank >= budget.ranks_per_node) return std::nullopt;
    key.local_rank = static_cast<int>(rank);
    return key;
  }
  return std::nullopt;
}

std::shared_ptr<NodeShare> NodeShare::Open(const NodeShareKey& key, int ranks, int cpus,
                                           const std::string& dir) {
  if (ranks < 2 || key.local_rank < 0 || key.local_rank >= ranks || cpus < 1) return nullptr;
  // The user's id keeps two users' jobs of the same name apart (and out of each other's files).
  const std::string path = dir + "/stoker-node-" + std::to_string(getuid()) + "-" +
                           std::to_string(std::hash<std::string>{}(key.job));
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return nullptr;
  std::shared_ptr<NodeShare> share(new NodeShare(key, ranks, cpus, path, fd));
  // Until its first window a rank claims its equal share: the others do not count its CPUs
  // as spare before it has even started.
  share->Publish(0, static_cast<double>(cpus) / ranks);
  return share;
}

NodeShare::NodeShare(NodeShareKey key, int ranks, int cpus, std::string path, int fd)
    : key_(std::move(key)), ranks_(ranks), cpus_(cpus), path_(std::move(path)), fd_(fd) {}

NodeShare::~NodeShare() {
  {
    FileLock lock(fd_, LOCK_EX);
    const Record freed{};
    const auto offset = static_cast<off_t>(key_.local_rank * sizeof(Record));
    if (pwrite(fd_, &freed, sizeof(freed), offset) == sizeof(freed)) {
      // The last rank out removes the ledger, so jobs leave nothing behind in /dev/shm.
      std::vector<Record> records(static_cast<size_t>(ranks_));
      const ssize_t got = pread(fd_, records.data(), records.size() * sizeof(Record), 0);
      const bool empty =
          got >= 0 && std::none_of(records.begin(),
                                   records.begin() + got / static_cast<ssize_t>(sizeof(Record)),
                                   [](const Record& r) { return Alive(r.pid); });
      if (empty) unlink(path_.c_str());
    }
  }
  close(fd_);
}

void NodeShare::Publish(int threads, double used_cpus) {
  WriteSlot(
      fd_,
      Record{getpid(), threads, std::llround(std::max(used_cpus, 0.0) * 1000), MonotonicNanos()},
      key_.local_rank);
}

double NodeShare::OthersUsed() const {
  std::vector<Record> records(static_cast<size_t>(ranks_));
  ssize_t got = 0;
  {
    FileLock lock(fd_, LOCK_SH);
    got = pread(fd_, records.data(), records.size() * sizeof(Record), 0);
  }
  const int64_t now = MonotonicNanos();
  const int64_t stale = std::chrono::nanoseconds(kStale).count();
  double used = 0;
  for (int slot = 0; slot < ranks_; ++slot) {
    if (slot == key_.local_rank || got < static_cast<ssize_t>((slot + 1) * sizeof(Record))) {
      continue;
    }
    const Record& r = records[static_cast<size_t>(slot)];
    if (!Alive(r.pid) || now - r.heartbeat_ns > stale) continue;
    used += static_cast<double>(r.used_milli) / 1000;
  }
  return used;
}

int NodeShare::Allowance(int share) const {
  const double spare = static_cast<double>(cpus_) - OthersUsed();
  const int floor = std::clamp(share, 1, cpus_);
  return std::clamp(static_cast<int>(std::lround(spare)), floor, cpus_);
}

}  // namespace stoker
