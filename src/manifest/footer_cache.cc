// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/footer_cache.h"

#include "manifest/footer_reader.h"

namespace stoker {

arrow::Result<std::shared_ptr<parquet::FileMetaData>> FooterCache::Get(
    int32_t file, const SerializedFooter& footer) const {
  {
    MutexLock lock(mutex_);
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].first != file) continue;
      auto entry = std::move(entries_[i]);
      entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
      entries_.push_back(entry);
      return entry.second;
    }
  }
  // Decoded outside the lock: other threads' lookups do not wait for it.
  ARROW_ASSIGN_OR_RAISE(auto metadata, DecodeFooter(footer.Serialized()));
  MutexLock lock(mutex_);
  if (entries_.size() >= kCapacity) entries_.erase(entries_.begin());
  entries_.emplace_back(file, metadata);
  return metadata;
}

}  // namespace stoker
