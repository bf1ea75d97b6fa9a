// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// output="torchrec": a batch as the parts of TorchRec's KeyedJaggedTensor (key-major values,
// int32 lengths of keys x B, host-side length_per_key / offset_per_key, optional weights),
// the dense features [B, n] and the labels, as torch tensors (python/stoker/torchrec.py
// wraps them). The engine gathers the ragged columns' values key-major into one allocation
// (assemble/list_gather.h), so a batch of its own is taken without a copy; any other batch
// (a served one, a mixture's, other dtypes, one-hot keys) is copied here once.

#include <arrow/buffer.h>
#include <arrow/type_traits.h>
#include <arrow/util/bit_util.h>
#include <arrow/util/float16.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "assemble/column_types.h"
#include "python/binding.h"

namespace stoker::python {

namespace {

// The batch's column `name`, or an error naming the option and the batch's columns.
arrow::Result<const arrow::ArrayData*> Column(const arrow::RecordBatch& batch,
                                              const std::string& name, const char* role) {
  const int i = batch.schema()->GetFieldIndex(name);
  if (i >= 0) return batch.column_data(i).get();
  std::string names;
  for (const auto& field : batch.schema()->fields()) {
    names += (names.empty() ? "" : ", ") + field->name();
  }
  return arrow::Status::KeyError("torchrec ", role, " '", name,
                                 "' is not a column of the batch (its columns: ", names, ")");
}

bool IsList(const arrow::ArrayData& data) {
  return data.type->id() == arrow::Type::LIST || data.type->id() == arrow::Type::LARGE_LIST;
}

// Offset of list row i (the array's offset applied).
int64_t OffsetAt(const arrow::ArrayData& data, int64_t i) {
  return data.type->id() == arrow::Type::LARGE_LIST ? data.GetValues<int64_t>(1)[i]
                                                    : data.GetValues<int32_t>(1)[i];
}

bool IsNullAt(const arrow::ArrayData& data, int64_t i) {
  return data.GetNullCount() > 0 && data.buffers[0] != nullptr &&
         !arrow::bit_util::GetBit(data.buffers[0]->data(), data.offset + i);
}

// One key's values as the KJT sees them: a list column (lengths from its offsets, a null
// list empty) or a one-hot scalar column (every length 1).
struct KeyColumn {
  const arrow::ArrayData* data = nullptr;
  const arrow::ArrayData* values = nullptr;  // the list's child, or the scalar column
  bool list = false;
  int64_t total = 0;  // values in the batch
};

arrow::Result<KeyColumn> KeyOf(const arrow::RecordBatch& batch, const std::string& name,
                               const char* role, bool numbers_of_any_kind) {
  ARROW_ASSIGN_OR_RAISE(const arrow::ArrayData* data, Column(batch, name, role));
  KeyColumn key;
  key.data = data;
  key.list = IsList(*data);
  key.values = key.list ? data->child_data[0].get() : data;
  const auto id = key.values->type->id();
  const bool ok = numbers_of_any_kind ? (arrow::is_integer(id) || arrow::is_floating(id))
                                      : arrow::is_integer(id);
  if (!ok) {
    return arrow::Status::TypeError(
        "torchrec ", role, " '", name, "' has type ", data->type->ToString(), ": a ", role,
        " is a list of ", numbers_of_any_kind ? "numbers" : "integer ids",
        (numbers_of_any_kind ? "" : " or an integer column (one id a row)"),
        " (a nested list needs flattening first)");
  }
  if (key.values->GetNullCount() > 0) {
    return arrow::Status::Invalid("torchrec ", role, " '", name,
                                  "' holds null values inside its lists (or null ids): fill "
                                  "them (fill_null) or filter those rows out");
  }
  if (!key.list && data->GetNullCount() > 0) {
    return arrow::Status::Invalid("torchrec ", role, " '", name,
                                  "' has null ids: fill them (fill_null) or filter those rows");
  }
  if (key.list) {
    const int64_t n = data->length;
    key.total = OffsetAt(*data, n) - OffsetAt(*data, 0);
    if (data->GetNullCount() > 0) {  // a null list's slot may still span values: not counted
      for (int64_t i = 0; i < n; ++i) {
        if (IsNullAt(*data, i)) key.total -= OffsetAt(*data, i + 1) - OffsetAt(*data, i);
      }
    }
  } else {
    key.total = data->length;
  }
  return key;
}

int64_t LengthAt(const KeyColumn& key, int64_t i) {
  if (!key.list) return 1;
  if (IsNullAt(*key.data, i)) return 0;
  return OffsetAt(*key.data, i + 1) - OffsetAt(*key.data, i);
}

// The address of value `v` of a key's values (its offset applied).
const uint8_t* ValueAddress(const KeyColumn& key, int64_t v) {
  const arrow::ArrayData& values = *key.values;
  return values.buffers[1]->data() + (values.offset + v) * values.type->byte_width();
}

// When every key's values lie back to back, in key order, in one buffer of `type` (what
// the engine's own batches hold): that buffer, and where the first key's values start.
std::shared_ptr<arrow::Buffer> SharedValues(const std::vector<KeyColumn>& keys,
                                            const arrow::DataType& type, const uint8_t** first) {
  const std::shared_ptr<arrow::Buffer>* owner = nullptr;
  const uint8_t* next = nullptr;
  for (const KeyColumn& key : keys) {
    if (!key.list || !key.values->type->Equals(type)) return nullptr;
    if (key.data->GetNullCount() > 0) {
      // A null list that spans values would put them in the tensor.
      for (int64_t i = 0; i < key.data->length; ++i) {
        if (IsNullAt(*key.data, i) && OffsetAt(*key.data, i + 1) != OffsetAt(*key.data, i)) {
          return nullptr;
        }
      }
    }
    const auto& buffer = key.values->buffers[1];
    if (key.total == 0 || buffer == nullptr || buffer->parent() == nullptr) return nullptr;
    if (owner != nullptr && (*owner)->parent() != buffer->parent()) return nullptr;
    const uint8_t* start = ValueAddress(key, OffsetAt(*key.data, 0));
    if (next != nullptr && start != next) return nullptr;
    if (owner == nullptr) *first = start;
    owner = &buffer;
    next = start + key.total * type.byte_width();
  }
  return owner == nullptr ? nullptr : (*owner)->parent();
}

// Copies `count` numbers of `from` at `src` into `dst` as `To`; an error naming `what` when a
// value does not fit (never a silent wrap).
template <typename To, typename From>
arrow::Status Convert(const From* src, int64_t count, To* dst, const std::string& what) {
  for (int64_t i = 0; i < count; ++i) {
    const From v = src[i];
    if constexpr (std::is_integral_v<To> && std::is_integral_v<From>) {
      if (!std::in_range<To>(v)) {
        return arrow::Status::Invalid(what, ": id ", +v, " does not fit the torchrec values' ",
                                      sizeof(To) == 4 ? "int32" : "int64",
                                      sizeof(To) == 4 ? "; pass values_dtype=\"int64\"" : "");
      }
    }
    dst[i] = static_cast<To>(v);
  }
  return arrow::Status::OK();
}

template <typename To>
arrow::Status ConvertAny(const arrow::ArrayData& values, int64_t first, int64_t count, To* dst,
                         const std::string& what) {
  if (count == 0) return arrow::Status::OK();  // an empty array may have no values buffer
  const uint8_t* src =
      values.buffers[1]->data() + (values.offset + first) * values.type->byte_width();
  switch (values.type->id()) {
#define STOKER_CASE(ID, T) \
  case arrow::Type::ID:    \
    return Convert<To>(reinterpret_cast<const T*>(src), count, dst, what);
    STOKER_CASE(INT8, int8_t)
    STOKER_CASE(INT16, int16_t)
    STOKER_CASE(INT32, int32_t)
    STOKER_CASE(INT64, int64_t)
    STOKER_CASE(UINT8, uint8_t)
    STOKER_CASE(UINT16, uint16_t)
    STOKER_CASE(UINT32, uint32_t)
    STOKER_CASE(UINT64, uint64_t)
    STOKER_CASE(FLOAT, float)
    STOKER_CASE(DOUBLE, double)
#undef STOKER_CASE
    case arrow::Type::HALF_FLOAT:
      if constexpr (std::is_floating_point_v<To>) {
        const auto* half = reinterpret_cast<const uint16_t*>(src);
        for (int64_t i = 0; i < count; ++i) {
          dst[i] = static_cast<To>(arrow::util::Float16::FromBits(half[i]).ToFloat());
        }
        return arrow::Status::OK();
      }
      [[fallthrough]];
    default:
      return arrow::Status::TypeError(what, ": values of type ", values.type->ToString(),
                                      " cannot be converted");
  }
}

// Every key's values, key-major, copied into one new buffer of `To` (null lists skipped;
// keys without weights filled with 1 when `fill_missing`).
template <typename To>
arrow::Result<std::shared_ptr<arrow::Buffer>> CopyValues(
    const std::vector<const KeyColumn*>& keys, const std::vector<const KeyColumn*>& length_of,
    const std::vector<std::string>& names, arrow::MemoryPool* pool) {
  int64_t total = 0;
  for (const KeyColumn* key : length_of) total += key->total;
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> out,
                        arrow::AllocateBuffer(total * sizeof(To), pool));
  To* dst = reinterpret_cast<To*>(out->mutable_data());
  for (size_t k = 0; k < keys.size(); ++k) {
    const KeyColumn* key = keys[k];
    if (key == nullptr) {  // an unweighted key among weighted ones: weight 1
      std::fill(dst, dst + length_of[k]->total, To{1});
      dst += length_of[k]->total;
      continue;
    }
    const std::string what = "torchrec column '" + names[k] + "'";
    if (!key->list) {
      ARROW_RETURN_NOT_OK(ConvertAny<To>(*key->values, 0, key->data->length, dst, what));
      dst += key->data->length;
      continue;
    }
    const int64_t n = key->data->length;
    if (key->data->GetNullCount() == 0) {
      const int64_t first = OffsetAt(*key->data, 0);
      ARROW_RETURN_NOT_OK(ConvertAny<To>(*key->values, first, key->total, dst, what));
      dst += key->total;
      continue;
    }
    for (int64_t i = 0; i < n; ++i) {
      if (IsNullAt(*key->data, i)) continue;
      const int64_t first = OffsetAt(*key->data, i);
      const int64_t count = OffsetAt(*key->data, i + 1) - first;
      ARROW_RETURN_NOT_OK(ConvertAny<To>(*key->values, first, count, dst, what));
      dst += count;
    }
  }
  return out;
}

// A float32 [B, width] tensor's buffer from scalar (or fixed-size-list) number columns,
// row-major; a single float32 column (or fixed_size_list<float32>) without nulls is
// taken as it is.
struct Matrix {
  std::shared_ptr<arrow::Buffer> owner;
  const uint8_t* data = nullptr;
  int64_t width = 0;
};

arrow::Result<Matrix> FloatMatrix(const arrow::RecordBatch& batch,
                                  const std::vector<std::string>& names, const char* role,
                                  arrow::MemoryPool* pool) {
  const int64_t n = batch.num_rows();
  std::vector<const arrow::ArrayData*> columns;
  std::vector<int64_t> widths;
  Matrix m;
  for (const std::string& name : names) {
    ARROW_ASSIGN_OR_RAISE(const arrow::ArrayData* data, Column(batch, name, role));
    auto layout = GetFixedWidthLayout(*data->type);
    if (!layout.ok()) {
      return arrow::Status::TypeError("torchrec ", role, " column '", name, "' has type ",
                                      data->type->ToString(),
                                      ": it must hold numbers (or fixed-size lists of them)");
    }
    if (HasNulls(*data)) {
      return arrow::Status::Invalid("torchrec ", role, " column '", name,
                                    "' has null values: fill them (fill_null) first");
    }
    columns.push_back(data);
    widths.push_back(layout->values_per_row);
    m.width += layout->values_per_row;
  }
  if (columns.size() == 1) {
    auto layout = *GetFixedWidthLayout(*columns[0]->type);
    if (layout.value_type->id() == arrow::Type::FLOAT) {
      auto values = GetFixedWidthValues(*columns[0]);
      m.owner = values.buffer;
      m.data = values.first;
      return m;
    }
  }
  ARROW_ASSIGN_OR_RAISE(m.owner, arrow::AllocateBuffer(n * m.width * sizeof(float), pool));
  auto* out = reinterpret_cast<float*>(m.owner->mutable_data());
  std::vector<float> row;
  int64_t column_start = 0;
  for (size_t c = 0; c < columns.size(); ++c) {
    // Converted a column at a time into a scratch run, then scattered into its place.
    const int64_t w = widths[c];
    row.resize(n * w);
    auto values = GetFixedWidthValues(*columns[c]);
    auto layout = *GetFixedWidthLayout(*columns[c]->type);
    arrow::ArrayData flat(layout.value_type, n * w, {nullptr, values.buffer}, 0, 0);
    flat.offset = (values.first - values.buffer->data()) / layout.value_type->byte_width();
    ARROW_RETURN_NOT_OK(ConvertAny<float>(flat, 0, n * w, row.data(),
                                          std::string("torchrec ") + role + " '" + names[c] + "'"));
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(out + i * m.width + column_start, row.data() + i * w, w * sizeof(float));
    }
    column_start += w;
  }
  m.data = m.owner->data();
  return m;
}

nb::object Tensor(const void* data, std::vector<size_t> shape, std::shared_ptr<arrow::Buffer> owner,
                  nb::dlpack::dtype dtype) {
  nb::ndarray<nb::pytorch> array(const_cast<void*>(data), shape.size(), shape.data(),
                                 Owner(std::move(owner)), nullptr, dtype);
  return array.cast();
}

// The KJT's lengths, key-major (keys x B), and the per-key totals on the host.
struct KeyLengths {
  std::shared_ptr<arrow::Buffer> lengths;
  nb::list length_per_key, offset_per_key;
  int64_t total = 0;  // values over every key
};

KeyLengths LengthsOf(const std::vector<KeyColumn>& keys, const std::vector<std::string>& names,
                     int64_t n, arrow::MemoryPool* pool) {
  KeyLengths out;
  out.lengths = ValueOrThrow(arrow::AllocateBuffer(keys.size() * n * sizeof(int32_t), pool));
  auto* length = reinterpret_cast<int32_t*>(out.lengths->mutable_data());
  out.offset_per_key.append(0);
  for (size_t k = 0; k < keys.size(); ++k) {
    const KeyColumn& key = keys[k];
    int32_t* lengths = length + k * n;
    if (!key.list) {
      std::fill(lengths, lengths + n, 1);
    } else if (key.data->GetNullCount() == 0 && key.data->type->id() == arrow::Type::LIST) {
      const int32_t* offsets = key.data->GetValues<int32_t>(1);
      for (int64_t i = 0; i < n; ++i) lengths[i] = offsets[i + 1] - offsets[i];
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const int64_t l = LengthAt(key, i);
        if (l > std::numeric_limits<int32_t>::max()) {
          throw StatusError(arrow::Status::Invalid("torchrec key '", names[k], "': row ", i,
                                                   " holds ", l, " ids, past int32 lengths"));
        }
        lengths[i] = static_cast<int32_t>(l);
      }
    }
    out.total += key.total;
    out.length_per_key.append(key.total);
    out.offset_per_key.append(out.total);
  }
  return out;
}

// The KJT's values, `total` of them: the engine's shared buffer when the keys lie in it
// key-major, else one copy.
nb::object ValuesTensor(const std::vector<KeyColumn>& keys,
                        const std::vector<const KeyColumn*>& key_ptrs, const KjtSpec& spec,
                        int64_t total, arrow::MemoryPool* pool) {
  const auto values_type = spec.values_int64 ? arrow::int64() : arrow::int32();
  const uint8_t* first = nullptr;
  std::shared_ptr<arrow::Buffer> values_owner = SharedValues(keys, *values_type, &first);
  if (values_owner == nullptr) {
    values_owner = spec.values_int64
                       ? ValueOrThrow(CopyValues<int64_t>(key_ptrs, key_ptrs, spec.keys, pool))
                       : ValueOrThrow(CopyValues<int32_t>(key_ptrs, key_ptrs, spec.keys, pool));
    first = values_owner->data();
  }
  const nb::dlpack::dtype id_dtype =
      spec.values_int64 ? nb::dtype<int64_t>() : nb::dtype<int32_t>();
  return Tensor(first, {static_cast<size_t>(total)}, std::move(values_owner), id_dtype);
}

// The KJT's weights (None when no key is weighted): each weighted key's paired list, its
// lengths checked against the key's; an unweighted key's values weigh 1.
nb::object WeightsTensor(const arrow::RecordBatch& batch, const KjtSpec& spec,
                         const std::vector<KeyColumn>& keys,
                         const std::vector<const KeyColumn*>& key_ptrs, int64_t total,
                         arrow::MemoryPool* pool) {
  bool weighted = false;
  for (const std::string& w : spec.weights) weighted = weighted || !w.empty();
  if (!weighted) return nb::none();
  const int64_t n = batch.num_rows();
  const size_t num_keys = keys.size();
  std::vector<KeyColumn> weight_columns(num_keys);
  std::vector<const KeyColumn*> weight_ptrs(num_keys, nullptr);
  std::vector<std::string> weight_names(num_keys);
  for (size_t k = 0; k < num_keys; ++k) {
    if (spec.weights[k].empty()) continue;
    weight_columns[k] = ValueOrThrow(KeyOf(batch, spec.weights[k], "weights", true));
    if (!weight_columns[k].list) {
      throw StatusError(arrow::Status::TypeError("torchrec weights '", spec.weights[k],
                                                 "' must be a list column paired with key '",
                                                 spec.keys[k], "'"));
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t have = LengthAt(weight_columns[k], i), want = LengthAt(keys[k], i);
      if (have != want) {
        throw StatusError(arrow::Status::Invalid(
            "torchrec weights '", spec.weights[k], "' of key '", spec.keys[k], "': row ", i,
            " of the batch has ", have, " weights for ", want, " ids"));
      }
    }
    weight_ptrs[k] = &weight_columns[k];
    weight_names[k] = spec.weights[k];
  }
  std::shared_ptr<arrow::Buffer> owner;
  const uint8_t* at = nullptr;
  if (std::find(weight_ptrs.begin(), weight_ptrs.end(), nullptr) == weight_ptrs.end()) {
    owner = SharedValues(weight_columns, *arrow::float32(), &at);
  }
  if (owner == nullptr) {
    owner = ValueOrThrow(CopyValues<float>(weight_ptrs, key_ptrs, weight_names, pool));
    at = owner->data();
  }
  return Tensor(at, {static_cast<size_t>(total)}, std::move(owner), nb::dtype<float>());
}

}  // namespace

KjtSpec MakeKjtSpec(std::vector<std::string> keys, std::vector<std::string> weights,
                    std::vector<std::string> dense, std::vector<std::string> labels,
                    const std::string& values_dtype) {
  KjtSpec spec;
  if (keys.empty()) throw StatusError(arrow::Status::Invalid("torchrec: sparse keys are required"));
  if (!weights.empty() && weights.size() != keys.size()) {
    throw StatusError(
        arrow::Status::Invalid("torchrec weights: one entry per key (\"\" for none)"));
  }
  if (values_dtype != "int32" && values_dtype != "int64") {
    throw StatusError(arrow::Status::Invalid(
        "torchrec values_dtype must be \"int32\" or \"int64\", got \"", values_dtype, "\""));
  }
  spec.keys = std::move(keys);
  spec.weights = std::move(weights);
  spec.dense = std::move(dense);
  spec.labels = std::move(labels);
  spec.values_int64 = values_dtype == "int64";
  return spec;
}

nb::tuple ToKjtParts(const arrow::RecordBatch& batch, const KjtSpec& spec,
                     arrow::MemoryPool* pool) {
  const int64_t n = batch.num_rows();
  std::vector<KeyColumn> keys;
  for (const std::string& name : spec.keys) {
    keys.push_back(ValueOrThrow(KeyOf(batch, name, "key", false)));
  }
  std::vector<const KeyColumn*> key_ptrs;
  for (const KeyColumn& key : keys) key_ptrs.push_back(&key);
  KeyLengths lengths = LengthsOf(keys, spec.keys, n, pool);
  nb::object values = ValuesTensor(keys, key_ptrs, spec, lengths.total, pool);
  nb::object weights = WeightsTensor(batch, spec, keys, key_ptrs, lengths.total, pool);
  nb::object dense = nb::none(), labels = nb::none();
  if (!spec.dense.empty()) {
    Matrix m = ValueOrThrow(FloatMatrix(batch, spec.dense, "dense", pool));
    dense = Tensor(m.data, {static_cast<size_t>(n), static_cast<size_t>(m.width)}, m.owner,
                   nb::dtype<float>());
  }
  if (!spec.labels.empty()) {
    Matrix m = ValueOrThrow(FloatMatrix(batch, spec.labels, "label", pool));
    std::vector<size_t> shape{static_cast<size_t>(n)};
    if (m.width > 1) shape.push_back(static_cast<size_t>(m.width));
    labels = Tensor(m.data, shape, m.owner, nb::dtype<float>());
  }
  const uint8_t* lengths_data = lengths.lengths->data();
  nb::object lengths_tensor = Tensor(lengths_data, {keys.size() * static_cast<size_t>(n)},
                                     std::move(lengths.lengths), nb::dtype<int32_t>());
  return nb::make_tuple(values, lengths_tensor, weights, lengths.length_per_key,
                        lengths.offset_per_key, dense, labels, n);
}

void BindKjt(nb::module_& m) {
  nb::class_<KjtSpec>(m, "KjtSpec",
                      "What output=\"torchrec\" makes of a batch (python/stoker/torchrec.py).")
      .def(nb::new_(&MakeKjtSpec), nb::arg("keys"), nb::arg("weights"), nb::arg("dense"),
           nb::arg("labels"), nb::arg("values_dtype"))
      .def_ro("keys", &KjtSpec::keys)
      .def_ro("weights", &KjtSpec::weights)
      .def_ro("dense", &KjtSpec::dense)
      .def_ro("labels", &KjtSpec::labels);
  m.def(
      "to_kjt_parts",
      [](nb::handle batch, const KjtSpec& spec) {
        return ToKjtParts(*ImportBatch(batch), spec, arrow::default_memory_pool());
      },
      nb::arg("batch"), nb::arg("spec"),
      "A pyarrow.RecordBatch as the parts of a TorchRec batch: (values, lengths, weights, "
      "length_per_key, offset_per_key, dense, labels, stride).");
}

}  // namespace stoker::python
