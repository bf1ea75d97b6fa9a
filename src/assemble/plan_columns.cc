// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "assemble/plan_columns.h"

#include <arrow/builder.h>

#include "stoker/options.h"

namespace stoker {

arrow::Result<std::shared_ptr<arrow::Schema>> PlanColumns::Extend(
    const arrow::Schema& schema) const {
  arrow::FieldVector fields = schema.fields();
  if (valid_mask) fields.push_back(arrow::field(kValidColumn, arrow::boolean(), false));
  if (row_origin) {
    fields.push_back(arrow::field(kFileIndexColumn, arrow::int32(), false));
    fields.push_back(arrow::field(kRowInFileColumn, arrow::int64(), false));
  }
  for (size_t i = schema.fields().size(); i < fields.size(); ++i) {
    if (schema.GetFieldIndex(fields[i]->name()) >= 0) {
      return arrow::Status::Invalid(
          "the dataset (after transforms) has a column named '", fields[i]->name(),
          "', which pad_to_equal_steps / with_row_origin add: rename it with a rename transform");
    }
  }
  return arrow::schema(std::move(fields));
}

arrow::Result<arrow::ArrayVector> PlanColumns::Make(const std::vector<int64_t>& offsets,
                                                    int64_t real,
                                                    const std::vector<int32_t>& row_units,
                                                    const std::vector<int64_t>& row_in_unit,
                                                    const std::vector<Unit>& units,
                                                    arrow::MemoryPool* pool) const {
  const auto n = static_cast<int64_t>(row_units.size());
  arrow::ArrayVector out;
  if (valid_mask) {
    arrow::BooleanBuilder valid(pool);
    ARROW_RETURN_NOT_OK(valid.Reserve(n));
    for (int64_t i = 0; i < n; ++i) valid.UnsafeAppend(offsets[i] < real);
    ARROW_ASSIGN_OR_RAISE(auto array, valid.Finish());
    out.push_back(std::move(array));
  }
  if (row_origin) {
    arrow::Int32Builder file(pool);
    arrow::Int64Builder row(pool);
    ARROW_RETURN_NOT_OK(file.Reserve(n));
    ARROW_RETURN_NOT_OK(row.Reserve(n));
    for (int64_t i = 0; i < n; ++i) {
      const Unit& unit = units[row_units[i]];
      file.UnsafeAppend(unit.file);
      row.UnsafeAppend(unit.first_row_in_file + row_in_unit[i]);
    }
    ARROW_ASSIGN_OR_RAISE(auto files, file.Finish());
    ARROW_ASSIGN_OR_RAISE(auto rows, row.Finish());
    out.push_back(std::move(files));
    out.push_back(std::move(rows));
  }
  return out;
}

}  // namespace stoker
