"""`stoker doctor`: each finding provoked for real in a child process (thread oversubscription,
a slow consumer and a slow loader, a competitor burning the same CPU, a /proc/PID/smaps
reader) and named, and absent from a clean run where a 2-core machine keeps that stable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from stoker.cli import diagnosis as _diagnosis
from stoker.cli import gen as _gen
from stoker.cli import procfs as _procfs

CRITEO_DENSE = [f"I{i}" for i in range(1, 14)]
CRITEO_SPARSE = [f"C{i}" for i in range(1, 27)]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Enough rows (1,000,000 in 40 row groups, 110 MB) for runs of a few seconds."""
    out = tmp_path_factory.mktemp("doctor")
    _gen.generate(out, _gen.GenOptions(preset="criteo", rows=1_000_000, files=2,
                                       row_group_size=25_000), progress=False)
    return out


def run_doctor(dataset: Path, *args: str, taskset: str | None = None,
               script: str | None = None, text: bool = False,
               env: dict[str, str] | None = None) -> dict | str:
    """`stoker doctor DATASET --batch-size 1024 ARGS --json` in a child process (pinned with
    `taskset -c CPUS`, or run by `script`, which receives the argv in sys.argv[1:]; in `env`
    when given); its report, or its text output when `text`."""
    argv = ["doctor", str(dataset), "--batch-size", "1024", *args] + ([] if text else ["--json"])
    command = [sys.executable, "-c", script, *argv] if script else [
        sys.executable, "-m", "stoker", *argv]
    if taskset is not None:
        command = ["taskset", "-c", taskset, *command]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout if text else json.loads(done.stdout)


def ids(report: dict) -> set[str]:
    return {finding["id"] for finding in report["findings"]}


def test_report_schema_and_bounds(dataset):
    report = run_doctor(dataset, "--batches", "20", "--step-ms", "1")
    assert report["schema_version"] == 1
    assert report["run"]["batches"] == 20 and report["run"]["rows"] == 20 * 1024
    assert report["run"]["stopped_by"] == "max_batches"
    assert report["step"]["needed_batches_per_s"] == pytest.approx(1000)
    assert set(report["stages"]["thread_seconds"]) == {"read", "decode", "transform",
                                                       "assemble"}
    assert report["cpu"]["budget"]["affinity"] == len(os.sched_getaffinity(0))
    assert report["cpu"]["threads"]["stoker_threads"] >= 1
    probe = report["page_faults"]["probe"]
    assert probe["touches"]["count"] > 0 and probe["maps"]["count"] > 0
    assert 0 < probe["touches"]["p50_us"] <= probe["touches"]["p99_us"] <= probe["touches"][
        "max_us"]
    memory = report["memory"]
    assert memory["swap_total_bytes"] == _procfs.meminfo().get("SwapTotal", 0)
    assert memory["thp_enabled"] == _procfs.transparent_huge_pages()["enabled"]
    for finding in report["findings"]:
        assert finding["severity"] in ("warn", "info")
        assert finding["message"] and finding["recommendation"]


def test_text_report_names_each_measurement(dataset):
    text = run_doctor(dataset, "--batches", "10", text=True)
    labels = [line.split()[0] for line in text.splitlines()[2:] if line and line[0] != " "]
    for label in ("rate", "consumer", "stages", "cpu", "threads", "pressure", "faults", "probe",
                  "storage", "memory", "findings:"):
        assert label in labels, text


def test_the_seconds_bound_stops_the_epoch(dataset):
    report = run_doctor(dataset, "--seconds", "0.5", "--step-ms", "20")
    assert report["run"]["stopped_by"] == "max_seconds"
    assert 0.5 <= report["run"]["seconds"] < 5


def test_oversubscription_is_named(dataset):
    pinned = run_doctor(dataset, "--num-threads", "32", "--seconds", "2", taskset="0")
    assert pinned["cpu"]["budget"]["cpus"] == 1
    assert pinned["cpu"]["threads"]["stoker_threads"] == 32
    assert "oversubscription" in ids(pinned)
    finding = next(f for f in pinned["findings"] if f["id"] == "oversubscription")
    assert "num_threads=1" in finding["recommendation"]

    clean = run_doctor(dataset, "--num-threads", "1", "--seconds", "2")
    assert "oversubscription" not in ids(clean)


def test_torch_intra_op_threads_count_against_the_budget(dataset):
    # A trainer that set 8 intra-op threads runs the doctor in its process.
    script = ("import sys, torch\ntorch.set_num_threads(8)\nfrom stoker import cli\n"
              "sys.exit(cli.main(sys.argv[1:]))")
    env = {**os.environ, "OMP_NUM_THREADS": "8"}
    report = run_doctor(dataset, "--output", "torch", "--num-threads", "1", "--batches", "30",
                        script=script, env=env)
    threads = report["cpu"]["threads"]
    assert threads["torch_intra_op"] == 8 and threads["env"]["OMP_NUM_THREADS"] == "8"
    finding = next(f for f in report["findings"] if f["id"] == "oversubscription")
    assert "8 torch intra-op threads" in finding["message"]
    assert "torch.set_num_threads" in finding["recommendation"]


def test_ranks_on_one_host_share_its_cpus(dataset):
    # Four ranks on this host, none pinned: each has a quarter of its CPUs (at least one).
    env = {**os.environ, "LOCAL_WORLD_SIZE": "4"}
    report = run_doctor(dataset, "--num-threads", "2", "--batches", "30", env=env)
    cpu = report["cpu"]
    assert cpu["ranks_per_node"] == 4
    assert cpu["share_per_rank"] == max(1, cpu["budget"]["cpus"] // 4)
    if cpu["share_per_rank"] == 1 and cpu["budget"]["affinity"] == os.cpu_count():
        finding = next(f for f in report["findings"] if f["id"] == "oversubscription")
        assert "4 ranks per node" in finding["message"]


def test_a_slow_consumer_is_named_not_the_loader(dataset):
    report = run_doctor(dataset, "--step-ms", "40", "--batches", "25")
    assert report["consumer"]["wait_share"] < _diagnosis.STALL_SHARE
    assert "consumer_bottleneck" in ids(report)
    assert "loader_bottleneck" not in ids(report)


def test_a_slow_loader_is_named_with_its_slowest_stage(dataset, tmp_path):
    # One worker on one CPU, transforms to run, and a step of 0.1 ms (a sleep): the loader
    # sets the pace.
    transforms = tmp_path / "transforms.json"
    transforms.write_text(json.dumps([
        *({"op": "log1p", "column": c} for c in CRITEO_DENSE),
        *({"op": "standardize", "column": c, "mean": 1.0, "std": 2.0} for c in CRITEO_DENSE),
        *({"op": "hash", "column": c, "num_buckets": 1000} for c in CRITEO_SPARSE),
    ]))
    report = run_doctor(dataset, "--step-ms", "0.1", "--num-threads", "1", "--seconds", "3",
                        "--transforms", str(transforms), taskset="0")
    assert report["consumer"]["wait_share"] > _diagnosis.STALL_SHARE
    assert "loader_bottleneck" in ids(report)
    assert "consumer_bottleneck" not in ids(report)
    assert report["stages"]["thread_seconds"]["transform"] > 0
    finding = next(f for f in report["findings"] if f["id"] == "loader_bottleneck")
    assert finding["recommendation"] == _diagnosis.STAGE_ADVICE[report["stages"]["largest"]]


def test_without_a_step_no_bottleneck_is_claimed(dataset):
    # A consumer that only waits always waits most of the time: that says nothing about a
    # training loop, so neither side is named; the rate and the largest stage are.
    report = run_doctor(dataset, "--batches", "20")
    assert report["step"]["ms"] == 0
    assert report["consumer"]["wait_share"] is not None
    assert "loader_bottleneck" not in ids(report)
    assert "consumer_bottleneck" not in ids(report)
    finding = next(f for f in report["findings"] if f["id"] == "no_step")
    assert finding["severity"] == "info"
    assert "--step-ms" in finding["recommendation"]
    assert report["stages"]["largest"] in finding["message"]


def test_a_column_numpy_cannot_hold_is_one_line_not_a_traceback(tmp_path):
    pq.write_table(pa.table({"x": [1.0, None, 3.0], "s": ["a", "b", "c"]}),
                   tmp_path / "p.parquet")
    done = subprocess.run([sys.executable, "-m", "stoker", "doctor", str(tmp_path),
                           "--batch-size", "2"], check=False, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("stoker doctor: error: ")
    assert "output=\"arrow\"" in done.stderr or "null" in done.stderr


def burner(cpu: str) -> subprocess.Popen:
    """A process spinning on `cpu`."""
    return subprocess.Popen(["taskset", "-c", cpu, sys.executable, "-c", "while True: pass"])


def test_a_competitor_on_the_same_cpu_is_named(dataset):
    alone = run_doctor(dataset, "--num-threads", "1", "--seconds", "2", taskset="0")
    competitor = burner("0")
    try:
        shared = run_doctor(dataset, "--num-threads", "1", "--seconds", "2", taskset="0")
    finally:
        competitor.kill()
        competitor.wait()
    assert "run_queue_delay" in ids(shared)
    assert "cpu_pressure" in ids(shared)
    # A spinning competitor on the same CPU takes about half of it.
    assert shared["run_queue"]["stoker_wait_share"] > 0.25
    assert shared["run_queue"]["stoker_wait_share"] > alone["run_queue"]["stoker_wait_share"]
    recommendation = next(f["recommendation"] for f in shared["findings"]
                          if f["id"] == "run_queue_delay")
    assert "other processes" in recommendation


# Makes MAPPINGS mappings in this process (alternate protections keep the kernel from
# merging them), starts READERS processes reading its /proc/PID/smaps in a tight loop, then
# runs the CLI with sys.argv[1:].
SMAPS_SCRIPT = textwrap.dedent("""
    import mmap, os, subprocess, sys
    from stoker import cli
    mappings, readers = MAPPINGS, READERS
    keep = [mmap.mmap(-1, 8192, prot=mmap.PROT_READ | (mmap.PROT_WRITE if i % 2 else 0))
            for i in range(mappings)]
    loop = f"while True:\\n    open('/proc/{os.getpid()}/smaps', 'rb').read()"
    procs = [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(readers)]
    try:
        code = cli.main(sys.argv[1:])
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    sys.exit(code)
""")


def smaps_run(dataset: Path, readers: int) -> dict:
    script = SMAPS_SCRIPT.replace("MAPPINGS", "10_000").replace("READERS", str(readers))
    return run_doctor(dataset, "--step-ms", "5", "--seconds", "4", script=script)


def test_a_smaps_reader_stalls_the_memory_map_lock(dataset):
    # On this kernel (6.x, per-VMA locks) page faults no longer take the memory-map lock, so
    # the probe's faults stay fast; its mmap/munmap calls take it for writing and sleep
    # behind the reader (docs/observability.md has the figures).
    clean = smaps_run(dataset, readers=0)
    read = smaps_run(dataset, readers=1)
    assert "page_fault_stalls" in ids(read)
    maps = read["page_faults"]["probe"]["maps"]
    assert maps["over_1ms_blocked"] > _diagnosis.BLOCKED_MAP_SHARE * maps["count"]
    assert "page_fault_stalls" not in ids(clean)


def test_a_kernel_without_psi_is_said(tmp_path):
    assert _procfs.pressure(tmp_path) is None
    assert [f["id"] for f in _diagnosis._pressure({"pressure": None})] == ["psi_unavailable"]


def test_pressure_reads_the_totals():
    pressure = _procfs.pressure()
    if pressure is None:
        pytest.skip("this kernel has no /proc/pressure")
    assert pressure["cpu"]["some"] >= 0


def test_thread_census_groups_numbered_threads():
    census = _procfs.thread_census({1: "python", 2: "pool-1", 3: "pool-2", 4: "stoker-worker"})
    assert census == {"pool": 2, "python": 1, "stoker-worker": 1}


def test_doctor_fails_when_the_epoch_fails(tmp_path):
    done = subprocess.run([sys.executable, "-m", "stoker", "doctor", str(tmp_path / "missing"),
                           "--batch-size", "8"], check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "missing" in done.stderr
