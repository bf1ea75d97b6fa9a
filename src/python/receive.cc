// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// RemoteLoader's receiving (src/serve/read_ahead_stream.h): a Flight connection per server and
// its DoGet streams read ahead on C++ threads. A stream's error is raised as the
// pyarrow.flight exception a pyarrow client would raise (FlightUnavailableError, ...), so
// that the client's retry rules read the same either way.

#include <arrow/flight/types.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "python/binding.h"
#include "serve/read_ahead_stream.h"

namespace stoker::python {

namespace {

namespace flight = arrow::flight;

// The pyarrow.flight exception class of a Flight status code (pyarrow's own mapping).
const char* FlightErrorName(flight::FlightStatusCode code) {
  switch (code) {
    case flight::FlightStatusCode::Internal:
      return "FlightInternalError";
    case flight::FlightStatusCode::TimedOut:
      return "FlightTimedOutError";
    case flight::FlightStatusCode::Cancelled:
      return "FlightCancelledError";
    case flight::FlightStatusCode::Unauthenticated:
      return "FlightUnauthenticatedError";
    case flight::FlightStatusCode::Unauthorized:
      return "FlightUnauthorizedError";
    case flight::FlightStatusCode::Unavailable:
      return "FlightUnavailableError";
    case flight::FlightStatusCode::Failed:
      return "FlightServerError";
  }
  return "FlightError";
}

// Raises a stream's error: a Flight status as pyarrow.flight's exception, a cancelled call
// as FlightCancelledError, any other status (the server's own: bad data, a bad ticket) as
// the engine's errors are raised (module.cc).
[[noreturn]] void RaiseStreamError(const arrow::Status& status) {
  const auto detail = flight::FlightStatusDetail::UnwrapStatus(status);
  if (detail == nullptr && !status.IsCancelled()) throw StatusError(status);
  const char* name = detail != nullptr ? FlightErrorName(detail->code()) : "FlightCancelledError";
  nb::object type = nb::module_::import_("pyarrow.flight").attr(name);
  PyErr_SetString(type.ptr(), status.message().c_str());
  throw nb::python_error();
}

// A DoGet stream as Python reads it: wait_ready() with the GIL free (so Ctrl-C is seen
// between waits), next() the batch as a _core.Batch.
class PyStream {
 public:
  explicit PyStream(std::unique_ptr<ReadAheadStream> stream) : stream_(std::move(stream)) {}

  bool WaitReady(double timeout_s) {
    return stream_->WaitReady(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1e3)));
  }

  nb::object Next() {
    arrow::Result<std::shared_ptr<arrow::RecordBatch>> batch;
    {
      nb::gil_scoped_release release;
      batch = stream_->Next();
    }
    if (!batch.ok()) RaiseStreamError(batch.status());
    if (*batch == nullptr) return nb::none();
    return HoldBatch(std::move(batch).ValueUnsafe());
  }

  void Cancel() { stream_->Cancel(); }

 private:
  std::unique_ptr<ReadAheadStream> stream_;
};

class PyConnection {
 public:
  PyConnection(std::string location, std::vector<std::pair<std::string, std::string>> headers,
               std::string tls_root_certs)
      : connection_(ValueOrThrow(FlightConnection::Connect(
            {std::move(location), std::move(headers), std::move(tls_root_certs)}))) {}

  PyStream Read(nb::bytes ticket, int depth) {
    return PyStream(connection_->Read(std::string(ticket.c_str(), ticket.size()), depth));
  }

 private:
  std::shared_ptr<FlightConnection> connection_;
};

}  // namespace

void BindReceive(nb::module_& m) {
  nb::class_<PyStream>(m, "FlightStream",
                       "A server's DoGet stream, read ahead on a C++ thread of its own.")
      .def("wait_ready", &PyStream::WaitReady, nb::arg("timeout_s") = 0.1, ReleaseGil(),
           "Whether next() answers without waiting, after waiting up to timeout_s for it.")
      .def("next", &PyStream::Next,
           "The next batch as a _core.Batch; None at the stream's end; the stream's error as "
           "pyarrow.flight raises it.")
      .def("cancel", &PyStream::Cancel, ReleaseGil());
  nb::class_<PyConnection>(m, "FlightConnection",
                           "A Flight client of one server, whose streams are read ahead.")
      .def(nb::init<std::string, std::vector<std::pair<std::string, std::string>>, std::string>(),
           nb::arg("location"), nb::arg("headers"), nb::arg("tls_root_certs"))
      .def("read", &PyConnection::Read, nb::arg("ticket"), nb::arg("depth"),
           "The DoGet stream of `ticket`, up to `depth` batches received ahead.");
}

}  // namespace stoker::python
