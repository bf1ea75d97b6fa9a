// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// stoker._core: the thin nanobind layer between the C++ engine and Python. It converts
// options in, batches out (numpy/torch arrays that own the engine's buffers, or Arrow C data
// interface capsules) and Status errors into the natural Python exceptions. The GIL is
// released for every call that can block.

#include <arrow/array.h>
#include <arrow/c/bridge.h>
#include <arrow/compute/expression.h>
#include <arrow/record_batch.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>

#include "assemble/column_types.h"
#include "manifest/manifest.h"
#include "plan/plan.h"
#include "stoker/api.h"
#include "transform/transform_spec.h"

namespace nb = nanobind;

namespace {

// How long a blocked consumer waits before checking for Ctrl-C.
constexpr std::chrono::milliseconds kSignalPollInterval{100};

[[noreturn]] void Raise(const arrow::Status& status) {
  PyObject* type = PyExc_RuntimeError;
  if (stoker::IsNotFound(status)) {
    type = PyExc_FileNotFoundError;
  } else if (status.IsInvalid() || status.IsIndexError()) {
    type = PyExc_ValueError;
  } else if (status.IsKeyError()) {
    type = PyExc_KeyError;
  } else if (status.IsTypeError()) {
    type = PyExc_TypeError;
  } else if (status.IsIOError()) {
    type = PyExc_OSError;
  } else if (status.IsOutOfMemory()) {
    type = PyExc_MemoryError;
  } else if (status.IsNotImplemented()) {
    type = PyExc_NotImplementedError;
  }
  PyErr_SetString(type, status.message().c_str());
  throw nb::python_error();
}

template <typename T>
T ValueOrRaise(arrow::Result<T> result) {
  if (!result.ok()) Raise(result.status());
  return std::move(result).ValueUnsafe();
}

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

nb::object SchemaCapsule(const arrow::Schema& schema) {
  auto c_schema = std::make_unique<ArrowSchema>();
  auto status = arrow::ExportSchema(schema, c_schema.get());
  if (!status.ok()) Raise(status);
  return nb::steal(PyCapsule_New(c_schema.release(), "arrow_schema", FreeSchemaCapsule));
}

// (schema capsule, array capsule) of the Arrow C data interface; pyarrow imports it as a
// RecordBatch without copying.
nb::object BatchCapsules(const arrow::RecordBatch& batch) {
  auto c_schema = std::make_unique<ArrowSchema>();
  auto c_array = std::make_unique<ArrowArray>();
  auto status = arrow::ExportRecordBatch(batch, c_array.get(), c_schema.get());
  if (!status.ok()) Raise(status);
  nb::object schema =
      nb::steal(PyCapsule_New(c_schema.release(), "arrow_schema", FreeSchemaCapsule));
  nb::object array = nb::steal(PyCapsule_New(c_array.release(), "arrow_array", FreeArrayCapsule));
  return nb::make_tuple(schema, array);
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

// A Python object that keeps an Arrow buffer alive for as long as an array views it.
nb::object Owner(std::shared_ptr<arrow::Buffer> buffer) {
  auto* held = new std::shared_ptr<arrow::Buffer>(std::move(buffer));
  return nb::capsule(
      held, [](void* p) noexcept { delete static_cast<std::shared_ptr<arrow::Buffer>*>(p); });
}

template <typename Framework>
nb::object ToTensor(const arrow::ArrayData& data) {
  std::vector<size_t> shape{static_cast<size_t>(data.length)};
  if (data.type->id() == arrow::Type::BOOL) {
    // Arrow packs booleans into bits; tensors want a byte each, so this one column is copied.
    auto buffer = ValueOrRaise(arrow::AllocateBuffer(data.length));
    arrow::BooleanArray bools(std::make_shared<arrow::ArrayData>(data));
    for (int64_t i = 0; i < data.length; ++i) buffer->mutable_data()[i] = bools.Value(i);
    const void* ptr = buffer->data();
    nb::dlpack::dtype dtype{static_cast<uint8_t>(nb::dlpack::dtype_code::Bool), 8, 1};
    nb::ndarray<Framework> array(const_cast<void*>(ptr), shape.size(), shape.data(),
                                 Owner(std::shared_ptr<arrow::Buffer>(std::move(buffer))), nullptr,
                                 dtype);
    return array.cast();
  }
  const auto values = stoker::GetFixedWidthValues(data);
  for (int64_t dim : values.inner_dims) shape.push_back(static_cast<size_t>(dim));
  auto layout = ValueOrRaise(stoker::GetFixedWidthLayout(*data.type));
  nb::ndarray<Framework> array(const_cast<uint8_t*>(values.first), shape.size(), shape.data(),
                               Owner(values.buffer), nullptr, DlpackType(*layout.value_type));
  return array.cast();
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
  auto offsets = ValueOrRaise(arrow::AllocateBuffer((data.length + 1) * sizeof(int64_t)));
  auto* out = reinterpret_cast<int64_t*>(offsets->mutable_data());
  for (int64_t i = 0; i <= data.length; ++i) out[i] = offset_at(i) - first;
  const size_t shape = static_cast<size_t>(data.length + 1);
  void* ptr = offsets->mutable_data();
  nb::ndarray<Framework> offsets_array(ptr, 1, &shape,
                                       Owner(std::shared_ptr<arrow::Buffer>(std::move(offsets))),
                                       nullptr, nb::dtype<int64_t>());
  auto values = data.child_data[0]->Slice(first, last - first);
  return {ToTensor<Framework>(*values), offsets_array.cast()};
}

// Shows the disk cache's warning (writes turned off), once, as a Python RuntimeWarning.
void WarnAboutCache(const stoker::Loader& loader) {
  const std::string warning = loader.TakeCacheWarning();
  if (!warning.empty() && PyErr_WarnEx(PyExc_RuntimeWarning, warning.c_str(), 1) != 0) {
    throw nb::python_error();
  }
}

enum class Output { kNumpy, kTorch, kArrow };

Output ParseOutput(const std::string& output) {
  if (output == "numpy") return Output::kNumpy;
  if (output == "torch") return Output::kTorch;
  if (output == "arrow") return Output::kArrow;
  PyErr_SetString(
      PyExc_ValueError,
      ("output must be \"numpy\", \"torch\" or \"arrow\", got \"" + output + "\"").c_str());
  throw nb::python_error();
}

// One epoch being read; Python iterates it.
class Epoch {
 public:
  Epoch(std::unique_ptr<stoker::BatchStream> stream, Output output,
        std::shared_ptr<stoker::Loader> loader)
      : stream_(std::move(stream)),
        output_(output),
        ragged_(loader->ragged_columns()),
        loader_(std::move(loader)) {}

  // The next batch, or None after the last one.
  nb::object Next() {
    if (stream_ == nullptr) return nb::none();
    for (;;) {
      bool ready;
      {
        nb::gil_scoped_release release;
        ready = stream_->WaitReady(kSignalPollInterval);
      }
      if (ready) break;
      if (PyErr_CheckSignals() != 0) throw nb::python_error();
    }
    arrow::Result<std::shared_ptr<arrow::RecordBatch>> next;
    {
      nb::gil_scoped_release release;
      next = stream_->Next();
    }
    WarnAboutCache(*loader_);
    auto batch = ValueOrRaise(std::move(next));
    if (batch == nullptr) {
      Close();
      return nb::none();
    }
    if (output_ == Output::kArrow) return BatchCapsules(*batch);
    nb::dict columns;
    for (int i = 0; i < batch->num_columns(); ++i) {
      const auto& data = *batch->column_data(i);
      const std::string& name = batch->schema()->field(i)->name();
      if (std::find(ragged_.begin(), ragged_.end(), name) != ragged_.end()) {
        auto [values, offsets] = output_ == Output::kTorch ? ToRaggedTensors<nb::pytorch>(data)
                                                           : ToRaggedTensors<nb::numpy>(data);
        columns[name.c_str()] = values;
        columns[(name + "_offsets").c_str()] = offsets;
        continue;
      }
      columns[name.c_str()] =
          output_ == Output::kTorch ? ToTensor<nb::pytorch>(data) : ToTensor<nb::numpy>(data);
    }
    return columns;
  }

  int64_t NumBatches() const { return stream_ == nullptr ? 0 : stream_->num_batches(); }

  // Stops the workers and joins them; idempotent.
  void Close() {
    auto stream = std::move(stream_);
    nb::gil_scoped_release release;
    stream.reset();
  }

 private:
  std::unique_ptr<stoker::BatchStream> stream_;
  Output output_;
  std::vector<std::string> ragged_;
  std::shared_ptr<stoker::Loader> loader_;
};

// Storage options from the dict the Python layer normalizes storage_options into.
stoker::StorageOptions ParseStorage(const nb::dict& d) {
  stoker::StorageOptions storage;
  storage.region = nb::cast<std::string>(d["region"]);
  storage.endpoint_override = nb::cast<std::string>(d["endpoint_override"]);
  storage.scheme = nb::cast<std::string>(d["scheme"]);
  storage.anonymous = nb::cast<bool>(d["anonymous"]);
  storage.access_key = nb::cast<std::string>(d["access_key"]);
  storage.secret_key = nb::cast<std::string>(d["secret_key"]);
  storage.session_token = nb::cast<std::string>(d["session_token"]);
  storage.max_attempts = nb::cast<int>(d["max_attempts"]);
  storage.connect_timeout = nb::cast<double>(d["connect_timeout"]);
  storage.request_timeout = nb::cast<double>(d["request_timeout"]);
  storage.io_threads = nb::cast<int>(d["io_threads"]);
  return storage;
}

// A transform op from the dict the Python layer normalizes every op into.
stoker::TransformOp ParseOp(const nb::dict& d) {
  stoker::TransformOp op;
  op.kind = ValueOrRaise(stoker::ParseTransformKind(nb::cast<std::string>(d["op"])));
  op.columns = nb::cast<std::vector<std::string>>(d["columns"]);
  op.output = nb::cast<std::string>(d["output"]);
  op.dtype = nb::cast<std::string>(d["dtype"]);
  nb::handle value = d["value"];
  if (nb::isinstance<nb::str>(value)) {
    op.is_text = true;
    op.text = nb::cast<std::string>(value);
  } else {
    op.number = nb::cast<double>(value);
  }
  op.low = nb::cast<double>(d["min"]);
  op.high = nb::cast<double>(d["max"]);
  op.mean = nb::cast<double>(d["mean"]);
  op.std = nb::cast<double>(d["std"]);
  op.boundaries = nb::cast<std::vector<double>>(d["boundaries"]);
  op.num_buckets = nb::cast<int64_t>(d["num_buckets"]);
  op.path = nb::cast<std::string>(d["path"]);
  op.default_id = nb::cast<int64_t>(d["default"]);
  op.length = nb::cast<int64_t>(d["length"]);
  return op;
}

class PyLoader {
 public:
  PyLoader(std::vector<std::string> sources, std::vector<std::string> columns, int64_t batch_size,
           bool shuffle, uint64_t seed, int64_t shuffle_window, int rank, int world_size,
           bool drop_last, int num_threads, int prefetch, const std::string& output,
           const nb::list& transforms, std::optional<nb::bytes> filter, const nb::dict& storage,
           const std::string& cache_dir, int64_t cache_limit_bytes, const std::string& cache_policy)
      : output_(ParseOutput(output)) {
    stoker::LoaderOptions options;
    options.cache_dir = cache_dir;
    options.cache_limit_bytes = cache_limit_bytes;
    options.cache_policy =
        cache_policy == "fill" ? stoker::CachePolicy::kFill : stoker::CachePolicy::kLru;
    options.storage = ParseStorage(storage);
    for (nb::handle op : transforms) options.transforms.push_back(ParseOp(nb::cast<nb::dict>(op)));
    if (filter.has_value()) {
      auto buffer = arrow::Buffer::FromString(std::string(filter->c_str(), filter->size()));
      options.filter = ValueOrRaise(arrow::compute::Deserialize(buffer));
    }
    options.sources = std::move(sources);
    options.columns = std::move(columns);
    options.batch_size = batch_size;
    options.shuffle = shuffle;
    options.seed = seed;
    options.shuffle_window = shuffle_window;
    options.rank = rank;
    options.world_size = world_size;
    options.drop_last = drop_last;
    options.num_threads = num_threads;
    options.prefetch = prefetch;
    options.output =
        output_ == Output::kArrow ? stoker::OutputKind::kArrow : stoker::OutputKind::kTensor;
    arrow::Result<std::shared_ptr<stoker::Loader>> made;
    {
      nb::gil_scoped_release release;
      made = stoker::Loader::Make(std::move(options));
    }
    loader_ = ValueOrRaise(std::move(made));
    WarnAboutCache(*loader_);
  }

  int64_t NumBatches() const { return loader_->num_batches(); }

  nb::object Schema() const { return SchemaCapsule(*loader_->schema()); }

  Epoch* StartEpoch(int64_t epoch, const std::vector<std::pair<int, int64_t>>& resumed) {
    std::vector<stoker::ResumeRound> rounds;
    for (const auto& [world_size, rows] : resumed) rounds.push_back({world_size, rows});
    arrow::Result<std::unique_ptr<stoker::BatchStream>> stream;
    {
      nb::gil_scoped_release release;
      stream = loader_->StartEpoch(epoch, rounds);
    }
    return new Epoch(ValueOrRaise(std::move(stream)), output_, loader_);
  }

  nb::dict Stats() const {
    const auto s = loader_->stats();
    nb::dict out;
    out["rows"] = s.rows;
    out["batches"] = s.batches;
    out["units_read"] = s.units_read;
    out["bytes_read"] = s.bytes_read;
    out["read_seconds"] = s.read_seconds;
    out["decode_seconds"] = s.decode_seconds;
    out["assemble_seconds"] = s.assemble_seconds;
    out["wait_seconds"] = s.wait_seconds;
    out["delivered_digest"] = s.delivered_digest;
    out["transform_seconds"] = s.transform_seconds;
    out["row_groups_pruned"] = s.row_groups_pruned;
    out["requests"] = s.requests;
    out["bytes_fetched"] = s.bytes_fetched;
    out["retries"] = s.retries;
    out["cache_hits"] = s.cache_hits;
    out["cache_misses"] = s.cache_misses;
    out["cache_bytes_read"] = s.cache_bytes_read;
    out["cache_bytes_written"] = s.cache_bytes_written;
    out["cache_evictions"] = s.cache_evictions;
    out["cache_corrupt"] = s.cache_corrupt;
    return out;
  }

  void RestoreDigest(const std::string& hex) {
    auto status = loader_->RestoreDeliveredDigest(hex);
    if (!status.ok()) Raise(status);
  }

  const std::shared_ptr<stoker::Loader>& loader() const { return loader_; }

  nb::dict Dataset() const {
    const auto& manifest = loader_->manifest();
    nb::list files;
    for (const auto& file : manifest.files()) files.append(file.source.path);
    nb::dict out;
    out["files"] = files;
    out["rows"] = loader_->num_rows();
    out["rows_stored"] = manifest.num_rows();
    out["transform_digest"] = loader_->transforms().digest();
    out["transform_canonical"] = loader_->transforms().canonical();
    out["filter_digest"] = loader_->filter_digest();
    out["row_groups"] = static_cast<int64_t>(manifest.units().size());
    out["fingerprint"] = manifest.fingerprint();
    out["shuffle_window"] = loader_->options().ResolvedShuffleWindow();
    return out;
  }

 private:
  Output output_;
  std::shared_ptr<stoker::Loader> loader_;
};

// `stoker serve`: a Flight server over a loader.
class PyServer {
 public:
  PyServer(const PyLoader& loader, const std::string& host, int port, const std::string& token,
           const std::string& tls_cert, const std::string& tls_key, int max_streams,
           int64_t chunk_batches) {
    stoker::ServeOptions options;
    options.host = host;
    options.port = port;
    options.token = token;
    options.tls_cert_pem = tls_cert;
    options.tls_key_pem = tls_key;
    options.max_streams = max_streams;
    options.chunk_batches = chunk_batches;
    arrow::Result<std::unique_ptr<stoker::FlightService>> made;
    {
      nb::gil_scoped_release release;
      made = stoker::FlightService::Make(loader.loader(), std::move(options));
    }
    service_ = ValueOrRaise(std::move(made));
  }

  int Port() const { return service_->port(); }
  std::string Config() const { return service_->config_json(); }

  // Blocks until shutdown() or SIGINT/SIGTERM.
  void Serve() {
    arrow::Status status;
    {
      nb::gil_scoped_release release;
      status = service_->Serve();
    }
    if (!status.ok()) Raise(status);
  }

  void Shutdown() {
    arrow::Status status;
    {
      nb::gil_scoped_release release;
      status = service_->Shutdown();
    }
    if (!status.ok()) Raise(status);
  }

 private:
  std::unique_ptr<stoker::FlightService> service_;
};

std::string StreamConfig(const PyLoader& loader) {
  return stoker::StreamConfigDigest(*loader.loader());
}

}  // namespace

void BindTransformOps(nb::module_& m);  // transform_ops.cc

NB_MODULE(_core, m) {
  m.doc() = "Stoker's C++ engine (use the stoker package, not this module)";
  BindTransformOps(m);

  nb::class_<Epoch>(m, "Epoch")
      .def("next", &Epoch::Next, "The next batch, or None after the last one.")
      .def("close", &Epoch::Close, "Stop the workers now.")
      .def("num_batches", &Epoch::NumBatches);

  nb::class_<PyLoader>(m, "Loader")
      .def(nb::init<std::vector<std::string>, std::vector<std::string>, int64_t, bool, uint64_t,
                    int64_t, int, int, bool, int, int, const std::string&, const nb::list&,
                    std::optional<nb::bytes>, const nb::dict&, const std::string&, int64_t,
                    const std::string&>(),
           nb::arg("sources"), nb::arg("columns"), nb::arg("batch_size"), nb::arg("shuffle"),
           nb::arg("seed"), nb::arg("shuffle_window"), nb::arg("rank"), nb::arg("world_size"),
           nb::arg("drop_last"), nb::arg("num_threads"), nb::arg("prefetch"), nb::arg("output"),
           nb::arg("transforms"), nb::arg("filter").none(), nb::arg("storage"),
           nb::arg("cache_dir"), nb::arg("cache_limit_bytes"), nb::arg("cache_policy"))
      .def("num_batches", &PyLoader::NumBatches)
      .def("schema_capsule", &PyLoader::Schema)
      .def("start_epoch", &PyLoader::StartEpoch, nb::arg("epoch"), nb::arg("resumed"),
           nb::rv_policy::take_ownership)
      .def("restore_digest", &PyLoader::RestoreDigest, nb::arg("hex"))
      .def("stats", &PyLoader::Stats)
      .def("dataset", &PyLoader::Dataset)
      .def("stream_config", &StreamConfig);

  nb::class_<PyServer>(m, "Server")
      .def(nb::init<const PyLoader&, const std::string&, int, const std::string&,
                    const std::string&, const std::string&, int, int64_t>(),
           nb::arg("loader"), nb::arg("host"), nb::arg("port"), nb::arg("token"),
           nb::arg("tls_cert"), nb::arg("tls_key"), nb::arg("max_streams"),
           nb::arg("chunk_batches"))
      .def_prop_ro("port", &PyServer::Port)
      .def("config", &PyServer::Config)
      .def("serve", &PyServer::Serve)
      .def("shutdown", &PyServer::Shutdown);
}
