// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "serve/ticket.h"

#include <charconv>
#include <cstdint>
#include <map>
#include <vector>

#include "loader/loader_internal.h"

namespace stoker {

namespace {

constexpr std::string_view kMagic = "stoker1";

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t end; (end = text.find(separator, start)) != std::string_view::npos; start = end + 1) {
    parts.push_back(text.substr(start, end - start));
  }
  parts.push_back(text.substr(start));
  return parts;
}

// The whole of `text` as a base-10 integer, or nothing.
template <typename Int>
bool ParseInteger(std::string_view text, Int* value) {
  const char* end = text.data() + text.size();
  auto [ptr, error] = std::from_chars(text.data(), end, *value);
  return error == std::errc() && ptr == end && !text.empty();
}

std::string EncodeRounds(const std::vector<ResumeRound>& rounds) {
  std::string out;
  for (const auto& round : rounds) {
    if (!out.empty()) out += ',';
    out += std::to_string(round.world_size) + ":" + std::to_string(round.rows_per_rank);
  }
  return out;
}

arrow::Result<std::vector<ResumeRound>> DecodeRounds(std::string_view text) {
  std::vector<ResumeRound> rounds;
  if (text.empty()) return rounds;
  for (std::string_view round : Split(text, ',')) {
    const auto colon = round.find(':');
    ResumeRound parsed;
    if (colon == std::string_view::npos ||
        !ParseInteger(round.substr(0, colon), &parsed.world_size) ||
        !ParseInteger(round.substr(colon + 1), &parsed.rows_per_rank)) {
      return arrow::Status::Invalid("field 'rounds' is not W:C,W:C,...: '", text, "'");
    }
    rounds.push_back(parsed);
  }
  return rounds;
}

}  // namespace

std::string EncodeTicket(const Ticket& ticket) {
  const LoaderImpl::StreamSpec& s = ticket.stream;
  std::string out(kMagic);
  auto field = [&](const char* key, const std::string& value) {
    out += std::string(";") + key + "=" + value;
  };
  field("config", ticket.config);
  field("epoch", std::to_string(s.epoch));
  field("rank", std::to_string(s.rank));
  field("world", std::to_string(s.world_size));
  field("rounds", EncodeRounds(s.resumed));
  field("shards", std::to_string(s.shards));
  field("shard", std::to_string(s.shard));
  // Written only when it is not 1, so that a one-shard ticket reads as it always has.
  if (s.span != 1) field("span", std::to_string(s.span));
  field("chunk", std::to_string(s.chunk));
  field("first", std::to_string(s.first_batch));
  // Written only for a share of whole windows, so that other tickets read as they always have
  // (and a server from before shares of windows refuses these by name: an unknown field).
  if (s.chunk_rows != 0) {
    field("chunk_rows", std::to_string(s.chunk_rows));
    field("first_row", std::to_string(s.first_row));
  }
  return out;
}

arrow::Result<Ticket> DecodeTicket(std::string_view text) {
  if (text.empty()) return arrow::Status::Invalid("empty ticket");
  if (text.size() > kMaxTicketBytes) {
    return arrow::Status::Invalid("a ticket of ", text.size(), " bytes is above the limit of ",
                                  kMaxTicketBytes);
  }
  const auto parts = Split(text, ';');
  if (parts[0] != kMagic) return arrow::Status::Invalid("not a stoker1 ticket");
  Ticket ticket;
  LoaderImpl::StreamSpec& s = ticket.stream;
  // Each integer field and where it goes; a field left out keeps StreamSpec's default.
  const std::map<std::string_view, int64_t*> wide = {
      {"epoch", &s.epoch},           {"shards", &s.shards},
      {"shard", &s.shard},           {"span", &s.span},
      {"chunk", &s.chunk},           {"first", &s.first_batch},
      {"chunk_rows", &s.chunk_rows}, {"first_row", &s.first_row}};
  const std::map<std::string_view, int*> narrow = {{"rank", &s.rank}, {"world", &s.world_size}};
  for (size_t i = 1; i < parts.size(); ++i) {
    const auto eq = parts[i].find('=');
    if (eq == std::string_view::npos) {
      return arrow::Status::Invalid("malformed field '", parts[i], "'");
    }
    const std::string_view key = parts[i].substr(0, eq);
    const std::string_view value = parts[i].substr(eq + 1);
    bool parsed = true;
    if (key == "config") {
      ticket.config = std::string(value);
    } else if (key == "rounds") {
      ARROW_ASSIGN_OR_RAISE(s.resumed, DecodeRounds(value));
    } else if (auto it = wide.find(key); it != wide.end()) {
      parsed = ParseInteger(value, it->second);
    } else if (auto it = narrow.find(key); it != narrow.end()) {
      parsed = ParseInteger(value, it->second);
    } else {
      return arrow::Status::Invalid("unknown field '", key, "'");
    }
    if (!parsed) {
      return arrow::Status::Invalid("field '", key, "' is not an integer: '", value, "'");
    }
  }
  return ticket;
}

}  // namespace stoker
