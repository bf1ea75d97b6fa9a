"""A fleet decodes each window once: with 1 to 4 real `stoker serve` servers sharing one
epoch, the batches are a local Loader's, the units (row groups) the servers decoded sum to the
dataset's, and their decode CPU-seconds do not grow with the servers (docs/serve.md, "How
several servers share a plan")."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import stoker
from conftest import assert_same_batches
from pyarrow import flight
from stoker._remote import remote_loader as _remote_loader
from stoker_devtools.serve import COLUMNS, OPTIONS


def action(client: flight.FlightClient, kind: str) -> dict:
    (result,) = client.do_action(flight.Action(kind, b""))
    return json.loads(result.body.to_pybytes())


def server_stats(location: str) -> dict:
    return action(flight.FlightClient(location), "stats")


def dataset_units(path: Path) -> int:
    return sum(pq.ParquetFile(f).metadata.num_row_groups for f in sorted(path.glob("*.parquet")))


def test_each_unit_is_decoded_once_across_one_to_four_servers(criteo: Path, servers) -> None:
    expected = list(stoker.Loader(criteo, columns=COLUMNS, **OPTIONS))
    units = dataset_units(criteo)
    cpu = {}
    for count in (1, 2, 3, 4):
        started = [servers() for _ in range(count)]
        locations = [s.location for s in started]
        remote = stoker.RemoteLoader(locations, columns=COLUMNS, **OPTIONS)
        assert_same_batches(list(remote), expected)
        stats = [server_stats(location) for location in locations]
        decoded = [s["units_decoded"] for s in stats]
        # One window per server at a time: each unit decoded by exactly one server.
        assert sum(decoded) == units, (count, decoded)
        if count > 1:
            assert all(d > 0 for d in decoded), decoded  # every server took its share
            # batch_size 700 does not divide a window's rows: batches span two chunks
            assert remote.stats()["joined_batches"] > 0
        for s in stats:
            (stream,) = s["streams"]
            assert (stream["chunk_rows"] > 0) == (count > 1) and stream["shards"] == count
            assert stream["work"]["units_decoded"] == s["units_decoded"]
        cpu[count] = sum(s["unit_cpu_seconds"] for s in stats)
        for server in started:
            server.stop()
    # Thread CPU time of the same units' work: about the same whatever the servers (before
    # shares of windows each server decoded every window, K times the work).
    assert cpu[4] <= 1.5 * cpu[1] + 0.05, cpu


@pytest.mark.parametrize("world_size", [2, 3])
def test_ranks_over_servers_decode_what_their_local_loaders_decode(criteo: Path, servers,
                                                                   world_size: int) -> None:
    started = [servers() for _ in range(3)]
    locations = [s.location for s in started]
    before = sum(server_stats(location)["units_decoded"] for location in locations)
    local_units = 0
    for rank in range(world_size):
        reference = stoker.Loader(criteo, columns=COLUMNS, rank=rank, world_size=world_size,
                                  **OPTIONS)
        remote = stoker.RemoteLoader(locations, rank=rank, world_size=world_size, **OPTIONS)
        assert_same_batches(list(remote), list(reference))
        local_units += reference.stats()["units_read"]
    after = sum(server_stats(location)["units_decoded"] for location in locations)
    # Each rank's windows, each decoded by one server: what the ranks' own loaders read.
    assert after - before == local_units


def test_a_resumed_epoch_over_servers_continues_exactly(criteo: Path, servers) -> None:
    locations = [servers().location for _ in range(2)]
    remote = stoker.RemoteLoader(locations, columns=COLUMNS, **OPTIONS)
    expected = list(stoker.Loader(criteo, columns=COLUMNS, **OPTIONS))
    iterator = iter(remote)
    head = [next(iterator) for _ in range(5)]
    state = remote.state_dict()
    resumed = stoker.RemoteLoader(locations, columns=COLUMNS, **OPTIONS)
    resumed.load_state_dict(state)
    assert_same_batches(head + list(resumed), expected)


def test_old_style_tickets_are_still_served(criteo: Path, servers) -> None:
    """A ticket without chunk_rows (chunks of batches) is served as before."""
    server = servers()
    client = flight.FlightClient(server.location)
    config = action(client, "config")
    assert config["window_shares"] is True
    expected = list(stoker.Loader(criteo, columns=COLUMNS, output="arrow", **OPTIONS))
    ticket = stoker._core.encode_ticket(config["config"], epoch=0, rank=0, world_size=1,
                                        rounds=[], shards=2, shard=1, chunk=3)
    got = client.do_get(flight.Ticket(ticket)).read_all().to_batches()
    mine = [b for i, b in enumerate(expected) if (i // 3) % 2 == 1]
    assert sum(b.num_rows for b in got) == sum(b.num_rows for b in mine)


class _Fleet:
    """What RemoteLoader reads as a fleet: the addresses it answers now."""

    def __init__(self, locations: list[str]) -> None:
        self.locations = locations

    def addresses(self, timeout: float | None = None) -> list[str]:
        return list(self.locations)


@pytest.mark.parametrize(("before", "after"), [(3, 2), (2, 1)])
def test_a_fleet_shrunk_mid_epoch_deals_its_windows_again(criteo: Path, servers, before: int,
                                                          after: int) -> None:
    """A server stopped mid-epoch, the fleet answering the others: the reader finds it at the
    next chunk's start or by a failed read, whichever comes first, the rest of the epoch is
    shared over the servers left (at 1, whole batches again) from the batch needed, and the
    batches are still the plan's."""
    expected = list(stoker.Loader(criteo, columns=COLUMNS, **OPTIONS))
    started = [servers() for _ in range(before)]
    fleet = _Fleet([s.location for s in started])
    remote = stoker.RemoteLoader(fleet, columns=COLUMNS, reconnect_timeout=20, **OPTIONS)
    got = []
    for i, batch in enumerate(remote):
        got.append(batch)
        if i == len(expected) // 3:
            started[-1].kill()
            fleet.locations = fleet.locations[:after]
    assert_same_batches(got, expected)
    stats = remote.stats()
    assert stats["reconnects"] + stats["fleet_changes"] >= 1


def test_a_fleet_grown_mid_epoch_serves_from_the_next_chunk(
        criteo: Path, servers, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server added to the fleet mid-epoch, no read failing: the reader finds it at the
    next chunk's start, deals the rest of the epoch over both, and the new server decodes and
    sends a share of it; the batches are still the plan's."""
    # Every chunk's start looks (this epoch takes well under the second between looks).
    monkeypatch.setattr(_remote_loader, "FLEET_LOOK_SECONDS", 0.0)
    expected = list(stoker.Loader(criteo, columns=COLUMNS, **OPTIONS))
    first = servers()
    fleet = _Fleet([first.location])
    remote = stoker.RemoteLoader(fleet, columns=COLUMNS, **OPTIONS)
    got, second = [], None
    for i, batch in enumerate(remote):
        got.append(batch)
        if i == 2:
            second = servers()
            fleet.locations = [first.location, second.location]
    assert_same_batches(got, expected)
    assert remote.stats()["fleet_changes"] == 1 and remote.stats()["reconnects"] == 0
    assert server_stats(second.location)["units_decoded"] > 0
