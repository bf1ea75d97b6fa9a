// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Bytes as a Flight ticket (or the body of the "plan" action, which is a ticket), taken the
// way the server takes them: DecodeTicket, then PlanStream and StartStream for the stream
// the ticket names, on a small loader. Descriptors need no target: the server answers every
// GetFlightInfo with its one flight and never reads the descriptor.
#include <string_view>

#include "fuzz_support.h"
#include "fuzz_targets.h"
#include "loader/loader_internal.h"
#include "plan/plan.h"
#include "serve/ticket.h"

namespace stoker::fuzz {

namespace {

const Loader& TicketLoader() {
  static const auto* loader = new std::shared_ptr<Loader>([] {
    const std::string source =
        PutParquet("ticket.parquet", *SampleTable(), /*row_group_size=*/50).ValueOrDie();
    return Loader::Make(SmallLoaderOptions(source)).ValueOrDie();
  }());
  return **loader;
}

bool SameTicket(const Ticket& a, const Ticket& b) {
  const auto& x = a.stream;
  const auto& y = b.stream;
  return a.config == b.config && x.epoch == y.epoch && x.resumed == y.resumed && x.rank == y.rank &&
         x.world_size == y.world_size && x.shards == y.shards && x.shard == y.shard &&
         x.chunk == y.chunk && x.first_batch == y.first_batch;
}

}  // namespace

int TicketInput(const uint8_t* data, size_t size) {
  const Loader& loader = TicketLoader();
  auto ticket = DecodeTicket(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!ticket.ok()) return 0;
  const std::string encoded = EncodeTicket(*ticket);
  auto again = DecodeTicket(encoded);
  if (!again.ok() || !SameTicket(*ticket, *again)) {
    Violation("ticket '" + encoded + "' does not decode to what it encodes");
  }
  auto planned = Internal(loader).PlanStream(ticket->stream);
  if (!planned.ok()) return 0;
  auto stream = Internal(loader).StartStream(ticket->stream);
  if (!stream.ok()) Violation("PlanStream accepted a ticket StartStream refuses: " + encoded);
  constexpr int64_t kMaxBatches = 64;
  const EpochRead read =
      ReadStream(stream->get(), *loader.schema(), loader.options().batch_size, kMaxBatches);
  if (read.finished && read.batches != static_cast<int64_t>(planned->batches.size())) {
    Violation("stream '" + encoded + "' delivered " + std::to_string(read.batches) +
              " batches; its plan has " + std::to_string(planned->batches.size()));
  }
  return 0;
}

}  // namespace stoker::fuzz
