// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The Flight server on loopback with real clients: several streams at once (which the
// thread sanitizer build, make test-tsan, runs for races) and tickets it must refuse.
#include "stoker/flight_service.h"

#include <arrow/flight/api.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "common/fixtures.h"
#include "loader/loader_internal.h"
#include "loader/resume_identity.h"
#include "serve/ticket.h"

namespace stoker {
namespace {

namespace flight = arrow::flight;
using Batches = std::vector<std::shared_ptr<arrow::RecordBatch>>;

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

Batches ReadLocally(const Loader& loader, const LoaderImpl::StreamSpec& spec) {
  auto stream = Internal(loader).StartStream(spec).ValueOrDie();
  Batches out;
  for (auto batch = stream->Next().ValueOrDie(); batch != nullptr;
       batch = stream->Next().ValueOrDie()) {
    out.push_back(batch);
  }
  return out;
}

// A state a local loader saved names kDefaultChunkBatches as its chunk: it resumes from servers
// that keep the default.
TEST(ServeOptionsTest, TheDefaultChunkIsTheOneALocalLoaderNames) {
  EXPECT_EQ(ServeOptions().chunk_batches, kDefaultChunkBatches);
}

class FlightServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteDataset(dir_.path(), /*files=*/2, /*rows_per_file=*/600, /*row_group_size=*/150);
    LoaderOptions options;
    options.sources = {dir_.path().string()};
    options.columns = {"row_id", "value", "vec"};
    options.batch_size = 64;
    options.seed = 3;
    options.shuffle_window = 300;
    options.num_threads = 2;
    loader_ = Loader::Make(options).ValueOrDie();
    server_ = FlightService::Make(loader_, ServeOptions{}).ValueOrDie();
    location_ = flight::Location::ForGrpcTcp("127.0.0.1", server_->port()).ValueOrDie();
  }
  void TearDown() override { ASSERT_TRUE(server_->Shutdown().ok()); }

  std::string TicketFor(const LoaderImpl::StreamSpec& spec) const {
    return EncodeTicket({StreamConfigDigest(*loader_), spec});
  }

  testing::TempDir dir_;
  std::shared_ptr<Loader> loader_;
  std::unique_ptr<FlightService> server_;
  flight::Location location_;
};

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
