// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "util/json.h"

#include <gtest/gtest.h>

#include <string>

namespace stoker {
namespace {

TEST(JsonTest, QuotesAndEscapes) {
  EXPECT_EQ(JsonString(""), "\"\"");
  EXPECT_EQ(JsonString("plain"), "\"plain\"");
  EXPECT_EQ(JsonString("say \"hi\" \\ bye"), "\"say \\\"hi\\\" \\\\ bye\"");
  EXPECT_EQ(JsonString(std::string("a\nb\tc\x01", 6)), "\"a\\u000ab\\u0009c\\u0001\"");
  EXPECT_EQ(JsonString("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // UTF-8 passes through
}

TEST(JsonTest, AppendsToWhatIsThere) {
  std::string out = "[";
  AppendJsonString("x", &out);
  out += ",";
  AppendJsonString("y", &out);
  out += "]";
  EXPECT_EQ(out, "[\"x\",\"y\"]");
}

}  // namespace
}  // namespace stoker
