"""Stoker against the loaders users would pick instead, in one run, on the same data: the
harness behind `make bench`. docs/benchmarks.md shows its figures and how to read them.

    python benchmarks/harness.py [--python LOADER=PYTHON ...] [--scale 1] [--repeats 3]
        [--data data/bench] [--out benchmarks/results/results.json]
        [--charts docs/img] [--doc docs/benchmarks.md]

Every measurement runs in a fresh process (measure.py), started with the interpreter given for
its loader (`--python petastorm=.bench-petastorm-venv/bin/python`; default: this one), so each
loader runs in an environment that has it and CPU time and memory belong to it alone. While a
measurement runs, this process samples the memory of its whole process tree.

1. Datasets: the criteo, criteo-nulls, wide and embeddings presets written by `stoker gen`
   (kept when a previous run wrote them with the same options), read once into the page
   cache; criteo-nulls is delivered as Arrow (ARROW_DATASETS). Loaders that read their own
   format (Mosaic Streaming: MDS) convert each dataset once, outside the clock, and keep the
   copy beside it.
2. Throughput: every setting of every loader (loaders.SETTINGS), `--repeats` times,
   interleaved (the order rotates per repeat). A loader's figures are those of its setting
   with the best median rows/s; that setting is the one measured from then on.
3. Stall: every loader on the criteo data with a simulated training step at each R of
   `--stall-rates`, on the first `--stall-rows` rows.
4. Shuffle cost: Stoker on the criteo data without shuffle and with smaller windows.
5. Growth: Stoker on the criteo data at 1x, 4x and 16x its size, and at 1 and 2 threads.

Figures are medians over the repeats; report.py turns them into tables, charts.py into PNGs.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import report
from goals import LOADER_ORDER
from loaders import LOADERS, SETTINGS, Spec
from proctree import CLOCK_TICKS, descendants, process_table, rss_bytes
from stoker_devtools.bench import rotated, write_json

REPO = Path(__file__).resolve().parent.parent
MEASURE = Path(__file__).resolve().parent / "measure.py"

# Sized so that `make bench` measures for about 20 minutes on 2 cores: about a second per
# epoch for Stoker, up to half a minute for the slowest peer setting.
DATASETS: dict[str, dict[str, Any]] = {
    "criteo": {"preset": "criteo", "rows": 2_000_000, "files": 4},
    "criteo-nulls": {"preset": "criteo-nulls", "rows": 2_000_000, "files": 4},
    "wide": {"preset": "wide", "rows": 200_000, "files": 2, "columns": 500},
    "embeddings": {"preset": "embeddings", "rows": 1_000_000, "files": 4},
}
# Datasets delivered as Arrow record batches rather than tensors: tensors cannot hold nulls or
# strings (the loaders that cannot deliver Arrow deliver what they have, see loaders.py).
ARROW_DATASETS = ("criteo-nulls",)
STALL_DATASET = "criteo"
STALL_RATES = (250_000, 500_000, 1_000_000, 4_000_000)  # R: accelerator speeds, rows/s.
STALL_ROWS = 500_000  # Rows consumed per stall run (at R = 250k rows/s: 2 s of steps).
# What shuffling costs Stoker, on the stall dataset: the same loader without shuffle and with
# smaller windows (which fit more of each column's window in the CPU caches).
SHUFFLE_COST_SETTINGS = ({"shuffle": False}, {"shuffle_window": 16_384}, {"shuffle_window": 65_536})
GROWTH_DATASET = "criteo"
GROWTH_SIZES = (1, 4, 16)  # Multiples of the dataset's rows (and files).
GROWTH_THREADS = (1, 2)
BATCH_SIZE = 4096
MEMORY_SAMPLE_S = 0.05
# Before each measurement: wait while other processes keep more than QUIET_CORES busy (probed
# over QUIET_PROBE_S), for at most QUIET_WAIT_S.
QUIET_CORES = 0.2
QUIET_PROBE_S = 0.3
QUIET_WAIT_S = 120
PROCESS_SCAN_S = 0.5
CHILD_TIMEOUT_S = 900
GENERATED_FILES = "part-*.parquet"


@dataclasses.dataclass
class Config:
    pythons: dict[str, str]  # loader -> interpreter
    pythonpath: dict[str, str]  # interpreter -> PYTHONPATH for its measurements
    data: Path
    scale: float
    repeats: int
    datasets: list[str]
    loaders: list[str]
    stall_rates: list[float]
    stall_rows: int
    shuffle_cost: bool
    growth_sizes: list[int]
    growth_threads: list[int]
    batch_size: int
    quiet_wait: float
    log: Path


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    config = Config(
        pythons={name: args.default_python for name in LOADERS} | dict(args.python),
        pythonpath={},
        data=args.data.resolve(),
        scale=args.scale,
        repeats=args.repeats,
        datasets=args.datasets,
        loaders=args.loaders,
        stall_rates=args.stall_rates,
        stall_rows=max(1, round(args.stall_rows * args.scale)),
        shuffle_cost=not args.skip_shuffle_cost,
        growth_sizes=args.growth_sizes,
        growth_threads=args.growth_threads,
        batch_size=args.batch_size,
        quiet_wait=args.quiet_wait,
        log=args.data.resolve() / "bench.log",
    )
    config.data.mkdir(parents=True, exist_ok=True)
    results = run(config)
    _say(f"results: {write_json(args.out, results, indent=1)}")

    print(report.summary_text(results))
    if args.doc is not None:
        report.update_doc(args.doc, results)
        _say(f"tables: {args.doc}")
    if args.charts is not None:
        try:
            import charts
        except ImportError as exc:  # matplotlib lives in .bench-venv only.
            _say(f"charts skipped: {exc}")
        else:
            for path in charts.write_charts(results, args.charts):
                _say(f"chart: {path}")
    return 0


def run(config: Config) -> dict[str, Any]:
    """All phases; returns the results document (meta, runs, summary, goals)."""
    started = time.perf_counter()
    config.log.write_text("")
    meta = _meta(config)
    runs: list[dict[str, Any]] = []
    runner = _Runner(config, runs)
    loaders = _runnable_loaders(config, runner)
    datasets = {name: _dataset(config, name, 1) for name in config.datasets}
    _convert(config, runner, datasets, loaders)

    best = _throughput_phase(config, runner, datasets, loaders)
    if STALL_DATASET in datasets and config.stall_rates:
        _stall_phase(config, runner, datasets[STALL_DATASET], loaders, best)
    if "stoker" in loaders:
        _stoker_phases(config, runner, datasets)

    meta |= {
        "seconds": round(time.perf_counter() - started, 1),
        "environments": _environments(config, loaders),
        "datasets": {name: _dataset_meta(dataset) for name, dataset in datasets.items()},
        "best_settings": best,
    }
    results = {"meta": meta, "runs": runs, "summary": report.summarize(runs)}
    results["goals"] = report.goals(results)
    return results


def _meta(config: Config) -> dict[str, Any]:
    """What the results were measured with; snapshots the Stoker build (see _snapshot_stoker)."""
    return {
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": _machine(),
        "git": _git(),
        "batch_size": config.batch_size,
        "shuffle_rows": Spec.shuffle_rows,
        "repeats": config.repeats,
        "stall_rates": config.stall_rates,
        "stall_rows": config.stall_rows,
        "stoker_build": _snapshot_stoker(config),
    }


def _runnable_loaders(config: Config, runner: _Runner) -> list[str]:
    """The loaders whose environment imports them; the others are recorded as not available
    on every dataset."""
    available = _availability(config)
    for loader in config.loaders:
        if available[loader]:
            for name in config.datasets:
                runner.record_unavailable(name, loader, available[loader])
    return [loader for loader in config.loaders if not available[loader]]


def _convert(
    config: Config, runner: _Runner, datasets: dict[str, dict[str, Any]], loaders: list[str]
) -> None:
    """Writes the copies that loaders reading their own format need (Streaming's MDS), each in
    a process of the loader's environment, before and outside any measurement."""
    for loader in loaders:
        if LOADERS[loader].convert is None:
            continue
        for dataset in datasets.values():
            runner.convert(dataset, loader)


def _throughput_phase(
    config: Config, runner: _Runner, datasets: dict[str, dict[str, Any]], loaders: list[str]
) -> dict[str, dict[str, Any]]:
    """Every setting of every loader on every dataset, each repeat in a rotated order; returns
    dataset -> loader -> the settings with the best median rows/s."""
    plan = [(name, loader, settings) for name in datasets for loader in loaders
            for settings in SETTINGS[loader]]
    for repeat in range(config.repeats):
        for name, loader, settings in rotated(plan, repeat):
            runner.measure(
                "throughput", datasets[name], loader, settings,
                repeat=repeat, max_rows=LOADERS[loader].max_rows,
            )  # fmt: skip
    return report.best_settings(report.summarize(runner.runs))


def _stall_phase(
    config: Config,
    runner: _Runner,
    dataset: dict[str, Any],
    loaders: list[str],
    best: dict[str, dict[str, Any]],
) -> None:
    """Every loader, at its best setting, under a simulated training step at each R."""
    chosen = best.get(dataset["name"], {})
    plan = [(loader, rate) for loader in loaders if loader in chosen and LOADERS[loader].stall
            for rate in config.stall_rates]
    for repeat in range(config.repeats):
        for loader, rate in rotated(plan, repeat):
            runner.measure(
                "stall", dataset, loader, chosen[loader],
                repeat=repeat, step_rows_per_s=rate, max_rows=config.stall_rows,
            )  # fmt: skip


def _stoker_phases(config: Config, runner: _Runner, datasets: dict[str, dict[str, Any]]) -> None:
    """What shuffling costs Stoker, and how it grows with the data and the threads."""
    if STALL_DATASET in datasets and config.shuffle_cost:
        for repeat in range(config.repeats):
            for settings in rotated(list(SHUFFLE_COST_SETTINGS), repeat):
                runner.measure(
                    "shuffle-cost", datasets[STALL_DATASET], "stoker", settings, repeat=repeat
                )
    if GROWTH_DATASET in datasets and config.growth_sizes:
        top = max(config.growth_threads)
        points = [(size, top) for size in config.growth_sizes]
        points += [(1, threads) for threads in config.growth_threads if threads != top]
        grown = {size: _dataset(config, GROWTH_DATASET, size) for size in config.growth_sizes}
        for repeat in range(config.repeats):
            for size, threads in rotated(points, repeat):
                runner.measure(
                    "growth", grown[size], "stoker", {"num_threads": threads},
                    repeat=repeat, size=size,
                )


def _dataset_meta(dataset: dict[str, Any]) -> dict[str, Any]:
    meta = {key: value for key, value in dataset.items() if key != "columns"}
    return meta | {"columns": len(dataset["columns"])}


class _Runner:
    """Runs measurements in child processes and records them in `runs`."""

    def __init__(self, config: Config, runs: list[dict]) -> None:
        self.config = config
        self.runs = runs
        # (dataset label, loader) -> why the loader cannot read that dataset: measured once.
        self.cannot: dict[tuple[str, str], str] = {}

    def measure(
        self,
        phase: str,
        dataset: dict[str, Any],
        loader: str,
        settings: dict[str, Any],
        *,
        repeat: int = 0,
        step_rows_per_s: float | None = None,
        max_rows: int | None = None,
        size: int = 1,
    ) -> None:
        if (dataset["label"], loader) in self.cannot:  # Said so once: that is enough.
            return
        spec = self._spec(dataset, loader, settings, step_rows_per_s, max_rows)
        label = f"{phase} {dataset['label']} {loader} {json.dumps(settings)}"
        if step_rows_per_s:
            label += f" R={step_rows_per_s:,.0f}"
        record = {
            "phase": phase,
            "dataset": dataset["name"],
            "size": size,
            "loader": loader,
            "settings": settings,
            "repeat": repeat,
            "step_rows_per_s": step_rows_per_s,
        }
        record |= self._child(loader, spec, label, [])
        if record["status"] == "not-available":
            self.cannot[(dataset["label"], loader)] = record["reason"]
        if record["status"] == "ok":
            expected = min(dataset["rows"], max_rows or dataset["rows"])
            if record["rows"] < expected:
                record |= {
                    "status": "failed",
                    "reason": f"delivered {record['rows']:,} of {expected:,} rows",
                }
        self.runs.append(record)
        _say(f"{label}: {_brief(record)}")

    def convert(self, dataset: dict[str, Any], loader: str) -> None:
        """Has `loader` write its own copy of `dataset` (measure.py --convert); if it cannot,
        records why, and the loader is not measured on that dataset."""
        spec = self._spec(dataset, loader, SETTINGS[loader][0], None, None)
        label = f"convert {dataset['label']} {loader}"
        _say(f"{label} (outside the clock; kept for later runs)")
        result = self._child(loader, spec, label, ["--convert"], quiet_wait=0)
        if result["status"] != "ok":
            self.cannot[(dataset["label"], loader)] = result["reason"]
            self.record_unavailable(dataset["name"], loader, result["reason"])
            _say(f"{label}: {result['status']}: {result['reason']}")

    def record_unavailable(self, dataset: str, loader: str, reason: str) -> None:
        self.runs.append({
            "phase": "throughput",
            "dataset": dataset,
            "size": 1,
            "loader": loader,
            "settings": None,
            "repeat": 0,
            "step_rows_per_s": None,
            "status": "not-available",
            "reason": reason,
        })

    def _spec(
        self,
        dataset: dict[str, Any],
        loader: str,
        settings: dict[str, Any],
        step_rows_per_s: float | None,
        max_rows: int | None,
    ) -> Spec:
        return Spec(
            loader=loader,
            dataset=dataset["path"],
            columns=dataset["columns"],
            batch_size=self.config.batch_size,
            settings=settings,
            step_rows_per_s=step_rows_per_s,
            max_rows=max_rows,
            output=dataset["output"],
        )

    def _child(
        self,
        loader: str,
        spec: Spec,
        label: str,
        flags: list[str],
        quiet_wait: float | None = None,
    ) -> dict[str, Any]:
        python = self.config.pythons[loader]
        return _run_child(
            [python, str(MEASURE), *flags, json.dumps(dataclasses.asdict(spec))],
            self.config.log,
            label,
            self.config.quiet_wait if quiet_wait is None else quiet_wait,
            self.config.pythonpath.get(python),
        )


def _run_child(
    command: list[str], log: Path, label: str, quiet_wait: float, pythonpath: str | None
) -> dict[str, Any]:
    """Runs `command` (measure.py and its arguments) and returns its result, the tree's peak
    memory, and the CPU time other processes on the machine took meanwhile (a busy machine
    skews the figures)."""
    waited = _wait_for_quiet(quiet_wait)
    busy_before, own_before, reaped_before = _machine_busy_seconds(), *_our_cpu_seconds()
    started = time.perf_counter()
    out, exit_code, sampler = _sampled(command, log, label, pythonpath)
    if out is None:
        return {"status": "failed", "reason": f"timed out after {CHILD_TIMEOUT_S} s"}
    lines = out.strip().splitlines()
    if not lines or not lines[-1].startswith("{"):
        return {"status": "failed", "reason": f"exit code {exit_code}; see {log}"}
    # measure.py prints its result before tearing the loader down; a teardown that fails after
    # (Ray's, sometimes, after an early stop) does not void the measurement, but is recorded.
    result = json.loads(lines[-1])
    # Ours: this process, plus the measurement's tree as reaped or, for what was never reaped
    # here, as last seen in /proc (sampling misses at most PROCESS_SCAN_S of each process).
    own, reaped = _our_cpu_seconds()
    ours = own - own_before + max(reaped - reaped_before, sum(sampler.cpu_seen.values()))
    others = (_machine_busy_seconds() - busy_before) - ours
    return result | {
        "exit_code": exit_code,
        "peak_memory_bytes": sampler.peak_bytes,
        "max_processes": sampler.max_processes,
        "other_cpu_seconds": max(0.0, others),
        "child_seconds": time.perf_counter() - started,
        "waited_for_quiet_seconds": waited,
    }


def _sampled(
    command: list[str], log: Path, label: str, pythonpath: str | None
) -> tuple[str | None, int, _TreeSampler]:
    """Runs `command`, its stderr appended to `log` under `label`, while a _TreeSampler watches
    its process tree: (stdout, exit code, sampler); stdout is None if it timed out."""
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", PYTHONUNBUFFERED="1")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    with log.open("a") as stderr:
        stderr.write(f"\n=== {label}\n")
        stderr.flush()
        child = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=REPO, env=env
        )
        sampler = _TreeSampler(child.pid)
        try:
            out, _ = child.communicate(timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _kill_tree(child)
            out = None
        except BaseException:  # Ctrl-C: leave no measurement (or Ray cluster) behind.
            _kill_tree(child)
            raise
        finally:
            sampler.stop()
    return out, child.returncode, sampler


def _wait_for_quiet(limit: float) -> float:
    """Waits (at most `limit` seconds) until other processes leave the machine nearly idle, so
    that a measurement does not start beside someone's build; returns the seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        busy, ours = _machine_busy_seconds(), sum(_our_cpu_seconds())
        time.sleep(QUIET_PROBE_S)
        others = (_machine_busy_seconds() - busy) - (sum(_our_cpu_seconds()) - ours)
        if others / QUIET_PROBE_S <= QUIET_CORES:
            break
    return time.monotonic() - started


def _machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy since boot (all cores, from /proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(value) for value in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / CLOCK_TICKS


def _our_cpu_seconds() -> tuple[float, float]:
    """CPU seconds of this process, and of the children it has reaped (the measurements)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, reaped.ru_utime + reaped.ru_stime


class _TreeSampler:
    """Polls a process and its descendants: the peak of their summed resident memory, and the
    CPU time each of them has used, as last seen.

    Reads /proc/PID/statm, which costs next to nothing, every MEMORY_SAMPLE_S; the set of
    processes and their CPU times are refreshed every PROCESS_SCAN_S, since walking /proc costs
    more (PSS, which would count shared pages once, costs a page-table walk per read: a fifth of
    a core at this rate, too much beside a 2-core measurement). The CPU times catch processes
    that this harness never reaps (Ray's daemons), which its own rusage would miss."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_bytes = 0
        self.max_processes = 0
        self.cpu_seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        pids, scanned = [self.pid], 0.0
        while not self._stop.is_set():
            if time.monotonic() - scanned >= PROCESS_SCAN_S:
                table = process_table()
                pids, scanned = [self.pid, *descendants(self.pid, table)], time.monotonic()
                for pid in pids:
                    if pid in table:
                        self.cpu_seen[pid] = table[pid][1]
            total = sum(rss_bytes(pid) for pid in pids)
            self.peak_bytes = max(self.peak_bytes, total)
            self.max_processes = max(self.max_processes, len(pids))
            self._stop.wait(MEMORY_SAMPLE_S)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _kill_tree(child: subprocess.Popen) -> None:
    for pid in descendants(child.pid):
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    child.kill()
    child.wait()


def _availability(config: Config) -> dict[str, str]:
    """loader -> "" when its interpreter imports its module, else why not."""
    found: dict[str, str] = {}
    for loader in config.loaders:
        python, module = config.pythons[loader], LOADERS[loader].module
        done = subprocess.run(
            [python, "-c", f"import {module}"], capture_output=True, text=True, check=False
        )
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        found[loader] = "" if done.returncode == 0 else f"{module} not importable: {last}"
    for loader, reason in found.items():
        if reason:
            _say(f"{loader}: skipped ({reason})")
    return found


def _dataset(config: Config, name: str, size: int) -> dict[str, Any]:
    """Writes (or reuses) dataset `name` at `size` times its rows, and reads it into the page
    cache so that every loader reads from memory, as in a second epoch."""
    options = dict(DATASETS[name])
    options["rows"] = max(1, round(options["rows"] * config.scale * size))
    options["files"] = min(options["files"] * size, options["rows"])
    label = name if size == 1 else f"{name}-x{size}"
    path = config.data / label
    stamp = config.data / f"{label}.gen.json"
    if not (stamp.exists() and json.loads(stamp.read_text()) == options):
        command = [config.pythons["stoker"], "-m", "stoker", "gen", str(path), "--overwrite"]
        for key, value in options.items():
            command += [f"--{key}", str(value)]
        _say(f"writing {label}: {' '.join(command[3:])}")
        env = dict(os.environ)
        if config.pythons["stoker"] in config.pythonpath:
            env["PYTHONPATH"] = config.pythonpath[config.pythons["stoker"]]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
        stamp.write_text(json.dumps(options))
    files = sorted(path.glob(GENERATED_FILES))
    for file in files:
        with file.open("rb", buffering=0) as f:
            while f.read(8 << 20):
                pass
    import pyarrow.parquet as pq

    schema = pq.read_schema(files[0])
    return {
        "name": name,
        "label": label,
        "path": str(path),
        "output": "arrow" if name in ARROW_DATASETS else "torch",
        "gen": options,
        "rows": options["rows"],
        "columns": schema.names,
        "bytes_on_disk": sum(file.stat().st_size for file in files),
    }


def _machine() -> dict[str, Any]:
    model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        memory_kb = int(f.readline().split()[1])
    return {
        "cpu_model": model,
        "cores": os.cpu_count(),
        "memory_bytes": memory_kb * 1024,
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def _git() -> dict[str, Any]:
    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, check=False
        )
        return done.stdout.strip() if done.returncode == 0 else ""

    engine = ["src", "include", "python", "CMakeLists.txt", "pyproject.toml"]
    return {
        "commit": git("rev-parse", "HEAD"),
        "engine_changes_uncommitted": bool(git("status", "--porcelain", "--", *engine)),
    }


def _snapshot_stoker(config: Config) -> str | None:
    """Copies the Stoker package installed for the stoker interpreter into the data folder and
    points that interpreter's measurements (and `stoker gen`) at the copy, so that a reinstall
    during the run (someone's `make build`) cannot mix two builds into one set of figures.
    Returns the build time of the copied engine extension (None without Stoker)."""
    script = "import os, stoker, pyarrow\nfor m in (stoker, pyarrow): print(os.path.dirname(m.__file__))"
    done = subprocess.run(
        [config.pythons["stoker"], "-c", script], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return None
    stoker_dir, pyarrow_dir = done.stdout.split()
    snapshot = config.data / "stoker-snapshot"
    shutil.rmtree(snapshot, ignore_errors=True)
    shutil.copytree(stoker_dir, snapshot / "stoker", ignore=shutil.ignore_patterns("__pycache__"))
    # The extension finds Arrow's libraries at $ORIGIN/../pyarrow, as in site-packages.
    (snapshot / "pyarrow").symlink_to(pyarrow_dir)
    config.pythonpath[config.pythons["stoker"]] = str(snapshot)
    extension = next((snapshot / "stoker").glob("_core*.so"))
    return datetime.datetime.fromtimestamp(extension.stat().st_mtime).isoformat(timespec="seconds")


def _environments(config: Config, loaders: list[str]) -> dict[str, Any]:
    """Package versions in each interpreter that ran a loader."""
    script = (
        "import importlib.metadata as m, json, platform\n"
        "v = {'python': platform.python_version()}\n"
        "for p in ('stoker', 'pyarrow', 'numpy', 'torch', 'petastorm', 'ray',\n"
        "          'mosaicml-streaming', 'grain', 'pandas'):\n"
        "    try: v[p] = m.version(p)\n"
        "    except m.PackageNotFoundError: pass\n"
        "print(json.dumps(v))\n"
    )
    found = {}
    for loader in loaders:
        python = config.pythons[loader]
        if python not in found:
            done = subprocess.run(
                [python, "-c", script], capture_output=True, text=True, check=False
            )
            found[python] = {"loaders": [], **json.loads(done.stdout or "{}")}
        found[python]["loaders"].append(loader)
    return found


def _brief(run: dict[str, Any]) -> str:
    if run["status"] != "ok":
        return f"{run['status']}: {run.get('reason', '')}"
    text = f"{run['rows_per_s'] / 1e6:.3f}M rows/s, {run['peak_memory_bytes'] / 1e6:.0f} MB"
    if run.get("stall_share") is not None:
        text += f", stall {100 * run['stall_share']:.1f}%"
    return text


def _say(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        type=_loader_python,
        metavar="LOADER=PYTHON",
        help="the interpreter that runs LOADER's measurements (repeatable)",
    )
    parser.add_argument("--default-python", default=sys.executable, help="for other loaders")
    parser.add_argument("--data", type=Path, default=REPO / "data" / "bench")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/results.json")
    parser.add_argument("--charts", type=Path, help="write PNG charts into this folder")
    parser.add_argument("--doc", type=Path, help="rewrite the generated part of this page")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies dataset rows")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--datasets", type=_names(DATASETS), default=list(DATASETS))
    parser.add_argument("--loaders", type=_names(LOADERS), default=list(LOADER_ORDER))
    parser.add_argument("--stall-rates", type=_numbers(float), default=list(STALL_RATES))
    parser.add_argument("--stall-rows", type=int, default=STALL_ROWS, help="scaled by --scale")
    parser.add_argument("--skip-shuffle-cost", action="store_true")
    parser.add_argument("--growth-sizes", type=_numbers(int), default=list(GROWTH_SIZES))
    parser.add_argument("--growth-threads", type=_numbers(int), default=list(GROWTH_THREADS))
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=QUIET_WAIT_S,
        help="seconds to wait at most for a quiet machine before each measurement",
    )
    return parser.parse_args(argv)


def _loader_python(text: str) -> tuple[str, str]:
    loader, sep, python = text.partition("=")
    if not sep or loader not in LOADERS:
        raise argparse.ArgumentTypeError(f"expected LOADER=PYTHON, LOADER one of {list(LOADERS)}")
    return loader, python


def _names(known: dict) -> Any:
    def parse(text: str) -> list[str]:
        names = [name for name in text.split(",") if name]
        unknown = [name for name in names if name not in known]
        if unknown:
            raise argparse.ArgumentTypeError(f"unknown {unknown}; known: {list(known)}")
        return names

    return parse


def _numbers(kind: type) -> Any:
    def parse(text: str) -> list:
        return [kind(float(value)) for value in text.split(",") if value]

    return parse


if __name__ == "__main__":
    sys.exit(main())
