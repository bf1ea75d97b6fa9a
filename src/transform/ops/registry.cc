// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "transform/ops/registry.h"

#include <string>
#include <vector>

namespace stoker {

// Defined by the op's own file in this folder. A new op: its file, a TransformKind, a line
// here and one in kOps (docs/transforms.md, "Adding an op").
extern constinit const OpDescriptor kCastOp, kFillNullOp, kClipOp, kLog1pOp, kStandardizeOp,
    kBucketizeOp, kHashOp, kVocabularyOp, kStackOp, kRenameOp, kDropOp, kPadOp, kRaggedOp,
    kBernoulliMaskOp, kUniformOp, kRandintOp, kDropoutOp, kTruncateOp;

namespace {

constexpr const OpDescriptor* kOps[] = {
    &kCastOp,   &kFillNullOp,      &kClipOp,    &kLog1pOp,   &kStandardizeOp, &kBucketizeOp,
    &kHashOp,   &kVocabularyOp,    &kStackOp,   &kRenameOp,  &kDropOp,        &kPadOp,
    &kRaggedOp, &kBernoulliMaskOp, &kUniformOp, &kRandintOp, &kDropoutOp,     &kTruncateOp,
};

}  // namespace

std::span<const OpDescriptor* const> AllOps() { return kOps; }

const OpDescriptor* FindOp(TransformKind kind) {
  for (const OpDescriptor* op : kOps) {
    if (op->kind == kind) return op;
  }
  return nullptr;
}

const char* TransformKindName(TransformKind kind) {
  const OpDescriptor* op = FindOp(kind);
  return op != nullptr ? op->name : "?";
}

arrow::Result<TransformKind> ParseTransformKind(const std::string& name) {
  std::string names;
  for (const OpDescriptor* op : kOps) {
    if (name == op->name) return op->kind;
    names += (names.empty() ? "" : ", ") + std::string(op->name);
  }
  return arrow::Status::Invalid("unknown transform op '", name, "'; the ops are ", names);
}

}  // namespace stoker
