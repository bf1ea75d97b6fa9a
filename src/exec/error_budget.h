// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/status.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "manifest/manifest.h"
#include "stoker/stats.h"
#include "util/thread_annotations.h"

namespace stoker {

/// The units a loader skipped under on_error="skip" and the budget they must stay within
/// (max_bad_units, max_bad_fraction). Shared by a loader's epochs and their worker threads;
/// a unit is counted once however many epochs meet it.
class ErrorBudget {
 public:
  /// `total_units`: the dataset's units, and the files left out unread (what
  /// max_bad_fraction is a fraction of).
  ErrorBudget(int64_t total_units, std::optional<int64_t> max_units,
              std::optional<double> max_fraction)
      : total_units_(total_units), max_units_(max_units), max_fraction_(max_fraction) {}

  /// Records that unit `unit_id` (an index into UnitSource::units) failed with `error`. OK
  /// while the skipped units stay within the budget; otherwise an error saying how many
  /// failed and which (file, row group, first error).
  arrow::Status Skip(int32_t unit_id, const Manifest& manifest, const Unit& unit,
                     const arrow::Status& error) EXCLUDES(mutex_);

  /// Records a file left out of the manifest because its footer could not be read: listed
  /// as a skipped unit with row group -1 and 0 rows (its rows were never counted), and
  /// counted against the budget like a unit. OK while within the budget.
  arrow::Status SkipFile(const UnreadableFile& file) EXCLUDES(mutex_);

  /// The units skipped so far, in the order they were first met.
  std::vector<SkippedUnit> skipped() const EXCLUDES(mutex_);

 private:
  bool WithinBudget(int64_t skipped) const;
  /// The over-budget error, naming the units.
  arrow::Status OverBudget() const REQUIRES(mutex_);

  const int64_t total_units_;
  const std::optional<int64_t> max_units_;
  const std::optional<double> max_fraction_;
  mutable Mutex mutex_;
  std::set<int32_t> unit_ids_ GUARDED_BY(mutex_);
  std::vector<SkippedUnit> skipped_ GUARDED_BY(mutex_);
};

}  // namespace stoker
