// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <string>
#include <vector>

namespace stoker {

/// Writes a transform spec's canonical form: a JSON list of one object per op, keys in the
/// order the op writes them, numbers in round-trip precision (17 significant digits, infinities
/// as "inf"/"-inf"). The form keys disk caches and Flight config digests: a change to what it
/// writes for an existing spec invalidates them (tests/cpp/transform/canonical_writer_test.cc has a
/// golden).
class CanonicalWriter {
 public:
  /// Opens the object of an op named `op` ({"op":"<op>").
  void Begin(const char* op);
  /// Closes the op's object.
  void End();
  /// Writes a key of the current op and its value.
  void Field(const char* key, const std::string& value);
  void Field(const char* key, double value);
  void Field(const char* key, const std::vector<std::string>& values);
  void Field(const char* key, const std::vector<double>& values);
  /// The whole list ("[]" when no op was written).
  std::string Finish() const;

 private:
  void Key(const char* key);
  void String(const std::string& s);
  void Number(double v);
  template <typename T>
  void List(const char* key, const std::vector<T>& values);

  std::string out_;
};

}  // namespace stoker
