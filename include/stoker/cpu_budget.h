// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Implemented in src/util/cpu_budget.cc.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "stoker/fields.h"

namespace stoker {

/// The CPUs one rank of a job may keep busy: what the process may run on, shared by the
/// ranks on its node unless each has CPUs of its own. Sizes the worker pool when
/// LoaderOptions::num_threads is 0, so eight ranks on a 32-core node start 4 workers each rather
/// than 32 (the "thread storm").
struct CpuBudget {
  /// CPUs in the process's affinity mask (sched_getaffinity: taskset, cpusets), or of
  /// those LoaderOptions::engine_cpus names when it names any.
  int affinity = 1;
  /// The cgroup's CPU quota in CPUs (cgroup v2 cpu.max, v1 cfs_quota_us / cfs_period_us);
  /// nullopt when unlimited or unreadable.
  std::optional<double> cgroup_quota;
  /// Whole CPUs both allow: min(affinity, floor(quota)), at least 1.
  int cpus = 1;
  /// Ranks sharing this node, from the launcher's environment (1 when none says).
  int ranks_per_node = 1;
  /// The variable ranks_per_node came from; nullopt when none was set.
  std::optional<std::string> ranks_from;
  /// The affinity mask is narrower than the host's online CPUs: the launcher gave this rank
  /// CPUs of its own (numactl, taskset, Slurm's --cpu-bind), so they are not shared again.
  bool own_cpus = false;
  /// This rank's default worker threads, at least 1: cpus when own_cpus, else
  /// cpus / ranks_per_node.
  int threads = 1;
};

/// CpuBudget's fields by name: stats()["cpu_budget"] in Python (stoker/fields.h).
constexpr auto FieldsOf(const CpuBudget&) {
  using B = CpuBudget;
  return std::tuple{Field{"affinity", &B::affinity},
                    Field{"cgroup_quota", &B::cgroup_quota},
                    Field{"cpus", &B::cpus},
                    Field{"ranks_per_node", &B::ranks_per_node},
                    Field{"ranks_from", &B::ranks_from},
                    Field{"own_cpus", &B::own_cpus},
                    Field{"threads", &B::threads}};
}

/// Reads the budget of the calling process: its affinity mask, the cgroup quota under
/// /sys/fs/cgroup, the ranks per node the launcher's environment names (torchrun, Horovod,
/// Open MPI, MPICH, Slurm).
CpuBudget ReadCpuBudget();
/// The same for engine threads kept on `engine_cpus` (LoaderOptions::engine_cpus; empty: the
/// whole mask): the affinity counted is theirs within the mask, so the default thread count
/// follows them.
CpuBudget ReadCpuBudget(const std::vector<int>& engine_cpus);

}  // namespace stoker
