// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The .npy parser of src/decode: the layouts np.save writes (row- and
// column-major, either byte order) and the malformed headers that must be errors.
#include "decode/npy_format.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "decode/decode_test_util.h"

namespace stoker {
namespace {

using testing::Npy;

std::vector<int32_t> Copied(const NpyArray& array) {
  std::vector<int32_t> out(static_cast<size_t>(array.num_elements()));
  CopyNpyValues(array, reinterpret_cast<uint8_t*>(out.data()));
  return out;
}

arrow::Result<NpyArray> Parse(const std::string& bytes) {
  return ParseNpy(reinterpret_cast<const uint8_t*>(bytes.data()),
                  static_cast<int64_t>(bytes.size()));
}

std::string Int32s(const std::vector<int32_t>& values, bool big_endian = false) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), values.data(), out.size());
  if (big_endian) {
    for (size_t i = 0; i < out.size(); i += 4)
      std::swap(out[i], out[i + 3]), std::swap(out[i + 1], out[i + 2]);
  }
  return out;
}

TEST(NpyFormatTest, RowMajorValuesAreCopiedAsTheyAre) {
  // A parsed array points into its bytes: they must outlive it.
  const std::string bytes = Npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }",
                                Int32s({1, 2, 3, 4, 5, 6}));
  const auto array = Parse(bytes);
  ASSERT_TRUE(array.ok()) << array.status().ToString();
  EXPECT_TRUE(array->type->Equals(*arrow::int32()));
  EXPECT_EQ(array->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Copied(*array), (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
}

TEST(NpyFormatTest, ColumnMajorAndBigEndianValuesAreMadeRowMajorAndNative) {
  // [[1, 2, 3], [4, 5, 6]] stored column by column, then big-endian.
  const std::string fortran_bytes =
      Npy("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", Int32s({1, 4, 2, 5, 3, 6}));
  const auto fortran = Parse(fortran_bytes);
  ASSERT_TRUE(fortran.ok());
  EXPECT_EQ(Copied(*fortran), (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  const std::string big_bytes = Npy("{'descr': '>i4', 'fortran_order': False, 'shape': (3,), }",
                                    Int32s({7, -8, 9}, /*big_endian=*/true));
  const auto big = Parse(big_bytes);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(Copied(*big), (std::vector<int32_t>{7, -8, 9}));
}

TEST(NpyFormatTest, MalformedHeadersAreErrors) {
  const std::string values = Int32s({1, 2});
  const std::pair<std::string, std::string> cases[] = {
      {"not npy at all", "do not start with the .npy magic"},
      {Npy("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", values),
       "shape (3,) needs more bytes than the 8 that follow"},
      {Npy("{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", values),
       "needs 4 bytes, 8 follow the header"},
      {Npy("{'descr': '<i4', 'fortran_order': False, 'shape': (99999999999999, 99999999999999), }",
           values),
       "needs more bytes than the 8 that follow"},
      {Npy("{'descr': '<U4', 'fortran_order': False, 'shape': (2,), }", values),
       "numpy dtype '<U4' cannot be decoded"},
      {Npy("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,), }", values),
       "a structured dtype"},
      {Npy("{'descr': '<i4', 'fortran_order': Maybe, 'shape': (2,), }", values), "fortran_order"},
      {Npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2", values), "shape"},
      {std::string("\x93NUMPY\x01\x00\xff\xff", 10), "truncated header"},
  };
  for (const auto& [bytes, message] : cases) {
    const auto array = Parse(bytes);
    ASSERT_FALSE(array.ok()) << message;
    EXPECT_NE(array.status().message().find(message), std::string::npos)
        << array.status().message();
  }
}

}  // namespace
}  // namespace stoker
