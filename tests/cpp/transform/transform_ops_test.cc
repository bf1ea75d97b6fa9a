// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Every transform op on small Arrow arrays: its output, its canonical form, and a parameter
// error naming the op's position, its kind and the column. A golden canonical form and digest
// of a spec using every op catch any change to the canonical forms (they key disk caches and
// Flight config digests).
#include <arrow/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "common/fixtures.h"
#include "stoker/error.h"
#include "transform/ops/registry.h"
#include "transform/transform_spec.h"
#include "util/digest.h"
#include "util/philox.h"

namespace stoker {
namespace {

std::shared_ptr<arrow::Array> Json(const std::shared_ptr<arrow::DataType>& type,
                                   const std::string& json) {
  return arrow::json::ArrayFromJSONString(type, json).ValueOrDie();
}

// A batch of the named columns (all of one length).
std::shared_ptr<arrow::RecordBatch> Batch(
    const std::vector<std::pair<std::string, std::shared_ptr<arrow::Array>>>& columns) {
  arrow::FieldVector fields;
  arrow::ArrayVector arrays;
  for (const auto& [name, array] : columns) {
    fields.push_back(arrow::field(name, array->type()));
    arrays.push_back(array);
  }
  return arrow::RecordBatch::Make(arrow::schema(fields), arrays.front()->length(), arrays);
}

TransformOp Op(TransformKind kind, std::vector<std::string> columns) {
  TransformOp op;
  op.kind = kind;
  op.columns = std::move(columns);
  return op;
}

std::shared_ptr<TransformSpec> Compile(std::vector<TransformOp> ops,
                                       const std::shared_ptr<arrow::RecordBatch>& batch) {
  auto spec = TransformSpec::Make(std::move(ops), batch->schema());
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ValueOrDie();
}

// The spec's output on `batch`, checked against the output schema it promised.
std::shared_ptr<arrow::RecordBatch> Transform(const TransformSpec& spec,
                                              const std::shared_ptr<arrow::RecordBatch>& batch) {
  auto out = spec.Apply(batch, arrow::default_memory_pool());
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out.ValueOrDie()->schema()->Equals(*spec.output_schema()));
  EXPECT_TRUE(out.ValueOrDie()->ValidateFull().ok());
  return out.ValueOrDie();
}

// The error Make reports for a spec of one op on `batch`.
arrow::Status CompileError(TransformOp op, const std::shared_ptr<arrow::RecordBatch>& batch) {
  auto spec = TransformSpec::Make({std::move(op)}, batch->schema());
  EXPECT_FALSE(spec.ok());
  return spec.status();
}

void ExpectColumn(const arrow::RecordBatch& batch, const std::string& name,
                  const std::shared_ptr<arrow::Array>& expected) {
  const auto column = batch.GetColumnByName(name);
  ASSERT_NE(column, nullptr) << name;
  EXPECT_TRUE(column->Equals(*expected))
      << name << ": " << column->ToString() << " vs " << expected->ToString();
}

std::string Canonical(std::vector<TransformOp> ops,
                      const std::shared_ptr<arrow::RecordBatch>& batch) {
  return Compile(std::move(ops), batch)->canonical();
}

// --- each op ------------------------------------------------------------------------------------

TEST(TransformOpsTest, Cast) {
  const auto batch = Batch({{"x", Json(arrow::int64(), "[1, 2, null]")}});
  auto op = Op(TransformKind::kCast, {"x"});
  op.dtype = "int32";
  const auto spec = Compile({op}, batch);
  ExpectColumn(*Transform(*spec, batch), "x", Json(arrow::int32(), "[1, 2, null]"));
  EXPECT_EQ(spec->canonical(), R"([{"op":"cast","column":"x","dtype":"int32"}])");

  op.dtype = "complex";
  const auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(),
            "transform 0 (cast): dtype 'complex' is not one of bool, int8, int16, int32, int64, "
            "uint8, uint16, uint32, uint64, float16, float32, float64");
}

TEST(TransformOpsTest, CastOverflowAtApplyNamesOpAndColumn) {
  const auto batch = Batch({{"x", Json(arrow::int64(), "[1, 300]")}});
  auto op = Op(TransformKind::kCast, {"x"});
  op.dtype = "int8";
  const auto out = Compile({op}, batch)->Apply(batch, arrow::default_memory_pool());
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(out.status().IsInvalid());
  EXPECT_EQ(out.status().message().rfind("transform 0 (cast) on column 'x': ", 0), 0u)
      << out.status().message();
}

TEST(TransformOpsTest, FillNull) {
  const auto batch = Batch({{"n", Json(arrow::int32(), "[1, null, 3]")},
                            {"s", Json(arrow::utf8(), R"(["a", null, "c"])")}});
  auto number = Op(TransformKind::kFillNull, {"n"});
  number.number = -1;
  auto text = Op(TransformKind::kFillNull, {"s"});
  text.is_text = true;
  text.text = "?";
  const auto spec = Compile({number, text}, batch);
  const auto out = Transform(*spec, batch);
  ExpectColumn(*out, "n", Json(arrow::int32(), "[1, -1, 3]"));
  ExpectColumn(*out, "s", Json(arrow::utf8(), R"(["a", "?", "c"])"));
  EXPECT_EQ(spec->canonical(), R"([{"op":"fill_null","column":"n","value":-1},)"
                               R"({"op":"fill_null","column":"s","value":"?"}])");

  number.number = 1.5;
  auto error = CompileError(number, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(),
            "transform 0 (fill_null): fill value 1.500000 is not representable as int32");
  text.columns = {"n"};
  error = CompileError(text, batch);
  EXPECT_TRUE(error.IsTypeError());
  EXPECT_EQ(error.message(),
            "transform 0 (fill_null): column 'n' has type int32; fill_null takes a number here "
            "(the value is text)");
}

TEST(TransformOpsTest, Clip) {
  const auto batch = Batch({{"x", Json(arrow::float64(), "[-5, 0.5, 10, null]")},
                            {"i", Json(arrow::int32(), "[-5, 3, 10, null]")}});
  auto both = Op(TransformKind::kClip, {"x"});
  both.low = 0;
  both.high = 1;
  auto low_only = Op(TransformKind::kClip, {"i"});
  low_only.low = 0;
  const auto spec = Compile({both, low_only}, batch);
  const auto out = Transform(*spec, batch);
  ExpectColumn(*out, "x", Json(arrow::float64(), "[0, 0.5, 1, null]"));
  ExpectColumn(*out, "i", Json(arrow::int32(), "[0, 3, 10, null]"));
  EXPECT_EQ(spec->canonical(), R"([{"op":"clip","column":"x","min":0,"max":1},)"
                               R"({"op":"clip","column":"i","min":0,"max":"inf"}])");

  both.low = 5;
  auto error = CompileError(both, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(),
            "transform 0 (clip): needs min <= max, got min 5.000000, max 1.000000");
  low_only.low = 1.5;
  error = CompileError(low_only, batch);
  EXPECT_EQ(error.message(), "transform 0 (clip): min 1.500000 is not representable as int32");
}

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

TEST(TransformOpsTest, Standardize) {
  const auto batch = Batch(
      {{"d", Json(arrow::float64(), "[1, 3, null]")}, {"i", Json(arrow::int64(), "[1, 5, 9]")}});
  auto d = Op(TransformKind::kStandardize, {"d"});
  d.mean = 1;
  d.std = 2;
  auto i = Op(TransformKind::kStandardize, {"i"});
  i.mean = 1;
  i.std = 4;
  const auto spec = Compile({d, i}, batch);
  const auto out = Transform(*spec, batch);
  ExpectColumn(*out, "d", Json(arrow::float64(), "[0, 1, null]"));
  ExpectColumn(*out, "i", Json(arrow::float32(), "[0, 1, 2]"));
  EXPECT_EQ(spec->canonical(), R"([{"op":"standardize","column":"d","mean":1,"std":2},)"
                               R"({"op":"standardize","column":"i","mean":1,"std":4}])");

  d.std = 0;
  const auto error = CompileError(d, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(),
            "transform 0 (standardize): needs a finite mean and std > 0, got mean 1.000000, std "
            "0.000000");
}

TEST(TransformOpsTest, Bucketize) {
  const auto batch = Batch({{"x", Json(arrow::float64(), "[-1, 0, 0.5, 1, 2, null]")}});
  auto op = Op(TransformKind::kBucketize, {"x"});
  op.boundaries = {0, 1};
  const auto spec = Compile({op}, batch);
  ExpectColumn(*Transform(*spec, batch), "x", Json(arrow::int32(), "[0, 1, 1, 2, 2, null]"));
  EXPECT_EQ(spec->canonical(), R"([{"op":"bucketize","column":"x","boundaries":[0,1]}])");

  op.boundaries = {0, 0.5, 0.5};
  const auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(),
            "transform 0 (bucketize): boundaries must be strictly increasing numbers (position "
            "2)");
}

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

TEST(TransformOpsTest, Rename) {
  const auto batch = Batch({{"x", Json(arrow::int32(), "[1]")}, {"y", Json(arrow::int8(), "[2]")}});
  auto op = Op(TransformKind::kRename, {"x"});
  op.output = "z";
  const auto spec = Compile({op}, batch);
  const auto out = Transform(*spec, batch);
  ASSERT_EQ(out->schema()->field_names(), (std::vector<std::string>{"z", "y"}));
  ExpectColumn(*out, "z", Json(arrow::int32(), "[1]"));
  EXPECT_EQ(spec->canonical(), R"([{"op":"rename","column":"x","to":"z"}])");

  op.output = "y";
  const auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (rename): 'y' already exists");
}

TEST(TransformOpsTest, Drop) {
  const auto batch = Batch({{"x", Json(arrow::int32(), "[1]")},
                            {"y", Json(arrow::int8(), "[2]")},
                            {"z", Json(arrow::utf8(), R"(["c"])")}});
  const auto spec = Compile({Op(TransformKind::kDrop, {"z", "x"})}, batch);
  const auto out = Transform(*spec, batch);
  ASSERT_EQ(out->schema()->field_names(), (std::vector<std::string>{"y"}));
  EXPECT_EQ(spec->canonical(), R"([{"op":"drop","columns":["z","x"]}])");

  auto error = CompileError(Op(TransformKind::kDrop, {"x", "nope"}), batch);
  EXPECT_TRUE(error.IsKeyError());
  EXPECT_EQ(error.message(),
            "transform 0 (drop): column 'nope' not found; columns at this step: y, z");
  error = CompileError(Op(TransformKind::kDrop, {}), batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (drop): names no column");
}

TEST(TransformOpsTest, Pad) {
  const auto type = arrow::list(arrow::float32());
  const auto batch = Batch({{"h", Json(type, "[[1, 2, 3], [4], null, [null, 5]]")},
                            {"k", Json(arrow::int8(), "[1, 2, 3, 4]")}});
  auto op = Op(TransformKind::kPad, {"h"});
  op.length = 2;
  op.number = -1;
  const auto spec = Compile({op}, batch);
  const auto out = Transform(*spec, batch);
  ASSERT_EQ(out->schema()->field_names(), (std::vector<std::string>{"h", "h_length", "k"}));
  ExpectColumn(
      *out, "h",
      Json(arrow::fixed_size_list(arrow::float32(), 2), "[[1, 2], [4, -1], [-1, -1], [null, 5]]"));
  ExpectColumn(*out, "h_length", Json(arrow::int32(), "[2, 1, 0, 2]"));
  EXPECT_EQ(spec->canonical(), R"([{"op":"pad","column":"h","length":2,"value":-1}])");

  op.length = 0;
  auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (pad): length must be >= 1, got 0");
  op.length = 2;
  op.columns = {"k"};
  error = CompileError(op, batch);
  EXPECT_TRUE(error.IsTypeError());
  EXPECT_EQ(error.message(),
            "transform 0 (pad): column 'k' has type int8; pad takes variable-length lists of "
            "numbers");
}

TEST(TransformOpsTest, RaggedFollowsRenamesAndDrops) {
  const auto type = arrow::list(arrow::int64());
  const auto batch = Batch({{"h", Json(type, "[[1, 2], null]")}, {"g", Json(type, "[[], [3]]")}});
  auto rename = Op(TransformKind::kRename, {"h"});
  rename.output = "history";
  const auto spec = Compile({Op(TransformKind::kRagged, {"h"}), Op(TransformKind::kRagged, {"g"}),
                             rename, Op(TransformKind::kDrop, {"g"})},
                            batch);
  EXPECT_EQ(spec->ragged_columns(), std::vector<std::string>{"history"});
  const auto out = Transform(*spec, batch);
  ExpectColumn(*out, "history", Json(type, "[[1, 2], null]"));
  EXPECT_EQ(spec->canonical(),
            R"([{"op":"ragged","column":"h"},{"op":"ragged","column":"g"},)"
            R"({"op":"rename","column":"h","to":"history"},{"op":"drop","columns":["g"]}])");

  const auto error = CompileError(Op(TransformKind::kRagged, {"x"}),
                                  Batch({{"x", Json(arrow::utf8(), R"(["a"])")}}));
  EXPECT_TRUE(error.IsTypeError());
  EXPECT_EQ(error.message(),
            "transform 0 (ragged): column 'x' has type string; ragged takes variable-length "
            "lists of numbers");
}

// --- the spec around the ops --------------------------------------------------------------------

TEST(TransformOpsTest, ErrorsNameTheOpsPositionAndItsColumnsAtThatStep) {
  const auto batch = Batch({{"x", Json(arrow::int32(), "[1]")}, {"y", Json(arrow::int8(), "[2]")}});
  auto rename = Op(TransformKind::kRename, {"x"});
  rename.output = "z";
  auto spec = TransformSpec::Make({rename, Op(TransformKind::kLog1p, {"x"})}, batch->schema());
  ASSERT_FALSE(spec.ok());
  EXPECT_TRUE(spec.status().IsKeyError());
  EXPECT_EQ(spec.status().message(),
            "transform 1 (log1p): column 'x' not found; columns at this step: z, y");
  spec = TransformSpec::Make({rename, Op(TransformKind::kLog1p, {"z", "y"})}, batch->schema());
  EXPECT_EQ(spec.status().message(), "transform 1 (log1p): takes exactly one column, got 2");
}

TEST(TransformOpsTest, OutputSchemaKeepsUntouchedFieldsAndEmptySpecIsIdentity) {
  auto field = arrow::field("x", arrow::int32(), /*nullable=*/false,
                            arrow::key_value_metadata({"k"}, {"v"}));
  auto schema = arrow::schema({field, arrow::field("y", arrow::int8())});
  auto spec = TransformSpec::Make({Op(TransformKind::kLog1p, {"y"})}, schema).ValueOrDie();
  EXPECT_TRUE(spec->output_schema()->field(0)->Equals(*field, /*check_metadata=*/true));
  EXPECT_EQ(spec->UntouchedColumns(), std::vector<std::string>{"x"});
  auto empty = TransformSpec::Make({}, schema).ValueOrDie();
  EXPECT_EQ(empty->canonical(), "[]");
  EXPECT_EQ(empty->digest().size(), 32u);
}

TEST(TransformOpsTest, KindNamesRoundTrip) {
  const std::vector<std::string> names = {
      "cast",   "fill_null",      "clip",    "log1p",   "standardize", "bucketize",
      "hash",   "vocabulary",     "stack",   "rename",  "drop",        "pad",
      "ragged", "bernoulli_mask", "uniform", "randint", "dropout"};
  for (size_t k = 0; k < names.size(); ++k) {
    const auto kind = static_cast<TransformKind>(k);
    EXPECT_EQ(TransformKindName(kind), names[k]);
    EXPECT_EQ(ParseTransformKind(names[k]).ValueOrDie(), kind);
  }
  const auto unknown = ParseTransformKind("explode");
  EXPECT_TRUE(unknown.status().IsInvalid());
  EXPECT_EQ(unknown.status().message(),
            "unknown transform op 'explode'; the ops are cast, fill_null, clip, log1p, "
            "standardize, bucketize, hash, vocabulary, stack, rename, drop, pad, ragged, "
            "bernoulli_mask, uniform, randint, dropout");
}

// Python's shape checks read the registry: every kind once, in order, its column key first.
TEST(TransformOpsTest, RegistryListsEveryKindInOrderWithItsColumnKeyFirst) {
  const auto ops = AllOps();
  ASSERT_EQ(ops.size(), 17u);
  for (size_t k = 0; k < ops.size(); ++k) {
    EXPECT_EQ(ops[k]->kind, static_cast<TransformKind>(k));
    EXPECT_EQ(FindOp(ops[k]->kind), ops[k]);
    ASSERT_FALSE(ops[k]->params.empty());
    const std::string first = ops[k]->params[0].key;
    EXPECT_EQ(first, ops[k]->TakesColumnList() ? "columns" : "column") << ops[k]->name;
    EXPECT_TRUE(ops[k]->params[0].required) << ops[k]->name;
  }
}

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

// --- ops that draw random numbers ---------------------------------------------------------------

DrawContext Draws(uint64_t seed, uint64_t epoch, int64_t first_row) {
  return DrawContext{.seed = seed, .epoch = epoch, .first_row = first_row};
}

std::shared_ptr<arrow::RecordBatch> Drawn(const TransformSpec& spec,
                                          const std::shared_ptr<arrow::RecordBatch>& batch,
                                          const DrawContext& draws) {
  auto out = spec.Apply(batch, arrow::default_memory_pool(), draws);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out.ValueOrDie()->schema()->Equals(*spec.output_schema()));
  EXPECT_TRUE(out.ValueOrDie()->ValidateFull().ok());
  return out.ValueOrDie();
}

std::shared_ptr<arrow::RecordBatch> Ids(int64_t n) {
  arrow::Int64Builder ids;
  for (int64_t i = 0; i < n; ++i) EXPECT_TRUE(ids.Append(1000 + 7 * i).ok());
  return Batch({{"id", ids.Finish().ValueOrDie()}});
}

TEST(DrawOpsTest, RowDrawsArePhiloxOfTheDocumentedKeyAndCounter) {
  const DrawContext context{.seed = 42, .epoch = 3, .first_row = 0, .num_rows = 0, .op_index = 2};
  const RowDraws draws(context);
  const uint64_t key = Mix64(42 + 0x9e3779b97f4a7c15ULL * 3);
  const uint64_t row = (uint64_t{5} << 32) | 9;
  const auto block = Philox4x32::Block(
      {9, 5, 4, 3}, {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
  EXPECT_EQ(draws.Bits(row, 4), block[0] | (static_cast<uint64_t>(block[1]) << 32));
  EXPECT_EQ(draws.Uniform(row, 4), static_cast<double>(draws.Bits(row, 4) >> 11) * 0x1.0p-53);
  EXPECT_LT(draws.Below(row, 4, 10), 10u);
}

TEST(DrawOpsTest, BernoulliMask) {
  const auto batch = Ids(4000);
  auto op = Op(TransformKind::kBernoulliMask, {"mask"});
  op.p = 0.25;
  const auto spec = Compile({op}, batch);
  EXPECT_TRUE(spec->draws());
  const auto out = Drawn(*spec, batch, Draws(7, 0, 100));
  const auto& mask = static_cast<const arrow::BooleanArray&>(*out->GetColumnByName("mask"));
  EXPECT_EQ(mask.type_id(), arrow::Type::BOOL);
  EXPECT_NEAR(static_cast<double>(mask.true_count()) / 4000, 0.25, 0.03);
  // A pure function of (seed, epoch, row): the same again, another epoch differs.
  EXPECT_TRUE(Drawn(*spec, batch, Draws(7, 0, 100))->Equals(*out));
  EXPECT_FALSE(Drawn(*spec, batch, Draws(7, 1, 100))->Equals(*out));
  EXPECT_FALSE(Drawn(*spec, batch, Draws(8, 0, 100))->Equals(*out));
  // Row 100 + i of one unit draws what row i of a unit starting at 100 draws.
  const auto shifted = Drawn(*spec, batch->Slice(10), Draws(7, 0, 110));
  EXPECT_TRUE(shifted->column(1)->Equals(*out->column(1)->Slice(10)));
  EXPECT_EQ(spec->canonical(),
            R"([{"op":"bernoulli_mask","column":"mask","p":0.25,"dtype":"bool","key":""}])");

  op.dtype = "int8";
  op.key = "id";
  const auto keyed = Compile({op}, batch);
  const auto by_id = Drawn(*keyed, batch, Draws(7, 0, 0));
  EXPECT_EQ(by_id->GetColumnByName("mask")->type_id(), arrow::Type::INT8);
  // Keyed by the id column, the row's position does not matter.
  EXPECT_TRUE(Drawn(*keyed, batch, Draws(7, 0, 555))->Equals(*by_id));

  op.p = 1.5;
  EXPECT_EQ(CompileError(op, batch).message(),
            "transform 0 (bernoulli_mask): p must be in [0, 1], got 1.500000");
  op.p = 0.5;
  op.columns = {"id"};
  EXPECT_EQ(CompileError(op, batch).message(),
            "transform 0 (bernoulli_mask): column 'id' exists already; bernoulli_mask writes a "
            "new column: name one that does not exist");
}

TEST(DrawOpsTest, UniformStaysInItsRange) {
  const auto batch = Ids(5000);
  auto op = Op(TransformKind::kUniform, {"noise"});
  op.low = -2;
  op.high = 3;
  const auto spec = Compile({op}, batch);
  const auto out = Drawn(*spec, batch, Draws(1, 0, 0));
  const auto& noise = static_cast<const arrow::FloatArray&>(*out->GetColumnByName("noise"));
  double sum = 0;
  for (int64_t i = 0; i < noise.length(); ++i) {
    EXPECT_GE(noise.Value(i), -2.0f);
    EXPECT_LT(noise.Value(i), 3.0f);
    sum += noise.Value(i);
  }
  EXPECT_NEAR(sum / 5000, 0.5, 0.1);
  EXPECT_EQ(spec->canonical(),
            R"([{"op":"uniform","column":"noise","low":-2,"high":3,"dtype":"float32","key":""}])");
  op.high = -2;
  EXPECT_EQ(CompileError(op, batch).message(),
            "transform 0 (uniform): needs finite low < high, got low -2.000000, high -2.000000");
}

TEST(DrawOpsTest, RandintOneOrSeveralPerRow) {
  const auto batch = Ids(3000);
  auto op = Op(TransformKind::kRandint, {"negatives"});
  op.low = 10;
  op.high = 15;
  const auto scalar = Drawn(*Compile({op}, batch), batch, Draws(3, 2, 0));
  const auto& one = static_cast<const arrow::Int64Array&>(*scalar->GetColumnByName("negatives"));
  for (int64_t i = 0; i < one.length(); ++i) {
    EXPECT_GE(one.Value(i), 10);
    EXPECT_LT(one.Value(i), 15);
  }
  op.size = 4;
  const auto spec = Compile({op}, batch);
  const auto lists = Drawn(*spec, batch, Draws(3, 2, 0))->GetColumnByName("negatives");
  ASSERT_EQ(lists->type()->ToString(), "fixed_size_list<item: int64>[4]");
  // Draw 0 of each row is the single draw of the scalar form.
  const auto& values = static_cast<const arrow::Int64Array&>(
      *static_cast<const arrow::FixedSizeListArray&>(*lists).values());
  for (int64_t i = 0; i < 3000; ++i) EXPECT_EQ(values.Value(4 * i), one.Value(i));
  EXPECT_EQ(spec->canonical(),
            R"([{"op":"randint","column":"negatives","low":10,"high":15,"size":4,"key":""}])");
  op.low = 0.5;
  EXPECT_EQ(CompileError(op, batch).message(),
            "transform 0 (randint): low and high must be integers within +-2^53, got low "
            "0.500000, high 15.000000");
}

TEST(DrawOpsTest, DropoutDropsElementsInOrderAndKeepsNullLists) {
  const auto batch =
      Batch({{"l", Json(arrow::list(arrow::int32()), "[[1, 2, 3, 4, 5, 6], null, [], [7, 8]]")}});
  auto op = Op(TransformKind::kDropout, {"l"});
  op.p = 0;
  ExpectColumn(*Drawn(*Compile({op}, batch), batch, Draws(0, 0, 0)), "l", batch->column(0));
  op.p = 1;
  ExpectColumn(*Drawn(*Compile({op}, batch), batch, Draws(0, 0, 0)), "l",
               Json(arrow::list(arrow::int32()), "[[], null, [], []]"));
  op.p = 0.5;
  const auto spec = Compile({op}, batch);
  const auto out = Drawn(*spec, batch, Draws(9, 0, 0))->GetColumnByName("l");
  const auto& lists = static_cast<const arrow::ListArray&>(*out);
  EXPECT_TRUE(lists.IsNull(1));
  // What is kept is a subsequence of each list, in order.
  const auto& kept = static_cast<const arrow::Int32Array&>(*lists.values());
  for (int64_t i = 1; i < kept.length(); ++i) EXPECT_LT(kept.Value(i - 1), kept.Value(i));
  EXPECT_EQ(spec->canonical(), R"([{"op":"dropout","column":"l","p":0.5,"key":""}])");
}

TEST(DrawOpsTest, TheCachedPartEndsBeforeTheFirstOpThatDraws) {
  const auto batch = Ids(100);
  auto cast = Op(TransformKind::kCast, {"id"});
  cast.dtype = "float64";
  auto noise = Op(TransformKind::kUniform, {"noise"});
  noise.low = 0;
  noise.high = 1;
  auto log = Op(TransformKind::kLog1p, {"noise"});
  const auto spec = Compile({cast, noise, log}, batch);
  const auto before = spec->ApplyBeforeDraws(batch, arrow::default_memory_pool()).ValueOrDie();
  EXPECT_EQ(before->schema()->ToString(), "id: double");
  const auto split =
      spec->ApplyDraws(before, arrow::default_memory_pool(), Draws(5, 1, 20)).ValueOrDie();
  EXPECT_TRUE(split->Equals(*Drawn(*spec, batch, Draws(5, 1, 20))));
  // Without an op that draws, the cached part is everything and ApplyDraws the identity.
  const auto plain = Compile({cast}, batch);
  EXPECT_FALSE(plain->draws());
  const auto whole = plain->ApplyBeforeDraws(batch, arrow::default_memory_pool()).ValueOrDie();
  EXPECT_EQ(plain->ApplyDraws(whole, arrow::default_memory_pool(), {}).ValueOrDie(), whole);
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

}  // namespace
}  // namespace stoker
