"""Where a Petastorm dataset keeps its Unischema: pickled under the Parquet key-value metadata
key ``dataset-toolkit.unischema.v1`` of the dataset's ``_common_metadata`` file (or of its
``_metadata`` summary, or of a data file's footer when neither exists)."""

from __future__ import annotations

import os
from urllib.parse import urlparse

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from stoker.petastorm._pickle import load_unischema
from stoker.petastorm._unischema import Unischema

UNISCHEMA_KEY = b"dataset-toolkit.unischema.v1"
# The summary files Petastorm's materialize_dataset writes, in the order they are looked in.
_SUMMARY_FILES = ("_common_metadata", "_metadata")


def resolve_url(dataset_url: str | os.PathLike) -> tuple[pafs.FileSystem, str, str]:
    """(filesystem, path within it, the source Stoker's Loader reads) for a Petastorm dataset
    URL (``file:///...``, ``s3://...``) or a plain local path."""
    url = os.fspath(dataset_url)
    scheme = urlparse(url).scheme
    if scheme in ("", "file"):
        path = urlparse(url).path if scheme == "file" else url
        path = os.path.abspath(path)
        return pafs.LocalFileSystem(), path, path
    filesystem, path = pafs.FileSystem.from_uri(url)
    return filesystem, path.rstrip("/"), url.rstrip("/")


def find_unischema(filesystem: pafs.FileSystem, path: str, display: str) -> Unischema | None:
    """The Unischema the dataset at ``path`` stores, loaded by the restricted unpickler; None
    when it stores none (a plain Parquet dataset)."""
    for name in _SUMMARY_FILES:
        summary = f"{path}/{name}"
        if filesystem.get_file_info(summary).type == pafs.FileType.File:
            stored = _stored(filesystem, summary)
            if stored is not None:
                return load_unischema(stored, f"the Unischema stored in '{display}/{name}'")
    selector = pafs.FileSelector(path, recursive=True)
    files = sorted(info.path for info in filesystem.get_file_info(selector)
                   if info.type == pafs.FileType.File and info.path.endswith(".parquet"))
    if files:
        stored = _stored(filesystem, files[0])
        if stored is not None:
            return load_unischema(stored, f"the Unischema stored in '{files[0]}'")
    return None


def _stored(filesystem: pafs.FileSystem, path: str) -> bytes | None:
    with filesystem.open_input_file(path) as f:
        metadata = pq.read_schema(f).metadata or {}
    return metadata.get(UNISCHEMA_KEY)
