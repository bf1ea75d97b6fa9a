"""A fleet of hosts on one machine: K `stoker serve` servers and one trainer, each in its own
network namespace on a bridged veth network (stoker_devtools.netns, 10.249.0.0/24), each
pinned to its own CPUs with taskset, optionally behind tc rate limits standing in for NICs.
What several hosts would show: rows/s served to one RemoteLoader with K servers against one,
the trainer's receive CPU (its process's CPU-seconds per GB and per million rows received),
and per server its process CPU (/proc/<pid>/stat), the row groups it read and the rows it
sent (its Prometheus metrics, `stoker serve --metrics-port`). Needs root and iproute2.

    python benchmarks/fleet_netns.py DATASET [--servers 1,2,4] [--server-cpus 1]
        [--trainer-cpus 0] [--server-threads 2] [--repeats 3] [--rows 1000000]
        [--server-rate 10gbit] [--trainer-rate 25gbit] [--mtu 1500] [--loopback]
        [--out results.json]
    python benchmarks/fleet_netns.py --check    # exit 0 where namespaces can be made here

Server k runs on the k-th CPU of --server-cpus (wrapping around: with fewer CPUs than
servers, servers share cores, and the table says so: those rows are the logical figures —
what each server read and sent, not what K hosts would deliver). Every trainer epoch runs in
a fresh process in the trainer's namespace; the K cases alternate, medians of --repeats, after
one untimed epoch from every server. --loopback adds K = 1 with the server and the trainer in
the machine's own namespace on the same CPUs (127.0.0.1: what the network namespaces cost). A DATASET directory with no Parquet files in it is first
filled with --rows rows of the criteo preset in 4 files, row groups of 16,384 rows. Where namespaces cannot be made (not
root, no `ip`, a container that refuses them) it says why, writes that to --out, and exits 0.
Namespaces left by a run that was killed are deleted at the start; its own are deleted however
it ends.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from stoker_devtools.bench import emit, interleaved, median_of, run_json, write_json
from stoker_devtools.netns import Network, available, clean_stale

BATCH = 4096
ROW_GROUP = 16_384  # a generated dataset's: a unit of reading, counted per server
PORT, METRICS_PORT = 8815, 9108
TICKS = os.sysconf("SC_CLK_TCK")
# Server metrics read before and after each epoch (samples summed over their labels).
METRICS = {"units_read": "stoker_units_read_total",
           "decode_seconds": "stoker_decode_seconds_total",
           "rows_sent": "stoker_serve_rows_sent_total",
           "bytes_sent": "stoker_serve_bytes_sent_total"}


def cpus_of(spec: str) -> list[str]:
    """'1,3-5' -> ['1', '3', '4', '5']."""
    out = []
    for part in spec.split(","):
        first, _, last = part.partition("-")
        out += [str(c) for c in range(int(first), int(last or first) + 1)]
    return out


def process_cpu(pid: int) -> float:
    """CPU-seconds (user + system) of a live process, all its threads, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime: fields 14, 15


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def scrape(url: str) -> dict[str, float]:
    """The METRICS of one server's /metrics page."""
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    values = dict.fromkeys(METRICS, 0.0)
    names = {name: key for key, name in METRICS.items()}
    for line in text.splitlines():
        match = re.match(r"^([a-z_]+)(\{[^}]*\})?\s+(\S+)", line)
        if match and match.group(1) in names:
            values[names[match.group(1)]] += float(match.group(3))
    return values


def server_state(pids: list[int], urls: list[str]) -> list[dict[str, float]]:
    return [{"cpu_seconds": process_cpu(pid), **scrape(url)} for pid, url in zip(pids, urls)]


def trainer_epoch(locations: list[str], pids: list[int], urls: list[str]) -> dict[str, Any]:
    """One epoch from the servers at `locations` (a trainer process of its own), with the
    servers' CPU and metrics before and after."""
    import stoker

    loader = stoker.RemoteLoader(locations, batch_size=BATCH)
    before = server_state(pids, urls)
    started, cpu_started = time.perf_counter(), own_cpu()
    rows = batches = 0
    for batch in loader:
        rows += len(batch["label"])
        batches += 1
    seconds, cpu = time.perf_counter() - started, own_cpu() - cpu_started
    after = server_state(pids, urls)
    received = loader.stats()["bytes_received"]
    servers = [{key: b[key] - a[key] for key in a} for a, b in zip(before, after)]
    return {"rows": rows, "batches": batches, "seconds": seconds, "rows_per_s": rows / seconds,
            "gb_per_s": received / seconds / 1e9, "bytes_received": received,
            "trainer_cpu_seconds": cpu, "trainer_cpu_per_gb": cpu / (received / 1e9),
            "trainer_cpu_per_m_rows": cpu / rows * 1e6, "servers": servers}


def dataset_units(source: str) -> tuple[int, int]:
    """(rows, row groups) of the Parquet files under `source`."""
    import pyarrow.parquet as pq

    rows = units = 0
    for path in sorted(Path(source).rglob("*.parquet")):
        meta = pq.ParquetFile(path).metadata
        rows, units = rows + meta.num_rows, units + meta.num_row_groups
    return rows, units


class Fleet:
    """The namespaces and the servers in them; stopped and deleted by close()."""

    def __init__(self, args: argparse.Namespace, count: int) -> None:
        self.servers = [f"s{k}" for k in range(count)]
        cpus = cpus_of(args.server_cpus)
        self.cpus = [cpus[k % len(cpus)] for k in range(count)]
        self.net = Network(
            ["trainer", *self.servers],
            send_rate=dict.fromkeys(self.servers, args.server_rate) if args.server_rate else {},
            receive_rate={"trainer": args.trainer_rate} if args.trainer_rate else {},
            mtu=args.mtu)
        self.processes: list[subprocess.Popen] = []
        self.logs: list[Any] = []
        self.addresses: list[tuple[str, str]] = []  # (Flight location, metrics URL) each
        self._files = contextlib.ExitStack()
        self.net.open()
        try:
            self._start(args)
        except BaseException:
            self.close()
            raise

    def _start(self, args: argparse.Namespace) -> None:
        commands = [[*self.net.run_in(host, cpu), *self._serve(args, self.net.address(host),
                                                                 PORT, METRICS_PORT)]
                    for host, cpu in zip(self.servers, self.cpus)]
        if args.loopback:  # the machine's own namespace, on the first server's CPU
            commands.append(["taskset", "-c", self.cpus[0],
                             *self._serve(args, "127.0.0.1", 0, 0)])
        for command in commands:  # all started, then all waited for
            log = self._files.enter_context(tempfile.TemporaryFile(mode="w+"))  # noqa: SIM115
            self.logs.append(log)
            self.processes.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log,
                                                   text=True))
        for process, log in zip(self.processes, self.logs):
            lines = [process.stdout.readline() for _ in range(2)]  # listening, metrics
            found = [re.search(r"(?:listening|metrics) on (\S+)", line) for line in lines]
            if not all(found):
                log.seek(0)
                raise RuntimeError(f"a server did not start: {lines}\n{log.read()[-3000:]}")
            comm = Path(f"/proc/{process.pid}/comm").read_text().strip()
            assert comm.startswith("python"), f"pid {process.pid} is {comm}, not the server"
            self.addresses.append((found[0].group(1), found[1].group(1)))

    @staticmethod
    def _serve(args: argparse.Namespace, host: str, port: int, metrics: int) -> list[str]:
        return [sys.executable, "-m", "stoker", "serve", args.source, "--host", host,
                "--port", str(port), "--metrics-port", str(metrics), "--batch-size", str(BATCH),
                "--num-threads", str(args.server_threads), "--chunk-batches", "16"]

    def epoch(self, k: int, trainer_cpus: str, loopback: bool = False) -> dict[str, Any]:
        """One trainer epoch from the first k servers, in a fresh process on the trainer (with
        `loopback`, from the server in the machine's own namespace, the trainer there too)."""
        chosen = [len(self.servers)] if loopback else list(range(k))
        where = ["taskset", "-c", trainer_cpus] if loopback else self.net.run_in(
            "trainer", trainer_cpus)
        return run_json(
            [*where, sys.executable, __file__, "--one",
             *[f"--location={self.addresses[i][0]}" for i in chosen],
             *[f"--metrics={self.addresses[i][1]}" for i in chosen],
             *[f"--pid={self.processes[i].pid}" for i in chosen]])

    def close(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._files.close()
        self.net.close()


def cores_label(fleet: Fleet, k: int, trainer_cpus: list[str]) -> str:
    cpus = fleet.cpus[:k]
    if len(set(cpus)) == k and not set(cpus) & set(trainer_cpus):
        return f"own cores (CPU {','.join(cpus)})"
    return f"shared: {k} servers on CPU {','.join(sorted(set(cpus), key=int))}"


def summary(runs: list[dict[str, Any]], units: int, label: str) -> dict[str, Any]:
    keys = ["rows_per_s", "gb_per_s", "seconds", "trainer_cpu_seconds", "trainer_cpu_per_gb",
            "trainer_cpu_per_m_rows"]
    servers = [{key: median_of([run["servers"][s] for run in runs], key)
                for key in runs[0]["servers"][s]} for s in range(len(runs[0]["servers"]))]
    return {"cores": label, **{key: median_of(runs, key) for key in keys},
            "rows": runs[0]["rows"], "servers": servers,
            "units_read_over_dataset": sum(s["units_read"] for s in servers) / units,
            "server_cpu_seconds": sum(s["cpu_seconds"] for s in servers),
            "server_decode_seconds": sum(s["decode_seconds"] for s in servers), "runs": runs}


def report(cases: dict[str, dict[str, Any]], units: int) -> None:
    one = cases["1"]["rows_per_s"] if "1" in cases else next(iter(cases.values()))["rows_per_s"]
    print(f"{'K':>10} {'cores':<28} {'M rows/s':>9} {'x K=1':>6} {'GB/s':>6} "
          f"{'trainer CPU s/GB':>17} {'s/M rows':>9} {'server CPU s':>13} "
          f"{'units read per server':>24} {'M rows sent per server':>24}")
    for k, case in cases.items():
        units_each = ",".join(f"{s['units_read']:.0f}" for s in case["servers"])
        rows_each = ",".join(f"{s['rows_sent'] / 1e6:.2f}" for s in case["servers"])
        print(f"{k:>10} {case['cores']:<28} {case['rows_per_s'] / 1e6:>9.2f} "
              f"{case['rows_per_s'] / one:>6.2f} {case['gb_per_s']:>6.2f} "
              f"{case['trainer_cpu_per_gb']:>17.3f} {case['trainer_cpu_per_m_rows']:>9.3f} "
              f"{case['server_cpu_seconds']:>13.2f} {units_each:>24} {rows_each:>24}")
    print(f"(units: row groups; the dataset has {units} per epoch)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?")
    parser.add_argument("--servers", default="1,2,4", help="the K to measure (default 1,2,4)")
    parser.add_argument("--server-cpus", default="1", help="server k on the k-th (wrapping)")
    parser.add_argument("--trainer-cpus", default="0")
    parser.add_argument("--server-threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--server-rate", help="tc rate on each server's link out (e.g. 10gbit)")
    parser.add_argument("--trainer-rate", help="tc rate on the trainer's link in")
    parser.add_argument("--loopback", action="store_true",
                        help="also K = 1 with server and trainer in this machine's namespace")
    parser.add_argument("--mtu", type=int, default=1500, help="every link's MTU (default 1500)")
    parser.add_argument("--out", help="also write the results here as JSON")
    parser.add_argument("--check", action="store_true",
                        help="only say whether namespaces can be made here (exit 0 if so)")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--location", action="append", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--metrics", action="append", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--pid", type=int, action="append", default=[], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        emit(trainer_epoch(args.location, args.pid, args.metrics))
        return
    reason = available()
    if args.check:
        print(reason or "network namespaces: available")
        sys.exit(0 if reason is None else 1)
    if args.source is None:
        parser.error("DATASET is required")
    if reason is not None:
        print(f"skipped: {reason}")
        if args.out:
            write_json(args.out, {"skipped": reason})
        return
    stale = clean_stale()
    if stale:
        print(f"deleted namespaces left by a run that was killed: {', '.join(stale)}")
    if not any(Path(args.source).glob("*.parquet")):
        from stoker.cli import gen as _gen

        _gen.generate(Path(args.source), _gen.GenOptions(
            preset="criteo", rows=args.rows, files=4, row_group_size=ROW_GROUP), progress=False)
    rows, units = dataset_units(args.source)
    ks = sorted({int(k) for k in args.servers.split(",")})
    # SIGTERM (a timeout's) unwinds like Ctrl-C, so the servers and namespaces go.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load_before = os.getloadavg()
    fleet = Fleet(args, max(ks))
    try:
        fleet.epoch(max(ks), args.trainer_cpus)  # untimed: the page cache, every server
        plan = {str(k): lambda _, k=k: fleet.epoch(k, args.trainer_cpus) for k in ks}
        if args.loopback:
            plan["1 loopback"] = lambda _: fleet.epoch(1, args.trainer_cpus, loopback=True)
        runs = interleaved(plan, args.repeats)
    finally:
        fleet.close()
    trainer = cpus_of(args.trainer_cpus)
    labels = {str(k): cores_label(fleet, k, trainer) for k in ks}
    labels["1 loopback"] = f"no namespaces (CPU {fleet.cpus[0]})"
    cases = {name: summary(results, units, labels[name]) for name, results in runs.items()}
    report(cases, units)
    meta = {"dataset_rows": rows, "dataset_units": units, "batch_size": BATCH,
            "chunk_batches": 16, "server_threads": args.server_threads,
            "server_cpus": fleet.cpus, "trainer_cpus": args.trainer_cpus,
            "server_rate": args.server_rate, "trainer_rate": args.trainer_rate, "mtu": args.mtu,
            "repeats": args.repeats, "cpus": os.cpu_count(),
            "load_before": load_before, "load_after": os.getloadavg()}
    print(f"(criteo, {rows:,} rows; {args.server_threads} threads per server; each host its "
          f"own network namespace, MTU {args.mtu}; medians of {args.repeats}; load average "
          f"{load_before[0]:.2f} before, {meta['load_after'][0]:.2f} after)")
    if args.out:
        write_json(args.out, {"meta": meta, "cases": cases}, indent=1)


if __name__ == "__main__":
    main()
