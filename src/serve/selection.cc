// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "serve/selection.h"

#include <charconv>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace stoker {

namespace {

// The whole of `text` as a base-10 integer in [low, high], or nothing.
bool ParseInRange(std::string_view text, int64_t low, int64_t high, int64_t* value) {
  const char* end = text.data() + text.size();
  auto [ptr, error] = std::from_chars(text.data(), end, *value);
  return error == std::errc() && ptr == end && !text.empty() && *value >= low && *value <= high;
}

}  // namespace

arrow::Result<Selection> ParseSelection(const arrow::flight::FlightDescriptor& descriptor) {
  Selection selection;
  if (descriptor.type != arrow::flight::FlightDescriptor::PATH) return selection;
  std::set<std::string_view> seen;
  for (const std::string& segment : descriptor.path) {
    const auto eq = segment.find('=');
    const std::string_view key = std::string_view(segment).substr(0, eq);
    if (eq == std::string::npos || !seen.insert(key).second) {
      return arrow::Status::Invalid(
          "descriptor path segment '", segment,
          eq == std::string::npos ? "' is not key=value" : "' repeats its key",
          " (keys: epoch, world_size, rank; docs/serve.md)");
    }
    const std::string_view text = std::string_view(segment).substr(eq + 1);
    int64_t value = 0;
    bool parsed = false;
    if (key == "epoch") {
      parsed = ParseInRange(text, 0, INT64_MAX, &value);
      selection.epoch = value;
    } else if (key == "world_size") {
      parsed = ParseInRange(text, 1, kMaxSelectedWorldSize, &value);
      selection.world_size = static_cast<int>(value);
    } else if (key == "rank") {
      parsed = ParseInRange(text, 0, kMaxSelectedWorldSize - 1, &value);
      selection.rank = static_cast<int>(value);
    } else {
      return arrow::Status::Invalid("descriptor path segment '", segment, "': unknown key '", key,
                                    "' (keys: epoch, world_size, rank)");
    }
    if (!parsed) {
      return arrow::Status::Invalid("descriptor path segment '", segment, "': ", key,
                                    key == "world_size" ? " must be an integer in [1, 2^20]"
                                                        : " must be a non-negative integer");
    }
  }
  if (selection.rank && *selection.rank >= selection.world_size) {
    return arrow::Status::Invalid("descriptor selects rank ", *selection.rank,
                                  " of a world size of ", selection.world_size);
  }
  if (!selection.rank && selection.world_size > kMaxSelectedRanks) {
    return arrow::Status::Invalid("descriptor selects every rank of a world size of ",
                                  selection.world_size, ": name one rank (rank=R) above ",
                                  kMaxSelectedRanks);
  }
  return selection;
}

}  // namespace stoker
