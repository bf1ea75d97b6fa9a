// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Implemented in src/util/error.cc.
#pragma once

#include <arrow/status.h>

#include <exception>
#include <memory>
#include <string>
#include <utility>

namespace stoker {

/// Marks a Status whose cause is a path that does not exist, so bindings can raise
/// FileNotFoundError rather than a generic OSError.
class NotFoundDetail : public arrow::StatusDetail {
 public:
  const char* type_id() const override;
  std::string ToString() const override { return "path not found"; }
};

/// An IOError carrying NotFoundDetail; the message should name the path.
template <typename... Args>
arrow::Status NotFound(Args&&... args) {
  return arrow::Status::FromDetailAndArgs(
      arrow::StatusCode::IOError, std::make_shared<NotFoundDetail>(), std::forward<Args>(args)...);
}

/// True when the status was made by NotFound().
bool IsNotFound(const arrow::Status& status);

/// Prefixes a non-OK status's message with context (a file, a column), keeping its code.
arrow::Status WithContext(const arrow::Status& status, const std::string& context);

/// Runs `body` (returning Status or Result), turning any C++ exception that escapes it (a
/// library's, or bad_alloc from a corrupt length) into an IOError, so none crosses a module
/// boundary.
template <typename Body>
auto CatchAll(Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::exception& e) {
    return arrow::Status::IOError(e.what());
  }
}

}  // namespace stoker
