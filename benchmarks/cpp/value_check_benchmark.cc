// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The cost of checking a decoded unit's values (decode/value_check.h: strings valid UTF-8,
// the rest as ValidateFull) beside decoding it, on a dataset written in memory: per row
// group, the Parquet decode Stoker does (one thread, the same reader properties) and then the
// check. `strings`: string-heavy rows; `numbers`: criteo-like rows (a label, 13 float32
// features with nulls, 26 int64 ids). Prints the best of --repeats passes over all row
// groups, which holds up on a busy machine.
//
//   value_check_benchmark [--data strings|numbers] [--rows N] [--row-group ROWS] [--repeats N]
#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <string>

#include "decode/value_check.h"

namespace stoker {
namespace {

using Clock = std::chrono::steady_clock;

// id, and four string columns: short ASCII names, longer text with two- and three-byte
// characters, a list of 0-4 ASCII tags, and a low-cardinality category (dictionary-encoded in
// the file, decoded to plain strings).
arrow::Result<std::shared_ptr<arrow::Table>> StringHeavyTable(int64_t rows) {
  arrow::Int64Builder id;
  arrow::StringBuilder name, text, category;
  arrow::ListBuilder tags(arrow::default_memory_pool(), std::make_shared<arrow::StringBuilder>());
  auto* tag = static_cast<arrow::StringBuilder*>(tags.value_builder());
  const std::string accents = "caf\xc3\xa9 na\xc3\xafve \xe2\x82\xac ";  // café naïve €
  char buffer[64];
  for (int64_t r = 0; r < rows; ++r) {
    ARROW_RETURN_NOT_OK(id.Append(r));
    std::snprintf(buffer, sizeof buffer, "user_%08lld", static_cast<long long>(r));
    ARROW_RETURN_NOT_OK(name.Append(buffer));
    std::string line = accents;
    line += buffer;
    line += " ";
    line += accents;
    line += std::to_string(r * 7919 % 100003);
    ARROW_RETURN_NOT_OK(text.Append(line));
    ARROW_RETURN_NOT_OK(tags.Append());
    for (int64_t k = 0; k < r % 5; ++k) {
      std::snprintf(buffer, sizeof buffer, "tag%lld", static_cast<long long>((r + k) % 997));
      ARROW_RETURN_NOT_OK(tag->Append(buffer));
    }
    std::snprintf(buffer, sizeof buffer, "category-%lld", static_cast<long long>(r % 50));
    ARROW_RETURN_NOT_OK(category.Append(buffer));
  }
  std::vector<std::shared_ptr<arrow::Array>> columns(5);
  ARROW_RETURN_NOT_OK(id.Finish(&columns[0]));
  ARROW_RETURN_NOT_OK(name.Finish(&columns[1]));
  ARROW_RETURN_NOT_OK(text.Finish(&columns[2]));
  ARROW_RETURN_NOT_OK(tags.Finish(&columns[3]));
  ARROW_RETURN_NOT_OK(category.Finish(&columns[4]));
  auto schema = arrow::schema(
      {arrow::field("id", arrow::int64()), arrow::field("name", arrow::utf8()),
       arrow::field("text", arrow::utf8()), arrow::field("tags", arrow::list(arrow::utf8())),
       arrow::field("category", arrow::utf8())});
  return arrow::Table::Make(schema, columns);
}

// A label (float32), f1-f13 (float32, every 10th null), c1-c26 (int64).
arrow::Result<std::shared_ptr<arrow::Table>> NumbersTable(int64_t rows) {
  arrow::FieldVector fields{arrow::field("label", arrow::float32())};
  std::vector<std::shared_ptr<arrow::Array>> columns;
  arrow::FloatBuilder label;
  for (int64_t r = 0; r < rows; ++r) ARROW_RETURN_NOT_OK(label.Append(r % 2));
  columns.push_back(nullptr);
  ARROW_RETURN_NOT_OK(label.Finish(&columns.back()));
  for (int f = 1; f <= 13; ++f) {
    arrow::FloatBuilder feature;
    for (int64_t r = 0; r < rows; ++r) {
      ARROW_RETURN_NOT_OK((r + f) % 10 == 0 ? feature.AppendNull()
                                            : feature.Append(static_cast<float>(r % 1000) / f));
    }
    fields.push_back(arrow::field("f" + std::to_string(f), arrow::float32()));
    columns.push_back(nullptr);
    ARROW_RETURN_NOT_OK(feature.Finish(&columns.back()));
  }
  for (int c = 1; c <= 26; ++c) {
    arrow::Int64Builder id;
    for (int64_t r = 0; r < rows; ++r) ARROW_RETURN_NOT_OK(id.Append(r * 7919 % (1000 * c)));
    fields.push_back(arrow::field("c" + std::to_string(c), arrow::int64()));
    columns.push_back(nullptr);
    ARROW_RETURN_NOT_OK(id.Finish(&columns.back()));
  }
  return arrow::Table::Make(arrow::schema(fields), columns);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> WriteParquet(const arrow::Table& table,
                                                           int64_t row_group) {
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create());
  auto properties =
      parquet::WriterProperties::Builder().compression(parquet::Compression::SNAPPY)->build();
  ARROW_RETURN_NOT_OK(
      parquet::arrow::WriteTable(table, arrow::default_memory_pool(), sink, row_group, properties));
  return sink->Finish();
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The bytes of the strings in `data`, at any depth (what the check reads).
int64_t StringBytes(const arrow::ArrayData& data) {
  if (data.type->id() == arrow::Type::STRING) {
    const auto* offsets = data.GetValues<int32_t>(1);
    return offsets[data.length] - offsets[0];
  }
  int64_t bytes = 0;
  for (const auto& child : data.child_data) bytes += StringBytes(*child);
  return bytes;
}

struct Pass {
  double decode_s = 0;
  double check_s = 0;
  int64_t string_bytes = 0;
};

arrow::Result<Pass> DecodeAndCheck(const std::shared_ptr<arrow::Buffer>& file) {
  Pass pass;
  parquet::ArrowReaderProperties properties;
  properties.set_use_threads(false);  // as the unit reader: one unit per worker thread
  ARROW_ASSIGN_OR_RAISE(
      auto reader,
      parquet::arrow::FileReader::Make(
          arrow::default_memory_pool(),
          parquet::ParquetFileReader::Open(std::make_shared<arrow::io::BufferReader>(file)),
          properties));
  for (int g = 0; g < reader->num_row_groups(); ++g) {
    const auto start = Clock::now();
    ARROW_ASSIGN_OR_RAISE(auto table, reader->ReadRowGroup(g));
    ARROW_ASSIGN_OR_RAISE(auto batch, table->CombineChunksToBatch());
    const auto decoded = Clock::now();
    ARROW_RETURN_NOT_OK(CheckValues(*batch));
    const auto checked = Clock::now();
    pass.decode_s += Seconds(decoded - start);
    pass.check_s += Seconds(checked - decoded);
    for (const auto& column : batch->column_data()) pass.string_bytes += StringBytes(*column);
  }
  return pass;
}

arrow::Status Run(const std::string& data, int64_t rows, int64_t row_group, int repeats) {
  if (data != "strings" && data != "numbers") {
    return arrow::Status::Invalid("--data must be strings or numbers, got ", data);
  }
  ARROW_ASSIGN_OR_RAISE(auto table,
                        data == "strings" ? StringHeavyTable(rows) : NumbersTable(rows));
  ARROW_ASSIGN_OR_RAISE(auto file, WriteParquet(*table, row_group));
  Pass best{std::numeric_limits<double>::max(), std::numeric_limits<double>::max(), 0};
  for (int i = 0; i < repeats; ++i) {
    ARROW_ASSIGN_OR_RAISE(auto pass, DecodeAndCheck(file));
    best.decode_s = std::min(best.decode_s, pass.decode_s);
    best.check_s = std::min(best.check_s, pass.check_s);
    best.string_bytes = pass.string_bytes;
  }
  std::printf("%s: %lld rows in row groups of %lld; %.1f MB of strings, file %.1f MB (snappy)\n",
              data.c_str(), static_cast<long long>(rows), static_cast<long long>(row_group),
              best.string_bytes / 1e6, file->size() / 1e6);
  std::printf("decode     %8.2f ms  (%.0f ns/row)\n", best.decode_s * 1e3,
              best.decode_s * 1e9 / rows);
  std::printf("check      %8.2f ms  (%.1f ns/row)\n", best.check_s * 1e3,
              best.check_s * 1e9 / rows);
  std::printf("check / decode: %.1f%%  (best of %d passes each)\n",
              100 * best.check_s / best.decode_s, repeats);
  return arrow::Status::OK();
}

}  // namespace
}  // namespace stoker

int main(int argc, char** argv) {
  std::string data = "strings";
  int64_t rows = 1'000'000;
  int64_t row_group = 65'536;
  int repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--data") == 0) {
      data = argv[i + 1];
    } else if (std::strcmp(argv[i], "--rows") == 0) {
      rows = std::stoll(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--row-group") == 0) {
      row_group = std::stoll(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--repeats") == 0) {
      repeats = std::stoi(argv[i + 1]);
    } else {
      std::cerr << "unknown option " << argv[i] << "\n";
      return 2;
    }
  }
  const auto status = stoker::Run(data, rows, row_group, repeats);
  if (!status.ok()) {
    std::cerr << status.ToString() << "\n";
    return 1;
  }
  return 0;
}
