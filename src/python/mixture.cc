// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// The pure functions of a mixture (mixture/mixture_plan.h), for stoker._mixture_loader: which
// source fills each position; and the MixtureReader that starts a mixture's epochs.

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
#include "mixture/padded_stream.h"
#include "plan/plan.h"
#include "stoker/options.h"

namespace stoker::python {

namespace {

/// What stoker.MixtureLoader starts its epochs from: the sources' engine loaders, the plan,
/// the batch shape, and the tally of what every epoch delivered.
class MixtureReader {
 public:
  MixtureReader(const nb::list& sources, const MixturePlan& plan, const std::string& output)
      : output_(ParseOutput(output)) {
    std::vector<std::shared_ptr<const Loader>> engines;
    for (nb::handle source : sources) {
      loaders_.push_back(nb::cast<const PyLoader&>(source).engine());
      engines.push_back(loaders_.back());
    }
    // Recycled buffers, as the engine's own batches: no fresh pages faulted in per batch.
    static arrow::MemoryPool* pool = RecyclingPool::Default(LoaderOptions().ResolvedMemoryPool());
    config_ = ValueOrThrow(MakeMixtureConfig(engines, plan, pool));
    tally_ = std::make_shared<MixtureTally>(static_cast<int>(loaders_.size()));
  }

  /// Epoch `epoch` over this rank's [begin, end) ranges of positions (rank_share); with
  /// `padded_batches` >= 0, padded to that many full batches, the first `real_rows` rows real
  /// (PaddedStream).
  nb::object StartEpoch(int64_t epoch, const std::vector<std::pair<int64_t, int64_t>>& ranges,
                        int64_t real_rows, int64_t padded_batches) {
    std::vector<Segment> segments;
    for (const auto& [begin, end] : ranges) segments.push_back({begin, end});
    std::unique_ptr<BatchStream> stream;
    {
      nb::gil_scoped_release release;
      stream = ValueOrThrow(MixtureStream::Make(config_, epoch, std::move(segments), tally_));
      if (padded_batches >= 0) {
        stream = ValueOrThrow(PaddedStream::Make(std::move(stream), real_rows,
                                                 config_->batch_size, padded_batches,
                                                 config_->pool));
      }
    }
    return WrapEpoch(std::move(stream), output_, loaders_.front()->ragged_columns(), loaders_);
  }

  std::vector<int64_t> ShuffleWindows() const {
    std::vector<int64_t> out;
    for (const auto& source : config_->sources) out.push_back(source->options().shuffle_window);
    return out;
  }
  int NumThreads() const { return config_->num_threads; }
  std::vector<int64_t> RowsDelivered() const { return tally_->rows(); }
  int64_t BatchesDelivered() const { return tally_->batches(); }

 private:
  Output output_;
  std::vector<std::shared_ptr<Loader>> loaders_;
  std::shared_ptr<const MixtureConfig> config_;
  std::shared_ptr<MixtureTally> tally_;
};

}  // namespace

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
      .def(nb::init<const nb::list&, const MixturePlan&, const std::string&>(), nb::arg("sources"),
           nb::arg("plan"), nb::arg("output"),
           "sources: each source's _core.Loader (world size 1, built with the mixture's "
           "options), read with its share of the mixture's shuffle window.")
      .def("start_epoch", &MixtureReader::StartEpoch, nb::arg("epoch"), nb::arg("segments"),
           nb::arg("real_rows") = 0, nb::arg("padded_batches") = -1,
           "An Epoch of the mixture over this rank's [begin, end) ranges of positions; its "
           "batches are gathered ahead of the consumer on a thread of its own. With "
           "padded_batches >= 0 (pad_to_equal_steps), that many batches of batch_size rows, "
           "the first real_rows real, the rest copies of the last row read, and the _valid "
           "column.")
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
