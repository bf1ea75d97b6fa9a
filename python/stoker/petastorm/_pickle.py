"""The restricted unpickler for the Unischema a Petastorm dataset stores as a pickle: only the
classes a Unischema holds are allowed, each mapped to Stoker's own definition (_unischema.py),
so reading a dataset never imports or runs anything the pickle names. Anything else is refused
with an error naming it, before it is called."""

from __future__ import annotations

import copyreg
import decimal
import io
import pickle
from collections import OrderedDict
from typing import Any

from stoker.petastorm import _unischema as u

# Module prefixes Petastorm's own loader rewrites to "petastorm." (petastorm/etl/legacy.py):
# datasets written before the package was renamed.
_LEGACY_PACKAGES = ("av.experimental.deepdrive.dataset_toolkit.", "av.ml.dataset_toolkit.")

_ALLOWED: dict[tuple[str, str], Any] = {
    ("petastorm.unischema", "Unischema"): u.Unischema,
    ("petastorm.unischema", "UnischemaField"): u.UnischemaField,
    ("petastorm.codecs", "NdarrayCodec"): u.NdarrayCodec,
    ("petastorm.codecs", "CompressedNdarrayCodec"): u.CompressedNdarrayCodec,
    ("petastorm.codecs", "CompressedImageCodec"): u.CompressedImageCodec,
    ("petastorm.codecs", "ScalarCodec"): u.ScalarCodec,
    ("collections", "OrderedDict"): OrderedDict,
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
    """A pickle named a global that a Unischema does not hold."""


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
                f"it refers to {module}.{name}, which a Unischema "
                f"does not hold; Stoker refuses to load it (only Petastorm's Unischema, "
                f"UnischemaField, codecs, numpy dtypes, decimal.Decimal and Spark SQL types are allowed)")
        return allowed


def load_unischema(data: bytes, where: str = "the stored Unischema") -> u.Unischema:
    """The Unischema pickled in ``data``; ValueError naming ``where`` when it is not one."""
    try:
        schema = UnischemaUnpickler(io.BytesIO(data)).load()
    except RefusedGlobal as error:
        raise ValueError(f"{where}: {error}") from None
    except Exception as error:  # noqa: BLE001 (a truncated or corrupt pickle: any error)
        raise ValueError(f"{where} is not a readable pickle: {error!r}") from None
    if not isinstance(schema, u.Unischema):
        raise ValueError(  # noqa: TRY004 (bad data in the dataset, not a bad argument)
            f"{where} holds a {type(schema).__name__}, not a Unischema")
    for field in schema.fields.values():
        if not isinstance(field, u.UnischemaField):
            raise ValueError(  # noqa: TRY004 (bad data in the dataset, not a bad argument)
                f"{where}: field {field!r} is not a UnischemaField")
    return schema
