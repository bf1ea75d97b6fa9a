// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/storage.h"

#include <arrow/filesystem/s3fs.h>

#include <algorithm>

#include "stoker/error.h"

namespace stoker {

namespace {

// Retries what the SDK marks retryable, up to max_attempts, backing off exponentially
// (100 ms, 200 ms, ... capped at 5 s), and counts each retry.
class CountingRetryStrategy final : public arrow::fs::S3RetryStrategy {
 public:
  CountingRetryStrategy(int max_attempts, RetryCounter retries)
      : max_attempts_(max_attempts), retries_(std::move(retries)) {}

  bool ShouldRetry(const AWSErrorDetail& error, int64_t attempted_retries) override {
    if (!error.should_retry || attempted_retries + 1 >= max_attempts_) return false;
    if (retries_ != nullptr) retries_->fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  int64_t CalculateDelayBeforeNextRetry(const AWSErrorDetail&, int64_t attempted_retries) override {
    return std::min<int64_t>(int64_t{100} << std::min<int64_t>(attempted_retries, 6), 5000);
  }

 private:
  int max_attempts_;
  RetryCounter retries_;
};

arrow::Result<std::shared_ptr<arrow::fs::FileSystem>> OpenS3(const std::string& uri,
                                                             const StorageOptions& storage,
                                                             const RetryCounter& retries,
                                                             std::string* path) {
  // Never initialized twice and never finalized here: pyarrow finalizes at exit.
  ARROW_RETURN_NOT_OK(arrow::fs::EnsureS3Initialized());
  arrow::fs::S3Options options;
  if (!storage.endpoint_override.empty() || !storage.region.empty()) {
    // FromUri looks the bucket's region up with a request; with an explicit endpoint or
    // region that lookup is unnecessary (and some S3-compatible stores do not answer it).
    ARROW_ASSIGN_OR_RAISE(auto parsed, arrow::util::Uri::FromString(uri));
    *path = parsed.host() + parsed.path();
    options = arrow::fs::S3Options::Defaults();
  } else {
    ARROW_ASSIGN_OR_RAISE(options, arrow::fs::S3Options::FromUri(uri, path));
  }
  if (!storage.region.empty()) options.region = storage.region;
  if (!storage.endpoint_override.empty()) options.endpoint_override = storage.endpoint_override;
  if (!storage.scheme.empty()) options.scheme = storage.scheme;
  if (storage.anonymous) {
    options.ConfigureAnonymousCredentials();
  } else if (!storage.access_key.empty()) {
    options.ConfigureAccessKey(storage.access_key, storage.secret_key, storage.session_token);
  }
  if (storage.connect_timeout > 0) options.connect_timeout = storage.connect_timeout;
  if (storage.request_timeout > 0) options.request_timeout = storage.request_timeout;
  options.retry_strategy =
      std::make_shared<CountingRetryStrategy>(std::max(1, storage.max_attempts), retries);
  ARROW_ASSIGN_OR_RAISE(auto fs, arrow::fs::S3FileSystem::Make(options));
  return fs;
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::fs::FileSystem>> OpenFileSystem(const std::string& location,
                                                                     const StorageOptions& storage,
                                                                     const RetryCounter& retries,
                                                                     std::string* path) {
  if (location.rfind("s3://", 0) == 0) return OpenS3(location, storage, retries, path);
  return arrow::fs::FileSystemFromUriOrPath(location, path);
}

arrow::Status ExplainStorageError(const arrow::Status& status, const std::string& location) {
  if (status.ok()) return status;
  const std::string& message = status.message();
  auto has = [&](const char* text) { return message.find(text) != std::string::npos; };
  if (has("ACCESS_DENIED") || has("InvalidAccessKeyId") || has("SignatureDoesNotMatch") ||
      has("Forbidden")) {
    return arrow::Status::IOError(
        "access denied to '", location,
        "': check the credentials (storage_options access_key/secret_key, or the AWS chain: "
        "environment, config files, instance role) and the bucket's policy (",
        message, ")");
  }
  return WithContext(status, "'" + location + "'");
}

}  // namespace stoker
