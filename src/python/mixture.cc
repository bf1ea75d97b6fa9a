// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// The pure functions of a mixture (mixture/mixture_plan.h), for
// stoker._loading.mixture_loader: which source fills each position; and the MixtureReader that
// starts a mixture's epochs.

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "assemble/recycling_pool.h"
#include "binding.h"
#include "mixture/mixture_plan.h"
#include "mixture/mixture_stream.h"
#include "mixture/mixture_streams.h"
#include "plan/plan.h"
#include "stoker/options.h"
#include "util/cpu_affinity.h"

namespace stoker::python {

namespace {

/// What stoker.MixtureLoader starts its epochs from: the sources' engine loaders, the plan,
/// how ranks share an epoch (MixtureStreams), and the tally of what every epoch delivered.
class MixtureReader {
 public:
  MixtureReader(const nb::list& sources, const MixturePlan& plan, const std::string& output,
                const std::string& mode, bool pad_to_equal_steps)
      : output_(ParseOutput(output)) {
    std::vector<std::shared_ptr<const Loader>> engines;
    for (nb::handle source : sources) {
      loaders_.push_back(nb::cast<const PyLoader&>(source).engine());
      engines.push_back(loaders_.back());
    }
    // Recycled buffers, as the engine's own batches: no fresh pages faulted in per batch.
    static arrow::MemoryPool* pool = RecyclingPool::Default(LoaderOptions().ResolvedMemoryPool());
    auto config = ValueOrThrow(MakeMixtureConfig(engines, plan, pool));
    tally_ = std::make_shared<MixtureTally>(static_cast<int>(loaders_.size()));
    MixtureSharing sharing;
    sharing.batch_size = config->batch_size;
    sharing.drop_last = config->drop_last;
    sharing.exactly_once = ValueOrThrow(ParseLoaderMode(mode)) == LoaderMode::kEval;
    sharing.pad_to_equal_steps = pad_to_equal_steps;
    streams_ = ValueOrThrow(MixtureStreams::Make(std::move(config), sharing, tally_));
  }

  /// Epoch `epoch` for rank `rank` of `world_size` after the `resumed` (world_size, rows per
  /// rank) rounds: all of the rank's batches.
  nb::object StartEpoch(int64_t epoch, const std::vector<std::pair<int, int64_t>>& resumed,
                        int rank, int world_size) {
    LoaderImpl::StreamSpec spec;
    spec.epoch = epoch;
    spec.rank = rank;
    spec.world_size = world_size;
    for (const auto& [round_world_size, rows] : resumed) {
      spec.resumed.push_back({round_world_size, rows});
    }
    std::unique_ptr<BatchStream> stream;
    {
      nb::gil_scoped_release release;
      // On engine_cpus the epoch starts on a pinned thread: its one pool takes that mask.
      stream = ValueOrThrow(OnEngineCpus(streams_->config().sources.front()->options().engine_cpus,
                                         [&] { return streams_->StartStream(spec); }));
    }
    return WrapEpoch(std::move(stream), output_, loaders_.front()->ragged_columns(), loaders_);
  }

  std::vector<int64_t> ShuffleWindows() const {
    std::vector<int64_t> out;
    for (const auto& source : streams_->config().sources) {
      out.push_back(source->options().shuffle_window);
    }
    return out;
  }
  int NumThreads() const { return streams_->config().num_threads; }
  std::vector<int64_t> RowsDelivered() const { return tally_->rows(); }
  int64_t BatchesDelivered() const { return tally_->batches(); }
  const std::shared_ptr<const MixtureStreams>& streams() const { return streams_; }

 private:
  Output output_;
  std::vector<std::shared_ptr<Loader>> loaders_;
  std::shared_ptr<MixtureTally> tally_;
  std::shared_ptr<const MixtureStreams> streams_;
};

}  // namespace

std::shared_ptr<const MixtureStreams> MixtureStreamsOf(nb::handle reader) {
  return nb::cast<const MixtureReader&>(reader).streams();
}

void BindMixture(nb::module_& m) {
  nb::class_<MixturePlan>(m, "MixturePlan",
                          "Which source fills each position of a mixture's epoch: a pure "
                          "function of (source rows, batch rows, seed, epoch, position).")
      .def(
          "__init__",
          [](MixturePlan* self, std::vector<int64_t> source_rows, int64_t batch_rows,
             uint64_t seed) {
            new (self) MixturePlan(
                ValueOrThrow(MixturePlan::Make(std::move(source_rows), batch_rows, seed)));
          },
          nb::arg("source_rows"), nb::arg("batch_rows"), nb::arg("seed"),
          "batch_rows 0: proportion mode; > 0: stratified batches of that many rows.")
      .def_prop_ro("epoch_rows", &MixturePlan::epoch_rows)
      .def_prop_ro("source_rows", &MixturePlan::source_rows)
      .def_prop_ro("block_rows", &MixturePlan::block_rows)
      .def_prop_ro("num_blocks", &MixturePlan::num_blocks)
      .def_prop_ro("stratified", &MixturePlan::stratified)
      .def("rows_before_block", &MixturePlan::RowsBeforeBlock, nb::arg("block"),
           "Rows of each source before block `block` (the same every epoch).")
      .def(
          "block_sources",
          [](const MixturePlan& self, int64_t epoch, int64_t block) {
            std::vector<uint8_t> sources;
            {
              nb::gil_scoped_release release;
              sources = self.BlockSources(epoch, block);
            }
            return nb::bytes(reinterpret_cast<const char*>(sources.data()), sources.size());
          },
          nb::arg("epoch"), nb::arg("block"),
          "The source index of every position of the block, one byte each.")
      .def("rows_before", &MixturePlan::RowsBefore, nb::arg("epoch"), nb::arg("position"),
           ReleaseGil(), "Rows of each source in positions [0, position) of the epoch.");
  nb::class_<MixtureReader>(m, "MixtureReader",
                            "Starts a mixture's epochs (src/mixture/mixture_stream.h) and counts "
                            "what they delivered.")
      .def(nb::init<const nb::list&, const MixturePlan&, const std::string&, const std::string&,
                    bool>(),
           nb::arg("sources"), nb::arg("plan"), nb::arg("output"), nb::arg("mode") = "train",
           nb::arg("pad_to_equal_steps") = false,
           "sources: each source's _core.Loader (world size 1, built with the mixture's "
           "options), read with its share of the mixture's shuffle window; mode and "
           "pad_to_equal_steps: how ranks share an epoch's positions (a Loader's rule).")
      .def("start_epoch", &MixtureReader::StartEpoch, nb::arg("epoch"), nb::arg("resumed"),
           nb::arg("rank"), nb::arg("world_size"),
           "An Epoch of the mixture for this rank after the resumed (world_size, rows per "
           "rank) rounds; its batches are gathered ahead of the consumer. Padded "
           "(pad_to_equal_steps): batch_size rows each, copies of the plan's pad position's "
           "row after the real ones, and the _valid column.")
      .def_prop_ro("shuffle_windows", &MixtureReader::ShuffleWindows,
                   "Each source's share of the mixture's shuffle window, in rows.")
      .def_prop_ro("num_threads", &MixtureReader::NumThreads,
                   "Worker threads of each epoch, which every source's engine shares.")
      .def("rows_delivered", &MixtureReader::RowsDelivered,
           "Rows each source delivered, over every epoch started here.")
      .def("batches_delivered", &MixtureReader::BatchesDelivered);
  m.def(
      "apportion",
      [](int64_t total, const std::vector<double>& weights, uint64_t tie_key) {
        return Apportion(total, WeightQuotas(weights), tie_key);
      },
      nb::arg("total"), nb::arg("weights"), nb::arg("tie_key"),
      "`total` rows split in proportion to `weights` (each > 0) by largest remainder, ties "
      "ordered by `tie_key`.");
  m.def("mixture_source_seed", &MixtureSourceSeed, nb::arg("seed"), nb::arg("source"),
        "The seed of source `source`'s own plan in a mixture seeded `seed`.");
}

}  // namespace stoker::python
