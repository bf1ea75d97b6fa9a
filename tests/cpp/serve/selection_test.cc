// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "serve/selection.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stoker {
namespace {

namespace flight = arrow::flight;

Selection Parse(const std::vector<std::string>& path) {
  auto parsed = ParseSelection(flight::FlightDescriptor::Path(path));
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  return parsed.ok() ? *parsed : Selection{};
}

std::string Error(const std::vector<std::string>& path) {
  auto parsed = ParseSelection(flight::FlightDescriptor::Path(path));
  EXPECT_FALSE(parsed.ok());
  return parsed.ok() ? "" : parsed.status().message();
}

TEST(SelectionTest, ACommandSelectsEpochZeroOfOneRank) {
  for (const std::string& command :
       {std::string("stoker"), std::string("{\"config\":1}"), std::string()}) {
    auto parsed = ParseSelection(flight::FlightDescriptor::Command(command));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed->epoch, 0);
    EXPECT_EQ(parsed->world_size, 1);
    EXPECT_FALSE(parsed->rank.has_value());
  }
}

TEST(SelectionTest, PathSegmentsSelectInAnyOrder) {
  Selection s = Parse({"rank=2", "epoch=7", "world_size=4"});
  EXPECT_EQ(s.epoch, 7);
  EXPECT_EQ(s.world_size, 4);
  ASSERT_TRUE(s.rank.has_value());
  EXPECT_EQ(*s.rank, 2);

  Selection every = Parse({"world_size=3"});
  EXPECT_EQ(every.epoch, 0);
  EXPECT_EQ(every.world_size, 3);
  EXPECT_FALSE(every.rank.has_value());

  Selection none = Parse({});
  EXPECT_EQ(none.world_size, 1);
  EXPECT_FALSE(none.rank.has_value());
}

TEST(SelectionTest, BadSegmentsAreNamed) {
  EXPECT_NE(Error({"epoch"}).find("'epoch' is not key=value"), std::string::npos);
  EXPECT_NE(Error({"epoch=1", "epoch=2"}).find("repeats its key"), std::string::npos);
  EXPECT_NE(Error({"shard=1"}).find("unknown key 'shard'"), std::string::npos);
  EXPECT_NE(Error({"epoch=-1"}).find("non-negative integer"), std::string::npos);
  EXPECT_NE(Error({"epoch=1x"}).find("'epoch=1x'"), std::string::npos);
  EXPECT_NE(Error({"world_size=0"}).find("[1, 2^20]"), std::string::npos);
  EXPECT_NE(Error({"world_size=1048577"}).find("[1, 2^20]"), std::string::npos);
  EXPECT_NE(Error({"world_size=2", "rank=2"}).find("rank 2 of a world size of 2"),
            std::string::npos);
  EXPECT_NE(Error({"rank=1"}).find("rank 1 of a world size of 1"), std::string::npos);
}

TEST(SelectionTest, EveryRankOfAHugeWorldIsRefusedButOneRankIsNot) {
  EXPECT_NE(Error({"world_size=4096"}).find("name one rank"), std::string::npos);
  Selection one = Parse({"world_size=1048576", "rank=1048575"});
  EXPECT_EQ(*one.rank, 1048575);
  Selection most = Parse({"world_size=1024"});
  EXPECT_EQ(most.world_size, kMaxSelectedRanks);
}

}  // namespace
}  // namespace stoker
