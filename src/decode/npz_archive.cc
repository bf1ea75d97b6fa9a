// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "decode/npz_archive.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <limits>

namespace stoker {

namespace {

// Signatures and fixed sizes of the zip records read (PKWARE's APPNOTE).
constexpr uint32_t kEndOfDirectory = 0x06054b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint32_t kZip64EndOfDirectory = 0x06064b50;
constexpr uint32_t kDirectoryEntry = 0x02014b50;
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr int64_t kEndOfDirectorySize = 22;
constexpr int64_t kDirectoryEntrySize = 46;
constexpr int64_t kLocalHeaderSize = 30;
constexpr uint16_t kZip64Extra = 0x0001;
constexpr uint32_t kSaturated32 = 0xFFFFFFFF;
constexpr uint16_t kStored = 0;
constexpr uint16_t kDeflated = 8;

arrow::Status Malformed(const std::string& what) {
  return arrow::Status::Invalid("not a valid .npz (zip) archive: ", what);
}

// Little-endian reads bounds-checked against the archive.
class Reader {
 public:
  Reader(const uint8_t* data, int64_t size) : data_(data), size_(size) {}
  bool Has(int64_t at, int64_t bytes) const { return at >= 0 && bytes >= 0 && at <= size_ - bytes; }
  uint64_t Read(int64_t at, int bytes) const {
    uint64_t value = 0;
    for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | data_[at + i];
    return value;
  }
  const uint8_t* At(int64_t at) const { return data_ + at; }
  int64_t size() const { return size_; }

 private:
  const uint8_t* data_;
  int64_t size_;
};

struct Member {
  uint16_t method = 0;
  uint64_t compressed = 0;
  uint64_t uncompressed = 0;
  uint64_t local_offset = 0;
};

struct Directory {
  uint64_t entries = 0;
  uint64_t offset = 0;
};

arrow::Result<Directory> FindDirectory(const Reader& zip) {
  // The end-of-directory record is the last 22 bytes plus a comment of up to 64 KiB.
  const int64_t lowest = std::max<int64_t>(0, zip.size() - kEndOfDirectorySize - 0xFFFF);
  for (int64_t at = zip.size() - kEndOfDirectorySize; at >= lowest; --at) {
    if (zip.Read(at, 4) != kEndOfDirectory) continue;
    Directory dir{zip.Read(at + 10, 2), zip.Read(at + 16, 4)};
    if (dir.offset == kSaturated32 || dir.entries == 0xFFFF) {
      const int64_t locator = at - 20;
      if (!zip.Has(locator, 20) || zip.Read(locator, 4) != kZip64Locator) {
        return Malformed("zip64 locator missing");
      }
      const uint64_t end64 = zip.Read(locator + 8, 8);
      if (end64 > static_cast<uint64_t>(zip.size()) || !zip.Has(static_cast<int64_t>(end64), 56) ||
          zip.Read(static_cast<int64_t>(end64), 4) != kZip64EndOfDirectory) {
        return Malformed("zip64 end of directory missing");
      }
      dir.entries = zip.Read(static_cast<int64_t>(end64) + 32, 8);
      dir.offset = zip.Read(static_cast<int64_t>(end64) + 48, 8);
    }
    return dir;
  }
  return Malformed("no end of central directory");
}

// The zip64 extra field replaces the 32-bit fields that hold 0xFFFFFFFF, in this order.
void ApplyZip64Extra(const Reader& zip, int64_t extra, int64_t extra_size, Member* member) {
  for (int64_t at = extra; at + 4 <= extra + extra_size;) {
    const uint64_t id = zip.Read(at, 2);
    const int64_t length = static_cast<int64_t>(zip.Read(at + 2, 2));
    const int64_t body = at + 4;
    if (body + length > extra + extra_size) return;
    if (id == kZip64Extra) {
      int64_t field = body;
      for (uint64_t* value : {&member->uncompressed, &member->compressed, &member->local_offset}) {
        if (*value != kSaturated32) continue;
        if (field + 8 > body + length) return;
        *value = zip.Read(field, 8);
        field += 8;
      }
      return;
    }
    at = body + length;
  }
}

arrow::Result<Member> FindMember(const Reader& zip, const std::string& name) {
  ARROW_ASSIGN_OR_RAISE(const Directory dir, FindDirectory(zip));
  if (dir.offset > static_cast<uint64_t>(zip.size())) return Malformed("directory offset");
  int64_t at = static_cast<int64_t>(dir.offset);
  for (uint64_t i = 0; i < dir.entries; ++i) {
    if (!zip.Has(at, kDirectoryEntrySize) || zip.Read(at, 4) != kDirectoryEntry) {
      return Malformed("directory entry " + std::to_string(i));
    }
    const int64_t name_size = static_cast<int64_t>(zip.Read(at + 28, 2));
    const int64_t extra_size = static_cast<int64_t>(zip.Read(at + 30, 2));
    const int64_t comment_size = static_cast<int64_t>(zip.Read(at + 32, 2));
    const int64_t name_at = at + kDirectoryEntrySize;
    if (!zip.Has(name_at, name_size + extra_size + comment_size)) {
      return Malformed("directory entry " + std::to_string(i));
    }
    if (std::string_view(reinterpret_cast<const char*>(zip.At(name_at)),
                         static_cast<size_t>(name_size)) == name) {
      Member member{static_cast<uint16_t>(zip.Read(at + 10, 2)), zip.Read(at + 20, 4),
                    zip.Read(at + 24, 4), zip.Read(at + 42, 4)};
      ApplyZip64Extra(zip, name_at + name_size, extra_size, &member);
      return member;
    }
    at = name_at + name_size + extra_size + comment_size;
  }
  return arrow::Status::Invalid("the .npz archive holds no '", name, "'");
}

arrow::Status Inflate(const uint8_t* in, uint64_t in_size, std::vector<uint8_t>* out) {
  z_stream stream{};
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) return arrow::Status::OutOfMemory("zlib");
  stream.next_in = const_cast<uint8_t*>(in);
  stream.avail_in = static_cast<uInt>(in_size);
  // zlib refuses a null output pointer, which an empty vector's data() may be: an empty
  // member still has a deflate stream (its final block) to consume.
  uint8_t no_output = 0;
  stream.next_out = out->empty() ? &no_output : out->data();
  stream.avail_out = static_cast<uInt>(out->size());
  const int result = inflate(&stream, Z_FINISH);
  const uint64_t produced = stream.total_out;
  inflateEnd(&stream);
  if (result != Z_STREAM_END) {
    return Malformed(result == Z_BUF_ERROR ? "the member inflates past its recorded size"
                                           : "corrupt deflate data");
  }
  if (produced != out->size()) return Malformed("the member inflates short of its recorded size");
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<std::vector<uint8_t>> ReadZipMember(const uint8_t* data, int64_t size,
                                                  const std::string& name, int64_t max_size) {
  const Reader zip(data, size);
  ARROW_ASSIGN_OR_RAISE(const Member member, FindMember(zip, name));
  if (member.local_offset > static_cast<uint64_t>(size)) return Malformed("member offset");
  const int64_t local = static_cast<int64_t>(member.local_offset);
  if (!zip.Has(local, kLocalHeaderSize) || zip.Read(local, 4) != kLocalHeader) {
    return Malformed("local header of '" + name + "'");
  }
  const int64_t start = local + kLocalHeaderSize + static_cast<int64_t>(zip.Read(local + 26, 2)) +
                        static_cast<int64_t>(zip.Read(local + 28, 2));
  if (member.compressed > static_cast<uint64_t>(size) ||
      !zip.Has(start, static_cast<int64_t>(member.compressed))) {
    return Malformed("'" + name + "' runs past the end of the archive");
  }
  if (member.uncompressed > static_cast<uint64_t>(max_size) ||
      member.uncompressed > std::numeric_limits<uInt>::max()) {
    return arrow::Status::Invalid("'", name, "' holds ", member.uncompressed,
                                  " bytes, more than the ", max_size, " the field's shape allows");
  }
  std::vector<uint8_t> out(member.uncompressed);
  if (member.method == kStored) {
    if (member.compressed != member.uncompressed) return Malformed("stored sizes differ");
    if (!out.empty()) std::memcpy(out.data(), zip.At(start), out.size());
  } else if (member.method == kDeflated) {
    if (member.compressed > std::numeric_limits<uInt>::max()) return Malformed("member size");
    ARROW_RETURN_NOT_OK(Inflate(zip.At(start), member.compressed, &out));
  } else {
    return arrow::Status::NotImplemented("zip compression method ", member.method,
                                         " (np.savez_compressed deflates)");
  }
  return out;
}

}  // namespace stoker
