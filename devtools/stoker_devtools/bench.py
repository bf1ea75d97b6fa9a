"""What every benchmark measures with (benchmarks/ and benchmarks/studies/): the clock around an
epoch, the best or the median of repeated runs, cases interleaved so that the machine's drift
reaches each alike, a measurement in a fresh process that answers in JSON, and the results file.

The standard library only: the scripts run in every benchmark environment, some of which have
no Stoker and no NumPy (the peers', TorchRec's, Lance's).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "batch_rows",
    "best_rate",
    "emit",
    "epoch_rate",
    "interleaved",
    "listed",
    "median_of",
    "medians",
    "per_call_us",
    "rotated",
    "run_json",
    "run_json_at_once",
    "timed",
    "write_json",
]

K = TypeVar("K")
T = TypeVar("T")

# How much of a failed child's stderr an error repeats: the end, where the traceback is.
STDERR_TAIL_CHARS = 3000


# --- the clock -------------------------------------------------------------------------------


def timed(function: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T, float]:
    """`function(*args, **kwargs)` and the wall seconds it took."""
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - started


def batch_rows(batch: Any) -> int:
    """The rows of a batch: an Arrow record batch's num_rows, else the length of its first
    column (a dict of NumPy arrays, tensors or lists)."""
    if hasattr(batch, "num_rows"):
        return int(batch.num_rows)
    return len(next(iter(batch.values())))


def epoch_rate(batches: Iterable[Any], rows: Callable[[Any], int] = batch_rows) -> float:
    """Rows per second of draining `batches`, counted by `rows`; the clock starts at the first
    request for a batch (build the loader before, or pass a generator that builds it, to count
    its construction too)."""
    started = time.perf_counter()
    total = sum(rows(batch) for batch in batches)
    return total / (time.perf_counter() - started)


def best_rate(epoch_rows: Callable[[int], int], epochs: int, *,
              expected: int | None = None) -> float:
    """Rows/s of the best of `epochs` timed epochs after a warm one (epoch 0, untimed: the page
    cache, the allocator's pools). `epoch_rows(e)` reads epoch e and returns its rows; with
    `expected`, an epoch of another row count raises."""
    rates = []
    for epoch in range(epochs + 1):
        rows, seconds = timed(epoch_rows, epoch)
        if expected is not None and rows != expected:
            raise RuntimeError(f"epoch {epoch}: {rows} rows, the dataset has {expected}")
        if epoch:
            rates.append(rows / seconds)
    return max(rates)


def per_call_us(function: Callable[[], Any], calls: int, rounds: int = 5) -> float:
    """Microseconds per call of `function`: the median over `rounds` rounds of `calls` calls
    (one call's time is below the clock's resolution; a round's is not)."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(calls):
            function()
        times.append((time.perf_counter() - started) / calls * 1e6)
    return statistics.median(times)


# --- repeats ---------------------------------------------------------------------------------


def rotated(items: Sequence[T], shift: int) -> list[T]:
    """`items` started `shift` places on (modulo their number), wrapping around."""
    shift = shift % len(items) if items else 0
    return [*items[shift:], *items[:shift]]


def interleaved(cases: Mapping[K, Callable[[int], T]], repeats: int, *,
                rotate: bool = False) -> dict[K, list[T]]:
    """Each case's results over `repeats` rounds, every round running every case once, as
    `case(repeat)` (round robin: a change in the machine's load reaches every case alike, where
    running one case's repeats back to back would hand it to that case). With `rotate`, each
    round starts one case later (two cases alternate which goes first)."""
    runs: dict[K, list[T]] = {name: [] for name in cases}
    for repeat in range(repeats):
        names = list(cases)
        for name in rotated(names, repeat) if rotate else names:
            runs[name].append(cases[name](repeat))
    return runs


def median_of(runs: Iterable[Mapping[str, Any]], key: str) -> float:
    """The median of `key` over `runs`."""
    return statistics.median(run[key] for run in runs)


def medians(runs: Sequence[Mapping[str, Any]], keys: Iterable[str] | None = None) -> dict[str, Any]:
    """key -> its median over `runs`, for `keys` (default: every key of the first run)."""
    return {key: median_of(runs, key) for key in (runs[0] if keys is None else keys)}


def listed(values: Iterable[float], scale: float = 1.0, spec: str = ".2f", *, suffix: str = "",
           sep: str = ", ") -> str:
    """The runs behind a median as the tables print them: `1.23, 1.25, 1.31` (each value
    times `scale`, formatted by `spec`, followed by `suffix`, joined by `sep`)."""
    return sep.join(f"{value * scale:{spec}}{suffix}" for value in values)


# --- measurements in fresh processes ---------------------------------------------------------


def emit(result: Any) -> None:
    """A child measurement's answer: `result` as one JSON line on stdout (run_json reads the
    last line, so the child may print before it)."""
    print(json.dumps(result), flush=True)


def run_json(command: Sequence[str], **popen: Any) -> Any:
    """Runs `command` (a measurement in a fresh process: usually this script again, with a flag
    that makes it emit() one result) and returns the JSON value on the last line of its stdout.
    A child that fails raises, with the end of its stderr."""
    done = subprocess.run(list(command), capture_output=True, text=True, check=False, **popen)
    return _answer(command, done.returncode, done.stdout, done.stderr)


def run_json_at_once(commands: Sequence[Sequence[str]], **popen: Any) -> list[Any]:
    """run_json for `commands` started together (processes that share something while they
    run: a cache directory, a server), their answers in the order given. Their stderr goes to
    this process's."""
    children = [subprocess.Popen(list(command), stdout=subprocess.PIPE, text=True, **popen)
                for command in commands]
    answers = []
    for command, child in zip(commands, children, strict=True):
        out, _ = child.communicate()
        answers.append(_answer(command, child.returncode, out, ""))
    return answers


def _answer(command: Sequence[str], returncode: int, out: str, err: str) -> Any:
    lines = out.strip().splitlines()
    if returncode != 0 or not lines:
        raise RuntimeError(f"{' '.join(map(str, command))}: exit status {returncode}, "
                           f"{len(lines)} lines of output\n{err[-STDERR_TAIL_CHARS:]}")
    return json.loads(lines[-1])


# --- results ---------------------------------------------------------------------------------


def write_json(path: str | Path, results: Any, *, indent: int | None = 2) -> Path:
    """Writes `results` to `path` (its folder made if needed) as JSON ending in a newline:
    indented by `indent`, or with indent=None on one line without spaces (a long series of
    samples). Returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    separators = (",", ":") if indent is None else None
    path.write_text(json.dumps(results, indent=indent, separators=separators) + "\n")
    return path
