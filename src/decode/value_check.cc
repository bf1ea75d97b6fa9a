// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "decode/value_check.h"

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

bool IsString(const arrow::DataType& type) {
  const auto id = StorageType(type).id();
  return id == arrow::Type::STRING || id == arrow::Type::LARGE_STRING ||
         id == arrow::Type::STRING_VIEW;
}

// Whether `type` has strings in it at any depth (dictionary values included).
bool HasStrings(const arrow::DataType& type) {
  if (IsString(type)) return true;
  const arrow::DataType& storage = StorageType(type);
  if (storage.id() == arrow::Type::DICTIONARY) {
    return HasStrings(*static_cast<const arrow::DictionaryType&>(storage).value_type());
  }
  for (const auto& field : storage.fields()) {
    if (HasStrings(*field->type())) return true;
  }
  return false;
}

// Whether every string of an offsets-and-bytes string array is valid UTF-8, in one pass of
// Arrow's validator over the bytes the values span rather than one call per value, which
// costs more on short strings. Valid bytes split at character boundaries are valid pieces,
// so it also checks that no value starts inside a character (on a continuation byte,
// 10xxxxxx). Bytes under null slots are checked too: stricter than ValidateFull, so a failure
// is confirmed value by value (CheckStrings).
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

// A string array: the fast pass, then Arrow's own check (what ValidateFull runs, one call per
// non-null value) where it fails, or where there is no fast pass.
arrow::Status CheckStrings(const arrow::ArrayData& data) {
  const auto id = StorageType(*data.type).id();
  if (id == arrow::Type::STRING && SpannedBytesValid<int32_t>(data)) return arrow::Status::OK();
  if (id == arrow::Type::LARGE_STRING && SpannedBytesValid<int64_t>(data)) {
    return arrow::Status::OK();
  }
  const arrow::Status status = arrow::internal::ValidateUTF8(data);
  if (status.ok()) return status;
  return arrow::Status::Invalid("holds a string that is not valid UTF-8 (", status.message(), ")");
}

// The values under `data`. A part without strings gets Arrow's full validation (for decoded
// numbers that is a pass over the validity bitmap and the checks of the types with limits,
// such as a decimal's precision); strings get CheckStrings, which is cheaper than
// ValidateFull's one call per value.
arrow::Status CheckData(const arrow::ArrayData& data) {
  if (IsString(*data.type)) return CheckStrings(data);
  if (!HasStrings(*data.type)) {
    const arrow::Status status = arrow::internal::ValidateArrayFull(data);
    if (status.ok()) return status;
    return arrow::Status::Invalid("holds a value that its type ", data.type->ToString(),
                                  " does not allow (", status.message(), ")");
  }
  for (const auto& child : data.child_data) ARROW_RETURN_NOT_OK(CheckData(*child));
  if (data.dictionary != nullptr) ARROW_RETURN_NOT_OK(CheckData(*data.dictionary));
  return arrow::Status::OK();
}

}  // namespace

arrow::Status CheckValues(const arrow::RecordBatch& batch) {
  arrow::util::InitializeUTF8();  // once per process (it guards itself)
  for (int i = 0; i < batch.num_columns(); ++i) {
    const arrow::Status status = CheckData(*batch.column_data(i));
    if (!status.ok()) {
      return arrow::Status::Invalid("column '", batch.schema()->field(i)->name(), "' ",
                                    status.message(),
                                    "; the file's bytes are not what its schema says");
    }
  }
  return arrow::Status::OK();
}

}  // namespace stoker
