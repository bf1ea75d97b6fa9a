"""Fuzz target: resume states through Loader.load_state_dict — a real state_dict() taken
mid-epoch, its values replaced, keys dropped or added — and, when the loader accepts one,
the rest of the epoch. A bad state may only raise the natural built-in exceptions
(fuzz_inputs.EXPECTED_ERRORS); an accepted one may never deliver more rows than an epoch
has.

    python tests/fuzz/python/state_dict.py [libFuzzer flags] [corpus dirs]
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import stoker
from fuzz_inputs import EXPECTED_ERRORS, ROWS, Values, dataset


def _loader(world_size: int = 1, rank: int = 0) -> stoker.Loader:
    return stoker.Loader(str(dataset()), batch_size=16, shuffle_window=120, num_threads=2,
                         seed=3, output="arrow", rank=rank, world_size=world_size)


def saved_state() -> dict[str, Any]:
    """A rank's state after 3 batches of epoch 0, at world size 2."""
    global _SAVED
    if _SAVED is None:
        loader = _loader(world_size=2, rank=1)
        batches = iter(loader)
        for _ in range(3):
            next(batches)
        _SAVED = loader.state_dict()
        batches.close()
    return dict(_SAVED)


_SAVED: dict[str, Any] | None = None


def mutate(values: Values, state: dict[str, Any]) -> Any:
    keys = sorted(state)
    for _ in range(values.below(4)):
        what = values.below(6)
        key = values.pick(keys)
        if what == 0:
            state.pop(key, None)
        elif what == 1:
            state[values.text()] = values.value()
        elif key == "rounds" and what in (2, 3):
            state[key] = [[values.integer(), values.integer()] for _ in range(values.below(3))]
        elif key in ("epoch", "rank", "world_size", "version") and what in (2, 3):
            state[key] = values.integer()
        else:
            state[key] = values.value()
    return state if values.below(16) < 15 else values.value()


def run(data: bytes) -> None:
    values = Values(data)
    state = mutate(values, saved_state())
    loader = _loader(world_size=values.pick([1, 2, 3]))
    strict = bool(values.below(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            loader.load_state_dict(state, strict=strict)
        except EXPECTED_ERRORS:
            return
    try:
        rows = sum(batch.num_rows for batch in loader)
    except EXPECTED_ERRORS:
        return
    if rows > ROWS:
        raise AssertionError(f"after loading {state!r} an epoch delivered {rows} rows; "
                             f"it has {ROWS}")


if __name__ == "__main__":
    import atheris

    atheris.instrument_all()  # coverage of the Python code: stoker's and pyarrow's
    atheris.Setup(sys.argv, run)
    atheris.Fuzz()
