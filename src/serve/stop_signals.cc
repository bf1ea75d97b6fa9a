// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "serve/stop_signals.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

namespace stoker {

namespace {

// The pipe the handler writes to; -1 while no StopSignals owns the handlers.
std::atomic<int> g_write_fd{-1};

extern "C" void OnStopSignal(int signum) {
  const int saved_errno = errno;
  const int fd = g_write_fd.load();
  if (fd >= 0) {
    const auto byte = static_cast<unsigned char>(signum);
    [[maybe_unused]] const ssize_t written = write(fd, &byte, 1);
  }
  errno = saved_errno;
}

}  // namespace

arrow::Status StopSignals::Install(std::function<void(int)> on_signal) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return arrow::Status::IOError("stop signals: pipe2: ", std::strerror(errno));
  }
  int expected = -1;
  if (!g_write_fd.compare_exchange_strong(expected, fds[1])) {
    close(fds[0]);
    close(fds[1]);
    return arrow::Status::Invalid("stop signals: another server in this process owns them");
  }
  read_fd_ = fds[0];
  write_fd_ = fds[1];
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &previous_int_);
  sigaction(SIGTERM, &action, &previous_term_);
  watcher_ = std::thread([fd = read_fd_, on_signal = std::move(on_signal)] {
    unsigned char byte = 0;
    ssize_t got = 0;
    do {
      got = read(fd, &byte, 1);
    } while (got < 0 && errno == EINTR);
    if (got == 1 && byte != 0) on_signal(byte);  // 0: the destructor's wake-up
  });
  return arrow::Status::OK();
}

StopSignals::~StopSignals() {
  if (write_fd_ < 0) return;
  sigaction(SIGINT, &previous_int_, nullptr);
  sigaction(SIGTERM, &previous_term_, nullptr);
  g_write_fd.store(-1);
  const unsigned char wake = 0;
  [[maybe_unused]] const ssize_t written = write(write_fd_, &wake, 1);
  if (watcher_.joinable()) watcher_.join();
  close(read_fd_);
  close(write_fd_);
}

}  // namespace stoker
