// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// stoker._core.Loader and Epoch: the engine's Loader and its epochs, batches delivered as
// tensors (tensors.cc) or Arrow capsules. Every call that can block releases the GIL.

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <memory>

#include "exec/autotune.h"
#include "loader/loader_internal.h"
#include "loader/resume_identity.h"
#include "manifest/manifest.h"
#include "plan/plan.h"
#include "python/binding.h"
#include "stoker/stream_identity.h"
#include "transform/transform_spec.h"
#include "util/cpu_affinity.h"
#include "util/cpu_budget_internal.h"

namespace stoker::python {

namespace {

// How long one wait_ready() blocks: the Python caller loops on it, so Ctrl-C is noticed
// between waits.
constexpr std::chrono::milliseconds kSignalPollInterval{100};

// Shows the disk cache's warning (writes turned off), once, as a Python RuntimeWarning.
void WarnAboutCache(const Loader& loader) {
  const std::string warning = Internal(loader).TakeCacheWarning();
  if (!warning.empty() && PyErr_WarnEx(PyExc_RuntimeWarning, warning.c_str(), 1) != 0) {
    throw nb::python_error();
  }
}

// One epoch being read; Python iterates it: wait_ready() until true, then next().
//
// After a fork the epoch's worker threads exist only in the parent: in the child, waiting on
// the stream would wait forever and destroying it would join threads that are not there. So
// an epoch remembers the process that started it; in another one, reading it raises and
// closing it lets the stream go without destroying it (its memory is the parent's copy).
class Epoch {
 public:
  Epoch(std::unique_ptr<BatchStream> stream, Output output, std::vector<std::string> ragged,
        std::vector<std::shared_ptr<Loader>> loaders)
      : stream_(std::move(stream)),
        output_(output),
        ragged_(std::move(ragged)),
        loaders_(std::move(loaders)),
        pid_(getpid()) {}

  ~Epoch() { Close(); }

  // True when next() would not block (called without the GIL).
  bool WaitReady() {
    if (stream_ == nullptr) return true;
    ThrowIfForked();
    return stream_->WaitReady(kSignalPollInterval);
  }

  // The next batch, or None after the last one. Called once WaitReady() said it would not
  // block, so it keeps the GIL while it converts.
  nb::object Next() {
    if (stream_ == nullptr) return nb::none();
    ThrowIfForked();
    auto next = stream_->Next();
    for (const auto& loader : loaders_) WarnAboutCache(*loader);
    auto batch = ValueOrThrow(std::move(next));
    if (batch == nullptr) return nb::none();
    if (output_ == Output::kArrow) return BatchCapsules(*batch);
    if (kjt_ != nullptr) return ToKjtParts(*batch, *kjt_, KjtPool());
    return ToTensors(*batch, output_, ragged_);
  }

  // Delivers batches as TorchRec's parts (ToKjtParts) from now on.
  void UseKjt(const KjtSpec& spec) { kjt_ = std::make_shared<const KjtSpec>(spec); }

 private:
  // Where the parts ToKjtParts makes are allocated: the batches' own pool (pinned for a
  // device) when the epoch is one loader's.
  arrow::MemoryPool* KjtPool() const {
    if (loaders_.size() == 1) return Internal(*loaders_[0]).output_pool();
    return arrow::default_memory_pool();
  }

 public:
  int64_t NumBatches() const { return stream_ == nullptr ? 0 : stream_->num_batches(); }

  // Planned rows the batches delivered so far stand for (skipped units' rows included).
  int64_t PlannedRows() const { return stream_ == nullptr ? 0 : stream_->planned_rows_delivered(); }

  // Stops the workers and joins them (called without the GIL); idempotent. In a forked child
  // the workers are the parent's: the stream is let go, never destroyed (see above).
  void Close() {
    if (getpid() != pid_) {
      static_cast<void>(stream_.release());
      return;
    }
    stream_.reset();
  }

 private:
  void ThrowIfForked() const {
    if (getpid() == pid_) return;
    throw StatusError(arrow::Status::UnknownError(
        "this epoch was started in process ", pid_, " and read after a fork in process ", getpid(),
        ": its worker threads exist only in the parent. Start a new iter(loader) in "
        "the child (or create the Loader there)"));
  }

  std::unique_ptr<BatchStream> stream_;
  Output output_;
  std::vector<std::string> ragged_;
  std::shared_ptr<const KjtSpec> kjt_;  // null: dicts of tensors
  // The loaders whose cache warnings its batches raise (they outlive the stream).
  std::vector<std::shared_ptr<Loader>> loaders_;
  // The process that started the epoch.
  pid_t pid_;
};

Epoch* StartEpoch(const PyLoader& self, int64_t epoch,
                  const std::vector<std::pair<int, int64_t>>& resumed) {
  std::vector<ResumeRound> rounds;
  for (const auto& [world_size, rows] : resumed) rounds.push_back({world_size, rows});
  // On engine_cpus the epoch starts on a pinned thread, so its workers take that mask.
  auto stream = ValueOrThrow(OnEngineCpus(self.engine()->options().engine_cpus, [&] {
    return self.engine()->StartEpoch(epoch, rounds);
  }));
  return new Epoch(std::move(stream), self.output(), self.engine()->ragged_columns(),
                   {self.engine()});
}

// A share of this rank's epoch (StreamSpec's shards, shard, span, chunk, first): what a
// RemoteLoader serving part of a fleet's plan on its own cores reads (local first).
Epoch* StartShare(const PyLoader& self, int64_t epoch,
                  const std::vector<std::pair<int, int64_t>>& resumed, int64_t shards,
                  int64_t shard, int64_t span, int64_t chunk, int64_t first) {
  LoaderImpl::StreamSpec spec;
  spec.epoch = epoch;
  for (const auto& [world_size, rows] : resumed) spec.resumed.push_back({world_size, rows});
  spec.rank = self.engine()->options().rank;
  spec.world_size = self.engine()->options().world_size;
  spec.shards = shards;
  spec.shard = shard;
  spec.span = span;
  spec.chunk = chunk;
  spec.first_batch = first;
  auto stream = ValueOrThrow(OnEngineCpus(self.engine()->options().engine_cpus, [&] {
    return Internal(*self.engine()).StartStream(spec);
  }));
  return new Epoch(std::move(stream), self.output(), self.engine()->ragged_columns(),
                   {self.engine()});
}

// The controller's state for stats()["autotune"]: off, or the setting and the last decisions.
nb::dict AutotuneDict(const LoaderImpl& loader) {
  nb::dict out;
  const auto& tune = loader.tune();
  out["enabled"] = tune != nullptr;
  if (tune == nullptr) return out;
  const TuneSetting current = tune->current();
  out["threads"] = current.threads;
  out["prefetch"] = current.prefetch;
  out["read_ahead"] = current.read_ahead;
  nb::list tuned;
  if (tune->bounds().tune_threads) tuned.append("threads");
  if (tune->bounds().tune_prefetch) tuned.append("prefetch");
  if (tune->bounds().tune_read_ahead) tuned.append("read_ahead");
  out["tuned"] = tuned;
  out["max_threads"] = tune->bounds().max_threads;
  out["max_prefetch"] = tune->bounds().max_prefetch;
  out["max_read_ahead"] = tune->bounds().max_read_ahead;
  out["target_stall"] = tune->options().target_stall;
  out["windows"] = tune->windows();
  out["decisions"] = tune->decisions();
  nb::list recent;
  for (const TuneDecision& d : tune->recent()) {
    nb::dict item;
    item["at_seconds"] = d.at_seconds;
    item["epoch"] = d.epoch;
    item["batch"] = d.batch;
    item["action"] = d.action;
    item["threads"] = nb::make_tuple(d.from.threads, d.to.threads);
    item["prefetch"] = nb::make_tuple(d.from.prefetch, d.to.prefetch);
    item["read_ahead"] = nb::make_tuple(d.from.read_ahead, d.to.read_ahead);
    // None for a random move, which no window's figures made.
    item["stall"] = std::isnan(d.stall) ? nb::none() : nb::cast(d.stall);
    item["busy"] = std::isnan(d.busy) ? nb::none() : nb::cast(d.busy);
    item["reason"] = d.reason;
    recent.append(item);
  }
  out["recent"] = recent;
  if (const auto& node = tune->node()) {  // ranks on this node sharing its CPUs by need
    nb::dict shared;
    shared["job_from"] = node->key().job_from;
    shared["local_rank"] = node->key().local_rank;
    shared["ranks"] = node->ranks();
    shared["cpus"] = node->cpus();
    shared["share"] = tune->share();
    shared["others_used"] = node->OthersUsed();
    shared["allowance"] = node->Allowance(tune->share());
    out["node"] = shared;
  }
  return out;
}

nb::dict Stats(const PyLoader& self) {
  nb::dict out = ToDict(self.engine()->stats());
  out["autotune"] = AutotuneDict(Internal(*self.engine()));
  out["threads"] = self.engine()->options().ResolvedThreads();
  out["io_threads"] = self.engine()->options().storage.ResolvedIoThreads();
  out["cpu_budget"] = ToDict(self.engine()->cpu_budget());
  return out;
}

nb::dict Dataset(const PyLoader& self) {
  const auto& loader = *self.engine();
  const auto& manifest = Internal(loader).manifest();
  nb::list files;
  for (const auto& file : manifest.files()) files.append(file.source.path);
  nb::dict out;
  out["files"] = files;
  out["rows"] = loader.num_rows();
  out["rows_stored"] = manifest.num_rows();
  out["transform_digest"] = Internal(loader).transforms().digest();
  out["transform_canonical"] = Internal(loader).transforms().canonical();
  out["filter_digest"] = loader.filter_digest();
  out["row_groups"] = static_cast<int64_t>(manifest.units().size());
  out["fingerprint"] = manifest.fingerprint();
  out["manifest_bytes"] = manifest.HeldBytes();
  auto plan = Internal(loader).PlanEpoch(0);
  out["plan_bytes"] = plan.ok() ? plan->HeldBytes() : int64_t{0};
  out["shuffle_window"] = loader.options().ResolvedShuffleWindow();
  return out;
}

}  // namespace

nb::object WrapEpoch(std::unique_ptr<BatchStream> stream, Output output,
                     std::vector<std::string> ragged,
                     std::vector<std::shared_ptr<Loader>> loaders) {
  return nb::cast(new Epoch(std::move(stream), output, std::move(ragged), std::move(loaders)),
                  nb::rv_policy::take_ownership);
}

PyLoader::PyLoader(LoaderOptions options, const std::string& output)
    : output_(ParseOutput(output)) {
  options.output = output_ == Output::kArrow      ? OutputKind::kArrow
                   : output_ == Output::kTorchrec ? OutputKind::kJagged
                                                  : OutputKind::kTensor;
  loader_ = ValueOrThrow(Loader::Make(std::move(options)));
}

void BindLoader(nb::module_& m) {
  // The resume identity's fields (loader/resume_identity.h): (name, config key, checked,
  // what a mismatch names, the JSON a state without the field meant or None).
  nb::list identity;
  for (const IdentityField& field : kResumeIdentity) {
    identity.append(nb::make_tuple(
        field.name, field.config_key, field.checked, field.what,
        field.absent == nullptr ? nb::object(nb::none()) : nb::object(nb::str(field.absent))));
  }
  m.attr("RESUME_IDENTITY") = nb::tuple(identity);
  m.def(
      "read_cpu_budget",
      [](const std::string& cgroup_root) { return ToDict(ReadCpuBudget(cgroup_root)); },
      nb::arg("cgroup_root") = kCgroupRoot,
      "The CPUs this process may use and this rank's share (what num_threads=None resolves "
      "to): the affinity mask, the cgroup's CPU quota, the ranks on this node.");
  nb::class_<Epoch>(m, "Epoch")
      .def("wait_ready", &Epoch::WaitReady, ReleaseGil(),
           "Waits up to 100 ms; True once next() would not block.")
      .def("next", &Epoch::Next, "The next batch, or None after the last one.")
      .def("close", &Epoch::Close, ReleaseGil(), "Stop the workers now.")
      .def("use_kjt", &Epoch::UseKjt, nb::arg("spec"),
           "Deliver the batches as TorchRec's parts (to_kjt_parts) from now on.")
      .def("num_batches", &Epoch::NumBatches)
      .def("planned_rows", &Epoch::PlannedRows,
           "Planned rows of the batches delivered so far (skipped units' rows included).");

  nb::class_<PyLoader>(m, "Loader")
      .def(nb::init<LoaderOptions, const std::string&>(), nb::arg("options"), nb::arg("output"),
           ReleaseGil())
      .def("warn_about_cache", [](const PyLoader& self) { WarnAboutCache(*self.engine()); })
      .def("num_batches", [](const PyLoader& self) { return self.engine()->num_batches(); })
      .def("schema_capsule",
           [](const PyLoader& self) { return SchemaCapsule(*self.engine()->schema()); })
      .def("start_epoch", &StartEpoch, nb::arg("epoch"), nb::arg("resumed"),
           nb::rv_policy::take_ownership, ReleaseGil())
      .def("start_share", &StartShare, nb::arg("epoch"), nb::arg("resumed"), nb::kw_only(),
           nb::arg("shards"), nb::arg("shard"), nb::arg("span"), nb::arg("chunk"), nb::arg("first"),
           nb::rv_policy::take_ownership, ReleaseGil(),
           "The batches b of this rank's epoch with shard <= (b // chunk) % shards < shard + "
           "span and b >= first, in plan order.")
      .def(
          "restore_digest",
          [](const PyLoader& self, const std::string& hex) {
            ThrowIfError(Internal(*self.engine()).RestoreDeliveredDigest(hex));
          },
          nb::arg("hex"))
      .def("stats", &Stats)
      .def(
          "write_trace",
          [](const PyLoader& self, const std::string& path) {
            ThrowIfError(self.engine()->WriteTrace(path));
          },
          nb::arg("path"), ReleaseGil())
      .def("dataset", &Dataset)
      .def(
          "config",
          [](const PyLoader& self) {
            return StreamConfigJson(*self.engine(), kDefaultChunkBatches);
          },
          "What a server over this loader would advertise (JSON, docs/serve.md).");
}

}  // namespace stoker::python
