// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The parts of the CPU budget (stoker/cpu_budget.h) a test or the binding points elsewhere:
// the cgroup tree it reads, and the ranks per node on their own.
#pragma once

#include <string>
#include <vector>

#include "stoker/cpu_budget.h"

namespace stoker {

/// Where the cgroup file systems are mounted: where ReadCpuBudget() looks.
inline constexpr char kCgroupRoot[] = "/sys/fs/cgroup";

/// ReadCpuBudget(engine_cpus) with the cgroup file systems mounted at `cgroup_root` (a test
/// can point it at a tree of its own).
CpuBudget ReadCpuBudget(const std::string& cgroup_root, const std::vector<int>& engine_cpus = {});

/// Ranks per node named by the environment: torchrun's LOCAL_WORLD_SIZE, Horovod's
/// HOROVOD_LOCAL_SIZE, Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE, MPICH's MPI_LOCALNRANKS, then
/// Slurm's SLURM_NTASKS_PER_NODE or this node's entry of SLURM_TASKS_PER_NODE ("2(x3),1");
/// failing those, where a launcher set LOCAL_RANK but no count (Lightning's), WORLD_SIZE: all
/// the job's ranks, an upper bound on this node's. Sets `*from` to the variable used; returns
/// 1 (and "") when none is set or valid.
int RanksPerNode(std::string* from);

}  // namespace stoker
