// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "serve/ticket.h"

#include <gtest/gtest.h>

#include <string>

namespace stoker {
namespace {

Ticket Example() {
  Ticket ticket;
  ticket.config = "0123456789abcdef0123456789abcdef";
  ticket.stream.epoch = 3;
  ticket.stream.rank = 1;
  ticket.stream.world_size = 4;
  ticket.stream.resumed = {{8, 700}, {4, 1400}};
  ticket.stream.shards = 2;
  ticket.stream.shard = 1;
  ticket.stream.chunk = 16;
  ticket.stream.first_batch = 5;
  return ticket;
}

void ExpectSame(const Ticket& a, const Ticket& b) {
  EXPECT_EQ(a.config, b.config);
  EXPECT_EQ(a.stream.epoch, b.stream.epoch);
  EXPECT_EQ(a.stream.rank, b.stream.rank);
  EXPECT_EQ(a.stream.world_size, b.stream.world_size);
  EXPECT_EQ(a.stream.resumed, b.stream.resumed);
  EXPECT_EQ(a.stream.shards, b.stream.shards);
  EXPECT_EQ(a.stream.shard, b.stream.shard);
  EXPECT_EQ(a.stream.span, b.stream.span);
  EXPECT_EQ(a.stream.chunk, b.stream.chunk);
  EXPECT_EQ(a.stream.first_batch, b.stream.first_batch);
}

std::string DecodeError(const std::string& text) {
  auto decoded = DecodeTicket(text);
  EXPECT_FALSE(decoded.ok()) << text;
  return decoded.ok() ? "" : decoded.status().message();
}

TEST(TicketTest, EncodesTheDocumentedFormat) {
  EXPECT_EQ(EncodeTicket(Example()),
            "stoker1;config=0123456789abcdef0123456789abcdef;epoch=3;rank=1;world=4;"
            "rounds=8:700,4:1400;shards=2;shard=1;chunk=16;first=5");
  Ticket fresh;
  fresh.config = "c";
  EXPECT_EQ(EncodeTicket(fresh),
            "stoker1;config=c;epoch=0;rank=0;world=1;rounds=;shards=1;shard=0;chunk=1;first=0");
}

TEST(TicketTest, DecodeReadsWhatEncodeWrites) {
  auto decoded = DecodeTicket(EncodeTicket(Example()));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ExpectSame(*decoded, Example());
}

TEST(TicketTest, MissingFieldsTakeTheDefaults) {
  auto decoded = DecodeTicket("stoker1;config=c;epoch=2");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  Ticket expected;
  expected.config = "c";
  expected.stream.epoch = 2;
  ExpectSame(*decoded, expected);
}

// A run of several chunks of each period (a loader reading local first serves them itself);
// the field is written only when it is not 1, so a one-shard ticket reads as it always has.
TEST(TicketTest, ASpanOfShardsTravelsOnlyWhenSet) {
  Ticket ticket = Example();
  ticket.stream.shards = 5;
  ticket.stream.shard = 0;
  ticket.stream.span = 3;
  const std::string text = EncodeTicket(ticket);
  EXPECT_NE(text.find(";shard=0;span=3;chunk=16"), std::string::npos) << text;
  auto decoded = DecodeTicket(text);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ExpectSame(*decoded, ticket);
  EXPECT_EQ(EncodeTicket(Example()).find("span"), std::string::npos);
}

TEST(TicketTest, BadTicketsSayWhatIsWrong) {
  EXPECT_EQ(DecodeError(""), "empty ticket");
  EXPECT_EQ(DecodeError("/etc/passwd"), "not a stoker1 ticket");
  EXPECT_EQ(DecodeError("stoker1;path=/etc"), "unknown field 'path'");
  EXPECT_EQ(DecodeError("stoker1;epoch"), "malformed field 'epoch'");
  EXPECT_EQ(DecodeError("stoker1;epoch=1x"), "field 'epoch' is not an integer: '1x'");
  EXPECT_EQ(DecodeError("stoker1;rank="), "field 'rank' is not an integer: ''");
  EXPECT_EQ(DecodeError("stoker1;world=99999999999"),
            "field 'world' is not an integer: '99999999999'");
  EXPECT_EQ(DecodeError("stoker1;rounds=4"), "field 'rounds' is not W:C,W:C,...: '4'");
  EXPECT_EQ(DecodeError("stoker1;rounds=4:1,:2"), "field 'rounds' is not W:C,W:C,...: '4:1,:2'");
  const std::string huge = "stoker1;config=" + std::string(kMaxTicketBytes, 'a');
  EXPECT_EQ(DecodeError(huge), "a ticket of " + std::to_string(huge.size()) +
                                   " bytes is above the limit of " +
                                   std::to_string(kMaxTicketBytes));
}

}  // namespace
}  // namespace stoker
