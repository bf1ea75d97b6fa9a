// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// CanonicalWriter: JSON with fixed key order and round-trip numbers; and golden canonical forms
// and digests of specs using every op, which catch any change to the canonical forms (they key
// disk caches and Flight config digests).
#include "transform/canonical_writer.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "common/fixtures.h"
#include "transform/transform_test_util.h"

namespace stoker {
namespace {

// A spec using every op: its canonical form and digest are golden (disk caches and Flight
// config digests key on them; a change here invalidates every user's cache).
TEST(TransformOpsTest, GoldenCanonicalFormAndDigest) {
  testing::TempDir dir;
  const auto path = (dir.path() / "vocab.txt").string();
  std::ofstream(path) << "DE\nFR\nUS\n";
  const auto batch = Batch({{"a", Json(arrow::int64(), "[1]")},
                            {"b", Json(arrow::float64(), "[0.1]")},
                            {"c", Json(arrow::utf8(), R"(["x"])")},
                            {"d", Json(arrow::utf8(), R"(["DE"])")},
                            {"l", Json(arrow::list(arrow::float32()), "[[1]]")},
                            {"m", Json(arrow::list(arrow::int32()), "[[1]]")},
                            {"e", Json(arrow::int32(), "[1]")}});
  std::vector<TransformOp> ops;
  ops.push_back(Op(TransformKind::kFillNull, {"b"}));
  ops.back().number = 0.1;
  ops.push_back(Op(TransformKind::kFillNull, {"c"}));
  ops.back().is_text = true;
  ops.back().text = "quote\" slash\\ tab\t \xC3\xA9";
  ops.push_back(Op(TransformKind::kClip, {"b"}));
  ops.back().high = 1e300;
  ops.push_back(Op(TransformKind::kLog1p, {"b"}));
  ops.push_back(Op(TransformKind::kStandardize, {"b"}));
  ops.back().mean = -2.5;
  ops.back().std = 1.0 / 3;
  ops.push_back(Op(TransformKind::kBucketize, {"e"}));
  ops.back().boundaries = {-1, 0.25, 7};
  ops.push_back(Op(TransformKind::kHash, {"c"}));
  ops.back().num_buckets = 1000003;
  ops.push_back(Op(TransformKind::kVocabulary, {"d"}));
  ops.back().path = path;
  ops.back().default_id = 3;
  ops.push_back(Op(TransformKind::kCast, {"a"}));
  ops.back().dtype = "float64";
  ops.push_back(Op(TransformKind::kStack, {"a", "b"}));
  ops.back().output = "dense";
  ops.push_back(Op(TransformKind::kRename, {"dense"}));
  ops.back().output = "features";
  ops.push_back(Op(TransformKind::kPad, {"l"}));
  ops.back().length = 4;
  ops.back().number = -1;
  ops.push_back(Op(TransformKind::kRagged, {"m"}));
  ops.push_back(Op(TransformKind::kDrop, {"l_length", "e"}));
  const auto spec = Compile(std::move(ops), batch);
  EXPECT_EQ(spec->canonical(),
            R"([{"op":"fill_null","column":"b","value":0.10000000000000001},)"
            R"({"op":"fill_null","column":"c","value":"quote\" slash\\ tab\u0009 )"
            "\xC3\xA9"
            R"("},{"op":"clip","column":"b","min":"-inf","max":1.0000000000000001e+300},)"
            R"({"op":"log1p","column":"b"},)"
            R"({"op":"standardize","column":"b","mean":-2.5,"std":0.33333333333333331},)"
            R"({"op":"bucketize","column":"e","boundaries":[-1,0.25,7]},)"
            R"({"op":"hash","column":"c","num_buckets":1000003},)"
            R"({"op":"vocabulary","column":"d","vocabulary_digest":)"
            R"("ff1640ba2003971ae7ac652e74ff3ec0","default":3},)"
            R"({"op":"cast","column":"a","dtype":"float64"},)"
            R"({"op":"stack","columns":["a","b"],"output":"dense","dtype":"float32"},)"
            R"({"op":"rename","column":"dense","to":"features"},)"
            R"({"op":"pad","column":"l","length":4,"value":-1},)"
            R"({"op":"ragged","column":"m"},)"
            R"({"op":"drop","columns":["l_length","e"]}])");
  EXPECT_EQ(spec->digest(), "f1b2c8237f0749bc9add89affe6bed34");
}

// The random ops' canonical forms, golden like the spec above (they key disk caches too).
TEST(DrawOpsTest, GoldenCanonicalFormAndDigest) {
  const auto batch = Batch(
      {{"id", Json(arrow::int64(), "[1]")}, {"l", Json(arrow::list(arrow::float32()), "[[1]]")}});
  std::vector<TransformOp> ops;
  ops.push_back(Op(TransformKind::kBernoulliMask, {"m"}));
  ops.back().p = 0.15;
  ops.back().dtype = "int8";
  ops.push_back(Op(TransformKind::kUniform, {"u"}));
  ops.back().low = 0;
  ops.back().high = 1;
  ops.back().dtype = "float64";
  ops.push_back(Op(TransformKind::kRandint, {"neg"}));
  ops.back().low = 0;
  ops.back().high = 1000000;
  ops.back().size = 5;
  ops.back().key = "id";
  ops.push_back(Op(TransformKind::kDropout, {"l"}));
  ops.back().p = 0.1;
  const auto spec = Compile(std::move(ops), batch);
  EXPECT_EQ(spec->canonical(),
            R"([{"op":"bernoulli_mask","column":"m","p":0.14999999999999999,"dtype":"int8",)"
            R"("key":""},{"op":"uniform","column":"u","low":0,"high":1,"dtype":"float64",)"
            R"("key":""},{"op":"randint","column":"neg","low":0,"high":1000000,"size":5,)"
            R"("key":"id"},{"op":"dropout","column":"l","p":0.10000000000000001,"key":""}])");
  EXPECT_EQ(spec->digest(), "ea959e87f6b36933cc7563c6114e2887");
}

TEST(CanonicalWriterTest, NothingWrittenIsAnEmptyList) {
  const CanonicalWriter writer;
  EXPECT_EQ(writer.Finish(), "[]");
}

TEST(CanonicalWriterTest, OpsAndKeysInTheOrderWritten) {
  CanonicalWriter w;
  w.Begin("a");
  w.Field("s", std::string("say \"hi\"\n"));
  w.Field("n", 2.0);
  w.End();
  w.Begin("b");
  w.Field("names", std::vector<std::string>{"p", "q"});
  w.Field("numbers", std::vector<double>{0.5, -std::numeric_limits<double>::infinity()});
  w.Field("none", std::vector<double>{});
  w.End();
  EXPECT_EQ(w.Finish(), R"([{"op":"a","s":"say \"hi\"\u000a","n":2},)"
                        R"({"op":"b","names":["p","q"],"numbers":[0.5,"-inf"],"none":[]}])");
}

// 17 significant digits read back as the same double; infinities are strings.
TEST(CanonicalWriterTest, NumbersRoundTrip) {
  const double values[] = {0.1, 1.0 / 3, -2.5e-300, 1e300, 123456789012345678.0, -0.0};
  for (const double v : values) {
    CanonicalWriter w;
    w.Begin("x");
    w.Field("v", v);
    w.End();
    const std::string text = w.Finish();
    const std::string prefix = R"([{"op":"x","v":)";
    ASSERT_EQ(text.rfind(prefix, 0), 0u) << text;
    const std::string number = text.substr(prefix.size(), text.size() - prefix.size() - 2);
    const double back = std::strtod(number.c_str(), nullptr);
    EXPECT_EQ(back, v) << number;
    EXPECT_EQ(std::signbit(back), std::signbit(v)) << number;
  }
  CanonicalWriter w;
  w.Begin("x");
  w.Field("hi", std::numeric_limits<double>::infinity());
  w.Field("third", 1.0 / 3);
  w.End();
  EXPECT_EQ(w.Finish(), R"([{"op":"x","hi":"inf","third":0.33333333333333331}])");
}

}  // namespace
}  // namespace stoker
