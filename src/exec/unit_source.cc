// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/unit_source.h"

namespace stoker {

BatchLayout LayoutOf(const std::shared_ptr<const UnitSource>& source) {
  BatchLayout layout;
  layout.units = std::shared_ptr<const std::vector<Unit>>(source, &source->units);
  layout.plan_columns = source->plan_columns;
  layout.output_schema = source->output_schema;
  layout.batch_schema = source->batch_schema;
  {
    std::vector<std::shared_ptr<arrow::DataType>> group_types;
    for (const std::string& name : source->ragged) {
      const int c = source->output_schema->GetFieldIndex(name);
      if (c < 0) continue;
      const auto& type = source->output_schema->field(c)->type();
      if (type->num_fields() != 1) continue;
      const auto& value_type = type->field(0)->type();
      size_t g = 0;
      while (g < group_types.size() && !group_types[g]->Equals(*value_type)) ++g;
      if (g == group_types.size()) {
        group_types.push_back(value_type);
        layout.list_groups.emplace_back();
      }
      layout.list_groups[g].push_back(c);
    }
  }
  layout.pool = source->output_pool != nullptr ? source->output_pool : source->pool;
  return layout;
}

}  // namespace stoker
