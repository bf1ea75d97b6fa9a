// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "transform/transform_kernels.h"

#include <arrow/builder.h>
#include <arrow/compute/api_scalar.h>
#include <arrow/compute/cast.h>
#include <arrow/util/bitmap_ops.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "stoker/error.h"
#include "util/digest.h"

namespace stoker {

namespace {

arrow::Result<std::shared_ptr<arrow::Array>> CastTo(const arrow::Array& values,
                                                    const std::shared_ptr<arrow::DataType>& type,
                                                    bool safe = true) {
  if (values.type()->Equals(*type)) return arrow::MakeArray(values.data());
  auto options =
      safe ? arrow::compute::CastOptions::Safe(type) : arrow::compute::CastOptions::Unsafe(type);
  return arrow::compute::Cast(values, type, options);
}

bool IsText(const arrow::DataType& type) { return arrow::is_base_binary_like(type.id()); }

// Calls fn(i, bytes, length) for every non-null string of a string/binary array.
template <typename Fn>
void ForEachText(const arrow::Array& ids, Fn fn) {
  switch (ids.type_id()) {
    case arrow::Type::LARGE_STRING:
    case arrow::Type::LARGE_BINARY: {
      const auto& a = static_cast<const arrow::LargeBinaryArray&>(ids);
      for (int64_t i = 0; i < a.length(); ++i) {
        if (a.IsValid(i)) fn(i, a.GetView(i));
      }
      break;
    }
    default: {
      const auto& a = static_cast<const arrow::BinaryArray&>(ids);
      for (int64_t i = 0; i < a.length(); ++i) {
        if (a.IsValid(i)) fn(i, a.GetView(i));
      }
    }
  }
}

// An int64 array with the validity of `like` and values from fill(values).
template <typename Fill>
arrow::Result<std::shared_ptr<arrow::Array>> MakeInt64Like(const arrow::Array& like, Fill fill,
                                                           arrow::MemoryPool* pool) {
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> values,
                        arrow::AllocateBuffer(like.length() * sizeof(int64_t), pool));
  auto* out = reinterpret_cast<int64_t*>(values->mutable_data());
  std::fill(out, out + like.length(), 0);
  fill(out);
  std::shared_ptr<arrow::Buffer> validity;
  if (like.null_count() > 0) {
    ARROW_ASSIGN_OR_RAISE(validity, arrow::internal::CopyBitmap(pool, like.null_bitmap_data(),
                                                                like.offset(), like.length()));
  }
  return arrow::MakeArray(
      arrow::ArrayData::Make(arrow::int64(), like.length(), {validity, values}, like.null_count()));
}

}  // namespace

uint64_t HashBytes(const uint8_t* data, int64_t length) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int64_t i = 0; i < length; ++i) {
    h ^= data[i];
    h *= 0x100000001b3ULL;
  }
  return Mix64(h);
}

uint64_t HashInteger(int64_t value) { return Mix64(static_cast<uint64_t>(value)); }

arrow::Result<std::shared_ptr<arrow::Array>> Bucketize(const arrow::Array& values,
                                                       const std::vector<double>& boundaries,
                                                       arrow::MemoryPool* pool) {
  ARROW_ASSIGN_OR_RAISE(auto doubles, CastTo(values, arrow::float64()));
  const auto& x = static_cast<const arrow::DoubleArray&>(*doubles);
  arrow::Int32Builder builder(pool);
  ARROW_RETURN_NOT_OK(builder.Reserve(x.length()));
  for (int64_t i = 0; i < x.length(); ++i) {
    if (x.IsNull(i)) {
      builder.UnsafeAppendNull();
      continue;
    }
    const auto it = std::upper_bound(boundaries.begin(), boundaries.end(), x.Value(i));
    builder.UnsafeAppend(static_cast<int32_t>(it - boundaries.begin()));
  }
  return builder.Finish();
}

arrow::Result<std::shared_ptr<arrow::Array>> HashIds(const arrow::Array& ids, int64_t num_buckets,
                                                     arrow::MemoryPool* pool) {
  const auto n = static_cast<uint64_t>(num_buckets);
  if (IsText(*ids.type())) {
    return MakeInt64Like(
        ids,
        [&](int64_t* out) {
          ForEachText(ids, [&](int64_t i, std::string_view s) {
            out[i] = static_cast<int64_t>(
                HashBytes(reinterpret_cast<const uint8_t*>(s.data()), s.size()) % n);
          });
        },
        pool);
  }
  ARROW_ASSIGN_OR_RAISE(auto ints, CastTo(ids, arrow::int64(), /*safe=*/false));
  const auto& x = static_cast<const arrow::Int64Array&>(*ints);
  return MakeInt64Like(
      ids,
      [&](int64_t* out) {
        for (int64_t i = 0; i < x.length(); ++i) {
          out[i] = static_cast<int64_t>(HashInteger(x.Value(i)) % n);
        }
      },
      pool);
}

arrow::Result<std::shared_ptr<Vocabulary>> LoadVocabulary(const std::string& path,
                                                          bool integer_keys) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("vocabulary file '", path, "' cannot be opened");
  std::stringstream content;
  content << in.rdbuf();
  const std::string text = content.str();
  auto vocabulary = std::make_shared<Vocabulary>();
  vocabulary->integer_keys = integer_keys;
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

arrow::Result<std::shared_ptr<arrow::Array>> LookupVocabulary(const arrow::Array& ids,
                                                              const Vocabulary& vocabulary,
                                                              int64_t default_id,
                                                              arrow::MemoryPool* pool) {
  if (IsText(*ids.type())) {
    return MakeInt64Like(
        ids,
        [&](int64_t* out) {
          ForEachText(ids, [&](int64_t i, std::string_view s) {
            const auto it = vocabulary.by_text.find(std::string(s));
            out[i] = it == vocabulary.by_text.end() ? default_id : it->second;
          });
        },
        pool);
  }
  ARROW_ASSIGN_OR_RAISE(auto ints, CastTo(ids, arrow::int64(), /*safe=*/false));
  const auto& x = static_cast<const arrow::Int64Array&>(*ints);
  return MakeInt64Like(
      ids,
      [&](int64_t* out) {
        for (int64_t i = 0; i < x.length(); ++i) {
          const auto it = vocabulary.by_integer.find(x.Value(i));
          out[i] = it == vocabulary.by_integer.end() ? default_id : it->second;
        }
      },
      pool);
}

arrow::Result<std::shared_ptr<arrow::Array>> Stack(const arrow::ArrayVector& columns,
                                                   arrow::MemoryPool* pool) {
  const auto& type = columns[0]->type();
  const int64_t width = type->byte_width();
  const int64_t rows = columns[0]->length();
  const auto k = static_cast<int64_t>(columns.size());
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> values,
                        arrow::AllocateBuffer(rows * k * width, pool));
  std::shared_ptr<arrow::Buffer> validity;
  int64_t nulls = 0;
  for (const auto& column : columns) nulls += column->null_count();
  if (nulls > 0) {
    ARROW_ASSIGN_OR_RAISE(validity, arrow::AllocateBitmap(rows * k, pool));
    std::memset(validity->mutable_data(), 0xff, validity->size());
  }
  for (int64_t j = 0; j < k; ++j) {
    const auto& data = *columns[j]->data();
    const uint8_t* src = data.buffers[1]->data() + data.offset * width;
    uint8_t* dst = values->mutable_data() + j * width;
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(dst + i * k * width, src + i * width, width);
    }
    if (columns[j]->null_count() > 0) {
      for (int64_t i = 0; i < rows; ++i) {
        if (columns[j]->IsNull(i)) arrow::bit_util::ClearBit(validity->mutable_data(), i * k + j);
      }
    }
  }
  auto child = arrow::ArrayData::Make(type, rows * k, {validity, values},
                                      nulls > 0 ? arrow::kUnknownNullCount : 0);
  return arrow::MakeArray(arrow::ArrayData::Make(arrow::fixed_size_list(type, static_cast<int>(k)),
                                                 rows, {nullptr}, {child}, 0));
}

arrow::Result<std::pair<std::shared_ptr<arrow::Array>, std::shared_ptr<arrow::Array>>> PadLists(
    const arrow::Array& lists, int64_t length, double pad, arrow::MemoryPool* pool) {
  const bool large = lists.type_id() == arrow::Type::LARGE_LIST;
  const auto& value_type = lists.type()->field(0)->type();
  const int64_t width = value_type->byte_width();
  const int64_t rows = lists.length();
  std::shared_ptr<arrow::Array> flat =
      large ? static_cast<const arrow::LargeListArray&>(lists).values()
            : static_cast<const arrow::ListArray&>(lists).values();
  auto offset_of = [&](int64_t i) -> int64_t {
    return large ? static_cast<const arrow::LargeListArray&>(lists).value_offset(i)
                 : static_cast<const arrow::ListArray&>(lists).value_offset(i);
  };
  // The pad value, in the list's value type, as bytes.
  ARROW_ASSIGN_OR_RAISE(auto pad_double,
                        arrow::MakeArrayFromScalar(arrow::DoubleScalar(pad), 1, pool));
  ARROW_ASSIGN_OR_RAISE(auto pad_array, CastTo(*pad_double, value_type));
  const uint8_t* pad_bytes = pad_array->data()->buffers[1]->data();

  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> values,
                        arrow::AllocateBuffer(rows * length * width, pool));
  std::shared_ptr<arrow::Buffer> validity;
  if (flat->null_count() > 0) {
    ARROW_ASSIGN_OR_RAISE(validity, arrow::AllocateBitmap(rows * length, pool));
    std::memset(validity->mutable_data(), 0xff, validity->size());
  }
  arrow::Int32Builder lengths(pool);
  ARROW_RETURN_NOT_OK(lengths.Reserve(rows));
  const uint8_t* src = flat->data()->buffers[1]->data() + flat->offset() * width;
  uint8_t* dst = values->mutable_data();
  for (int64_t i = 0; i < rows; ++i) {
    int64_t n = 0;
    if (lists.IsValid(i)) {
      const int64_t begin = offset_of(i);
      n = std::min(offset_of(i + 1) - begin, length);
      std::memcpy(dst + i * length * width, src + begin * width, n * width);
      if (validity != nullptr) {
        for (int64_t j = 0; j < n; ++j) {
          if (flat->IsNull(begin + j)) {
            arrow::bit_util::ClearBit(validity->mutable_data(), i * length + j);
          }
        }
      }
    }
    for (int64_t j = n; j < length; ++j) {
      std::memcpy(dst + (i * length + j) * width, pad_bytes, width);
    }
    lengths.UnsafeAppend(static_cast<int32_t>(n));
  }
  auto child = arrow::ArrayData::Make(value_type, rows * length, {validity, values},
                                      validity != nullptr ? arrow::kUnknownNullCount : 0);
  auto padded = arrow::MakeArray(arrow::ArrayData::Make(
      arrow::fixed_size_list(value_type, static_cast<int>(length)), rows, {nullptr}, {child}, 0));
  ARROW_ASSIGN_OR_RAISE(auto counts, lengths.Finish());
  return std::make_pair(padded, counts);
}

}  // namespace stoker
