// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Bytes as an encoded value of a Petastorm dataset: the first byte picks the codec (ndarray,
// compressed ndarray, png, jpeg) and the declared shape; the rest is the value, decoded by the
// ColumnDecoder the workers run. The answer is an error or a column that is valid, of the
// decoder's type and of the declared shape.
#include <arrow/array.h>
#include <arrow/builder.h>

#include <memory>
#include <vector>

#include "decode/column_decoder.h"
#include "fuzz_support.h"
#include "fuzz_targets.h"

namespace stoker::fuzz {

int CodecInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t choice = data[0];
  ColumnCodec codec;
  codec.column = "x";
  codec.codec = static_cast<ValueCodec>(choice % 4);
  const bool image = codec.codec == ValueCodec::kPng || codec.codec == ValueCodec::kJpeg;
  // Bits 2-3: the shape. Unknown sizes, or small known ones a value may or may not match.
  static const std::vector<int64_t> kShapes[] = {{-1, -1}, {-1, -1, 3}, {4, 3}, {2, 2, 3}};
  codec.shape = kShapes[(choice >> 2) % 4];
  // Bits 4-5: the dtype (images take uint8 only).
  static const char* const kDtypes[] = {"uint8", "float32", "int64", "float16"};
  codec.dtype = image ? "uint8" : kDtypes[(choice >> 4) % 4];

  arrow::BinaryBuilder builder;
  if (!builder.Append(data + 1, static_cast<int32_t>(size - 1)).ok()) return 0;
  if (!builder.AppendNull().ok()) return 0;
  std::shared_ptr<arrow::Array> values;
  if (!builder.Finish(&values).ok()) return 0;
  const auto schema = arrow::schema({arrow::field("x", arrow::binary())});
  auto decoder = ColumnDecoder::Make({codec}, *schema);
  if (!decoder.ok())
    Violation("a codec the target builds is refused: " + decoder.status().ToString());
  auto batch = arrow::RecordBatch::Make(schema, values->length(), {values});
  auto decoded = (*decoder)->Apply(batch, arrow::default_memory_pool());
  if (!decoded.ok()) return 0;
  const auto& column = (*decoded)->column(0);
  if (!column->type()->Equals(*(*decoder)->output_schema()->field(0)->type())) {
    Violation("decoded column of type " + column->type()->ToString() + ", not the declared " +
              (*decoder)->output_schema()->field(0)->type()->ToString());
  }
  if (!column->ValidateFull().ok()) Violation("decoded column is not valid Arrow data");
  if (column->length() != 2 || !column->IsNull(1) || column->IsNull(0)) {
    Violation("decoded column does not keep the input's rows and nulls");
  }
  return 0;
}

}  // namespace stoker::fuzz
