"""Writes the datasets Petastorm 0.13.1's reader tests read, with Petastorm's own writers
(petastorm/tests/test_common.py, through Spark), into a cache folder that run.sh reuses. Runs
in Petastorm's environment (.bench-petastorm-venv: pyspark 3.5.3 and a JRE):

    .bench-petastorm-venv/bin/python tests/petastorm/build_fixtures.py build/petastorm-fixtures

Each call in fixture_calls.CALLS becomes OUT/<key>/dataset (the Parquet store) and
OUT/<key>/data.pkl (the rows the writer returned, which the tests compare against). OUT/stamp
holds a hash of this file and fixture_calls.py: when it matches, nothing is rewritten."""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fixture_calls import CALLS, call_key


def sources_hash() -> str:
    digest = hashlib.sha256()
    for name in ("build_fixtures.py", "fixture_calls.py"):
        digest.update((HERE / name).read_bytes())
    return digest.hexdigest()


def main() -> int:
    out = Path(sys.argv[1]).resolve()
    stamp = out / "stamp"
    expected = sources_hash()
    if stamp.exists() and stamp.read_text() == expected:
        return 0
    from petastorm.tests import test_common

    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for writer, rows, kwargs in CALLS:
        key = call_key(writer, rows, kwargs)
        folder = out / key
        folder.mkdir()
        print(f"writing {key}", flush=True)
        data = getattr(test_common, writer)(f"file://{folder / 'dataset'}", rows, **kwargs)
        with open(folder / "data.pkl", "wb") as f:
            pickle.dump(data, f)
    stamp.write_text(expected)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main())
