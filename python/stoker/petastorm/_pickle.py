"""The restricted unpickler for the Unischema a Petastorm dataset stores as a pickle: only the
classes a Unischema holds are allowed, each mapped to Stoker's own definition (_unischema.py),
so reading a dataset never imports or runs anything the pickle names. Anything else is refused
with an error naming it, before it is called."""

from __future__ import annotations

import copyreg
import decimal
import io
import pickle
from collections import OrderedDict, defaultdict
from typing import Any

import numpy as np

from stoker.petastorm import _rowgroup_index as r
from stoker.petastorm import _unischema as u

# Module prefixes Petastorm's own loader rewrites to "petastorm." (petastorm/etl/legacy.py):
# datasets written before the package was renamed.
_LEGACY_PACKAGES = ("av.experimental.deepdrive.dataset_toolkit.", "av.ml.dataset_toolkit.")


def _numpy_scalar(dtype: np.dtype, data: Any = None) -> Any:
    """numpy's pickled scalar, rebuilt from its dtype and bytes without numpy's own helper
    (which takes any object for an object dtype)."""
    if not isinstance(dtype, np.dtype) or dtype.hasobject or not isinstance(data, bytes):
        raise RefusedGlobal(f"a numpy scalar of dtype {dtype!r} from {type(data).__name__}")
    return np.frombuffer(data, dtype=dtype)[0]


_ALLOWED: dict[tuple[str, str], Any] = {
    ("petastorm.unischema", "Unischema"): u.Unischema,
    ("petastorm.unischema", "UnischemaField"): u.UnischemaField,
    ("petastorm.codecs", "NdarrayCodec"): u.NdarrayCodec,
    ("petastorm.codecs", "CompressedNdarrayCodec"): u.CompressedNdarrayCodec,
    ("petastorm.codecs", "CompressedImageCodec"): u.CompressedImageCodec,
    ("petastorm.codecs", "ScalarCodec"): u.ScalarCodec,
    ("collections", "OrderedDict"): OrderedDict,
    # A row-group index (_rowgroup_index.py): indexers holding sets of row-group numbers by
    # value, the values numpy scalars (rebuilt from a dtype and their bytes).
    ("petastorm.etl.rowgroup_indexers", "SingleFieldIndexer"): r.SingleFieldIndexer,
    ("petastorm.etl.rowgroup_indexers", "FieldNotNullIndexer"): r.FieldNotNullIndexer,
    ("collections", "defaultdict"): defaultdict,
    ("builtins", "set"): set,
    **{(module, "scalar"): _numpy_scalar
       for module in ("numpy.core.multiarray", "numpy._core.multiarray")},
    # A Decimal field's numpy_dtype is the class itself (Petastorm's test schema has one).
    ("decimal", "Decimal"): decimal.Decimal,
    # Protocols 0 and 1 rebuild objects through copyreg._reconstructor(cls, base, state);
    # cls and base come through find_class too, so only allowed classes are built.
    # (Python 2 spelled the modules copy_reg and __builtin__.)
    # (copyreg._reconstructor is private: typeshed leaves it out.)
    ("copyreg", "_reconstructor"): copyreg._reconstructor,  # type: ignore[attr-defined]
    ("copy_reg", "_reconstructor"): copyreg._reconstructor,  # type: ignore[attr-defined]
    ("builtins", "object"): object,
    ("__builtin__", "object"): object,
    ("builtins", "tuple"): tuple,
    ("__builtin__", "tuple"): tuple,
    **{("pyspark.sql.types", name): cls for name, cls in u.SPARK_TYPES.items()},
    **{(module, name): u.numpy_type(name) for name in u.NUMPY_NAMES
       for module in ("numpy", "numpy.core.numerictypes", "numpy._core.numerictypes")},
}


class RefusedGlobal(pickle.UnpicklingError):
    """A pickle named a global that a Unischema or a row-group index does not hold."""


class UnischemaUnpickler(pickle.Unpickler):
    """Loads a pickled Petastorm Unischema into Stoker's definitions; refuses any other
    global (RefusedGlobal, a ``pickle.UnpicklingError``, naming ``module.name``)."""

    def find_class(self, module: str, name: str) -> Any:
        for legacy in _LEGACY_PACKAGES:
            if module.startswith(legacy):
                module = "petastorm." + module[len(legacy):]
        allowed = _ALLOWED.get((module, name))
        if allowed is None:
            raise RefusedGlobal(
                f"it refers to {module}.{name}, which a Unischema or a row-group index "
                f"does not hold; Stoker refuses to load it (only Petastorm's Unischema, "
                f"UnischemaField, codecs, row-group indexers, numpy dtypes and scalars, "
                f"decimal.Decimal and Spark SQL types are allowed)")
        return allowed


def load_stored(data: bytes, where: str) -> Any:
    """What ``data`` pickles, through the restricted unpickler; ValueError naming ``where``
    when it is refused or unreadable."""
    try:
        return UnischemaUnpickler(io.BytesIO(data)).load()
    except RefusedGlobal as error:
        raise ValueError(f"{where}: {error}") from None
    except Exception as error:  # noqa: BLE001 (a truncated or corrupt pickle: any error)
        raise ValueError(f"{where} is not a readable pickle: {error!r}") from None


def load_unischema(data: bytes, where: str = "the stored Unischema") -> u.Unischema:
    """The Unischema pickled in ``data``; ValueError naming ``where`` when it is not one."""
    schema = load_stored(data, where)
    if not isinstance(schema, u.Unischema):
        raise ValueError(  # noqa: TRY004 (bad data in the dataset, not a bad argument)
            f"{where} holds a {type(schema).__name__}, not a Unischema")
    for field in schema.fields.values():
        if not isinstance(field, u.UnischemaField):
            raise ValueError(  # noqa: TRY004 (bad data in the dataset, not a bad argument)
                f"{where}: field {field!r} is not a UnischemaField")
    return schema
