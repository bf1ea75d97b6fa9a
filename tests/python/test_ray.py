"""stoker.ray on a real local Ray cluster: two Ray nodes on this machine (ray.cluster_utils),
shared by the tests of this file. A fleet of Flight server actors read by RemoteLoader gives
a local Loader's batches; a server actor's process SIGKILLed mid-epoch is restarted by Ray
and the reader follows it to its new address; resizing the fleet between epochs (and in the
middle of one) changes no batch; Ray Train (examples/ray_train.py, TorchTrainer, 2 CPU
workers, gloo) with a worker killed mid-epoch resumes from its checkpoint exactly, and a
checkpoint of 2 workers resumed by 1 follows the elastic rule."""

from __future__ import annotations

import builtins
import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import ray
import stoker
from conftest import ROWS, assert_same_batches
from stoker.ray import Fleet
from stoker_devtools.serve import COLUMNS, OPTIONS

# A Ray cluster and Ray Train jobs: minutes on 2 cores (`make test-slow`).
pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
OBJECT_STORE_BYTES = 100 * 1024 * 1024  # per node: small, the batches go over Flight


@pytest.fixture(scope="module")
def cluster():
    """A head node and a worker node on this machine; the worker node alone has the custom
    resource "data_node" and the label stoker-role=data (either pins servers to it)."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 4, "object_store_memory": OBJECT_STORE_BYTES, "include_dashboard": False})
    worker = cluster.add_node(num_cpus=4, object_store_memory=OBJECT_STORE_BYTES,
                              resources={"data_node": 4}, labels={"stoker-role": "data"})
    cluster.wait_for_nodes()
    real_print = builtins.print  # a Ray driver printing workers' logs replaces it (tqdm_ray)
    ray.init(address=cluster.address, log_to_driver=False)
    cluster.data_node_id = worker.node_id
    yield cluster
    ray.shutdown()
    cluster.shutdown()
    builtins.print = real_print  # for the tests that run after these


def start_fleet(criteo: Path, num_servers: int, **kw) -> Fleet:
    return Fleet.start(str(criteo), num_servers=num_servers, chunk_batches=3, num_threads=1,
                       columns=COLUMNS, **OPTIONS, **kw)


def local(criteo: Path, **kw) -> stoker.Loader:
    return stoker.Loader(criteo, columns=COLUMNS, num_threads=1, **OPTIONS, **kw)


def test_a_fleet_serves_a_local_loaders_batches(cluster, criteo: Path) -> None:
    fleet = start_fleet(criteo, 2, name="fleet-a")
    try:
        servers = fleet.servers()
        assert len({server["node_id"] for server in servers}) == 2  # spread over both nodes
        assert [server["location"] for server in servers] == fleet.addresses()
        assert_same_batches(list(stoker.RemoteLoader(fleet)), list(local(criteo)))
        # Found by name (as another job of the cluster would), a rank of two, two epochs.
        remote = stoker.RemoteLoader("fleet-a", rank=1, world_size=2)
        reference = local(criteo, rank=1, world_size=2)
        for _ in range(2):
            assert_same_batches(list(remote), list(reference))
    finally:
        fleet.shutdown()
    with pytest.raises(ValueError, match="no Stoker fleet named 'fleet-a'"):
        stoker.RemoteLoader("fleet-a")


def test_a_server_actor_killed_mid_epoch_is_restarted_and_followed(cluster,
                                                                    criteo: Path) -> None:
    fleet = start_fleet(criteo, 2)
    try:
        before = fleet.servers()
        remote = stoker.RemoteLoader(fleet, reconnect_timeout=120)
        epoch = iter(remote)
        got = [next(epoch) for _ in range(2)]  # server 0's (chunks of 3 batches)
        # SIGKILL server 1's process before the reader needs its first chunk: Ray restarts
        # the actor (a new process, a new port), the reader resolves the fleet again.
        os.kill(before[1]["pid"], signal.SIGKILL)
        killed = time.monotonic()
        got += [next(epoch) for _ in range(2)]  # batch 2 (server 0), batch 3 (server 1)
        recovered = time.monotonic() - killed
        # Server 0 killed while its stream is open (what gRPC had buffered still arrives).
        os.kill(before[0]["pid"], signal.SIGKILL)
        got += list(epoch)
        reference = local(criteo)
        assert_same_batches(got, list(reference))  # none lost, none repeated
        after = fleet.servers()
        assert after[0]["pid"] != before[0]["pid"] and after[1]["pid"] != before[1]["pid"]
        assert after[1]["stats"]["batches_sent"] > 0
        assert remote.stats()["reconnects"] > 0
        print(f"server 1 (pid {before[1]['pid']}, {before[1]['location']}) killed; "
              f"restarted as pid {after[1]['pid']} at {after[1]['location']}; the reader "
              f"had batch 3 {recovered:.1f} s after the kill; server 0 killed after batch 3, "
              f"restarted at {after[0]['location']}; {remote.stats()['reconnects']} reconnect "
              f"attempts in all, {len(got)} batches equal")
        # Server 0 killed between epochs: len() and the next epoch resolve the fleet anew.
        os.kill(after[0]["pid"], signal.SIGKILL)
        assert len(remote) == len(got)
        assert_same_batches(list(remote), list(reference))
        assert fleet.servers()[0]["pid"] != after[0]["pid"]
    finally:
        fleet.shutdown()


def test_a_lost_nodes_server_is_restarted_on_another_node(cluster, criteo: Path) -> None:
    spare = cluster.add_node(num_cpus=2, object_store_memory=OBJECT_STORE_BYTES,
                             resources={"data_node": 2})
    cluster.wait_for_nodes()
    fleet = start_fleet(criteo, 2, resources={"data_node": 1})  # spread over the two
    try:
        before = fleet.servers()
        assert {server["node_id"] for server in before} == {cluster.data_node_id,
                                                            spare.node_id}
        [lost_k] = [k for k, server in enumerate(before) if server["node_id"] == spare.node_id]
        # The fleet's controller stays on the node that started it (here the head), never on
        # a server's node, which may be lost.
        assert ray.get(fleet._controller.__ray_call__.remote(
            lambda _: ray.get_runtime_context().get_node_id())) == \
            ray.get_runtime_context().get_node_id()
        remote = stoker.RemoteLoader(fleet, reconnect_timeout=120)
        epoch = iter(remote)
        # An epoch starts at its first next() or len(): here, before the loss, so the fleet's
        # addresses it resolves still name the server on the node about to be lost.
        assert len(epoch) > 0
        # The node is lost before the reader opens the stream of the server on it (server 0
        # serves batches 0-2, server 1 batches 3-5): the reader must find the restarted one.
        got = [next(epoch) for _ in range(2 if lost_k == 1 else 0)]
        # The node's Ray processes are killed; its worker processes would outlive them a while
        # here (a lost machine takes them along): the server's is killed too.
        cluster.remove_node(spare, allow_graceful=False)
        with contextlib.suppress(ProcessLookupError):
            os.kill(before[lost_k]["pid"], signal.SIGKILL)
        lost = time.monotonic()
        got += list(epoch)
        done = time.monotonic() - lost
        assert_same_batches(got, list(local(criteo)))
        assert remote.stats()["reconnects"] > 0
        after = fleet.servers()
        assert {server["node_id"] for server in after} == {cluster.data_node_id}
        print(f"node lost with server {lost_k}: restarted at {after[lost_k]['location']} on "
              f"the other node; the epoch done {done:.1f} s after the loss, "
              f"{remote.stats()['reconnects']} reconnect attempts, {len(got)} batches equal")
    finally:
        fleet.shutdown()


def test_resizing_the_fleet_keeps_the_batches(cluster, criteo: Path) -> None:
    fleet = start_fleet(criteo, 1, label_selector={"stoker-role": "data"})  # the worker node
    try:
        remote, reference = stoker.RemoteLoader(fleet), local(criteo)
        for size in (1, 3, 2):  # between epochs
            fleet.resize(size)
            assert len(fleet.addresses()) == size
            assert_same_batches(list(remote), list(reference))
        # In the middle of an epoch: the stopped server's chunks are dealt again.
        epoch = iter(remote)
        got = [next(epoch) for _ in range(4)]
        fleet.resize(1)
        got += list(epoch)
        assert_same_batches(got, list(reference))
        assert {server["node_id"] for server in fleet.servers()} == {cluster.data_node_id}
    finally:
        fleet.shutdown()


def test_an_autoscaled_fleet_grows_from_none_on_stall_and_shrinks_back(cluster,
                                                                      criteo: Path) -> None:
    """Local first with a fleet of none: a trainer that takes batches as fast as they come
    waits on its one local thread, so the fleet grows (up to its cap); a trainer whose step
    is long waits on nothing, so the fleet shrinks back to none. Every epoch's batches are
    the local Loader's throughout."""
    fleet = start_fleet(criteo, 0, autoscale={"max_servers": 2, "interval_s": 0.5,
                                              "idle_intervals": 2})
    try:
        loader = stoker.RemoteLoader(fleet, local={"num_threads": 1},
                                     split={"window_batches": 8, "window_seconds": 0.3,
                                            "chunk_windows": 1})
        reference = local(criteo)

        def epochs_until(done, step_s: float, limit_s: float = 90.0) -> None:
            deadline = time.monotonic() + limit_s
            while not done():
                assert time.monotonic() < deadline, fleet.history()
                got = []
                for batch in loader:
                    got.append(batch)
                    time.sleep(step_s)
                assert_same_batches(got, list(reference))

        epochs_until(lambda: len(fleet.addresses()) >= 1, step_s=0.0)
        assert fleet.history()[1]["why"].startswith("stall")
        assert loader.stats()["remote_batches"] > 0 or len(fleet.addresses()) >= 1
        epochs_until(lambda: len(fleet.addresses()) == 0, step_s=0.03)
        sizes = [entry["servers"] for entry in fleet.history()]
        assert sizes[0] == 0 and max(sizes) >= 1 and sizes[-1] == 0, fleet.history()
        assert max(sizes) <= 2
    finally:
        fleet.shutdown()


def ray_train(cluster, *args: str) -> dict:
    """examples/ray_train.py against the test cluster; its JSON summary."""
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "ray_train.py"), "--address", cluster.address, *args],
        capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def step_log(folder: Path, rank: int) -> list[dict]:
    return [json.loads(line) for line in (folder / f"rank{rank}.jsonl").read_text().splitlines()]


def example_loader(criteo: Path, batch_size: int, **kw) -> stoker.Loader:
    """A local loader with the example's options (its row ids are what the workers read)."""
    spec = importlib.util.spec_from_file_location("ray_train", EXAMPLES / "ray_train.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return stoker.Loader(criteo, num_threads=1, **example.loader_options(batch_size), **kw)


@pytest.mark.timeout(600)
def test_ray_train_worker_killed_mid_epoch_resumes_exactly(cluster, criteo: Path,
                                                          tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    # 2 epochs of 10 steps per worker (2 x 1,000 rows a step); rank 0 SIGKILLs itself
    # right after the checkpoint of step 14, on the first attempt only.
    summary = ray_train(cluster, "--data", str(criteo), "--storage", str(tmp_path / "runs"),
                        "--batch-size", "1000", "--epochs", "2", "--save-every", "2",
                        "--crash-once-at", "14", "--step-log", str(logs))
    assert summary["step"] == 20
    crashed_at = float((tmp_path / "runs" / "crashed-once").read_text())
    for rank in range(2):
        entries = step_log(logs, rank)
        steps = [entry["step"] for entry in entries]
        # The first attempt ran to step 14 at least; the second began right after a
        # checkpoint (the one of step 14, or an earlier one Ray Train had registered).
        restart = next(i for i in range(1, len(steps)) if steps[i] <= steps[i - 1])
        assert steps[:restart] == list(range(1, restart + 1)) and restart >= 14
        resumed = steps[restart] - 1
        assert resumed % 2 == 0 and steps[restart:] == list(range(resumed + 1, 21))
        # A step trained twice (after the rollback to the checkpoint) had the same rows.
        for entry in entries[resumed:restart]:
            assert entry["ids"] == entries[restart + entry["step"] - resumed - 1]["ids"]
        # The batches the final model was trained on: an uninterrupted run's, step for step.
        trained = {entry["step"]: entry["ids"] for entry in entries}
        reference = example_loader(criteo, 1000, rank=rank, world_size=2)
        expected = [batch["row_id"].tolist() for _ in range(2) for batch in reference]
        assert [trained[s] for s in range(1, 21)] == expected
        # The rank's running digest of delivered rows, carried through the checkpoint.
        final = json.loads(Path(summary["checkpoint"], f"loader-rank{rank}.json").read_text())
        assert final["delivered_digest"] == reference.state_dict()["delivered_digest"]
        print(f"rank {rank}: killed after step 14's checkpoint, resumed from step {resumed}; "
              f"first step of the new attempt {entries[restart]['time'] - crashed_at:.1f} s "
              f"after the kill; 20 steps equal to an uninterrupted run")


@pytest.mark.timeout(600)
def test_ray_train_two_workers_resumed_by_one_follow_the_elastic_rule(
        cluster, criteo: Path, tmp_path: Path) -> None:
    two, one = tmp_path / "two", tmp_path / "one"
    two.mkdir(), one.mkdir()
    common = ["--data", str(criteo), "--storage", str(tmp_path / "runs"), "--batch-size",
              "1000", "--epochs", "1", "--save-every", "2"]
    stopped = ray_train(cluster, *common, "--name", "two", "--workers", "2", "--stop-after",
                        "4", "--step-log", str(two))
    assert stopped["step"] == 4
    # The one worker reads from a fleet of two servers (RemoteLoader loads a Loader's state).
    ray_train(cluster, *common, "--name", "one", "--workers", "1", "--servers", "2",
              "--resume-from", stopped["checkpoint"], "--step-log", str(one))
    before = [ids for rank in range(2) for entry in step_log(two, rank) for ids in entry["ids"]]
    after = [ids for entry in step_log(one, 0) for ids in entry["ids"]]
    # One worker reads the rest of the epoch: every row exactly once across both runs
    # (the rule leaves out at most M - 1 = 0 rows), in the order the rule gives.
    assert len(before) == 2 * 4 * 1000 and sorted(before + after) == list(range(ROWS))
    saved = json.loads(Path(stopped["checkpoint"], "loader-rank0.json").read_text())
    reference = example_loader(criteo, 1000)
    reference.load_state_dict(saved)
    assert after == [i for batch in reference for i in batch["row_id"].tolist()]
