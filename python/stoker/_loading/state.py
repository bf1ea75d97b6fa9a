"""The resume state: what a checkpoint holds, and how a saved state is checked against the
loader that loads it. See docs/determinism.md."""

from __future__ import annotations

import hashlib
import json
import warnings
from typing import Any

from stoker import _core

STATE_VERSION = 1


def columns_digest(names: list[str]) -> str:
    return hashlib.sha256("\x00".join(names).encode()).hexdigest()[:32]


# The resume identity, as the engine defines it (include/stoker/stream_identity.h,
# kResumeIdentity): (state key, config key, checked, what a mismatch names, the JSON value a
# state saved before the field existed meant, or None).
_IDENTITY = _core.RESUME_IDENTITY


def identity(config: dict[str, Any]) -> dict[str, Any]:
    """What a saved state must match, from a loader's configuration: the JSON a server
    advertises, which a local loader reports too (docs/serve.md)."""
    return {name: columns_digest(config[key]) if name == "columns_digest" else config[key]
            for name, key, *_ in _IDENTITY}


def merge_round(rounds: list[list[int]], world_size: int, rows: int) -> list[list[int]]:
    """Appends a stretch of `rows` per rank at `world_size`. Consecutive stretches at one
    world size add up (the plan treats (N, a) then (N, b) as (N, a + b))."""
    rounds = [list(r) for r in rounds]
    if rows == 0:
        return rounds
    if rounds and rounds[-1][0] == world_size:
        rounds[-1][1] += rows
    else:
        rounds.append([world_size, rows])
    return rounds


def position(progress: Any, next_epoch: int,
             pending_rounds: list[list[int]], world_size: int) -> tuple[int, list[list[int]]]:
    """(epoch, rounds) a checkpoint taken now must record: the epoch in progress with what
    this run of it consumed added, or, between epochs, the next epoch and its pending rounds."""
    if progress is not None and not progress.finished:
        return progress.epoch, merge_round(progress.rounds, world_size, progress.rows)
    return next_epoch, [list(r) for r in pending_rounds]


def past_epoch_end(epoch: int, rounds: list[list[int]], identity: dict[str, Any],
                   world_size: int) -> tuple[int, list[list[int]]]:
    """(epoch, rounds), or the next epoch's start when `rounds` leave this rank no batch of
    `epoch`: a state saved at an epoch's last step (before the next() that would have said
    so) resumes at the next epoch, not at an empty rest of this one. Only for mode="train",
    whose shares follow from the row count; evaluation shares are left as they are."""
    if identity.get("mode", "train") != "train" or not rounds or "rows" not in identity:
        return epoch, rounds
    left = rows_left(identity["rows"], rounds, world_size)
    if batches_of(left, identity["batch_size"], identity["drop_last"]) == 0:
        return epoch + 1, []
    return epoch, rounds


def rows_left(total_rows: int, rounds: list[list[int]], world_size: int) -> int:
    """Rows each of `world_size` ranks has left of an epoch of `total_rows` rows after the
    stretches `rounds`: the epoch plan's elastic rule, asked of the engine (no data needed)."""
    return _core.rows_left(total_rows, [(int(n), int(r)) for n, r in rounds], world_size)


def batches_of(rows: int, batch_size: int, drop_last: bool) -> int:
    """Batches `rows` rows make: the plan's BatchesPerRank."""
    return _core.batches_per_rank(rows, batch_size, drop_last)


def options_digest(state: dict[str, Any]) -> str:
    """One digest of everything load_state_dict checks: two states with the same digest
    load into the same loaders (what `stoker state` prints to compare checkpoints)."""
    state = {**_ADDED, **state}
    text = "\x00".join(f"{key}={state.get(key)!r}" for key in _CHECKED)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def make_state(*, epoch: int, rounds: list[list[int]], rank: int, world_size: int,
               identity: dict[str, Any], delivered_digest: str) -> dict[str, Any]:
    return {
        "version": STATE_VERSION,
        "epoch": epoch,
        "rounds": rounds,
        "rank": rank,
        "world_size": world_size,
        **identity,
        "delivered_digest": delivered_digest,
    }


# Fields that must match for the rest of the epoch to be exactly the planned rows, with what
# the error calls them; and fields added after version 1 was written, with the value a state
# without them meant.
_CHECKED = {name: what for name, _, checked, what, _ in _IDENTITY if checked}
_ADDED = {name: json.loads(absent) for name, *_, absent in _IDENTITY if absent is not None}


def check_state(state: Any, identity: dict[str, Any], *, strict: bool) -> tuple[int, list]:
    """Validates a saved state against this loader's identity; returns (epoch, rounds)."""
    if not isinstance(state, dict):
        raise TypeError(f"state must be a dict from Loader.state_dict(), got {type(state)!r}")
    state = {**_ADDED, **state}
    missing = [k for k in ("version", "epoch", "rounds", *_CHECKED) if k not in state]
    if missing:
        raise ValueError(f"state is missing {', '.join(missing)}: not a Loader.state_dict()")
    if state["version"] != STATE_VERSION:
        raise ValueError(f"state version {state['version']} is not supported "
                         f"(this Stoker reads version {STATE_VERSION})")
    epoch, rounds = state["epoch"], state["rounds"]
    if not isinstance(epoch, int) or epoch < 0:
        raise ValueError(f"state epoch must be an int >= 0, got {epoch!r}")
    if not isinstance(rounds, list) or not all(
            isinstance(r, (list, tuple)) and len(r) == 2 and all(isinstance(v, int) for v in r)
            and r[0] >= 1 and r[1] >= 0 for r in rounds):
        raise ValueError(f"state rounds must be [[world_size >= 1, rows >= 0], ...], "
                         f"got {rounds!r}")
    differences = []
    for key, what in _CHECKED.items():
        if state[key] != identity[key]:
            detail = f"saved {state[key]!r}, now {identity[key]!r}"
            if key == "dataset_fingerprint":
                detail = (f"saved {state.get('files')} files / {state.get('rows')} rows, "
                          f"now {identity['files']} files / {identity['rows']} rows")
            elif key == "plan_version":  # what a job resumed after an upgrade meets
                detail += (f" (make the loader with plan_version={state[key]!r} to resume "
                           "this run's order)")
            differences.append(f"{what} differs: {detail}")
    if differences:
        message = ("the state does not match this loader: " + "; ".join(differences) +
                   ". Pass strict=False to load it anyway; the rest of the epoch is then "
                   "no longer guaranteed to be exactly the rows the saved run had left")
        if strict:
            raise ValueError(message)
        warnings.warn(message, stacklevel=4)  # the caller of load_state_dict
    return epoch, [list(r) for r in rounds]
