// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// stack: scalar columns -> one fixed_size_list<dtype>[n] column, row-major, appended last.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

std::string Canonical(std::vector<TransformOp> ops,
                      const std::shared_ptr<arrow::RecordBatch>& batch) {
  return Compile(std::move(ops), batch)->canonical();
}

TEST(TransformOpsTest, Stack) {
  const auto batch = Batch({{"x", Json(arrow::int32(), "[1, 2]")},
                            {"keep", Json(arrow::utf8(), R"(["a", "b"])")},
                            {"y", Json(arrow::float64(), "[3.5, null]")}});
  auto op = Op(TransformKind::kStack, {"x", "y"});
  op.output = "xy";
  const auto spec = Compile({op}, batch);
  const auto out = Transform(*spec, batch);
  ASSERT_EQ(out->schema()->field_names(), (std::vector<std::string>{"keep", "xy"}));
  ExpectColumn(*out, "xy",
               Json(arrow::fixed_size_list(arrow::float32(), 2), "[[1, 3.5], [2, null]]"));
  EXPECT_EQ(spec->canonical(),
            R"([{"op":"stack","columns":["x","y"],"output":"xy","dtype":"float32"}])");
  op.dtype = "float64";
  EXPECT_EQ(Canonical({op}, batch),
            R"([{"op":"stack","columns":["x","y"],"output":"xy","dtype":"float64"}])");

  op.output = "keep";
  auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (stack): output 'keep' already exists");
  op.columns = {"x", "keep"};
  error = CompileError(op, batch);
  EXPECT_TRUE(error.IsTypeError());
  EXPECT_EQ(error.message(),
            "transform 0 (stack): column 'keep' has type string; stack takes scalar numbers or "
            "bool");
  op.columns = {"x", "x"};
  EXPECT_EQ(CompileError(op, batch).message(), "transform 0 (stack): lists a column twice");
}

TEST(StackTest, BoolAndIntegersInAnIntegerDtypeFromASlice) {
  const auto batch = Batch({{"b", Json(arrow::boolean(), "[true, false, true]")},
                            {"i", Json(arrow::int8(), "[1, null, 3]")},
                            {"j", Json(arrow::int16(), "[4, 5, 6]")}});
  auto op = Op(TransformKind::kStack, {"b", "i", "j"});
  op.output = "bij";
  op.dtype = "int8";
  const auto spec = Compile({op}, batch);
  const auto type = arrow::fixed_size_list(arrow::int8(), 3);
  ExpectColumn(*Transform(*spec, batch), "bij", Json(type, "[[1, 1, 4], [0, null, 5], [1, 3, 6]]"));
  // A slice: "i" keeps its type, so its buffers are read at the slice's offset.
  ExpectColumn(*Transform(*spec, batch->Slice(1)), "bij", Json(type, "[[0, null, 5], [1, 3, 6]]"));
}

// The inputs are consumed before the output is added, so the output may take one's name.
TEST(StackTest, TheOutputMayTakeAnInputsName) {
  const auto batch =
      Batch({{"x", Json(arrow::float32(), "[1]")}, {"y", Json(arrow::float32(), "[2]")}});
  auto op = Op(TransformKind::kStack, {"x", "y"});
  op.output = "x";
  const auto out = Transform(*Compile({op}, batch), batch);
  ASSERT_EQ(out->schema()->field_names(), (std::vector<std::string>{"x"}));
  ExpectColumn(*out, "x", Json(arrow::fixed_size_list(arrow::float32(), 2), "[[1, 2]]"));
}

TEST(StackTest, NoOutputNameOrAnUnknownDtypeIsAnError) {
  const auto batch = Batch({{"x", Json(arrow::int32(), "[1]")}});
  auto op = Op(TransformKind::kStack, {"x"});
  auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (stack): needs an output column name");
  op.output = "v";
  op.dtype = "utf8";
  error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(),
            "transform 0 (stack): dtype 'utf8' is not one of bool, int8, int16, int32, int64, "
            "uint8, uint16, uint32, uint64, float16, float32, float64");
}

TEST(StackTest, ABoolDtypeIsRefusedAtCompile) {
  // Rows are interleaved a value's bytes at a time: a bool output (bit-packed) would be an
  // invalid array, so the spec is refused before any batch.
  const auto batch = Batch({{"x", Json(arrow::int32(), "[1]")}});
  auto op = Op(TransformKind::kStack, {"x"});
  op.output = "v";
  op.dtype = "bool";
  const auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(),
            "transform 0 (stack): dtype 'bool' is not a fixed-width number type: stack takes "
            "int8 to int64, uint8 to uint64 and float16 to float64");
}

}  // namespace
}  // namespace stoker
