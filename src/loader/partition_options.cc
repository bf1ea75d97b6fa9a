// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "stoker/partition_options.h"

#include <arrow/type.h>

#include <set>

namespace stoker {

arrow::Status PartitionOptions::Validate(size_t num_sources) const {
  if (schema != nullptr) {
    std::set<std::string> names;
    for (const auto& field : schema->fields()) {
      if (field->name().empty() || !names.insert(field->name()).second) {
        return arrow::Status::Invalid("partitioning: the schema names '", field->name(),
                                      "' twice or is missing a name");
      }
    }
  }
  if (file_values.empty()) return arrow::Status::OK();
  if (schema == nullptr) {
    return arrow::Status::Invalid("partitioning: file values need the schema of their columns");
  }
  if (file_values.size() != num_sources) {
    return arrow::Status::Invalid("partitioning: file values are given for ", file_values.size(),
                                  " files but there are ", num_sources, " sources");
  }
  for (size_t i = 0; i < file_values.size(); ++i) {
    if (file_values[i].size() != static_cast<size_t>(schema->num_fields())) {
      return arrow::Status::Invalid("partitioning: source ", i, " has ", file_values[i].size(),
                                    " partition values where the schema has ", schema->num_fields(),
                                    " columns");
    }
  }
  return arrow::Status::OK();
}

}  // namespace stoker
