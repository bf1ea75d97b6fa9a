// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <deque>
#include <memory>

#include "loader/loader_internal.h"
#include "stoker/batch_stream.h"
#include "stoker/flight_service.h"
#include "util/thread_annotations.h"

namespace stoker {

/// The streams a server serves and has served: each one's share, what it sent and what its
/// work cost (BatchStream::work), for ServeStats. Lists the open streams and the
/// kServedStreamsListed most recent finished ones; the totals count every stream.
class StreamLedger {
 public:
  /// One stream's record, updated by the reader that serves it.
  class Entry {
   public:
    Entry(const LoaderImpl::StreamSpec& spec, const BatchStream* stream);
    /// A batch of `rows` rows went to Flight.
    void Sent(int64_t rows) EXCLUDES(mutex_);
    /// The stream is about to be destroyed: its work is read a last time, and no more.
    void Close() EXCLUDES(mutex_);
    ServedStream Snapshot() const EXCLUDES(mutex_);

   private:
    mutable Mutex mutex_;
    ServedStream record_ GUARDED_BY(mutex_);
    const BatchStream* live_ GUARDED_BY(mutex_);
  };

  /// Records a stream started for `spec`; `stream` must outlive the entry's Close().
  std::shared_ptr<Entry> Open(const LoaderImpl::StreamSpec& spec, const BatchStream* stream)
      EXCLUDES(mutex_);
  /// Sets stats' totals and streams.
  void Fill(ServeStats* stats) const EXCLUDES(mutex_);

 private:
  mutable Mutex mutex_;
  /// Oldest first; finished entries beyond the listed number are folded into retired_.
  mutable std::deque<std::shared_ptr<Entry>> entries_ GUARDED_BY(mutex_);
  mutable StreamWork retired_ GUARDED_BY(mutex_);
};

}  // namespace stoker
