"""A job reading a dataset through a shared cache directory, run as its own process by
test_cache_sharing.py: `python cache_job.py OPTIONS_JSON OUT_JSON`. Writes, per epoch, a hash
of every batch (its columns' bytes, in order) and the loader's stats."""

from __future__ import annotations

import hashlib
import json
import sys

import numpy as np
import stoker


def batch_hash(batch: dict) -> str:
    digest = hashlib.sha256()
    for name in sorted(batch):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(batch[name]).tobytes())
    return digest.hexdigest()


def run(options: dict) -> dict:
    epochs = options.pop("epochs")
    source = options.pop("source")
    loader = stoker.Loader(source, **options)
    hashes = [[batch_hash(batch) for batch in loader] for _ in range(epochs)]
    return {"hashes": hashes, "stats": loader.stats()}


if __name__ == "__main__":
    result = run(json.loads(sys.argv[1]))
    with open(sys.argv[2], "w") as out:
        json.dump(result, out)
