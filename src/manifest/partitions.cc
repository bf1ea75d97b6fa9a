// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/partitions.h"

#include <arrow/util/uri.h>

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "stoker/error.h"

namespace stoker {

namespace {

// One file's partition values as text, by key, in the order its path names them.
using TextValues = std::vector<std::pair<std::string, std::optional<std::string>>>;

// The `key=value` directory names between `root` and the file (URL-decoded; the Hive null
// name as nullopt). Directory names of another form are not partition keys (pyarrow skips
// them too).
arrow::Result<TextValues> ParseHivePath(const std::string& root, const SourceFile& file) {
  TextValues values;
  if (root.empty()) return values;
  const std::string relative = RelativeTo(root, file.path);
  size_t start = 0;
  for (size_t slash = relative.find('/'); slash != std::string::npos;
       start = slash + 1, slash = relative.find('/', start)) {
    const std::string segment = relative.substr(start, slash - start);
    const size_t equals = segment.find('=');
    if (equals == std::string::npos || equals == 0) continue;
    std::string key = arrow::util::UriUnescape(segment.substr(0, equals));
    std::string value = arrow::util::UriUnescape(segment.substr(equals + 1));
    for (const auto& [seen, unused] : values) {
      if (seen == key) {
        return arrow::Status::Invalid("partition key '", key, "' appears twice in the path of '",
                                      file.display, "'");
      }
    }
    values.emplace_back(std::move(key), value == kHiveNullValue
                                            ? std::nullopt
                                            : std::optional<std::string>(std::move(value)));
  }
  return values;
}

// The type pyarrow's hive discovery gives a key: int32 when every non-null value parses as
// one, else string. A key that is null in every file has none: an error naming it.
arrow::Result<std::shared_ptr<arrow::DataType>> InferType(
    const std::string& key, const std::vector<const std::optional<std::string>*>& values,
    const std::string& example) {
  bool any = false, all_int32 = true;
  for (const auto* value : values) {
    if (value == nullptr || !value->has_value()) continue;
    any = true;
    if (all_int32 && !arrow::Scalar::Parse(arrow::int32(), **value).ok()) all_int32 = false;
  }
  if (!any) {
    return arrow::Status::Invalid("partition key '", key, "' is null (", kHiveNullValue,
                                  ") in every file (e.g. '", example,
                                  "'): no type to infer; give it one with partitioning=");
  }
  return all_int32 ? arrow::int32() : arrow::utf8();
}

// `text` as a scalar of `type`, or an error naming the key, the value and the file.
arrow::Result<std::shared_ptr<arrow::Scalar>> ParseValue(const std::shared_ptr<arrow::Field>& field,
                                                         const std::optional<std::string>& text,
                                                         const std::string& where) {
  if (!text.has_value()) return arrow::MakeNullScalar(field->type());
  auto parsed = arrow::Scalar::Parse(field->type(), *text);
  if (!parsed.ok()) {
    return arrow::Status::Invalid("partition value '", *text, "' of '", field->name(),
                                  "' is not a valid ", field->type()->ToString(), " (", where,
                                  "): ", parsed.status().message());
  }
  return parsed;
}

// Values given per source by a table format's log (PartitionOptions::file_values).
arrow::Result<FilePartitions> GivenPartitions(const std::vector<ResolvedSource>& sources,
                                              const PartitionOptions& options) {
  FilePartitions partitions;
  partitions.schema = options.schema;
  for (size_t i = 0; i < sources.size(); ++i) {
    // PartitionOptions::Validate checked the sizes; each source is one file.
    if (sources[i].files.size() != 1) {
      return arrow::Status::Invalid("partitioning: file values are given per file, but source ", i,
                                    " is not one file");
    }
    arrow::ScalarVector row;
    for (int k = 0; k < options.schema->num_fields(); ++k) {
      ARROW_ASSIGN_OR_RAISE(auto value,
                            ParseValue(options.schema->field(k), options.file_values[i][k],
                                       "'" + sources[i].files[0].display + "'"));
      row.push_back(std::move(value));
    }
    partitions.values.push_back(std::move(row));
  }
  return partitions;
}

// Values from the `key=value` directory names of directory sources.
arrow::Result<FilePartitions> HivePartitions(const std::vector<ResolvedSource>& sources,
                                             const PartitionOptions& options) {
  std::vector<TextValues> texts;
  std::vector<const SourceFile*> files;
  std::vector<std::string> keys;  // in the order they first appear
  for (const auto& source : sources) {
    for (const auto& file : source.files) {
      ARROW_ASSIGN_OR_RAISE(auto values, ParseHivePath(source.root, file));
      for (const auto& [key, unused] : values) {
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
      }
      texts.push_back(std::move(values));
      files.push_back(&file);
    }
  }
  FilePartitions partitions;
  if (keys.empty()) return partitions;
  // Keys the schema gives come first, in its order (as pyarrow orders an explicit schema);
  // the others follow in the order they first appear.
  if (options.schema != nullptr) {
    std::stable_sort(keys.begin(), keys.end(), [&](const std::string& a, const std::string& b) {
      const int ia = options.schema->GetFieldIndex(a), ib = options.schema->GetFieldIndex(b);
      return (ia < 0 ? INT_MAX : ia) < (ib < 0 ? INT_MAX : ib);
    });
  }
  // Each key's text per file (null pointer: the file's path does not name the key).
  std::map<std::string, std::vector<const std::optional<std::string>*>> by_key;
  for (const auto& key : keys) by_key[key].assign(texts.size(), nullptr);
  for (size_t i = 0; i < texts.size(); ++i) {
    for (const auto& [key, value] : texts[i]) by_key[key][i] = &value;
  }
  arrow::FieldVector fields;
  for (const auto& key : keys) {
    std::shared_ptr<arrow::Field> given =
        options.schema == nullptr ? nullptr : options.schema->GetFieldByName(key);
    if (given == nullptr) {
      ARROW_ASSIGN_OR_RAISE(auto type, InferType(key, by_key[key], files[0]->display));
      given = arrow::field(key, std::move(type));
    }
    fields.push_back(given->WithNullable(true));
  }
  partitions.schema = arrow::schema(fields);
  const std::optional<std::string> missing;
  for (size_t i = 0; i < texts.size(); ++i) {
    arrow::ScalarVector row;
    for (const auto& field : fields) {
      const auto* text = by_key[field->name()][i];
      ARROW_ASSIGN_OR_RAISE(auto value,
                            ParseValue(field, text == nullptr ? missing : *text,
                                       "directory name in '" + files[i]->display + "'"));
      row.push_back(std::move(value));
    }
    partitions.values.push_back(std::move(row));
  }
  return partitions;
}

}  // namespace

arrow::Result<FilePartitions> ResolvePartitions(const std::vector<ResolvedSource>& sources,
                                                const PartitionOptions& options) {
  if (!options.file_values.empty()) return GivenPartitions(sources, options);
  if (options.hive) return HivePartitions(sources, options);
  return FilePartitions();
}

}  // namespace stoker
