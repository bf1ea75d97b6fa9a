// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "telemetry/trace.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "util/json.h"

namespace stoker {

namespace {

const char* StageName(TraceStage stage) {
  switch (stage) {
    case TraceStage::kFetch:
      return "fetch";
    case TraceStage::kDecode:
      return "decode";
    case TraceStage::kTransform:
      return "transform";
    case TraceStage::kStage:
      return "stage";
    case TraceStage::kAssemble:
      return "assemble";
    case TraceStage::kWait:
      return "wait";
    case TraceStage::kReceive:
      return "receive";
    case TraceStage::kConvert:
      return "convert";
    case TraceStage::kInFlight:
      return "units in flight";
    case TraceStage::kTune:
      return "autotune";
  }
  return "?";
}

constexpr TraceStage kStages[] = {
    TraceStage::kFetch,    TraceStage::kDecode, TraceStage::kTransform, TraceStage::kStage,
    TraceStage::kAssemble, TraceStage::kWait,   TraceStage::kReceive,   TraceStage::kConvert};

bool IsBatchStage(TraceStage stage) {
  return stage == TraceStage::kAssemble || stage == TraceStage::kWait ||
         stage == TraceStage::kReceive || stage == TraceStage::kConvert;
}

std::string Micros(int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", static_cast<double>(ns) / 1e3);
  return text;
}

}  // namespace

bool ParseTraceStage(const std::string& name, TraceStage* stage) {
  for (TraceStage candidate : kStages) {
    if (name == StageName(candidate)) {
      *stage = candidate;
      return true;
    }
  }
  return false;
}

TraceRing::TraceRing(size_t capacity) : capacity_(capacity) {
  MutexLock lock(mutex_);
  spans_.reserve(capacity_);
}

int32_t TraceRing::ThreadIndex() {
  const auto self = static_cast<uint64_t>(pthread_self());
  auto it = threads_.find(self);
  if (it != threads_.end()) return it->second.first;
  char name[32] = "";
  pthread_getname_np(pthread_self(), name, sizeof(name));
  const auto index = static_cast<int32_t>(threads_.size() + 1);
  threads_[self] = {index, name[0] ? name : "thread"};
  return index;
}

void TraceRing::Record(TraceStage stage, Clock::time_point start, Clock::time_point end, int64_t a,
                       int64_t b) {
  if (capacity_ == 0) return;
  const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count();
  MutexLock lock(mutex_);
  const Span span{start, ns, a, b, ThreadIndex(), stage};
  if (spans_.size() < capacity_) {
    spans_.push_back(span);
  } else {
    spans_[next_] = span;
  }
  next_ = (next_ + 1) % capacity_;
  ++recorded_;
}

int64_t TraceRing::recorded() const {
  MutexLock lock(mutex_);
  return recorded_;
}

arrow::Status TraceRing::WriteJson(const std::string& path) const {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  {
    MutexLock lock(mutex_);
    const int pid = static_cast<int>(getpid());
    for (const auto& [_, thread] : threads_) {
      out += "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(pid) +
             ",\"tid\":" + std::to_string(thread.first) + ",\"args\":{\"name\":";
      AppendJsonString(thread.second + " " + std::to_string(thread.first), &out);
      out += "}},\n";
    }
    // Oldest first: once the ring has wrapped, the oldest span is the next to be overwritten.
    const size_t n = spans_.size();
    const size_t first = n < capacity_ ? 0 : next_;
    for (size_t k = 0; k < n; ++k) {
      const Span& s = spans_[(first + k) % n];
      const int64_t ts =
          std::chrono::duration_cast<std::chrono::nanoseconds>(s.start - origin_).count();
      if (s.stage == TraceStage::kInFlight) {  // a counter track, one value per change
        out += "{\"ph\":\"C\",\"name\":\"units in flight\",\"pid\":" + std::to_string(pid) +
               ",\"ts\":" + Micros(ts) + ",\"args\":{\"units\":" + std::to_string(s.a) + "}},\n";
        continue;
      }
      if (s.stage == TraceStage::kTune) {  // the controller's setting, one value per move
        out += "{\"ph\":\"C\",\"name\":\"autotune\",\"pid\":" + std::to_string(pid) +
               ",\"ts\":" + Micros(ts) + ",\"args\":{\"threads\":" + std::to_string(s.a) +
               ",\"prefetch\":" + std::to_string(s.b) + "}},\n";
        continue;
      }
      out += "{\"ph\":\"X\",\"name\":\"";
      out += StageName(s.stage);
      out += "\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(s.thread) +
             ",\"ts\":" + Micros(ts) + ",\"dur\":" + Micros(s.duration_ns) + ",\"args\":{";
      out += IsBatchStage(s.stage)
                 ? "\"batch\":" + std::to_string(s.a)
                 : "\"file\":" + std::to_string(s.a) + ",\"row_group\":" + std::to_string(s.b);
      if (s.stage == TraceStage::kReceive) out += ",\"server\":" + std::to_string(s.b);
      out += "}},\n";
    }
  }
  if (out.back() == '\n' && out[out.size() - 2] == ',') out.erase(out.size() - 2, 1);
  out += "]}\n";
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << out;
  file.close();
  if (!file) return arrow::Status::IOError("cannot write the trace to '", path, "'");
  return arrow::Status::OK();
}

}  // namespace stoker
