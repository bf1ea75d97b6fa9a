"""Where a Petastorm dataset keeps its Unischema: pickled under the Parquet key-value metadata
key ``dataset-toolkit.unischema.v1`` of the dataset's ``_common_metadata`` file (or of its
``_metadata`` summary, or of a data file's footer when neither exists)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from stoker.petastorm._pickle import load_stored, load_unischema
from stoker.petastorm._rowgroup_index import FieldNotNullIndexer, SingleFieldIndexer
from stoker.petastorm._unischema import Unischema

UNISCHEMA_KEY = b"dataset-toolkit.unischema.v1"
ROWGROUPS_INDEX_KEY = b"dataset-toolkit.rowgroups_index.v1"
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


def resolve_urls(dataset_url_or_urls: str | os.PathLike | Sequence[str | os.PathLike],
                 ) -> tuple[pafs.FileSystem, str, str | list[str]]:
    """resolve_url for a URL or a list of them (Petastorm takes a list of file URLs, of one
    scheme and host): the filesystem, the first path, and the Loader's source (a list for a
    list)."""
    if isinstance(dataset_url_or_urls, (str, os.PathLike)):
        return resolve_url(dataset_url_or_urls)
    urls = [os.fspath(url) for url in dataset_url_or_urls]
    places = {(urlparse(url).scheme or "file", urlparse(url).netloc) for url in urls}
    if len(places) > 1:
        # ValueError and its words, as Petastorm raises it.
        raise ValueError(f"The dataset url list must contain url with the same scheme and "
                         f"netloc (got {sorted(places)})")
    resolved = [resolve_url(url) for url in urls]
    return resolved[0][0], resolved[0][1], [source for _, _, source in resolved]


def find_unischema(filesystem: pafs.FileSystem, path: str, display: str) -> Unischema | None:
    """The Unischema the dataset at ``path`` (a directory, or one of its files) stores, loaded
    by the restricted unpickler; None when it stores none (a plain Parquet dataset)."""
    if filesystem.get_file_info(path).type == pafs.FileType.File:
        stored = _stored(filesystem, path)
        return None if stored is None else load_unischema(
            stored, f"the Unischema stored in '{display}'")
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


def load_rowgroup_index(filesystem: pafs.FileSystem, path: str) -> dict[str, Any]:
    """The indexes (by name) stored in the ``_common_metadata`` of the dataset at ``path``;
    ValueError, in Petastorm's words, when there are none."""
    summary = f"{path}/_common_metadata"
    if filesystem.get_file_info(summary).type != pafs.FileType.File:
        raise ValueError(f"Could not find _common_metadata in '{path}': a rowgroup_selector "
                         f"needs the index Petastorm's build_rowgroup_index stores there")
    with filesystem.open_input_file(summary) as f:
        stored = (pq.read_schema(f).metadata or {}).get(ROWGROUPS_INDEX_KEY)
    if stored is None:
        raise ValueError(f"Row groups index is not available in the dataset metadata file "
                         f"'{summary}' (Petastorm's build_rowgroup_index writes it)")
    index = load_stored(stored, f"the row-group index stored in '{summary}'")
    if not isinstance(index, dict) or not all(
            isinstance(i, (SingleFieldIndexer, FieldNotNullIndexer)) for i in index.values()):
        raise ValueError(f"the row-group index stored in '{summary}' is not a dict of "
                         f"Petastorm indexers")
    return index


def _stored(filesystem: pafs.FileSystem, path: str) -> bytes | None:
    with filesystem.open_input_file(path) as f:
        metadata = pq.read_schema(f).metadata or {}
    return metadata.get(UNISCHEMA_KEY)
