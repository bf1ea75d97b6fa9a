// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Header only; src/plan/plan.cc plans the rest of an epoch after these rounds.
#pragma once

#include <cstdint>

namespace stoker {

/// One stretch of an epoch that ended in a checkpoint: `world_size` lock-stepped ranks each
/// consumed the first `rows_per_rank` rows of their slice (docs/design.md, "Resume").
struct ResumeRound {
  int world_size = 1;
  int64_t rows_per_rank = 0;
  bool operator==(const ResumeRound&) const = default;
};

}  // namespace stoker
