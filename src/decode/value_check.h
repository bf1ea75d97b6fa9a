// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/record_batch.h>
#include <arrow/status.h>

namespace stoker {

/// Checks that every value of a decoded unit is one its Arrow type allows — what
/// ValidateFull checks beyond the layout: strings are valid UTF-8 (string, large_string and
/// string_view columns, and those inside lists, structs, maps and dictionaries), decimals fit
/// their precision, and so on. Parquet decoders pass a file's values through as they are, so a
/// file may hold bytes that make an Arrow array fail ValidateFull; Stoker refuses them instead
/// of handing them to transforms and consumers. The error names the column (the caller adds
/// file and row group).
arrow::Status CheckValues(const arrow::RecordBatch& batch);

}  // namespace stoker
