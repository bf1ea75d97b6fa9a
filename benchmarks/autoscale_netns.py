"""The autoscaler's growth, shown on one machine: a trainer reading local first
(`RemoteLoader(fleet, local=True)`) at a fixed step rate its own core cannot feed, and a fleet
that starts with no server and grows by the same policy a `stoker.ray.Fleet` runs
(`stoker.ray._autoscale.Autoscaler`) — each server `stoker serve` in a network namespace of
its own behind a `tc` rate (a NIC standing in), so that one server cannot remove the stall
and two can.

    python benchmarks/autoscale_netns.py DATASET [--seconds 40] [--step-ms 2.0]
        [--server-rate 600mbit] [--max-servers 2] [--trainer-cpus 0] [--server-cpus 1]
        [--rows 2000000] [--out results.json]

The trainer (its own namespace, pinned to --trainer-cpus) takes a batch of 4,096 rows every
--step-ms (a sleep: the accelerator's step), for --seconds; each window of the split
controller reports its stall to the fleet object here, which asks the Autoscaler (target
stall 0.02, interval 3 s) for the number of servers and starts the next server's process
when it says grow (it joins once it listens). Printed: the fleet's history, and per phase
(0, 1, 2 servers) the windows' median stall and rows/s. Needs root and iproute2 (says why and
exits 0 without them), as benchmarks/fleet_netns.py.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from stoker_devtools import netns
from stoker_devtools.bench import emit, run_json, write_json

BATCH = 4096
PORT = 7800


class NamespaceFleet:
    """What RemoteLoader reads as a fleet (addresses, recipe, report), its servers
    `stoker serve` processes started in their namespaces when the autoscaler says grow."""

    def __init__(self, source: str, commands: list[list[str]], locations: list[str],
                 autoscale: dict[str, Any]) -> None:
        from stoker.ray._autoscale import AutoscaleOptions, Autoscaler

        self.source, self.commands, self.locations = source, commands, locations
        self.autoscaler = Autoscaler(AutoscaleOptions.of(autoscale))
        self.processes: list[subprocess.Popen] = []
        self.listening = 0  # servers that listen, in start order
        self.windows: list[dict[str, Any]] = []
        self.started, self.wall_started = time.monotonic(), time.time()
        self._lock = threading.Lock()

    def addresses(self, timeout: float | None = None) -> list[str]:
        with self._lock:
            return self.locations[:self.listening]

    def recipe(self) -> tuple[Any, dict[str, Any]]:
        return self.source, {"batch_size": BATCH}

    def report(self, trainer: str, figures: dict[str, Any]) -> None:
        now = time.monotonic()
        self.windows.append({"t": round(now - self.started, 3), **figures})
        self.autoscaler.report(trainer, figures, now)
        decided = self.autoscaler.decide(len(self.processes), now)
        if decided is not None and decided[0] > len(self.processes):
            self._grow()

    def _grow(self) -> None:
        k = len(self.processes)
        process = subprocess.Popen(self.commands[k], stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True)
        self.processes.append(process)

        def wait_listening() -> None:
            line = process.stdout.readline()
            if re.search(r"listening on", line):
                with self._lock:
                    self.listening += 1

        threading.Thread(target=wait_listening, daemon=True).start()

    def history(self) -> list[dict[str, Any]]:
        return [{**change, "t": round(change["time"] - self.wall_started, 3)}
                for change in self.autoscaler.history]

    def close(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait(timeout=20)


def trainer(args: argparse.Namespace) -> dict[str, Any]:
    """The trainer's process (in its namespace): reads for --seconds at the step rate."""
    import stoker

    commands = json.loads(args.commands)
    fleet = NamespaceFleet(args.source, commands, json.loads(args.locations),
                           {"max_servers": len(commands), "target_stall": 0.02,
                            "interval_s": 3.0, "idle_intervals": 1000})
    loader = stoker.RemoteLoader(fleet, batch_size=BATCH, local={"num_threads": 1},
                                 split={"window_seconds": 1.0})
    step = args.step_ms / 1e3
    deadline = time.monotonic() + args.seconds
    rows = 0
    epoch = 0
    marks: list[tuple[float, int]] = []  # (time, rows so far) at each window's report
    try:
        while time.monotonic() < deadline:
            loader.set_epoch(epoch)
            for batch in loader:
                rows += len(batch["label"])
                time.sleep(step)
                if len(fleet.windows) > len(marks):
                    marks.append((time.monotonic() - fleet.started, rows))
                if time.monotonic() >= deadline:
                    break
            epoch += 1
    finally:
        fleet.close()
    # Each window's delivered rows/s: rows between two reports over the time between them.
    for i, window in enumerate(fleet.windows[:len(marks)]):
        if i > 0:
            (t0, r0), (t1, r1) = marks[i - 1], marks[i]
            window["rows_per_s"] = round((r1 - r0) / (t1 - t0)) if t1 > t0 else None
    return {"windows": fleet.windows, "history": fleet.history(), "rows": rows,
            "demand_rows_per_s": round(BATCH / step), "stats": {
                k: v for k, v in loader.stats().items() if k not in ("local", "split")}}


def phases(result: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for servers in sorted({w["servers"] for w in result["windows"]}):
        windows = [w for w in result["windows"] if w["servers"] == servers]
        rates = [w["rows_per_s"] for w in windows if w.get("rows_per_s")]
        out.append({"servers": servers, "windows": len(windows),
                    "median_stall": statistics.median(w["stall"] for w in windows),
                    "median_rows_per_s": statistics.median(rates) if rates else None,
                    "median_local_share": statistics.median(w["local_share"] for w in windows)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source")
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--step-ms", type=float, default=2.0)
    parser.add_argument("--server-rate", default="600mbit")
    parser.add_argument("--max-servers", type=int, default=2)
    parser.add_argument("--trainer-cpus", default="0")
    parser.add_argument("--server-cpus", default="1")
    parser.add_argument("--server-threads", type=int, default=2)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--out")
    parser.add_argument("--trainer", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--commands", help=argparse.SUPPRESS)
    parser.add_argument("--locations", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.trainer:
        emit(trainer(args))
        return
    why = netns.available()
    if why is not None:
        print(f"autoscale_netns: skipped: {why}")
        return
    if not any(Path(args.source).glob("*.parquet")):
        from stoker.cli import gen as _gen

        _gen.generate(Path(args.source), _gen.GenOptions(preset="criteo", rows=args.rows,
                                                         files=4), progress=False)
    netns.clean_stale()
    hosts = [f"s{k}" for k in range(args.max_servers)]
    load_before = os.getloadavg()
    with netns.Network(["trainer", *hosts],
                       send_rate=dict.fromkeys(hosts, args.server_rate)) as net:
        commands = [[*net.run_in(host, args.server_cpus), sys.executable, "-m", "stoker",
                     "serve", args.source, "--host", net.address(host), "--port", str(PORT),
                     "--batch-size", str(BATCH), "--num-threads", str(args.server_threads)]
                    for host in hosts]
        locations = [f"grpc://{net.address(host)}:{PORT}" for host in hosts]
        result = run_json([*net.run_in("trainer", args.trainer_cpus), sys.executable,
                           __file__, args.source, "--trainer", "--seconds", str(args.seconds),
                           "--step-ms", str(args.step_ms), "--commands", json.dumps(commands),
                           "--locations", json.dumps(locations)])
    load_after = os.getloadavg()
    result["phases"] = phases(result)
    result["load_average"] = [load_before[0], load_after[0]]
    result["server_rate"] = args.server_rate
    print(f"demand {result['demand_rows_per_s'] / 1e6:.2f}M rows/s (a batch of {BATCH} every "
          f"{args.step_ms} ms); each server's link {args.server_rate}")
    for change in result["history"]:
        print(f"  t={change['t']:7.1f} s  -> {change['servers']} server(s): {change['why']}")
    print(f"{'servers':>8} {'windows':>8} {'median stall':>13} {'M rows/s':>9} "
          f"{'local share':>12}")
    for phase in result["phases"]:
        rate = phase["median_rows_per_s"]
        print(f"{phase['servers']:>8} {phase['windows']:>8} {phase['median_stall']:>13.3f} "
              f"{rate / 1e6 if rate else float('nan'):>9.2f} "
              f"{phase['median_local_share']:>12.2f}")
    print(f"(load average {load_before[0]:.2f} before, {load_after[0]:.2f} after)")
    if args.out:
        write_json(args.out, result, indent=1)


if __name__ == "__main__":
    main()
