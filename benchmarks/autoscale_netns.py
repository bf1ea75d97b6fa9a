"""The autoscaler's growth, shown on one machine: a trainer reading local first
(`RemoteLoader(fleet, local=True)`) at a fixed step rate its own core cannot feed, and a fleet
that starts with no server and grows by the same policy a `stoker.ray.Fleet` runs
(`stoker.ray._autoscale.Autoscaler`) — each server `stoker serve` in a network namespace of
its own behind a `tc` rate (a NIC standing in), so that one server cannot remove the stall
and two can.

    python benchmarks/autoscale_netns.py DATASET [--seconds 90] [--trainer-cpu-share 0.4]
        [--demand-factor 1.25] [--server-share 0.4] [--step-ms MS] [--server-rate RATE]
        [--max-servers 2] [--shuffle-window 32768] [--trainer-cpus 0] [--server-cpus 1]
        [--rows 24000000] [--out results.json]

The trainer runs in its own namespace, pinned to --trainer-cpus; its threads but the main one
(the loader's: engine workers, I/O, the receiving threads) share a CPU quota of
--trainer-cpu-share of a core (stoker_devtools.cpu_quota; 0: none), while the step loop runs
unthrottled: a trainer host with little CPU left for loading, the case a fleet is for.
Calibrated first: the trainer reads local first with no server and no step for a few
seconds; its rate L and the bytes a row takes set the demand D = --demand-factor x L (a
batch of 4,096 rows a step of 4,096 / D seconds, a sleep: the accelerator's step) and each
server's link, --server-share x D rows/s (5% over the rows' bytes for framing); --step-ms
and --server-rate, when both are given, are used as they are and nothing is calibrated.
With the defaults the trainer alone feeds 0.8 of the demand; one server's link carries 0.4
of it, less than the half a split of one local chunk to one server chunk gives it, and a
split that keeps more local leaves the trainer (which also receives what the server sends)
short; two servers take a third each with a fifth of their links to spare, and the trainer,
decoding a third and receiving two, keeps up. Both servers share --server-cpus.

Then the trainer takes a batch every step for --seconds; each window of the split
controller (target stall 0.02, windows of 3 s) reports its stall to the fleet object here,
which asks the Autoscaler (target stall 0.02, interval 3 s) for the number of servers and starts the next server's process
when it says grow (it joins once it listens). The shuffle window is 32,768 rows (8
batches) by default, so that the split's chunks (4 windows) make many periods an epoch; a
dataset of 24M rows (made if DATASET has no Parquet file: 16 files, 2.6 GB) makes epochs
of about 40 s, whose starts (every stream opened again, its pipeline filling) are few.
Printed: the calibration, the fleet's history, and per phase (0, 1, 2 servers) the windows'
median stall (the split's: waits for a source), the median share of the time the loop
spent taking batches (those waits, converting the batches, the split's moves) and rows/s.
Needs root and iproute2 (says why and exits 0 without them), as benchmarks/fleet_netns.py,
and for the quota cgroup v1's cpu controller (the same).
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

from stoker_devtools import cpu_quota, netns
from stoker_devtools.bench import emit, run_json, write_json

BATCH = 4096
PORT = 7800
# The stall the fleet's policy grows for, and the split's target too (its default, 0.01, moves
# on a stall smaller than what a move costs while every source refills: ~5% of a window).
TARGET_STALL = 0.02


class NamespaceFleet:
    """What RemoteLoader reads as a fleet (addresses, recipe, report), its servers
    `stoker serve` processes started in their namespaces when the autoscaler says grow."""

    def __init__(self, source: str, options: dict[str, Any], commands: list[list[str]],
                 locations: list[str], autoscale: dict[str, Any]) -> None:
        from stoker.ray._autoscale import AutoscaleOptions, Autoscaler

        self.source, self.options = source, options
        self.commands, self.locations = commands, locations
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
        return self.source, dict(self.options)

    def report(self, trainer: str, figures: dict[str, Any]) -> None:
        now = time.monotonic()
        self.windows.append({"t": round(now - self.started, 3), **figures})
        self.autoscaler.report(trainer, figures, now)
        decided = self.autoscaler.decide(len(self.processes), now)
        if decided is not None and decided[0] > len(self.processes) and self.commands:
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


def calibrate(args: argparse.Namespace) -> dict[str, Any]:
    """The trainer's process, first (in its namespace): its own rate local first with no
    server and no step, after a second's warm-up, and the bytes a row takes."""
    import stoker

    fleet = NamespaceFleet(args.source, {"batch_size": BATCH,
                                         "shuffle_window": args.shuffle_window}, [], [],
                           {"max_servers": 1})
    loader = stoker.RemoteLoader(fleet, batch_size=BATCH, local={"num_threads": 1})
    started = time.monotonic()
    deadline = started + args.seconds
    rows = counted = 0
    row_bytes = 0.0
    epoch = 0
    counted_from: float | None = None
    while time.monotonic() < deadline:
        loader.set_epoch(epoch)
        for batch in loader:
            rows += len(batch["label"])
            if not row_bytes:
                row_bytes = sum(v.nbytes for v in batch.values()) / len(batch["label"])
            now = time.monotonic()
            if counted_from is None and now - started >= 1.0:
                counted_from, counted = now, rows
            if now >= deadline:
                break
        epoch += 1
    assert counted_from is not None, "calibration ran under a second"
    return {"local_rows_per_s": round((rows - counted) / (time.monotonic() - counted_from)),
            "row_bytes": row_bytes}


def trainer(args: argparse.Namespace) -> dict[str, Any]:
    """The trainer's process (in its namespace): reads for --seconds at the step rate."""
    import stoker

    commands = json.loads(args.commands)
    fleet = NamespaceFleet(args.source, {"batch_size": BATCH,
                                         "shuffle_window": args.shuffle_window},
                           commands, json.loads(args.locations),
                           {"max_servers": len(commands), "target_stall": TARGET_STALL,
                            "interval_s": 3.0, "idle_intervals": 1000})
    loader = stoker.RemoteLoader(fleet, batch_size=BATCH, local={"num_threads": 1},
                                 split={"window_seconds": args.split_window_seconds,
                                        "target_stall": TARGET_STALL})
    step = args.step_ms / 1e3
    deadline = time.monotonic() + args.seconds
    rows = 0
    epoch = 0
    in_next = 0.0  # seconds the loop spent taking batches (waiting, converting, relayouts)
    marks: list[tuple[float, int, float]] = []  # (time, rows, in_next) at each report
    # The accelerator's clock: each step takes `step`, and the next one starts once its batch
    # is taken: a step ends `step` after the last one ended plus the time the loop spent
    # taking the batch (waiting, converting). The sleep's own overshoot is not lost (the loop
    # catches up on the next steps), so with no wait the loop runs at 4,096 rows a step.
    free_at = time.monotonic()  # when the accelerator is done with its last step
    try:
        while time.monotonic() < deadline:
            loader.set_epoch(epoch)
            batches = iter(loader)
            while True:
                taking = time.monotonic()
                batch = next(batches, None)
                in_next += time.monotonic() - taking
                if batch is None:
                    break
                rows += len(batch["label"])
                free_at += (time.monotonic() - taking) + step
                time.sleep(max(0.0, free_at - time.monotonic()))
                if len(fleet.windows) > len(marks):
                    marks.append((time.monotonic() - fleet.started, rows, in_next))
                if time.monotonic() >= deadline:
                    break
            batches.close()  # its streams ended before the servers are stopped
            epoch += 1
    finally:
        fleet.close()
    # Each window's delivered rows/s and the share of its time the loop spent taking batches
    # (the split's stall counts only the waits for a source; this adds converting the batch
    # and the split's own moves): from one report to the next.
    for i, window in enumerate(fleet.windows[:len(marks)]):
        if i > 0:
            (t0, r0, n0), (t1, r1, n1) = marks[i - 1], marks[i]
            if t1 > t0:
                window["rows_per_s"] = round((r1 - r0) / (t1 - t0))
                window["taking"] = round((n1 - n0) / (t1 - t0), 4)
    return {"windows": fleet.windows, "history": fleet.history(), "rows": rows,
            "demand_rows_per_s": round(BATCH / step), "stats": {
                k: v for k, v in loader.stats().items() if k not in ("local", "split")}}


def phases(result: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for servers in sorted({w["servers"] for w in result["windows"]}):
        windows = [w for w in result["windows"] if w["servers"] == servers]
        rates = [w["rows_per_s"] for w in windows if w.get("rows_per_s")]
        taking = [w["taking"] for w in windows if "taking" in w]
        out.append({"servers": servers, "windows": len(windows),
                    "median_stall": statistics.median(w["stall"] for w in windows),
                    "median_taking": statistics.median(taking) if taking else None,
                    "median_rows_per_s": statistics.median(rates) if rates else None,
                    "median_local_share": statistics.median(w["local_share"] for w in windows)})
    return out


def run_trainer(command: list[str], quota: cpu_quota.CpuQuota | None) -> Any:
    """run_json for the trainer's process, its threads but the main one held in `quota`."""
    if quota is None:
        return run_json(command)
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    quota.hold(child.pid, spare={child.pid})
    out, err = child.communicate()
    lines = out.strip().splitlines()
    if child.returncode != 0 or not lines:
        raise RuntimeError(f"the trainer: exit status {child.returncode}\n{err[-3000:]}")
    return json.loads(lines[-1])


def run(args: argparse.Namespace, hosts: list[str],
        quota: cpu_quota.CpuQuota | None) -> dict[str, Any]:
    """Calibrates (unless both the step and the rate are given), then runs the trainer with
    the fleet it grows; the trainer's result, with what it ran at."""
    calibration = None
    step_ms, server_rate = args.step_ms, args.server_rate
    if step_ms is None or server_rate is None:
        with netns.Network(["trainer"]) as net:
            calibration = run_trainer(
                [*net.run_in("trainer", args.trainer_cpus), sys.executable, __file__,
                 args.source, "--calibrate", "--seconds", str(args.calibrate_seconds),
                 "--shuffle-window", str(args.shuffle_window)], quota)
        demand = args.demand_factor * calibration["local_rows_per_s"]
        if step_ms is None:
            step_ms = round(BATCH / demand * 1e3, 3)
        demand = BATCH / (step_ms / 1e3)
        if server_rate is None:
            bits = args.server_share * demand * calibration["row_bytes"] * 8 * 1.05
            server_rate = f"{round(bits / 1e6)}mbit"
    with netns.Network(["trainer", *hosts],
                       send_rate=dict.fromkeys(hosts, server_rate)) as net:
        commands = [[*net.run_in(host, args.server_cpus), sys.executable, "-m", "stoker",
                     "serve", args.source, "--host", net.address(host), "--port", str(PORT),
                     "--batch-size", str(BATCH), "--shuffle-window", str(args.shuffle_window),
                     "--num-threads", str(args.server_threads)]
                    for host in hosts]
        locations = [f"grpc://{net.address(host)}:{PORT}" for host in hosts]
        result = run_trainer(
            [*net.run_in("trainer", args.trainer_cpus), sys.executable, __file__, args.source,
             "--trainer", "--seconds", str(args.seconds), "--step-ms", str(step_ms),
             "--split-window-seconds", str(args.split_window_seconds),
             "--shuffle-window", str(args.shuffle_window), "--commands", json.dumps(commands),
             "--locations", json.dumps(locations)], quota)
    result.update({"calibration": calibration, "step_ms": step_ms, "server_rate": server_rate})
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source")
    parser.add_argument("--seconds", type=float, default=90.0)
    parser.add_argument("--trainer-cpu-share", type=float, default=0.4)
    parser.add_argument("--demand-factor", type=float, default=1.25)
    parser.add_argument("--server-share", type=float, default=0.4)
    parser.add_argument("--step-ms", type=float)
    parser.add_argument("--server-rate")
    parser.add_argument("--shuffle-window", type=int, default=32768)
    parser.add_argument("--calibrate-seconds", type=float, default=6.0)
    parser.add_argument("--split-window-seconds", type=float, default=3.0)
    parser.add_argument("--max-servers", type=int, default=2)
    parser.add_argument("--trainer-cpus", default="0")
    parser.add_argument("--server-cpus", default="1")
    parser.add_argument("--server-threads", type=int, default=2)
    parser.add_argument("--rows", type=int, default=24_000_000)
    parser.add_argument("--out")
    parser.add_argument("--trainer", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--calibrate", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--commands", help=argparse.SUPPRESS)
    parser.add_argument("--locations", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.calibrate:
        emit(calibrate(args))
        return
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
                                                         files=16), progress=False)
    netns.clean_stale()
    hosts = [f"s{k}" for k in range(args.max_servers)]
    load_before = os.getloadavg()
    quota = None
    if args.trainer_cpu_share > 0:
        why = cpu_quota.available()
        if why is not None:
            print(f"autoscale_netns: skipped: the trainer's CPU quota: {why}")
            return
        quota = cpu_quota.CpuQuota(args.trainer_cpu_share).open()
    try:
        result = run(args, hosts, quota)
        if quota is not None:
            result["trainer_throttled"] = quota.throttled()
    finally:
        if quota is not None:
            quota.close()
    load_after = os.getloadavg()
    result["phases"] = phases(result)
    result["load_average"] = [load_before[0], load_after[0]]
    result["trainer_cpu_share"] = args.trainer_cpu_share
    result["shuffle_window"] = args.shuffle_window
    if result["calibration"] is not None:
        calibration = result["calibration"]
        print(f"calibrated: the trainer alone {calibration['local_rows_per_s'] / 1e6:.2f}M "
              f"rows/s ({args.trainer_cpu_share or 'no'} CPU quota), "
              f"{calibration['row_bytes']:.0f} bytes a row")
    print(f"demand {result['demand_rows_per_s'] / 1e6:.2f}M rows/s (a batch of {BATCH} every "
          f"{result['step_ms']} ms); each server's link {result['server_rate']}")
    for change in result["history"]:
        print(f"  t={change['t']:7.1f} s  -> {change['servers']} server(s): {change['why']}")
    print(f"{'servers':>8} {'windows':>8} {'median stall':>13} {'taking':>7} {'M rows/s':>9} "
          f"{'local share':>12}")
    for phase in result["phases"]:
        rate, taking = phase["median_rows_per_s"], phase["median_taking"]
        print(f"{phase['servers']:>8} {phase['windows']:>8} {phase['median_stall']:>13.3f} "
              f"{taking if taking is not None else float('nan'):>7.3f} "
              f"{rate / 1e6 if rate else float('nan'):>9.2f} "
              f"{phase['median_local_share']:>12.2f}")
    print(f"(load average {load_before[0]:.2f} before, {load_after[0]:.2f} after)")
    if args.out:
        write_json(args.out, result, indent=1)


if __name__ == "__main__":
    main()
