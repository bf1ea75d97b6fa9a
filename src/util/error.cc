// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "stoker/error.h"

#include <cstring>

namespace stoker {

namespace {
constexpr char kNotFoundTypeId[] = "stoker::NotFoundDetail";
}  // namespace

const char* NotFoundDetail::type_id() const { return kNotFoundTypeId; }

bool IsNotFound(const arrow::Status& status) {
  const auto& detail = status.detail();
  return detail != nullptr && std::strcmp(detail->type_id(), kNotFoundTypeId) == 0;
}

arrow::Status WithContext(const arrow::Status& status, const std::string& context) {
  if (status.ok()) return status;
  return arrow::Status(status.code(), context + ": " + status.message(), status.detail());
}

}  // namespace stoker
