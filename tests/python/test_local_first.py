"""Local first, remote for the rest (docs/autotune.md): a RemoteLoader that reads part of
each epoch on the trainer's own engine and the rest from real `stoker serve` servers on
loopback gives a local Loader's batches, whatever the split and however often it moves,
across epochs, ranks and a resume; the split controller and the fleet's autoscale policy
move as documented (their decisions checked on given figures)."""

from __future__ import annotations

from pathlib import Path

import pytest
import stoker
from conftest import ROWS, assert_same_batches
from stoker._remote import split as _split
from stoker.ray._autoscale import AutoscaleOptions, Autoscaler
from stoker_devtools.serve import COLUMNS, OPTIONS

MOVE_EVERY_BATCH = {"window_batches": 1, "window_seconds": 0.0}


def reference(criteo: Path, **kw) -> stoker.Loader:
    return stoker.Loader(criteo, columns=COLUMNS, **OPTIONS, **kw)


def local_first(criteo: Path, locations: list[str], split: dict | None = None,
                **kw) -> stoker.RemoteLoader:
    # Chunks of one shuffle window: several per epoch of this small dataset, so every
    # source serves some of each epoch.
    return stoker.RemoteLoader(locations, local={"source": criteo, "columns": COLUMNS,
                                                 **OPTIONS},
                               split={"chunk_windows": 1, **(split or {})}, **kw)


@pytest.mark.parametrize("count", [1, 2])
@pytest.mark.parametrize("output", ["numpy", "arrow"])
def test_local_first_batches_equal_local_batches(criteo: Path, servers, count: int,
                                                 output: str) -> None:
    locations = [servers().location for _ in range(count)]
    loader = local_first(criteo, locations, output=output)
    expected = reference(criteo, output=output)
    assert len(loader) == len(expected)
    for _ in range(2):  # the second epoch from both sources too
        assert_same_batches(list(loader), list(expected))
    stats = loader.stats()
    assert stats["local_batches"] > 0 and stats["remote_batches"] > 0
    assert stats["local_batches"] + stats["remote_batches"] == stats["batches"]
    # Rows delivered (as a plain RemoteLoader counts them), bytes received from the servers.
    assert stats["rows"] == 2 * ROWS
    assert stats["bytes_received"] > 0
    for rank in range(2):
        loader = local_first(criteo, locations, rank=rank, world_size=2)
        ranked = reference(criteo, rank=rank, world_size=2)
        for _ in range(2):
            assert_same_batches(list(loader), list(ranked))


def test_a_split_moved_at_every_batch_changes_no_batch(criteo: Path, servers) -> None:
    locations = [servers().location, servers().location]
    for seed in range(3):
        loader = local_first(criteo, locations, {**MOVE_EVERY_BATCH, "random_moves": seed})
        expected = reference(criteo)
        for _epoch in range(2):
            assert_same_batches(list(loader), list(expected))
        stats = loader.stats()
        assert stats["relayouts"] >= 5, stats
        assert stats["split"]["decisions"] >= 5
        assert stats["local_batches"] > 0 and stats["remote_batches"] > 0


def test_a_resume_mid_epoch_continues_exactly(criteo: Path, servers) -> None:
    locations = [servers().location]
    moving = {**MOVE_EVERY_BATCH, "random_moves": 7}
    full = list(reference(criteo))
    loader = local_first(criteo, locations, moving)
    taken = []
    for batch in loader:
        taken.append(batch)
        if len(taken) == 11:
            break
    state = loader.state_dict()
    resumed = local_first(criteo, locations, moving)
    resumed.load_state_dict(state)
    assert_same_batches(taken + list(resumed), full)
    # A plain RemoteLoader (and a local Loader) take the same state.
    plain = stoker.RemoteLoader(locations)
    plain.load_state_dict(state)
    assert_same_batches(list(plain), full[11:])


def test_local_first_refuses_what_would_change_the_batches(criteo: Path, servers) -> None:
    location = servers().location
    with pytest.raises(ValueError, match="another configuration than the local engine"):
        stoker.RemoteLoader([location], local={"source": criteo, "columns": COLUMNS,
                                               **OPTIONS, "seed": 99})
    with pytest.raises(ValueError, match="name what they serve"):
        stoker.RemoteLoader([location], local=True)
    with pytest.raises(ValueError, match="split: unknown option 'windows'"):
        local_first(criteo, [location], {"windows": 3})
    with pytest.raises(ValueError, match="target_stall"):
        local_first(criteo, [location], {"target_stall": 2})
    with pytest.raises(ValueError, match="a loader reading local first keeps no timeline"):
        local_first(criteo, [location], trace_events=100)


# The split controller, on given windows (what each figure means: _split.Window).

def window(local_wait: float, remote_wait: float) -> _split.Window:
    return _split.Window(seconds=1.0, batches=64, local_wait=local_wait,
                         remote_wait=remote_wait)


def test_the_split_gives_the_local_engine_less_when_it_is_what_stalls() -> None:
    split = _split.SplitController(_split.SplitOptions(), local=3)
    assert split.decide(window(0.2, 0.0), servers=2) == 2
    assert split.decide(window(0.1, 0.0), servers=2) == 1  # judged: it helped; again
    assert split.recent[-1]["why"] == "local stalls"


def test_the_split_takes_more_locally_when_the_servers_stall_or_all_is_quiet() -> None:
    split = _split.SplitController(_split.SplitOptions(), local=1)
    assert split.decide(window(0.0, 0.2), servers=1) == 2
    quiet = _split.SplitController(_split.SplitOptions(), local=1)
    assert [quiet.decide(window(0.0, 0.001), servers=1) for _ in range(3)] == [1, 1, 2]
    assert quiet.recent[-1]["why"] == "quiet"
    # No server: everything is local already; nothing to move.
    alone = _split.SplitController(_split.SplitOptions(), local=1)
    assert alone.decide(window(0.5, 0.0), servers=0) == 1 and alone.decisions == 0


def test_a_split_move_that_made_it_worse_is_undone_and_held() -> None:
    split = _split.SplitController(_split.SplitOptions(), local=2)
    for _ in range(3):
        split.decide(window(0.0, 0.001), servers=1)
    assert split.local == 3  # quiet: one more local chunk
    assert split.decide(window(0.3, 0.0), servers=1) == 2  # it stalled: undone
    assert split.recent[-1]["why"] == "undo"
    for _ in range(3):  # quiet again, but the up-move is held for 4 windows
        assert split.decide(window(0.0, 0.001), servers=1) == 2


def test_a_held_move_holds_only_from_the_setting_it_failed_at() -> None:
    split = _split.SplitController(_split.SplitOptions(), local=1)
    assert split.decide(window(0.0, 0.3), servers=1) == 2  # the server stalls: more local
    assert split.decide(window(0.4, 0.0), servers=1) == 1  # worse: undone, 1 -> 2 held
    assert split.decide(window(0.0, 0.3), servers=1) == 1  # held: no 1 -> 2 again
    split.local = 0  # the setting reached some other way (a move down that held)
    assert split.decide(window(0.0, 0.3), servers=1) == 1  # 0 -> 1 is not the move held


def test_the_split_says_the_servers_are_short_once_a_move_to_them_failed() -> None:
    """A trainer stalled on its own share whose split tried the servers, stalled on them and
    moved back: the servers must take more, which only a larger fleet can answer."""
    split = _split.SplitController(_split.SplitOptions(), local=1)
    stalled_here = window(0.3, 0.0)
    assert split.decide(stalled_here, servers=1) == 0  # local stalls: all to the server
    assert not split.servers_short(stalled_here)  # the move is to be judged first
    assert split.decide(window(0.0, 0.5), servers=1) == 1  # worse on the server: undone
    assert split.recent[-1]["why"] == "undo"
    assert split.decide(stalled_here, servers=1) == 1  # the move to the server is held
    assert split.servers_short(stalled_here)
    assert not split.servers_short(window(0.005, 0.0))  # under the target: nothing asked
    assert not split.servers_short(window(0.0, 0.3))  # waited on the servers: not this


# The fleet's autoscale policy, on given reports (times in seconds from 0).

def report(stall: float, remote: float = 0.0) -> dict:
    return {"stall": stall, "remote_wait": remote, "local_wait": stall - remote}


def test_the_fleet_grows_from_none_on_stall_up_to_its_cap() -> None:
    policy = Autoscaler(AutoscaleOptions(max_servers=2, interval_s=1.0))
    policy.report("a", report(0.3), now=0.0)
    assert policy.decide(0, now=0.0) == (1, "stall 0.300 on the fleet")
    policy.report("a", report(0.2, remote=0.2), now=0.5)
    assert policy.decide(1, now=0.5) is None  # not an interval yet
    assert policy.decide(1, now=1.0) == (2, "stall 0.200 on the fleet")
    policy.report("a", report(0.2, remote=0.2), now=2.0)
    assert policy.decide(2, now=2.0) is None  # the cap
    # A trainer that waits on its own engine, with servers there, does not ask for more.
    policy.report("a", report(0.2, remote=0.0), now=3.0)
    assert policy.decide(1, now=3.0) is None


def test_a_stall_the_split_cannot_move_or_any_window_since_the_last_look_grows_it() -> None:
    policy = Autoscaler(AutoscaleOptions(max_servers=3, interval_s=3.0))
    # Waited on its own share, with its split at its limit: the fleet must grow.
    policy.report("a", {**report(0.3), "servers": 1, "servers_short": True}, now=0.0)
    grown = policy.decide(1, now=0.0)
    assert grown == (2, "stall 0.300 on its own share, the split at its limit")
    # A window that asked for a server, followed by a quiet one before the next look: the
    # look sees both (one window per interval would be chance).
    policy.report("a", {**report(0.4, remote=0.4), "servers": 2}, now=1.0)
    policy.report("a", {**report(0.001), "servers": 2}, now=2.0)
    assert policy.decide(2, now=3.0) == (3, "stall 0.400 on the fleet")
    # Windows read from fewer servers than the fleet has now (the third not joined yet when
    # they were measured) ask for none.
    policy.report("a", {**report(0.5, remote=0.5), "servers": 2}, now=4.0)
    assert policy.decide(3, now=6.0) is None
    # Without servers_short, waiting on its own share with servers there asks for none.
    policy.report("a", {**report(0.3), "servers": 3}, now=7.0)
    assert policy.decide(2, now=9.0) is None


def test_the_fleet_shrinks_when_quiet_and_holds_a_shrink_that_stalled() -> None:
    policy = Autoscaler(AutoscaleOptions(max_servers=3, interval_s=1.0, idle_intervals=1))
    size, sizes = 2, []
    # Quiet, quiet, stalled, then quiet: each stall right after a shrink takes it back and
    # holds shrinking for twice as long as the last time (2 intervals, then 4).
    for t, stall in enumerate([0.001, 0.001, 0.3, 0.001, 0.001, 0.3] + [0.001] * 4):
        policy.report("a", report(stall, remote=stall if stall > 0.1 else 0.0), now=float(t))
        decided = policy.decide(size, now=float(t))
        size = decided[0] if decided else size
        sizes.append(size)
    assert sizes == [1, 0, 1, 1, 0, 1, 1, 1, 1, 0]
    assert [entry["why"] for entry in policy.history][:3] == [
        "trainers quiet", "trainers quiet", "stall after a shrink: undone"]


def test_a_trainer_gone_quiet_counts_as_quiet_and_options_are_checked() -> None:
    policy = Autoscaler(AutoscaleOptions(max_servers=1, min_servers=0, interval_s=1.0,
                                         idle_intervals=1, report_ttl_s=5.0))
    policy.report("gone", report(0.5, remote=0.5), now=0.0)
    assert policy.decide(1, now=10.0) == (0, "no trainer reporting")
    with pytest.raises(ValueError, match="needs max_servers"):
        AutoscaleOptions.of({})
    with pytest.raises(ValueError, match="unknown option"):
        AutoscaleOptions.of({"max_servers": 2, "maximum": 3})
    with pytest.raises(ValueError, match="min_servers <= max_servers"):
        AutoscaleOptions.of({"max_servers": 1, "min_servers": 2})
