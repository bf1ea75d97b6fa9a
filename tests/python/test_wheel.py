"""`pip wheel .` gives a wheel that installs into a fresh venv holding only pyarrow and numpy,
with no compiler, and loads data there."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

_SMOKE = """
import sys, stoker, pyarrow as pa, pyarrow.parquet as pq
pq.write_table(pa.table({"x": list(range(1000))}), sys.argv[1] + "/d.parquet", row_group_size=100)
batches = list(stoker.Loader(sys.argv[1], batch_size=256, seed=1))
assert sorted(int(v) for b in batches for v in b["x"]) == list(range(1000))
print("ok", stoker.__file__, pa.__version__)
"""


@pytest.mark.timeout(900)
def test_the_wheel_installs_without_a_compiler_and_loads_data(tmp_path: Path) -> None:
    # The build reuses `make build`'s folder (pyproject's build-dir), so it only packs.
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                    "-q", "-w", str(wheels), str(REPO)], check=True, timeout=800)
    (wheel,) = wheels.glob("stoker-*.whl")

    env_dir = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = str(env_dir / "bin" / "python")
    no_compiler = dict(os.environ, CC="/bin/false", CXX="/bin/false", PIP_NO_INPUT="1")
    no_compiler.pop("PYTHONPATH", None)
    subprocess.run([python, "-m", "pip", "install", "-q", "--only-binary=:all:", str(wheel)],
                   check=True, timeout=600, env=no_compiler)
    listed = subprocess.run([python, "-m", "pip", "list", "--format=freeze"], check=True,
                            capture_output=True, text=True, env=no_compiler).stdout
    names = {line.split("==")[0].lower() for line in listed.split()}
    assert names - {"pip", "setuptools"} == {"stoker", "pyarrow", "numpy"}
    data = tmp_path / "data"
    data.mkdir()
    out = subprocess.run([python, "-c", _SMOKE, str(data)], check=True, capture_output=True,
                         text=True, timeout=120, env=no_compiler, cwd=tmp_path).stdout
    assert out.startswith("ok " + str(env_dir))
