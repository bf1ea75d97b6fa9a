// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <string>
#include <string_view>

namespace stoker {

/// Appends `text` to `out` as a JSON string literal: quoted, with `"` and `\` escaped and
/// control characters written as \u00XX. Bytes >= 0x80 pass through (UTF-8 stays UTF-8).
void AppendJsonString(std::string_view text, std::string* out);

/// `text` as a JSON string literal (see AppendJsonString).
std::string JsonString(std::string_view text);

}  // namespace stoker
