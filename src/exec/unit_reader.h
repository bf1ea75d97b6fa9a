// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/io/interfaces.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/disk_cache.h"
#include "decode/column_decoder.h"
#include "decode/row_group_reader.h"
#include "exec/error_budget.h"
#include "exec/unit_source.h"
#include "manifest/manifest.h"
#include "stoker/options.h"
#include "telemetry/stats.h"
#include "transform/row_filter.h"
#include "transform/transform_spec.h"

namespace stoker {

/// Fetches and decodes, blocking.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadRowGroup(const UnitSource& source,
                                                                const Unit& unit,
                                                                std::vector<int> columns,
                                                                Stats* stats);

/// Filters a decoded unit and transforms it up to the first op that draws random numbers:
/// what the disk cache stores (the finished unit when no op draws). A row count other than
/// unit.num_rows means the file changed.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> FinishUnit(
    const UnitSource& source, const Unit& unit, std::shared_ptr<arrow::RecordBatch> raw,
    Stats* stats);

/// Makes a finished (or cached) unit what the plan expects: applies the ops that draw random
/// numbers for (seed, epoch) — none: the unit as it is — and checks it (CheckUnit).
arrow::Result<std::shared_ptr<arrow::RecordBatch>> DrawUnit(
    const UnitSource& source, const Unit& unit, std::shared_ptr<arrow::RecordBatch> finished,
    uint64_t seed, uint64_t epoch, Stats* stats);

/// Checks a finished unit: its row count (else the file changed) and, with OutputKind::kTensor,
/// no nulls in its columns (the error names file, row group and column).
arrow::Status CheckUnit(const UnitSource& source, const Unit& unit,
                        const arrow::RecordBatch& batch);

/// The cache key of a unit: its file's identity, row group and the source's config digest.
std::string CacheKey(const UnitSource& source, const Unit& unit);

/// Every column the unit needs, in manifest order.
std::vector<int> AllColumns(const UnitSource& source);

/// Reads, finishes and draws one unit for (seed, epoch), blocking.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadUnit(const UnitSource& source,
                                                            const Unit& unit, uint64_t seed,
                                                            uint64_t epoch, Stats* stats);

}  // namespace stoker
