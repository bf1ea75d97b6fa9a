"""The disk cache never changes the output: the same batches with no cache, a cold, a warm
and a partly warm cache, whatever the threads; keys never go stale; damaged entries are
rebuilt; faults turn caching off without losing anything; processes share a directory."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path

import pytest
import stoker
from conftest import assert_same_batches
from stoker.cli import main as cli

COLUMNS = ["row_id", "label", "I1", "C1"]
KW = {"columns": COLUMNS, "batch_size": 700, "seed": 13, "shuffle_window": 4000}


def run(source, **kwargs) -> tuple[list[dict], dict]:
    loader = stoker.Loader(source, **{**KW, **kwargs})
    batches = list(loader)
    return batches, loader.stats()


def entries(cache: Path) -> list[Path]:
    return sorted(cache.glob("??/??/*.stkc"))


def row_groups(source: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_row_groups for f in source.glob("*.parquet"))


def test_cold_warm_partial_and_no_cache_give_the_same_batches(criteo: Path,
                                                              tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    reference, _ = run(criteo, num_threads=1)
    cold, stats = run(criteo, cache_dir=cache, num_threads=4)
    assert_same_batches(reference, cold)
    groups = row_groups(criteo)
    assert (stats["cache_hits"], stats["cache_misses"]) == (0, groups)
    assert len(entries(cache)) == groups and stats["cache_bytes_written"] > 0

    warm, stats = run(criteo, cache_dir=cache, num_threads=2)
    assert_same_batches(reference, warm)
    assert (stats["cache_hits"], stats["cache_misses"]) == (groups, 0)
    assert stats["units_read"] == 0 and stats["bytes_read"] == 0  # nothing from the source
    assert stats["cache_bytes_read"] > 0

    for path in entries(cache)[::2]:
        path.unlink()
    partial, stats = run(criteo, cache_dir=cache, num_threads=3)
    assert_same_batches(reference, partial)
    assert stats["cache_hits"] == groups // 2 and stats["cache_misses"] == groups - groups // 2


def test_cache_with_transforms_filter_and_arrow_output(criteo: Path, tmp_path: Path) -> None:
    import pyarrow.compute as pc

    kw = {"transforms": [{"op": "log1p", "column": "I1"},
                         {"op": "hash", "column": "C1", "num_buckets": 50}],
          "filter": pc.field("label") > 0.5, "output": "arrow"}
    reference, _ = run(criteo, **kw)
    run(criteo, cache_dir=tmp_path, **kw)
    warm, stats = run(criteo, cache_dir=tmp_path, **kw)
    assert stats["cache_misses"] == 0 and stats["cache_hits"] > 0
    assert len(warm) == len(reference)
    assert all(a.equals(b) for a, b in zip(reference, warm))


def test_lru_keeps_the_cache_under_its_limit(criteo: Path, tmp_path: Path) -> None:
    run(criteo, cache_dir=tmp_path / "full")
    full = sum(p.stat().st_size for p in entries(tmp_path / "full"))
    limit = full // 3
    reference, _ = run(criteo)
    for _ in range(2):
        got, stats = run(criteo, cache_dir=tmp_path / "lru", cache_limit_bytes=limit)
        assert_same_batches(reference, got)
        assert sum(p.stat().st_size for p in entries(tmp_path / "lru")) <= limit
    assert stats["cache_evictions"] > 0


def test_fill_stops_at_the_limit_and_keeps_what_it_has(criteo: Path, tmp_path: Path) -> None:
    run(criteo, cache_dir=tmp_path / "full")
    full = sum(p.stat().st_size for p in entries(tmp_path / "full"))
    limit = full // 3
    reference, _ = run(criteo)
    got, _ = run(criteo, cache_dir=tmp_path / "fill", cache_limit_bytes=limit,
                 cache_policy="fill")
    kept = entries(tmp_path / "fill")
    assert 0 < sum(p.stat().st_size for p in kept) <= limit
    got, stats = run(criteo, cache_dir=tmp_path / "fill", cache_limit_bytes=limit,
                     cache_policy="fill")
    assert_same_batches(reference, got)
    assert stats["cache_evictions"] == 0 and stats["cache_hits"] == len(kept)
    assert entries(tmp_path / "fill") == kept  # nothing replaced


def test_stale_keys_miss(criteo: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(criteo, data)
    cache = tmp_path / "cache"
    run(data, cache_dir=cache)
    groups = row_groups(data)

    # A rewritten file (same bytes, new modification time) misses; the others hit.
    first = min(data.glob("*.parquet"))
    os.utime(first, ns=(first.stat().st_atime_ns, first.stat().st_mtime_ns + 10**9))
    _, stats = run(data, cache_dir=cache)
    import pyarrow.parquet as pq

    in_first = pq.ParquetFile(first).metadata.num_row_groups
    assert stats["cache_misses"] == in_first and stats["cache_hits"] == groups - in_first

    # Another transform spec, another column set: every unit misses.
    _, stats = run(data, cache_dir=cache,
                   transforms=[{"op": "clip", "column": "I1", "max": 10}])
    assert stats["cache_hits"] == 0
    _, stats = run(data, cache_dir=cache, columns=["row_id", "label"])
    assert stats["cache_hits"] == 0


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_damaged_entries_are_counted_rebuilt_and_never_delivered(criteo: Path, tmp_path: Path,
                                                                 damage: str) -> None:
    reference, _ = run(criteo)
    run(criteo, cache_dir=tmp_path)
    victim = entries(tmp_path)[3]
    data = bytearray(victim.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) // 3]
    else:
        data = bytearray(b"half-written by a process that died" * 10)
    victim.write_bytes(bytes(data))

    got, stats = run(criteo, cache_dir=tmp_path)
    assert_same_batches(reference, got)
    assert stats["cache_corrupt"] == 1 and stats["cache_misses"] == 1
    _, stats = run(criteo, cache_dir=tmp_path)  # rebuilt: all hits now
    assert stats["cache_corrupt"] == 0 and stats["cache_misses"] == 0


def test_abandoned_temporary_files_are_cleaned(criteo: Path, tmp_path: Path) -> None:
    (tmp_path / "tmp").mkdir()
    old = tmp_path / "tmp" / "deadbeef.123-0"
    old.write_bytes(b"partial")
    os.utime(old, (0, 0))  # long ago: its writer is gone
    fresh = tmp_path / "tmp" / "cafe.456-0"
    fresh.write_bytes(b"another process is writing this")
    got, _ = run(criteo, cache_dir=tmp_path)
    assert not old.exists() and fresh.exists()
    assert_same_batches(run(criteo)[0], got)


def _share(args: tuple[str, str]) -> tuple[list[int], str]:
    source, cache = args
    loader = stoker.Loader(source, cache_dir=cache, **KW)
    ids = [int(i) for b in loader for i in b["row_id"]]
    return ids, loader.stats()["delivered_digest"]


def test_two_processes_share_one_cache_directory(criteo: Path, tmp_path: Path) -> None:
    reference = stoker.Loader(criteo, **KW)
    expected = [int(i) for b in reference for i in b["row_id"]]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        for _ in range(2):  # cold together, then warm together
            results = pool.map(_share, [(str(criteo), str(tmp_path))] * 2)
            for ids, digest in results:
                assert ids == expected
                assert digest == reference.stats()["delivered_digest"]
    assert len(entries(tmp_path)) == row_groups(criteo)
    assert not list((tmp_path / "tmp").iterdir())


def _child(script: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, timeout=120, check=False, **kwargs)


def test_full_disk_turns_writes_off_with_one_warning(criteo: Path, tmp_path: Path) -> None:
    # RLIMIT_FSIZE makes every write past 4 KiB fail (EFBIG), as a full disk would.
    result = _child(f"""
        import resource, signal, warnings, numpy as np, stoker
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        kw = dict(columns={COLUMNS!r}, batch_size=700, seed=13, shuffle_window=4000)
        expected = [b["row_id"] for b in stoker.Loader({str(criteo)!r}, **kw)]
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loader = stoker.Loader({str(criteo)!r}, cache_dir={str(tmp_path)!r}, **kw)
            got = [b["row_id"] for b in loader]
        assert len(got) == len(expected) and all(np.array_equal(a, b)
                                                 for a, b in zip(got, expected))
        messages = [str(w.message) for w in caught if w.category is RuntimeWarning]
        assert len(messages) == 1, messages
        print(messages[0])
    """)
    assert result.returncode == 0, result.stderr
    assert "caching is off for writes" in result.stdout


def test_unwritable_or_vanished_cache_directory_does_not_stop_loading(criteo: Path,
                                                                      tmp_path: Path) -> None:
    reference, _ = run(criteo)
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("not a directory")
    with pytest.warns(RuntimeWarning, match="caching is off for writes"):
        got, _ = run(criteo, cache_dir=not_a_dir)
    assert_same_batches(reference, got)

    vanishing = tmp_path / "vanishing"
    loader = stoker.Loader(criteo, cache_dir=vanishing, **KW)
    shutil.rmtree(vanishing)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = list(loader)
    assert_same_batches(reference, got)
    assert sum("caching is off for writes" in str(w.message) for w in caught) == 1


def test_permission_denied_as_an_ordinary_user(criteo: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to drop to an unprivileged user")
    shared = Path(tempfile.mkdtemp(prefix="stoker-perm-"))
    try:
        shared.chmod(0o755)
        data = shared / "data"
        shutil.copytree(criteo, data)
        cache = shared / "cache"
        cache.mkdir(mode=0o755)  # owned by root: not writable by nobody
        for path in [data, *data.iterdir()]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        result = _child(f"""
            import os, warnings, stoker
            os.setgid(65534); os.setuid(65534)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                loader = stoker.Loader({str(data)!r}, cache_dir={str(cache)!r},
                                       columns=["row_id"], batch_size=1000)
                rows = sum(len(b["row_id"]) for b in loader)
            print(rows, sum("caching is off" in str(w.message) for w in caught))
        """)
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == ["20000", "1"]
    finally:
        shutil.rmtree(shared)


def test_cache_cli_info_and_clear(criteo: Path, tmp_path: Path, capsys) -> None:
    run(criteo, cache_dir=tmp_path)
    assert cli(["cache", "info", str(tmp_path), "--json"]) == 0
    import json

    info = json.loads(capsys.readouterr().out)
    assert info["entries"] == row_groups(criteo)
    assert info["bytes"] == sum(p.stat().st_size for p in entries(tmp_path))
    assert cli(["cache", "clear", str(tmp_path)]) == 0
    assert "removed" in capsys.readouterr().out
    assert entries(tmp_path) == []
    assert cli(["cache", "info", str(tmp_path / "nope")]) == 1


def test_bad_cache_options(criteo: Path) -> None:
    with pytest.raises(ValueError, match="cache_policy"):
        stoker.Loader(criteo, batch_size=10, cache_dir="/tmp/x", cache_policy="mru")
    with pytest.raises(ValueError, match="cache_limit_bytes"):
        stoker.Loader(criteo, batch_size=10, cache_dir="/tmp/x", cache_limit_bytes=-1)
