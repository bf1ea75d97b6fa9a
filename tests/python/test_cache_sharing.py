"""Two jobs, one cache directory: processes sharing cache_dir at once (both filling, one
filling while the other reads, under cache_limit eviction) deliver exactly the batches of a
run without a cache, never see a damaged entry, keep the directory under its limit and count
each eviction once. Real subprocesses (cache_job.py), started together."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cache_job import run as run_here
from stoker.cli import gen as _gen

HERE = Path(__file__).resolve().parent
OPTIONS = {"columns": ["row_id", "label", "I1", "C1", "C2"], "batch_size": 500,
           "shuffle_window": 3000, "num_threads": 3, "epochs": 4}


@pytest.fixture(scope="module")
def criteo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Many small row groups (80 of 500 rows), so the jobs meet in the cache often."""
    out = tmp_path_factory.mktemp("sharing")
    _gen.generate(out, _gen.GenOptions(preset="criteo", rows=40_000, files=4,
                                       row_group_size=500), progress=False)
    return out


def start(options: dict, out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(HERE / "cache_job.py"), json.dumps(options),
                             str(out)], cwd=HERE, stderr=subprocess.PIPE, text=True)


def run_together(jobs: list[dict], tmp_path: Path) -> list[dict]:
    procs = [start(job, tmp_path / f"job{i}.json") for i, job in enumerate(jobs)]
    for proc in procs:
        _, stderr = proc.communicate(timeout=240)
        assert proc.returncode == 0, stderr
    return [json.loads((tmp_path / f"job{i}.json").read_text()) for i in range(len(jobs))]


def expected(source: Path, seed: int) -> list[list[str]]:
    """The batch hashes of the same job without a cache."""
    return run_here({**OPTIONS, "source": str(source), "seed": seed})["hashes"]


def cache_bytes(cache: Path) -> tuple[int, int]:
    files = list(cache.glob("??/??/*.stkc"))
    return len(files), sum(f.stat().st_size for f in files)


def check(results: list[dict], seeds: list[int], source: Path, cache: Path) -> None:
    for result, seed in zip(results, seeds):
        assert result["hashes"] == expected(source, seed)
        assert result["stats"]["cache_corrupt"] == 0
    assert not list((cache / "tmp").iterdir())  # no temporary file left behind


@pytest.mark.parametrize("seeds", [[5, 5], [5, 6]], ids=["same-order", "other-order"])
def test_two_jobs_filling_one_cache_at_once(criteo: Path, tmp_path: Path, seeds: list) -> None:
    cache = tmp_path / "cache"
    jobs = [{**OPTIONS, "source": str(criteo), "cache_dir": str(cache), "seed": s} for s in seeds]
    results = run_together(jobs, tmp_path)
    check(results, seeds, criteo, cache)
    # Every row group cached once, whoever wrote it; later epochs were all hits.
    entries, _ = cache_bytes(cache)
    lookups = results[0]["stats"]["cache_hits"] + results[0]["stats"]["cache_misses"]
    assert entries == lookups // OPTIONS["epochs"]


def test_one_job_fills_while_the_other_reads(criteo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    # Warm the reader's keys first; it then reads while the filler writes other keys.
    run_here({**OPTIONS, "source": str(criteo), "cache_dir": str(cache), "seed": 1,
              "epochs": 1})
    reader = {**OPTIONS, "source": str(criteo), "cache_dir": str(cache), "seed": 2}
    # The filler reads other columns: all misses, all writes, into the same directory.
    filler = {**OPTIONS, "source": str(criteo), "cache_dir": str(cache), "seed": 3,
              "columns": ["row_id", "I2", "I3"]}
    results = run_together([reader, filler], tmp_path)
    assert results[0]["hashes"] == expected(criteo, 2)
    assert results[0]["stats"]["cache_misses"] == 0
    filler_expected = run_here({**filler, "cache_dir": None})["hashes"]
    assert results[1]["hashes"] == filler_expected
    for result in results:
        assert result["stats"]["cache_corrupt"] == 0


def test_two_jobs_under_eviction(criteo: Path, tmp_path: Path) -> None:
    full = tmp_path / "full"
    run_here({**OPTIONS, "source": str(criteo), "cache_dir": str(full), "seed": 1, "epochs": 1})
    _, full_bytes = cache_bytes(full)
    limit = full_bytes * 3 // 10
    cache = tmp_path / "cache"
    seeds = [7, 8]
    jobs = [{**OPTIONS, "source": str(criteo), "cache_dir": str(cache), "seed": s,
             "cache_limit_bytes": limit} for s in seeds]
    results = run_together(jobs, tmp_path)
    check(results, seeds, criteo, cache)
    entries, used = cache_bytes(cache)
    assert used <= limit, f"{used} bytes in the cache, over its limit of {limit}"
    # Each eviction removed an entry that one of the jobs wrote (after a miss): counted once,
    # evictions cannot outnumber the misses less the entries left.
    assert all(r["stats"]["cache_bytes_written"] > 0 for r in results)
    evictions = sum(r["stats"]["cache_evictions"] for r in results)
    writes = sum(r["stats"]["cache_misses"] for r in results)
    assert evictions > 0
    assert evictions <= writes - entries
