"""The pytest plugin that runs Petastorm 0.13.1's own reader tests against stoker.petastorm
(run.sh loads it with ``-p stoker_plugin``). Everything the tests use stays Petastorm's code
except:

- the reader API: ``petastorm.reader`` (make_reader, make_batch_reader, Reader),
  ``petastorm.make_reader`` / ``make_batch_reader`` / ``TransformSpec``,
  ``petastorm.errors.NoDataAvailableError``,
  ``petastorm.transform.TransformSpec`` and ``petastorm.pytorch``'s DataLoader,
  BatchedDataLoader and InMemBatchedDataLoader are stoker.petastorm's;
- the dataset writers of ``petastorm/tests/test_common.py`` copy the dataset Petastorm's own
  writer made for the same call (build_fixtures.py, through Spark) instead of starting Spark;
- Petastorm 0.13.1 predates numpy 2, pyarrow 15 and Python 3.11, which Stoker's environment
  has: the numpy aliases it names (np.unicode_, np.string_, np.float), the legacy pyarrow
  filesystem classes it imports and inspect.getargspec are put back;
- the tests in exclusions.txt are deselected, each for the reason given there.

The fixtures folder is in $STOKER_PETASTORM_FIXTURES."""

from __future__ import annotations

import inspect
import os
import pickle
import shutil
import sys
import types
import warnings
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fixture_calls import call_key

# numpy 2 removed these aliases; Petastorm 0.13.1 and its tests name them.
np.unicode_ = np.str_
np.string_ = np.bytes_
np.float = float
# Python 3.11 removed inspect.getargspec; test_tf_utils.py (imported by the NGram and weighted
# sampling tests) calls it when imported.
inspect.getargspec = inspect.getfullargspec

# pyarrow 15 removed the legacy filesystem modules Petastorm 0.13.1 imports: each class it
# names from them (for isinstance checks and HDFS, which no test here reaches) is put back empty.
for _module, _classes in (("filesystem", ("LocalFileSystem",)), ("hdfs", ("HadoopFileSystem",))):
    try:
        __import__(f"pyarrow.{_module}")
    except ImportError:
        import pyarrow

        _legacy = types.ModuleType(f"pyarrow.{_module}")
        for _class in _classes:
            setattr(_legacy, _class, type(_class, (), {}))
        sys.modules[f"pyarrow.{_module}"] = _legacy
        setattr(pyarrow, _module, _legacy)
import pyarrow

if not hasattr(pyarrow, "LocalFileSystem"):  # petastorm.spark, imported by its conftest.py
    pyarrow.LocalFileSystem = sys.modules["pyarrow.filesystem"].LocalFileSystem

import stoker.petastorm
import stoker.petastorm.pytorch

# Stands in for petastorm.reader before ``import petastorm`` imports the real one.
_reader = types.ModuleType("petastorm.reader")
_reader.make_reader = stoker.petastorm.make_reader
_reader.make_batch_reader = stoker.petastorm.make_batch_reader
_reader.Reader = stoker.petastorm.Reader
sys.modules["petastorm.reader"] = _reader

import petastorm
import petastorm.errors
import petastorm.pytorch
import petastorm.transform
from petastorm.tests import test_common

petastorm.reader = _reader
if hasattr(stoker.petastorm, "NoDataAvailableError"):
    petastorm.NoDataAvailableError = stoker.petastorm.NoDataAvailableError
    petastorm.errors.NoDataAvailableError = stoker.petastorm.NoDataAvailableError
petastorm.TransformSpec = stoker.petastorm.TransformSpec
petastorm.transform.TransformSpec = stoker.petastorm.TransformSpec
for _name in ("DataLoader", "BatchedDataLoader", "InMemBatchedDataLoader"):
    if hasattr(stoker.petastorm.pytorch, _name):
        setattr(petastorm.pytorch, _name, getattr(stoker.petastorm.pytorch, _name))

FIXTURES = Path(os.environ["STOKER_PETASTORM_FIXTURES"])


def _prebuilt(writer: str):
    def write(output_url, rows, **kwargs):
        key = call_key(writer, rows, kwargs)
        folder = FIXTURES / key
        if not folder.is_dir():
            raise RuntimeError(f"no prebuilt dataset for {writer}({rows!r}, {kwargs}): add the "
                               f"call to tests/petastorm/fixture_calls.py")
        target = urlparse(output_url).path
        shutil.copytree(folder / "dataset", target, dirs_exist_ok=True)
        with open(folder / "data.pkl", "rb") as f, warnings.catch_warnings():
            # Pickled by numpy 1.26 (numpy.core), read by numpy 2 (numpy._core).
            warnings.simplefilter("ignore", DeprecationWarning)
            return pickle.load(f)
    write.__name__ = writer
    return write


for _writer in ("create_test_dataset", "create_test_scalar_dataset",
                "create_many_columns_non_petastorm_dataset"):
    setattr(test_common, _writer, _prebuilt(_writer))


def _exclusions() -> dict[str, str]:
    excluded = {}
    for line in (HERE / "exclusions.txt").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        test_id, _, reason = line.partition(" ")
        excluded[test_id] = reason.strip()
    return excluded


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselects the excluded tests: an entry is a file::test name (every parametrization) or
    a whole file."""
    excluded = _exclusions()
    keep, drop = [], []
    for item in items:
        file_name = Path(item.fspath).stem
        base = item.originalname if hasattr(item, "originalname") else item.name
        if file_name in excluded or f"{file_name}::{base}" in excluded \
                or f"{file_name}::{item.name}" in excluded:
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


class _PytestLoggerHooks:
    """The hook of the pytest-logger plugin that Petastorm's conftest.py implements: declared
    so that pytest accepts it (the plugin itself is not needed)."""

    @pytest.hookspec(historic=True)
    def pytest_logger_config(self, logger_config):
        pass


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(_PytestLoggerHooks)
