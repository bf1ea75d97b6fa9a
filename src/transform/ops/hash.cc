// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// hash: a string/binary or integer id -> int64 bucket in [0, num_buckets). The hash is stable
// and documented (docs/transforms.md) so other systems can reproduce it: SplitMix64's finalizer
// over FNV-1a 64 of a string's bytes, or over an integer's int64 value.
#include "transform/canonical_writer.h"
#include "transform/ops/op.h"
#include "transform/ops/schema_step.h"
#include "transform/transform_kernels.h"
#include "util/digest.h"

namespace stoker {

namespace {

constexpr char kName[] = "hash";

uint64_t HashBytes(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64's offset basis
  for (char c : bytes) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ULL;  // FNV-1a 64's prime
  }
  return Mix64(h);
}

class Hash final : public CompiledOp {
 public:
  using CompiledOp::CompiledOp;

  void WriteParams(CanonicalWriter* w) const override {
    w->Field("num_buckets", static_cast<double>(op().num_buckets));
  }

  arrow::Status Apply(ArrayColumns* columns, const DrawContext& /*draws*/,
                      arrow::compute::ExecContext* exec) const override {
    auto& x = Column(columns);
    const auto n = static_cast<uint64_t>(op().num_buckets);
    ARROW_ASSIGN_OR_RAISE(
        x, MapIds(
               x, [n](std::string_view s) { return static_cast<int64_t>(HashBytes(s) % n); },
               [n](int64_t v) { return static_cast<int64_t>(Mix64(static_cast<uint64_t>(v)) % n); },
               exec));
    return arrow::Status::OK();
  }
};

arrow::Result<std::unique_ptr<CompiledOp>> Compile(const TransformOp& op, SchemaStep* step) {
  ARROW_ASSIGN_OR_RAISE(int i, step->Require(op.columns[0], kName, kIds));
  if (op.num_buckets < 1) {
    return arrow::Status::Invalid("num_buckets must be >= 1, got ", op.num_buckets);
  }
  step->columns.values[i] = arrow::int64();
  return std::make_unique<Hash>(op);
}

constexpr OpParam kParams[] = {{"column", true}, {"num_buckets", true}};

}  // namespace

extern constinit const OpDescriptor kHashOp{TransformKind::kHash, kName, kParams, &Compile};

}  // namespace stoker
