// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "mixture/mixture_stream.h"

#include <algorithm>
#include <utility>

#include "loader/loader_internal.h"

namespace stoker {

namespace {

// How long the consumer waits for a batch's pieces to be written before it waits on the
// sources one by one (which is also how an error reaches it).
constexpr std::chrono::milliseconds kWrittenWait{20};

}  // namespace

void MixtureTally::Add(const std::vector<int64_t>& rows) {
  for (size_t s = 0; s < rows.size() && s < rows_.size(); ++s) {
    rows_[s].fetch_add(rows[s], std::memory_order_relaxed);
  }
  batches_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<int64_t> MixtureTally::rows() const {
  std::vector<int64_t> out;
  out.reserve(rows_.size());
  for (const auto& rows : rows_) out.push_back(rows.load(std::memory_order_relaxed));
  return out;
}

arrow::Result<std::shared_ptr<const MixtureConfig>> MakeMixtureConfig(
    const std::vector<std::shared_ptr<const Loader>>& sources, const MixturePlan& plan,
    arrow::MemoryPool* pool) {
  if (sources.empty() || plan.num_sources() != static_cast<int>(sources.size())) {
    return arrow::Status::Invalid("a mixture needs one loader per plan source");
  }
  auto config = std::make_shared<MixtureConfig>();
  const LoaderOptions& options = sources.front()->options();
  const int64_t window = options.ResolvedShuffleWindow();
  for (size_t s = 0; s < sources.size(); ++s) {
    const int64_t rows = plan.source_rows()[s];
    const int64_t own = sources[s]->num_rows();
    if (own <= 0) return arrow::Status::Invalid("mixture source ", s, " has no rows");
    config->strides.push_back((rows + own - 1) / own * own);
    const __int128 share = static_cast<__int128>(window) * rows;
    const int64_t source_window = std::max<int64_t>(
        1, static_cast<int64_t>((share + plan.epoch_rows() - 1) / plan.epoch_rows()));
    ARROW_ASSIGN_OR_RAISE(auto loader, Internal(*sources[s]).WithShuffleWindow(source_window));
    config->sources.push_back(std::move(loader));
  }
  config->plan = std::make_shared<const MixturePlan>(plan);
  config->batch_size = options.batch_size;
  config->drop_last = options.drop_last;
  config->num_threads = options.ResolvedThreads();
  config->pool = pool;
  return config;
}

arrow::Result<std::unique_ptr<MixtureStream>> MixtureStream::Make(
    std::shared_ptr<const MixtureConfig> config, int64_t epoch, std::vector<Segment> segments,
    std::shared_ptr<MixtureTally> tally) {
  const size_t n = config->sources.size();
  if (n == 0 || config->plan == nullptr || config->plan->num_sources() != static_cast<int>(n) ||
      config->strides.size() != n) {
    return arrow::Status::Invalid("a mixture needs one loader and one stride per plan source");
  }
  if (config->batch_size < 1 || config->num_threads < 1 || config->pool == nullptr) {
    return arrow::Status::Invalid("a mixture needs batch_size >= 1, num_threads >= 1 and a pool");
  }
  const auto& schema = config->sources[0]->schema();
  std::vector<int64_t> starts;
  for (const int64_t stride : config->strides) starts.push_back(epoch * stride);
  // One budget of workers for the epoch, taken by whichever source has work: as many
  // threads as a Loader's, where a pool per source ran num_threads times the sources. They
  // count the layout's blocks first, while nothing else runs yet.
  auto workers = std::make_shared<TaskPool>(config->num_threads);
  ARROW_ASSIGN_OR_RAISE(
      auto layout,
      MixtureLayout::Make(*config->plan, epoch, segments, starts, config->batch_size,
                          config->drop_last,
                          [&workers](int64_t n, const std::function<void(int64_t)>& body) {
                            workers->ParallelFor(n, body);
                          }));
  auto shared_layout = std::make_shared<const MixtureLayout>(std::move(layout));
  auto batches = std::make_shared<MixedBatches>(schema, shared_layout, config->pool);
  std::vector<SourceRows> sources;
  sources.reserve(n);
  for (size_t s = 0; s < n; ++s) {
    ARROW_ASSIGN_OR_RAISE(auto rows, SourceRows::Make(config->sources[s], *schema, workers, batches,
                                                      &shared_layout->pieces(static_cast<int>(s))));
    sources.push_back(std::move(rows));
  }
  std::unique_ptr<MixtureStream> stream(
      new MixtureStream(std::move(config), std::move(shared_layout), std::move(batches),
                        std::move(sources), std::move(tally)));
  // Every source's engine starts reading now, all at once: started at their first Take,
  // each would wait for the one before it to deliver.
  for (size_t s = 0; s < n; ++s) {
    const auto& pieces = stream->layout_->pieces(static_cast<int>(s));
    if (!pieces.empty()) ARROW_RETURN_NOT_OK(stream->sources_[s].Prepare(pieces.front().start));
  }
  return stream;
}

MixtureStream::MixtureStream(std::shared_ptr<const MixtureConfig> config,
                             std::shared_ptr<const MixtureLayout> layout,
                             std::shared_ptr<MixedBatches> batches, std::vector<SourceRows> sources,
                             std::shared_ptr<MixtureTally> tally)
    : config_(std::move(config)),
      layout_(std::move(layout)),
      batches_(std::move(batches)),
      tally_(std::move(tally)),
      sources_(std::move(sources)),
      next_piece_(sources_.size(), 0) {}

MixtureStream::~MixtureStream() = default;

const MixturePiece* MixtureStream::NextPiece(size_t s, int64_t b) const {
  const auto& pieces = layout_->pieces(static_cast<int>(s));
  const size_t k = next_piece_[s];
  return k < pieces.size() && pieces[k].batch == b ? &pieces[k] : nullptr;
}

arrow::Status MixtureStream::PrepareSources(int64_t b) {
  for (size_t s = 0; s < sources_.size(); ++s) {
    if (const MixturePiece* piece = NextPiece(s, b)) {
      ARROW_RETURN_NOT_OK(sources_[s].Prepare(piece->start));
    }
  }
  return arrow::Status::OK();
}

arrow::Result<MixtureStream::Mixed> MixtureStream::Assemble(int64_t b) {
  const size_t n = sources_.size();
  Mixed mixed;
  mixed.source_rows.assign(n, 0);
  std::vector<BatchSlice> slices;  // grouped by source, in source order
  for (size_t s = 0; s < n; ++s) {
    for (const MixturePiece* piece; (piece = NextPiece(s, b)) != nullptr; ++next_piece_[s]) {
      ARROW_RETURN_NOT_OK(sources_[s].Take(piece->start, piece->rows, &slices));
      mixed.source_rows[s] += piece->rows;
    }
  }
  // The engines wrote their pieces' fixed-width values into the batch's buffers already.
  ARROW_ASSIGN_OR_RAISE(auto into, batches_->Get(b));
  ARROW_ASSIGN_OR_RAISE(
      mixed.batch, GatherSlices(slices, config_->sources[0]->schema(), config_->pool, into.get()));
  batches_->Release(b);
  return mixed;
}

bool MixtureStream::WaitReady(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  {
    MutexLock lock(mutex_);
    if (delivered_ >= num_batches() || !error_.ok()) return true;
  }
  const int64_t b = next_batch_;
  if (auto prepared = PrepareSources(b); !prepared.ok()) {
    MutexLock lock(mutex_);
    error_ = prepared;
    return true;
  }
  if (batches_->WaitWritten(b,
                            std::min(deadline, std::chrono::steady_clock::now() + kWrittenWait))) {
    return true;
  }
  for (size_t s = 0; s < sources_.size(); ++s) {
    const MixturePiece* piece = NextPiece(s, b);
    if (piece == nullptr) continue;
    auto ready = sources_[s].WaitReady(piece->start, deadline);
    if (!ready.ok()) {
      MutexLock lock(mutex_);
      error_ = ready.status();
      return true;
    }
    if (!*ready) return false;
  }
  return true;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> MixtureStream::Next() {
  {
    MutexLock lock(mutex_);
    if (!error_.ok()) return error_;
    if (delivered_ >= num_batches()) return nullptr;
  }
  // Wakes once when the sources' pieces are all written, not once per source; a source
  // that fails or takes longer is then waited for by Take.
  arrow::Status prepared = PrepareSources(next_batch_);
  if (prepared.ok()) {
    batches_->WaitWritten(next_batch_, std::chrono::steady_clock::now() + kWrittenWait);
  }
  auto mixed = prepared.ok() ? Assemble(next_batch_++) : arrow::Result<Mixed>(prepared);
  MutexLock lock(mutex_);
  if (!mixed.ok()) {
    error_ = mixed.status();
    return error_;
  }
  ++delivered_;
  rows_delivered_ += mixed->batch->num_rows();
  if (tally_ != nullptr) tally_->Add(mixed->source_rows);
  // The last batch is gathered: stop the engines' read-ahead (a source's rows past what the
  // epoch takes) now.
  if (delivered_ == num_batches()) sources_.clear();
  return std::move(mixed->batch);
}

int64_t MixtureStream::planned_rows_delivered() const {
  MutexLock lock(mutex_);
  return rows_delivered_;
}

}  // namespace stoker
