// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/record_batch.h>
#include <arrow/result.h>

#include <memory>

#include "stoker/manifest.h"
#include "stoker/stats.h"

namespace stoker {

/// Reads one unit (a row group) with column projection: fetches its column chunks in
/// coalesced ranges, then decodes them. The result has the manifest's schema. With
/// OutputKind::kTensor a column holding nulls is an error naming file, row group and column.
/// Errors name the file and row group. Opens its own reader so buffered bytes are freed when
/// it returns (DESIGN.md, pre_buffer).
arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadUnit(const Manifest& manifest,
                                                            const Unit& unit, OutputKind output,
                                                            arrow::MemoryPool* pool, Stats* stats);

}  // namespace stoker
