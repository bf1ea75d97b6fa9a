"""Stoker's own definitions of what a Petastorm Unischema holds: the schema, its fields, the
codecs and the Spark SQL types a ScalarCodec names. The restricted unpickler (_pickle.py) maps
Petastorm's pickled classes onto these, so a Petastorm dataset is read without Petastorm (or
Spark, or OpenCV) installed. Their attribute layout is Petastorm 0.13's, which is what a
pickle's state sets."""

from __future__ import annotations

import re
from collections import OrderedDict, namedtuple
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, cast

import numpy as np


class UnischemaField(NamedTuple):
    """One field: its name, numpy dtype (a type such as ``np.uint8``), shape (``None`` for a
    dimension of unknown size; ``()`` for a scalar), codec and whether it may be null."""

    name: str
    numpy_dtype: Any
    shape: tuple
    codec: Any = None
    nullable: bool = False

    def _key(self) -> tuple:
        # Petastorm compares fields without their codec (codec objects differ once unpickled).
        return (self.name, self.numpy_dtype, self.shape, self.nullable)

    def __eq__(self, other: object) -> bool:
        # mypy: a plain tuple (not a field) raises AttributeError here instead of giving False.
        return isinstance(other, tuple) \
            and self._key() == UnischemaField._key(other)  # type: ignore[arg-type]

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self._key())


class Unischema:
    """A named, ordered set of UnischemaFields; each field is also an attribute."""

    def __init__(self, name: str, fields: Iterable[UnischemaField]) -> None:
        self._name = name
        self._fields = OrderedDict((f.name, f) for f in fields)
        for f in self._fields.values():
            if not hasattr(self, f.name):
                setattr(self, f.name, f)

    @property
    def fields(self) -> OrderedDict:
        return self._fields

    @property
    def name(self) -> str:
        return self._name

    def create_schema_view(self, fields: Sequence[Any]) -> Unischema:
        """A schema of the given fields (UnischemaFields or regular expressions on names)."""
        patterns = [f for f in fields if isinstance(f, str)]
        # mypy: a plain tuple (not a field) raises AttributeError here, not the ValueError below.
        exact = [f.name for f in fields if isinstance(f, tuple)]  # type: ignore[attr-defined]
        if len(patterns) + len(exact) != len(fields):
            raise ValueError("fields must be field names (regular expressions) or "
                             "UnischemaFields")
        unknown = sorted(set(exact) - set(self._fields))
        if unknown:
            raise ValueError(f"field(s) {unknown} are not in the schema {self._name!r}")
        chosen = [self._fields[n] for n in exact] + match_unischema_fields(self, patterns)
        return Unischema(f"{self._name}_view", chosen)

    def make_namedtuple(self, **values: Any) -> Any:
        return self.namedtuple_type()(**values)

    def namedtuple_type(self) -> type:
        """The namedtuple type rows of this schema are delivered as (one per field list)."""
        key = (self._name, tuple(self._fields))
        if key not in _NAMEDTUPLES:
            _NAMEDTUPLES[key] = namedtuple(f"{self._name}_view", list(self._fields))
        return _NAMEDTUPLES[key]

    def __str__(self) -> str:
        lines = "".join(f"  {f!r},\n" for f in self._fields.values())
        return f"Unischema({self._name}, [\n{lines}])"

    __repr__ = __str__


_NAMEDTUPLES: dict[tuple, type] = {}


def match_unischema_fields(schema: Unischema, patterns: Sequence[str]) -> list[UnischemaField]:
    """The fields whose names fully match any of the regular expressions, in schema order."""
    compiled = [re.compile(p) for p in patterns]
    return [f for f in schema.fields.values() if any(p.fullmatch(f.name) for p in compiled)]


class NdarrayCodec:
    """A numpy array stored as ``np.save`` bytes (a .npy file)."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class CompressedNdarrayCodec(NdarrayCodec):
    """A numpy array stored as ``np.savez_compressed(arr=...)`` bytes (a zip holding arr.npy)."""


class CompressedImageCodec:
    """An image stored as png or jpeg bytes (OpenCV's encoding); decodes to uint8 (H, W) or
    (H, W, 3) RGB."""

    def __init__(self, image_codec: str = "png", quality: int = 80) -> None:
        self._image_codec = "." + image_codec
        self._quality = quality

    @property
    def image_codec(self) -> str:
        """"png" or "jpeg" (Petastorm stores it with a leading dot)."""
        return self._image_codec.lstrip(".").lower()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.__dict__ == self.__dict__

    def __hash__(self) -> int:
        return hash(self._image_codec)

    def __repr__(self) -> str:
        return f"CompressedImageCodec({self.image_codec!r}, quality={self._quality})"


class ScalarCodec:
    """A scalar stored as the Parquet value of a Spark SQL type."""

    def __init__(self, spark_type: Any) -> None:
        self._spark_type = spark_type

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) \
            and cast(ScalarCodec, other)._spark_type == self._spark_type

    def __hash__(self) -> int:
        return hash(repr(self._spark_type))

    def __repr__(self) -> str:
        return f"ScalarCodec({self._spark_type!r})"


class SparkType:
    """A Spark SQL type as a ScalarCodec names it (``pyspark.sql.types.IntegerType()`` ...):
    only its name and parameters, which Stoker does not need to read the column."""

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, dict):
            self.__dict__.update(state)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.__dict__ == self.__dict__

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


# The Spark SQL types a Unischema may name, as subclasses of SparkType.
SPARK_TYPES: dict[str, type] = {
    name: type(name, (SparkType,), {"__module__": __name__})
    for name in ("NullType", "StringType", "BinaryType", "BooleanType", "DateType",
                 "TimestampType", "TimestampNTZType", "DecimalType", "DoubleType", "FloatType",
                 "ByteType", "IntegerType", "LongType", "ShortType", "ArrayType", "StructType",
                 "StructField", "MapType")
}
# Each is also an attribute of this module, where its __module__ says it lives, so that a
# Unischema holding one pickles again (and copies).
globals().update(SPARK_TYPES)

# numpy names a pickle may use for a field's dtype, with the name numpy 2 knows them by.
NUMPY_NAMES = {
    **{n: n for n in ("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                      "uint64", "float16", "float32", "float64", "str_", "bytes_", "dtype",
                      "datetime64", "timedelta64")},
    "unicode_": "str_", "string_": "bytes_", "bool": "bool_",
}


def numpy_type(name: str) -> Any:
    return getattr(np, NUMPY_NAMES[name])
