"""The Unischemas of a reader: one inferred for a plain Parquet dataset (which stores none),
the view of the fields read (``schema_fields``, or an NGram's fields), and what a TransformSpec
delivers."""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

import stoker
from stoker.petastorm._unischema import Unischema, UnischemaField


def inferred_schema(source: str | list[str], storage_options: Any, partitioning: Any, *,
                    stacklevel: int) -> Unischema:
    """A Unischema of a plain Parquet dataset's columns (scalars, and lists as shape (None,)),
    its partition keys included. Columns of structs, lists of lists and lists of structs are
    left out with a warning, as Petastorm's inferred schema leaves them out; ``stacklevel``
    is the warning's as the caller would give it to warnings.warn (the user's call)."""
    if isinstance(source, list):
        source = list(dict.fromkeys(source))  # a file named again (read again) has one schema
    probe = stoker.Loader(source, batch_size=1, output="arrow", storage_options=storage_options,
                          partitioning=partitioning)
    fields = []
    shape: tuple[None, ...]  # () for a scalar, (None,) for a list
    for field in probe.schema:
        kind, shape = field.type, ()
        if pa.types.is_list(kind) or pa.types.is_large_list(kind):
            kind, shape = kind.value_type, (None,)
        if pa.types.is_nested(kind):
            warnings.warn(f"Column {field.name!r} has an unsupported type {field.type}. "
                          f"Ignoring... (as Petastorm's inferred schema)",
                          stacklevel=stacklevel + 1)
            continue
        try:
            dtype = kind.to_pandas_dtype()
        except NotImplementedError:
            dtype = np.object_
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            dtype = np.str_
        fields.append(UnischemaField(field.name, dtype, shape, None, field.nullable))
    return Unischema("inferred_schema", fields)


def selected_schema(schema: Unischema, schema_fields: Sequence[Any]) -> Unischema:
    """The view of ``schema`` that ``schema_fields`` selects: field names, regular expressions
    (as Petastorm takes them) or UnischemaFields."""
    return schema.create_schema_view(_field_list(schema, schema_fields))


def _field_list(schema: Unischema, schema_fields: Sequence[Any]) -> list[Any]:
    out = []
    for field in schema_fields:
        if isinstance(field, str):
            if field in schema.fields:
                out.append(schema.fields[field])
            else:
                out.append(field)  # a regular expression, as Petastorm takes them
        else:
            out.append(field)
    if out and all(isinstance(f, str) for f in out):
        patterns = list(out)
        if not any(re.fullmatch(p, name) for p in patterns for name in schema.fields):
            # RuntimeError, as Petastorm raises when schema_fields selects nothing.
            raise RuntimeError(f"No fields matching the criteria {patterns} were found in the "
                               f"dataset (its fields: {list(schema.fields)})")
    return out


def ngram_schema(schema: Unischema, ngram: Any) -> Unischema:
    """The fields of every step of ``ngram`` (resolved), in alphabetical order, which each
    step's namedtuple keeps. Petastorm's order there is a set's (it varies from process to
    process unless its legacy alphabetical order is chosen, as its tests do)."""
    wanted = sorted({field.name for field in ngram.get_field_names_at_all_timesteps()})
    unknown = [name for name in wanted if name not in schema.fields]
    if unknown:
        raise ValueError(f"NGram field(s) {unknown} are not in the schema {schema.name!r}")
    return schema.create_schema_view([schema.fields[name] for name in wanted])


def transformed_schema(schema: Unischema, spec: Any) -> Unischema:
    """What a TransformSpec's ``func`` delivers from rows of ``schema``: its removed fields
    left out, its edited fields (name, dtype, shape, nullable) put in, in the order of its
    selected fields when it names them."""
    fields = [f for f in schema.fields.values()
              if f.name not in set(getattr(spec, "removed_fields", None) or [])]
    by_name = {f.name: f for f in fields}
    for edit in getattr(spec, "edit_fields", None) or []:
        name, dtype, shape, nullable = tuple(edit)[:4]
        by_name[name] = UnischemaField(name, dtype, shape, None, nullable)
    ordered = list(by_name.values())
    selected = getattr(spec, "selected_fields", None)
    if selected is not None:
        ordered = [by_name[name] for name in selected]
    return Unischema(f"{schema.name}_transformed", ordered)
