// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// log1p: log(1 + x) in float32 (float64 stays float64) by PortableLog1p, nulls kept.
#include <arrow/api.h>
#include <arrow/util/bit_util.h>
#include <gtest/gtest.h>

#include <limits>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

TEST(TransformOpsTest, Log1p) {
  const auto batch = Batch({{"i", Json(arrow::int32(), "[0, 1, null, 3]")},
                            {"d", Json(arrow::float64(), "[0, 1, 3, null]")},
                            {"name", Json(arrow::utf8(), R"(["a", "b", "c", "d"])")}});
  const auto spec =
      Compile({Op(TransformKind::kLog1p, {"i"}), Op(TransformKind::kLog1p, {"d"})}, batch);
  const auto out = Transform(*spec, batch);
  // ln 2 and ln 4 correctly rounded, written out rather than asked of this platform's libm.
  const float ln2_f = 0x1.62e430p-1f;
  const double ln2 = 0x1.62e42fefa39efp-1;
  arrow::FloatBuilder floats;
  ASSERT_TRUE(floats.AppendValues({0.0f, ln2_f}).ok());
  ASSERT_TRUE(floats.AppendNull().ok());
  ASSERT_TRUE(floats.Append(2 * ln2_f).ok());
  ExpectColumn(*out, "i", floats.Finish().ValueOrDie());
  arrow::DoubleBuilder doubles;
  ASSERT_TRUE(doubles.AppendValues({0.0, ln2, 2 * ln2}).ok());
  ASSERT_TRUE(doubles.AppendNull().ok());
  ExpectColumn(*out, "d", doubles.Finish().ValueOrDie());
  EXPECT_EQ(spec->canonical(), R"([{"op":"log1p","column":"i"},{"op":"log1p","column":"d"}])");

  // A slice (an offset into its buffers) keeps its own nulls.
  const auto sliced = Transform(*spec, batch->Slice(1, 3));
  ExpectColumn(*sliced, "d",
               Json(arrow::float64(), "[0.6931471805599453, 1.3862943611198906, null]"));

  const auto error = CompileError(Op(TransformKind::kLog1p, {"name"}), batch);
  EXPECT_TRUE(error.IsTypeError());
  EXPECT_EQ(error.message(),
            "transform 0 (log1p): column 'name' has type string; log1p takes numbers");
}

// A null's slot holds 0 in the output whatever the input held under it, so equal batches are
// equal bytes (the disk cache stores them).
TEST(Log1pTest, ANullsSlotHoldsZeroWhateverTheInputHeldThere) {
  const auto values = Json(arrow::float64(), "[1, 7]");
  auto validity = arrow::AllocateEmptyBitmap(2).ValueOrDie();
  arrow::bit_util::SetBit(validity->mutable_data(), 0);
  const auto x = arrow::MakeArray(arrow::ArrayData::Make(
      arrow::float64(), 2, {std::move(validity), values->data()->buffers[1]}, 1));
  ASSERT_EQ(static_cast<const arrow::DoubleArray&>(*x).Value(1), 7.0);
  const auto batch = Batch({{"x", x}});
  const auto out = Transform(*Compile({Op(TransformKind::kLog1p, {"x"})}, batch), batch);
  const auto& y = static_cast<const arrow::DoubleArray&>(*out->column(0));
  EXPECT_EQ(y.Value(0), 0x1.62e42fefa39efp-1);
  EXPECT_TRUE(y.IsNull(1));
  EXPECT_EQ(y.Value(1), 0.0);
}

TEST(Log1pTest, Float32StaysFloat32AndMinusOneIsMinusInfinity) {
  const auto batch =
      Batch({{"f", Json(arrow::float32(), "[-1, 0]")}, {"u", Json(arrow::uint64(), "[0, null]")}});
  const auto spec =
      Compile({Op(TransformKind::kLog1p, {"f"}), Op(TransformKind::kLog1p, {"u"})}, batch);
  EXPECT_EQ(spec->output_schema()->ToString(), "f: float\nu: float");
  const auto out = Transform(*spec, batch);
  const auto& f = static_cast<const arrow::FloatArray&>(*out->column(0));
  EXPECT_EQ(f.Value(0), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(f.Value(1), 0.0f);
  ExpectColumn(*out, "u", Json(arrow::float32(), "[0, null]"));
}

}  // namespace
}  // namespace stoker
