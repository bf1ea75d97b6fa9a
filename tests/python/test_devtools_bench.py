"""stoker_devtools.bench, the helper every benchmark times and records with: the repeats'
order, the best and median figures, the fresh-process answers and the results file."""

from __future__ import annotations

import json
import sys

import pytest
from stoker_devtools.bench import (
    best_rate,
    epoch_rate,
    interleaved,
    listed,
    medians,
    rotated,
    run_json,
    run_json_at_once,
    write_json,
)


def test_interleaved_runs_every_case_each_round_and_rotates_on_request() -> None:
    order: list[tuple[int, str]] = []
    cases = {name: (lambda repeat, name=name: order.append((repeat, name)) or repeat)
             for name in "abc"}
    assert interleaved(cases, 2) == {"a": [0, 1], "b": [0, 1], "c": [0, 1]}
    assert order == [(0, "a"), (0, "b"), (0, "c"), (1, "a"), (1, "b"), (1, "c")]
    order.clear()
    interleaved(cases, 2, rotate=True)
    assert order == [(0, "a"), (0, "b"), (0, "c"), (1, "b"), (1, "c"), (1, "a")]
    assert rotated([1, 2, 3], 4) == [2, 3, 1] and rotated([], 1) == []


def test_best_rate_leaves_the_warm_epoch_out_and_checks_the_rows() -> None:
    seen: list[int] = []
    assert best_rate(lambda epoch: seen.append(epoch) or 10, 2) > 0
    assert seen == [0, 1, 2]
    with pytest.raises(RuntimeError, match="epoch 0: 9 rows, the dataset has 10"):
        best_rate(lambda epoch: 9, 1, expected=10)


def test_figures_of_batches_and_runs() -> None:
    assert epoch_rate([{"x": [1, 2]}, {"x": [3]}]) > 0
    assert medians([{"a": 1, "b": 5}, {"a": 3, "b": 6}, {"a": 2, "b": 7}]) == {"a": 2, "b": 6}
    assert listed([1.234e6, 2e6], 1e-6, suffix="M") == "1.23M, 2.00M"


def test_a_child_answers_in_json_and_a_failed_one_says_why() -> None:
    emit = "from stoker_devtools.bench import emit; print('noise'); emit({'rows': %d})"
    assert run_json([sys.executable, "-c", emit % 3]) == {"rows": 3}
    assert run_json_at_once([[sys.executable, "-c", emit % n] for n in (1, 2)]) == [
        {"rows": 1}, {"rows": 2}]
    with pytest.raises(RuntimeError, match="exit status 1"):
        run_json([sys.executable, "-c", "raise SystemExit('no figures')"])


def test_write_json_makes_the_folder_and_ends_in_a_newline(tmp_path) -> None:
    indented = write_json(tmp_path / "a" / "results.json", {"x": [1, 2]}, indent=1)
    assert indented.read_text() == json.dumps({"x": [1, 2]}, indent=1) + "\n"
    compact = write_json(tmp_path / "soak.json", {"x": [1, 2]}, indent=None)
    assert compact.read_text() == '{"x":[1,2]}\n'
