// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/status.h>

#include <csignal>
#include <functional>
#include <thread>

namespace stoker {

/// SIGINT and SIGTERM, while it lives, call `on_signal` once, on a thread of its own (the
/// handler only writes the signal's number to a pipe that thread reads: nothing but that
/// is safe in a handler). How a server stops on a signal with a deadline for its calls:
/// Flight's own SetShutdownOnSignals shuts down with none, so a stream whose client stops
/// reading held the server past SIGTERM. Handlers are the process's: the first instance
/// alive owns them, and one made while another lives installs none (Install says so). The
/// previous handlers are put back on destruction.
class StopSignals {
 public:
  StopSignals() = default;
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  ~StopSignals();

  /// Installs the handlers; Invalid when another StopSignals owns them.
  arrow::Status Install(std::function<void(int)> on_signal);

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
  std::thread watcher_;
};

}  // namespace stoker
