// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "stoker/stream_identity.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <set>
#include <string>

#include "common/fixtures.h"
#include "loader/resume_identity.h"

namespace stoker {
namespace {

using testing::WriteDataset;

LoaderOptions Options(const std::filesystem::path& dir) {
  LoaderOptions options;
  options.sources = {dir.string()};
  options.columns = {"row_id", "value"};
  options.batch_size = 64;
  options.seed = 3;
  return options;
}

std::shared_ptr<Loader> Make(const LoaderOptions& options) {
  return Loader::Make(options).ValueOrDie();
}

class StreamIdentityTest : public ::testing::Test {
 protected:
  // One TempDir per test (it is named after the test): datasets go in folders of it.
  void SetUp() override {
    std::filesystem::create_directories(data_);
    WriteDataset(data_, 2, 300, 100);
  }
  testing::TempDir dir_;
  std::filesystem::path data_ = dir_.path() / "data";
};

TEST_F(StreamIdentityTest, TheConfigCarriesEveryResumeIdentityField) {
  const std::string json = StreamConfigJson(*Make(Options(data_)), kDefaultChunkBatches);
  std::set<std::string> names;
  for (const IdentityField& field : kResumeIdentity) {
    EXPECT_NE(json.find("\"" + std::string(field.config_key) + "\":"), std::string::npos)
        << field.config_key << " is not in " << json;
    EXPECT_TRUE(names.insert(field.name).second) << field.name << " is listed twice";
    if (field.checked) EXPECT_STRNE(field.what, "") << field.name;
  }
  EXPECT_NE(json.find("\"chunk\":16"), std::string::npos) << json;
  EXPECT_NE(json.find("\"rows\":600"), std::string::npos) << json;
  EXPECT_NE(json.find("\"columns\":[\"row_id\",\"value\"]"), std::string::npos) << json;
}

TEST_F(StreamIdentityTest, TheDigestIsStableAndFollowsEveryOptionThatShapesBatches) {
  const LoaderOptions base = Options(data_);
  const std::string digest = StreamConfigDigest(*Make(base));
  EXPECT_EQ(StreamConfigDigest(*Make(base)), digest);
  // Options that do not shape the batches leave it alone.
  LoaderOptions threads = base;
  threads.num_threads = 1;
  threads.prefetch = 1;
  EXPECT_EQ(StreamConfigDigest(*Make(threads)), digest);
  const std::vector<std::function<void(LoaderOptions&)>> changes = {
      [](LoaderOptions& o) { o.batch_size = 65; },
      [](LoaderOptions& o) { o.seed = 4; },
      [](LoaderOptions& o) { o.shuffle = false; },
      [](LoaderOptions& o) { o.shuffle_window = 50; },
      [](LoaderOptions& o) { o.drop_last = true; },
      [](LoaderOptions& o) { o.mode = LoaderMode::kEval; },
      [](LoaderOptions& o) { o.columns = {"row_id"}; },
  };
  std::set<std::string> seen = {digest};
  for (size_t i = 0; i < changes.size(); ++i) {
    LoaderOptions changed = base;
    changes[i](changed);
    EXPECT_TRUE(seen.insert(StreamConfigDigest(*Make(changed))).second) << "change " << i;
  }
}

TEST_F(StreamIdentityTest, AnotherDatasetIsAnotherConfig) {
  const auto other = dir_.path() / "other";
  std::filesystem::create_directories(other);
  WriteDataset(other, 2, 301, 100);
  EXPECT_NE(StreamConfigDigest(*Make(Options(data_))), StreamConfigDigest(*Make(Options(other))));
}

}  // namespace
}  // namespace stoker
