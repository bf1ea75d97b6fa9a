// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/record_batch.h>
#include <arrow/status.h>

namespace stoker {

/// Checks that every string of a decoded unit is valid UTF-8: string, large_string and
/// string_view columns, and those inside lists, structs, maps and dictionaries. Parquet
/// decoders pass a string column's bytes through as they are in the file, so a file may
/// hold bytes that make an Arrow array fail ValidateFull; Stoker refuses them instead of
/// handing them to transforms and consumers. The error names the column (the caller adds
/// file and row group).
arrow::Status CheckUtf8(const arrow::RecordBatch& batch);

}  // namespace stoker
