// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/chunk_checksums.h"

#include <gtest/gtest.h>

#include <numeric>

namespace stoker {
namespace {

std::shared_ptr<arrow::Buffer> Bytes(const std::vector<uint8_t>& all, int64_t from, int64_t to) {
  return arrow::Buffer::FromString(std::string(all.begin() + from, all.begin() + to));
}

TEST(ChunkChecksumsTest, EncodedAndDecodedBack) {
  const std::vector<uint64_t> checksums{0, 1, 0xfedcba9876543210ULL, ~0ULL};
  const std::string hex = EncodeChecksums(checksums);
  EXPECT_EQ(hex.size(), 64u);
  EXPECT_EQ(hex.substr(32, 16), "fedcba9876543210");
  EXPECT_EQ(DecodeChecksums(hex).ValueOrDie(), checksums);
  EXPECT_TRUE(DecodeChecksums("").ValueOrDie().empty());
  EXPECT_TRUE(DecodeChecksums("0123").status().IsInvalid());
  EXPECT_TRUE(DecodeChecksums("000000000000000g").status().IsInvalid());
  EXPECT_TRUE(DecodeChecksums("000000000000000A").status().IsInvalid());  // lowercase only
}

// A chunk's checksum is the same whether the reads returned it whole, in pieces (Arrow's
// read-range cache splits large ranges), or inside a larger coalesced read.
TEST(ChunkChecksumsTest, ReadsInPiecesGiveTheChecksumOfTheWhole) {
  std::vector<uint8_t> file(1000);
  std::iota(file.begin(), file.end(), 0);
  const ChunkRange chunk{100, 700};
  const uint64_t whole = ChunkChecksum(file.data() + 100, 700);

  ReadLog coalesced;
  coalesced.Add(50, Bytes(file, 50, 900));
  EXPECT_EQ(coalesced.Checksum(chunk).ValueOrDie(), whole);

  ReadLog pieces;
  pieces.Add(400, Bytes(file, 400, 800));
  pieces.Add(100, Bytes(file, 100, 400));
  pieces.Add(300, Bytes(file, 300, 350));  // overlapping reads are harmless
  EXPECT_EQ(pieces.Checksum(chunk).ValueOrDie(), whole);

  ReadLog gap;
  gap.Add(100, Bytes(file, 100, 400));
  gap.Add(500, Bytes(file, 500, 800));
  const auto missing = gap.Checksum(chunk);
  ASSERT_TRUE(missing.status().IsInvalid());
  EXPECT_NE(missing.status().message().find("bytes 400..800 were not read"), std::string::npos)
      << missing.status().message();

  file[500] ^= 1;  // one changed byte changes the checksum
  ReadLog changed;
  changed.Add(0, Bytes(file, 0, 1000));
  EXPECT_NE(changed.Checksum(chunk).ValueOrDie(), whole);
}

}  // namespace
}  // namespace stoker
