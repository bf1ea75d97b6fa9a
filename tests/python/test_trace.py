"""The timeline (`trace=`): Chrome trace JSON of every unit's fetch, decode, transform and
staging and every batch's assembly and wait, per named thread, bounded by trace_events; a
RemoteLoader's receipts, conversions and waits; a `stoker serve --trace` server's work for
every stream."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import stoker
from stoker_devtools.serve import Server

KW = {"columns": ["row_id", "label", "I1", "C1"], "batch_size": 1000, "seed": 6,
      "shuffle_window": 4000, "num_threads": 2}


def spans(path: Path) -> tuple[list[dict], dict[int, str]]:
    events = json.loads(path.read_text())["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M"}
    return [e for e in events if e["ph"] == "X"], names


def test_an_epoch_timeline(criteo: Path, tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    loader = stoker.Loader(criteo, trace=trace, transforms=[{"op": "log1p", "column": "I1"}],
                           **KW)
    batches = list(loader)  # written when the epoch ends
    events, threads = spans(trace)
    by_stage: dict[str, list[dict]] = {}
    for event in events:
        by_stage.setdefault(event["name"], []).append(event)
        assert event["dur"] >= 0 and event["ts"] >= 0
        assert event["tid"] in threads
    units = loader.stats()["units_read"]
    for stage in ("fetch", "decode", "transform", "stage"):
        assert len(by_stage[stage]) == units, stage
    assert sorted(e["args"]["batch"] for e in by_stage["assemble"]) == list(range(len(batches)))
    assert {e["args"]["batch"] for e in by_stage["wait"]} <= set(range(len(batches)))
    assert any(name.startswith("stoker-worker") for name in threads.values())
    # A unit's decode starts after its fetch began.
    fetch = {(e["args"]["file"], e["args"]["row_group"]): e["ts"] for e in by_stage["fetch"]}
    for e in by_stage["decode"]:
        assert e["ts"] >= fetch[(e["args"]["file"], e["args"]["row_group"])]


def test_the_ring_keeps_the_last_spans(criteo: Path, tmp_path: Path) -> None:
    loader = stoker.Loader(criteo, trace_events=30, **KW)
    n = len(list(loader))
    loader.write_trace(tmp_path / "t.json")
    events, _ = spans(tmp_path / "t.json")
    # The ring holds events: spans and the steps of the units-in-flight counter track.
    counters = [e for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"]
                if e["ph"] == "C"]
    assert len(events) + len(counters) == 30
    assembled = [e["args"]["batch"] for e in events if e["name"] == "assemble"]
    assert assembled and max(assembled) == n - 1  # the newest spans are the ones kept


def test_no_trace_unless_asked(criteo: Path, tmp_path: Path) -> None:
    loader = stoker.Loader(criteo, **KW)
    list(loader)
    with pytest.raises(ValueError, match="keeps no trace"):
        loader.write_trace(tmp_path / "t.json")
    with pytest.raises(ValueError, match="trace_events"):
        stoker.Loader(criteo, trace_events=-1, **KW)


def by_stage(events: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for event in events:
        out.setdefault(event["name"], []).append(event)
    return out


def test_a_remote_loader_timeline(criteo: Path, tmp_path: Path) -> None:
    server = Server(criteo)
    try:
        trace = tmp_path / "remote.json"
        loader = stoker.RemoteLoader(server.location, trace=trace)
        n = len(list(loader))  # written when the epoch ends
    finally:
        server.stop()
    events, threads = spans(trace)
    stages = by_stage(events)
    assert set(stages) == {"receive", "convert", "wait"}
    for stage in ("receive", "convert", "wait"):
        assert sorted(e["args"]["batch"] for e in stages[stage]) == list(range(n)), stage
    assert {e["args"]["server"] for e in stages["receive"]} == {0}
    # A batch's wait covers its receipt and its conversion, on the consumer's row.
    wait = {e["args"]["batch"]: e for e in stages["wait"]}
    for e in stages["receive"] + stages["convert"]:
        w = wait[e["args"]["batch"]]
        assert w["tid"] == e["tid"] and w["ts"] <= e["ts"] + 1e-3
        assert e["ts"] + e["dur"] <= w["ts"] + w["dur"] + 2e-3
    assert len(threads) == 1


def test_a_remote_loader_without_trace_writes_none(criteo: Path, tmp_path: Path) -> None:
    server = Server(criteo)
    try:
        loader = stoker.RemoteLoader(server.location)
        next(iter(loader))
        with pytest.raises(ValueError, match="trace_events"):
            loader.write_trace(tmp_path / "none.json")
    finally:
        server.stop()


def test_a_server_timeline_for_each_stream(criteo: Path, tmp_path: Path) -> None:
    trace = tmp_path / "server.json"
    server = Server(criteo, "--trace", str(trace))
    try:
        loader = stoker.RemoteLoader(server.location)
        n = len(list(loader))
        m = len(list(loader))  # a second stream: epoch 1
    finally:
        server.stop()  # SIGTERM: the server writes its timeline as it exits
    events, threads = spans(trace)
    stages = by_stage(events)
    assert n == m
    # Each stream's batches assembled once, each handed to Flight (the engine's "wait").
    assert sorted(e["args"]["batch"] for e in stages["assemble"]) == sorted(
        list(range(n)) * 2)
    assert sorted(e["args"]["batch"] for e in stages["wait"]) == sorted(list(range(n)) * 2)
    for stage in ("fetch", "decode", "stage"):
        assert stages[stage], stage
    assert any(name.startswith("stoker-worker") for name in threads.values())
