// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// The pure functions of a mixture (plan/mixture_plan.h) and the epoch's rank segments, for
// stoker._mixture_loader: which source fills each position, and where a rank reads.

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "assemble/recycling_pool.h"
#include "assemble/slice_gather.h"
#include "binding.h"
#include "plan/mixture_plan.h"
#include "plan/plan.h"
#include "stoker/options.h"

namespace stoker::python {

namespace {

/// A source's engine batch held for the mixture's gather: imported once, sliced many times.
struct SourceBatch {
  std::shared_ptr<arrow::RecordBatch> batch;
};

/// `batch`'s columns in the order of `names` (the mixture's output order), without a copy.
std::shared_ptr<arrow::RecordBatch> InOrder(std::shared_ptr<arrow::RecordBatch> batch,
                                            const std::vector<std::string>& names) {
  if (names.empty() || batch->schema()->field_names() == names) return batch;
  arrow::FieldVector fields;
  arrow::ArrayVector columns;
  for (const std::string& name : names) {
    const int i = batch->schema()->GetFieldIndex(name);
    if (i < 0) throw StatusError(arrow::Status::KeyError("no column '", name, "'"));
    fields.push_back(batch->schema()->field(i));
    columns.push_back(batch->column(i));
  }
  return arrow::RecordBatch::Make(arrow::schema(std::move(fields)), batch->num_rows(),
                                  std::move(columns));
}

/// The mixture's batch from `slices` [(SourceBatch, offset, length), ...], as `output`.
nb::object GatherBatch(const nb::list& slices, const std::string& output,
                       const std::vector<std::string>& ragged) {
  const Output kind = ParseOutput(output);
  std::vector<BatchSlice> parts;
  parts.reserve(slices.size());
  for (nb::handle item : slices) {
    const nb::tuple slice = nb::cast<nb::tuple>(item);
    parts.push_back({nb::cast<const SourceBatch&>(slice[0]).batch, nb::cast<int64_t>(slice[1]),
                     nb::cast<int64_t>(slice[2])});
  }
  if (parts.empty()) throw StatusError(arrow::Status::Invalid("no slices to gather"));
  std::shared_ptr<arrow::RecordBatch> batch;
  {
    nb::gil_scoped_release release;
    // Recycled buffers, as the engine's own batches: no fresh pages faulted in per batch.
    static arrow::MemoryPool* pool = RecyclingPool::Default(LoaderOptions().ResolvedMemoryPool());
    batch = ValueOrThrow(GatherSlices(parts, parts[0].batch->schema(), pool));
  }
  if (kind == Output::kArrow) return BatchCapsules(*batch);
  return ToTensors(*batch, kind, ragged);
}

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
  nb::class_<SourceBatch>(m, "SourceBatch", "A source's batch held for a mixture's gather.")
      .def_prop_ro("num_rows", [](const SourceBatch& self) { return self.batch->num_rows(); });
  m.def(
      "import_batch",
      [](nb::handle batch, const std::vector<std::string>& names) {
        return SourceBatch{InOrder(ImportBatch(batch), names)};
      },
      nb::arg("batch"), nb::arg("names"),
      "A pyarrow.RecordBatch (or its capsules' holder) as a SourceBatch, columns in the order "
      "of `names` (empty: as they are); no copy.");
  m.def("gather_slices", &GatherBatch, nb::arg("slices"), nb::arg("output"), nb::arg("ragged"),
        "One batch of the rows of [(SourceBatch, offset, length), ...] in order (one copy, into "
        "recycled buffers), as `output` delivers it: a dict of arrays, or Arrow capsules.");
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
  m.def(
      "rank_segments",
      [](int64_t total_rows, const std::vector<std::pair<int, int64_t>>& resumed, int world_size,
         int rank) {
        // A one-unit plan of the epoch's positions: the plan's own checks of the rounds
        // (limits against an untrusted state) and its own elastic rule.
        PlanConfig config;
        config.shuffle = false;
        config.window_rows = total_rows;
        config.world_size = world_size;
        config.rank = rank;
        for (const auto& [round_world_size, rows] : resumed) {
          config.resumed.push_back({round_world_size, rows});
        }
        std::vector<std::pair<int64_t, int64_t>> out;
        if (total_rows == 0) return out;
        const EpochPlan plan = ValueOrThrow(EpochPlan::Make({total_rows}, config));
        for (const Segment& s : plan.segments()) out.emplace_back(s.begin, s.end);
        return out;
      },
      nb::arg("total_rows"), nb::arg("resumed"), nb::arg("world_size"), nb::arg("rank"),
      "This rank's [begin, end) ranges of an epoch of `total_rows` positions after the "
      "`resumed` (world_size, rows per rank) rounds: the elastic rule of the epoch plan.");
}

}  // namespace stoker::python
