"""Local first with an autoscaled Ray fleet (docs/autotune.md, "The fleet"): one trainer
reads a dataset with `RemoteLoader(fleet, local={"num_threads": T})` from a fleet started
with no server and `autoscale={"max_servers": N}`, through phases of a synthetic training
step (sleep per batch), epoch after epoch. Every second it samples the fleet's size, the
trainer's local share, rows/s and the stall share (the consumer's wait over the wall time);
the same phases read by a local Loader alone with the same T threads give the stall without
the fleet. On a local Ray cluster of this machine (ray.init), so the servers share the
machine's cores with the trainer: the figures show the controller's behaviour (when the
fleet grows and shrinks, and what that does to the stall), not a data centre's capacity.
With --pin, the trainer (and the local-only run) keeps to --trainer-cpus and the Ray
cluster, started apart with `ray start` under taskset, to --fleet-cpus: the fleet's servers
then add cores the trainer does not have, as CPU machines beside a GPU host do.

    python benchmarks/studies/fleet_autoscale.py --work /tmp/fleet --rows 400000 \\
        --phases 0:40,25:40,0:30 --json benchmarks/results/fleet-autoscale.json
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from stoker_devtools.bench import median_of, write_json

BATCH = 1024


def dataset(work: Path, preset: str, rows: int) -> Path:
    from stoker.cli import gen as _gen

    path = work / f"{preset}-{rows}"
    if not path.exists():
        _gen.generate(path, _gen.GenOptions(preset=preset, rows=rows, files=8,
                                            row_group_size=16384), progress=False)
    return path


def heavy_transforms() -> list[dict[str, Any]]:
    """A preprocessing pipeline of the kind the fleet exists for (docs/transforms.md): the
    dense features filled, log-scaled, standardized and stacked, the sparse ids hashed."""
    dense = [f"I{i}" for i in range(1, 14)]
    sparse = [f"C{i}" for i in range(1, 27)]
    return [*({"op": "fill_null", "column": c, "value": 0} for c in dense),
            *({"op": "log1p", "column": c} for c in dense),
            *({"op": "standardize", "column": c, "mean": 1.2, "std": 0.8} for c in dense),
            {"op": "stack", "columns": dense, "output": "dense"},
            *({"op": "hash", "column": c, "num_buckets": 100_000} for c in sparse)]


def run_phases(loader: Any, phases: list[tuple[float, float]], sample: Any) -> list[dict]:
    """Reads epochs through the phases (step ms, seconds); a sample each second."""
    samples: list[dict[str, Any]] = []
    started = time.perf_counter()
    phase_index, phase_end = 0, phases[0][1]
    last = {"t": 0.0, "rows": 0, "wait": 0.0}
    rows = 0
    wait = 0.0
    while phase_index < len(phases):
        it = iter(loader)
        while True:
            asked = time.perf_counter()
            batch = next(it, None)
            got = time.perf_counter()
            if batch is None:
                break
            wait += got - asked
            rows += len(batch["label"])
            step_ms = phases[phase_index][0]
            if step_ms:
                time.sleep(step_ms / 1e3)
            now = time.perf_counter() - started
            if now - last["t"] >= 1.0:
                seconds = now - last["t"]
                samples.append({"t": round(now, 2), "phase": phase_index, "step_ms": step_ms,
                                "rows_per_s": round((rows - last["rows"]) / seconds),
                                "stall": round((wait - last["wait"]) / seconds, 4),
                                **sample()})
                last = {"t": now, "rows": rows, "wait": wait}
            if now >= phase_end:
                phase_index += 1
                if phase_index == len(phases):
                    break
                phase_end += phases[phase_index][1]
    return samples


def summary(samples: list[dict], phases: list[tuple[float, float]]) -> list[dict]:
    out = []
    for k, (step_ms, _) in enumerate(phases):
        mine = [s for s in samples if s["phase"] == k]
        if not mine:
            continue
        steady = mine[len(mine) // 2:]  # the second half: after the controllers moved
        row = {"phase": k, "step_ms": step_ms,
               "rows_per_s": round(median_of(steady, "rows_per_s")),
               "stall": round(median_of(steady, "stall"), 4),
               "stall_first_half": round(median_of(mine[:max(1, len(mine) // 2)], "stall"), 4)}
        if "servers" in mine[0]:
            row["servers"] = [s["servers"] for s in mine]
            row["local_share"] = round(median_of(steady, "local_share"), 3)
        out.append(row)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--preset", default="criteo")
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--phases", default="0:40,25:40,0:30",
                        help="step_ms:seconds,... (default %(default)s)")
    parser.add_argument("--local-threads", type=int, default=1)
    parser.add_argument("--max-servers", type=int, default=2)
    parser.add_argument("--interval", type=float, default=2.0)
    parser.add_argument("--transforms", choices=["none", "heavy"], default="none",
                        help="heavy: fill_null, log1p, standardize and stack the dense "
                             "features, hash the sparse ones (criteo preset)")
    parser.add_argument("--pin", action="store_true")
    parser.add_argument("--trainer-cpus", default="0")
    parser.add_argument("--fleet-cpus", default="1")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    phases = [(float(a), float(b)) for a, b in
              (part.split(":") for part in args.phases.split(","))]
    args.work.mkdir(parents=True, exist_ok=True)
    path = dataset(args.work, args.preset, args.rows)

    import ray
    import stoker
    from stoker.ray import Fleet

    common: dict[str, Any] = {"batch_size": BATCH, "seed": 7}
    if args.transforms == "heavy":
        common["transforms"] = heavy_transforms()
    address = None
    if args.pin:
        import subprocess
        import sys

        fleet_cpus = sorted(int(c) for c in args.fleet_cpus.split(","))
        ray_cli = str(Path(sys.executable).with_name("ray"))
        subprocess.run(["taskset", "-c", args.fleet_cpus, ray_cli, "start", "--head",
                        f"--num-cpus={len(fleet_cpus)}", "--include-dashboard=false",
                        "--port=6391", f"--object-store-memory={100 * 2**20}"],
                       check=True, capture_output=True)
        address = "auto"
        os.sched_setaffinity(0, {int(c) for c in args.trainer_cpus.split(",")})
    print(f"load average before: {os.getloadavg()}", flush=True)
    baseline = stoker.Loader(str(path), num_threads=args.local_threads, **common)
    local_samples = run_phases(baseline, phases, dict)
    del baseline

    if address is None:
        ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False,
                 object_store_memory=100 * 2**20)
    else:
        ray.init(address=address, log_to_driver=False)
    fleet = Fleet.start(str(path), num_servers=0, num_cpus=1, num_threads=1,
                        autoscale={"max_servers": args.max_servers,
                                   "interval_s": args.interval}, **common)
    try:
        loader = stoker.RemoteLoader(fleet, local={"num_threads": args.local_threads})

        def sample() -> dict[str, Any]:
            split = loader.stats()["split"]
            return {"servers": split["servers"], "local_share": split["local_share"]}

        fleet_samples = run_phases(loader, phases, sample)
        history = fleet.history()
        stats = loader.stats()
    finally:
        fleet.shutdown()
        ray.shutdown()
        if args.pin:
            subprocess.run([ray_cli, "stop"], check=False, capture_output=True)
    result = {
        "preset": args.preset, "rows": args.rows, "transforms": args.transforms, "batch_size": BATCH, "phases": phases,
        "local_threads": args.local_threads, "max_servers": args.max_servers,
        "interval_s": args.interval, "cpus": os.cpu_count(),
        "pinned": {"trainer": args.trainer_cpus, "fleet": args.fleet_cpus} if args.pin else None,
        "load_average_after": os.getloadavg(),
        "local_only": summary(local_samples, phases),
        "local_first": summary(fleet_samples, phases),
        "history": history,
        "split_decisions": stats["split"]["recent"],
        "batches": {"local": stats["local_batches"], "remote": stats["remote_batches"],
                    "relayouts": stats["relayouts"]},
        "samples": {"local_only": local_samples, "local_first": fleet_samples}}
    print(f"{'phase':>5} {'step ms':>7} | {'local only':>22} | {'local first + fleet':>40}")
    print(f"{'':>5} {'':>7} | {'rows/s':>10} {'stall':>11} | {'rows/s':>10} {'stall':>7} "
          f"{'local share':>11} servers")
    for a, b in zip(result["local_only"], result["local_first"]):
        print(f"{a['phase']:>5} {a['step_ms']:>7g} | {a['rows_per_s']:>10,} {a['stall']:>11.3f} "
              f"| {b['rows_per_s']:>10,} {b['stall']:>7.3f} {b['local_share']:>11.2f} "
              f"{b['servers']}")
    print("fleet history:", json.dumps(history))
    print(f"load average after: {os.getloadavg()}")
    if args.json:
        write_json(args.json, result, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
