// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// `stoker serve` from Python: the Flight server over a Loader, and the ticket codec the
// server and RemoteLoader share (src/serve/ticket.h).

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "loader/loader_internal.h"
#include "loader/resume_identity.h"
#include "python/binding.h"
#include "serve/stream_source.h"
#include "serve/ticket.h"
#include "stoker/flight_service.h"

namespace stoker::python {

namespace {

// A Flight server over a loader; serve() blocks until shutdown() or SIGINT/SIGTERM.
class PyServer {
 public:
  PyServer(const PyLoader& loader, ServeOptions options)
      : service_(ValueOrThrow(FlightService::Make(loader.engine(), std::move(options)))) {}
  PyServer(std::shared_ptr<const MixtureStreams> mixture, std::string identity_json,
           ServeOptions options)
      : service_(ValueOrThrow(MakeFlightService(
            ValueOrThrow(MixtureStreamSource(std::move(mixture), std::move(identity_json))),
            std::move(options)))) {}

  int Port() const { return service_->port(); }
  std::string Config() const { return service_->config_json(); }
  void Serve() { ThrowIfError(service_->Serve()); }
  void Shutdown() { ThrowIfError(service_->Shutdown()); }
  nb::dict Stats() const { return ToDict(service_->stats()); }

 private:
  std::unique_ptr<FlightService> service_;
};

nb::bytes EncodeTicketBytes(const std::string& config, int64_t epoch, int rank, int world_size,
                            const std::vector<std::pair<int, int64_t>>& rounds, int64_t shards,
                            int64_t shard, int64_t span, int64_t chunk, int64_t first,
                            int64_t chunk_rows, int64_t first_row) {
  Ticket ticket;
  ticket.config = config;
  LoaderImpl::StreamSpec& s = ticket.stream;
  s.epoch = epoch;
  s.rank = rank;
  s.world_size = world_size;
  for (const auto& [round_world_size, rows] : rounds) s.resumed.push_back({round_world_size, rows});
  s.shards = shards;
  s.shard = shard;
  s.span = span;
  s.chunk = chunk;
  s.first_batch = first;
  s.chunk_rows = chunk_rows;
  s.first_row = first_row;
  const std::string text = EncodeTicket(ticket);
  return nb::bytes(text.data(), text.size());
}

nb::dict DecodeTicketBytes(nb::bytes text) {
  const Ticket ticket = ValueOrThrow(DecodeTicket(std::string_view(text.c_str(), text.size())));
  const LoaderImpl::StreamSpec& s = ticket.stream;
  nb::list rounds;
  for (const auto& round : s.resumed) {
    rounds.append(nb::make_tuple(round.world_size, round.rows_per_rank));
  }
  nb::dict out;
  out["config"] = ticket.config;
  out["epoch"] = s.epoch;
  out["rank"] = s.rank;
  out["world_size"] = s.world_size;
  out["rounds"] = rounds;
  out["shards"] = s.shards;
  out["shard"] = s.shard;
  out["span"] = s.span;
  out["chunk"] = s.chunk;
  out["first"] = s.first_batch;
  out["chunk_rows"] = s.chunk_rows;
  out["first_row"] = s.first_row;
  return out;
}

}  // namespace

void BindServe(nb::module_& m) {
  nb::class_<PyServer>(m, "Server")
      .def(nb::init<const PyLoader&, ServeOptions>(), nb::arg("loader"), nb::arg("options"),
           ReleaseGil())
      .def(
          "__init__",
          [](PyServer* self, nb::handle mixture, std::string identity_json, ServeOptions options) {
            auto streams = MixtureStreamsOf(mixture);
            nb::gil_scoped_release release;
            new (self) PyServer(std::move(streams), std::move(identity_json), std::move(options));
          },
          nb::arg("mixture"), nb::arg("identity_json"), nb::arg("options"),
          "A server over a _core.MixtureReader's streams, advertising identity_json (the "
          "mixture loader's identity as a JSON object) with its digest and chunk added.")
      .def_prop_ro("port", &PyServer::Port)
      .def("config", &PyServer::Config)
      .def("stats", &PyServer::Stats, "The server's counters (docs/observability.md).")
      .def("serve", &PyServer::Serve, ReleaseGil())
      .def("shutdown", &PyServer::Shutdown, ReleaseGil());

  m.attr("DEFAULT_CHUNK_BATCHES") = kDefaultChunkBatches;
  const LoaderImpl::StreamSpec defaults;
  m.def("encode_ticket", &EncodeTicketBytes, nb::arg("config"), nb::kw_only(), nb::arg("epoch"),
        nb::arg("rank"), nb::arg("world_size"), nb::arg("rounds"),
        nb::arg("shards") = defaults.shards, nb::arg("shard") = defaults.shard,
        nb::arg("span") = defaults.span, nb::arg("chunk") = defaults.chunk,
        nb::arg("first") = defaults.first_batch, nb::arg("chunk_rows") = defaults.chunk_rows,
        nb::arg("first_row") = defaults.first_row,
        "The ticket naming a stream (the format docs/serve.md documents).");
  m.def("decode_ticket", &DecodeTicketBytes, nb::arg("ticket"),
        "A ticket's fields as a dict; ValueError naming what is wrong with a bad one.");
}

}  // namespace stoker::python
