"""`stoker doctor`'s findings: what a measured run's figures mean and what to do about them.

Each rule reads the report `_doctor.measure` assembled and may add a finding: a stable
``id``, a ``severity`` ("warn": acting on it should speed the job up; "info": context), what
was seen (``message``) and what to do (``recommendation``). The ids and thresholds are
documented in docs/observability.md ("stoker doctor").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stoker.cli.console import format_count, format_ms

# The consumer waited more than this share of the time from the first batch on: data is the
# bottleneck.
STALL_SHARE = 0.10
# The probe's page faults, and its mmap/munmap rounds, that slept over 1 ms, as a share of
# them: a loader's own allocations take the memory-map lock for writing now and then (about
# 0.1-0.4% of the rounds slept over 1 ms in runs on a 2-core host), a /proc/PID/smaps reader
# makes it several percent (docs/observability.md).
BLOCKED_FAULT_SHARE = 0.001
BLOCKED_MAP_SHARE = 0.01
# Threads that want a CPU at once over the CPUs the process may use.
OVERSUBSCRIBED_RATIO = 1.5
# Share of the run some task was stalled on the resource (PSI "some").
PRESSURE_SHARE = {"cpu": 0.10, "memory": 0.05, "io": 0.10}
# Share of their time Stoker's workers waited runnable for a CPU.
RUN_QUEUE_SHARE = 0.10
# Major page faults per second (each one a read from disk).
MAJOR_FAULTS_PER_S = 10.0
# Storage-bound: reading took this share of the stage thread-seconds.
READ_BOUND_SHARE = 0.5

Finding = dict[str, str]
Rule = Callable[[dict[str, Any]], list[Finding]]

STAGE_ADVICE = {
    "read": "reading dominates: use a warm disk cache (cache_dir=) so later epochs skip it, "
            "and for remote storage raise io_threads in storage_options",
    "decode": "decoding dominates: give the loader more threads within the CPU budget, read "
              "fewer columns (columns=), or cache decoded row groups (cache_dir=)",
    "transform": "transforms dominate: cache their output (cache_dir=; the cache stores "
                 "transformed rows) or drop the costliest ops",
    "assemble": "gathering rows into batches dominates: give the loader more threads within "
                "the budget, or read fewer columns",
}


def diagnose(report: dict[str, Any]) -> list[Finding]:
    """The findings of `report`, warnings first, in rule order."""
    findings = [finding for rule in RULES for finding in rule(report)]
    return sorted(findings, key=lambda finding: finding["severity"] != "warn")


def _finding(id_: str, severity: str, message: str, recommendation: str) -> Finding:
    return {"id": id_, "severity": severity, "message": message,
            "recommendation": recommendation}


def _bottleneck(report: dict[str, Any]) -> list[Finding]:
    consumer = report["consumer"]
    share = consumer["wait_share"]
    if share is None:
        return []
    stages = report["stages"]
    top = stages["largest"]
    step, rate = report["step"], report["rate"]
    if not step["ms"]:
        # With no step the consumer does nothing but wait: its wait share says nothing about
        # a real training loop, only the rate does.
        delivered = ""
        if rate["steady_batches_per_s"]:
            delivered = (f" {rate['steady_batches_per_s']:.1f} batches/s "
                         f"({format_count(rate['steady_rows_per_s'])} rows/s)")
        return [_finding(
            "no_step", "info",
            f"no training step was simulated (--step-ms 0): the loader delivered{delivered or ' its batches'} "
            f"to a consumer that only waited, so whether data is the bottleneck is not known; "
            f"its largest stage is {top or 'not known'}",
            "pass --step-ms with your training step's time (e.g. from your trainer's log) to "
            "learn whether this rate keeps the step fed")]
    if share > STALL_SHARE:
        advice = STAGE_ADVICE[top] if top else "measure a longer run"
        against = ""
        if step["needed_batches_per_s"] and rate["steady_batches_per_s"]:
            against = (f"; it delivered {rate['steady_batches_per_s']:.1f} batches/s "
                       f"({format_count(rate['steady_rows_per_s'])} rows/s), a {step['ms']:g} "
                       f"ms step needs {step['needed_batches_per_s']:.1f}")
        return [_finding(
            "loader_bottleneck", "warn",
            f"the consumer waited {share:.0%} of the time for its next batch (per batch p50 "
            f"{format_ms(consumer['wait_p50_ms'])}, max {format_ms(consumer['wait_max_ms'])}): the "
            f"loader is the bottleneck{against}",
            advice)]
    return [_finding(
        "consumer_bottleneck", "info",
        f"the consumer waited only {share:.0%} of the time for batches: the training step, not "
        f"the loader, sets the pace",
        "nothing to gain in the loader at this step time; if the step should be faster, look "
        "at the model and the accelerator")]


def _oversubscription(report: dict[str, Any]) -> list[Finding]:
    cpu = report["cpu"]
    threads, cpus = cpu["threads"], cpu["share_per_rank"]
    compute = threads["compute_threads"]
    if compute <= OVERSUBSCRIBED_RATIO * cpus:
        return []
    parts = [f"{threads['stoker_threads']} Stoker workers"]
    if threads["torch_intra_op"]:
        parts.append(f"{threads['torch_intra_op']} torch intra-op threads")
    if threads["other_busy"]:
        parts.append(f"{len(threads['other_busy'])} other busy threads")
    others = compute - threads["stoker_threads"]
    suggested = max(1, cpus - others)
    return [_finding(
        "oversubscription", "warn",
        f"{compute} threads want a CPU at once ({', '.join(parts)}) but this process may use "
        f"{cpus} CPU{'s' if cpus != 1 else ''} ({_budget_text(cpu)}): they take turns and "
        f"each waits",
        f"set num_threads={suggested} (at most the CPUs left after the other pools)"
        + ("; set torch.set_num_threads() and OMP_NUM_THREADS to the CPUs per rank"
           if threads["torch_intra_op"] else ""))]


def _budget_text(cpu: dict[str, Any]) -> str:
    budget = cpu["budget"]
    quota = budget["cgroup_quota"]
    text = f"affinity {budget['affinity']}, cgroup quota {'none' if quota is None else f'{quota:g}'}"
    if cpu["ranks_per_node"]:
        text += f", {cpu['ranks_per_node']} ranks per node"
    return text


def _pressure(report: dict[str, Any]) -> list[Finding]:
    pressure = report["pressure"]
    if pressure is None:
        return [_finding(
            "psi_unavailable", "info",
            "this kernel has no pressure stall information (/proc/pressure is missing)",
            "boot with psi=1 (CONFIG_PSI) to see CPU, memory and I/O pressure")]
    advice = {
        "cpu": "other work competes for the CPUs: pin the job to its own cores (taskset, "
               "cgroup cpusets) or lower the thread counts",
        "memory": "the host reclaims memory: lower shuffle_window and prefetch, or give the "
                  "job more memory",
        "io": "tasks wait on I/O: warm the disk cache, move it to faster storage, or read "
              "fewer columns",
    }
    out = []
    for resource, threshold in PRESSURE_SHARE.items():
        share = pressure.get(resource, {}).get("some_share")
        if share is not None and share > threshold:
            out.append(_finding(
                f"{resource}_pressure", "warn",
                f"{resource} pressure: some task was stalled on {resource} {share:.0%} of the "
                f"run ({pressure['scope']})",
                advice[resource]))
    return out


def _run_queue(report: dict[str, Any]) -> list[Finding]:
    queue = report["run_queue"]
    share = queue["stoker_wait_share"]
    if share is None or share <= RUN_QUEUE_SHARE:
        return []
    oversubscribed = (report["cpu"]["threads"]["compute_threads"]
                      > OVERSUBSCRIBED_RATIO * report["cpu"]["share_per_rank"])
    return [_finding(
        "run_queue_delay", "warn",
        f"Stoker's workers waited for a CPU {share:.0%} of their time (run-queue delay; the "
        f"worst thread {queue['stoker_max_wait_share']:.0%})",
        "this process has more threads than CPUs: lower num_threads" if oversubscribed
        else "other processes run on these CPUs: give the job its own cores (taskset, cgroup "
             "cpusets) or move the competitor")]


def _page_faults(report: dict[str, Any]) -> list[Finding]:
    faults = report["page_faults"]
    out = []
    probe = faults["probe"]
    if probe is not None and probe["maps"]["count"]:
        touches, maps = probe["touches"], probe["maps"]
        if (touches["over_1ms_blocked"] > BLOCKED_FAULT_SHARE * touches["count"]
                or maps["over_1ms_blocked"] > BLOCKED_MAP_SHARE * maps["count"]):
            out.append(_finding(
                "page_fault_stalls", "warn",
                f"{touches['over_1ms_blocked']} of {touches['count']:,} page faults and "
                f"{maps['over_1ms_blocked']} of {maps['count']:,} mmap+munmap calls of the "
                f"probe slept over 1 ms (faults p99 {touches['p99_us']:.1f} µs, max "
                f"{touches['max_us'] / 1e3:.1f} ms; mmap+munmap p99 "
                f"{maps['p99_us'] / 1e3:.1f} ms, max {maps['max_us'] / 1e3:.1f} ms): "
                f"something holds this process's memory-map lock",
                "look for processes reading /proc/<pid>/smaps, /proc/<pid>/maps or numa_maps "
                "of the trainer (monitoring agents, profilers, `ps`-like tools) and slow them "
                "down or point them at smaps_rollup"))
    if faults["major_per_s"] > MAJOR_FAULTS_PER_S:
        out.append(_finding(
            "major_faults", "warn",
            f"{faults['major_per_s']:.0f} major page faults/s: pages are read back from disk",
            "memory-mapped data (the disk cache) is evicted from the page cache, or the process "
            "swaps: leave more memory free or lower shuffle_window and prefetch"))
    return out


def _memory(report: dict[str, Any]) -> list[Finding]:
    memory = report["memory"]
    out = []
    swapped = memory["swapped_in_pages"] + memory["swapped_out_pages"]
    if swapped:
        out.append(_finding(
            "swapping", "warn",
            f"the host swapped {memory['swapped_in_pages']} pages in and "
            f"{memory['swapped_out_pages']} out during the run",
            "memory is short: lower shuffle_window and prefetch, or give the job more memory"))
    if memory["thp_enabled"] == "always" and memory["thp_defrag"] == "always":
        out.append(_finding(
            "thp_defrag_always", "warn",
            "transparent huge pages are on for every mapping with synchronous defragmentation "
            "(enabled=always, defrag=always): a page fault may stall while the kernel "
            "compacts memory",
            "set /sys/kernel/mm/transparent_hugepage/defrag to defer+madvise or madvise"))
    return out


def _storage(report: dict[str, Any]) -> list[Finding]:
    storage = report["storage"]
    if not storage["remote"] or report["stages"]["shares"].get("read", 0) < READ_BOUND_SHARE:
        return []
    return [_finding(
        "storage_bound", "warn",
        f"reading from {storage['scheme']} took {report['stages']['shares']['read']:.0%} of "
        f"the stage time at {storage['mb_per_s']:.1f} MB/s "
        f"({storage['mb_per_request_second']:.1f} MB/s per request in flight)",
        "raise io_threads in storage_options, use a disk cache (cache_dir=), or serve the "
        "data from hosts nearer the store (stoker serve)")]


RULES: tuple[Rule, ...] = (_bottleneck, _oversubscription, _pressure, _run_queue,
                           _page_faults, _memory, _storage)
