// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// ColumnSet: the columns between two ops, names and values kept side by side.
#include "transform/column_set.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stoker {
namespace {

TEST(ColumnSetTest, FindRemoveAndInsertKeepNamesAndValuesTogether) {
  ColumnSet<int> columns;
  columns.names = {"a", "b", "c"};
  columns.values = {1, 2, 3};
  EXPECT_EQ(columns.Find("b"), 1);
  EXPECT_EQ(columns.Find("z"), -1);
  columns.Remove(0);
  EXPECT_EQ(columns.names, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(columns.values, (std::vector<int>{2, 3}));
  columns.Insert(1, "x", 9);
  columns.Insert(3, "y", 8);
  EXPECT_EQ(columns.names, (std::vector<std::string>{"b", "x", "c", "y"}));
  EXPECT_EQ(columns.values, (std::vector<int>{2, 9, 3, 8}));
  EXPECT_EQ(columns.Find("y"), 3);
}

}  // namespace
}  // namespace stoker
