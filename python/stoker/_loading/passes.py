"""Framework adapters' passes over a loader: each complete pass is one epoch of the loader,
in order; a pass left before its end is read again from its start by the next one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


class Passes:
    """Hands out passes over `loader`. Frameworks start passes they never finish — tf.distribute
    reads a few batches ahead on an iterator it drops, Keras peeks at the first batches to
    learn their spec — and a plain ``iter(loader)`` each time would spend an epoch on every
    look. So the next pass after an unfinished one goes back to where that one started (the
    loader's ``state_dict()``), and no epoch is half used."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader
        self._unfinished: dict[str, Any] | None = None  # the start of a pass left unfinished

    def next_pass(self) -> Iterator[Any]:
        """The batches of the next pass, one epoch; it counts as finished once exhausted."""
        if self._unfinished is not None:
            self._loader.load_state_dict(self._unfinished)
        start = self._unfinished = self._loader.state_dict()
        yield from self._loader
        if self._unfinished is start:
            self._unfinished = None
