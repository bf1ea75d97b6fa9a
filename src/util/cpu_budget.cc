// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "util/cpu_budget_internal.h"

namespace stoker {

namespace {

std::optional<long long> ParsePositive(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || value <= 0) return std::nullopt;
  return value;
}

std::string ReadWord(const std::string& path, int index = 0) {
  std::ifstream in(path);
  std::string word;
  for (int i = 0; i <= index && (in >> word); ++i) {
  }
  return in ? word : "";
}

// CPUs a quota and its period allow; nullopt when either is missing or not positive (v1's
// "-1" and v2's "max" both mean unlimited).
std::optional<double> QuotaCpus(const std::string& quota, const std::string& period) {
  const auto q = ParsePositive(quota);
  const auto p = ParsePositive(period);
  if (!q || !p) return std::nullopt;
  return static_cast<double>(*q) / static_cast<double>(*p);
}

// The mask's CPUs, or those of `engine_cpus` in it when it names any.
int AffinityCpus(const std::vector<int>& engine_cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  if (engine_cpus.empty()) return std::max(1, CPU_COUNT(&set));
  cpu_set_t engine;
  CPU_ZERO(&engine);
  for (const int cpu : engine_cpus) {
    if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set)) CPU_SET(cpu, &engine);
  }
  return std::max(1, CPU_COUNT(&engine));
}

// The process's cgroup path for `controller` from /proc/self/cgroup ("0::/path" on v2,
// "N:cpu,cpuacct:/path" on v1); "" is the root.
std::string OwnCgroup(const std::string& controller) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::stringstream names(line.substr(first + 1, second - first - 1));
    std::string name;
    while (std::getline(names, name, ',')) {
      if (name == controller) return line.substr(second + 1);
    }
    if (controller.empty() && first + 1 == second) return line.substr(second + 1);
  }
  return "";
}

// The quota of `dir` and its ancestors up to `root`: the tightest one applies.
template <typename ReadQuota>
std::optional<double> TightestQuota(const std::string& root, std::string path, ReadQuota read) {
  std::optional<double> tightest;
  while (true) {
    if (auto quota = read(root + path); quota && (!tightest || *quota < *tightest)) {
      tightest = quota;
    }
    if (path.empty() || path == "/") break;
    path = path.substr(0, path.find_last_of('/'));
  }
  return tightest;
}

std::optional<double> CgroupQuota(const std::string& root) {
  // cgroup v2: "cpu.max" holds "max 100000" or "50000 100000".
  const std::string v2_root =
      std::ifstream(root + "/cgroup.controllers") ? root : root + "/unified";
  auto v2 = TightestQuota(v2_root, OwnCgroup(""), [](const std::string& dir) {
    return QuotaCpus(ReadWord(dir + "/cpu.max", 0), ReadWord(dir + "/cpu.max", 1));
  });
  if (v2) return v2;
  // cgroup v1: cfs_quota_us is -1 when unlimited.
  return TightestQuota(root + "/cpu", OwnCgroup("cpu"), [](const std::string& dir) {
    return QuotaCpus(ReadWord(dir + "/cpu.cfs_quota_us"), ReadWord(dir + "/cpu.cfs_period_us"));
  });
}

// This node's entry of Slurm's "2(x3),1" (node 0..2 run 2 tasks, node 3 runs 1).
std::optional<long long> SlurmTasksOnThisNode(const std::string& spec) {
  const char* node = std::getenv("SLURM_NODEID");
  long long index = std::max(0LL, node != nullptr ? std::atoll(node) : 0LL);
  std::stringstream entries(spec);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    const auto tasks = ParsePositive(entry);
    if (!tasks) return std::nullopt;
    long long repeat = 1;
    if (auto open = entry.find("(x"); open != std::string::npos) {
      auto times = ParsePositive(entry.substr(open + 2));
      if (!times) return std::nullopt;
      repeat = *times;
    }
    if (index < repeat) return tasks;
    index -= repeat;
  }
  return std::nullopt;
}

}  // namespace

int RanksPerNode(std::string* from) {
  for (const char* name : {"LOCAL_WORLD_SIZE", "HOROVOD_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
                           "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"}) {
    const char* value = std::getenv(name);
    if (auto ranks = ParsePositive(value ? value : "")) {
      *from = name;
      return static_cast<int>(std::min<long long>(*ranks, 1 << 20));
    }
  }
  if (const char* spec = std::getenv("SLURM_TASKS_PER_NODE")) {
    if (auto ranks = SlurmTasksOnThisNode(spec)) {
      *from = "SLURM_TASKS_PER_NODE";
      return static_cast<int>(std::min<long long>(*ranks, 1 << 20));
    }
  }
  // A launcher that places each rank on its node but does not count the node's ranks
  // (Lightning's sets LOCAL_RANK, NODE_RANK and WORLD_SIZE): all the job's ranks, an upper
  // bound on those sharing this node, so that they never take more than the node's CPUs.
  if (std::getenv("LOCAL_RANK") != nullptr) {
    const char* world = std::getenv("WORLD_SIZE");
    if (auto ranks = ParsePositive(world ? world : "")) {
      *from = "WORLD_SIZE";
      return static_cast<int>(std::min<long long>(*ranks, 1 << 20));
    }
  }
  from->clear();
  return 1;
}

CpuBudget ReadCpuBudget(const std::string& cgroup_root, const std::vector<int>& engine_cpus) {
  CpuBudget budget;
  budget.affinity = AffinityCpus(engine_cpus);
  budget.cgroup_quota = CgroupQuota(cgroup_root);
  budget.cpus = budget.affinity;
  if (budget.cgroup_quota) {
    const int quota_cpus = static_cast<int>(std::floor(*budget.cgroup_quota));
    budget.cpus = std::max(1, std::min(budget.affinity, quota_cpus));
  }
  std::string ranks_from;
  budget.ranks_per_node = RanksPerNode(&ranks_from);
  if (!ranks_from.empty()) budget.ranks_from = ranks_from;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  budget.own_cpus = online > 0 && budget.affinity < online;
  budget.threads = std::max(1, budget.own_cpus ? budget.cpus : budget.cpus / budget.ranks_per_node);
  return budget;
}

CpuBudget ReadCpuBudget() { return ReadCpuBudget(kCgroupRoot); }

CpuBudget ReadCpuBudget(const std::vector<int>& engine_cpus) {
  return ReadCpuBudget(kCgroupRoot, engine_cpus);
}

}  // namespace stoker
