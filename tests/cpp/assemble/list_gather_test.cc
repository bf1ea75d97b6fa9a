// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "assemble/list_gather.h"

#include <arrow/api.h>
#include <arrow/array/concatenate.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace stoker {
namespace {

// `rows` lists of int32 (or of pairs of them) with lengths 0..5, every 7th null when `nulls`,
// values counting up from `first`.
std::shared_ptr<arrow::Array> Lists(int64_t rows, int32_t first, bool nulls,
                                    const std::shared_ptr<arrow::DataType>& type) {
  const bool pairs = type->field(0)->type()->id() == arrow::Type::FIXED_SIZE_LIST;
  std::string json = "[";
  int32_t next = first;
  for (int64_t i = 0; i < rows; ++i) {
    json += i == 0 ? "" : ",";
    if (nulls && i % 7 == 3) {
      json += "null";
      continue;
    }
    json += "[";
    for (int64_t j = 0; j < (i * 5 + 3) % 6; ++j) {
      json += j == 0 ? "" : ",";
      if (pairs) {
        json += "[" + std::to_string(next) + "," + std::to_string(next + 1) + "]";
        next += 2;
      } else {
        json += std::to_string(next++);
      }
    }
    json += "]";
  }
  return arrow::json::ArrayFromJSONString(type, json + "]").ValueOrDie();
}

// What Arrow's take gives for the same rows: the expected batch column.
std::shared_ptr<arrow::Array> Taken(const std::vector<std::shared_ptr<arrow::Array>>& units,
                                    const std::vector<uint32_t>& unit,
                                    const std::vector<int64_t>& row) {
  arrow::ArrayVector pieces;
  for (size_t i = 0; i < unit.size(); ++i) pieces.push_back(units[unit[i]]->Slice(row[i], 1));
  auto joined = arrow::Concatenate(pieces).ValueOrDie();
  return joined;
}

struct Case {
  std::vector<std::shared_ptr<arrow::Array>> units;
  std::vector<uint32_t> unit;
  std::vector<int64_t> row;
  std::vector<const arrow::ArrayData*> arrays() const {
    std::vector<const arrow::ArrayData*> out;
    for (const auto& u : units) out.push_back(u->data().get());
    return out;
  }
};

// Three units (the second one a slice, so offsets and child offsets are not 0); rows drawn
// in a scrambled order with a run of adjacent rows.
Case MakeCase(const std::shared_ptr<arrow::DataType>& type, bool nulls) {
  Case c;
  c.units = {Lists(50, 0, nulls, type), Lists(80, 1000, nulls, type)->Slice(13, 60),
             Lists(40, 5000, nulls, type)};
  for (int64_t i = 0; i < 200; ++i) {
    const auto u = static_cast<uint32_t>((i * 7) % 3);
    c.unit.push_back(u);
    c.row.push_back((i * 31 + 5) % c.units[u]->length());
  }
  for (int64_t r = 10; r < 30; ++r) {  // a run: adjacent rows of one unit
    c.unit.push_back(1);
    c.row.push_back(r);
  }
  return c;
}

TEST(ListGatherTest, GivesWhatTakeGivesForEveryListType) {
  for (const auto& type : {arrow::list(arrow::int32()), arrow::large_list(arrow::int32()),
                           arrow::list(arrow::fixed_size_list(arrow::int32(), 2))}) {
    for (bool nulls : {false, true}) {
      const Case c = MakeCase(type, nulls);
      for (const auto* a : c.arrays()) ASSERT_TRUE(IsGatherableList(*a));
      auto gathered =
          GatherLists(c.unit, c.row, c.arrays(), arrow::default_memory_pool()).ValueOrDie();
      auto array = arrow::MakeArray(gathered);
      ASSERT_TRUE(array->ValidateFull().ok()) << type->ToString();
      const auto expected = Taken(c.units, c.unit, c.row);
      EXPECT_TRUE(array->Equals(*expected)) << type->ToString() << " nulls=" << nulls << "\n"
                                            << array->ToString();
      EXPECT_EQ(array->null_count(), expected->null_count());
      // Offsets start at 0 and a null list holds no values.
      if (type->id() == arrow::Type::LIST) {
        const auto& lists = static_cast<const arrow::ListArray&>(*array);
        EXPECT_EQ(lists.value_offset(0), 0);
        for (int64_t i = 0; i < lists.length(); ++i) {
          if (lists.IsNull(i)) EXPECT_EQ(lists.value_length(i), 0);
        }
      }
    }
  }
}

TEST(ListGatherTest, AGroupLaysItsColumnsOutOneAfterAnotherInOneBuffer) {
  const Case a = MakeCase(arrow::list(arrow::int32()), false);
  Case b = MakeCase(arrow::list(arrow::int32()), true);
  b.units = {Lists(50, 9000, true, arrow::list(arrow::int32())),
             Lists(80, 7000, false, arrow::list(arrow::int32()))->Slice(13, 60),
             Lists(40, 8000, true, arrow::list(arrow::int32()))};
  auto gathered =
      GatherListGroup(a.unit, a.row, {a.arrays(), b.arrays()}, arrow::default_memory_pool())
          .ValueOrDie();
  ASSERT_EQ(gathered.size(), 2u);
  const Case* cases[] = {&a, &b};
  for (size_t k = 0; k < 2; ++k) {
    auto array = arrow::MakeArray(gathered[k]);
    ASSERT_TRUE(array->ValidateFull().ok());
    EXPECT_TRUE(array->Equals(*Taken(cases[k]->units, a.unit, a.row))) << k;
  }
  const auto first_array = arrow::MakeArray(gathered[0]);
  const auto second_array = arrow::MakeArray(gathered[1]);
  const auto& first = static_cast<const arrow::ListArray&>(*first_array);
  const auto& second = static_cast<const arrow::ListArray&>(*second_array);
  const auto* first_values = gathered[0]->child_data[0]->buffers[1].get();
  const auto* second_values = gathered[1]->child_data[0]->buffers[1].get();
  // Key-major: the second column's values start where the first's end, in one allocation.
  EXPECT_EQ(first_values->data() + first.value_offset(first.length()) * 4, second_values->data());
  ASSERT_NE(first_values->parent(), nullptr);
  EXPECT_EQ(first_values->parent(), second_values->parent());
  EXPECT_EQ(first_values->parent()->size(),
            (first.value_offset(first.length()) + second.value_offset(second.length())) * 4);
}

TEST(ListGatherTest, UnitsOfEmptyAndNullListsOnly) {
  // No values at all: such a child may have no values buffer.
  auto child = arrow::ArrayData::Make(arrow::int32(), 0, {nullptr, nullptr}, 0);
  auto offsets = arrow::Buffer::FromVector(std::vector<int32_t>{0, 0, 0});
  auto empty =
      arrow::ArrayData::Make(arrow::list(arrow::int32()), 2, {nullptr, offsets}, {child}, 0);
  ASSERT_TRUE(IsGatherableList(*empty));
  const std::vector<uint32_t> units{0, 0, 0};
  const std::vector<int64_t> rows{1, 0, 1};
  auto gathered =
      GatherLists(units, rows, {empty.get()}, arrow::default_memory_pool()).ValueOrDie();
  auto array = arrow::MakeArray(gathered);
  ASSERT_TRUE(array->ValidateFull().ok());
  EXPECT_EQ(array->length(), 3);
  EXPECT_EQ(static_cast<const arrow::ListArray&>(*array).value_offset(3), 0);
}

TEST(ListGatherTest, TakesOnlyListsOfNumbersWithoutNullValues) {
  auto strings =
      arrow::json::ArrayFromJSONString(arrow::list(arrow::utf8()), R"([["a"], []])").ValueOrDie();
  EXPECT_FALSE(IsGatherableList(*strings->data()));
  auto with_null =
      arrow::json::ArrayFromJSONString(arrow::list(arrow::int64()), R"([[1, null], [2]])")
          .ValueOrDie();
  EXPECT_FALSE(IsGatherableList(*with_null->data()));
  auto nested =
      arrow::json::ArrayFromJSONString(arrow::list(arrow::list(arrow::int64())), R"([[[1]], []])")
          .ValueOrDie();
  EXPECT_FALSE(IsGatherableList(*nested->data()));
  auto plain = arrow::json::ArrayFromJSONString(arrow::int64(), "[1, 2]").ValueOrDie();
  EXPECT_FALSE(IsGatherableList(*plain->data()));
  auto ok =
      arrow::json::ArrayFromJSONString(arrow::list(arrow::float32()), R"([[1.5, 2], null, []])")
          .ValueOrDie();
  EXPECT_TRUE(IsGatherableList(*ok->data()));
}

}  // namespace
}  // namespace stoker
