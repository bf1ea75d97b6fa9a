"""Several hosts on one machine: Linux network namespaces joined by a bridge, each host a
namespace with one veth link to a switch namespace (its own bridge), on 10.249.0.0/24 — a
range of this module's own making that exists only inside these namespaces, so nothing of the
machine's own network is touched. A host's processes run under `ip netns exec NS taskset -c
CPUS`; `tc` token-bucket rates on a link stand in for a NIC's. Needs root and iproute2.

    with Network(["trainer", "s0", "s1"], send_rate={"s0": "10gbit"}) as net:
        server = subprocess.Popen([*net.run_in("s0", "1"), sys.executable, "-m", ...])
        net.address("s0")  # 10.249.0.2

Namespaces are named stkf<pid>-<n>-<host> (the switch's host name: sw); `clean_stale()`
deletes those of processes no longer alive (a run killed before its teardown), leaving a live
run's alone. The standard library only.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Self

__all__ = ["PREFIX", "SUBNET", "Network", "available", "clean_stale"]

PREFIX = "stkf"
SUBNET = "10.249.0"  # hosts get .1, .2, ... in the order named; /24
_STALE = re.compile(rf"^{PREFIX}(\d+)-")
_counter = itertools.count()


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def _tc(*args: str) -> None:
    done = subprocess.run(["tc", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"tc {' '.join(args)}: {done.stderr.strip()}")


def available() -> str | None:
    """None where namespaces can be made here; else why not (not root, no `ip`, `tc` or
    `taskset`, or `ip netns add` refused: a container without CAP_SYS_ADMIN)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool, package in (("ip", "iproute2"), ("tc", "iproute2"), ("taskset", "util-linux")):
        if shutil.which(tool) is None:
            return f"no `{tool}` on PATH (Debian package {package})"
    probe = f"{PREFIX}{os.getpid()}-probe"
    try:
        _ip("netns", "add", probe)
        _ip("-n", probe, "link", "add", "br0", "type", "bridge")
    except RuntimeError as error:
        return f"cannot make a namespace with a bridge here: {error}"
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True, check=False)
    return None


def _namespaces() -> list[str]:
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return [line.split()[0] for line in done.stdout.splitlines() if line.strip()]


def clean_stale() -> list[str]:
    """Deletes this module's namespaces whose making process is gone; returns their names."""
    stale = []
    for name in _namespaces():
        match = _STALE.match(name)
        if match and not os.path.exists(f"/proc/{match.group(1)}"):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
            stale.append(name)
    return stale


class Network:
    """Hosts (network namespaces) on one bridged /24, made on entry, deleted on exit.

    send_rate / receive_rate: host -> a tc rate ("10gbit", "800mbit"): a token bucket on what
    the host sends (its link's egress) or receives (the switch port's egress towards it).
    mtu: every link's (1500, an Ethernet NIC's, by default; 9000 a jumbo-frame one's).
    """

    def __init__(self, hosts: Sequence[str], *, send_rate: Mapping[str, str] | None = None,
                 receive_rate: Mapping[str, str] | None = None, mtu: int = 1500) -> None:
        if len(set(hosts)) != len(hosts) or "sw" in hosts or not hosts:
            raise ValueError(f"hosts: distinct names other than 'sw', got {list(hosts)}")
        if len(hosts) > 250:
            raise ValueError(f"hosts: at most 250 on one /24, got {len(hosts)}")
        unknown = sorted((set(send_rate or {}) | set(receive_rate or {})) - set(hosts))
        if unknown:
            raise ValueError(f"rates for hosts not in the network: {unknown}")
        self.hosts = list(hosts)
        self.send_rate, self.receive_rate = dict(send_rate or {}), dict(receive_rate or {})
        self.mtu = mtu
        self._tag = f"{PREFIX}{os.getpid()}-{next(_counter)}"
        self._made: list[str] = []

    def namespace(self, host: str) -> str:
        return f"{self._tag}-{host}"

    def address(self, host: str) -> str:
        return f"{SUBNET}.{self.hosts.index(host) + 1}"

    def run_in(self, host: str, cpus: str | None = None) -> list[str]:
        """The command prefix that runs a program on `host`, pinned to `cpus` if given
        (`ip netns exec` and `taskset` each exec the next: the child's pid is the program's)."""
        pin = ["taskset", "-c", cpus] if cpus else []
        return ["ip", "netns", "exec", self.namespace(host), *pin]

    def _add(self, name: str) -> None:
        _ip("netns", "add", name)
        self._made.append(name)
        _ip("-n", name, "link", "set", "lo", "up")

    def open(self) -> Self:
        switch = self.namespace("sw")
        try:
            self._add(switch)
            _ip("-n", switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", switch, "link", "set", "br0", "up")
            for i, host in enumerate(self.hosts):
                ns, port = self.namespace(host), f"p{i}"
                self._add(ns)
                _ip("-n", switch, "link", "add", port, "mtu", str(self.mtu), "type", "veth",
                    "peer", "name", "eth0", "mtu", str(self.mtu), "netns", ns)
                _ip("-n", switch, "link", "set", port, "master", "br0")
                _ip("-n", switch, "link", "set", port, "up")
                _ip("-n", ns, "addr", "add", f"{self.address(host)}/24", "dev", "eth0")
                _ip("-n", ns, "link", "set", "eth0", "up")
                for where, dev, rate in ((ns, "eth0", self.send_rate.get(host)),
                                         (switch, port, self.receive_rate.get(host))):
                    if rate:
                        _tc("-n", where, "qdisc", "add", "dev", dev, "root", "tbf", "rate",
                            rate, "burst", "1mb", "latency", "50ms")
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Deletes the namespaces (their links go with them). Stop the processes running in
        them first: a namespace lives on, unnamed, while a process is in it."""
        for name in reversed(self._made):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
        self._made.clear()

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
