// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "transform/canonical_writer.h"

#include <cmath>
#include <cstdio>
#include <type_traits>

#include "util/json.h"

namespace stoker {

void CanonicalWriter::Begin(const char* op) {
  out_ += std::string(out_.empty() ? "[" : ",") + "{\"op\":\"" + op + "\"";
}

void CanonicalWriter::End() { out_ += "}"; }

void CanonicalWriter::Key(const char* key) { out_ += std::string(",\"") + key + "\":"; }

void CanonicalWriter::String(const std::string& s) { AppendJsonString(s, &out_); }

void CanonicalWriter::Number(double v) {
  if (std::isinf(v)) {
    out_ += v > 0 ? "\"inf\"" : "\"-inf\"";
    return;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  out_ += buf;
}

void CanonicalWriter::Field(const char* key, const std::string& value) {
  Key(key);
  String(value);
}

void CanonicalWriter::Field(const char* key, double value) {
  Key(key);
  Number(value);
}

template <typename T>
void CanonicalWriter::List(const char* key, const std::vector<T>& values) {
  Key(key);
  out_ += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out_ += ',';
    if constexpr (std::is_same_v<T, double>) {
      Number(values[i]);
    } else {
      String(values[i]);
    }
  }
  out_ += ']';
}

void CanonicalWriter::Field(const char* key, const std::vector<std::string>& values) {
  List(key, values);
}

void CanonicalWriter::Field(const char* key, const std::vector<double>& values) {
  List(key, values);
}

std::string CanonicalWriter::Finish() const { return out_.empty() ? "[]" : out_ + "]"; }

}  // namespace stoker
