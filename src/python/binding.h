// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// What the files of the extension stoker._core share: errors on their way to Python, the
// output kinds, the tensor conversion, and each file's Bind function (module.cc calls them).
#pragma once

#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/status.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <exception>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "stoker/fields.h"
#include "stoker/loader.h"

namespace stoker {
class MixtureStreams;
}  // namespace stoker

namespace stoker::python {

namespace nb = nanobind;

/// A non-OK Status on its way to Python. Thrown anywhere in the binding, with or without the
/// GIL (inside an `nb::call_guard<nb::gil_scoped_release>` call too); the translator that
/// module.cc registers raises it as the natural built-in exception (docs/design.md, "Errors").
class StatusError : public std::exception {
 public:
  explicit StatusError(arrow::Status status) : status_(std::move(status)) {}
  const char* what() const noexcept override { return status_.message().c_str(); }
  const arrow::Status& status() const { return status_; }

 private:
  arrow::Status status_;
};

/// The annotation of every bound call that can block: the GIL is released while the C++ runs
/// (arguments are converted before, the result after, with the GIL held).
using ReleaseGil = nb::call_guard<nb::gil_scoped_release>;

inline void ThrowIfError(const arrow::Status& status) {
  if (!status.ok()) throw StatusError(status);
}

template <typename T>
T ValueOrThrow(arrow::Result<T> result) {
  if (!result.ok()) throw StatusError(result.status());
  return std::move(result).ValueUnsafe();
}

template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};

/// A vector of such structs (a concept, so that value_type is only asked of vectors).
template <typename T>
concept VectorOfFields = IsVector<T>::value && HasFields<typename T::value_type>;

/// A value as Python sees it: a struct with fields becomes a dict keyed by their names (in
/// their order), a vector of such structs a list of dicts, anything else what nanobind's
/// casters make of it (numbers, str, None for an empty optional, lists). The one way C++
/// results (stats, reports) reach Python: a field added to a struct's list needs nothing here.
template <typename T>
nb::object ToPython(const T& value) {
  if constexpr (HasFields<T>) {
    nb::dict out;
    std::apply(
        [&](const auto&... field) {
          ((out[nb::str(field.name.data(), field.name.size())] = ToPython(value.*field.member)),
           ...);
        },
        FieldsOf(value));
    return out;
  } else if constexpr (VectorOfFields<T>) {
    nb::list out;
    for (const auto& element : value) out.append(ToPython(element));
    return out;
  } else {
    return nb::cast(value);
  }
}

/// ToPython of a struct with fields, as the dict it is.
template <HasFields T>
nb::dict ToDict(const T& value) {
  return nb::borrow<nb::dict>(ToPython(value));
}

/// What a Python consumer receives: dicts of numpy arrays, torch tensors, jax.Arrays or
/// TensorFlow tensors (all over the engine's buffers, through DLPack), or Arrow batches.
/// kTorchrec: TorchRec's batch parts (kjt.cc; torch dicts with every list ragged until an
/// epoch is told use_kjt).
enum class Output { kNumpy, kTorch, kJax, kTensorflow, kArrow, kTorchrec };

/// "numpy", "torch", "jax", "tensorflow", "arrow" or "torchrec"; a ValueError naming the
/// option otherwise.
Output ParseOutput(const std::string& output);

/// An Arrow C data interface schema capsule (pyarrow imports it without copying).
nb::object SchemaCapsule(const arrow::Schema& schema);

/// The (schema, array) capsules of the Arrow C data interface for a batch.
nb::object BatchCapsules(const arrow::RecordBatch& batch);

/// `batch` as a _core.Batch: handed to Python unconverted (tensors.cc).
nb::object HoldBatch(std::shared_ptr<arrow::RecordBatch> batch);

/// The batch of a _core.Batch, or behind an object with `__arrow_c_array__` (a
/// pyarrow.RecordBatch), without a copy.
std::shared_ptr<arrow::RecordBatch> ImportBatch(nb::handle batch);

/// A batch as a dict of numpy arrays, torch tensors, jax.Arrays or TensorFlow tensors that own
/// the batch's buffers (no copy but for bool columns): fixed-size lists become extra
/// dimensions; each column in `ragged` becomes its values and "<name>_offsets". Nulls and
/// non-numeric columns are errors naming the column. The one Arrow-to-tensor path: local
/// epochs, RemoteLoader and `to_tensors`.
nb::dict ToTensors(const arrow::RecordBatch& batch, Output output,
                   const std::vector<std::string>& ragged);

/// A Python object that keeps `buffer` alive as long as an array views it (a tensor's owner).
nb::object Owner(std::shared_ptr<arrow::Buffer> buffer);

/// What output="torchrec" makes of a batch (kjt.cc, python/stoker/torchrec.py): the sparse
/// keys in KeyedJaggedTensor order, each key's weights column ("" for none; empty: no
/// weights), the dense and label columns.
struct KjtSpec {
  std::vector<std::string> keys;
  std::vector<std::string> weights;
  std::vector<std::string> dense;
  std::vector<std::string> labels;
  bool values_int64 = true;
};

/// A batch as a tuple (values, lengths, weights or None, length_per_key, offset_per_key,
/// dense or None, labels or None, stride) of torch tensors and host ints in TorchRec's
/// layout; no copy of the values when the engine gathered them key-major, one otherwise
/// (new buffers from `pool`). Errors name the key, column and row.
nb::tuple ToKjtParts(const arrow::RecordBatch& batch, const KjtSpec& spec, arrow::MemoryPool* pool);

/// `stream` as the stoker._core.Epoch Python iterates (bound in loader.cc): batches delivered
/// as `output` (`ragged` columns as values + offsets), the disk cache warnings of `loaders`
/// raised as they come. The loaders are kept alive as long as the epoch.
nb::object WrapEpoch(std::unique_ptr<BatchStream> stream, Output output,
                     std::vector<std::string> ragged, std::vector<std::shared_ptr<Loader>> loaders);

/// A Loader as Python holds it (stoker._core.Loader, bound in loader.cc): the engine's Loader
/// and the output kind its epochs deliver.
class PyLoader {
 public:
  /// Builds the engine's Loader (reads every footer: call without the GIL).
  PyLoader(LoaderOptions options, const std::string& output);
  const std::shared_ptr<Loader>& engine() const { return loader_; }
  Output output() const { return output_; }

 private:
  Output output_;
  std::shared_ptr<Loader> loader_;
};

// Each file binds its concern into the module.
/// The streams behind a _core.MixtureReader (mixture.cc), which a Server serves (serve.cc);
/// TypeError if `reader` is not one.
std::shared_ptr<const MixtureStreams> MixtureStreamsOf(nb::handle reader);

void BindTensors(nb::module_& m);        // tensors.cc: to_tensors, check_output
void BindOptions(nb::module_& m);        // options.cc: LoaderOptions, StorageOptions, ServeOptions,
                                         // TransformOp
void BindLoader(nb::module_& m);         // loader.cc: Loader, Epoch
void BindServe(nb::module_& m);          // serve.cc: Server, encode_ticket, decode_ticket
void BindReceive(nb::module_& m);        // receive.cc: FlightConnection, FlightStream
void BindTransformOps(nb::module_& m);   // transform_ops.cc: transform_ops
void BindFaultProbe(nb::module_& m);     // fault_probe.cc: FaultProbe
void BindTrace(nb::module_& m);          // trace.cc: TraceRing
void BindIndex(nb::module_& m);          // index.cc: write_index
void BindMixture(nb::module_& m);        // mixture.cc: MixturePlan, MixtureReader, apportion
void BindPlan(nb::module_& m);           // plan.cc: rank_segments, rows_left, batches_left,
                                         // rank_rows, batches_per_rank
void BindTransformSpec(nb::module_& m);  // transform_spec.cc: transforms_from_spec
void BindKjt(nb::module_& m);            // kjt.cc: KjtSpec, to_kjt_parts

}  // namespace stoker::python
