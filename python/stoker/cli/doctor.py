"""`stoker doctor`: one bounded, measured epoch that says whether data is the bottleneck and
why, inside the loader or outside it.

The run drains an epoch through a simulated training step (`--step-ms`) until `--seconds` or
`--batches`, while reading what the kernel says about the process and the host before and
after (pressure, page faults, swap: `_procfs`), sampling every thread's run-queue delay
during it, and running the page-fault probe (`_core.FaultProbe`). `measure` returns the
report, a dict with a stable schema (docs/observability.md); `_diagnosis` adds the findings;
`format_text` prints it for people.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stoker.cli import cpu as _cpu
from stoker.cli import diagnosis as _diagnosis
from stoker.cli import flags as _flags
from stoker.cli import procfs as _procfs
from stoker.cli import thread_pools as _thread_pools
from stoker.cli.console import format_bytes, format_count, format_ms
from stoker.cli.meter import drain

__all__ = [
    "DEFAULT_SECONDS",
    "DESCRIPTION",
    "HELP",
    "SCHEMA_VERSION",
    "STEP_MODES",
    "add_arguments",
    "format_text",
    "measure",
    "run",
]

SCHEMA_VERSION = 1
DEFAULT_SECONDS = 20.0
# "sleep": the step leaves the CPU free, as a step on an accelerator does; "spin": it keeps
# one CPU busy, as a step on the CPU does.
STEP_MODES = ("sleep", "spin")
STAGES = ("read", "decode", "transform", "assemble")
REMOTE_SCHEMES = ("s3", "gs", "gcs", "hdfs", "abfs", "az")


def measure(source: str, *, loader_options: dict[str, Any],
            transforms: list[dict[str, Any]] | None = None, step_ms: float = 0.0,
            step_mode: str = "sleep", seconds: float | None = DEFAULT_SECONDS,
            batches: int | None = None, probe: bool = True) -> dict[str, Any]:
    """Runs one epoch of `stoker.Loader(source, transforms=..., **loader_options)` through a
    step of `step_ms` ms per batch until `seconds` or `batches` (None: no bound) or the end
    of the epoch, and returns the report with its findings. Errors building or reading the
    loader propagate (the doctor then fails); what the host cannot tell is None."""
    import stoker
    from stoker import _core

    if step_mode not in STEP_MODES:
        raise ValueError(f"step_mode must be one of {', '.join(STEP_MODES)}, got {step_mode!r}")
    loader = stoker.Loader(source, transforms=transforms, **loader_options)
    sampler = _procfs.RunQueueSampler()
    before = _HostCounters()
    fault_probe = _core.FaultProbe() if probe else None
    epoch = iter(loader)
    try:
        started = time.perf_counter()
        sampler.sample(force=True)
        figures = drain(epoch, started=started, step=_step(step_ms, step_mode),
                        max_batches=batches, max_seconds=seconds,
                        on_batch=lambda _batches, _rows: sampler.sample())
        sampler.sample(force=True)
        after = _HostCounters()
        stats = loader.stats()
    finally:
        epoch.close()
        probe_figures = fault_probe.stop() if fault_probe is not None else None
    options = {**loader_options, "transforms": len(transforms or [])}
    report = _report(source, options, loader, stats, figures, before, after, sampler.per_thread(),
                     probe_figures, step_ms=step_ms, step_mode=step_mode,
                     bounds={"seconds": seconds, "batches": batches})
    report["findings"] = _diagnosis.diagnose(report)
    return report


def _step(step_ms: float, mode: str) -> Callable[[int], None] | None:
    if step_ms <= 0:
        return None
    seconds = step_ms / 1e3
    if mode == "sleep":
        return lambda _rows: time.sleep(seconds)

    def spin(_rows: int) -> None:
        until = time.perf_counter() + seconds
        while time.perf_counter() < until:
            pass

    return spin


class _HostCounters:
    """The cumulative counters, read when made: before and after the run."""

    def __init__(self) -> None:
        self.at = time.perf_counter()
        self.faults = _procfs.page_faults()
        self.pressure = _procfs.pressure()
        self.swap = _procfs.swap_pages()


def _report(source: str, options: dict[str, Any], loader: Any, stats: dict[str, Any], figures: dict[str, Any],
            before: _HostCounters, after: _HostCounters, threads: list[dict[str, Any]],
            probe: dict[str, Any] | None, *, step_ms: float, step_mode: str,
            bounds: dict[str, Any]) -> dict[str, Any]:
    wall = after.at - before.at
    info = loader.dataset_info()
    return {
        "schema_version": SCHEMA_VERSION,
        "source": source,
        "dataset": {"files": len(info["files"]), "rows": info["rows"],
                    "row_groups": info["row_groups"]},
        "options": options,
        "run": {"seconds": figures["seconds"], "batches": figures["batches"],
                "rows": figures["rows"], "stopped_by": figures["stopped_by"],
                "bounds": bounds, "first_batch_seconds": figures["first_batch_seconds"]},
        "step": _step_report(step_ms, step_mode, figures),
        "rate": _rate_report(figures),
        "consumer": _consumer_report(stats, figures),
        "stages": _stages_report(stats),
        "cpu": _cpu_report(stats, threads),
        "pressure": _pressure_report(before.pressure, after.pressure, wall),
        "run_queue": _run_queue_report(threads),
        "page_faults": _faults_report(before, after, wall, probe),
        "storage": _storage_report(source, stats, figures),
        "memory": _memory_report(before, after),
    }


def _step_report(step_ms: float, step_mode: str, figures: dict[str, Any]) -> dict[str, Any]:
    rows_per_batch = figures["rows"] / figures["batches"] if figures["batches"] else None
    needed = 1e3 / step_ms if step_ms > 0 else None
    return {"ms": step_ms, "mode": step_mode, "needed_batches_per_s": needed,
            "needed_rows_per_s": needed * rows_per_batch if needed and rows_per_batch else None,
            "seconds": figures["step_seconds"]}


def _after_first(figures: dict[str, Any]) -> float | None:
    """Seconds from the first batch to the end, when more than one batch came."""
    if figures["batches"] < 2 or figures["first_batch_seconds"] is None:
        return None
    return figures["seconds"] - figures["first_batch_seconds"]


def _rate_report(figures: dict[str, Any]) -> dict[str, Any]:
    after_first = _after_first(figures)
    return {
        "rows_per_s": figures["rows_per_s"],
        "batches_per_s": figures["batches"] / figures["seconds"],
        # Once the first batch is out: what a long run sees.
        "steady_rows_per_s": figures["steady_rows_per_s"] if after_first else None,
        "steady_batches_per_s": (figures["batches"] - 1) / after_first if after_first else None,
    }


def _consumer_report(stats: dict[str, Any], figures: dict[str, Any]) -> dict[str, Any]:
    after_first = _after_first(figures)
    waits = stats["wait_per_batch"]
    return {
        # The data stall: the share of the time from the first batch on spent waiting.
        "wait_share": figures["wait_seconds"] / after_first if after_first else None,
        "wait_seconds": figures["wait_seconds"],
        "wait_p50_ms": waits["p50"] * 1e3, "wait_p99_ms": waits["p99"] * 1e3,
        "wait_max_ms": waits["max"] * 1e3,
    }


def _stages_report(stats: dict[str, Any]) -> dict[str, Any]:
    seconds = {stage: stats[f"{stage}_seconds"] for stage in STAGES}
    total = sum(seconds.values())
    shares = {stage: value / total for stage, value in seconds.items()} if total else {}
    return {"thread_seconds": seconds, "shares": shares,
            "largest": max(seconds, key=seconds.__getitem__) if total else None}


def _cpu_report(stats: dict[str, Any], threads: list[dict[str, Any]]) -> dict[str, Any]:
    budget = _cpu.cpu_budget()  # ranks not pinned to CPUs of their own share the host's
    ranks = budget["ranks_per_node"] if budget["ranks_from"] else None
    share = budget["threads"]
    return {"budget": budget, "host_cpus": os.cpu_count(), "ranks_per_node": ranks,
            "share_per_rank": share,
            "threads": _thread_pools.pools(threads, stoker_threads=stats["threads"])}


def _pressure_report(before: dict[str, Any] | None, after: dict[str, Any] | None,
                     wall: float) -> dict[str, Any] | None:
    if before is None or after is None or wall <= 0:
        return None
    out: dict[str, Any] = {"scope": "host (/proc/pressure)"}
    for resource, totals in after.items():
        out[resource] = {
            f"{kind}_share": (total - before[resource][kind]) / (wall * 1e6)
            for kind, total in totals.items() if kind in before.get(resource, {})
        }
    return out


def _run_queue_report(threads: list[dict[str, Any]]) -> dict[str, Any]:
    by_name: dict[str, dict[str, float]] = {}
    for thread in threads:
        group = by_name.setdefault(thread["name"], {"threads": 0, "seconds": 0.0,
                                                    "run_seconds": 0.0, "wait_seconds": 0.0})
        group["threads"] += 1
        group["seconds"] += thread["seconds"]
        group["run_seconds"] += thread["run_seconds"]
        group["wait_seconds"] += thread["wait_seconds"]
    for group in by_name.values():
        group["wait_share"] = group["wait_seconds"] / group["seconds"]
    workers = [t for t in threads if t["name"] == _thread_pools.STOKER_WORKER]
    stoker = by_name.get(_thread_pools.STOKER_WORKER)
    return {
        "stoker_wait_share": stoker["wait_share"] if stoker else None,
        "stoker_max_wait_share": max((t["wait_share"] for t in workers), default=None),
        "by_name": by_name,
    }


def _faults_report(before: _HostCounters, after: _HostCounters, wall: float,
                   probe: dict[str, Any] | None) -> dict[str, Any]:
    # The probe's own touches are minor faults of this process: leave them out of the rate.
    probed = probe["touches"]["count"] if probe else 0
    minor = after.faults[0] - before.faults[0] - probed
    major = after.faults[1] - before.faults[1]
    return {"minor_per_s": max(minor, 0) / wall, "major_per_s": major / wall, "probe": probe}


def _storage_report(source: str, stats: dict[str, Any], figures: dict[str, Any]) -> dict[str, Any]:
    scheme = source.split("://", 1)[0] if "://" in source else "file"
    fetched = stats["bytes_fetched"]
    return {
        "scheme": scheme, "remote": scheme in REMOTE_SCHEMES, "bytes_fetched": fetched,
        "requests": stats["requests"], "retries": stats["retries"],
        "read_seconds": stats["read_seconds"],
        "mb_per_s": fetched / figures["seconds"] / 1e6,
        # Per request in flight: bytes over the thread-seconds spent reading.
        "mb_per_request_second": fetched / stats["read_seconds"] / 1e6
        if stats["read_seconds"] else None,
    }


def _memory_report(before: _HostCounters, after: _HostCounters) -> dict[str, Any]:
    info = _procfs.meminfo()
    thp = _procfs.transparent_huge_pages()
    return {
        "swap_total_bytes": info.get("SwapTotal", 0),
        "swap_used_bytes": info.get("SwapTotal", 0) - info.get("SwapFree", 0),
        "swapped_in_pages": after.swap[0] - before.swap[0],
        "swapped_out_pages": after.swap[1] - before.swap[1],
        "thp_enabled": thp["enabled"], "thp_defrag": thp["defrag"],
    }


def format_text(report: dict[str, Any]) -> str:
    """The report for people: one line per measurement, then the findings."""
    run, rate, step, consumer = report["run"], report["rate"], report["step"], report["consumer"]
    dataset = report["dataset"]
    lines = [
        (f"stoker doctor: {report['source']} ({dataset['files']} files, {dataset['rows']:,} "
         f"rows), {run['batches']} batches in {run['seconds']:.1f} s (stopped by "
         f"{run['stopped_by']})"),
        "",
    ]
    add = lambda label, text: lines.append(f"{label:<11}{text}")
    steady = (f"{format_count(rate['steady_rows_per_s'])} rows/s, "
              f"{rate['steady_batches_per_s']:.1f} batches/s after the first batch "
              f"({run['first_batch_seconds']:.2f} s)" if rate["steady_batches_per_s"]
              else f"{format_count(rate['rows_per_s'])} rows/s")
    add("rate", steady)
    if step["needed_batches_per_s"]:
        add("step", f"{step['ms']:g} ms per batch ({step['mode']}): needs "
                    f"{step['needed_batches_per_s']:.1f} batches/s")
    if consumer["wait_share"] is not None:
        add("consumer", f"waited {consumer['wait_share']:.0%} of the time; per batch p50 "
                        f"{format_ms(consumer['wait_p50_ms'])}, p99 "
                        f"{format_ms(consumer['wait_p99_ms'])}, max "
                        f"{format_ms(consumer['wait_max_ms'])}")
    stages = report["stages"]
    add("stages", "  ".join(
        f"{stage} {stages['thread_seconds'][stage]:.2f} s"
        + (f" ({stages['shares'][stage]:.0%})" if stages["shares"] else "")
        for stage in STAGES) + "  (thread-seconds)")
    cpu = report["cpu"]
    budget, threads = cpu["budget"], cpu["threads"]
    quota = budget["cgroup_quota"]
    add("cpu", f"budget {budget['cpus']} CPU(s) (affinity {budget['affinity']} of "
               f"{cpu['host_cpus']}, cgroup quota {'none' if quota is None else f'{quota:g}'}, "
               f"ranks per node {cpu['ranks_per_node'] or 'not set'})")
    add("threads", f"{threads['compute_threads']} want a CPU: {threads['stoker_threads']} "
                   f"stoker-worker, torch intra-op "
                   f"{'not imported' if threads['torch_intra_op'] is None else threads['torch_intra_op']}"
                   f", other busy {len(threads['other_busy'])}; {threads['threads_seen']} "
                   f"threads seen; Arrow pools {threads['arrow_cpu_pool']} CPU + "
                   f"{threads['arrow_io_pool']} I/O")
    pressure = report["pressure"]
    if pressure is None:
        add("pressure", "unknown (no /proc/pressure)")
    else:
        add("pressure", ", ".join(
            f"{resource} some {pressure[resource].get('some_share', 0):.0%}"
            for resource in _procfs.PRESSURE_RESOURCES if resource in pressure)
            + f" of the run ({pressure['scope']})")
    queue = report["run_queue"]
    if queue["stoker_wait_share"] is not None:
        add("run queue", f"stoker-worker threads waited for a CPU "
                         f"{queue['stoker_wait_share']:.0%} of their time (worst "
                         f"{queue['stoker_max_wait_share']:.0%})")
    faults = report["page_faults"]
    add("faults", f"{faults['minor_per_s']:.0f} minor/s, {faults['major_per_s']:.1f} major/s "
                  f"(the probe's own left out)")
    probe = faults["probe"]
    if probe is not None:
        touches, maps = probe["touches"], probe["maps"]
        add("probe", f"{touches['count']:,} first touches: p50 {touches['p50_us']:.1f} µs, p99 "
                     f"{touches['p99_us']:.1f} µs, max {touches['max_us'] / 1e3:.2f} ms, "
                     f"{touches['over_1ms']} over 1 ms ({touches['over_1ms_blocked']} slept)")
        add("", f"{maps['count']:,} mmap+munmap: p50 {maps['p50_us']:.1f} µs, p99 "
                f"{maps['p99_us']:.1f} µs, max {maps['max_us'] / 1e3:.2f} ms, "
                f"{maps['over_1ms']} over 1 ms ({maps['over_1ms_blocked']} slept)")
        own = queue["by_name"].get(_thread_pools.STOKER_PROBE)
        if own:
            add("", f"the probe itself ran {own['run_seconds'] / own['seconds']:.1%} of a CPU")
    storage = report["storage"]
    add("storage", f"{storage['scheme']}: {format_bytes(storage['bytes_fetched'])} in "
                   f"{storage['requests']:,} requests, {storage['mb_per_s']:.1f} MB/s")
    memory = report["memory"]
    add("memory", f"swap {format_bytes(memory['swap_used_bytes'])} used of "
                  f"{format_bytes(memory['swap_total_bytes'])}, "
                  f"{memory['swapped_in_pages'] + memory['swapped_out_pages']} pages swapped "
                  f"during the run; transparent huge pages {memory['thp_enabled']} (defrag "
                  f"{memory['thp_defrag']})")
    lines += ["", "findings:" if report["findings"] else "findings: none"]
    for finding in report["findings"]:
        lines.append(f"  [{finding['severity']}] {finding['id']}: {finding['message']}")
        lines.append(f"      -> {finding['recommendation']}")
    return "\n".join(lines)


# The command line: `stoker doctor`.
HELP = "measure an epoch and name what slows the data down"
DESCRIPTION = (
    "Run a bounded, measured epoch of the loader through a simulated training step and report "
    "the loader's rate against the step's, the stage breakdown, whether the loader or the step "
    "is the bottleneck, the CPU budget against the threads running, CPU/memory/I/O pressure, "
    "run-queue delay, page faults and their latency, storage throughput, swap and transparent "
    "huge pages, each finding with a recommendation (docs/observability.md). Exits 0 whatever "
    "it finds; 1 when the epoch itself fails.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="SOURCE")
    _flags.add_loader_options(parser)
    parser.add_argument("--step-ms", type=_flags.float_at_least(0), default=0.0,
                        help="simulated training step per batch, in ms (default 0: none)")
    parser.add_argument("--step-mode", choices=STEP_MODES, default="sleep",
                        help="sleep: the step leaves the CPU free (an accelerator's); spin: "
                             "it keeps a CPU busy (default %(default)s)")
    parser.add_argument("--seconds", type=_flags.float_at_least(0.1), default=DEFAULT_SECONDS,
                        help="stop after this many seconds (default %(default)s)")
    parser.add_argument("--batches", type=_flags.positive_int,
                        help="stop after this many batches")
    parser.add_argument("--output", choices=("numpy", "torch", "arrow"), default="numpy",
                        help="what the batches become (torch: imports torch, whose intra-op "
                             "threads then count against the budget; default %(default)s)")
    parser.add_argument("--no-probe", dest="probe", action="store_false",
                        help="do not run the page-fault probe")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    transforms = json.loads(Path(args.transforms).read_text()) if args.transforms else None
    report = measure(args.source,
                     loader_options={**_flags.loader_options(args), "output": args.output},
                     transforms=transforms, step_ms=args.step_ms, step_mode=args.step_mode,
                     seconds=args.seconds, batches=args.batches, probe=args.probe)
    print(json.dumps(report, indent=2) if args.json else format_text(report))
    return 0
