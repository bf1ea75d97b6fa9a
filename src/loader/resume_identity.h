// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The resume identity: the values of a loader's identity (StreamConfigJson,
// stoker/stream_identity.h) a saved state records and checks, and the chunk a local loader's
// identity names. Read by the binding (stoker._core.RESUME_IDENTITY, DEFAULT_CHUNK_BATCHES).
#pragma once

#include <array>
#include <cstdint>

namespace stoker {

/// Batches per chunk when several servers share a plan: ServeOptions::chunk_batches' default
/// (stoker/flight_service.h; a serve test checks they agree), and the "chunk" of a local
/// loader's identity (a state saved locally resumes from servers).
inline constexpr int64_t kDefaultChunkBatches = 16;

/// One field of the resume identity: a value of StreamConfigJson that a saved state records.
struct IdentityField {
  /// The state's key, and the key of StreamConfigJson it is taken from (the same but for
  /// "columns_digest", a digest of "columns").
  const char* name;
  const char* config_key;
  /// A state saved with another value resumes other rows: loading it is an error (or, with
  /// strict=False, a warning) that names `what`. Unchecked fields describe the dataset in
  /// that error.
  bool checked;
  const char* what;
  /// The value, as JSON, that a state written before the field existed meant; nullptr: every
  /// state has it.
  const char* absent;
};

/// The resume identity, in the order a state lists its fields (docs/state.md): the one list
/// Python's state_dict, load_state_dict and `stoker state` read (stoker._core.RESUME_IDENTITY).
inline constexpr std::array<IdentityField, 14> kResumeIdentity = {{
    {"dataset_fingerprint", "dataset_fingerprint", true,
     "the dataset (files added, removed or changed)", nullptr},
    {"files", "files", false, "", nullptr},
    {"rows", "rows", false, "", nullptr},
    {"seed", "seed", true, "seed", nullptr},
    {"shuffle", "shuffle", true, "shuffle", nullptr},
    {"shuffle_window", "shuffle_window", true, "shuffle_window", nullptr},
    {"plan_version", "plan_version", true, "plan_version", "1"},
    {"batch_size", "batch_size", true, "batch_size", nullptr},
    {"drop_last", "drop_last", true, "drop_last", nullptr},
    {"mode", "mode", true, "mode", "\"train\""},
    {"pad_to_equal_steps", "pad_to_equal_steps", true, "pad_to_equal_steps", "false"},
    {"columns_digest", "columns", true, "the column set", nullptr},
    {"filter_digest", "filter_digest", true, "the filter", nullptr},
    {"codecs_digest", "codecs_digest", true, "the codecs", "\"\""},
}};

}  // namespace stoker
