// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "decode/npz_archive.h"

#include <gtest/gtest.h>

#include <string>

#include "decode/decode_test_util.h"

namespace stoker {
namespace {

using testing::LittleEndian;
using testing::Zip;

arrow::Result<std::string> Member(const std::string& zip, const std::string& name,
                                  int64_t max_size = 1 << 20) {
  ARROW_ASSIGN_OR_RAISE(auto bytes,
                        ReadZipMember(reinterpret_cast<const uint8_t*>(zip.data()),
                                      static_cast<int64_t>(zip.size()), name, max_size));
  return std::string(bytes.begin(), bytes.end());
}

void ExpectError(const arrow::Result<std::string>& result, const std::string& text) {
  ASSERT_FALSE(result.ok()) << text;
  EXPECT_NE(result.status().message().find(text), std::string::npos) << result.status().message();
}

TEST(NpzArchiveTest, ReadsDeflatedAndStoredMembersByName) {
  const std::string big(10000, 'z');
  const std::string zip =
      Zip({{"a.npy", "first", true}, {"arr.npy", big, true}, {"raw.bin", "as it is", false}},
          "a comment after the directory");
  EXPECT_EQ(Member(zip, "arr.npy").ValueOrDie(), big);
  EXPECT_EQ(Member(zip, "a.npy").ValueOrDie(), "first");
  EXPECT_EQ(Member(zip, "raw.bin").ValueOrDie(), "as it is");
  EXPECT_EQ(Member(Zip({{"arr.npy", "", false}}), "arr.npy").ValueOrDie(), "");
  EXPECT_EQ(Member(Zip({{"arr.npy", "", true}}), "arr.npy").ValueOrDie(), "");
  // The size limit is the uncompressed size: exactly it passes.
  EXPECT_EQ(Member(zip, "arr.npy", 10000).ValueOrDie(), big);
  ExpectError(Member(zip, "arr.npy", 9999),
              "'arr.npy' holds 10000 bytes, more than the 9999 the field's shape allows");
  ExpectError(Member(zip, "b.npy"), "the .npz archive holds no 'b.npy'");
}

TEST(NpzArchiveTest, MalformedArchivesAreInvalidNeverACrash) {
  ExpectError(Member("", "arr.npy"), "not a valid .npz (zip) archive: no end of central directory");
  ExpectError(Member("PK not really a zip at all, just text", "arr.npy"),
              "no end of central directory");
  const std::string zip = Zip({{"arr.npy", std::string(300, 'q'), true}});
  // Every cut, and every flipped byte, is an error or the member; never a crash.
  for (size_t cut = 0; cut < zip.size(); ++cut) {
    EXPECT_FALSE(Member(zip.substr(0, cut), "arr.npy").ok()) << cut;
  }
  for (size_t at = 0; at < zip.size(); ++at) {
    std::string flipped = zip;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x5a);
    auto member = Member(flipped, "arr.npy");
    if (member.ok()) {
      EXPECT_LE(member->size(), 1u << 20);
    }
  }
}

TEST(NpzArchiveTest, InconsistentSizesAndMethodsAreNamed) {
  const std::string data = "0123456789";
  // A deflated member whose recorded size (offset 22 of the local header and 24 of the
  // directory entry) is one less or one more than what it inflates to.
  std::string zip = Zip({{"arr.npy", data, true}});
  const size_t entry = zip.find(std::string("PK\x01\x02", 4));
  std::string shorter = zip;
  shorter.replace(entry + 24, 4, LittleEndian(9, 4));
  ExpectError(Member(shorter, "arr.npy"), "the member inflates past its recorded size");
  std::string longer = zip;
  longer.replace(entry + 24, 4, LittleEndian(11, 4));
  ExpectError(Member(longer, "arr.npy"), "the member inflates short of its recorded size");
  // A stored member whose two sizes differ.
  std::string stored = Zip({{"arr.npy", data, false}});
  const size_t stored_entry = stored.find(std::string("PK\x01\x02", 4));
  stored.replace(stored_entry + 24, 4, LittleEndian(8, 4));
  ExpectError(Member(stored, "arr.npy"), "stored sizes differ");
  // Methods other than stored and deflated (12: bzip2).
  std::string bzip = zip;
  bzip.replace(entry + 10, 2, LittleEndian(12, 2));
  const auto refused = Member(bzip, "arr.npy");
  ASSERT_TRUE(refused.status().IsNotImplemented());
  EXPECT_EQ(refused.status().message(), "zip compression method 12 (np.savez_compressed deflates)");
  // Deflate data that is not.
  std::string corrupt = Zip({{"arr.npy", data, false}});
  const size_t corrupt_entry = corrupt.find(std::string("PK\x01\x02", 4));
  corrupt.replace(corrupt_entry + 10, 2, LittleEndian(8, 2));
  corrupt.replace(30 + 7, data.size(), std::string(data.size(), '\xff'));
  ExpectError(Member(corrupt, "arr.npy"), "corrupt deflate data");
}

TEST(NpzArchiveTest, Zip64SizesAreTakenFromTheExtraField) {
  // The directory entry's sizes saturated at 0xFFFFFFFF, the real ones in a zip64 extra field.
  const std::string data = "zip64 member";
  std::string zip = Zip({{"arr.npy", data, false}});
  const size_t entry = zip.find(std::string("PK\x01\x02", 4));
  const std::string extra = LittleEndian(0x0001, 2) + LittleEndian(16, 2) +
                            LittleEndian(data.size(), 8) + LittleEndian(data.size(), 8);
  std::string patched = zip.substr(0, entry);
  std::string directory = zip.substr(entry, 46 + 7);  // fixed part and the name
  directory.replace(20, 8, LittleEndian(0xFFFFFFFF, 4) + LittleEndian(0xFFFFFFFF, 4));
  directory.replace(30, 2, LittleEndian(extra.size(), 2));
  patched += directory + extra;
  std::string end = zip.substr(entry + 46 + 7);
  end.replace(12, 4, LittleEndian(46 + 7 + extra.size(), 4));  // directory size
  patched += end;
  EXPECT_EQ(Member(patched, "arr.npy").ValueOrDie(), data);
}

}  // namespace
}  // namespace stoker
