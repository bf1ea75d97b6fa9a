// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The array functions several ops share: a cast that keeps same-typed arrays, a compute call,
// an array over new values with another's nulls, and the id -> int64 mapping behind hash and
// vocabulary.
#include "transform/transform_kernels.h"

#include <arrow/api.h>
#include <arrow/compute/exec.h>
#include <gtest/gtest.h>

#include <string_view>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

class TransformKernelsTest : public ::testing::Test {
 protected:
  arrow::compute::ExecContext exec_{arrow::default_memory_pool()};
};

TEST_F(TransformKernelsTest, CastArrayKeepsASameTypedArrayAndIsSafeUnlessToldNot) {
  const auto x = Json(arrow::int64(), "[1, 300, null]");
  EXPECT_EQ(CastArray(x, arrow::int64(), &exec_).ValueOrDie(), x);
  EXPECT_TRUE(CastArray(x, arrow::float64(), &exec_)
                  .ValueOrDie()
                  ->Equals(*Json(arrow::float64(), "[1, 300, null]")));
  const auto overflow = CastArray(x, arrow::int8(), &exec_);
  EXPECT_TRUE(overflow.status().IsInvalid());
  // Unsafe, 300 wraps to 300 - 256.
  EXPECT_TRUE(CastArray(x, arrow::int8(), &exec_, /*safe=*/false)
                  .ValueOrDie()
                  ->Equals(*Json(arrow::int8(), "[1, 44, null]")));
}

TEST_F(TransformKernelsTest, CallArrayFunctionGivesAnArray) {
  const auto x = Json(arrow::int32(), "[1, null, 3]");
  const auto sum =
      CallArrayFunction("add", {x, arrow::MakeScalar(int32_t{10})}, nullptr, &exec_).ValueOrDie();
  EXPECT_TRUE(sum->Equals(*Json(arrow::int32(), "[11, null, 13]"))) << sum->ToString();
  EXPECT_FALSE(CallArrayFunction("no_such_function", {x}, nullptr, &exec_).ok());
}

TEST_F(TransformKernelsTest, WithValidityOfTakesTheNullsOfASlice) {
  const auto like = Json(arrow::int32(), "[1, null, 3, null, 5]")->Slice(1, 3);
  const auto values = arrow::Buffer::FromString(std::string(3 * sizeof(double), '\0'));
  auto out = WithValidityOf(*like, arrow::float64(), values, arrow::default_memory_pool());
  EXPECT_TRUE(out.ValueOrDie()->Equals(*Json(arrow::float64(), "[null, 0, null]")))
      << out.ValueOrDie()->ToString();
  // Without nulls, no validity buffer.
  const auto full = Json(arrow::int32(), "[1, 2, 3]");
  out = WithValidityOf(*full, arrow::float64(), values, arrow::default_memory_pool());
  EXPECT_EQ(out.ValueOrDie()->null_count(), 0);
  EXPECT_EQ(out.ValueOrDie()->data()->buffers[0], nullptr);
}

TEST_F(TransformKernelsTest, ZeroedInt64sIsZeroes) {
  const auto buffer = kernels_internal::ZeroedInt64s(5, arrow::default_memory_pool()).ValueOrDie();
  ASSERT_EQ(buffer->size(), 40);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(buffer->data_as<int64_t>()[i], 0) << i;
}

TEST_F(TransformKernelsTest, MapIdsMapsTextOfEveryWidthAndIntegersKeepingNulls) {
  const auto length = [](std::string_view s) { return static_cast<int64_t>(s.size()); };
  const auto negate = [](int64_t v) { return -v; };
  const auto text = R"(["ab", null, ""])";
  for (const auto& type :
       {arrow::utf8(), arrow::large_utf8(), arrow::binary(), arrow::large_binary()}) {
    const auto out = MapIds(Json(type, text), length, negate, &exec_).ValueOrDie();
    EXPECT_TRUE(out->Equals(*Json(arrow::int64(), "[2, null, 0]")))
        << type->ToString() << ": " << out->ToString();
  }
  const auto ints = MapIds(Json(arrow::int8(), "[-3, null, 4]"), length, negate, &exec_);
  EXPECT_TRUE(ints.ValueOrDie()->Equals(*Json(arrow::int64(), "[3, null, -4]")));
  // uint64 ids wrap to int64 rather than fail.
  const auto wrapped = MapIds(
      Json(arrow::uint64(), "[18446744073709551615]"), length, [](int64_t v) { return v; }, &exec_);
  EXPECT_TRUE(wrapped.ValueOrDie()->Equals(*Json(arrow::int64(), "[-1]")));
}

}  // namespace
}  // namespace stoker
