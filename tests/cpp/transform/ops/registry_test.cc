// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The registry: every op in TransformKind order, its name both ways, its spec keys.
#include "transform/ops/registry.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stoker {
namespace {

TEST(TransformOpsTest, KindNamesRoundTrip) {
  const std::vector<std::string> names = {
      "cast",   "fill_null",      "clip",    "log1p",   "standardize", "bucketize",
      "hash",   "vocabulary",     "stack",   "rename",  "drop",        "pad",
      "ragged", "bernoulli_mask", "uniform", "randint", "dropout",     "truncate"};
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
            "bernoulli_mask, uniform, randint, dropout, truncate");
}

// Python's shape checks read the registry: every kind once, in order, its column key first.
TEST(TransformOpsTest, RegistryListsEveryKindInOrderWithItsColumnKeyFirst) {
  const auto ops = AllOps();
  ASSERT_EQ(ops.size(), 18u);
  for (size_t k = 0; k < ops.size(); ++k) {
    EXPECT_EQ(ops[k]->kind, static_cast<TransformKind>(k));
    EXPECT_EQ(FindOp(ops[k]->kind), ops[k]);
    ASSERT_FALSE(ops[k]->params.empty());
    const std::string first = ops[k]->params[0].key;
    EXPECT_EQ(first, ops[k]->TakesColumnList() ? "columns" : "column") << ops[k]->name;
    EXPECT_TRUE(ops[k]->params[0].required) << ops[k]->name;
  }
}

// The keys each op's spec dict takes, "*" marking the required ones: Python checks spec dicts
// against these, so a change here changes what specs users may write.
TEST(RegistryTest, EachOpsSpecKeys) {
  const std::vector<std::string> keys = {
      "column* dtype*",
      "column* value*",
      "column* min max",
      "column*",
      "column* mean* std*",
      "column* boundaries*",
      "column* num_buckets*",
      "column* path* default",
      "columns* output* dtype",
      "column* to*",
      "columns*",
      "column* length* value keep",
      "column*",
      "column* p* dtype key",
      "column* low* high* dtype key",
      "column* low* high* size key",
      "column* p* key",
      "columns* length* keep",
  };
  const auto ops = AllOps();
  ASSERT_EQ(ops.size(), keys.size());
  for (size_t k = 0; k < ops.size(); ++k) {
    std::string written;
    for (const OpParam& param : ops[k]->params) {
      written +=
          (written.empty() ? "" : " ") + std::string(param.key) + (param.required ? "*" : "");
    }
    EXPECT_EQ(written, keys[k]) << ops[k]->name;
  }
}

// Only drop and truncate accept their list key in the singular ({"op": "drop", "column":
// "x"}).
TEST(RegistryTest, OnlyStackDropAndTruncateTakeAColumnListAndDropAndTruncateAlsoTakeOne) {
  for (const OpDescriptor* op : AllOps()) {
    const bool list = op->kind == TransformKind::kStack || op->kind == TransformKind::kDrop ||
                      op->kind == TransformKind::kTruncate;
    EXPECT_EQ(op->TakesColumnList(), list) << op->name;
    for (const OpParam& param : op->params) {
      const bool singular_too =
          op->kind == TransformKind::kDrop || op->kind == TransformKind::kTruncate;
      if (singular_too && std::string(param.key) == "columns") {
        ASSERT_NE(param.singular, nullptr);
        EXPECT_EQ(std::string(param.singular), "column");
      } else {
        EXPECT_EQ(param.singular, nullptr) << op->name << " " << param.key;
      }
    }
  }
}

TEST(RegistryTest, AKindOutsideTheEnumHasNoDescriptor) {
  const auto outside = static_cast<TransformKind>(AllOps().size());
  EXPECT_EQ(FindOp(outside), nullptr);
  EXPECT_EQ(std::string(TransformKindName(outside)), "?");
}

}  // namespace
}  // namespace stoker
