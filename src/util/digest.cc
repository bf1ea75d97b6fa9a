// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "util/digest.h"

#include <cstdio>
#include <cstring>

namespace stoker {

void Digest::Add(uint64_t value) {
  a_ = Mix64(a_ ^ value) + 0x9e3779b97f4a7c15ULL;
  b_ = Mix64(b_ + value * 0xd6e8feb86659fd93ULL) ^ a_;
}

void Digest::Add(std::string_view value) {
  Add(static_cast<uint64_t>(value.size()));
  for (size_t i = 0; i < value.size(); i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, value.data() + i, value.size() - i < 8 ? value.size() - i : 8);
    Add(word);
  }
}

std::string Digest::Hex() const {
  char out[33];
  std::snprintf(out, sizeof(out), "%016llx%016llx", static_cast<unsigned long long>(a_),
                static_cast<unsigned long long>(b_));
  return out;
}

bool Digest::FromHex(std::string_view hex, Digest* out) {
  if (hex.size() != 32) return false;
  uint64_t words[2] = {0, 0};
  for (size_t i = 0; i < 32; ++i) {
    const char c = hex[i];
    int v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else {
      return false;
    }
    words[i / 16] = (words[i / 16] << 4) | static_cast<uint64_t>(v);
  }
  out->a_ = words[0];
  out->b_ = words[1];
  return true;
}

}  // namespace stoker
