"""TensorFlow: a ``tf.data.Dataset`` over a Loader's epochs, for Keras ``model.fit`` and
``tf.distribute``.

    loader = stoker.Loader("data/", batch_size=4096, output="tensorflow", rank=..., world_size=...)
    dataset = stoker.tf.dataset(loader, label="label")
    model.fit(dataset, epochs=3)        # each pass over `dataset` is the loader's next epoch

The element spec comes from the loader's schema: numeric columns as dense tensors (a
fixed-size list adds a dimension), variable-length lists as ``tf.RaggedTensor`` (declared
``{"op": "ragged"}`` in the transforms). Batches keep the loader's order and sharding; under
``tf.distribute`` give each worker its rank (docs/frameworks.md)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import tensorflow as tf

from stoker._loading import passes as _passes

__all__ = ["dataset", "element_spec"]

# Outputs whose batches TensorFlow takes as they are: tf.Tensors over the engine's buffers
# (zero-copy through DLPack), or numpy arrays (converted by tf.data, one copy).
_OUTPUTS = ("tensorflow", "numpy")


def element_spec(schema: pa.Schema) -> dict[str, tf.TypeSpec]:
    """The ``tf.TypeSpec`` of each column of a batch with this Arrow schema."""
    return {field.name: _spec(field) for field in schema}


def dataset(loader: Any, *, label: str | Sequence[str] | None = None) -> tf.data.Dataset:
    """A ``tf.data.Dataset`` whose elements are the loader's batches, each iteration of it one
    epoch of the loader (so ``model.fit(..., epochs=N)`` reads N epochs, resumable from the
    loader's ``state_dict()``); an iteration stopped early is read again from its start by
    the next one. With ``label``, elements are ``(features, labels)`` pairs as
    Keras wants them: the named column (or dict of columns) apart from the rest.

    The loader must deliver ``output="tensorflow"`` (zero-copy) or ``"numpy"``."""
    if loader.output not in _OUTPUTS:
        raise ValueError(f'stoker.tf.dataset needs a loader with output="tensorflow" or '
                         f'"numpy", got output="{loader.output}"')
    spec = element_spec(loader.schema)
    labels = [label] if isinstance(label, str) else list(label or [])
    for name in labels:
        if name not in spec:
            raise ValueError(f"label: no column '{name}' in the loader's batches "
                             f"(columns: {', '.join(spec)})")
    ragged = [name for name, s in spec.items() if isinstance(s, tf.RaggedTensorSpec)]
    passes = _passes.Passes(loader)

    def batches() -> Iterator[Any]:
        for batch in passes.next_pass():
            yield _with_ragged(batch, ragged)

    data = tf.data.Dataset.from_generator(batches, output_signature=spec)
    # Keras needs the steps per epoch up front: without them it counts the first pass and
    # warns that later ones "ran out of data".
    data = data.apply(tf.data.experimental.assert_cardinality(len(loader)))
    if not labels:
        return data
    single = isinstance(label, str)

    def split(batch: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        features = {k: v for k, v in batch.items() if k not in labels}
        return features, batch[labels[0]] if single else {k: batch[k] for k in labels}

    return data.map(split)


def _with_ragged(batch: dict[str, Any], ragged: list[str]) -> dict[str, Any]:
    """Joins each ragged column's values and ``<name>_offsets`` into a tf.RaggedTensor."""
    for name in ragged:
        offsets = batch.pop(f"{name}_offsets")
        batch[name] = tf.RaggedTensor.from_row_splits(batch[name], offsets, validate=False)
    return batch


def _spec(field: pa.Field) -> tf.TypeSpec:
    shape: list[int | None] = [None]
    value_type = field.type
    while pa.types.is_fixed_size_list(value_type):
        shape.append(value_type.list_size)
        value_type = value_type.value_type
    if pa.types.is_list(value_type) or pa.types.is_large_list(value_type):
        if len(shape) > 1:
            raise ValueError(f"column '{field.name}': a variable-length list inside a "
                             f"fixed-size list has no TensorFlow spec; use output='arrow'")
        return tf.RaggedTensorSpec(shape=[None, None], dtype=_dtype(field.name,
                                                                     value_type.value_type),
                                   ragged_rank=1, row_splits_dtype=tf.int64)
    return tf.TensorSpec(shape=shape, dtype=_dtype(field.name, value_type))


def _dtype(name: str, arrow_type: pa.DataType) -> tf.DType:
    if pa.types.is_boolean(arrow_type):
        return tf.bool
    if pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type):
        return tf.as_dtype(arrow_type.to_pandas_dtype())
    raise ValueError(f"column '{name}' is {arrow_type}: tensors hold numbers and booleans; "
                     f"drop it, transform it (docs/transforms.md) or use output='arrow'")
