"""One rank of a job on this node, for test_autotune.py: reads epochs of DATASET for SECONDS
under the controller, sleeping STEP_MS after each batch (0: as fast as the loader goes), then
prints its stats()["autotune"] as JSON. The launcher's variables (LOCAL_WORLD_SIZE, LOCAL_RANK,
TORCHELASTIC_RUN_ID) come from the environment, as under torchrun."""

from __future__ import annotations

import json
import sys
import time

import stoker


def main() -> None:
    dataset, seconds, step_ms = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    loader = stoker.Loader(dataset, batch_size=256, seed=1,
                           autotune={"window_batches": 4, "window_seconds": 0.05})
    deadline = time.monotonic() + seconds
    others_seen = 0.0
    while time.monotonic() < deadline:
        for _ in loader:
            if step_ms:
                time.sleep(step_ms / 1e3)
            if time.monotonic() >= deadline:
                break
        node = loader.stats()["autotune"].get("node") or {}
        others_seen = max(others_seen, node.get("others_used", 0.0))
    tune = loader.stats()["autotune"]
    tune["others_seen"] = others_seen
    print(json.dumps(tune))


if __name__ == "__main__":
    main()
