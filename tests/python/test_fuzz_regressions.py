"""Replays the Python fuzz targets' kept inputs (tests/fuzz/regressions/transform_spec/ and
state_dict/: every input that once broke the contract) and a fixed set of pseudo-random ones
through the same target code `make fuzz` runs under atheris (tests/fuzz/README.md)."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).parent.parent / "fuzz"
TARGETS = ("transform_spec", "state_dict")


def _target(name: str):
    sys.path.insert(0, str(FUZZ / "python"))
    spec = importlib.util.spec_from_file_location(name, FUZZ / "python" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.run


def _inputs(kind: str) -> list[tuple[str, bytes]]:
    """The kept inputs of `kind`, which must be there (a folder moved or emptied would
    otherwise leave only the random ones to pass), then the random ones."""
    folder = FUZZ / "regressions" / kind
    kept = sorted(path for path in folder.glob("*") if path.name != "README.md")
    assert kept, f"no kept inputs in {folder} (the folder is missing or empty)"
    rng = random.Random(17)
    fresh = [(f"random-{i}", rng.randbytes(rng.randrange(1, 200))) for i in range(40)]
    return [(path.name, path.read_bytes()) for path in kept] + fresh


@pytest.mark.parametrize("kind", TARGETS)
def test_fuzz_inputs_keep_the_contract(kind: str) -> None:
    run = _target(kind)
    for name, data in _inputs(kind):
        try:
            run(data)
        except Exception as error:  # the report names the input
            raise AssertionError(f"{kind} input {name} ({data!r}) broke the contract") from error
