// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/summary_skim.h"

#include <arrow/util/endian.h>

#include <cstring>

namespace stoker {

namespace {

using thrift::CompactReader;
using thrift::CompactWriter;
using thrift::Type;

// FileMetaData's field ids (parquet.thrift).
constexpr int16_t kNumRows = 3;
constexpr int16_t kRowGroups = 4;
constexpr int16_t kKeyValueMetadata = 5;
constexpr int16_t kEncryptionAlgorithm = 8;

arrow::Status ExpectType(Type got, Type expected, const char* field) {
  if (got == expected) return arrow::Status::OK();
  return arrow::Status::Invalid("malformed Thrift metadata: field ", field, " has type ",
                                static_cast<int>(got), ", not ", static_cast<int>(expected));
}

// Walks the fields of a struct up to its stop: `visit(id, type)` reads the value of a field
// it wants and returns true; a field it returns false for is skipped.
template <typename Visit>
arrow::Status ForEachField(CompactReader* reader, Visit visit) {
  int16_t last_id = 0, id;
  Type type;
  while (true) {
    ARROW_RETURN_NOT_OK(reader->ReadFieldHeader(&last_id, &id, &type));
    if (type == Type::kStop) return arrow::Status::OK();
    ARROW_ASSIGN_OR_RAISE(const bool read, visit(id, type));
    if (!read) ARROW_RETURN_NOT_OK(reader->Skip(type));
  }
}

// A ColumnChunk: its file_path (field 1), the rest skipped.
arrow::Status SkimColumnChunk(CompactReader* reader, std::string_view* file_path) {
  return ForEachField(reader, [&](int16_t id, Type type) -> arrow::Result<bool> {
    if (id != 1 || type != Type::kBinary) return false;
    ARROW_RETURN_NOT_OK(reader->ReadBinary(file_path));
    return true;
  });
}

// A RowGroup: its columns (field 1: count, and the first one's file_path) and num_rows
// (field 3), the rest skipped.
arrow::Status SkimRowGroup(CompactReader* reader, SummarySkim::RowGroup* row_group) {
  const int64_t begin = reader->position();
  ARROW_RETURN_NOT_OK(ForEachField(reader, [&](int16_t id, Type type) -> arrow::Result<bool> {
    if (id == 3 && type == Type::kI64) {
      ARROW_RETURN_NOT_OK(reader->ReadInt(&row_group->num_rows));
      return true;
    }
    if (id != 1 || type != Type::kList) return false;
    int64_t columns;
    Type element;
    ARROW_RETURN_NOT_OK(reader->ReadListHeader(&columns, &element));
    ARROW_RETURN_NOT_OK(ExpectType(element, Type::kStruct, "RowGroup.columns"));
    if (columns > INT32_MAX) return arrow::Status::Invalid("malformed Thrift metadata");
    row_group->num_columns = static_cast<int32_t>(columns);
    for (int64_t c = 0; c < columns; ++c) {
      if (c == 0) {
        ARROW_RETURN_NOT_OK(SkimColumnChunk(reader, &row_group->file_path));
      } else {
        ARROW_RETURN_NOT_OK(reader->Skip(Type::kStruct));
      }
    }
    return true;
  }));
  row_group->bytes = reader->Since(begin);
  return arrow::Status::OK();
}

arrow::Status SkimKeyValue(CompactReader* reader, SummarySkim::KeyValue* key_value) {
  const int64_t begin = reader->position();
  ARROW_RETURN_NOT_OK(ForEachField(reader, [&](int16_t id, Type type) -> arrow::Result<bool> {
    if ((id != 1 && id != 2) || type != Type::kBinary) return false;
    ARROW_RETURN_NOT_OK(reader->ReadBinary(id == 1 ? &key_value->key : &key_value->value));
    return true;
  }));
  key_value->bytes = reader->Since(begin);
  return arrow::Status::OK();
}

// A list of structs, each walked by `skim` into a new element of `out`.
template <typename T, typename Skim>
arrow::Status SkimStructList(CompactReader* reader, const char* field, std::vector<T>* out,
                             Skim skim) {
  int64_t size;
  Type element;
  ARROW_RETURN_NOT_OK(reader->ReadListHeader(&size, &element));
  ARROW_RETURN_NOT_OK(ExpectType(element, Type::kStruct, field));
  out->resize(static_cast<size_t>(size));
  for (auto& item : *out) ARROW_RETURN_NOT_OK(skim(reader, &item));
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<SummarySkim> SkimFileMetaData(std::string_view thrift) {
  SummarySkim skim;
  CompactReader reader(thrift);
  ARROW_RETURN_NOT_OK(ForEachField(&reader, [&](int16_t id, Type type) -> arrow::Result<bool> {
    if (id == kNumRows) {  // each file's is the sum of its row groups'
      int64_t ignored;
      ARROW_RETURN_NOT_OK(ExpectType(type, Type::kI64, "FileMetaData.num_rows"));
      ARROW_RETURN_NOT_OK(reader.ReadInt(&ignored));
    } else if (id == kRowGroups) {
      ARROW_RETURN_NOT_OK(ExpectType(type, Type::kList, "FileMetaData.row_groups"));
      ARROW_RETURN_NOT_OK(
          SkimStructList(&reader, "FileMetaData.row_groups", &skim.row_groups, SkimRowGroup));
    } else if (id == kKeyValueMetadata) {
      ARROW_RETURN_NOT_OK(ExpectType(type, Type::kList, "FileMetaData.key_value_metadata"));
      ARROW_RETURN_NOT_OK(SkimStructList(&reader, "FileMetaData.key_value_metadata",
                                         &skim.key_values, SkimKeyValue));
    } else if (id == kEncryptionAlgorithm) {
      return arrow::Status::IOError("Parquet modular encryption is not supported");
    } else {
      const int64_t begin = reader.position();
      ARROW_RETURN_NOT_OK(reader.Skip(type));
      skim.fields.push_back({id, type, reader.Since(begin)});
    }
    return true;
  }));
  return skim;
}

std::string CutFooter(const SummarySkim& skim, const std::vector<int>& row_groups,
                      std::string_view drop_prefix) {
  auto kept_key = [drop_prefix](std::string_view key) {
    return key.substr(0, drop_prefix.size()) != drop_prefix;
  };
  CompactWriter writer;
  auto write_fields = [&](int from, int to) {  // ids in [from, to)
    for (const auto& field : skim.fields) {
      if (field.id < from || field.id >= to) continue;
      writer.FieldHeader(field.id, field.type);
      writer.Raw(field.value);
    }
  };
  write_fields(INT16_MIN, kNumRows);
  int64_t num_rows = 0;
  for (int rg : row_groups) num_rows += skim.row_groups[rg].num_rows;
  writer.FieldHeader(kNumRows, Type::kI64);
  writer.Int(num_rows);
  writer.FieldHeader(kRowGroups, Type::kList);
  writer.ListHeader(static_cast<int64_t>(row_groups.size()), Type::kStruct);
  for (int rg : row_groups) writer.Raw(skim.row_groups[rg].bytes);
  int64_t kept = 0;
  for (const auto& kv : skim.key_values) kept += kept_key(kv.key);
  if (kept > 0) {
    writer.FieldHeader(kKeyValueMetadata, Type::kList);
    writer.ListHeader(kept, Type::kStruct);
    for (const auto& kv : skim.key_values) {
      if (kept_key(kv.key)) writer.Raw(kv.bytes);
    }
  }
  write_fields(kKeyValueMetadata + 1, INT16_MAX + 1);
  writer.Stop();
  return std::move(writer).Finish();
}

arrow::Status CheckCut(const parquet::FileMetaData& decoded,
                       const std::vector<int64_t>& skimmed_rows) {
  bool same = decoded.num_row_groups() == static_cast<int>(skimmed_rows.size());
  for (int rg = 0; same && rg < decoded.num_row_groups(); ++rg) {
    same = decoded.RowGroup(rg)->num_rows() == skimmed_rows[rg];
  }
  if (same) return arrow::Status::OK();
  return arrow::Status::Invalid(
      "its row groups do not read the same whole and cut apart (malformed Thrift metadata); "
      "rewrite it with `stoker index --overwrite`, or pass index=\"ignore\"");
}

arrow::Result<std::string_view> FooterBytes(std::string_view file) {
  constexpr size_t kMagic = 4, kLength = 4;
  if (file.size() < 2 * kMagic + kLength || file.substr(0, kMagic) != "PAR1") {
    return arrow::Status::Invalid("not a Parquet file (no PAR1 magic bytes)");
  }
  const std::string_view tail = file.substr(file.size() - kMagic);
  if (tail == "PARE") return arrow::Status::IOError("Parquet modular encryption is not supported");
  if (tail != "PAR1") return arrow::Status::Invalid("not a Parquet file (no PAR1 at its end)");
  uint32_t length;
  std::memcpy(&length, file.data() + file.size() - kMagic - kLength, sizeof(length));
  length = arrow::bit_util::FromLittleEndian(length);
  if (length > file.size() - 2 * kMagic - kLength) {
    return arrow::Status::Invalid("the footer length (", length, ") exceeds the file");
  }
  return file.substr(file.size() - kMagic - kLength - length, length);
}

}  // namespace stoker
