// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <span>

#include "stoker/transform_options.h"
#include "transform/ops/op.h"

namespace stoker {

/// Every transform op, in TransformKind order (the order error messages list them in).
std::span<const OpDescriptor* const> AllOps();

/// The descriptor of `kind`; nullptr for a value outside the enum.
const OpDescriptor* FindOp(TransformKind kind);

}  // namespace stoker
