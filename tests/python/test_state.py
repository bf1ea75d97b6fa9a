"""A state users can read and steer: skip(n) equals reading and discarding n batches (from the
start, mid-epoch, across epoch ends, after a resume), a rewind to an earlier checkpoint plus a
skip steps past batches, and `stoker state FILE` reads JSON, pickle and torch.save files
safely."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import stoker
from conftest import assert_same_batches
from stoker.cli import state as _state_cli

OPTIONS = {"columns": ["row_id", "I1"], "batch_size": 700, "seed": 11, "shuffle_window": 4500}
EPOCH_BATCHES = 29  # 20,000 rows in batches of 700


def read_then_discard(loader: stoker.Loader, n: int, take: int) -> list[dict]:
    """The reference: read n batches (across epochs as iteration does), drop them, keep the
    next `take`."""
    out: list[dict] = []
    while len(out) < n + take:
        out.extend(loader)
    return out[n:n + take]


def read(loader: stoker.Loader, take: int) -> list[dict]:
    out: list[dict] = []
    while len(out) < take:
        out.extend(loader)
    return out[:take]


@pytest.mark.parametrize("n", [0, 1, 13, EPOCH_BATCHES - 1, EPOCH_BATCHES, EPOCH_BATCHES + 5,
                               3 * EPOCH_BATCHES + 2])
def test_skip_equals_reading_and_discarding(criteo: Path, n: int) -> None:
    expected = read_then_discard(stoker.Loader(criteo, **OPTIONS), n, take=8)
    skipper = stoker.Loader(criteo, num_threads=2, **OPTIONS)
    skipper.skip(n)
    got = read(skipper, 8)
    assert_same_batches(got, expected)


def test_skip_reads_nothing_and_lands_where_state_dict_says(criteo: Path) -> None:
    loader = stoker.Loader(criteo, **OPTIONS)
    loader.skip(2 * EPOCH_BATCHES + 3)
    state = loader.state_dict()
    assert (state["epoch"], state["rounds"]) == (2, [[1, 3 * 700]])
    assert loader.stats()["units_read"] == 0 and loader.stats()["rows"] == 0
    assert len(iter(loader)) == EPOCH_BATCHES - 3


def test_skip_mid_epoch_closes_the_open_iterator_and_continues_after_the_skip(
        criteo: Path) -> None:
    expected = read(stoker.Loader(criteo, **OPTIONS), 2 * EPOCH_BATCHES)
    loader = stoker.Loader(criteo, num_threads=3, **OPTIONS)
    it = iter(loader)
    head = [next(it) for _ in range(5)]
    loader.skip(10)  # batches 5..14 skipped
    assert next(it, None) is None  # the open iterator was closed
    rest = read(loader, 2 * EPOCH_BATCHES - 15)
    assert_same_batches(head + rest, expected[:5] + expected[15:])


def test_skip_after_an_elastic_resume(criteo: Path) -> None:
    """A state from 2 ranks loaded by 1 rank, then a skip: the same as reading the resumed
    epoch and discarding."""
    two = stoker.Loader(criteo, rank=0, world_size=2, **OPTIONS)
    it = iter(two)
    for _ in range(4):
        next(it)
    state = two.state_dict()
    reference = stoker.Loader(criteo, **OPTIONS)
    reference.load_state_dict(state)
    skipper = stoker.Loader(criteo, **OPTIONS)
    skipper.load_state_dict(state)
    skipper.skip(6)
    assert_same_batches(read(skipper, 30), read_then_discard(reference, 6, take=30))


def test_rewind_to_an_earlier_checkpoint_and_step_past_a_spike(criteo: Path) -> None:
    """Save at step k, run on, load the step-k state, skip m: exactly batches k+m... follow."""
    k, m = 7, 4
    uninterrupted = read(stoker.Loader(criteo, **OPTIONS), 2 * EPOCH_BATCHES)
    loader = stoker.Loader(criteo, **OPTIONS)
    it = iter(loader)
    for _ in range(k):
        next(it)
    saved = json.loads(json.dumps(loader.state_dict()))
    for _ in range(12):  # the run goes on into the loss spike
        next(it)
    loader.load_state_dict(saved)  # back to step k on the same loader
    loader.skip(m)
    assert_same_batches(read(loader, 20), uninterrupted[k + m:k + m + 20])


def test_skip_refuses_bad_arguments(criteo: Path) -> None:
    loader = stoker.Loader(criteo, **OPTIONS)
    with pytest.raises(ValueError, match="load an earlier state_dict"):
        loader.skip(-1)
    with pytest.raises(TypeError, match="n_batches must be an int"):
        loader.skip(1.5)  # type: ignore[arg-type]


@pytest.mark.parametrize("pad", [False, True])
@pytest.mark.parametrize("n", [0, 5, 9, 10, 23])
def test_skip_in_evaluation_equals_reading_and_discarding(criteo: Path, pad: bool,
                                                          n: int) -> None:
    """mode="eval": each of 3 ranks has its own share (20,000 rows: 6,667, 6,667, 6,666; 10
    batches of 700 each, the last short unless padded), so skip counts that rank's batches,
    across the epoch's end too."""
    options = {**OPTIONS, "mode": "eval", "pad_to_equal_steps": pad, "world_size": 3}
    for rank in range(3):
        reference = stoker.Loader(criteo, rank=rank, num_threads=2, **options)
        want = read_then_discard(reference, n, 4)
        skipper = stoker.Loader(criteo, rank=rank, num_threads=2, **options)
        skipper.skip(n)
        assert_same_batches(read(skipper, 4), want)
        # Where the skip lands is where reading would have left the state.
        walked = stoker.Loader(criteo, rank=rank, **options)
        if 0 < n < len(walked):
            landed = stoker.Loader(criteo, rank=rank, **options)
            landed.skip(n)
            epoch = iter(walked)
            for _ in range(n):
                next(epoch)
            assert landed.state_dict()["rounds"] == walked.state_dict()["rounds"]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stoker", "state", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def saved_state(criteo: Path) -> dict:
    loader = stoker.Loader(criteo, rank=1, world_size=2, **OPTIONS)
    it = iter(loader)
    for _ in range(5):
        next(it)
    return loader.state_dict()


def test_stoker_state_reads_json_and_pickle(criteo: Path, tmp_path: Path) -> None:
    state = saved_state(criteo)
    (tmp_path / "s.json").write_text(json.dumps(state))
    (tmp_path / "s.pkl").write_bytes(pickle.dumps({"model": {"w": [1.0]}, "data": state}))
    for name in ("s.json", "s.pkl"):
        result = run_cli(str(tmp_path / name))
        assert result.returncode == 0, result.stderr
        assert "epoch            0" in result.stdout
        assert "consumed         5 batches of 700: 3500 rows per rank, 7000 rows of 20000" \
            in result.stdout
        assert "left             10 batches, 6500 rows per rank at world size 2" in result.stdout
        assert "rank 1 of world size 2" in result.stdout
    info = json.loads(run_cli(str(tmp_path / "s.json"), "--json").stdout)
    assert info["options_digest"] == _state_cli.describe(state)["options_digest"]
    assert info["batches_consumed"] == 5 and info["rows_left_per_rank"] == 6500


def test_stoker_state_reads_torch_save_files_with_weights_only(criteo: Path,
                                                                tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    state = saved_state(criteo)
    torch.save({"model": {"w": torch.zeros(3)}, "data": state}, tmp_path / "ckpt.pt")
    result = run_cli(str(tmp_path / "ckpt.pt"))
    assert result.returncode == 0, result.stderr
    assert "consumed         5 batches" in result.stdout


# {"data": print("the pickle ran code")} as protocol 2 writes it, by hand: pickling a
# __reduce__ that returns `print` names whatever `builtins.print` is in this process, and a
# library loaded before (Ray's tqdm_ray) may have replaced it.
EVIL_PICKLE = (b"\x80\x02}q\x00X\x04\x00\x00\x00dataq\x01cbuiltins\nprint\nq\x02X\x13\x00\x00"
               b"\x00the pickle ran codeq\x03\x85q\x04Rq\x05s.")


def test_stoker_state_refuses_code_and_unknown_files(criteo: Path, tmp_path: Path) -> None:
    (tmp_path / "evil.pkl").write_bytes(EVIL_PICKLE)
    result = run_cli(str(tmp_path / "evil.pkl"))
    assert result.returncode == 1
    assert "the pickle names builtins.print" in result.stderr
    assert "ran code" not in result.stdout
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01garbage")
    result = run_cli(str(tmp_path / "blob.bin"))
    assert result.returncode == 1 and "neither JSON, a pickle nor a torch.save" in result.stderr
    (tmp_path / "other.json").write_text(json.dumps({"model": 1}))
    result = run_cli(str(tmp_path / "other.json"))
    assert result.returncode == 1 and "holds no Loader.state_dict()" in result.stderr
    result = run_cli(str(tmp_path / "missing.json"))
    assert result.returncode == 1 and "missing.json" in result.stderr


def test_the_elastic_rule_has_one_source() -> None:
    """The resume state's counts come from the engine's plan: rows left per rank after rounds
    at other world sizes (4 ranks took 1,000 rows each of 10,003, then 3 ranks 500 each: 4,503
    left, 2,251 each for 2 ranks), the same rows a rank's own segments hold, and batches by
    the plan's rule; a bad round or batch size is a clear error, not a wrong count."""
    from stoker import _core
    from stoker._loading import state as _state

    rounds = [[4, 1000], [3, 500]]
    assert _state.rows_left(10_003, rounds, 2) == (10_003 - 4000 - 1500) // 2 == 2251
    for rank in range(2):
        segments = _core.rank_segments(10_003, [tuple(r) for r in rounds], 2, rank)
        assert sum(end - begin for begin, end in segments) == 2251
    assert _state.rows_left(10_003, [], 3) == 3334
    assert _state.rows_left(0, [], 3) == 0
    assert _state.batches_of(2251, 700, drop_last=False) == 4
    assert _state.batches_of(2251, 700, drop_last=True) == 3
    with pytest.raises(ValueError, match="batch_size"):
        _state.batches_of(10, 0, drop_last=False)
    with pytest.raises(ValueError, match="world"):
        _state.rows_left(10_003, [[0, 5]], 2)
