// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "assemble/column_types.h"

#include <arrow/type_traits.h>

namespace stoker {

namespace {

bool IsTensorNumber(const arrow::DataType& type) {
  return arrow::is_integer(type.id()) || arrow::is_floating(type.id());
}

}  // namespace

arrow::Result<FixedWidthLayout> GetFixedWidthLayout(const arrow::DataType& type) {
  if (IsTensorNumber(type)) {
    FixedWidthLayout layout;
    layout.row_bytes = type.byte_width();
    layout.value_type = type.GetSharedPtr();
    return layout;
  }
  if (type.id() == arrow::Type::FIXED_SIZE_LIST) {
    const auto& list = static_cast<const arrow::FixedSizeListType&>(type);
    ARROW_ASSIGN_OR_RAISE(auto inner, GetFixedWidthLayout(*list.value_type()));
    inner.row_bytes *= list.list_size();
    inner.values_per_row *= list.list_size();
    return inner;
  }
  return arrow::Status::TypeError("type ", type.ToString(), " is not fixed-width numeric");
}

arrow::Status CheckTensorType(const arrow::Field& field) {
  const auto& type = *field.type();
  if (type.id() == arrow::Type::BOOL) return arrow::Status::OK();
  if (GetFixedWidthLayout(type).ok()) return arrow::Status::OK();
  return arrow::Status::TypeError(
      "column '", field.name(), "' has type ", type.ToString(),
      ", which numpy/torch output cannot hold (they take integers, floats, bool and "
      "fixed-size lists of numbers); read it with output=\"arrow\", or leave it out of "
      "columns");
}

FixedWidthValues GetFixedWidthValues(const arrow::ArrayData& data) {
  FixedWidthValues values;
  const arrow::ArrayData* level = &data;
  int64_t index = level->offset;
  while (level->type->id() == arrow::Type::FIXED_SIZE_LIST) {
    const auto size = static_cast<const arrow::FixedSizeListType&>(*level->type).list_size();
    values.inner_dims.push_back(size);
    level = level->child_data[0].get();
    index = level->offset + index * size;
  }
  values.buffer = level->buffers[1];
  values.first = values.buffer->data() + index * level->type->byte_width();
  return values;
}

bool HasNulls(const arrow::ArrayData& data) {
  if (data.GetNullCount() > 0) return true;
  for (const auto& child : data.child_data) {
    if (HasNulls(*child)) return true;
  }
  return false;
}

}  // namespace stoker
