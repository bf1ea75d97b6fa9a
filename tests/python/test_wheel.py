"""`make wheel`'s wheel (scripts/build_wheel.py: packed, then repaired by auditwheel) carries a
manylinux tag, vendors the system libraries the codecs link that manylinux does not promise
(libpng, libjpeg; zlib's libz.so.1 is on every manylinux policy's list), leaves pyarrow's to the
pyarrow dependency, and installs into a fresh venv holding only pyarrow and numpy, with no compiler,
and loads data there. CI runs it on both platforms (Debian 12 / Python 3.11 and Debian 13 /
Python 3.13: `make test-trixie`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
import zipfile
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
# (Importing stoker loads the extension, and with it the vendored libpng, libjpeg and zlib.)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # The build reuses `make build`'s tree (build/cpp) as configured, so it only packs.
    out = tmp_path_factory.mktemp("wheels")
    subprocess.run([sys.executable, str(REPO / "scripts" / "build_wheel.py"), str(out)],
                   check=True, timeout=800)
    (found,) = out.glob("stoker-*.whl")
    return found


def test_the_wheel_is_manylinux_and_vendors_only_system_libraries(wheel: Path) -> None:
    assert re.search(r"-manylinux_2_\d+_x86_64\.whl$", wheel.name), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    vendored = sorted(Path(n).name for n in names if n.startswith("stoker.libs/") and n[-1] != "/")
    stems = {re.sub(r"-[0-9a-f]{8}\.so.*$", "", name) for name in vendored}
    assert stems == {"libpng16", "libjpeg"}, vendored
    assert not [n for n in vendored if re.match(r"lib(arrow|parquet)", n)], vendored


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_wheel_installs_without_a_compiler_and_loads_data(wheel: Path,
                                                              tmp_path: Path) -> None:
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
