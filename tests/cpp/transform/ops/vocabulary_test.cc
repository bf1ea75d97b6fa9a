// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// vocabulary: an id's line number in a vocabulary file, unknown ids -> default; the file is
// named in the canonical form by the digest of its bytes.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "common/fixtures.h"
#include "stoker/error.h"
#include "transform/transform_test_util.h"
#include "util/digest.h"

namespace stoker {
namespace {

TEST(TransformOpsTest, Vocabulary) {
  testing::TempDir dir;
  const auto path = (dir.path() / "vocab.txt").string();
  std::ofstream(path) << "b\na\r\nc\n";
  const auto batch = Batch({{"s", Json(arrow::utf8(), R"(["a", "b", "z", null, "c"])")}});
  auto op = Op(TransformKind::kVocabulary, {"s"});
  op.path = path;
  op.default_id = -1;
  const auto spec = Compile({op}, batch);
  ExpectColumn(*Transform(*spec, batch), "s", Json(arrow::int64(), "[1, 0, -1, null, 2]"));
  // The file is named by the digest of its bytes: moving it keeps the canonical form.
  Digest bytes;
  bytes.Add(std::string("b\na\r\nc\n"));
  EXPECT_EQ(spec->canonical(), R"([{"op":"vocabulary","column":"s","vocabulary_digest":")" +
                                   bytes.Hex() + R"(","default":-1}])");

  const auto ints = Batch({{"i", Json(arrow::int64(), "[7, 8]")}});
  op.columns = {"i"};
  auto error = CompileError(op, ints);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (vocabulary): vocabulary '" + path +
                                 "' line 1 ('b') is not an integer, and the column holds integers");
  op.path = "/no/such/vocab.txt";
  error = CompileError(op, ints);
  EXPECT_TRUE(IsNotFound(error));
  EXPECT_EQ(error.message(),
            "transform 0 (vocabulary): vocabulary file '/no/such/vocab.txt' cannot be opened");
}

TEST(VocabularyTest, IntegerIdsAndALastLineWithoutNewline) {
  testing::TempDir dir;
  const auto path = (dir.path() / "ids.txt").string();
  std::ofstream(path) << "30\n-4\n7";
  const auto batch = Batch({{"i", Json(arrow::int32(), "[7, 30, 5, null, -4]")}});
  auto op = Op(TransformKind::kVocabulary, {"i"});
  op.path = path;
  op.default_id = 99;
  ExpectColumn(*Transform(*Compile({op}, batch), batch), "i",
               Json(arrow::int64(), "[2, 0, 99, null, 1]"));
}

TEST(VocabularyTest, LargeStringsAndBinaryIdsLookUpTheirBytes) {
  testing::TempDir dir;
  const auto path = (dir.path() / "vocab.txt").string();
  std::ofstream(path) << "x\ny\n";
  const auto batch = Batch({{"l", Json(arrow::large_utf8(), R"(["y", "q", null])")},
                            {"b", Json(arrow::binary(), R"(["x", "y", "xy"])")}});
  auto large = Op(TransformKind::kVocabulary, {"l"});
  large.path = path;
  auto binary = Op(TransformKind::kVocabulary, {"b"});
  binary.path = path;
  binary.default_id = -5;
  const auto out = Transform(*Compile({large, binary}, batch), batch);
  ExpectColumn(*out, "l", Json(arrow::int64(), "[1, 0, null]"));
  ExpectColumn(*out, "b", Json(arrow::int64(), "[0, 1, -5]"));
}

TEST(VocabularyTest, ADuplicateTokenOrAnEmptyFileIsAnError) {
  testing::TempDir dir;
  const auto twice = (dir.path() / "twice.txt").string();
  std::ofstream(twice) << "a\nb\na\n";
  const auto empty = (dir.path() / "empty.txt").string();
  std::ofstream(empty) << "";
  const auto batch = Batch({{"s", Json(arrow::utf8(), R"(["a"])")}});
  auto op = Op(TransformKind::kVocabulary, {"s"});
  op.path = twice;
  auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (vocabulary): vocabulary '" + twice +
                                 "' lists 'a' twice (again on line 3)");
  op.path = empty;
  error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (vocabulary): vocabulary '" + empty + "' is empty");
}

// The canonical form names the file by its bytes: a copy elsewhere keeps it, an edit changes it.
TEST(VocabularyTest, ACopyKeepsTheCanonicalFormAndAnEditChangesIt) {
  testing::TempDir dir;
  const auto path = (dir.path() / "a.txt").string();
  const auto copy = (dir.path() / "b.txt").string();
  const auto edited = (dir.path() / "c.txt").string();
  std::ofstream(path) << "DE\nFR\n";
  std::ofstream(copy) << "DE\nFR\n";
  std::ofstream(edited) << "DE\nFR\nUS\n";
  const auto batch = Batch({{"s", Json(arrow::utf8(), R"(["a"])")}});
  auto op = Op(TransformKind::kVocabulary, {"s"});
  op.path = path;
  const auto original = Compile({op}, batch)->canonical();
  op.path = copy;
  EXPECT_EQ(Compile({op}, batch)->canonical(), original);
  op.path = edited;
  EXPECT_NE(Compile({op}, batch)->canonical(), original);
}

}  // namespace
}  // namespace stoker
