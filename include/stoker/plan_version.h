// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Header only; src/plan/permutation.cc is where the versions differ.
#pragma once

namespace stoker {

/// The plan versions a loader can follow (LoaderOptions::plan_version). A version fixes every
/// choice of an epoch's plan for good: the same (version, seed, options, dataset) gives the
/// same batches in every release, and a saved state or a served stream names its version.
/// Version 1 is the plan of every release before version 2 existed; version 2 shuffles as
/// well in fewer steps (Permutation, src/plan/permutation.h; docs/shuffle.md).
inline constexpr int kFirstPlanVersion = 1;
inline constexpr int kLatestPlanVersion = 2;

}  // namespace stoker
