"""Hosts in network namespaces (stoker_devtools.netns, what benchmarks/fleet_netns.py runs on):
the namespaces and their bridged links are made and deleted, even when the body raises; a
killed run's are cleaned up and a live one's left; and a `stoker serve` in one namespace,
pinned with taskset, serves a RemoteLoader in another exactly the batches a local Loader
gives; benchmarks/autoscale_netns.py grows a fleet from nothing. Needs root and iproute2: skipped, saying which, where either is missing."""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import stoker
from conftest import assert_same_batches
from stoker_devtools import cpu_quota, netns
from stoker_devtools.serve import COLUMNS, OPTIONS

REASON = netns.available()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"netns: {REASON}")


def namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return {line.split()[0] for line in out.stdout.splitlines() if line.strip()}


def run_in(net: netns.Network, host: str, code: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*net.run_in(host), sys.executable, "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=60, check=False, **kw)


def test_hosts_reach_each_other_and_only_inside_their_namespaces() -> None:
    before = namespaces()
    with netns.Network(["a", "b"], receive_rate={"a": "1gbit"}) as net:
        made = namespaces() - before
        assert made == {net.namespace(h) for h in ("a", "b", "sw")}
        listener = subprocess.Popen(
            [*net.run_in("b"), sys.executable, "-c", textwrap.dedent(f"""
                import socket
                s = socket.create_server(("{net.address("b")}", 7000))
                print("ready", flush=True)
                c, _ = s.accept()
                c.sendall(c.recv(5)[::-1])
            """)], stdout=subprocess.PIPE, text=True)
        assert listener.stdout.readline().strip() == "ready"
        answer = run_in(net, "a", f"""
            import socket
            c = socket.create_connection(("{net.address("b")}", 7000), timeout=10)
            c.sendall(b"hello"); print(c.recv(5).decode())
        """)
        assert answer.stdout.strip() == "olleh", answer.stderr
        listener.wait(timeout=10)
        # The address exists only inside: the machine's own namespace has none of them.
        assert net.address("b") not in subprocess.run(
            ["ip", "-o", "addr"], capture_output=True, text=True, check=True).stdout
        qdisc = subprocess.run(["tc", "-n", net.namespace("sw"), "qdisc", "show"],
                               capture_output=True, text=True, check=True).stdout
        assert "tbf" in qdisc and "rate 1Gbit" in qdisc
    assert namespaces() == before


def test_namespaces_go_when_the_body_raises_and_a_dead_runs_are_cleaned() -> None:
    before = namespaces()
    with pytest.raises(RuntimeError, match="the body"), netns.Network(["a"]):
        raise RuntimeError("the body")
    assert namespaces() == before
    dead = 2**22 + 1  # above the default pid_max: no such process
    while os.path.exists(f"/proc/{dead}"):
        dead += 1
    stale, live = f"{netns.PREFIX}{dead}-0-x", f"{netns.PREFIX}{os.getpid()}-99-x"
    for name in (stale, live):
        subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        assert stale in netns.clean_stale()
        assert stale not in namespaces() and live in namespaces()
    finally:
        for name in (stale, live):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)


def test_a_server_in_its_own_namespace_serves_the_local_loaders_batches(criteo: Path,
                                                                        tmp_path: Path) -> None:
    cpu = str(min(os.sched_getaffinity(0)))
    with netns.Network(["trainer", "s0"]) as net:
        server = subprocess.Popen(
            [*net.run_in("s0", cpu), sys.executable, "-m", "stoker", "serve", str(criteo),
             "--host", net.address("s0"), "--port", "8815", "--columns", ",".join(COLUMNS),
             "--batch-size", str(OPTIONS["batch_size"]), "--seed", str(OPTIONS["seed"]),
             "--shuffle-window", str(OPTIONS["shuffle_window"]), "--num-threads", "1",
             "--chunk-batches", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = server.stdout.readline()
            assert re.search(rf"listening on grpc://{re.escape(net.address('s0'))}:8815", line), (
                line + server.stderr.read())
            allowed = Path(f"/proc/{server.pid}/status").read_text()
            assert re.search(rf"^Cpus_allowed_list:\s+{cpu}$", allowed, re.MULTILINE)
            out = tmp_path / "batches.pickle"
            epoch = run_in(net, "trainer", f"""
                import pickle, stoker
                loader = stoker.RemoteLoader(["grpc://{net.address("s0")}:8815"],
                                             batch_size={OPTIONS["batch_size"]})
                with open("{out}", "wb") as f:
                    pickle.dump(list(loader), f)
            """)
            assert epoch.returncode == 0, epoch.stderr
        finally:
            server.terminate()
            server.wait(timeout=20)
    remote = pickle.loads(out.read_bytes())
    expected = list(stoker.Loader(criteo, columns=COLUMNS, **OPTIONS))
    assert len(remote) == len(expected) > 1
    assert_same_batches(remote, expected)


def test_the_autoscale_demonstration_grows_a_fleet_from_nothing(criteo: Path,
                                                               tmp_path: Path) -> None:
    """benchmarks/autoscale_netns.py: a trainer that stalls on its own core makes the
    Autoscaler start a namespaced server, which it then reads from; the batches it took are
    counted and the history says why the fleet grew."""
    out = tmp_path / "autoscale.json"
    script = Path(__file__).parents[2] / "benchmarks" / "autoscale_netns.py"
    done = subprocess.run(
        [sys.executable, str(script), str(criteo), "--seconds", "12", "--step-ms", "0.2",
         "--max-servers", "1", "--server-rate", "1gbit", "--trainer-cpu-share", "0",
         "--split-window-seconds", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["history"] and result["history"][0]["servers"] == 1, result["history"]
    assert "stall" in result["history"][0]["why"]
    assert result["stats"]["remote_batches"] > 0, result["stats"]
    assert {w["servers"] for w in result["windows"]} >= {0, 1}


@pytest.mark.skipif(cpu_quota.available() is not None,
                    reason=f"cpu_quota: {cpu_quota.available()}")
def test_a_cpu_quota_holds_the_threads_it_is_given_and_spares_the_rest() -> None:
    """stoker_devtools.cpu_quota (the autoscale demonstration's trainer host): a busy thread
    held in a 0.2 quota runs about a fifth of the time; a spared one runs freely."""
    code = "import time\nend = time.time() + 1.5\nwhile time.time() < end: pass"
    spin = [sys.executable, "-c", code]

    def cpu_seconds(pid: int) -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    with cpu_quota.CpuQuota(0.2) as quota:
        held = subprocess.Popen(spin)
        quota.hold(held.pid)
        spared = subprocess.Popen(spin)
        quota.hold(spared.pid, spare={spared.pid})
        time.sleep(1.2)
        used_held, used_spared = cpu_seconds(held.pid), cpu_seconds(spared.pid)
        held.wait(timeout=10)
        spared.wait(timeout=10)
        assert quota.throttled()["throttled_periods"] > 0
    assert used_held < 0.45, used_held  # 0.2 of 1.2 s, with the watcher's first 20 ms
    assert used_spared > 2 * used_held, (used_spared, used_held)
    assert quota.path is None  # the cgroup removed
