// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// A real Flight server on loopback over a small dataset, and what a local loader reads of a
// stream: the serve tests' common ground.
#pragma once

#include <arrow/flight/api.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/fixtures.h"
#include "loader/loader_internal.h"
#include "loader/resume_identity.h"
#include "serve/ticket.h"
#include "stoker/flight_service.h"

namespace stoker::testing {

using Batches = std::vector<std::shared_ptr<arrow::RecordBatch>>;

inline Batches ReadLocally(const Loader& loader, const LoaderImpl::StreamSpec& spec) {
  auto stream = Internal(loader).StartStream(spec).ValueOrDie();
  Batches out;
  for (auto batch = stream->Next().ValueOrDie(); batch != nullptr;
       batch = stream->Next().ValueOrDie()) {
    out.push_back(batch);
  }
  return out;
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteDataset(dir_.path(), /*files=*/2, /*rows_per_file=*/600, /*row_group_size=*/150);
    LoaderOptions options;
    options.sources = {dir_.path().string()};
    options.columns = {"row_id", "value", "vec"};
    options.batch_size = 64;
    options.seed = 3;
    options.shuffle_window = 300;
    options.num_threads = 2;
    loader_ = Loader::Make(options).ValueOrDie();
    server_ = FlightService::Make(loader_, ServeOptions{}).ValueOrDie();
    location_ = arrow::flight::Location::ForGrpcTcp("127.0.0.1", server_->port()).ValueOrDie();
  }
  void TearDown() override { ASSERT_TRUE(server_->Shutdown().ok()); }

  std::string TicketFor(const LoaderImpl::StreamSpec& spec) const {
    return EncodeTicket({StreamConfigDigest(*loader_), spec});
  }

  TempDir dir_;
  std::shared_ptr<Loader> loader_;
  std::unique_ptr<FlightService> server_;
  arrow::flight::Location location_;
};

}  // namespace stoker::testing
