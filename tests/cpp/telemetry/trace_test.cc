// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "telemetry/trace.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace stoker {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(TraceRingTest, KeepsTheLastSpansOldestFirst) {
  TraceRing ring(3);
  const auto t0 = TraceRing::Clock::now();
  for (int b = 0; b < 5; ++b) {
    ring.Record(TraceStage::kAssemble, t0, t0 + std::chrono::microseconds(10), b);
  }
  EXPECT_EQ(ring.recorded(), 5);
  const std::string path = (std::filesystem::temp_directory_path() / "stoker_trace_test.json");
  ASSERT_TRUE(ring.WriteJson(path).ok());
  const std::string json = ReadAll(path);
  EXPECT_EQ(Count(json, "\"ph\":\"X\""), 3);
  // Batches 2, 3, 4 in that order; 0 and 1 were overwritten.
  EXPECT_EQ(json.find("\"batch\":0"), std::string::npos);
  EXPECT_EQ(json.find("\"batch\":1}"), std::string::npos);
  EXPECT_LT(json.find("\"batch\":2"), json.find("\"batch\":3"));
  EXPECT_LT(json.find("\"batch\":3"), json.find("\"batch\":4"));
  EXPECT_NE(json.find("\"dur\":10.000"), std::string::npos);
  EXPECT_EQ(Count(json, "thread_name"), 1);
  std::filesystem::remove(path);
}

TEST(TraceRingTest, UnitSpansNameFileAndRowGroup) {
  TraceRing ring(8);
  const auto t0 = TraceRing::Clock::now();
  ring.Record(TraceStage::kDecode, t0, t0, 2, 7);
  const std::string path = (std::filesystem::temp_directory_path() / "stoker_trace_unit.json");
  ASSERT_TRUE(ring.WriteJson(path).ok());
  const std::string json = ReadAll(path);
  EXPECT_NE(json.find("\"name\":\"decode\""), std::string::npos);
  EXPECT_NE(json.find("\"file\":2,\"row_group\":7"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(TraceRingTest, ReceiveSpansNameBatchAndServer) {
  TraceRing ring(8);
  const auto t0 = TraceRing::Clock::now();
  ring.Record(TraceStage::kReceive, t0, t0, 5, 1);
  const std::string path = (std::filesystem::temp_directory_path() / "stoker_trace_recv.json");
  ASSERT_TRUE(ring.WriteJson(path).ok());
  const std::string json = ReadAll(path);
  EXPECT_NE(json.find("\"name\":\"receive\""), std::string::npos);
  EXPECT_NE(json.find("\"batch\":5,\"server\":1"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(TraceRingTest, StagesParseFromTheirNames) {
  TraceStage stage = TraceStage::kFetch;
  ASSERT_TRUE(ParseTraceStage("convert", &stage));
  EXPECT_EQ(stage, TraceStage::kConvert);
  ASSERT_TRUE(ParseTraceStage("wait", &stage));
  EXPECT_EQ(stage, TraceStage::kWait);
  EXPECT_FALSE(ParseTraceStage("nap", &stage));
}

}  // namespace
}  // namespace stoker
