// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// How the ranks of one job on one node share its CPUs by need (docs/autotune.md, "Ranks on a
// node"): each rank's controller publishes the CPUs its workers used in its last window to a
// small file ledger in /dev/shm, one fixed record per local rank, and may grow past its equal
// share into what the others leave unused. A rank always keeps its equal share: one that
// starts to stall grows back to it at once, and the others give back at their next window.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "stoker/cpu_budget.h"

namespace stoker {

/// Where the ranks of a job on a node meet: the ledger's name and this rank's slot.
struct NodeShareKey {
  /// Identifies the job: STOKER_NODE_SHARE, else torchrun's TORCHELASTIC_RUN_ID, else
  /// MASTER_ADDR:MASTER_PORT, else Slurm's SLURM_JOB_ID.SLURM_STEP_ID.
  std::string job;
  /// The variable `job` came from.
  std::string job_from;
  /// This rank's index on the node (LOCAL_RANK, SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK,
  /// MPI_LOCALRANKID, HOROVOD_LOCAL_RANK), 0 .. ranks_per_node - 1.
  int local_rank = 0;
};

/// The key from the environment; nullopt when sharing does not apply: one rank per node, CPUs
/// of its own (own_cpus), STOKER_NODE_SHARE=off, or no variable naming the job or the local
/// rank (then each rank keeps its equal share, as without the controller).
std::optional<NodeShareKey> NodeShareKeyFromEnv(const CpuBudget& budget);

/// One rank's view of the node's ledger. Thread-safe (one controller per stream may publish).
class NodeShare {
 public:
  /// Opens (creating) the ledger of `key` in `dir` for `ranks` ranks sharing `cpus` CPUs and
  /// claims this rank's equal share until its first Publish; null when the file cannot be
  /// opened (sharing then does not apply). The last rank to close removes the file.
  static std::shared_ptr<NodeShare> Open(const NodeShareKey& key, int ranks, int cpus,
                                         const std::string& dir = "/dev/shm");
  ~NodeShare();
  NodeShare(const NodeShare&) = delete;
  NodeShare& operator=(const NodeShare&) = delete;

  /// Records that this rank's workers used `used_cpus` CPUs (busy share × active workers)
  /// over its last window, with `threads` active.
  void Publish(int threads, double used_cpus);
  /// The CPUs the other live ranks used in their last windows (a rank whose process is gone,
  /// or that has not published for 30 s, counts nothing).
  double OthersUsed() const;
  /// The most workers this rank may have at work now: its equal share, or more where the
  /// others leave CPUs unused (rounded to the nearest whole CPU), at most `cpus`.
  int Allowance(int share) const;

  const std::string& path() const { return path_; }
  int cpus() const { return cpus_; }
  int ranks() const { return ranks_; }
  const NodeShareKey& key() const { return key_; }

 private:
  NodeShare(NodeShareKey key, int ranks, int cpus, std::string path, int fd);

  const NodeShareKey key_;
  const int ranks_;
  const int cpus_;
  const std::string path_;
  const int fd_;
};

}  // namespace stoker
