// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/node_share.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "common/fixtures.h"
#include "exec/autotune.h"

namespace stoker {
namespace {

// Sets environment variables for a test and puts the old values back after it.
class ScopedEnv {
 public:
  ~ScopedEnv() {
    for (const auto& [name, old] : saved_) {
      if (old.has_value()) {
        setenv(name.c_str(), old->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }
  void Set(const std::string& name, const char* value) {
    if (saved_.count(name) == 0) {
      const char* old = std::getenv(name.c_str());
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
    }
    if (value == nullptr) {
      unsetenv(name.c_str());
    } else {
      setenv(name.c_str(), value, 1);
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

CpuBudget Budget(int cpus, int ranks, bool own = false) {
  CpuBudget budget;
  budget.cpus = cpus;
  budget.ranks_per_node = ranks;
  budget.own_cpus = own;
  budget.threads = own ? cpus : std::max(cpus / ranks, 1);
  return budget;
}

TEST(NodeShareTest, TheKeyComesFromTheLaunchersVariables) {
  ScopedEnv env;
  for (const char* name : {"STOKER_NODE_SHARE", "TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT",
                           "SLURM_JOB_ID", "SLURM_STEP_ID", "LOCAL_RANK", "SLURM_LOCALID",
                           "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "HOROVOD_LOCAL_RANK"}) {
    env.Set(name, nullptr);
  }
  EXPECT_FALSE(NodeShareKeyFromEnv(Budget(8, 2)).has_value());  // nothing names the job
  env.Set("TORCHELASTIC_RUN_ID", "run-7");
  EXPECT_FALSE(NodeShareKeyFromEnv(Budget(8, 2)).has_value());  // nor this rank's place
  env.Set("LOCAL_RANK", "1");
  auto key = NodeShareKeyFromEnv(Budget(8, 2));
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(key->job, "run-7");
  EXPECT_EQ(key->job_from, "TORCHELASTIC_RUN_ID");
  EXPECT_EQ(key->local_rank, 1);
  // One rank per node, CPUs of its own, a local rank out of range, or switched off: none.
  EXPECT_FALSE(NodeShareKeyFromEnv(Budget(8, 1)).has_value());
  EXPECT_FALSE(NodeShareKeyFromEnv(Budget(4, 2, /*own=*/true)).has_value());
  env.Set("LOCAL_RANK", "2");
  EXPECT_FALSE(NodeShareKeyFromEnv(Budget(8, 2)).has_value());
  env.Set("LOCAL_RANK", "0");
  env.Set("STOKER_NODE_SHARE", "off");
  EXPECT_FALSE(NodeShareKeyFromEnv(Budget(8, 2)).has_value());
  // STOKER_NODE_SHARE names the job itself; then the launcher's address.
  env.Set("STOKER_NODE_SHARE", "mine");
  EXPECT_EQ(NodeShareKeyFromEnv(Budget(8, 2))->job_from, "STOKER_NODE_SHARE");
  env.Set("STOKER_NODE_SHARE", nullptr);
  env.Set("TORCHELASTIC_RUN_ID", nullptr);
  env.Set("MASTER_ADDR", "10.0.0.1");
  env.Set("MASTER_PORT", "29500");
  EXPECT_EQ(NodeShareKeyFromEnv(Budget(8, 2))->job, "10.0.0.1:29500");
}

TEST(NodeShareTest, ARankMayUseWhatTheOthersLeaveAndAlwaysKeepsItsShare) {
  testing::TempDir dir;
  auto a = NodeShare::Open({"job", "test", 0}, 2, 4, dir.path().string());
  auto b = NodeShare::Open({"job", "test", 1}, 2, 4, dir.path().string());
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->path(), b->path());
  // Before its first window a rank claims its equal share: 2 of the 4 CPUs.
  EXPECT_EQ(b->OthersUsed(), 2.0);
  EXPECT_EQ(b->Allowance(2), 2);
  a->Publish(1, 0.1);
  EXPECT_DOUBLE_EQ(b->OthersUsed(), 0.1);
  EXPECT_EQ(b->Allowance(2), 4);  // 3.9 CPUs spare
  a->Publish(2, 2.4);
  EXPECT_EQ(b->Allowance(2), 2);  // 1.6 spare: rounds to 2, its share anyway
  a->Publish(4, 3.9);
  EXPECT_EQ(b->Allowance(2), 2);    // the share stands whatever the others take
  EXPECT_EQ(a->OthersUsed(), 2.0);  // b's claim, unmeasured yet
  b->Publish(2, 0.4);
  EXPECT_EQ(a->Allowance(2), 4);
  // A rank that closes frees its slot; the last one out removes the ledger.
  const std::string path = a->path();
  a.reset();
  EXPECT_EQ(b->OthersUsed(), 0.0);
  EXPECT_TRUE(std::filesystem::exists(path));
  b.reset();
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(NodeShareTest, ADeadRanksRecordCountsNothing) {
  testing::TempDir dir;
  auto alive = NodeShare::Open({"job", "test", 0}, 2, 4, dir.path().string());
  ASSERT_NE(alive, nullptr);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // a rank that publishes and dies without closing (killed, crashed)
    auto other = NodeShare::Open({"job", "test", 1}, 2, 4, dir.path().string());
    if (other != nullptr) other->Publish(4, 4.0);
    _exit(other != nullptr ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(alive->OthersUsed(), 0.0);
  EXPECT_EQ(alive->Allowance(2), 4);
}

TEST(NodeShareTest, TheControllerGivesBackWhatTheNodeNeeds) {
  TuneBounds bounds;
  bounds.max_threads = 8;
  bounds.max_prefetch = 8;
  bounds.tune_threads = bounds.tune_prefetch = true;
  AutotuneOptions options;
  auto state = std::make_shared<TuneState>(options, bounds, TuneSetting{2, 4});
  Autotuner& tuner = state->tuner();
  // Stalling with busy workers and 8 CPUs left to it: it grows past its share of 2.
  tuner.Decide(0.2, 0.9, 8);
  tuner.Decide(0.1, 0.9, 8);
  EXPECT_EQ(tuner.setting().threads, 5);
  // The others now need theirs: down to the allowance at once, whatever the stall.
  auto back = tuner.Decide(0.5, 0.9, 2);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->action, "threads down");
  EXPECT_EQ(back->to.threads, 2);
  EXPECT_NE(back->reason.find("other ranks"), std::string::npos) << back->reason;
  // And it grows no further than the allowance: prefetch moves instead.
  auto next = tuner.Decide(0.5, 0.9, 2);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->action, "prefetch up");
  EXPECT_EQ(tuner.setting().threads, 2);
}

}  // namespace
}  // namespace stoker
