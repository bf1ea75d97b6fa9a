// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Header only.
#pragma once

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "stoker/fields.h"
#include "util/json.h"

namespace stoker {

/// Appends `value` to `out` as JSON: a struct with fields (stoker/fields.h) an object keyed by
/// their names in their order, a vector an array, an empty optional null, numbers, bools and
/// strings as themselves. How a C++ result struct crosses a wire in the shape Python's
/// ToPython gives it (a server's `stats` action).
template <typename T>
void AppendJson(const T& value, std::string* out) {
  if constexpr (HasFields<T>) {
    out->push_back('{');
    bool first = true;
    std::apply(
        [&](const auto&... field) {
          ((out->append(first ? "" : ","), first = false, AppendJsonString(field.name, out),
            out->push_back(':'), AppendJson(value.*field.member, out)),
           ...);
        },
        FieldsOf(value));
    out->push_back('}');
  } else if constexpr (std::is_same_v<T, bool>) {
    out->append(value ? "true" : "false");
  } else if constexpr (std::is_integral_v<T>) {
    out->append(std::to_string(value));
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(value)) {
      out->append("null");
      return;
    }
    char text[32];
    std::snprintf(text, sizeof(text), "%.17g", static_cast<double>(value));
    out->append(text);
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    AppendJsonString(value, out);
  } else {
    // A vector or an optional.
    if constexpr (requires { value.has_value(); }) {
      if (!value.has_value()) {
        out->append("null");
      } else {
        AppendJson(*value, out);
      }
    } else {
      out->push_back('[');
      bool first = true;
      for (const auto& element : value) {
        if (!first) out->push_back(',');
        first = false;
        AppendJson(element, out);
      }
      out->push_back(']');
    }
  }
}

/// `value` as JSON (see AppendJson).
template <typename T>
std::string ToJson(const T& value) {
  std::string out;
  AppendJson(value, &out);
  return out;
}

}  // namespace stoker
