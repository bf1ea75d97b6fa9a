"""The type stub of the extension (python/stoker/_core.pyi, with py.typed: type checkers and
IDEs see the engine's classes and functions with their signatures and docs) is what nanobind's
stubgen writes for the extension as built: a binding changed without regenerating it fails
here. Regenerate with

    .venv/bin/python -m nanobind.stubgen -m stoker._core -o python/stoker/_core.pyi
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import stoker

STUB = Path(__file__).resolve().parents[2] / "python" / "stoker" / "_core.pyi"


def test_the_committed_stub_is_the_extensions(tmp_path: Path) -> None:
    out = tmp_path / "_core.pyi"
    subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-q", "-m", "stoker._core",
                    "-o", str(out)], check=True, capture_output=True, text=True, timeout=120)
    assert out.read_text() == STUB.read_text(), (
        "python/stoker/_core.pyi is out of date: regenerate it (see this file's docstring)")


def test_the_installed_package_carries_the_stub_and_py_typed() -> None:
    package = Path(stoker.__file__).parent
    assert (package / "_core.pyi").is_file()
    assert (package / "py.typed").is_file()
