// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/error_budget.h"

#include <sstream>

namespace stoker {

namespace {

// Units named in an over-budget error; the rest are counted (stats() lists them all).
constexpr size_t kUnitsNamed = 5;

}  // namespace

arrow::Status ErrorBudget::Skip(int32_t unit_id, const Manifest& manifest, const Unit& unit,
                                const arrow::Status& error) {
  MutexLock lock(mutex_);
  if (unit_ids_.insert(unit_id).second) {
    SkippedUnit skipped;
    skipped.file = manifest.files()[unit.file].source.display;
    skipped.row_group = unit.row_group;
    skipped.rows = unit.num_rows;
    skipped.error = error.ToString();
    skipped_.push_back(std::move(skipped));
  }
  if (WithinBudget(static_cast<int64_t>(skipped_.size()))) return arrow::Status::OK();
  return OverBudget();
}

arrow::Status ErrorBudget::SkipFile(const UnreadableFile& file) {
  MutexLock lock(mutex_);
  SkippedUnit skipped;
  skipped.file = file.path;
  skipped.row_group = -1;
  skipped.error = file.error.ToString();
  skipped_.push_back(std::move(skipped));
  if (WithinBudget(static_cast<int64_t>(skipped_.size()))) return arrow::Status::OK();
  return OverBudget();
}

bool ErrorBudget::WithinBudget(int64_t skipped) const {
  if (max_units_.has_value() && skipped > *max_units_) return false;
  if (max_fraction_.has_value() &&
      static_cast<double>(skipped) > *max_fraction_ * static_cast<double>(total_units_)) {
    return false;
  }
  return true;
}

arrow::Status ErrorBudget::OverBudget() const {
  std::ostringstream out;
  out << skipped_.size() << " of " << total_units_
      << " units (row groups) could not be read, over the error budget (on_error='skip'";
  if (max_units_.has_value()) out << ", max_bad_units=" << *max_units_;
  if (max_fraction_.has_value()) out << ", max_bad_fraction=" << *max_fraction_;
  out << "):";
  for (size_t i = 0; i < skipped_.size() && i < kUnitsNamed; ++i) {
    const SkippedUnit& unit = skipped_[i];
    out << (i == 0 ? " " : "; ") << "'" << unit.file << "' ";
    if (unit.row_group < 0) {
      out << "(its footer)";
    } else {
      out << "row group " << unit.row_group << " (" << unit.rows << " rows)";
    }
    out << ": " << unit.error;
  }
  if (skipped_.size() > kUnitsNamed) out << "; and " << skipped_.size() - kUnitsNamed << " more";
  return arrow::Status::IOError(out.str());
}

std::vector<SkippedUnit> ErrorBudget::skipped() const {
  MutexLock lock(mutex_);
  return skipped_;
}

}  // namespace stoker
