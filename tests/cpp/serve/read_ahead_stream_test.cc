// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The client's read-ahead stream against a real server on loopback: the stream's batches in
// order at any depth, never more than its depth held, cancelled or destroyed mid-stream
// without a hang, and the server's and the transport's errors as the stream's.
#include "serve/read_ahead_stream.h"

#include <arrow/flight/types.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "serve/serve_fixture.h"

namespace stoker {
namespace {

using testing::Batches;
using ReadAheadStreamTest = testing::ServerTest;

std::shared_ptr<FlightConnection> ConnectTo(const arrow::flight::Location& location) {
  return FlightConnection::Connect({location.ToString(), {}, ""}).ValueOrDie();
}

Batches ReadAll(ReadAheadStream& stream) {
  Batches out;
  for (auto batch = stream.Next().ValueOrDie(); batch != nullptr;
       batch = stream.Next().ValueOrDie()) {
    out.push_back(batch);
  }
  return out;
}

TEST_F(ReadAheadStreamTest, DeliversTheStreamInOrderAtAnyDepth) {
  LoaderImpl::StreamSpec spec;
  spec.epoch = 1;
  spec.rank = 1;
  spec.world_size = 2;
  const Batches local = testing::ReadLocally(*loader_, spec);
  ASSERT_GT(local.size(), 3u);
  auto connection = ConnectTo(location_);
  for (int depth : {1, 3, 64}) {
    auto stream = connection->Read(TicketFor(spec), depth);
    const Batches received = ReadAll(*stream);
    ASSERT_EQ(received.size(), local.size()) << "depth " << depth;
    for (size_t b = 0; b < local.size(); ++b) {
      EXPECT_TRUE(received[b]->Equals(*local[b])) << "depth " << depth << " batch " << b;
    }
    // The end stays the end.
    EXPECT_EQ(stream->Next().ValueOrDie(), nullptr);
  }
}

TEST_F(ReadAheadStreamTest, HoldsAtMostItsDepth) {
  auto stream = ConnectTo(location_)->Read(TicketFor({}), /*depth=*/2);
  ASSERT_TRUE(stream->WaitReady(std::chrono::seconds(30)));
  // Give the thread time to read past its depth, were it to.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(stream->buffered(), 2u);
  ASSERT_NE(stream->Next().ValueOrDie(), nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(stream->buffered(), 2u);
}

TEST_F(ReadAheadStreamTest, CancelledMidStreamEndsWithCancelled) {
  auto stream = ConnectTo(location_)->Read(TicketFor({}), /*depth=*/1);
  ASSERT_NE(stream->Next().ValueOrDie(), nullptr);
  stream->Cancel();
  stream->Cancel();  // twice is harmless
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> next;
  int batches = 0;
  while ((next = stream->Next()).ok() && *next != nullptr) ++batches;
  EXPECT_LE(batches, 2);  // what was received before the cancel
  ASSERT_FALSE(next.ok());
  EXPECT_TRUE(next.status().IsCancelled() ||
              arrow::flight::FlightStatusDetail::UnwrapStatus(next.status()) != nullptr)
      << next.status().ToString();
}

TEST_F(ReadAheadStreamTest, DestroyedMidStreamDoesNotHang) {
  auto connection = ConnectTo(location_);
  for (int i = 0; i < 3; ++i) {
    auto stream = connection->Read(TicketFor({}), /*depth=*/1);
    ASSERT_NE(stream->Next().ValueOrDie(), nullptr);
  }  // each destroyed with its thread blocked on a full queue
  // The connection still serves.
  EXPECT_FALSE(ReadAll(*connection->Read(TicketFor({}), 2)).empty());
}

TEST_F(ReadAheadStreamTest, TheServersRefusalIsTheStreamsError) {
  auto stream = ConnectTo(location_)->Read("stoker1;epoch=x", 2);
  auto next = stream->Next();
  ASSERT_FALSE(next.ok());
  EXPECT_NE(next.status().message().find("bad ticket"), std::string::npos)
      << next.status().ToString();
  // And again at every later call.
  EXPECT_FALSE(stream->Next().ok());
}

TEST(ReadAheadStreamErrors, AnUnreachableServerIsUnavailable) {
  // Port 1: nothing listens there.
  auto stream =
      FlightConnection::Connect({"grpc://127.0.0.1:1", {}, ""}).ValueOrDie()->Read("stoker1", 2);
  auto next = stream->Next();
  ASSERT_FALSE(next.ok());
  auto detail = arrow::flight::FlightStatusDetail::UnwrapStatus(next.status());
  ASSERT_NE(detail, nullptr) << next.status().ToString();
  EXPECT_EQ(detail->code(), arrow::flight::FlightStatusCode::Unavailable);
}

TEST(ReadAheadStreamErrors, ABadLocationIsNamed) {
  auto connection = FlightConnection::Connect({"not a location", {}, ""});
  ASSERT_FALSE(connection.ok());
  EXPECT_NE(connection.status().message().find("'not a location'"), std::string::npos)
      << connection.status().ToString();
}

}  // namespace
}  // namespace stoker
