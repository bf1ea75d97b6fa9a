// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/unit_source.h"

namespace stoker {

BatchLayout LayoutOf(const std::shared_ptr<const UnitSource>& source) {
  BatchLayout layout;
  layout.units = std::shared_ptr<const std::vector<Unit>>(source, &source->units);
  layout.plan_columns = source->plan_columns;
  layout.output_schema = source->output_schema;
  layout.batch_schema = source->batch_schema;
  layout.pool = source->output_pool != nullptr ? source->output_pool : source->pool;
  return layout;
}

}  // namespace stoker
