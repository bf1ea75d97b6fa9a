// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// The client's side of the wire: a Flight connection to one server, and a DoGet stream of it
// read ahead on a thread of its own, so that receiving (gRPC, the IPC decoding of each
// message) runs while the consumer converts and trains on the batches before.
#pragma once

#include <arrow/flight/client.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/status.h>

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "util/thread_annotations.h"

namespace stoker {

/// Where a server is and how to be let in: its grpc:// or grpc+tls:// location, the headers
/// sent with every call (a bearer token's "authorization"), a TLS server's root certificates
/// (PEM; empty: the system's).
struct ServerAddress {
  std::string location;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string tls_root_certs;
};

class ReadAheadStream;

/// A Flight client of one server; its streams share its gRPC channel. Outlived by none of
/// them (each holds it).
class FlightConnection : public std::enable_shared_from_this<FlightConnection> {
 public:
  /// Invalid, naming the location, when it does not parse; connecting itself is lazy
  /// (an unreachable server is the first read's error).
  static arrow::Result<std::shared_ptr<FlightConnection>> Connect(ServerAddress address);

  /// The DoGet stream of `ticket`, with up to `depth` (≥ 1) received batches held ahead of
  /// the consumer.
  std::unique_ptr<ReadAheadStream> Read(std::string ticket, int depth);

  arrow::flight::FlightClient& client() { return *client_; }
  const arrow::flight::FlightCallOptions& call_options() const { return call_options_; }

 private:
  FlightConnection(std::unique_ptr<arrow::flight::FlightClient> client,
                   std::vector<std::pair<std::string, std::string>> headers);

  std::unique_ptr<arrow::flight::FlightClient> client_;
  arrow::flight::FlightCallOptions call_options_;
};

/// One DoGet stream, read by a thread of its own into a queue of at most `depth` batches
/// (memory: `depth` + 1 batches, and what gRPC's flow-control window holds). The batches come
/// out in the stream's order; its end, or its error (the server's status, the transport's),
/// after the batches received before it.
class ReadAheadStream {
 public:
  static constexpr const char* kThreadName = "stoker-receive";

  ReadAheadStream(std::shared_ptr<FlightConnection> connection, std::string ticket, int depth);
  /// Cancels the call and joins the thread.
  ~ReadAheadStream();
  ReadAheadStream(const ReadAheadStream&) = delete;
  ReadAheadStream& operator=(const ReadAheadStream&) = delete;

  /// The next batch (waits for it); nullptr once the stream has ended; the stream's error once
  /// the batches before it are taken, and again at every later call.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() EXCLUDES(mutex_);

  /// Whether Next() would answer without waiting, after waiting up to `timeout` for it.
  bool WaitReady(std::chrono::milliseconds timeout) EXCLUDES(mutex_);

  /// The batches received and not yet taken (at most the depth).
  size_t buffered() EXCLUDES(mutex_);

  /// Ends the call: the thread stops reading, Next() answers Cancelled once the batches
  /// already received are taken. Safe from any thread, more than once.
  void Cancel() EXCLUDES(mutex_);

 private:
  void Run() EXCLUDES(mutex_);
  void Finish(arrow::Status status) EXCLUDES(mutex_);

  std::shared_ptr<FlightConnection> connection_;
  const std::string ticket_;
  const size_t depth_;
  Mutex mutex_;
  CondVar changed_;
  std::deque<std::shared_ptr<arrow::RecordBatch>> ready_ GUARDED_BY(mutex_);
  // The call, once the thread has made it; Cancel() cancels it from any thread.
  std::unique_ptr<arrow::flight::FlightStreamReader> reader_ GUARDED_BY(mutex_);
  arrow::Status status_ GUARDED_BY(mutex_);  // the stream's end (OK) or error, once finished_
  bool finished_ GUARDED_BY(mutex_) = false;
  bool cancelled_ GUARDED_BY(mutex_) = false;
  std::thread thread_;  // last: started once everything above is constructed
};

}  // namespace stoker
