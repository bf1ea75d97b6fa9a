"""Keyword arguments into the engine's option structs (``_core.LoaderOptions`` and friends,
bound from C++ in src/python/options.cc). Only type conversion and error mapping happen here:
the defaults are the C++ structs', and their ``Validate()`` is the one place ranges are
checked."""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from stoker import _core

# An options object as C++ default-constructs it: the source of every default in the
# Python signatures.
LOADER_DEFAULTS = _core.LoaderOptions()


def assign(target: Any, values: dict[str, Any], *, label: str = "") -> None:
    """Sets each value on the bound options object ``target``; a value of the wrong type is a
    TypeError naming the option and the type it takes."""
    for name, value in values.items():
        current = getattr(target, name)
        wrong = isinstance(value, bool) and not isinstance(current, bool)  # True is no count
        try:
            if not wrong:
                setattr(target, name, value)
        except TypeError:
            wrong = True
        if wrong:
            kind = "int or None" if current is None else type(current).__name__
            wanted = f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
            raise TypeError(f"{label}{name} must be {wanted}, got {value!r}") from None


def storage(options: dict[str, Any] | None) -> Any:
    """``_core.StorageOptions`` from a Loader's ``storage_options`` dict: the keys given are
    set, the others keep the C++ defaults; an unknown key or a value of the wrong type names
    the key."""
    storage = _core.StorageOptions()
    if options is None:
        return storage
    if not isinstance(options, dict):
        raise TypeError(f"storage_options must be a dict, got {options!r}")
    assign_known(storage, options, "storage_options", storage.fields)
    return storage


def assign_known(target: Any, values: dict[str, Any], name: str, allowed: Any) -> None:
    """``assign`` for an option given as a dict (``name``): a key outside ``allowed`` is a
    ValueError listing the keys it takes."""
    unknown = sorted(set(values) - set(allowed))
    if unknown:
        raise ValueError(f"{name}: unknown key(s) {', '.join(unknown)}; it takes "
                         f"{', '.join(allowed)}")
    assign(target, values, label=f"{name}: ")


def _sources(source: Any) -> list[str]:
    items = source if isinstance(source, (list, tuple)) else [source]
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(f"source must be a path, a glob or a list of them, got {item!r}")
    return [os.fspath(item) for item in items]


def _columns(columns: Any) -> list[str]:
    if columns is None:
        return []
    if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
        raise TypeError(f"columns must be a list of column names, got {columns!r}")
    if not columns:
        raise ValueError("columns=[] names no column: pass None to read every column, or name "
                         "the columns to read")
    return list(columns)


def serialize_filter(expression: Any) -> bytes | None:
    """A ``pyarrow.compute`` expression in Arrow's own serialized form, the one the engine
    reads (``arrow::compute::Deserialize``) and digests. Taken through pickle's public
    out-of-band buffer protocol (PEP 574), the only public route to it: Substrait, pyarrow's
    other public form, needs the dataset's schema before the engine has read it, refuses
    safe casts and rewrites ``isin``, which would change what filters do and their digests."""
    if expression is None:
        return None
    if not isinstance(expression, pc.Expression):
        raise TypeError(f"filter must be a pyarrow.compute expression such as "
                        f"pc.field('label') > 0, got {expression!r}")
    buffers: list[pickle.PickleBuffer] = []
    pickle.dumps(expression, protocol=5, buffer_callback=buffers.append)
    if len(buffers) != 1:
        raise RuntimeError("this pyarrow pickles expressions in a form Stoker does not know; "
                           "use the pyarrow version Stoker was built with")
    return bytes(buffers[0].raw())


def partitioning(value: Any) -> Any:
    """``_core.PartitionOptions`` from a Loader's ``partitioning``: "hive" (types inferred as
    pyarrow's hive discovery infers them), a ``pyarrow.Schema`` giving the types of some or
    all keys (the others inferred), or None for no partition columns."""
    options = _core.PartitionOptions()
    if value is None:
        return options
    options.hive = True
    if isinstance(value, pa.Schema):
        options.schema = value.serialize().to_pybytes()
    elif value != "hive":
        raise TypeError(f"partitioning must be \"hive\", a pyarrow.Schema of the partition keys "
                        f"or None, got {value!r}")
    return options


def autotune(value: Any) -> Any:
    """``_core.AutotuneOptions`` from a Loader's ``autotune``: None or True (the controller
    with its defaults), False (no controller: today's fixed defaults for what is left unset), or a dict
    of the controller's options (``target_stall``, ``window_batches``, ``window_seconds``,
    ``random_moves``), the others at their defaults."""
    options = _core.AutotuneOptions()
    if value is None:  # the engine's default: the controller, with its defaults
        return options
    if isinstance(value, bool):
        options.enabled = value
        return options
    if not isinstance(value, dict):
        raise TypeError(f"autotune must be True, False or a dict of the controller's options, "
                        f"got {value!r}")
    assign_known(options, value, "autotune", [name for name in options.fields if name != "enabled"])
    return options


def threads(value: Any) -> Any:
    """``num_threads``: "auto" is None (the controller's, within the rank's CPU share)."""
    return None if value == "auto" else value


# Loader arguments that need converting before the engine takes them; the others go as they
# are, into the LoaderOptions field of the same name.
_CONVERT: dict[str, Callable[[Any], Any]] = {
    "columns": _columns,
    "shuffle": bool,
    "drop_last": bool,
    "pad_to_equal_steps": bool,
    "with_row_origin": bool,
    "codecs": lambda codecs: [] if codecs is None else [dict(c) for c in codecs],
    "transforms": _core.transforms_from_spec,
    "filter": serialize_filter,
    "partitioning": partitioning,
    "cache_dir": lambda path: None if path is None else os.fspath(path),
    "autotune": autotune,
    "num_threads": threads,
    "engine_cpus": lambda cpus: [] if cpus is None else [int(cpu) for cpu in cpus],
}


def loader_options(source: Any, storage_options: dict[str, Any] | None,
                   arguments: dict[str, Any]) -> Any:
    """``_core.LoaderOptions`` from a Loader's arguments: ``source`` and ``storage_options``,
    and ``arguments`` by name (those that are not LoaderOptions fields are left alone)."""
    options = _core.LoaderOptions()
    options.sources = _sources(source)
    options.storage = storage(storage_options)
    fields = {name: _CONVERT.get(name, _same)(value) for name, value in arguments.items()
              if name in options.fields and name not in ("sources", "storage")}
    assign(options, fields)
    return options


def _same(value: Any) -> Any:
    return value
