// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// The option structs as Python classes. A Python object default-constructs its C++ struct, so
// every default is the struct's (include/stoker/options.h and siblings); each field is an
// attribute with the struct's name; range checks stay in the structs' Validate(). What is
// converted here is only what Python spells differently: None for C++'s "0 means the
// default", names for enums, the filter's serialized form, codec dicts (transform specs:
// transform_spec.cc).

#include "stoker/options.h"

#include <arrow/buffer.h>
#include <arrow/compute/expression.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <arrow/ipc/writer.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <vector>

#include "exec/autotune.h"
#include "python/binding.h"
#include "stoker/flight_service.h"
#include "transform/row_filter.h"

namespace stoker::python {

namespace {

// A bound options struct: `fields` lists its attributes in the order they are bound (what
// Python copies keyword arguments into) and repr shows them.
template <typename T>
class OptionsClass {
 public:
  OptionsClass(nb::module_& m, const char* name, const char* doc) : cls_(m, name, doc) {
    cls_.def(nb::init<>());
  }

  template <typename V>
  OptionsClass& Field(const char* name, V T::*member) {
    cls_.def_rw(name, member);
    names_.append(name);
    return *this;
  }

  // Every field of a struct's FieldsOf list (stoker/fields.h), set by name as it is.
  template <typename... Members>
  OptionsClass& Fields(const std::tuple<Members...>& fields) {
    std::apply([this](const auto&... field) { (Field(field.name.data(), field.member), ...); },
               fields);
    return *this;
  }

  template <typename Getter, typename Setter>
  OptionsClass& Property(const char* name, Getter&& getter, Setter&& setter) {
    cls_.def_prop_rw(name, std::forward<Getter>(getter), std::forward<Setter>(setter));
    names_.append(name);
    return *this;
  }

  // A count whose C++ 0 means "the default": Python reads and writes None for it. An explicit
  // 0 is refused rather than silently meaning the default.
  template <typename V>
  OptionsClass& DefaultableCount(const char* name, V T::*member) {
    return Property(
        name,
        [member](const T& o) -> std::optional<V> {
          return o.*member == 0 ? std::nullopt : std::optional<V>(o.*member);
        },
        [member, name](T& o, std::optional<V> value) {
          if (value == V{0}) {
            throw StatusError(
                arrow::Status::Invalid(name, " must be >= 1, or None for the default, got 0"));
          }
          o.*member = value.value_or(V{0});
        });
  }

  nb::class_<T>& Finish() {
    cls_.attr("fields") = nb::tuple(names_);
    cls_.def("__repr__", [](nb::handle self) {
      std::string out = nb::cast<std::string>(self.type().attr("__name__")) + "(";
      for (nb::handle name : self.attr("fields")) {
        out += nb::cast<std::string>(name) + "=" +
               nb::cast<std::string>(nb::repr(self.attr(name))) + ", ";
      }
      return out.substr(0, out.size() - 2) + ")";
    });
    return cls_;
  }

 private:
  nb::class_<T> cls_;
  nb::list names_;
};

// The value of `key` of a codec's dict as a V; a TypeError naming the key when it is not one
// (nb::cast alone raises RuntimeError("std::bad_cast"), found by make fuzz's transform_spec
// target when transforms were read this way too).
template <typename V>
V Cast(const nb::dict& d, const char* key) {
  try {
    return nb::cast<V>(d[key]);
  } catch (const nb::cast_error&) {
    throw nb::type_error(
        ("codecs: '" + std::string(key) + "' cannot be " + nb::cast<std::string>(nb::repr(d[key])))
            .c_str());
  }
}

// The filter in Arrow's own serialized form (arrow::compute::Serialize), which pyarrow's
// pickling produces and the engine's filter digest is computed from.
std::optional<nb::bytes> SerializedFilter(const LoaderOptions& o) {
  if (!o.filter.has_value()) return std::nullopt;
  auto buffer = ValueOrThrow(arrow::compute::Serialize(*o.filter));
  return nb::bytes(buffer->data(), static_cast<size_t>(buffer->size()));
}

void SetSerializedFilter(LoaderOptions& o, std::optional<nb::bytes> serialized) {
  if (!serialized.has_value()) {
    o.filter.reset();
    return;
  }
  auto buffer = arrow::Buffer::FromString(std::string(serialized->c_str(), serialized->size()));
  o.filter = ValueOrThrow(RowFilter::Deserialize(buffer));
}

// A partition schema in Arrow's IPC form (pyarrow's Schema.serialize()); None for none.
std::optional<nb::bytes> SerializedSchema(const PartitionOptions& o) {
  if (o.schema == nullptr) return std::nullopt;
  auto buffer = ValueOrThrow(arrow::ipc::SerializeSchema(*o.schema));
  return nb::bytes(buffer->data(), static_cast<size_t>(buffer->size()));
}

void SetSerializedSchema(PartitionOptions& o, std::optional<nb::bytes> serialized) {
  if (!serialized.has_value()) {
    o.schema.reset();
    return;
  }
  arrow::io::BufferReader reader(
      arrow::Buffer::FromString(std::string(serialized->c_str(), serialized->size())));
  arrow::ipc::DictionaryMemo memo;
  auto schema = arrow::ipc::ReadSchema(&reader, &memo);
  if (!schema.ok()) {
    throw StatusError(arrow::Status::Invalid("partitioning: the schema could not be read: ",
                                             schema.status().message()));
  }
  o.schema = *schema;
}

// seed is a uint64: a negative or too large int is a range error, not a type error.
void SetSeed(LoaderOptions& o, nb::int_ seed) {
  const unsigned long long value = PyLong_AsUnsignedLongLong(seed.ptr());
  if (PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    throw StatusError(arrow::Status::Invalid("seed must be >= 0 and < 2**64, got ",
                                             nb::cast<std::string>(nb::repr(seed))));
  }
  o.seed = value;
}

// LoaderOptions::codecs as Python spells them: a list of dicts {"column", "codec", "dtype",
// "shape"} (shape a list of sizes, -1 for an unknown one).
nb::list CodecsToList(const LoaderOptions& o) {
  nb::list out;
  for (const ColumnCodec& codec : o.codecs) {
    nb::dict d;
    d["column"] = codec.column;
    d["codec"] = std::string(ValueCodecName(codec.codec));
    d["dtype"] = codec.dtype;
    d["shape"] = codec.shape;
    out.append(d);
  }
  return out;
}

void SetCodecs(LoaderOptions& o, const std::vector<nb::dict>& codecs) {
  std::vector<ColumnCodec> out;
  for (const nb::dict& d : codecs) {
    for (const char* key : {"column", "codec", "dtype", "shape"}) {
      if (!d.contains(key)) {
        throw StatusError(arrow::Status::Invalid("codecs: each codec needs a '", key, "' key"));
      }
    }
    ColumnCodec codec;
    codec.column = Cast<std::string>(d, "column");
    codec.codec = ValueOrThrow(ParseValueCodec(Cast<std::string>(d, "codec")));
    codec.dtype = Cast<std::string>(d, "dtype");
    codec.shape = Cast<std::vector<int64_t>>(d, "shape");
    out.push_back(std::move(codec));
  }
  o.codecs = std::move(out);
}

void BindTransformOp(nb::module_& m) {
  OptionsClass<TransformOp>(m, "TransformOp", "One step of a transform spec (transform_options.h).")
      .Property(
          "kind", [](const TransformOp& op) { return std::string(TransformKindName(op.kind)); },
          [](TransformOp& op, const std::string& name) {
            op.kind = ValueOrThrow(ParseTransformKind(name));
          })
      .Field("columns", &TransformOp::columns)
      .Field("output", &TransformOp::output)
      .Field("dtype", &TransformOp::dtype)
      .Field("number", &TransformOp::number)
      .Field("text", &TransformOp::text)
      .Field("is_text", &TransformOp::is_text)
      .Field("low", &TransformOp::low)
      .Field("high", &TransformOp::high)
      .Field("mean", &TransformOp::mean)
      .Field("std", &TransformOp::std)
      .Field("boundaries", &TransformOp::boundaries)
      .Field("num_buckets", &TransformOp::num_buckets)
      .Field("path", &TransformOp::path)
      .Field("default_id", &TransformOp::default_id)
      .Field("length", &TransformOp::length)
      .Field("keep", &TransformOp::keep)
      .Field("p", &TransformOp::p)
      .Field("size", &TransformOp::size)
      .Field("key", &TransformOp::key)
      .Finish();
}

void BindStorageOptions(nb::module_& m) {
  OptionsClass<StorageOptions>(m, "StorageOptions",
                               "How to reach object storage (storage_options.h).")
      .Field("region", &StorageOptions::region)
      .Field("endpoint_override", &StorageOptions::endpoint_override)
      .Field("scheme", &StorageOptions::scheme)
      .Field("anonymous", &StorageOptions::anonymous)
      .Field("access_key", &StorageOptions::access_key)
      .Field("secret_key", &StorageOptions::secret_key)
      .Field("session_token", &StorageOptions::session_token)
      .Field("max_attempts", &StorageOptions::max_attempts)
      .Field("connect_timeout", &StorageOptions::connect_timeout)
      .Field("request_timeout", &StorageOptions::request_timeout)
      .Field("io_threads", &StorageOptions::io_threads)
      .Field("metadata_threads", &StorageOptions::metadata_threads)
      .Finish();
}

void BindPartitionOptions(nb::module_& m) {
  OptionsClass<PartitionOptions>(m, "PartitionOptions",
                                 "Where partition values come from (partition_options.h).")
      .Field("hive", &PartitionOptions::hive)
      .Property("schema", &SerializedSchema, &SetSerializedSchema)
      .Field("file_values", &PartitionOptions::file_values)
      .Field("stored_in_files", &PartitionOptions::stored_in_files)
      .Finish();
}

void BindAutotuneOptions(nb::module_& m) {
  OptionsClass<AutotuneOptions>(m, "AutotuneOptions",
                                "How the loader sizes itself (options.h, docs/autotune.md).")
      .Field("enabled", &AutotuneOptions::enabled)
      .Field("target_stall", &AutotuneOptions::target_stall)
      .Field("window_batches", &AutotuneOptions::window_batches)
      .Field("window_seconds", &AutotuneOptions::window_seconds)
      .Property(
          "random_moves", [](const AutotuneOptions& o) { return RandomMoves(o); },
          [](AutotuneOptions& o, uint64_t seed) { SetRandomMoves(&o, seed); })
      .Finish();
}

void BindLoaderOptions(nb::module_& m) {
  // Not bound: `output` (the Loader binding sets it from "numpy"/"torch"/"arrow") and
  // `memory_pool` (a C++ hook).
  OptionsClass<LoaderOptions>(m, "LoaderOptions",
                              "Everything that configures a Loader (options.h).")
      .Fields(FieldsOf(LoaderOptions{}))
      .Property(
          "seed", [](const LoaderOptions& o) { return o.seed; }, &SetSeed)
      .DefaultableCount("shuffle_window", &LoaderOptions::shuffle_window)
      .Property(
          "mode", [](const LoaderOptions& o) { return std::string(LoaderModeName(o.mode)); },
          [](LoaderOptions& o, const std::string& name) {
            o.mode = ValueOrThrow(ParseLoaderMode(name));
          })
      .DefaultableCount("num_threads", &LoaderOptions::num_threads)
      .DefaultableCount("prefetch", &LoaderOptions::prefetch)
      .Property(
          "cache_dir",
          [](const LoaderOptions& o) {
            return o.cache_dir.empty() ? std::nullopt : std::optional<std::string>(o.cache_dir);
          },
          [](LoaderOptions& o, std::optional<std::string> dir) { o.cache_dir = dir.value_or(""); })
      .Property(
          "cache_policy",
          [](const LoaderOptions& o) { return std::string(CachePolicyName(o.cache_policy)); },
          [](LoaderOptions& o, const std::string& name) {
            o.cache_policy = ValueOrThrow(ParseCachePolicy(name));
          })
      .Property(
          "on_error", [](const LoaderOptions& o) { return std::string(OnErrorName(o.on_error)); },
          [](LoaderOptions& o, const std::string& name) {
            o.on_error = ValueOrThrow(ParseOnError(name));
          })
      .Property(
          "index", [](const LoaderOptions& o) { return std::string(IndexPolicyName(o.index)); },
          // None: the default, "use".
          [](LoaderOptions& o, const std::optional<std::string>& name) {
            o.index = name.has_value() ? ValueOrThrow(ParseIndexPolicy(*name)) : IndexPolicy::kUse;
          })
      .Property("codecs", &CodecsToList, &SetCodecs)
      .Property("filter", &SerializedFilter, &SetSerializedFilter)
      .Finish()
      .def(
          "validate", [](const LoaderOptions& o) { ThrowIfError(o.Validate()); },
          "Raises ValueError naming the first option out of range.");
}

void BindServeOptions(nb::module_& m) {
  OptionsClass<ServeOptions>(m, "ServeOptions", "How `stoker serve` runs (flight_service.h).")
      .Field("host", &ServeOptions::host)
      .Field("port", &ServeOptions::port)
      .Field("token", &ServeOptions::token)
      .Field("tls_cert_pem", &ServeOptions::tls_cert_pem)
      .Field("tls_key_pem", &ServeOptions::tls_key_pem)
      .Field("max_streams", &ServeOptions::max_streams)
      .Field("chunk_batches", &ServeOptions::chunk_batches)
      .Field("stream_idle_timeout_s", &ServeOptions::stream_idle_timeout_s)
      .Field("shutdown_grace_s", &ServeOptions::shutdown_grace_s)
      .Finish()
      .def(
          "validate", [](const ServeOptions& o) { ThrowIfError(o.Validate()); },
          "Raises ValueError naming the first option out of range.");
}

}  // namespace

void BindOptions(nb::module_& m) {
  BindTransformOp(m);
  BindStorageOptions(m);
  BindPartitionOptions(m);
  BindAutotuneOptions(m);
  BindLoaderOptions(m);
  BindServeOptions(m);
  m.attr("DEFAULT_TRACE_EVENTS") = kDefaultTraceEvents;
  m.attr("DEFAULT_SHUFFLE_WINDOW") = kDefaultShuffleWindowRows;
  m.attr("LATEST_PLAN_VERSION") = kLatestPlanVersion;
  m.attr("DEFAULT_METADATA_THREADS") = StorageOptions::kDefaultMetadataThreads;
  m.def(
      "validate_rank",
      [](int rank, int world_size) { ThrowIfError(ValidateRank(rank, world_size)); },
      nb::arg("rank"), nb::arg("world_size"),
      "Raises ValueError unless 0 <= rank < world_size (the check LoaderOptions uses).");
}

}  // namespace stoker::python
