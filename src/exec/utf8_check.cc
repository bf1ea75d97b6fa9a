// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/utf8_check.h"

#include <arrow/array/data.h>
#include <arrow/array/validate.h>
#include <arrow/extension_type.h>
#include <arrow/type.h>
#include <arrow/util/utf8.h>

namespace stoker {

namespace {

const arrow::DataType& StorageType(const arrow::DataType& type) {
  if (type.id() != arrow::Type::EXTENSION) return type;
  return *static_cast<const arrow::ExtensionType&>(type).storage_type();
}

// Whether every string of an offsets-and-bytes string array is valid UTF-8, in one pass of
// Arrow's (SIMD) validator over the bytes the values span rather than one call per value,
// which costs several times more on short strings. Valid bytes split at character
// boundaries are valid pieces, so it also checks that no value starts inside a character
// (on a continuation byte, 10xxxxxx). Bytes under null slots are checked too: stricter than
// ValidateFull, so a failure is confirmed value by value (CheckStrings).
template <typename Offset>
bool SpannedBytesValid(const arrow::ArrayData& data) {
  if (data.length == 0 || data.buffers[2] == nullptr) return true;
  const Offset* offsets = data.GetValues<Offset>(1);
  const uint8_t* bytes = data.buffers[2]->data();
  const Offset begin = offsets[0];
  const Offset end = offsets[data.length];
  if (!arrow::util::ValidateUTF8(bytes + begin, end - begin)) return false;
  for (int64_t i = 1; i < data.length; ++i) {
    if (offsets[i] < end && (bytes[offsets[i]] & 0xC0) == 0x80) return false;
  }
  return true;
}

// The strings under `data`, at any depth. Arrow's own check (what ValidateFull runs, one
// call per non-null value) decides, after the fast pass where there is one.
arrow::Status CheckStrings(const arrow::ArrayData& data) {
  switch (StorageType(*data.type).id()) {
    case arrow::Type::STRING:
      if (SpannedBytesValid<int32_t>(data)) return arrow::Status::OK();
      return arrow::internal::ValidateUTF8(data);
    case arrow::Type::LARGE_STRING:
      if (SpannedBytesValid<int64_t>(data)) return arrow::Status::OK();
      return arrow::internal::ValidateUTF8(data);
    case arrow::Type::STRING_VIEW:
      return arrow::internal::ValidateUTF8(data);
    default:
      break;
  }
  for (const auto& child : data.child_data) ARROW_RETURN_NOT_OK(CheckStrings(*child));
  if (data.dictionary != nullptr) ARROW_RETURN_NOT_OK(CheckStrings(*data.dictionary));
  return arrow::Status::OK();
}

}  // namespace

arrow::Status CheckUtf8(const arrow::RecordBatch& batch) {
  arrow::util::InitializeUTF8();  // once per process (it guards itself)
  for (int i = 0; i < batch.num_columns(); ++i) {
    const arrow::Status status = CheckStrings(*batch.column_data(i));
    if (!status.ok()) {
      return arrow::Status::Invalid("column '", batch.schema()->field(i)->name(),
                                    "' holds a string that is not valid UTF-8 (", status.message(),
                                    "); the file's bytes are not what its string type says");
    }
  }
  return arrow::Status::OK();
}

}  // namespace stoker
