// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The Flight server on loopback with real clients: several streams at once (which the
// thread sanitizer build, make test-tsan, runs for races) and tickets it must refuse.
#include "stoker/flight_service.h"

#include <arrow/flight/api.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "serve/serve_fixture.h"

namespace stoker {
namespace {

namespace flight = arrow::flight;
using testing::Batches;

arrow::Status Fetch(const flight::Location& location, const std::string& ticket, Batches* out) {
  ARROW_ASSIGN_OR_RAISE(auto client, flight::FlightClient::Connect(location));
  ARROW_ASSIGN_OR_RAISE(auto reader, client->DoGet(flight::Ticket{ticket}));
  for (;;) {
    ARROW_ASSIGN_OR_RAISE(auto chunk, reader->Next());
    if (chunk.data == nullptr) break;
    out->push_back(chunk.data);
  }
  return client->Close();
}

// A state a local loader saved names kDefaultChunkBatches as its chunk: it resumes from servers
// that keep the default.
TEST(ServeOptionsTest, TheDefaultChunkIsTheOneALocalLoaderNames) {
  EXPECT_EQ(ServeOptions().chunk_batches, kDefaultChunkBatches);
}

using FlightServiceTest = testing::ServerTest;
using testing::ReadLocally;

TEST_F(FlightServiceTest, ConcurrentStreamsEqualTheLocalOnes) {
  constexpr int kClients = 4;
  std::vector<LoaderImpl::StreamSpec> specs(kClients);
  for (int c = 0; c < kClients; ++c) {
    specs[c].epoch = c / 2;
    specs[c].rank = c % 2;
    specs[c].world_size = 2;
  }
  std::vector<Batches> received(kClients);
  std::vector<arrow::Status> statuses(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back(
        [&, c] { statuses[c] = Fetch(location_, TicketFor(specs[c]), &received[c]); });
  }
  for (auto& client : clients) client.join();
  for (int c = 0; c < kClients; ++c) {
    ASSERT_TRUE(statuses[c].ok()) << statuses[c].ToString();
    const Batches local = ReadLocally(*loader_, specs[c]);
    ASSERT_EQ(received[c].size(), local.size()) << "client " << c;
    ASSERT_FALSE(local.empty());
    for (size_t b = 0; b < local.size(); ++b) {
      EXPECT_TRUE(received[c][b]->Equals(*local[b])) << "client " << c << " batch " << b;
    }
  }
}

TEST_F(FlightServiceTest, RefusesMalformedAndForeignTickets) {
  Batches ignored;
  auto malformed = Fetch(location_, "stoker1;epoch=x", &ignored);
  EXPECT_NE(malformed.message().find("bad ticket"), std::string::npos) << malformed.ToString();
  auto foreign = Fetch(location_, EncodeTicket({"0123", {}}), &ignored);
  EXPECT_NE(foreign.message().find("is for configuration '0123'"), std::string::npos)
      << foreign.ToString();
  EXPECT_TRUE(ignored.empty());
}

}  // namespace
}  // namespace stoker
