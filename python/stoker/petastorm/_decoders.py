"""What decodes each Unischema field: the Loader's ``codecs`` for what the C++ workers decode
(ndarray, compressed ndarray, png, jpeg), and for the rest the Python decoder the reader
applies to each value (arrays of strings or bytes, scalars cast to their declared dtype)."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stoker.petastorm import _convert
from stoker.petastorm._unischema import (
    CompressedImageCodec,
    CompressedNdarrayCodec,
    NdarrayCodec,
    Unischema,
    UnischemaField,
)


def loader_codecs(schema: Unischema, names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The Loader ``codecs`` that decode ``schema``'s encoded fields (all, or those in
    ``names``): ndarray, compressed ndarray, png and jpeg. Scalars need none, and arrays of
    strings or bytes are left encoded: the C++ decoders take numbers (make_reader decodes
    those in Python)."""
    codecs = []
    for field in schema.fields.values():
        if names is not None and field.name not in names:
            continue
        if _text_array_loader(field) is not None:
            continue
        codec = _codec_name(field)
        if codec is None:
            continue
        codecs.append({"column": field.name, "codec": codec,
                       "dtype": _dtype_name(field),
                       "shape": [-1 if d is None else int(d) for d in field.shape]})
    return codecs


def _codec_name(field: UnischemaField) -> str | None:
    codec = field.codec
    if isinstance(codec, CompressedNdarrayCodec):
        return "compressed_ndarray"
    if isinstance(codec, NdarrayCodec):
        return "ndarray"
    if isinstance(codec, CompressedImageCodec):
        name = codec.image_codec
        if name in ("jpg", "jpeg"):
            return "jpeg"
        if name == "png":
            return "png"
        raise ValueError(f"field '{field.name}': images in {name!r} cannot be decoded "
                         f"(png and jpeg can)")
    return None


def _dtype_name(field: UnischemaField) -> str:
    return np.dtype(field.numpy_dtype).name


def _text_array_loader(field: UnischemaField) -> Callable[[bytes], np.ndarray] | None:
    """For an ndarray field of strings or bytes (Petastorm's np.save bytes of a '<U' or '|S'
    array), the function that decodes one value in Python; None for any other field."""
    if not isinstance(field.codec, NdarrayCodec) or np.dtype(field.numpy_dtype).kind not in "SU":
        return None
    if isinstance(field.codec, CompressedNdarrayCodec):
        return _load_npz
    return lambda value: np.load(io.BytesIO(value), allow_pickle=False)


def _load_npz(value: bytes) -> np.ndarray:
    with np.load(io.BytesIO(value), allow_pickle=False) as archive:
        return archive["arr"]


def python_decoders(schema: Unischema) -> dict[str, Callable[[Any], Any]]:
    """What the reader applies to each value of a field in Python, by field name: arrays of
    strings or bytes decoded, numeric and string scalars cast to the Unischema's dtype (a Spark
    ShortType column declared np.int32 is delivered as int32, a partition key declared np.str_
    as np.str_, as Petastorm's decode_row casts them). None stays None."""
    decoders: dict[str, Callable[[Any], Any]] = {}
    for field in schema.fields.values():
        load = _text_array_loader(field)
        if load is not None:
            decoders[field.name] = load
        elif (field.shape == () and isinstance(field.numpy_dtype, type)
              and issubclass(field.numpy_dtype, (np.number, np.bool_, np.str_, np.bytes_))):
            decoders[field.name] = field.numpy_dtype
    return decoders


def decode_column(values: np.ndarray, decode: Callable[[Any], Any] | None) -> np.ndarray:
    """A column batch with a field's Python decoder applied (see python_decoders)."""
    if decode is None:
        return values
    if isinstance(decode, type):  # a numpy scalar type: the whole column is cast
        if values.dtype != object:
            return values.astype(decode, copy=False)
        return values  # nulls among the values: kept as objects (None), as Petastorm does
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):  # one by one: a list of equal arrays would broadcast
        out[i] = None if value is None else decode(value)
    return _convert.stack_rows(out)
