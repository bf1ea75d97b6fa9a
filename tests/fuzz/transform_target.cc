// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Bytes drive a transform spec: up to four ops of any kind, on any column (present or not,
// of every type), with any parameters (NaN, infinities, negative counts, unsorted
// boundaries, names that clash), compiled against a small dataset and applied for an epoch.
// Only the sizes that make memory grow are bounded (pad lengths and randint sizes below 4096):
// a spec is the user's own configuration, and asking for huge tensors is not an attack.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "fuzz_support.h"
#include "fuzz_targets.h"

namespace stoker::fuzz {

namespace {

constexpr int kKinds = static_cast<int>(TransformKind::kDropout) + 1;
constexpr int64_t kMaxPadLength = 4096;

const std::string& TransformSource() {
  static const auto* source = new std::string(PutParquet("transform.parquet", *SampleTable(),
                                                         /*row_group_size=*/100)
                                                  .ValueOrDie());
  return *source;
}

// A vocabulary file of string and integer tokens (and one duplicate), written once.
const std::string& VocabularyPath() {
  static const auto* path = new std::string([] {
    auto file = std::filesystem::temp_directory_path() / "stoker-fuzz-vocabulary.txt";
    std::ofstream(file) << "v1\nv2\n3\n-5\nv2\n\n";
    return file.string();
  }());
  return *path;
}

std::string Column(ByteReader& in) {
  static const char* kNames[] = {"i", "f", "s", "b", "n", "l", "fl", "ts", "out", ""};
  const size_t pick = in.Below(std::size(kNames) + 1);
  return pick < std::size(kNames) ? kNames[pick] : in.Text(8);
}

std::string Dtype(ByteReader& in) {
  static const char* kTypes[] = {"bool",    "int8",    "int16",  "int32",  "int64",
                                 "uint8",   "uint16",  "uint32", "uint64", "float16",
                                 "float32", "float64", "string"};
  const size_t pick = in.Below(std::size(kTypes) + 1);
  return pick < std::size(kTypes) ? kTypes[pick] : in.Text(8);
}

// A number: a small integer, a special value or any double.
double Number(ByteReader& in) {
  switch (in.Below(4)) {
    case 0:
      return static_cast<double>(static_cast<int8_t>(in.Byte()));
    case 1: {
      const double specials[] = {std::nan(""),
                                 std::numeric_limits<double>::infinity(),
                                 -std::numeric_limits<double>::infinity(),
                                 0.0,
                                 -0.0,
                                 std::numeric_limits<double>::max(),
                                 std::numeric_limits<double>::denorm_min()};
      return specials[in.Below(std::size(specials))];
    }
    default:
      return in.Double();
  }
}

TransformOp Op(ByteReader& in) {
  TransformOp op;
  op.kind = static_cast<TransformKind>(in.Below(kKinds));
  for (size_t n = in.Below(4); n > 0; --n) op.columns.push_back(Column(in));
  if (in.Below(2)) op.output = Column(in);
  op.dtype = Dtype(in);
  op.is_text = in.Below(2);
  if (op.is_text) op.text = in.Text(6);
  op.number = Number(in);
  if (in.Below(2)) op.low = Number(in);
  if (in.Below(2)) op.high = Number(in);
  op.mean = Number(in);
  op.std = Number(in);
  for (size_t n = in.Below(5); n > 0; --n) op.boundaries.push_back(Number(in));
  op.num_buckets =
      in.Below(2) ? static_cast<int64_t>(in.Integer()) : static_cast<int64_t>(in.Below(40)) - 2;
  op.path = in.Below(4) ? VocabularyPath() : in.Text(8);
  op.default_id = static_cast<int64_t>(in.Integer());
  op.length = static_cast<int64_t>(in.Below(kMaxPadLength + 2)) - 1;
  op.p = in.Below(2) ? in.Below(101) / 100.0 : Number(in);
  op.size = static_cast<int64_t>(in.Below(kMaxPadLength + 2)) - 1;
  if (in.Below(2)) op.key = Column(in);
  // Read last, so the inputs kept from before these ops parse as they did up to here.
  if (in.Below(8) == 0) op.kind = TransformKind::kTruncate;
  op.keep = in.Below(4) == 0 ? "last" : (in.Below(8) == 0 ? in.Text(5) : "first");
  return op;
}

}  // namespace

int TransformInput(const uint8_t* data, size_t size) {
  ByteReader in(data, size);
  LoaderOptions options = SmallLoaderOptions(TransformSource());
  for (size_t n = 1 + in.Below(4); n > 0 && !in.empty(); --n) options.transforms.push_back(Op(in));
  options.output = in.Below(2) ? OutputKind::kArrow : OutputKind::kTensor;
  if (options.output == OutputKind::kTensor && in.Below(4) == 0)
    options.output = OutputKind::kJagged;
  auto loader = Loader::Make(options);
  if (!loader.ok()) return 0;
  ReadEpoch(**loader, /*max_batches=*/1000);
  return 0;
}

}  // namespace stoker::fuzz
