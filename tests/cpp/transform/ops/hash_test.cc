// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// hash: the documented, stable hash of string or integer ids into [0, num_buckets).
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

// The hash as docs/transforms.md defines it, written again here so the test is independent.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

int64_t HashOfText(const std::string& s, uint64_t buckets) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return static_cast<int64_t>(Mix(h) % buckets);
}

TEST(TransformOpsTest, Hash) {
  const auto batch = Batch({{"s", Json(arrow::utf8(), R"(["a", null, "hello"])")},
                            {"i", Json(arrow::int32(), "[0, -1, 7]")}});
  auto text = Op(TransformKind::kHash, {"s"});
  text.num_buckets = 1000;
  auto integer = Op(TransformKind::kHash, {"i"});
  integer.num_buckets = 10;
  const auto spec = Compile({text, integer}, batch);
  const auto out = Transform(*spec, batch);
  const auto s = std::static_pointer_cast<arrow::Int64Array>(out->GetColumnByName("s"));
  EXPECT_EQ(s->Value(0), HashOfText("a", 1000));
  EXPECT_TRUE(s->IsNull(1));
  EXPECT_EQ(s->Value(2), HashOfText("hello", 1000));
  const auto i = std::static_pointer_cast<arrow::Int64Array>(out->GetColumnByName("i"));
  EXPECT_EQ(i->Value(0), static_cast<int64_t>(Mix(0) % 10));
  EXPECT_EQ(i->Value(1), static_cast<int64_t>(Mix(~0ULL) % 10));
  EXPECT_EQ(i->Value(2), static_cast<int64_t>(Mix(7) % 10));
  EXPECT_EQ(spec->canonical(), R"([{"op":"hash","column":"s","num_buckets":1000},)"
                               R"({"op":"hash","column":"i","num_buckets":10}])");

  text.num_buckets = 0;
  auto error = CompileError(text, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (hash): num_buckets must be >= 1, got 0");
  error = CompileError(text, Batch({{"s", Json(arrow::float32(), "[1]")}}));
  EXPECT_TRUE(error.IsTypeError());
  EXPECT_EQ(error.message(),
            "transform 0 (hash): column 's' has type float; hash takes integer or string ids");
}

TEST(HashTest, TextOfEitherOffsetWidthAndBinaryHashAlike) {
  const std::string json = R"(["a", "hello", ""])";
  const auto batch = Batch({{"s", Json(arrow::utf8(), json)},
                            {"ls", Json(arrow::large_utf8(), json)},
                            {"b", Json(arrow::binary(), json)},
                            {"lb", Json(arrow::large_binary(), json)}});
  std::vector<TransformOp> ops;
  for (const auto* column : {"s", "ls", "b", "lb"}) {
    ops.push_back(Op(TransformKind::kHash, {column}));
    ops.back().num_buckets = 101;
  }
  const auto out = Transform(*Compile(std::move(ops), batch), batch);
  arrow::Int64Builder expected;
  for (const auto* s : {"a", "hello", ""}) ASSERT_TRUE(expected.Append(HashOfText(s, 101)).ok());
  const auto buckets = expected.Finish().ValueOrDie();
  for (const auto* column : {"s", "ls", "b", "lb"}) ExpectColumn(*out, column, buckets);
}

// An integer hashes its int64 value: int8 -1 as -1, uint8 255 as 255, uint64 2^64 - 1 wrapped
// to -1.
TEST(HashTest, IntegersHashTheirInt64Value) {
  const auto batch = Batch({{"i8", Json(arrow::int8(), "[-1, 5]")},
                            {"u8", Json(arrow::uint8(), "[255, 5]")},
                            {"u64", Json(arrow::uint64(), "[18446744073709551615, 5]")},
                            {"one", Json(arrow::int64(), "[123, -9]")}});
  std::vector<TransformOp> ops;
  for (const auto* column : {"i8", "u8", "u64"}) {
    ops.push_back(Op(TransformKind::kHash, {column}));
    ops.back().num_buckets = 97;
  }
  ops.push_back(Op(TransformKind::kHash, {"one"}));
  ops.back().num_buckets = 1;
  const auto out = Transform(*Compile(std::move(ops), batch), batch);
  const auto bucket = [](uint64_t v) { return std::to_string(Mix(v) % 97); };
  const std::string of_minus_one = bucket(~0ULL);
  const std::string of_five = bucket(5);
  ExpectColumn(*out, "i8", Json(arrow::int64(), "[" + of_minus_one + ", " + of_five + "]"));
  ExpectColumn(*out, "u8", Json(arrow::int64(), "[" + bucket(255) + ", " + of_five + "]"));
  ExpectColumn(*out, "u64", Json(arrow::int64(), "[" + of_minus_one + ", " + of_five + "]"));
  ExpectColumn(*out, "one", Json(arrow::int64(), "[0, 0]"));
}

TEST(HashTest, ASliceKeepsItsOwnNulls) {
  const auto batch = Batch({{"s", Json(arrow::utf8(), R"(["x", null, "y", null])")}});
  auto op = Op(TransformKind::kHash, {"s"});
  op.num_buckets = 1000;
  const auto out = Transform(*Compile({op}, batch), batch->Slice(1, 3));
  ExpectColumn(*out, "s",
               Json(arrow::int64(), "[null, " + std::to_string(HashOfText("y", 1000)) + ", null]"));
}

}  // namespace
}  // namespace stoker
