"""The typed seam between Python and the engine: option defaults come from the C++ structs,
ranges are checked once (LoaderOptions::Validate) with messages naming the option, filters
travel in Arrow's own serialized form, tickets have one codec and Arrow batches one tensor
conversion."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import stoker
from conftest import assert_same_batches
from stoker import _core
from stoker._options import convert as _options

COLUMNS = ["row_id", "label", "I1", "C1"]


# --- defaults and ranges ------------------------------------------------------------------


def test_python_defaults_are_the_cpp_structs_defaults() -> None:
    defaults = _core.LoaderOptions()
    signature = inspect.signature(stoker.Loader)
    given = [name for name in defaults.fields if name in signature.parameters
             and signature.parameters[name].default not in (None, inspect.Parameter.empty)]
    # shuffle, seed, plan_version, rank, world_size, drop_last, mode, pad_to_equal_steps,
    # with_row_origin, cache_limit_bytes, cache_policy, on_error, trace_events
    assert len(given) == 13
    for name in given:
        assert signature.parameters[name].default == getattr(defaults, name), name
    assert defaults.shuffle is True and defaults.cache_policy == "lru"
    assert defaults.num_threads is None and defaults.shuffle_window is None  # C++ 0: default
    assert _core.StorageOptions().max_attempts == 8
    assert _core.ServeOptions().chunk_batches == 16


@pytest.mark.parametrize("name, value, message", [
    ("cache_policy", "mru", "cache_policy must be 'lru' or 'fill', got 'mru'"),
    ("num_threads", 0, "num_threads must be >= 1, or None"),
    ("seed", -1, r"seed must be >= 0 and < 2\*\*64, got -1"),
    ("seed", 2**64, r"seed must be >= 0 and < 2\*\*64"),
])
def test_values_python_cannot_spell_are_refused_naming_the_option(name: str, value: object,
                                                                   message: str) -> None:
    with pytest.raises(ValueError, match=message):
        setattr(_core.LoaderOptions(), name, value)


def test_largest_seed_is_accepted() -> None:
    options = _core.LoaderOptions()
    options.seed = 2**64 - 1
    assert options.seed == 2**64 - 1


@pytest.mark.parametrize("storage, message", [
    ({"scheme": "ftp"}, "storage scheme must be 'http' or 'https', got 'ftp'"),
    ({"max_attempts": 0}, "storage max_attempts must be >= 1, got 0"),
    ({"io_threads": -1}, "storage io_threads must be >= 1, got -1"),
    ({"connect_timeout": -1}, "storage connect_timeout and request_timeout must be >= 0"),
])
def test_storage_ranges_are_checked_by_validate(storage: dict, message: str) -> None:
    options = _core.LoaderOptions()
    options.sources, options.batch_size = ["x.parquet"], 10
    options.storage = _options.storage(storage)
    with pytest.raises(ValueError, match=message):
        options.validate()


@pytest.mark.parametrize("kwargs, error, message", [
    ({"batch_size": True}, TypeError, "batch_size must be an int, got True"),
    ({"batch_size": 10, "num_threads": "2"}, TypeError, "num_threads must be an int or None"),
    ({"batch_size": 10, "storage_options": {"anonymous": 1}}, TypeError,
     "storage_options: anonymous must be a bool, got 1"),
    ({"batch_size": 10, "storage_options": {"max_attempts": 0}}, ValueError,
     "storage max_attempts must be >= 1"),
    ({"batch_size": 10, "cache_policy": "mru"}, ValueError, "'lru' or 'fill'"),
    ({"batch_size": 10, "source": []}, ValueError, "source: no file"),
])
def test_loader_errors_name_the_option(criteo: Path, kwargs: dict, error: type,
                                       message: str) -> None:
    source = kwargs.pop("source", criteo)
    with pytest.raises(error, match=message):
        stoker.Loader(source, **kwargs)


def test_serve_options_are_validated() -> None:
    options = _core.ServeOptions()
    options.tls_cert_pem = "cert"
    with pytest.raises(ValueError, match="TLS needs both a certificate and a key"):
        options.validate()
    options = _core.ServeOptions()
    options.max_streams = 0
    with pytest.raises(ValueError, match="max_streams must be >= 1, got 0"):
        options.validate()


# --- filters --------------------------------------------------------------------------------


def test_filters_keep_arrows_own_form_casts_and_isin_included(criteo: Path) -> None:
    # Both would not survive Substrait: safe casts are refused, isin becomes an OR chain.
    expression = pc.field("C1").cast(pa.int64()).isin([1, 2, 3]) | (pc.field("label") > 0.5)
    options = _core.LoaderOptions()
    options.filter = _options.serialize_filter(expression)
    assert options.filter == _options.serialize_filter(expression)  # a lossless round trip
    loader = stoker.Loader(criteo, columns=COLUMNS, batch_size=100, shuffle=False,
                           output="arrow", filter=expression)
    table = pa.Table.from_batches(list(loader))
    want = pa.Table.from_batches(list(stoker.Loader(criteo, columns=COLUMNS, batch_size=100,
                                                    shuffle=False, output="arrow")))
    assert table.num_rows == want.filter(expression).num_rows > 0


# --- one tensor conversion ----------------------------------------------------------------


def test_to_tensors_matches_what_a_loader_delivers(criteo: Path) -> None:
    arrow = list(stoker.Loader(criteo, columns=COLUMNS, batch_size=500, seed=3, output="arrow"))
    numpy = list(stoker.Loader(criteo, columns=COLUMNS, batch_size=500, seed=3))
    assert_same_batches([_core.to_tensors(b) for b in arrow], numpy)


def test_to_tensors_shapes_ragged_and_refusals() -> None:
    batch = pa.record_batch({
        "vec": pa.array([[1.0, 2.0], [3.0, 4.0]], pa.list_(pa.float32(), 2)),
        "seq": pa.array([[1, 2, 3], []], pa.list_(pa.int64())),
        "flag": pa.array([True, False]),
    })
    out = _core.to_tensors(batch, "numpy", ["seq"])
    assert out["vec"].shape == (2, 2) and out["vec"].dtype == np.float32
    np.testing.assert_array_equal(out["seq"], [1, 2, 3])
    np.testing.assert_array_equal(out["seq_offsets"], [0, 3, 3])
    np.testing.assert_array_equal(out["flag"], [True, False])
    with pytest.raises(ValueError, match="column 'x' has null values"):
        _core.to_tensors(pa.record_batch({"x": pa.array([1.0, None])}))
    with pytest.raises(TypeError, match="column 's' has type string"):
        _core.to_tensors(pa.record_batch({"s": pa.array(["a"])}))


# --- one ticket codec -----------------------------------------------------------------------


def test_ticket_codec_round_trips_in_the_documented_format() -> None:
    text = _core.encode_ticket("abc", epoch=2, rank=1, world_size=4, rounds=[[8, 700]],
                               shards=2, shard=1, chunk=16, first=5)
    assert text == (b"stoker1;config=abc;epoch=2;rank=1;world=4;rounds=8:700;shards=2;shard=1;"
                    b"chunk=16;first=5")
    assert _core.decode_ticket(text) == {
        "config": "abc", "epoch": 2, "rank": 1, "world_size": 4, "rounds": [(8, 700)],
        "shards": 2, "shard": 1, "span": 1, "chunk": 16, "first": 5, "chunk_rows": 0,
        "first_row": 0}
    # A share of whole windows: its two fields travel only for such a share.
    windows = _core.encode_ticket("abc", epoch=0, rank=0, world_size=1, rounds=[], shards=2,
                                  shard=1, chunk_rows=4096, first_row=700)
    assert windows.endswith(b";first=0;chunk_rows=4096;first_row=700")
    assert _core.decode_ticket(windows)["first_row"] == 700
    # A run of slots of each period (local first): the field travels only when not 1.
    spanned = _core.encode_ticket("abc", epoch=0, rank=0, world_size=1, rounds=[], shards=5,
                                  shard=0, span=3, chunk=16, first=0)
    assert b";shard=0;span=3;chunk=16;" in spanned
    assert _core.decode_ticket(spanned)["span"] == 3
    with pytest.raises(ValueError, match="unknown field 'path'"):
        _core.decode_ticket(b"stoker1;path=/etc")


def test_remote_loader_checks_rank_before_connecting() -> None:
    with pytest.raises(ValueError, match=r"rank must satisfy 0 <= rank < world_size \(2\)"):
        stoker.RemoteLoader(["grpc://127.0.0.1:1"], rank=2, world_size=2)
    with pytest.raises(ValueError, match="output must be"):
        stoker.RemoteLoader(["grpc://127.0.0.1:1"], output="pandas")
