"""Table formats as sources: a Delta Lake or Apache Iceberg table pinned to one version,
resolved by the format's own library (``deltalake``, ``pyiceberg``: optional extras) to the
exact data files of that version and each file's partition values as the table's log lists
them. The engine then reads those files as it reads any list of files, with the partition
values as per-file constants (docs/partitions-and-tables.md)."""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["DeltaTable", "Snapshot", "delta_table"]

# Delta reader features whose files Stoker reads correctly as plain Parquet.
_DELTA_READER_FEATURES_READ = {"timestampNtz", "v2Checkpoint", "vacuumProtocolCheck",
                               "typeWidening", "typeWidening-preview"}


@dataclass
class Snapshot:
    """One version of a table: its data files (sorted), the partition columns' schema and
    each file's values as text (None for null), and the pin that names the version in a
    resume state."""

    files: list[str]
    partition_schema: pa.Schema
    partition_values: list[list[str | None]]
    pin: dict[str, Any]

    def apply(self, options: Any) -> None:
        """Points the engine's options at this snapshot's files and partition values."""
        options.sources = list(self.files)
        partitioning = options.partitioning
        partitioning.hive = False
        partitioning.schema = self.partition_schema.serialize().to_pybytes()
        partitioning.file_values = self.partition_values
        options.partitioning = partitioning


def _delta_storage(storage: dict[str, Any] | None) -> dict[str, str]:
    """deltalake's storage_options from a Loader's (the same store, the same credentials)."""
    if not storage:
        return {}
    out = {}
    scheme = storage.get("scheme") or "https"
    if storage.get("endpoint_override"):
        out["AWS_ENDPOINT_URL"] = f"{scheme}://{storage['endpoint_override']}"
        if scheme == "http":
            out["AWS_ALLOW_HTTP"] = "true"
    names = {"region": "AWS_REGION", "access_key": "AWS_ACCESS_KEY_ID",
             "secret_key": "AWS_SECRET_ACCESS_KEY", "session_token": "AWS_SESSION_TOKEN"}
    for key, name in names.items():
        if storage.get(key):
            out[name] = str(storage[key])
    if storage.get("anonymous"):
        out["AWS_SKIP_SIGNATURE"] = "true"
    return out


def _as_text(column: Any) -> list[str | None]:
    """Partition values from the log (typed by deltalake) as the text the engine parses."""
    array = pa.array(column) if not isinstance(column, (pa.Array, pa.ChunkedArray)) else column
    if pa.types.is_timestamp(array.type):
        return [None if v is None else v.isoformat(sep=" ") for v in array.to_pylist()]
    return pc.cast(array, pa.string()).to_pylist()


class DeltaTable:
    """A Delta Lake table as a Loader source, at ``version`` (None: the latest when the
    Loader is made; the version read goes into the resume state either way)."""

    def __init__(self, uri: str | os.PathLike, *, version: int | None = None) -> None:
        uri = os.fspath(uri)
        uri = uri.removeprefix("delta://")
        if "://" not in uri:
            uri = os.path.abspath(uri)
        if version is not None and (not isinstance(version, int) or version < 0):
            raise ValueError(f"version must be an int >= 0 or None, got {version!r}")
        self.uri, self.version = uri, version

    def __repr__(self) -> str:
        return f"stoker.delta_table({self.uri!r}, version={self.version!r})"

    def pin(self, pin: dict[str, Any]) -> DeltaTable:
        """This table at the version a resume state names."""
        if pin.get("format") != "delta" or pin.get("uri") != self.uri:
            raise ValueError(f"the state was saved reading {pin}, not the Delta table "
                             f"{self.uri!r}")
        if self.version is not None and self.version != pin["version"]:
            raise ValueError(f"the state was saved reading version {pin['version']} of the "
                             f"Delta table {self.uri!r}, but this loader pins version "
                             f"{self.version}: drop version= to resume it")
        return DeltaTable(self.uri, version=pin["version"])

    def snapshot(self, storage: dict[str, Any] | None) -> Snapshot:
        """The version's files and partition values, read from the table's log."""
        try:
            import deltalake
        except ImportError as error:
            raise ImportError("reading a Delta table needs the deltalake package: "
                              "pip install 'stoker[delta]'") from error
        where = f"Delta table {self.uri!r}" + (
            "" if self.version is None else f" version {self.version}")
        try:
            table = deltalake.DeltaTable(self.uri, version=self.version,
                                         storage_options=_delta_storage(storage))
        except Exception as error:  # deltalake's own classes; the message says which
            if self.version is not None:
                raise FileNotFoundError(
                    f"{where} cannot be loaded (its log entries may have been cleaned up or "
                    f"vacuumed): {error}") from error
            raise FileNotFoundError(f"{where} cannot be loaded: {error}") from error
        version = table.version()
        where = f"Delta table {self.uri!r} version {version}"
        _refuse_delta_features(table, where)
        partition_columns = list(table.metadata().partition_columns)
        schema = pa.schema(table.schema().to_arrow())
        partition_schema = pa.schema([schema.field(name) for name in partition_columns])
        actions = pa.table(table.get_add_actions(flatten=False))
        uris = table.file_uris()
        if len(uris) != actions.num_rows:
            raise RuntimeError(f"{where}: deltalake listed {len(uris)} files but "
                               f"{actions.num_rows} add actions")
        values_by_column = []
        if partition_columns:
            partitions = actions.column("partition").combine_chunks()
            values_by_column = [_as_text(partitions.field(name)) for name in partition_columns]
        rows = []
        for i, (uri, path) in enumerate(zip(uris, actions.column("path").to_pylist())):
            if not urllib.parse.unquote(uri).endswith(urllib.parse.unquote(path)):
                raise RuntimeError(f"{where}: file {uri!r} does not match its add action "
                                   f"{path!r}")
            rows.append((uri, [column[i] for column in values_by_column]))
        if not rows:
            raise ValueError(f"{where} has no data files")
        rows.sort(key=lambda row: row[0])
        return Snapshot(files=[uri for uri, _ in rows], partition_schema=partition_schema,
                        partition_values=[values for _, values in rows],
                        pin={"format": "delta", "uri": self.uri, "version": version})


def _refuse_delta_features(table: Any, where: str) -> None:
    """Deletion vectors (rows marked deleted beside an unchanged file) and reader features
    that change how files are read are refused, never read wrongly."""
    features = set(table.protocol().reader_features or [])
    if "deletionVectors" in features:
        vectors = pa.RecordBatchReader.from_stream(table.deletion_vectors()).read_all()
        files = vectors.column("filepath").to_pylist()
        if files:
            raise NotImplementedError(
                f"{where} has deletion vectors on {len(files)} file(s) (e.g. {files[0]!r}): "
                f"Stoker does not apply them and will not deliver deleted rows. Rewrite the "
                f"files (OPTIMIZE ... or REORG TABLE ... APPLY (PURGE)) or read a version "
                f"without them")
    mapping = table.metadata().configuration.get("delta.columnMapping.mode", "none")
    if mapping != "none":
        raise NotImplementedError(f"{where} uses column mapping (mode {mapping!r}): its "
                                  f"Parquet column names are not the table's; Stoker does not "
                                  f"read it")
    unknown = sorted(features - _DELTA_READER_FEATURES_READ - {"deletionVectors"})
    if unknown:
        raise NotImplementedError(f"{where} needs reader features Stoker does not implement: "
                                  f"{', '.join(unknown)}")


def delta_table(uri: str | os.PathLike, *, version: int | None = None) -> DeltaTable:
    """A Delta Lake table as a Loader source: ``stoker.Loader(stoker.delta_table(path,
    version=3), ...)``. ``uri`` is a local path or ``s3://bucket/prefix`` (the Loader's
    ``storage_options`` reach it too); ``delta://`` before it is accepted. The files and
    partition values of ``version`` (None: the latest) come from the table's log through
    ``deltalake``; the version read is pinned in ``state_dict()``, so a resume reads the
    same snapshot after the table has grown."""
    return DeltaTable(uri, version=version)
