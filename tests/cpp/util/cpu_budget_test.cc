// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "stoker/cpu_budget.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <cstdlib>
#include <fstream>

#include "common/fixtures.h"
#include "util/cpu_budget_internal.h"

namespace stoker {
namespace {

// ctest runs each test in a process of its own, so the variables set here stay here; each
// test still clears what it reads first, whatever the environment that started it.
void ClearLauncherVariables() {
  for (const char* name : {"LOCAL_WORLD_SIZE", "HOROVOD_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
                           "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE",
                           "SLURM_NODEID", "LOCAL_RANK", "WORLD_SIZE"}) {
    unsetenv(name);
  }
}

void Write(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(CpuBudgetTest, RanksPerNodeComeFromTheLauncherInOrder) {
  ClearLauncherVariables();
  std::string from;
  EXPECT_EQ(RanksPerNode(&from), 1);
  EXPECT_EQ(from, "");
  setenv("SLURM_NTASKS_PER_NODE", "8", 1);
  EXPECT_EQ(RanksPerNode(&from), 8);
  EXPECT_EQ(from, "SLURM_NTASKS_PER_NODE");
  setenv("LOCAL_WORLD_SIZE", "4", 1);  // torchrun's, more specific, wins
  EXPECT_EQ(RanksPerNode(&from), 4);
  EXPECT_EQ(from, "LOCAL_WORLD_SIZE");
  setenv("LOCAL_WORLD_SIZE", "four", 1);  // not a count: the next one says
  EXPECT_EQ(RanksPerNode(&from), 8);
}

TEST(CpuBudgetTest, ALauncherThatCountsNoRanksPerNodeGivesTheWorldSize) {
  ClearLauncherVariables();
  std::string from;
  setenv("WORLD_SIZE", "4", 1);  // alone (a single process told its world size): not a launcher
  EXPECT_EQ(RanksPerNode(&from), 1);
  EXPECT_EQ(from, "");
  setenv("LOCAL_RANK", "1", 1);  // Lightning's launcher: LOCAL_RANK, NODE_RANK, WORLD_SIZE
  EXPECT_EQ(RanksPerNode(&from), 4);
  EXPECT_EQ(from, "WORLD_SIZE");
  setenv("LOCAL_WORLD_SIZE", "2", 1);  // a count of the node's ranks wins
  EXPECT_EQ(RanksPerNode(&from), 2);
  EXPECT_EQ(from, "LOCAL_WORLD_SIZE");
}

TEST(CpuBudgetTest, SlurmTasksPerNodeIsReadForThisNode) {
  ClearLauncherVariables();
  std::string from;
  setenv("SLURM_TASKS_PER_NODE", "2(x3),1", 1);
  for (auto [node, ranks] : {std::pair{"0", 2}, {"2", 2}, {"3", 1}}) {
    setenv("SLURM_NODEID", node, 1);
    EXPECT_EQ(RanksPerNode(&from), ranks) << "node " << node;
    EXPECT_EQ(from, "SLURM_TASKS_PER_NODE");
  }
  setenv("SLURM_NODEID", "9", 1);  // past the list: unknown
  EXPECT_EQ(RanksPerNode(&from), 1);
  EXPECT_EQ(from, "");
}

TEST(CpuBudgetTest, QuotaFromACgroupV2Tree) {
  ClearLauncherVariables();
  testing::TempDir dir;
  Write(dir.path() / "cgroup.controllers", "cpu\n");
  Write(dir.path() / "cpu.max", "250000 100000\n");
  const CpuBudget budget = ReadCpuBudget(dir.path().string());
  ASSERT_TRUE(budget.cgroup_quota.has_value());
  EXPECT_DOUBLE_EQ(*budget.cgroup_quota, 2.5);
  EXPECT_EQ(budget.cpus, std::min(budget.affinity, 2));
  EXPECT_EQ(budget.threads, budget.cpus);
}

TEST(CpuBudgetTest, UnlimitedOrMissingQuotaLeavesTheAffinity) {
  ClearLauncherVariables();
  testing::TempDir dir;
  Write(dir.path() / "cgroup.controllers", "cpu\n");
  Write(dir.path() / "cpu.max", "max 100000\n");
  Write(dir.path() / "cpu" / "cpu.cfs_quota_us", "-1\n");
  Write(dir.path() / "cpu" / "cpu.cfs_period_us", "100000\n");
  const CpuBudget budget = ReadCpuBudget(dir.path().string());
  EXPECT_FALSE(budget.cgroup_quota.has_value());
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(budget.affinity, CPU_COUNT(&set));
  EXPECT_EQ(budget.cpus, budget.affinity);
}

TEST(CpuBudgetTest, RanksShareTheCpusAndEachGetsAtLeastOne) {
  ClearLauncherVariables();
  testing::TempDir dir;
  Write(dir.path() / "cpu" / "cpu.cfs_quota_us", "20000\n");  // cgroup v1: 0.2 CPUs
  Write(dir.path() / "cpu" / "cpu.cfs_period_us", "100000\n");
  setenv("LOCAL_WORLD_SIZE", "64", 1);
  const CpuBudget budget = ReadCpuBudget(dir.path().string());
  EXPECT_DOUBLE_EQ(*budget.cgroup_quota, 0.2);
  EXPECT_EQ(budget.cpus, 1);
  EXPECT_EQ(budget.ranks_per_node, 64);
  EXPECT_EQ(budget.threads, 1);
}

}  // namespace
}  // namespace stoker
