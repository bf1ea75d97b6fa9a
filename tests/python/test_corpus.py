"""Every file of the Apache parquet-testing corpus (tests/data/parquet-testing, Apache License
2.0, see its LICENSE.txt) either loads with exactly the values pyarrow reads, or is met with a
clear error: one of the documented built-in exception classes, with a message naming the file.
Never a crash, never a hang.

Each (file, output) pair is probed in its own child process (_corpus_probe.py), so a crash or
a hang of the engine kills only that child and the failure is attributed to the file. The
children run two at a time, started as soon as the first test of this module asks for them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "data" / "parquet-testing"
PROBE = HERE / "_corpus_probe.py"
# Generous: large_string_map.brotli.parquet makes stoker and pyarrow each decode ~2 GiB before
# refusing it (~22 s on an idle 2-core machine, over 60 s on a loaded one). A hang still fails.
CHILD_TIMEOUT_S = 240
PARALLEL_CHILDREN = 2

# Companions of the data files (descriptions, expected values as CSV, key material, geospatial
# notes): documents, not inputs. Everything else under data/ and bad_data/ is probed, the
# non-Parquet bloom filter dumps (*.bin) included: they must be refused clearly too.
COMPANION_SUFFIXES = (".md", ".csv", ".json", ".yaml")

# The exception classes the public API documents for construction and decode errors.
CLEAR_ERRORS = {"FileNotFoundError", "ValueError", "KeyError", "TypeError", "OSError"}

# Files pyarrow.parquet.read_table reads but stoker refuses with output="arrow". Each entry is
# a reviewed decision: file (relative to the corpus root) -> (substring the error message must
# contain, why the refusal is acceptable). An entry for a file stoker loads fails the test, so
# this list cannot go stale. Currently stoker reads every file pyarrow reads, so it is empty.
EXPECTED_REFUSALS: dict[str, tuple[str, str]] = {}


def corpus_files() -> list[str]:
    files = [
        path.relative_to(CORPUS).as_posix()
        for folder in ("data", "bad_data")
        for path in sorted((CORPUS / folder).rglob("*"))
        if path.is_file() and not path.name.endswith(COMPANION_SUFFIXES)
    ]
    return sorted(files)


FILES = corpus_files()
# Test function -> the output mode its children probe.
MODES = {"test_arrow_matches_pyarrow": "arrow", "test_numpy_matches_pyarrow": "numpy"}


def run_probe(mode: str, rel: str) -> dict:
    """Runs one child; returns its JSON result, or how it died."""
    path = os.path.abspath(CORPUS / rel)
    try:
        proc = subprocess.run(
            [sys.executable, str(PROBE), mode, path],
            check=False,
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT_S,
            cwd=HERE,
        )
    except subprocess.TimeoutExpired as exc:  # run() has killed the child already
        stderr = (
            exc.stderr.decode(errors="replace")
            if isinstance(exc.stderr, bytes)
            else (exc.stderr or "")
        )
        return {
            "died": f"hung: no result within {CHILD_TIMEOUT_S} s (child killed)",
            "stderr": stderr,
        }
    if proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name
        return {"died": f"crashed: the child process was killed by {name}", "stderr": proc.stderr}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {
            "died": f"the child exited with status {proc.returncode} and no result",
            "stderr": proc.stderr,
        }
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError:
        return {
            "died": f"the child printed no JSON result: {lines[-1][:500]!r}",
            "stderr": proc.stderr,
        }


@pytest.fixture(scope="session")
def probes(request) -> dict[tuple[str, str], Future]:
    """Starts the children of every selected test of this module, in collection order."""
    wanted = []
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if item.module.__name__ == __name__ and callspec and item.originalname in MODES:
            wanted.append((MODES[item.originalname], callspec.params["rel"]))
    pool = ThreadPoolExecutor(max_workers=PARALLEL_CHILDREN)
    request.addfinalizer(lambda: pool.shutdown(wait=True, cancel_futures=True))
    return {key: pool.submit(run_probe, *key) for key in dict.fromkeys(wanted)}


def result_of(probes: dict, mode: str, rel: str) -> dict:
    future = probes.get((mode, rel))
    result = future.result() if future is not None else run_probe(mode, rel)
    if "died" in result:
        stages = [line for line in result["stderr"].splitlines() if line.startswith("stage: ")]
        last = stages[-1][len("stage: ") :] if stages else "before the first stage"
        tail = "\n".join(result["stderr"].splitlines()[-40:])
        pytest.fail(
            f"{rel} ({mode}): {result['died']}, during: {last}\n"
            f"--- child stderr (tail) ---\n{tail}",
            pytrace=False,
        )
    if result["status"] == "probe-bug":
        pytest.fail(f"{rel} ({mode}): the probe itself failed:\n{result['traceback']}")
    return result


def assert_clear_error(result: dict, rel: str, mode: str, classes=CLEAR_ERRORS) -> None:
    where = f"{rel} (output={mode!r})"
    assert result["status"] == "error", f"{where}: expected an error, got {result}"
    cls = (
        f"{result['module']}.{result['type']}"
        if result["module"] != "builtins"
        else (result["type"])
    )
    assert result["type"] in classes and result["module"] == "builtins", (
        f"{where}: stoker raised {cls}, which is not one of {sorted(classes)}: {result['message']}"
    )
    # The path as stoker resolves it is absolute; this tail of it is unique in the corpus.
    assert f"parquet-testing/{rel}" in result["message"], (
        f"{where}: the {result['type']} message does not name the file: {result['message']}"
    )


@pytest.mark.parametrize("rel", FILES)
def test_arrow_matches_pyarrow(probes, rel):
    result = result_of(probes, "arrow", rel)
    reference_ok = result["reference"] == "ok"
    if not reference_ok:
        # pyarrow cannot read it: stoker must refuse it clearly, not return something.
        assert result["status"] == "error", (
            f"{rel}: pyarrow cannot read it ({result['reference']}) but stoker returned "
            f"{result.get('stoker_rows')} rows ({result['status']})"
        )
        assert_clear_error(result, rel, "arrow")
        return
    if rel in EXPECTED_REFUSALS:
        substring, why = EXPECTED_REFUSALS[rel]
        assert result["status"] == "error", (
            f"{rel}: listed in EXPECTED_REFUSALS ({why}) but stoker now loads it "
            f"({result['status']}): remove the entry"
        )
        assert_clear_error(result, rel, "arrow")
        assert substring in result["message"], (
            f"{rel}: expected a refusal containing {substring!r}, got {result['message']}"
        )
        return
    assert result["status"] != "error", (
        f"{rel}: pyarrow reads it but stoker raised {result['type']}: {result['message']}"
    )
    assert result["status"] == "ok", (
        f"{rel}: stoker's values differ from pyarrow's: " + (result["detail"])
    )


@pytest.mark.parametrize("rel", FILES)
def test_numpy_matches_pyarrow(probes, rel):
    """Numeric/bool/fixed-size-list files without nulls: the arrays equal pyarrow's
    to_numpy. Any other file: a clear TypeError/ValueError (or, for files stoker cannot read
    at all, any clear error) naming the file."""
    result = result_of(probes, "numpy", rel)
    if result["reference"] != "ok" or rel in EXPECTED_REFUSALS:
        assert_clear_error(result, rel, "numpy")
        return
    if result["eligible"]:
        assert result["status"] != "error", (
            f"{rel}: every column is numeric/bool without nulls, yet output='numpy' raised "
            f"{result['type']}: {result['message']}"
        )
        assert result["status"] == "ok", f"{rel}: numpy arrays differ from pyarrow's " + (
            f"to_numpy: {result['detail']}"
        )
        return
    # Some column is a type numpy output does not take, or holds nulls: a clear refusal that
    # names the file and the column.
    assert result["status"] == "error", (
        f"{rel}: some column cannot be a numpy array (strings, nested, decimals, timestamps "
        f"or nulls: {result['reference_schema']}), yet output='numpy' returned "
        f"{result['status']}: {result.get('detail', '')}"
    )
    assert_clear_error(result, rel, "numpy", classes={"TypeError", "ValueError"})
    assert "column '" in result["message"], (
        f"{rel}: the refusal does not name the column: {result['message']}"
    )


def test_corpus_is_present():
    """The corpus travels with its license; an empty corpus would make every test vacuous."""
    assert (CORPUS / "LICENSE.txt").is_file()
    assert (CORPUS / "SOURCE.md").is_file()
    assert len(FILES) >= 90, FILES
    assert {"data", "bad_data"} == {rel.split("/")[0] for rel in FILES}
    stale = sorted(set(EXPECTED_REFUSALS) - set(FILES))
    assert not stale, f"EXPECTED_REFUSALS names files not in the corpus: {stale}"
