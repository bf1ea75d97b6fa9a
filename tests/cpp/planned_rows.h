// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The rows a plan names, worked out from the plan alone: the oracle the assembler and the
// epoch pipeline are checked against.
#pragma once

#include <cstdint>
#include <vector>

#include "manifest/manifest.h"
#include "plan/plan.h"

namespace stoker::testing {

/// Global row indices (dataset order) of batch `b` of `plan`, in order; `units` are the
/// units the plan's unit indices refer to.
inline std::vector<int64_t> PlannedRows(const EpochPlan& plan, const std::vector<Unit>& units,
                                        int64_t b) {
  std::vector<int64_t> rows;
  const auto [begin, end] = plan.BatchRange(b);
  for (int64_t offset = begin; offset < end; ++offset) {
    const int64_t pos = plan.Position(offset);
    const int64_t window = plan.WindowOf(pos);
    const RowSource source = plan.Locate(pos, window, plan.WindowRows(window));
    const int32_t unit =
        plan.unit_order()[plan.windows()[window].first_unit + source.unit_in_window];
    rows.push_back(units[unit].first_row + source.row);
  }
  return rows;
}

}  // namespace stoker::testing
