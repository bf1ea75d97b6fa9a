// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "fuzz_support.h"

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <parquet/arrow/writer.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "memory_filesystem.h"

namespace stoker::fuzz {

void Violation(const std::string& what) {
  std::fprintf(stderr, "stoker fuzz: contract broken: %s\n", what.c_str());
  std::abort();
}

arrow::Result<std::string> PutParquet(const std::string& name, const arrow::Table& table,
                                      int64_t row_group_size) {
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create());
  ARROW_RETURN_NOT_OK(
      parquet::arrow::WriteTable(table, arrow::default_memory_pool(), sink, row_group_size));
  ARROW_ASSIGN_OR_RAISE(auto buffer, sink->Finish());
  return PutMemoryFile(name, buffer->data(), static_cast<size_t>(buffer->size()));
}

namespace {

arrow::Result<std::shared_ptr<arrow::Table>> MakeSampleTable() {
  constexpr int64_t kRows = 300;
  arrow::Int64Builder i;
  arrow::DoubleBuilder f;
  arrow::StringBuilder s;
  arrow::BooleanBuilder b;
  arrow::Int32Builder n;
  auto list = std::make_shared<arrow::ListBuilder>(arrow::default_memory_pool(),
                                                   std::make_shared<arrow::FloatBuilder>());
  arrow::FloatBuilder fixed_values;
  arrow::TimestampBuilder ts(arrow::timestamp(arrow::TimeUnit::MICRO),
                             arrow::default_memory_pool());
  const double specials[] = {std::nan(""), std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(), -0.0};
  for (int64_t r = 0; r < kRows; ++r) {
    ARROW_RETURN_NOT_OK(r % 11 == 0 ? i.AppendNull() : i.Append(r * 37 % 101 - 50));
    ARROW_RETURN_NOT_OK(f.Append(r % 13 == 0 ? specials[r / 13 % 4] : r * 0.25 - 30));
    std::string text = "v";  // not "v" + ...: GCC 12 warns falsely (-Wrestrict) on that
    text += std::to_string(r % 17);
    ARROW_RETURN_NOT_OK(s.Append(text));
    ARROW_RETURN_NOT_OK(b.Append(r % 3 == 0));
    ARROW_RETURN_NOT_OK(n.Append(static_cast<int32_t>(r)));
    ARROW_RETURN_NOT_OK(list->Append());
    auto* values = static_cast<arrow::FloatBuilder*>(list->value_builder());
    for (int64_t k = 0; k < r % 4; ++k) ARROW_RETURN_NOT_OK(values->Append(r + k * 0.5f));
    for (int k = 0; k < 3; ++k) ARROW_RETURN_NOT_OK(fixed_values.Append(r - k));
    ARROW_RETURN_NOT_OK(ts.Append(r * 1000));
  }
  ARROW_ASSIGN_OR_RAISE(auto flat, fixed_values.Finish());
  ARROW_ASSIGN_OR_RAISE(auto fixed, arrow::FixedSizeListArray::FromArrays(flat, 3));
  std::vector<std::shared_ptr<arrow::Array>> columns(8);
  ARROW_RETURN_NOT_OK(i.Finish(&columns[0]));
  ARROW_RETURN_NOT_OK(f.Finish(&columns[1]));
  ARROW_RETURN_NOT_OK(s.Finish(&columns[2]));
  ARROW_RETURN_NOT_OK(b.Finish(&columns[3]));
  ARROW_RETURN_NOT_OK(n.Finish(&columns[4]));
  ARROW_RETURN_NOT_OK(list->Finish(&columns[5]));
  columns[6] = fixed;
  ARROW_RETURN_NOT_OK(ts.Finish(&columns[7]));
  auto schema = arrow::schema(
      {arrow::field("i", arrow::int64()), arrow::field("f", arrow::float64()),
       arrow::field("s", arrow::utf8()), arrow::field("b", arrow::boolean()),
       arrow::field("n", arrow::int32(), /*nullable=*/false), arrow::field("l", columns[5]->type()),
       arrow::field("fl", fixed->type()), arrow::field("ts", columns[7]->type())});
  return arrow::Table::Make(schema, columns);
}

}  // namespace

std::shared_ptr<arrow::Table> SampleTable() {
  static auto* table = new std::shared_ptr<arrow::Table>(MakeSampleTable().ValueOrDie());
  return *table;
}

LoaderOptions SmallLoaderOptions(const std::string& source) {
  LoaderOptions options;
  options.sources = {source};
  options.batch_size = 32;
  options.shuffle = true;
  options.shuffle_window = 64;
  options.num_threads = 2;
  options.prefetch = 2;
  options.output = OutputKind::kArrow;
  return options;
}

EpochRead ReadStream(BatchStream* stream, const arrow::Schema& schema, int64_t batch_size,
                     int64_t max_batches) {
  EpochRead read;
  while (read.batches < max_batches) {
    auto next = stream->Next();
    if (!next.ok()) return read;
    const auto& batch = *next;
    if (batch == nullptr) {
      read.finished = true;
      return read;
    }
    if (batch->num_rows() < 1 || batch->num_rows() > batch_size) {
      Violation("a batch of " + std::to_string(batch->num_rows()) + " rows; batch_size is " +
                std::to_string(batch_size));
    }
    if (!batch->schema()->Equals(schema)) {
      Violation("a batch's schema " + batch->schema()->ToString() + " is not the loader's " +
                schema.ToString());
    }
    if (!batch->ValidateFull().ok())
      Violation("an invalid batch: " + batch->ValidateFull().message());
    read.rows += batch->num_rows();
    ++read.batches;
  }
  return read;
}

EpochRead ReadEpoch(const Loader& loader, int64_t max_batches) {
  auto stream = loader.StartEpoch(0);
  if (!stream.ok()) return {};
  EpochRead read =
      ReadStream(stream->get(), *loader.schema(), loader.options().batch_size, max_batches);
  if (read.finished && read.rows != loader.num_rows()) {
    Violation("an epoch ended after " + std::to_string(read.rows) + " rows; it has " +
              std::to_string(loader.num_rows()));
  }
  return read;
}

}  // namespace stoker::fuzz
