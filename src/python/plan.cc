// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// The epoch plan's arithmetic that Python needs without a dataset (plan/plan.h): where a rank
// reads after resumed rounds, how many rows that leaves it, how many batches they make. The
// resume state (stoker._state), the epoch cursor, `stoker state` and the mixture loader ask
// these instead of restating the elastic rule.

#include "plan/plan.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "binding.h"

namespace stoker::python {
namespace {

using Rounds = std::vector<std::pair<int, int64_t>>;

/// This rank's segments of an epoch of `total_rows` positions after `resumed`: a one-unit plan
/// of the positions, so the plan's own checks of the rounds (limits against an untrusted
/// state) and its own elastic rule decide.
std::vector<Segment> Segments(int64_t total_rows, const Rounds& resumed, int world_size, int rank) {
  if (total_rows == 0) return {};
  PlanConfig config;
  config.shuffle = false;
  config.window_rows = total_rows;
  config.world_size = world_size;
  config.rank = rank;
  for (const auto& [round_world_size, rows] : resumed) {
    config.resumed.push_back({round_world_size, rows});
  }
  return ValueOrThrow(EpochPlan::Make({total_rows}, config)).segments();
}

/// What this rank has left of an epoch of `total_rows` rows after `resumed`, in either mode:
/// a one-unit plan (the same rule as the real plan's, no data). nullopt for an empty epoch.
std::optional<EpochPlan> RankPlan(int64_t total_rows, const Rounds& resumed, int world_size,
                                  int rank, int64_t batch_size, bool drop_last,
                                  const std::string& mode, bool pad_to_equal_steps) {
  if (total_rows == 0) return std::nullopt;
  PlanConfig config;
  config.shuffle = false;
  config.window_rows = total_rows;
  config.world_size = world_size;
  config.rank = rank;
  config.batch_size = batch_size;
  config.drop_last = drop_last;
  if (mode != "train" && mode != "eval") {
    throw nb::value_error(("mode must be 'train' or 'eval', got '" + mode + "'").c_str());
  }
  config.exactly_once = mode == "eval";
  config.pad_to_equal_steps = pad_to_equal_steps;
  for (const auto& [round_world_size, rows] : resumed) {
    config.resumed.push_back({round_world_size, rows});
  }
  return ValueOrThrow(EpochPlan::Make({total_rows}, config));
}

}  // namespace

void BindPlan(nb::module_& m) {
  m.def(
      "rank_segments",
      [](int64_t total_rows, const Rounds& resumed, int world_size, int rank) {
        std::vector<std::pair<int64_t, int64_t>> out;
        for (const Segment& s : Segments(total_rows, resumed, world_size, rank)) {
          out.emplace_back(s.begin, s.end);
        }
        return out;
      },
      nb::arg("total_rows"), nb::arg("resumed"), nb::arg("world_size"), nb::arg("rank"),
      "This rank's [begin, end) ranges of an epoch of `total_rows` positions after the "
      "`resumed` (world_size, rows per rank) rounds: the elastic rule of the epoch plan.");
  m.def(
      "rows_left",
      [](int64_t total_rows, const Rounds& resumed, int world_size) {
        int64_t rows = 0;
        for (const Segment& s : Segments(total_rows, resumed, world_size, 0)) {
          rows += s.end - s.begin;
        }
        return rows;
      },
      nb::arg("total_rows"), nb::arg("resumed"), nb::arg("world_size"),
      "Rows each of `world_size` ranks has left of an epoch of `total_rows` rows after the "
      "`resumed` (world_size, rows per rank) rounds (mode=\"train\": equal shares).");
  m.def(
      "batches_left",
      [](int64_t total_rows, const Rounds& resumed, int world_size, int rank, int64_t batch_size,
         bool drop_last, const std::string& mode, bool pad_to_equal_steps) {
        const auto plan = RankPlan(total_rows, resumed, world_size, rank, batch_size, drop_last,
                                   mode, pad_to_equal_steps);
        return plan.has_value() ? plan->num_batches() : int64_t{0};
      },
      nb::arg("total_rows"), nb::arg("resumed"), nb::arg("world_size"), nb::arg("rank"),
      nb::arg("batch_size"), nb::arg("drop_last"), nb::arg("mode"), nb::arg("pad_to_equal_steps"),
      "Batches rank `rank` of `world_size` has left of an epoch of `total_rows` rows after "
      "the `resumed` rounds, in mode \"train\" or \"eval\" (with its padding): the plan's "
      "own count, without data.");
  m.def(
      "rank_rows",
      [](int64_t total_rows, const Rounds& resumed, int world_size, int rank, int64_t batch_size,
         bool drop_last, const std::string& mode, bool pad_to_equal_steps) {
        const auto plan = RankPlan(total_rows, resumed, world_size, rank, batch_size, drop_last,
                                   mode, pad_to_equal_steps);
        return plan.has_value() ? plan->rank_rows() : int64_t{0};
      },
      nb::arg("total_rows"), nb::arg("resumed"), nb::arg("world_size"), nb::arg("rank"),
      nb::arg("batch_size"), nb::arg("drop_last"), nb::arg("mode"), nb::arg("pad_to_equal_steps"),
      "Planned rows (padding included) of those batches: batch b holds "
      "min(batch_size, rank_rows - b * batch_size) of them, however many a skipped unit left "
      "out.");
  m.def(
      "batches_per_rank",
      [](int64_t rows, int64_t batch_size, bool drop_last) {
        if (batch_size < 1) throw nb::value_error("batch_size must be >= 1");
        PlanConfig config;
        config.batch_size = batch_size;
        config.drop_last = drop_last;
        return BatchesPerRank(rows, config);
      },
      nb::arg("rows"), nb::arg("batch_size"), nb::arg("drop_last"),
      "Batches `rows` rows make at `batch_size` (the last one short unless `drop_last`).");
}

}  // namespace stoker::python
