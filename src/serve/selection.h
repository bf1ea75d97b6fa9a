// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/flight/types.h>
#include <arrow/result.h>

#include <cstdint>
#include <optional>

namespace stoker {

/// What a FlightDescriptor asks a server for (docs/serve.md, "The protocol"): one epoch's
/// batches for a world size, of one rank or of every rank (one endpoint each).
struct Selection {
  int64_t epoch = 0;
  int world_size = 1;
  /// Unset: every rank of world_size.
  std::optional<int> rank;
};

/// A selection without a rank lists at most this many endpoints (name a rank for more).
inline constexpr int kMaxSelectedRanks = 1024;
/// The largest world size a descriptor may name (the ticket's own limit).
inline constexpr int kMaxSelectedWorldSize = 1 << 20;

/// A command descriptor (whatever its bytes: the one ListFlights returns, or any other)
/// selects the defaults: epoch 0, world size 1, rank 0. A path descriptor selects by its
/// segments, each "key=value" with key epoch, world_size or rank, in any order, each at most
/// once; a key left out keeps its default (rank: every rank). Anything else is an error
/// naming the segment.
arrow::Result<Selection> ParseSelection(const arrow::flight::FlightDescriptor& descriptor);

}  // namespace stoker
