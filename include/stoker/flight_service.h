// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Implemented in src/serve/flight_service.cc (library stoker_serve).
#pragma once

#include <arrow/result.h>
#include <arrow/status.h>

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>

#include "stoker/fields.h"
#include "stoker/loader.h"
#include "stoker/stream_identity.h"

namespace stoker {

/// How `stoker serve` runs.
struct ServeOptions {
  /// Address to bind; 127.0.0.1 unless the operator opens it up.
  std::string host = "127.0.0.1";
  /// TCP port; 0 picks a free one (see FlightService::port()).
  int port = 0;
  /// Bearer token every call must present ("authorization: Bearer <token>"); empty: none.
  std::string token;
  /// TLS certificate and key (PEM); both empty: plaintext gRPC.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  /// Streams served at once; more are refused with "server busy" (>= 1).
  int max_streams = 16;
  /// Batches per chunk when several servers share a plan (chunks are dealt round robin,
  /// >= 1). The default is the chunk a local loader's resume identity names, so a state
  /// saved locally resumes from servers.
  int64_t chunk_batches = 16;
  /// A stream whose client has not asked for a batch for this many seconds is released: its
  /// pipeline (windows, prefetched batches, threads) is freed and its slot given to others;
  /// the client gets an error if it comes back, and RemoteLoader reconnects from the batch it
  /// needs. Bounds what clients that stop reading can hold. 0: never.
  int64_t stream_idle_timeout_s = 300;

  /// Checks ranges and that TLS has both halves; the message names the option.
  arrow::Status Validate() const;
};

/// A server's counters over its life (docs/observability.md). Stage times, bytes read and
/// the cache are in its loader's StatsSnapshot.
struct ServeStats {
  /// Streams opened, open now, refused because max_streams were open, released for idling.
  int64_t streams_started = 0;
  int64_t streams_active = 0;
  int64_t streams_refused_busy = 0;
  int64_t streams_released_idle = 0;
  /// Calls refused: bad, foreign or oversized tickets, and missing or wrong tokens.
  int64_t bad_tickets = 0;
  int64_t unauthenticated = 0;
  /// Streams that ended in an error (other than a client going away).
  int64_t stream_errors = 0;
  /// What the streams handed to Flight to send.
  int64_t batches_sent = 0;
  int64_t rows_sent = 0;
  int64_t bytes_sent = 0;
};

/// ServeStats' fields by name: the keys of Server.stats() in Python (stoker/fields.h).
constexpr auto FieldsOf(const ServeStats&) {
  using S = ServeStats;
  return std::tuple{Field{"streams_started", &S::streams_started},
                    Field{"streams_active", &S::streams_active},
                    Field{"streams_refused_busy", &S::streams_refused_busy},
                    Field{"streams_released_idle", &S::streams_released_idle},
                    Field{"bad_tickets", &S::bad_tickets},
                    Field{"unauthenticated", &S::unauthenticated},
                    Field{"stream_errors", &S::stream_errors},
                    Field{"batches_sent", &S::batches_sent},
                    Field{"rows_sent", &S::rows_sent},
                    Field{"bytes_sent", &S::bytes_sent}};
}

/// An Arrow Flight server streaming a Loader's batches (docs/design.md, "Serve"). The loader fixes
/// the dataset and every option but rank, world size and epoch, which each ticket names; a
/// ticket can address nothing but that dataset. docs/serve.md documents the ticket, the
/// descriptor and the actions so a plain pyarrow.flight client can read a stream.
///
/// Memory per stream is bounded by the loader's prefetch and shuffle window; a slow client
/// is slowed by gRPC flow control (the stream's pipeline stops at its prefetch bound); a
/// client that disconnects has its stream's workers stopped and joined, and one that stops
/// reading for stream_idle_timeout_s has its stream released.
class FlightService {
 public:
  static arrow::Result<std::unique_ptr<FlightService>> Make(std::shared_ptr<Loader> loader,
                                                            ServeOptions options);
  virtual ~FlightService() = default;

  /// The port it listens on.
  virtual int port() const = 0;
  /// Serves until Shutdown() or SIGINT/SIGTERM.
  virtual arrow::Status Serve() = 0;
  virtual arrow::Status Shutdown() = 0;
  /// The configuration it advertises (JSON; the descriptor of its one flight).
  virtual const std::string& config_json() const = 0;
  virtual ServeStats stats() const = 0;
};

}  // namespace stoker
