// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// A loader's identity: what its batches depend on besides rank, world size, epoch and resume
// rounds. Resume states, tickets and a server's descriptor carry it.
// Implemented in src/loader/stream_identity.cc.
#pragma once

#include <cstdint>
#include <string>

#include "stoker/loader.h"

namespace stoker {

/// Digest of what a stream's batches depend on besides rank, world size, epoch and resume
/// rounds: the dataset fingerprint and the options that shape the plan and the columns.
/// A ticket carries it; a server refuses tickets made for another configuration.
std::string StreamConfigDigest(const Loader& loader);

/// What a server over `loader` advertises (JSON, docs/serve.md): the config digest, the
/// dataset's identity, the options that shape its batches, and `chunk_batches` as "chunk".
/// Clients and local loaders alike take their resume identity from it.
std::string StreamConfigJson(const Loader& loader, int64_t chunk_batches);

}  // namespace stoker
