// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "serve/stream_ledger.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace stoker {

namespace {

void AddWork(const StreamWork& work, StreamWork* total) {
  total->units_decoded += work.units_decoded;
  total->units_cached += work.units_cached;
  total->unit_cpu_seconds += work.unit_cpu_seconds;
}

}  // namespace

StreamLedger::Entry::Entry(const LoaderImpl::StreamSpec& spec, const BatchStream* stream)
    : live_(stream) {
  record_.epoch = spec.epoch;
  record_.rank = spec.rank;
  record_.world_size = spec.world_size;
  record_.shards = spec.shards;
  record_.shard = spec.shard;
  record_.span = spec.span;
  record_.chunk = spec.chunk;
  record_.chunk_rows = spec.chunk_rows;
  record_.active = true;
}

void StreamLedger::Entry::Sent(int64_t rows) {
  MutexLock lock(mutex_);
  record_.batches_sent += 1;
  record_.rows_sent += rows;
}

void StreamLedger::Entry::Close() {
  MutexLock lock(mutex_);
  if (live_ == nullptr) return;
  record_.work = live_->work();
  record_.active = false;
  live_ = nullptr;
}

ServedStream StreamLedger::Entry::Snapshot() const {
  MutexLock lock(mutex_);
  ServedStream out = record_;
  if (live_ != nullptr) out.work = live_->work();
  return out;
}

std::shared_ptr<StreamLedger::Entry> StreamLedger::Open(const LoaderImpl::StreamSpec& spec,
                                                        const BatchStream* stream) {
  auto entry = std::make_shared<Entry>(spec, stream);
  MutexLock lock(mutex_);
  entries_.push_back(entry);
  return entry;
}

void StreamLedger::Fill(ServeStats* stats) const {
  std::vector<ServedStream> listed;
  StreamWork total;
  {
    MutexLock lock(mutex_);
    std::deque<std::shared_ptr<Entry>> kept;
    // Newest first, so the most recent finished streams are the ones kept listed.
    size_t finished_kept = 0;
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
      ServedStream record = (*it)->Snapshot();
      if (!record.active && finished_kept + 1 > kServedStreamsListed) {
        AddWork(record.work, &retired_);
        continue;
      }
      finished_kept += record.active ? 0 : 1;
      kept.push_front(*it);
      listed.push_back(std::move(record));
    }
    entries_ = std::move(kept);
    total = retired_;
  }
  std::reverse(listed.begin(), listed.end());
  for (const ServedStream& record : listed) AddWork(record.work, &total);
  // Open streams beyond the limit stay listed: at most max_streams of them.
  stats->units_decoded = total.units_decoded;
  stats->units_cached = total.units_cached;
  stats->unit_cpu_seconds = total.unit_cpu_seconds;
  stats->streams = std::move(listed);
}

}  // namespace stoker
