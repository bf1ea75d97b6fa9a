// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>

#include <string>
#include <string_view>

#include "loader/loader_internal.h"

namespace stoker {

/// What a Flight ticket names (docs/serve.md): the configuration it was made for and a share
/// of one rank's epoch. Tickets never name a path.
struct Ticket {
  /// StreamConfigDigest() of the loader the stream must come from.
  std::string config;
  LoaderImpl::StreamSpec stream;
};

/// The ticket as UTF-8 text, every field written:
/// "stoker1;config=<hex>;epoch=E;rank=R;world=W;rounds=W1:C1,W2:C2;shards=K;shard=k;chunk=C;
/// first=B" (rounds empty for a fresh epoch), then ";chunk_rows=M;first_row=R" for a share of
/// whole windows (StreamSpec::chunk_rows > 0).
std::string EncodeTicket(const Ticket& ticket);

/// Tickets longer than this are refused before they are parsed (a real one is under 200 bytes
/// plus 24 per resume round).
inline constexpr size_t kMaxTicketBytes = 64 * 1024;

/// Reads a ticket written by EncodeTicket or by hand; a missing field takes StreamSpec's
/// default. Anything else (not "stoker1", an unknown field, a value that is not an integer)
/// is an error naming what is wrong.
arrow::Result<Ticket> DecodeTicket(std::string_view text);

}  // namespace stoker
