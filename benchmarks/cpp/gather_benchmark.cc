// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The shuffled gather in isolation, on one thread: every batch of one shuffle window
// assembled from in-memory units, staged row-major (what shuffled epochs do) or columnar
// (what they did before, and what unshuffled epochs do). Prints the best of --repeats runs
// in ns per row, which holds up on a busy machine far better than wall-clock throughput.
//
//   gather_benchmark [--preset criteo|wide|embeddings|dlrm] [--repeats N] [--window ROWS]
//                    [--unit ROWS] [--pool jemalloc|mimalloc|system] [--recycle 0|1]
//                    [--plan-version N]
#include <arrow/api.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <string>

#include "assemble/assembler.h"
#include "assemble/recycling_pool.h"
#include "assemble/row_store.h"
#include "exec/unit_reader.h"
#include "plan/plan.h"
#include "util/digest.h"

namespace stoker {
namespace {

using Clock = std::chrono::steady_clock;

// Minor page faults so far: on a VM each costs microseconds, so they are worth counting.
int64_t MinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

struct Preset {
  std::string name;
  std::shared_ptr<arrow::Schema> schema;
};

Preset MakePreset(const std::string& name) {
  arrow::FieldVector fields;
  if (name == "criteo") {
    // As `stoker gen --preset criteo`: row_id, label, 13 float features, 26 int64 ids.
    fields.push_back(arrow::field("row_id", arrow::int64(), false));
    fields.push_back(arrow::field("label", arrow::float32(), false));
    for (int i = 1; i <= 13; ++i)
      fields.push_back(arrow::field("I" + std::to_string(i), arrow::float32(), false));
    for (int i = 1; i <= 26; ++i)
      fields.push_back(arrow::field("C" + std::to_string(i), arrow::int64(), false));
  } else if (name == "wide") {
    fields.push_back(arrow::field("row_id", arrow::int64(), false));
    fields.push_back(arrow::field("label", arrow::float32(), false));
    for (int i = 0; i < 500; ++i)
      fields.push_back(arrow::field("f" + std::to_string(i), arrow::float32(), false));
  } else if (name == "embeddings") {
    fields.push_back(arrow::field("row_id", arrow::int64(), false));
    fields.push_back(arrow::field("item_id", arrow::int64(), false));
    fields.push_back(arrow::field("label", arrow::float32(), false));
    for (const char* v : {"embedding", "user_embedding"}) {
      fields.push_back(arrow::field(v, arrow::fixed_size_list(arrow::float32(), 64), false));
    }
  } else if (name == "dlrm") {
    // The 40 columns the DLRM-Parquet workload reads (python/stoker/cli/gen.py's
    // DLRM_PARQUET_READ, in file order: f float32, d float64, h float16, b int8; 160 bytes).
    const std::string types = "fffdffffffhffhffdfffhfdfhbdfffdffffbbbff";
    for (size_t i = 0; i < types.size(); ++i) {
      const char t = types[i];
      auto type = t == 'f'   ? arrow::float32()
                  : t == 'd' ? arrow::float64()
                  : t == 'h' ? arrow::float16()
                             : arrow::int8();
      fields.push_back(arrow::field("feature_" + std::to_string(i), type, false));
    }
  } else {
    std::cerr << "unknown preset " << name << "\n";
    std::exit(2);
  }
  return {name, arrow::schema(fields)};
}

// A unit of `rows` rows whose values are a function of (row, column): enough to check
// nothing, all that matters here is where the bytes are.
std::shared_ptr<arrow::RecordBatch> MakeUnit(const std::shared_ptr<arrow::Schema>& schema,
                                             int64_t rows, int64_t first_row,
                                             arrow::MemoryPool* pool) {
  arrow::ArrayDataVector columns;
  for (const auto& field : schema->fields()) {
    int64_t width = field->type()->byte_width();
    int64_t per_row = 1;
    if (field->type()->id() == arrow::Type::FIXED_SIZE_LIST) {
      const auto& list = static_cast<const arrow::FixedSizeListType&>(*field->type());
      per_row = list.list_size();
      width = list.value_type()->byte_width();
    }
    auto buffer = arrow::AllocateBuffer(rows * per_row * width, pool).ValueOrDie();
    for (int64_t i = 0; i < rows * per_row * width; ++i) {
      buffer->mutable_data()[i] = static_cast<uint8_t>(Mix64(first_row * 131 + i));
    }
    std::shared_ptr<arrow::Buffer> values(std::move(buffer));
    if (per_row == 1) {
      columns.push_back(arrow::ArrayData::Make(field->type(), rows, {nullptr, values}, 0));
    } else {
      const auto& list = static_cast<const arrow::FixedSizeListType&>(*field->type());
      auto child = arrow::ArrayData::Make(list.value_type(), rows * per_row, {nullptr, values}, 0);
      columns.push_back(arrow::ArrayData::Make(field->type(), rows, {nullptr}, {child}, 0));
    }
  }
  return arrow::RecordBatch::Make(schema, rows, std::move(columns));
}

int Run(int argc, char** argv) {
  std::string preset_name = "criteo";
  int repeats = 5;
  int64_t window_rows = 262144;
  int64_t unit_rows = 65536;
  std::string pool_name = "jemalloc";
  bool recycle = true;  // batches from a RecyclingPool, as loaders do
  int plan_version = kLatestPlanVersion;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--preset") preset_name = argv[i + 1];
    if (flag == "--repeats") repeats = std::stoi(argv[i + 1]);
    if (flag == "--window") window_rows = std::stoll(argv[i + 1]);
    if (flag == "--unit") unit_rows = std::stoll(argv[i + 1]);
    if (flag == "--pool") pool_name = argv[i + 1];
    if (flag == "--recycle") recycle = std::string(argv[i + 1]) == "1";
    if (flag == "--plan-version") plan_version = std::stoi(argv[i + 1]);
  }
  const Preset preset = MakePreset(preset_name);
  arrow::MemoryPool* pool = nullptr;
  if (pool_name == "system") {
    pool = arrow::system_memory_pool();
  } else if (pool_name == "mimalloc") {
    if (!arrow::mimalloc_memory_pool(&pool).ok()) pool = arrow::default_memory_pool();
  } else if (!arrow::jemalloc_memory_pool(&pool).ok()) {
    pool = arrow::default_memory_pool();
  }

  const int64_t num_units = (window_rows + unit_rows - 1) / unit_rows;
  auto source = std::make_shared<UnitSource>();
  source->output_schema = preset.schema;
  source->pool = pool;
  if (recycle) source->output_pool = RecyclingPool::Default(pool);
  std::vector<int64_t> rows_per_unit;
  for (int64_t u = 0; u < num_units; ++u) {
    Unit unit;
    unit.num_rows = unit_rows;
    unit.first_row = u * unit_rows;
    source->units.push_back(unit);
    rows_per_unit.push_back(unit_rows);
  }
  PlanConfig config;
  config.window_rows = window_rows;
  config.batch_size = 4096;
  config.plan_version = plan_version;
  auto plan = EpochPlan::Make(rows_per_unit, config).ValueOrDie();
  const Assembler assembler(LayoutOf(source));

  std::vector<std::shared_ptr<arrow::RecordBatch>> units;
  for (int64_t u = 0; u < num_units; ++u) {
    units.push_back(MakeUnit(preset.schema, unit_rows, u * unit_rows, pool));
  }
  auto layout =
      std::make_shared<const RowLayout>(RowLayout::For(*preset.schema, /*no_nulls=*/true));

  auto chunks = ChunkPool::Make(layout->stride << layout->chunk_shift, pool);
  auto window_of = [&](bool staged, double* stage_ns) {
    auto window = std::make_shared<LoadedWindow>();
    window->index = 0;
    const auto start = Clock::now();
    for (int64_t u = 0; u < num_units; ++u) {
      window->unit_ids.push_back(plan.unit_order()[u]);
      const auto& batch = units[plan.unit_order()[u]];
      window->units.push_back(staged ? Stage(layout, batch, chunks.get()).ValueOrDie()
                                     : StagedUnit(batch));
    }
    *stage_ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    return std::shared_ptr<const LoadedWindow>(window);
  };

  const int64_t rows = plan.windows()[0].num_rows;
  std::printf(
      "preset %s: %d columns, window %lld rows in %lld units, row-major stride %lld B, plan "
      "version %d\n",
      preset.name.c_str(), preset.schema->num_fields(), static_cast<long long>(rows),
      static_cast<long long>(num_units), static_cast<long long>(layout->stride), plan_version);
  for (bool staged : {false, true}) {
    double best_gather = std::numeric_limits<double>::max();
    double best_stage = std::numeric_limits<double>::max();
    int64_t stage_faults = 0, gather_faults = 0;
    for (int r = 0; r < repeats; ++r) {
      double stage_ns = 0;
      const int64_t faults0 = MinorFaults();
      auto window = window_of(staged, &stage_ns);
      const int64_t faults1 = MinorFaults();
      const std::vector<std::shared_ptr<const LoadedWindow>> windows{window};
      const auto start = Clock::now();
      for (int64_t begin = 0; begin < rows; begin += config.batch_size) {
        auto batch =
            assembler.Assemble(plan, begin, std::min(rows, begin + config.batch_size), windows);
        if (!batch.ok()) {
          std::cerr << batch.status().ToString() << "\n";
          return 1;
        }
      }
      const double gather_ns =
          std::chrono::duration<double, std::nano>(Clock::now() - start).count();
      best_gather = std::min(best_gather, gather_ns / rows);
      best_stage = std::min(best_stage, stage_ns / rows);
      stage_faults = faults1 - faults0;  // the last run's: the allocator is warm by then
      gather_faults = MinorFaults() - faults1;
    }
    const double stage = staged ? best_stage : 0.0;
    std::printf(
        "  %-9s gather %6.1f ns/row  stage %5.1f ns/row  total %6.1f ns/row (%.2fM rows/s); "
        "page faults in the last run: stage %lld, gather %lld\n",
        staged ? "row-major" : "columnar", best_gather, stage, best_gather + stage,
        1e3 / (best_gather + stage), static_cast<long long>(stage_faults),
        static_cast<long long>(gather_faults));
  }
  return 0;
}

}  // namespace
}  // namespace stoker

int main(int argc, char** argv) { return stoker::Run(argc, argv); }
