// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Header only; checked in src/loader/options.cc, applied in src/manifest/storage.cc.
#pragma once

#include <string>

namespace stoker {

/// How to reach object storage (s3:// sources). Credentials come from the standard AWS chain
/// (environment, config files, instance roles) unless given here.
struct StorageOptions {
  /// AWS region; empty: from the environment or the bucket.
  std::string region;
  /// host[:port] of an S3-compatible store (MinIO, Ceph, a test server); empty: AWS.
  std::string endpoint_override;
  /// "http" or "https"; empty: https.
  std::string scheme;
  /// Unsigned requests (public buckets).
  bool anonymous = false;
  /// Explicit credentials (all three empty: the standard chain).
  std::string access_key;
  std::string secret_key;
  std::string session_token;
  /// Attempts per request, the first included (>= 1); transient errors (HTTP 500/503,
  /// throttling, resets, timeouts) are retried with exponential backoff up to this many.
  int max_attempts = 8;
  /// Seconds; 0 means the SDK's default.
  double connect_timeout = 0;
  double request_timeout = 0;
  /// Range reads in flight at once, separate from the decode threads (>= 1). 0 means
  /// kDefaultIoThreads, or kDefaultRemoteIoThreads when a source is on an object store
  /// (Loader::Make resolves it).
  int io_threads = 0;

  /// Footer reads in flight at once while the manifest is built without a summary file
  /// (1..kMaxMetadataThreads). A footer read is one round trip (two for footers over 64 KiB),
  /// so on a remote store startup time is about files × latency / this; local disks gain
  /// little above a few. 0 means kDefaultMetadataThreads, eight times Arrow's I/O pool.
  int metadata_threads = 0;

  /// Default of metadata_threads.
  static constexpr int kDefaultMetadataThreads = 64;
  /// Upper bound of metadata_threads: each is a thread and, on S3, a connection.
  static constexpr int kMaxMetadataThreads = 1024;

  /// Default of io_threads on local disks.
  static constexpr int kDefaultIoThreads = 16;
  /// Default of io_threads when a source is a URI such as s3://: a read there waits tens of
  /// milliseconds on the network, so a window of small row groups read 16 at a time is
  /// latency-bound (the first window at 20,000 files behind a 20 ms proxy: 5.4 s at 16,
  /// docs/large-datasets.md). Reads are only ever issued for the windows scheduled, so
  /// more in flight holds no more bytes.
  static constexpr int kDefaultRemoteIoThreads = 64;

  int ResolvedIoThreads() const { return io_threads > 0 ? io_threads : kDefaultIoThreads; }
  int ResolvedMetadataThreads() const {
    return metadata_threads > 0 ? metadata_threads : kDefaultMetadataThreads;
  }
};

}  // namespace stoker
