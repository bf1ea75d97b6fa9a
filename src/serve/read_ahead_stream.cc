// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.

#include "serve/read_ahead_stream.h"

#include <pthread.h>

#include <algorithm>

namespace stoker {

namespace flight = arrow::flight;

arrow::Result<std::shared_ptr<FlightConnection>> FlightConnection::Connect(ServerAddress address) {
  auto location = flight::Location::Parse(address.location);
  if (!location.ok()) {
    return arrow::Status::Invalid("server location '", address.location,
                                  "': ", location.status().message());
  }
  auto options = flight::FlightClientOptions::Defaults();
  options.tls_root_certs = address.tls_root_certs;
  ARROW_ASSIGN_OR_RAISE(auto client, flight::FlightClient::Connect(*location, options));
  return std::shared_ptr<FlightConnection>(
      new FlightConnection(std::move(client), std::move(address.headers)));
}

FlightConnection::FlightConnection(std::unique_ptr<flight::FlightClient> client,
                                   std::vector<std::pair<std::string, std::string>> headers)
    : client_(std::move(client)) {
  call_options_.headers = std::move(headers);
}

std::unique_ptr<ReadAheadStream> FlightConnection::Read(std::string ticket, int depth) {
  return std::make_unique<ReadAheadStream>(shared_from_this(), std::move(ticket), depth);
}

ReadAheadStream::ReadAheadStream(std::shared_ptr<FlightConnection> connection, std::string ticket,
                                 int depth)
    : connection_(std::move(connection)),
      ticket_(std::move(ticket)),
      depth_(static_cast<size_t>(std::max(depth, 1))),
      thread_([this] { Run(); }) {}

ReadAheadStream::~ReadAheadStream() {
  Cancel();
  thread_.join();
}

void ReadAheadStream::Cancel() {
  MutexLock lock(mutex_);
  cancelled_ = true;
  if (reader_ != nullptr && !finished_) reader_->Cancel();
  changed_.NotifyAll();
}

void ReadAheadStream::Finish(arrow::Status status) {
  MutexLock lock(mutex_);
  if (!finished_) {
    status_ = cancelled_ && status.ok() ? arrow::Status::Cancelled("stream cancelled")
                                        : std::move(status);
  }
  finished_ = true;
  changed_.NotifyAll();
}

void ReadAheadStream::Run() {
  // The name tools show (top -H, perf, /proc/PID/task/*/comm).
  pthread_setname_np(pthread_self(), kThreadName);
  auto made = connection_->client().DoGet(connection_->call_options(), flight::Ticket{ticket_});
  if (!made.ok()) return Finish(made.status());
  flight::FlightStreamReader* reader;  // owned by reader_, which lives as long as this
  {
    MutexLock lock(mutex_);
    reader_ = std::move(made).ValueUnsafe();
    reader = reader_.get();
    if (cancelled_) reader->Cancel();
  }
  while (true) {
    {  // Wait for room: at most depth_ batches ahead of the consumer.
      MutexLock lock(mutex_);
      while (ready_.size() >= depth_ && !cancelled_) changed_.Wait(mutex_);
      if (cancelled_) break;
    }
    auto chunk = reader->Next();  // without the lock: Cancel() interrupts it
    if (!chunk.ok()) return Finish(chunk.status());
    if (chunk->data == nullptr) break;  // the stream's end
    MutexLock lock(mutex_);
    ready_.push_back(std::move(chunk->data));
    changed_.NotifyAll();
  }
  Finish(arrow::Status::OK());
}

size_t ReadAheadStream::buffered() {
  MutexLock lock(mutex_);
  return ready_.size();
}

bool ReadAheadStream::WaitReady(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(mutex_);
  while (ready_.empty() && !finished_) {
    if (!changed_.WaitUntil(mutex_, deadline)) break;
  }
  return !ready_.empty() || finished_;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadAheadStream::Next() {
  MutexLock lock(mutex_);
  while (ready_.empty() && !finished_) changed_.Wait(mutex_);
  if (!ready_.empty()) {
    auto batch = std::move(ready_.front());
    ready_.pop_front();
    changed_.NotifyAll();
    return batch;
  }
  if (!status_.ok()) return status_;
  return nullptr;
}

}  // namespace stoker
