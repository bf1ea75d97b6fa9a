// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Implemented in src/serve/flight_service.cc (library stoker_serve).
#pragma once

#include <arrow/result.h>
#include <arrow/status.h>

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "stoker/batch_stream.h"
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
  /// On Shutdown() or SIGINT/SIGTERM: no new call is taken, and the streams open may go on
  /// for this many seconds, then are cancelled (their clients get Cancelled and, reading a
  /// fleet, read the rest from the servers left). 0: cancelled at once.
  int64_t shutdown_grace_s = 10;

  /// Checks ranges and that TLS has both halves; the message names the option.
  arrow::Status Validate() const;
};

/// One stream a server serves or served: what its ticket asked for and what it cost.
struct ServedStream {
  int64_t epoch = 0;
  int rank = 0;
  int world_size = 1;
  /// The share (docs/serve.md, "How several servers share a plan"): shard (and span) of
  /// shards, in chunks of `chunk` batches, or with chunk_rows > 0 of whole windows.
  int64_t shards = 1;
  int64_t shard = 0;
  int64_t span = 1;
  int64_t chunk = 1;
  int64_t chunk_rows = 0;
  /// Still being served.
  bool active = false;
  int64_t batches_sent = 0;
  int64_t rows_sent = 0;
  /// Units decoded (and taken from the cache) for this stream, and their CPU-seconds.
  StreamWork work;
};

/// ServedStream's fields by name (stoker/fields.h).
constexpr auto FieldsOf(const ServedStream&) {
  using S = ServedStream;
  return std::tuple{Field{"epoch", &S::epoch},           Field{"rank", &S::rank},
                    Field{"world_size", &S::world_size}, Field{"shards", &S::shards},
                    Field{"shard", &S::shard},           Field{"span", &S::span},
                    Field{"chunk", &S::chunk},           Field{"chunk_rows", &S::chunk_rows},
                    Field{"active", &S::active},         Field{"batches_sent", &S::batches_sent},
                    Field{"rows_sent", &S::rows_sent},   Field{"work", &S::work}};
}

/// Finished streams a server's stats list besides the open ones (the most recent; the totals
/// count every stream).
inline constexpr size_t kServedStreamsListed = 64;

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
  /// Summed over every stream it has served: units decoded, taken from the cache, and their
  /// CPU-seconds (StreamWork). Summed over a fleet's servers, what an epoch cost the fleet.
  int64_t units_decoded = 0;
  int64_t units_cached = 0;
  double unit_cpu_seconds = 0;
  /// The open streams and the last kServedStreamsListed finished ones, oldest first.
  std::vector<ServedStream> streams;
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
                    Field{"bytes_sent", &S::bytes_sent},
                    Field{"units_decoded", &S::units_decoded},
                    Field{"units_cached", &S::units_cached},
                    Field{"unit_cpu_seconds", &S::unit_cpu_seconds},
                    Field{"streams", &S::streams}};
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
  /// Serves until Shutdown() or SIGINT/SIGTERM (the first server alive in a process owns
  /// the signals), each within ServeOptions::shutdown_grace_s of its open streams.
  virtual arrow::Status Serve() = 0;
  virtual arrow::Status Shutdown() = 0;
  /// The configuration it advertises (JSON; the descriptor of its one flight).
  virtual const std::string& config_json() const = 0;
  virtual ServeStats stats() const = 0;
};

}  // namespace stoker
