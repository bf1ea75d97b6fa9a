// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// What the fuzz targets share: the contract check, a byte reader, small datasets in the
// in-memory filesystem, and reading an epoch.
#pragma once

#include <arrow/result.h>
#include <arrow/table.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "stoker/loader.h"

namespace stoker::fuzz {

/// A broken contract: prints what broke and aborts, which libFuzzer (or the replay test)
/// reports with the input.
[[noreturn]] void Violation(const std::string& what);

/// Reads values off the front of a fuzz input; past its end every value is 0 or empty.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return size_ == 0; }
  uint8_t Byte() {
    if (size_ == 0) return 0;
    --size_;
    return *data_++;
  }
  /// A value in [0, n) (1 <= n <= 65536).
  size_t Below(size_t n) {
    const size_t value = n <= 256 ? Byte() : (size_t{Byte()} << 8 | Byte());
    return value % n;
  }
  uint64_t Integer() {
    uint64_t value = 0;
    for (int i = 0; i < 8; ++i) value = (value << 8) | Byte();
    return value;
  }
  double Double() {
    const uint64_t bits = Integer();
    double value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
  }
  /// A string of up to `max` bytes.
  std::string Text(size_t max) {
    std::string text;
    for (size_t n = Below(max + 1); n > 0 && size_ > 0; --n)
      text.push_back(static_cast<char>(Byte()));
    return text;
  }

 private:
  const uint8_t* data_;
  size_t size_;
};

/// `table` written as a Parquet file (with statistics) at "mem:///<name>"; its URI.
arrow::Result<std::string> PutParquet(const std::string& name, const arrow::Table& table,
                                      int64_t row_group_size);

/// A table of 300 rows with a column of each kind transforms and filters meet: i (int64,
/// nulls), f (float64 with NaN and infinities), s (utf8), b (bool), n (int32, no nulls),
/// l (list<float32>), fl (fixed_size_list<float32>[3]), ts (timestamp[us]).
std::shared_ptr<arrow::Table> SampleTable();

/// Options for a small two-thread loader over `source` with Arrow output.
LoaderOptions SmallLoaderOptions(const std::string& source);

/// What reading a stream gave: the rows and whether it ended (rather than failed or was cut).
struct EpochRead {
  int64_t rows = 0;
  int64_t batches = 0;
  bool finished = false;
};

/// Reads at most `max_batches` batches of `stream`, checking each against `schema` and
/// `batch_size`; an error ends the read (finished stays false).
EpochRead ReadStream(BatchStream* stream, const arrow::Schema& schema, int64_t batch_size,
                     int64_t max_batches);

/// Reads epoch 0 of `loader` (at most `max_batches` batches); when it ends without an error,
/// it must have delivered every row of the epoch exactly once in count.
EpochRead ReadEpoch(const Loader& loader, int64_t max_batches);

}  // namespace stoker::fuzz
