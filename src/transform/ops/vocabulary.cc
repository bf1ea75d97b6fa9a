// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// vocabulary: a string/binary or integer id -> int64 line number (from 0) of the id in a text
// file of one token per line; unknown ids -> default. The canonical form names the file by the
// digest of its bytes, so a moved file keeps caches valid and an edited one invalidates them.
#include <charconv>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "stoker/error.h"
#include "transform/canonical_writer.h"
#include "transform/ops/op.h"
#include "transform/ops/schema_step.h"
#include "transform/transform_kernels.h"
#include "util/digest.h"

namespace stoker {

namespace {

constexpr char kName[] = "vocabulary";

// A vocabulary file's tokens -> ids, for string ids or for integer ids.
struct Vocabulary {
  std::unordered_map<std::string, int64_t> by_text;
  std::unordered_map<int64_t, int64_t> by_integer;
  std::string digest;  // of the file's bytes
};

// Reads a vocabulary file (line i, from 0, has id i). With integer_keys every line must be an
// integer. Duplicate tokens are errors.
arrow::Result<std::shared_ptr<const Vocabulary>> LoadVocabulary(const std::string& path,
                                                                bool integer_keys) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("vocabulary file '", path, "' cannot be opened");
  std::stringstream content;
  content << in.rdbuf();
  const std::string text = content.str();
  auto vocabulary = std::make_shared<Vocabulary>();
  Digest digest;
  digest.Add(text);
  vocabulary->digest = digest.Hex();

  int64_t line = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string token = text.substr(start, end - start);
    if (!token.empty() && token.back() == '\r') token.pop_back();
    bool fresh;
    if (integer_keys) {
      int64_t value = 0;
      const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
      if (ec != std::errc() || ptr != token.data() + token.size()) {
        return arrow::Status::Invalid("vocabulary '", path, "' line ", line + 1, " ('", token,
                                      "') is not an integer, and the column holds integers");
      }
      fresh = vocabulary->by_integer.emplace(value, line).second;
    } else {
      fresh = vocabulary->by_text.emplace(token, line).second;
    }
    if (!fresh) {
      return arrow::Status::Invalid("vocabulary '", path, "' lists '", token,
                                    "' twice (again on line ", line + 1, ")");
    }
    ++line;
    start = end + 1;
  }
  if (line == 0) return arrow::Status::Invalid("vocabulary '", path, "' is empty");
  return vocabulary;
}

class VocabularyOp final : public CompiledOp {
 public:
  VocabularyOp(TransformOp op, std::shared_ptr<const Vocabulary> vocabulary)
      : CompiledOp(std::move(op)), vocabulary_(std::move(vocabulary)) {}

  void WriteParams(CanonicalWriter* w) const override {
    w->Field("vocabulary_digest", vocabulary_->digest);
    w->Field("default", static_cast<double>(op().default_id));
  }

  arrow::Status Apply(ArrayColumns* columns, const DrawContext& /*draws*/,
                      arrow::compute::ExecContext* exec) const override {
    auto& x = Column(columns);
    const Vocabulary& v = *vocabulary_;
    const int64_t unknown = op().default_id;
    ARROW_ASSIGN_OR_RAISE(x, MapIds(
                                 x,
                                 [&](std::string_view s) {
                                   const auto it = v.by_text.find(std::string(s));
                                   return it == v.by_text.end() ? unknown : it->second;
                                 },
                                 [&](int64_t id) {
                                   const auto it = v.by_integer.find(id);
                                   return it == v.by_integer.end() ? unknown : it->second;
                                 },
                                 exec));
    return arrow::Status::OK();
  }

 private:
  std::shared_ptr<const Vocabulary> vocabulary_;
};

arrow::Result<std::unique_ptr<CompiledOp>> Compile(const TransformOp& op, SchemaStep* step) {
  ARROW_ASSIGN_OR_RAISE(int i, step->Require(op.columns[0], kName, kIds));
  const bool integer = arrow::is_integer(step->columns.values[i]->id());
  ARROW_ASSIGN_OR_RAISE(auto vocabulary, LoadVocabulary(op.path, integer));
  step->columns.values[i] = arrow::int64();
  return std::make_unique<VocabularyOp>(op, std::move(vocabulary));
}

constexpr OpParam kParams[] = {{"column", true}, {"path", true}, {"default", false}};

}  // namespace

extern constinit const OpDescriptor kVocabularyOp{TransformKind::kVocabulary, kName, kParams,
                                                  &Compile};

}  // namespace stoker
