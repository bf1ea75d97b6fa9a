// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// What the decode tests share: the bytes np.save and np.savez_compressed write, built here so
// that no test depends on numpy.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace stoker::testing {

/// np.save's bytes for a header dict and raw values (version 1: a 2-byte header length).
inline std::string Npy(const std::string& dict, const std::string& values) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + values;
}

/// The native bytes of `values`.
template <typename T>
std::string Bytes(const std::vector<T>& values) {
  std::string out(values.size() * sizeof(T), '\0');
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

/// `value` as `n` little-endian bytes.
inline std::string LittleEndian(uint64_t value, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
  return out;
}

/// One member of a zip archive (Zip): stored as it is, or deflated as np.savez_compressed
/// does.
struct ZipMember {
  std::string name;
  std::string data;
  bool deflate = true;
};

/// `data` deflated raw (no zlib header), as zip members are.
inline std::string Deflate(const std::string& data) {
  z_stream stream{};
  deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&stream, data.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

/// A zip archive of `members`, as Python's zipfile writes it; `comment` after the end of the
/// central directory.
inline std::string Zip(const std::vector<ZipMember>& members, const std::string& comment = "") {
  std::string out, directory;
  for (const auto& member : members) {
    const std::string body = member.deflate ? Deflate(member.data) : member.data;
    const uint32_t crc =
        static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(member.data.data()),
                                    static_cast<uInt>(member.data.size())));
    const std::string sizes = LittleEndian(crc, 4) + LittleEndian(body.size(), 4) +
                              LittleEndian(member.data.size(), 4) +
                              LittleEndian(member.name.size(), 2) + LittleEndian(0, 2);
    const uint16_t method = member.deflate ? 8 : 0;
    directory += LittleEndian(0x02014b50, 4) + LittleEndian(20, 2) + LittleEndian(20, 2) +
                 LittleEndian(0, 2) + LittleEndian(method, 2) + LittleEndian(0, 4) + sizes +
                 LittleEndian(0, 2) + LittleEndian(0, 2) + LittleEndian(0, 2) + LittleEndian(0, 4) +
                 LittleEndian(out.size(), 4) + member.name;
    out += LittleEndian(0x04034b50, 4) + LittleEndian(20, 2) + LittleEndian(0, 2) +
           LittleEndian(method, 2) + LittleEndian(0, 4) + sizes + member.name + body;
  }
  const size_t directory_at = out.size();
  out += directory;
  out += LittleEndian(0x06054b50, 4) + LittleEndian(0, 2) + LittleEndian(0, 2) +
         LittleEndian(members.size(), 2) + LittleEndian(members.size(), 2) +
         LittleEndian(directory.size(), 4) + LittleEndian(directory_at, 4) +
         LittleEndian(comment.size(), 2) + comment;
  return out;
}

}  // namespace stoker::testing
