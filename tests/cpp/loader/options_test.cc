// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "stoker/options.h"

#include <arrow/compute/expression.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

namespace stoker {
namespace {

// Options that validate: one source, batches of 4.
LoaderOptions Valid() {
  LoaderOptions options;
  options.sources = {"/data"};
  options.batch_size = 4;
  return options;
}

// The message Validate() gives once `change` is applied to Valid() options.
std::string Refusal(const std::function<void(LoaderOptions*)>& change) {
  LoaderOptions options = Valid();
  change(&options);
  const arrow::Status status = options.Validate();
  EXPECT_TRUE(status.IsInvalid()) << status.ToString();
  return status.message();
}

TEST(OptionsTest, PolicyNamesParseBackAndOthersAreRefusedNamingTheOption) {
  for (auto policy : {CachePolicy::kLru, CachePolicy::kFill}) {
    EXPECT_EQ(ParseCachePolicy(CachePolicyName(policy)).ValueOrDie(), policy);
  }
  EXPECT_STREQ(CachePolicyName(CachePolicy::kFill), "fill");
  EXPECT_EQ(ParseCachePolicy("LRU").status().message(),
            "cache_policy must be 'lru' or 'fill', got 'LRU'");
  for (auto mode : {LoaderMode::kTrain, LoaderMode::kEval}) {
    EXPECT_EQ(ParseLoaderMode(LoaderModeName(mode)).ValueOrDie(), mode);
  }
  EXPECT_STREQ(LoaderModeName(LoaderMode::kEval), "eval");
  EXPECT_EQ(ParseLoaderMode("test").status().message(),
            "mode must be 'train' or 'eval', got 'test'");
  for (auto on_error : {OnError::kRaise, OnError::kSkip}) {
    EXPECT_EQ(ParseOnError(OnErrorName(on_error)).ValueOrDie(), on_error);
  }
  EXPECT_EQ(ParseOnError("").status().message(), "on_error must be 'raise' or 'skip', got ''");
  const std::pair<IndexPolicy, const char*> policies[] = {{IndexPolicy::kUse, "use"},
                                                          {IndexPolicy::kFallback, "fallback"},
                                                          {IndexPolicy::kIgnore, "ignore"},
                                                          {IndexPolicy::kTrust, "trust"}};
  for (const auto& [policy, name] : policies) {
    EXPECT_STREQ(IndexPolicyName(policy), name);
    EXPECT_EQ(ParseIndexPolicy(name).ValueOrDie(), policy);
  }
  EXPECT_EQ(ParseIndexPolicy("always").status().message(),
            "index must be 'use', 'fallback', 'ignore' or 'trust', got 'always'");
}

TEST(OptionsTest, RankMustLieInTheWorld) {
  EXPECT_TRUE(ValidateRank(0, 1).ok());
  EXPECT_TRUE(ValidateRank(3, 4).ok());
  EXPECT_EQ(ValidateRank(0, 0).message(), "world_size must be >= 1, got 0");
  EXPECT_EQ(ValidateRank(4, 4).message(), "rank must satisfy 0 <= rank < world_size (4), got 4");
  EXPECT_EQ(ValidateRank(-1, 4).message(), "rank must satisfy 0 <= rank < world_size (4), got -1");
}

TEST(OptionsTest, EachBadFieldIsNamedWithWhatItMustBe) {
  EXPECT_TRUE(Valid().Validate().ok());
  EXPECT_EQ(Refusal([](LoaderOptions* o) { o->sources.clear(); }),
            "source: no file, directory or glob was given");
  EXPECT_EQ(Refusal([](LoaderOptions* o) { o->batch_size = 0; }), "batch_size must be >= 1, got 0");
  EXPECT_EQ(Refusal([](LoaderOptions* o) { o->rank = 2; }),
            "rank must satisfy 0 <= rank < world_size (1), got 2");
  EXPECT_EQ(Refusal([](LoaderOptions* o) { o->shuffle_window = -1; }),
            "shuffle_window must be >= 1 row, got -1");
  EXPECT_EQ(Refusal([](LoaderOptions* o) { o->num_threads = -2; }),
            "num_threads must be >= 1 (or None for all cores), got -2");
  EXPECT_EQ(Refusal([](LoaderOptions* o) { o->prefetch = -1; }),
            "prefetch must be >= 1 batch (or None for the default), got -1");
  EXPECT_EQ(Refusal([](LoaderOptions* o) { o->cache_limit_bytes = -5; }),
            "cache_limit_bytes must be >= 0 (0: no limit), got -5");
  EXPECT_EQ(Refusal([](LoaderOptions* o) {
              o->columns = {"a", "b", "a"};
            }),
            "columns: 'a' is listed twice");
  EXPECT_EQ(Refusal([](LoaderOptions* o) { o->trace_events = -1; }),
            "trace_events must be >= 0, got -1");
}

TEST(OptionsTest, StorageOptionsAreChecked) {
  EXPECT_EQ(Refusal([](LoaderOptions* o) { o->storage.scheme = "ftp"; }),
            "storage scheme must be 'http' or 'https', got 'ftp'");
  EXPECT_EQ(Refusal([](LoaderOptions* o) { o->storage.max_attempts = 0; }),
            "storage max_attempts must be >= 1, got 0");
  EXPECT_EQ(Refusal([](LoaderOptions* o) { o->storage.request_timeout = -1; })
                .rfind("storage connect_timeout and request_timeout must be >= 0 seconds (0: the "
                       "SDK's default), got 0",
                       0),
            0u);
  EXPECT_EQ(Refusal([](LoaderOptions* o) { o->storage.io_threads = -1; }),
            "storage io_threads must be >= 1, got -1");
  EXPECT_EQ(Refusal([](LoaderOptions* o) {
              o->storage.metadata_threads = StorageOptions::kMaxMetadataThreads + 1;
            }),
            "storage metadata_threads must be in [1, 1024], got 1025");
  LoaderOptions https = Valid();
  https.storage.scheme = "https";
  https.storage.metadata_threads = StorageOptions::kMaxMetadataThreads;
  EXPECT_TRUE(https.Validate().ok());
}

TEST(OptionsTest, EvaluationAndErrorBudgetOptionsGoTogether) {
  EXPECT_EQ(Refusal([](LoaderOptions* o) {
              o->mode = LoaderMode::kEval;
              o->drop_last = true;
            }).rfind("drop_last cannot be set with mode='eval'", 0),
            0u);
  EXPECT_EQ(Refusal([](LoaderOptions* o) { o->pad_to_equal_steps = true; }),
            "pad_to_equal_steps needs mode='eval' (training ranks already have equal steps)");
  LoaderOptions eval = Valid();
  eval.mode = LoaderMode::kEval;
  eval.pad_to_equal_steps = true;
  EXPECT_TRUE(eval.Validate().ok());
  EXPECT_EQ(Refusal([](LoaderOptions* o) {
              o->with_row_origin = true;
              o->filter = arrow::compute::literal(true);
            }).rfind("with_row_origin cannot be used with a filter", 0),
            0u);

  EXPECT_EQ(Refusal([](LoaderOptions* o) { o->max_bad_units = 3; }),
            "max_bad_units and max_bad_fraction need on_error='skip' (with on_error='raise' the "
            "first bad unit is an error)");
  EXPECT_EQ(Refusal([](LoaderOptions* o) {
              o->on_error = OnError::kSkip;
              o->max_bad_units = -1;
            }),
            "max_bad_units must be >= 0, got -1");
  for (double fraction : {-0.1, 1.5, std::nan("")}) {
    EXPECT_EQ(Refusal([&](LoaderOptions* o) {
                o->on_error = OnError::kSkip;
                o->max_bad_fraction = fraction;
              }).rfind("max_bad_fraction must be between 0 and 1, got ", 0),
              0u)
        << fraction;
  }
  LoaderOptions skip = Valid();
  skip.on_error = OnError::kSkip;
  skip.max_bad_units = 0;
  skip.max_bad_fraction = 1.0;
  EXPECT_TRUE(skip.Validate().ok());
}

TEST(OptionsTest, PartitioningIsValidatedAgainstTheSources) {
  EXPECT_EQ(Refusal([](LoaderOptions* o) { o->partitioning.file_values = {{"1"}}; }),
            "partitioning: file values need the schema of their columns");
}

TEST(OptionsTest, ZeroMeansTheDefaults) {
  LoaderOptions options = Valid();
  EXPECT_EQ(options.ResolvedShuffleWindow(), kDefaultShuffleWindowRows);
  EXPECT_GE(options.ResolvedThreads(), 1);
  EXPECT_EQ(options.ResolvedPrefetch(), kDefaultPrefetchPerThread * options.ResolvedThreads());
  EXPECT_NE(options.ResolvedMemoryPool(), nullptr);
  options.num_threads = 3;
  EXPECT_EQ(options.ResolvedThreads(), 3);
  EXPECT_EQ(options.ResolvedPrefetch(), 6);
  options.prefetch = 5;
  options.shuffle_window = 1;
  EXPECT_EQ(options.ResolvedPrefetch(), 5);
  EXPECT_EQ(options.ResolvedShuffleWindow(), 1);
  options.memory_pool = arrow::system_memory_pool();
  EXPECT_EQ(options.ResolvedMemoryPool(), arrow::system_memory_pool());
}

}  // namespace
}  // namespace stoker
