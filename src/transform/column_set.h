// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/array.h>
#include <arrow/type.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace stoker {

/// The columns between two transform ops, by name and in order, each with a value of T: its
/// type while a spec is compiled, its array while a batch is transformed.
template <typename T>
struct ColumnSet {
  std::vector<std::string> names;
  std::vector<T> values;

  /// The position of column `name`; -1 when there is none.
  int Find(const std::string& name) const {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return static_cast<int>(i);
    }
    return -1;
  }
  void Remove(int i) {
    names.erase(names.begin() + i);
    values.erase(values.begin() + i);
  }
  void Insert(int i, std::string name, T value) {
    names.insert(names.begin() + i, std::move(name));
    values.insert(values.begin() + i, std::move(value));
  }
};

using TypeColumns = ColumnSet<std::shared_ptr<arrow::DataType>>;
using ArrayColumns = ColumnSet<std::shared_ptr<arrow::Array>>;

}  // namespace stoker
