"""TorchRec: batches a ``TrainPipelineSparseDist`` takes as they are (docs/torchrec.md).

    loader = stoker.Loader("data/", batch_size=4096, output="torchrec", torchrec={
        "sparse": [f"C{i}" for i in range(1, 27)],   # the KeyedJaggedTensor's keys, in order
        "dense": [f"I{i}" for i in range(1, 14)],    # -> dense_features [B, 13] float32
        "labels": ["label"],                         # -> labels [B] float32
    })
    for batch in loader:   # torchrec.datasets.utils.Batch
        loss = model(batch.dense_features, batch.sparse_features) ...

Each batch is TorchRec's own ``Batch`` (``dense_features``, ``sparse_features``,
``labels``; ``to(device, non_blocking=True)``, ``record_stream``, ``pin_memory``): its
``sparse_features`` a ``KeyedJaggedTensor`` whose one ``values`` tensor holds every key's ids
key-major, with int32 ``lengths`` (keys x B) and ``length_per_key``/``offset_per_key`` given
on the host, so TorchRec never syncs them from a device. The engine gathers every list column
of a batch into one buffer per value type, in the order of the ragged ops that name them and
then in column order, so keys given in that order (C1..C26 of a Criteo-like file, say) are
taken without a copy; another order, one-hot keys or a dtype change cost one copy of the ids,
in C++. A batch costs Python a KeyedJaggedTensor's construction, nothing per row or key. Keys are ``list<int>`` columns (multi-hot) or integer columns (one-hot: every length 1);
a null list is an empty one (length 0). ``weights`` pairs a key with a list of numbers of the
same lengths (checked every batch); keys without one weigh 1.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from stoker import _core
from stoker._options import frameworks as _frameworks

__all__ = ["Features"]

_FIELDS = ("sparse", "dense", "labels", "weights", "values_dtype")


@dataclasses.dataclass(frozen=True)
class Features:
    """What ``output="torchrec"`` makes of each batch (``torchrec=`` takes this or a dict of
    the same fields).

    sparse: the KeyedJaggedTensor's keys, in order (list or integer columns).
    dense: columns stacked into ``dense_features`` [B, n] float32 (numbers, or fixed-size
        lists of them, converted to float32); a single float32 column (a ``stack`` op's
        output, say) is taken without a copy. Empty: ``dense_features`` is None.
    labels: one column -> ``labels`` [B] float32; several -> [B, k]. Empty: None.
    weights: key -> its weights column (a list of numbers with the key's lengths); keys left
        out weigh 1. Empty: the KeyedJaggedTensor has no weights.
    values_dtype: "int32" or "int64": the ids' tensor type. None: the keys' own type when
        all share int32 or int64 (no copy), else int64. An id that does not fit is an error,
        never a wrap.
    """

    sparse: Sequence[str]
    dense: Sequence[str] = ()
    labels: Sequence[str] = ()
    weights: Mapping[str, str] = dataclasses.field(default_factory=dict)
    values_dtype: str | None = None

    @classmethod
    def of(cls, value: Features | Mapping[str, Any] | None) -> Features:
        """``torchrec=`` as Features: a ValueError naming what is wrong."""
        if isinstance(value, Features):
            return value
        if not isinstance(value, Mapping):
            raise TypeError('output="torchrec" needs torchrec={"sparse": [...], "dense": [...], '
                            '"labels": [...]} (or stoker.torchrec.Features), got ' + repr(value))
        unknown = sorted(set(value) - set(_FIELDS))
        if unknown:
            raise ValueError(f"torchrec: unknown key(s) {unknown}; known: {list(_FIELDS)}")
        if "sparse" not in value:
            raise ValueError('torchrec: "sparse" (the KeyedJaggedTensor\'s keys) is required')
        labels = value.get("labels", ())
        return cls(sparse=_names(value["sparse"], "sparse"),
                   dense=_names(value.get("dense", ()), "dense"),
                   labels=_names([labels] if isinstance(labels, str) else labels, "labels"),
                   weights=dict(value.get("weights", {})),
                   values_dtype=value.get("values_dtype"))

    def check(self, schema: pa.Schema) -> Features:
        """Checks the columns against the loader's schema and resolves ``values_dtype``;
        KeyError / TypeError / ValueError naming the column otherwise."""
        if not self.sparse:
            raise ValueError("torchrec: sparse needs at least one key")
        if len(set(self.sparse)) != len(self.sparse):
            raise ValueError(f"torchrec: a key is named twice in sparse {list(self.sparse)}")
        for key in self.weights:
            if key not in self.sparse:
                raise ValueError(f"torchrec weights: {key!r} is not one of the sparse keys")
        names = set(schema.names)
        for role, columns in (("sparse key", self.sparse), ("weights", self.weights.values()),
                              ("dense", self.dense), ("labels", self.labels)):
            for name in columns:
                if name not in names:
                    raise KeyError(f"torchrec {role} {name!r} is not a column of the loader "
                                   f"(its columns: {', '.join(schema.names)})")
        kinds = set()
        for key in self.sparse:
            kind = schema.field(key).type
            ids = kind.value_type if _is_list(kind) else kind
            if _is_list(ids) or not pa.types.is_integer(ids):
                raise TypeError(f"torchrec sparse key {key!r} has type {kind}: a key is a list "
                                "of integer ids or an integer column (nested lists need "
                                "flattening first)")
            kinds.add(ids)
        for key, column in self.weights.items():
            kind = schema.field(column).type
            if not _is_list(kind) or not (pa.types.is_floating(kind.value_type)
                                          or pa.types.is_integer(kind.value_type)):
                raise TypeError(f"torchrec weights {column!r} of key {key!r} has type {kind}: "
                                "weights are a list of numbers paired with the key's ids")
        dtype = self.values_dtype
        if dtype is None:
            dtype = "int32" if kinds == {pa.int32()} else "int64"
        if dtype not in ("int32", "int64"):
            raise ValueError(f'torchrec values_dtype must be "int32" or "int64", got {dtype!r}')
        return dataclasses.replace(self, values_dtype=dtype)

    def core(self) -> Any:
        """The engine's form (``_core.KjtSpec``) of checked Features."""
        weights = [self.weights.get(k, "") for k in self.sparse] if self.weights else []
        return _core.KjtSpec(list(self.sparse), weights, list(self.dense), list(self.labels),
                             self.values_dtype or "int64")


def features_for(output: str, torchrec: Any) -> Features | None:
    """``torchrec=`` as Features for output="torchrec" (None otherwise): ImportError without
    TorchRec, ValueError when one is given without the other."""
    if output != "torchrec":
        if torchrec is not None:
            raise ValueError(f'torchrec= applies to output="torchrec", not output="{output}"')
        return None
    _frameworks.check_output(output)
    return Features.of(torchrec)


def _names(value: Any, role: str) -> list[str]:
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"torchrec {role} must be a list of column names, got {value!r}")
    return list(value)


def _is_list(kind: pa.DataType) -> bool:
    return pa.types.is_list(kind) or pa.types.is_large_list(kind)


class Maker:
    """Turns the engine's parts of a batch (``_core.to_kjt_parts``) into TorchRec's Batch.
    Made once per loader: the per-batch work is one KeyedJaggedTensor and one Batch."""

    def __init__(self, features: Features) -> None:
        try:
            from torchrec.datasets.utils import Batch  # type: ignore[import-not-found]
            from torchrec.sparse.jagged_tensor import (  # type: ignore[import-not-found]
                KeyedJaggedTensor,
            )
        except ImportError as error:
            raise ImportError('output="torchrec" needs TorchRec: pip install torchrec '
                              "(with fbgemm-gpu, or fbgemm-gpu-cpu on a CPU host)") from error
        self._batch, self._kjt = Batch, KeyedJaggedTensor
        self._keys = list(features.sparse)
        self.spec = features.core()

    def __call__(self, parts: tuple[Any, ...]) -> Any:
        values, lengths, weights, length_per_key, offset_per_key, dense, labels, stride = parts
        sparse = self._kjt(keys=self._keys, values=values, weights=weights, lengths=lengths,
                           stride=stride, length_per_key=length_per_key,
                           offset_per_key=offset_per_key)
        return self._batch(dense_features=dense, sparse_features=sparse, labels=labels)

    def from_arrow(self, batch: Any) -> Any:
        """A pyarrow.RecordBatch (a served one) as TorchRec's Batch (one copy of the ids)."""
        return self(_core.to_kjt_parts(batch, self.spec))
