// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// Arrow batches to Python: numpy arrays and torch tensors that own the engine's buffers
// (DLPack through nanobind), and Arrow C data interface capsules for pyarrow.

#include <arrow/array.h>
#include <arrow/c/bridge.h>
#include <arrow/util/byte_size.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#include "assemble/column_types.h"
#include "python/binding.h"

namespace stoker::python {

namespace {

constexpr uintptr_t kTensorflowAlignment = 64;

void FreeSchemaCapsule(PyObject* capsule) {
  auto* schema = static_cast<ArrowSchema*>(PyCapsule_GetPointer(capsule, "arrow_schema"));
  if (schema->release != nullptr) schema->release(schema);
  delete schema;
}

void FreeArrayCapsule(PyObject* capsule) {
  auto* array = static_cast<ArrowArray*>(PyCapsule_GetPointer(capsule, "arrow_array"));
  if (array->release != nullptr) array->release(array);
  delete array;
}

nb::dlpack::dtype DlpackType(const arrow::DataType& type) {
  nb::dlpack::dtype dtype;
  dtype.lanes = 1;
  dtype.bits = static_cast<uint8_t>(type.bit_width());
  if (arrow::is_floating(type.id())) {
    dtype.code = static_cast<uint8_t>(nb::dlpack::dtype_code::Float);
  } else if (arrow::is_signed_integer(type.id())) {
    dtype.code = static_cast<uint8_t>(nb::dlpack::dtype_code::Int);
  } else {
    dtype.code = static_cast<uint8_t>(nb::dlpack::dtype_code::UInt);
  }
  return dtype;
}

// torch.from_numpy, looked up once (and never released: it lives as long as torch does).
nb::handle TorchFromNumpy() {
  static const nb::handle from_numpy =
      nb::object(nb::module_::import_("torch").attr("from_numpy")).release();
  return from_numpy;
}

// Memory as the framework's tensor over it. torch's through a NumPy array: torch.from_numpy
// is a C call, where nanobind's own torch export goes through torch.utils.dlpack.from_dlpack,
// a Python function (the conversion of a criteo batch's 41 columns: 110 us against 78 us
// through numpy and torch.from_numpy from Python, measured in process).
template <typename Framework>
nb::object MakeTensor(void* ptr, const std::vector<size_t>& shape, nb::object owner,
                      nb::dlpack::dtype dtype) {
  if constexpr (std::is_same_v<Framework, nb::pytorch>) {
    // torch.from_numpy refuses NumPy's unsigned types wider than a byte as nanobind makes
    // them (numpy.ulonglong, not numpy.uint64): those keep nanobind's DLPack export.
    if (dtype.code != static_cast<uint8_t>(nb::dlpack::dtype_code::UInt) || dtype.bits == 8) {
      nb::ndarray<nb::numpy> array(ptr, shape.size(), shape.data(), std::move(owner), nullptr,
                                   dtype);
      return TorchFromNumpy()(array.cast());
    }
  }
  nb::ndarray<Framework> array(ptr, shape.size(), shape.data(), std::move(owner), nullptr, dtype);
  return array.cast();
}

template <typename Framework>
nb::object ToTensor(const arrow::ArrayData& data) {
  std::vector<size_t> shape{static_cast<size_t>(data.length)};
  if (data.type->id() == arrow::Type::BOOL) {
    // Arrow packs booleans into bits; tensors want a byte each, so this one column is copied.
    auto buffer = ValueOrThrow(arrow::AllocateBuffer(data.length));
    arrow::BooleanArray bools(std::make_shared<arrow::ArrayData>(data));
    for (int64_t i = 0; i < data.length; ++i) buffer->mutable_data()[i] = bools.Value(i);
    const void* ptr = buffer->data();
    nb::dlpack::dtype dtype{static_cast<uint8_t>(nb::dlpack::dtype_code::Bool), 8, 1};
    return MakeTensor<Framework>(const_cast<void*>(ptr), shape,
                                 Owner(std::shared_ptr<arrow::Buffer>(std::move(buffer))), dtype);
  }
  auto layout = ValueOrThrow(GetFixedWidthLayout(*data.type));
  auto values = GetFixedWidthValues(data);
  for (int64_t dim : values.inner_dims) shape.push_back(static_cast<size_t>(dim));
  if constexpr (std::is_same_v<Framework, nb::tensorflow>) {
    // TensorFlow aborts the process ("Check failed: IsAligned()") on the first op over a
    // tensor whose data is not aligned to its EIGEN_MAX_ALIGN_BYTES (64). The engine's own
    // buffers are; a batch received from a server (Flight bodies align buffers to 8 bytes)
    // or a column that starts inside its buffer may not be: those values are copied.
    if (reinterpret_cast<uintptr_t>(values.first) % kTensorflowAlignment != 0) {
      int64_t count = data.length;
      for (int64_t dim : values.inner_dims) count *= dim;
      const int64_t bytes = count * layout.value_type->byte_width();
      std::shared_ptr<arrow::Buffer> copy = ValueOrThrow(arrow::AllocateBuffer(bytes));
      std::memcpy(copy->mutable_data(), values.first, static_cast<size_t>(bytes));
      values.first = copy->data();
      values.buffer = std::move(copy);
    }
  }
  return MakeTensor<Framework>(const_cast<uint8_t*>(values.first), shape, Owner(values.buffer),
                               DlpackType(*layout.value_type));
}

// A variable-length list column as two tensors: the values, and int64 offsets from 0.
template <typename Framework>
std::pair<nb::object, nb::object> ToRaggedTensors(const arrow::ArrayData& data) {
  const bool large = data.type->id() == arrow::Type::LARGE_LIST;
  auto offset_at = [&](int64_t i) -> int64_t {
    return large ? data.GetValues<int64_t>(1)[i] : data.GetValues<int32_t>(1)[i];
  };
  const int64_t first = offset_at(0);
  const int64_t last = offset_at(data.length);
  auto offsets = ValueOrThrow(arrow::AllocateBuffer((data.length + 1) * sizeof(int64_t)));
  auto* out = reinterpret_cast<int64_t*>(offsets->mutable_data());
  for (int64_t i = 0; i <= data.length; ++i) out[i] = offset_at(i) - first;
  const size_t shape = static_cast<size_t>(data.length + 1);
  void* ptr = offsets->mutable_data();
  nb::object offsets_tensor =
      MakeTensor<Framework>(ptr, {shape}, Owner(std::shared_ptr<arrow::Buffer>(std::move(offsets))),
                            nb::dtype<int64_t>());
  auto values = data.child_data[0]->Slice(first, last - first);
  return {ToTensor<Framework>(*values), offsets_tensor};
}

// The columns of `batch` into `columns`, checked: batches from the engine's own epochs pass
// by construction, those received from a server are checked here.
template <typename Framework>
void AddColumns(const arrow::RecordBatch& batch, const std::vector<std::string>& ragged,
                nb::dict& columns) {
  for (int i = 0; i < batch.num_columns(); ++i) {
    const auto& field = *batch.schema()->field(i);
    const auto& data = *batch.column_data(i);
    if (std::find(ragged.begin(), ragged.end(), field.name()) != ragged.end()) {
      // A null list arrives as an empty one (its offsets do not move).
      auto [values, offsets] = ToRaggedTensors<Framework>(data);
      columns[field.name().c_str()] = values;
      columns[(field.name() + "_offsets").c_str()] = offsets;
      continue;
    }
    ThrowIfError(CheckTensorType(field));
    if (HasNulls(data)) {
      throw StatusError(arrow::Status::Invalid(
          "column '", field.name(),
          "' has null values; numpy/torch output cannot hold nulls: use output='arrow' or a "
          "fill_null transform"));
    }
    columns[field.name().c_str()] = ToTensor<Framework>(data);
  }
}

}  // namespace

nb::object Owner(std::shared_ptr<arrow::Buffer> buffer) {
  auto* held = new std::shared_ptr<arrow::Buffer>(std::move(buffer));
  return nb::capsule(
      held, [](void* p) noexcept { delete static_cast<std::shared_ptr<arrow::Buffer>*>(p); });
}

namespace {

// _core.Batch: an engine batch held for Python unconverted.
struct HeldBatch {
  std::shared_ptr<arrow::RecordBatch> batch;
};

}  // namespace

nb::object HoldBatch(std::shared_ptr<arrow::RecordBatch> batch) {
  return nb::cast(HeldBatch{std::move(batch)});
}

// A _core.Batch as the batch it holds; a pyarrow.RecordBatch (or anything with
// __arrow_c_array__) as an Arrow C++ batch over the same buffers.
std::shared_ptr<arrow::RecordBatch> ImportBatch(nb::handle batch) {
  if (nb::isinstance<HeldBatch>(batch)) return nb::cast<const HeldBatch&>(batch).batch;
  if (!nb::hasattr(batch, "__arrow_c_array__")) {
    throw nb::type_error("expected a pyarrow.RecordBatch (an object with __arrow_c_array__)");
  }
  nb::tuple capsules = nb::cast<nb::tuple>(batch.attr("__arrow_c_array__")());
  auto* schema = static_cast<ArrowSchema*>(PyCapsule_GetPointer(capsules[0].ptr(), "arrow_schema"));
  auto* array = static_cast<ArrowArray*>(PyCapsule_GetPointer(capsules[1].ptr(), "arrow_array"));
  if (schema == nullptr || array == nullptr) throw nb::python_error();
  return ValueOrThrow(arrow::ImportRecordBatch(array, schema));
}

Output ParseOutput(const std::string& output) {
  if (output == "numpy") return Output::kNumpy;
  if (output == "torch") return Output::kTorch;
  if (output == "jax") return Output::kJax;
  if (output == "tensorflow") return Output::kTensorflow;
  if (output == "arrow") return Output::kArrow;
  if (output == "torchrec") return Output::kTorchrec;
  throw StatusError(arrow::Status::Invalid(
      "output must be \"numpy\", \"torch\", \"jax\", \"tensorflow\", \"arrow\" or "
      "\"torchrec\", got \"",
      output, "\""));
}

nb::object SchemaCapsule(const arrow::Schema& schema) {
  auto c_schema = std::make_unique<ArrowSchema>();
  ThrowIfError(arrow::ExportSchema(schema, c_schema.get()));
  return nb::steal(PyCapsule_New(c_schema.release(), "arrow_schema", FreeSchemaCapsule));
}

nb::object BatchCapsules(const arrow::RecordBatch& batch) {
  auto c_schema = std::make_unique<ArrowSchema>();
  auto c_array = std::make_unique<ArrowArray>();
  ThrowIfError(arrow::ExportRecordBatch(batch, c_array.get(), c_schema.get()));
  nb::object schema =
      nb::steal(PyCapsule_New(c_schema.release(), "arrow_schema", FreeSchemaCapsule));
  nb::object array = nb::steal(PyCapsule_New(c_array.release(), "arrow_array", FreeArrayCapsule));
  return nb::make_tuple(schema, array);
}

nb::dict ToTensors(const arrow::RecordBatch& batch, Output output,
                   const std::vector<std::string>& ragged) {
  nb::dict columns;
  switch (output) {
    case Output::kTorch:
    case Output::kTorchrec:
      AddColumns<nb::pytorch>(batch, ragged, columns);
      break;
    case Output::kJax:
      AddColumns<nb::jax>(batch, ragged, columns);
      break;
    case Output::kTensorflow:
      AddColumns<nb::tensorflow>(batch, ragged, columns);
      break;
    default:
      AddColumns<nb::numpy>(batch, ragged, columns);
  }
  return columns;
}

void BindTensors(nb::module_& m) {
  nb::class_<HeldBatch>(m, "Batch",
                        "A batch of the engine's handed over unconverted (a received one): "
                        "to_tensors and to_kjt_parts read it as it is, pyarrow.record_batch() "
                        "makes it a pyarrow.RecordBatch over the same buffers.")
      .def_prop_ro("num_rows", [](const HeldBatch& held) { return held.batch->num_rows(); })
      .def_prop_ro(
          "nbytes", [](const HeldBatch& held) { return arrow::util::TotalBufferSize(*held.batch); },
          "The bytes of its buffers, each counted once (pyarrow's get_total_buffer_size(); "
          "pyarrow's nbytes counts only the ranges referenced, at the cost of building them).")
      .def(
          "__arrow_c_array__",
          [](const HeldBatch& held, nb::handle /*requested_schema*/) {
            return BatchCapsules(*held.batch);
          },
          nb::arg("requested_schema") = nb::none())
      .def(
          "_export_array",
          [](const HeldBatch& held) {
            auto c_array = std::make_unique<ArrowArray>();
            ThrowIfError(arrow::ExportRecordBatch(*held.batch, c_array.get()));
            const auto address = reinterpret_cast<uintptr_t>(c_array.get());
            nb::object owner =
                nb::steal(PyCapsule_New(c_array.release(), "arrow_array", FreeArrayCapsule));
            return nb::make_tuple(owner, address);
          },
          "(owner, address): the batch's arrays alone as an ArrowArray at `address` for "
          "pyarrow.RecordBatch._import_from_c(address, schema), which takes them over; the "
          "owner capsule frees the struct (and the arrays, if they were not taken).")
      .def(
          "_same_schema",
          [](const HeldBatch& held, const HeldBatch& other) {
            const auto& a = held.batch->schema();
            const auto& b = other.batch->schema();
            return a == b || a->Equals(*b, /*check_metadata=*/true);
          },
          nb::arg("other"), "Whether `other`'s schema is this batch's, metadata included.");
  m.def(
      "to_tensors",
      [](nb::handle batch, const std::string& output, const std::vector<std::string>& ragged) {
        const Output kind = ParseOutput(output);
        if (kind == Output::kArrow) {
          throw StatusError(arrow::Status::Invalid(
              "to_tensors makes \"numpy\", \"torch\", \"jax\" or \"tensorflow\" columns"));
        }
        return ToTensors(*ImportBatch(batch), kind, ragged);
      },
      nb::arg("batch"), nb::arg("output") = "numpy", nb::arg("ragged") = std::vector<std::string>{},
      "A pyarrow.RecordBatch as a dict of numpy arrays, torch tensors, jax.Arrays or TensorFlow "
      "tensors over its buffers, as a "
      "Loader delivers it (fixed-size lists as extra dimensions; each `ragged` column as values "
      "and '<name>_offsets').");
  m.def(
      "check_output", [](const std::string& output) { ParseOutput(output); }, nb::arg("output"),
      "Raises ValueError unless output is \"numpy\", \"torch\", \"jax\", \"tensorflow\", "
      "\"arrow\" or \"torchrec\".");
}

}  // namespace stoker::python
