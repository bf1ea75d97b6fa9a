"""Table formats as sources: a Delta Lake or Apache Iceberg table pinned to one version,
resolved by the format's own library (``deltalake``, ``pyiceberg``: optional extras) to the
exact data files of that version and each file's partition values as the table's log lists
them. The engine then reads those files as it reads any list of files, with the partition
values as per-file constants (docs/partitions-and-tables.md)."""

from __future__ import annotations

import datetime
import os
import urllib.parse
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["DeltaTable", "IcebergTable", "Snapshot", "Table", "delta_table", "iceberg_table",
           "pinned_name"]

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
    # The partition columns are columns of the files too (Iceberg identity transforms): their
    # values only prune files.
    stored_in_files: bool = False

    def apply(self, options: Any) -> None:
        """Points the engine's options at this snapshot's files and partition values."""
        options.sources = list(self.files)
        partitioning = options.partitioning
        partitioning.hive = False
        partitioning.schema = self.partition_schema.serialize().to_pybytes()
        partitioning.file_values = self.partition_values
        partitioning.stored_in_files = self.stored_in_files
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


class Table:
    """A table format's table as a Loader source: a snapshot to read, and the same table at
    the snapshot a resume state pins."""

    def snapshot(self, storage: dict[str, Any] | None) -> Snapshot:
        raise NotImplementedError

    def pin(self, pin: dict[str, Any]) -> Table:
        raise NotImplementedError

    @property
    def label(self) -> str:
        """How a mixture names the table when its Source gives no name."""
        raise NotImplementedError


def pinned_name(pin: dict[str, Any]) -> str:
    """How messages name a pinned snapshot."""
    if pin["format"] == "delta":
        return f"Delta table {pin['uri']!r} version {pin['version']}"
    return f"Iceberg table {pin['table']!r} snapshot {pin['snapshot_id']}"


class ResolvedTable(Table):
    """A table already resolved to one snapshot: its files and partition values, no catalog
    or log to read again. What a stoker.ray.Fleet sends its servers (a catalog does not
    pickle, and every server must read the same snapshot)."""

    def __init__(self, resolved: Snapshot, label: str) -> None:
        self.resolved, self._label = resolved, label

    def __repr__(self) -> str:
        return f"stoker.ResolvedTable({pinned_name(self.resolved.pin)})"

    @property
    def label(self) -> str:
        return self._label

    def pin(self, pin: dict[str, Any]) -> ResolvedTable:
        if pin != self.resolved.pin:
            raise ValueError(f"the state was saved reading {pinned_name(pin)}, but this "
                             f"loader reads {pinned_name(self.resolved.pin)}")
        return self

    def snapshot(self, storage: dict[str, Any] | None) -> Snapshot:
        return self.resolved


def resolved(source: Any, storage: dict[str, Any] | None) -> Any:
    """A table source resolved to its snapshot now; any other source as it is."""
    if isinstance(source, Table) and not isinstance(source, ResolvedTable):
        return ResolvedTable(source.snapshot(storage), source.label)
    return source


class DeltaTable(Table):
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

    @property
    def label(self) -> str:
        return self.uri

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


# Arrow types whose Iceberg identity partition values pass to the engine as text as they are.
def _iceberg_text(value: Any, arrow_type: pa.DataType) -> str | None:
    """An identity partition value (as pyiceberg decodes it from the manifest) as the text
    the engine parses for `arrow_type`."""
    if value is None:
        return None
    if pa.types.is_date32(arrow_type) and isinstance(value, int):  # days since the epoch
        return (datetime.date(1970, 1, 1) + datetime.timedelta(days=value)).isoformat()
    if pa.types.is_boolean(arrow_type):
        return "true" if value else "false"
    return str(value)


def _prunable(arrow_type: pa.DataType) -> bool:
    """Types whose identity values Stoker prunes by (others are read, never pruned)."""
    return (pa.types.is_integer(arrow_type) or pa.types.is_string(arrow_type)
            or pa.types.is_large_string(arrow_type) or pa.types.is_boolean(arrow_type)
            or pa.types.is_date32(arrow_type))


def _local_or_uri(path: str) -> str:
    """An Iceberg file location as the engine opens it."""
    if path.startswith("file://"):
        return urllib.parse.unquote(path[len("file://"):])
    if path.startswith(("s3a://", "s3n://")):
        return "s3://" + path.split("://", 1)[1]
    return path


class IcebergTable(Table):
    """An Apache Iceberg table as a Loader source, at ``snapshot_id`` (None: the current
    snapshot when the Loader is made; the snapshot read goes into the resume state)."""

    def __init__(self, catalog: Any, identifier: str, *, snapshot_id: int | None = None) -> None:
        if not isinstance(identifier, str):
            raise TypeError(f"the Iceberg table is named by a string such as 'db.events', got "
                            f"{identifier!r}")
        self.catalog, self.identifier, self.snapshot_id = catalog, identifier, snapshot_id

    def __repr__(self) -> str:
        return (f"stoker.iceberg_table({getattr(self.catalog, 'name', self.catalog)!r}, "
                f"{self.identifier!r}, snapshot_id={self.snapshot_id!r})")

    @property
    def label(self) -> str:
        return self.identifier

    def _pin_of(self, snapshot_id: int) -> dict[str, Any]:
        return {"format": "iceberg", "catalog": self.catalog.name, "table": self.identifier,
                "snapshot_id": snapshot_id}

    def pin(self, pin: dict[str, Any]) -> IcebergTable:
        """This table at the snapshot a resume state names."""
        if {k: v for k, v in pin.items() if k != "snapshot_id"} != {
                k: v for k, v in self._pin_of(0).items() if k != "snapshot_id"}:
            raise ValueError(f"the state was saved reading {pin}, not the Iceberg table "
                             f"{self.identifier!r} of catalog {self.catalog.name!r}")
        if self.snapshot_id is not None and self.snapshot_id != pin["snapshot_id"]:
            raise ValueError(f"the state was saved reading snapshot {pin['snapshot_id']} of the "
                             f"Iceberg table {self.identifier!r}, but this loader pins snapshot "
                             f"{self.snapshot_id}: drop snapshot_id= to resume it")
        return IcebergTable(self.catalog, self.identifier, snapshot_id=pin["snapshot_id"])

    def snapshot(self, storage: dict[str, Any] | None) -> Snapshot:
        """The snapshot's data files and identity partition values, from its manifests."""
        table = self.catalog.load_table(self.identifier)
        where = f"Iceberg table {self.identifier!r}"
        if self.snapshot_id is None:
            current = table.current_snapshot()
            if current is None:
                raise ValueError(f"{where} has no snapshot (no data written yet)")
        else:
            current = table.snapshot_by_id(self.snapshot_id)
            if current is None:
                raise FileNotFoundError(f"{where} snapshot {self.snapshot_id} no longer exists "
                                        f"(expired?); its snapshots now: "
                                        f"{[s.snapshot_id for s in table.snapshots()]}")
        where = f"{where} snapshot {current.snapshot_id}"
        tasks = list(table.scan(snapshot_id=current.snapshot_id).plan_files())
        if not tasks:
            raise ValueError(f"{where} has no data files")
        for task in tasks:
            if task.delete_files:
                raise NotImplementedError(
                    f"{where}: data file {task.file.file_path!r} has "
                    f"{len(task.delete_files)} delete file(s) (merge-on-read deletes); Stoker "
                    f"does not apply them and will not deliver deleted rows. Compact the table "
                    f"(rewrite data files) or read a snapshot without them")
        schema = table.schemas()[current.schema_id] if current.schema_id is not None \
            else table.schema()
        arrow_schema = schema.as_arrow()
        specs = table.specs()
        # Columns with an identity field in every file's spec: their values are exact.
        columns: list[tuple[str, int, pa.DataType]] = []
        for field_ in schema.fields:
            arrow_type = arrow_schema.field(field_.name).type
            if not _prunable(arrow_type):
                continue
            if all(any(p.source_id == field_.field_id and str(p.transform) == "identity"
                       for p in specs[task.file.spec_id].fields) for task in tasks):
                columns.append((field_.name, field_.field_id, arrow_type))
        rows = []
        for task in tasks:
            spec = specs[task.file.spec_id]
            values = []
            for _name, field_id, arrow_type in columns:
                position = next(i for i, p in enumerate(spec.fields)
                                if p.source_id == field_id and str(p.transform) == "identity")
                values.append(_iceberg_text(task.file.partition[position], arrow_type))
            rows.append((_local_or_uri(task.file.file_path), values))
        rows.sort(key=lambda row: row[0])
        return Snapshot(files=[path for path, _ in rows],
                        partition_schema=pa.schema([(n, t) for n, _, t in columns]),
                        partition_values=[values for _, values in rows],
                        pin=self._pin_of(current.snapshot_id), stored_in_files=True)


def iceberg_table(catalog: Any, identifier: str, *, snapshot_id: int | None = None
                  ) -> IcebergTable:
    """An Apache Iceberg table as a Loader source: ``stoker.Loader(stoker.iceberg_table(
    catalog, "db.events", snapshot_id=...), ...)``, with ``catalog`` a pyiceberg catalog
    (``pyiceberg.catalog.load_catalog(...)``; a SQL catalog on SQLite works). The data files
    of ``snapshot_id`` (None: the current snapshot) come from its manifests through
    ``pyiceberg``; columns partitioned by an identity transform prune files by the manifests'
    partition values (other transforms prune nothing). The snapshot read is pinned in
    ``state_dict()``. Tables with delete files are refused."""
    return IcebergTable(catalog, identifier, snapshot_id=snapshot_id)
