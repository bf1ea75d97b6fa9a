"""Stoker on Ray (docs/ray.md; the optional extra ``stoker[ray]``): a fleet of Stoker Flight
servers run as Ray actors, placed and restarted by Ray, named so that any job of the cluster
finds it, and read by ``stoker.RemoteLoader(fleet)``.

    fleet = stoker.ray.Fleet.start("s3://bucket/train/", num_servers=4, name="train-data",
                                   batch_size=4096, seed=7)
    loader = stoker.RemoteLoader(fleet, rank=rank, world_size=world_size, output="torch")
"""

from stoker.ray._fleet import Fleet

__all__ = ["Fleet"]
