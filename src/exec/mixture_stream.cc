// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/mixture_stream.h"

#include <algorithm>
#include <utility>

namespace stoker {

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
    ARROW_ASSIGN_OR_RAISE(auto loader, sources[s]->WithShuffleWindow(source_window));
    config->sources.push_back(std::move(loader));
  }
  config->plan = std::make_shared<const MixturePlan>(plan);
  config->batch_size = options.batch_size;
  config->drop_last = options.drop_last;
  config->prefetch = options.ResolvedPrefetch();
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
  if (config->batch_size < 1 || config->prefetch < 1 || config->num_threads < 1 ||
      config->pool == nullptr) {
    return arrow::Status::Invalid(
        "a mixture needs batch_size >= 1, prefetch >= 1, num_threads >= 1 and a pool");
  }
  for (const Segment& segment : segments) {
    if (segment.begin < 0 || segment.end <= segment.begin ||
        segment.end > config->plan->epoch_rows()) {
      return arrow::Status::Invalid("segment [", segment.begin, ", ", segment.end,
                                    ") is not inside the mixture's epoch of ",
                                    config->plan->epoch_rows(), " positions");
    }
  }
  const arrow::Schema& schema = *config->sources[0]->schema();
  // One budget of workers for the epoch, taken by whichever source has work: as many
  // threads as a Loader's, where a pool per source ran num_threads times the sources.
  auto workers = std::make_shared<TaskPool>(config->num_threads);
  std::vector<SourceRows> sources;
  sources.reserve(n);
  for (const auto& loader : config->sources) {
    ARROW_ASSIGN_OR_RAISE(auto rows, SourceRows::Make(loader, schema, workers));
    sources.push_back(std::move(rows));
  }
  std::unique_ptr<MixtureStream> stream(new MixtureStream(
      std::move(config), epoch, std::move(segments), std::move(sources), std::move(tally)));
  stream->producer_ = std::thread([raw = stream.get()] { raw->Produce(); });
  return stream;
}

MixtureStream::MixtureStream(std::shared_ptr<const MixtureConfig> config, int64_t epoch,
                             std::vector<Segment> segments, std::vector<SourceRows> sources,
                             std::shared_ptr<MixtureTally> tally)
    : config_(std::move(config)),
      epoch_(epoch),
      segments_(std::move(segments)),
      tally_(std::move(tally)),
      sources_(std::move(sources)) {
  for (const Segment& segment : segments_) rows_left_ += segment.end - segment.begin;
  const int64_t size = config_->batch_size;
  num_batches_ = config_->drop_last ? rows_left_ / size : (rows_left_ + size - 1) / size;
  if (!segments_.empty()) position_ = segments_[0].begin;
}

MixtureStream::~MixtureStream() {
  {
    MutexLock lock(mutex_);
    stop_.store(true);
    changed_.NotifyAll();
  }
  if (producer_.joinable()) producer_.join();
}

void MixtureStream::Produce() {
  for (int64_t b = 0; b < num_batches_; ++b) {
    {
      MutexLock lock(mutex_);
      while (static_cast<int64_t>(ready_.size()) >= config_->prefetch && !stop_.load()) {
        changed_.Wait(mutex_);
      }
      if (stop_.load()) return;
    }
    auto mixed = Assemble(std::min(config_->batch_size, rows_left_));
    MutexLock lock(mutex_);
    if (!mixed.ok()) {
      error_ = mixed.status();
      changed_.NotifyAll();
      return;
    }
    ready_.push_back(std::move(mixed).ValueUnsafe());
    changed_.NotifyAll();
  }
  sources_.clear();  // the last batch is gathered: stop the engines' read-ahead now
}

arrow::Result<MixtureStream::Mixed> MixtureStream::Assemble(int64_t rows) {
  const MixturePlan& plan = *config_->plan;
  const size_t n = sources_.size();
  std::vector<std::vector<BatchSlice>> pieces(n);
  Mixed mixed;
  mixed.source_rows.assign(n, 0);
  std::vector<int64_t> stretch(n);
  rows_left_ -= rows;
  while (rows > 0) {
    const Segment& segment = segments_[segment_];
    if (before_.empty()) before_ = plan.RowsBefore(epoch_, position_);
    const int64_t take = std::min(rows, segment.end - position_);
    std::fill(stretch.begin(), stretch.end(), 0);
    CountSources(position_, take, &stretch);
    for (size_t s = 0; s < n; ++s) {
      if (stretch[s] == 0) continue;
      const int64_t start = epoch_ * config_->strides[s] + before_[s];
      ARROW_RETURN_NOT_OK(sources_[s].Take(start, stretch[s], stop_, &pieces[s]));
      before_[s] += stretch[s];
      mixed.source_rows[s] += stretch[s];
    }
    position_ += take;
    rows -= take;
    if (position_ == segment.end && segment_ + 1 < segments_.size()) {
      ++segment_;
      position_ = segments_[segment_].begin;
      before_.clear();
    }
  }
  std::vector<BatchSlice> slices;
  for (auto& source : pieces) {
    for (auto& slice : source) slices.push_back(std::move(slice));
  }
  ARROW_ASSIGN_OR_RAISE(mixed.batch,
                        GatherSlices(slices, config_->sources[0]->schema(), config_->pool));
  return mixed;
}

void MixtureStream::CountSources(int64_t position, int64_t n, std::vector<int64_t>* counts) {
  const int64_t block_rows = config_->plan->block_rows();
  while (n > 0) {
    const int64_t block = position / block_rows;
    const int64_t offset = position % block_rows;
    if (block != block_) {
      block_ = block;
      block_sources_ = config_->plan->BlockSources(epoch_, block);
    }
    const int64_t m = std::min(n, static_cast<int64_t>(block_sources_.size()) - offset);
    const uint8_t* sources = block_sources_.data() + offset;
    for (int64_t i = 0; i < m; ++i) ++(*counts)[sources[i]];
    position += m;
    n -= m;
  }
}

bool MixtureStream::Deliverable() const {
  return delivered_ >= num_batches_ || !ready_.empty() || !error_.ok();
}

bool MixtureStream::WaitReady(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(mutex_);
  while (!Deliverable()) {
    if (!changed_.WaitUntil(mutex_, deadline)) return Deliverable();
  }
  return true;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> MixtureStream::Next() {
  MutexLock lock(mutex_);
  while (!Deliverable()) changed_.Wait(mutex_);
  if (delivered_ >= num_batches_) return nullptr;
  if (ready_.empty()) return error_;
  Mixed mixed = std::move(ready_.front());
  ready_.pop_front();
  ++delivered_;
  rows_delivered_ += mixed.batch->num_rows();
  if (tally_ != nullptr) tally_->Add(mixed.source_rows);
  changed_.NotifyAll();
  return std::move(mixed.batch);
}

int64_t MixtureStream::planned_rows_delivered() const {
  MutexLock lock(mutex_);
  return rows_delivered_;
}

}  // namespace stoker
