"""stoker.keras.PyDataset: the loader's epochs as a Keras 3 PyDataset, in order, one loader
epoch per Keras epoch, on the TensorFlow backend here and on JAX and PyTorch through the
example (test_examples.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

keras = pytest.importorskip("keras")
import stoker
import stoker.keras

OPTIONS = {"batch_size": 2500, "seed": 2, "columns": ["row_id", "label", "I1", "I2"]}


def test_batches_in_order_as_features_and_label(criteo: Path) -> None:
    expected = list(stoker.Loader(criteo, **OPTIONS))
    data = stoker.keras.PyDataset(stoker.Loader(criteo, **OPTIONS), label="label",
                                  features=["I1", "I2"])
    assert len(data) == len(expected)
    for i, e in enumerate(expected):
        x, y = data[i]
        assert list(x) == ["I1", "I2"]
        np.testing.assert_array_equal(y, e["label"])
        np.testing.assert_array_equal(x["I1"], e["I1"])
    data.on_epoch_end()
    x, _ = data[0]  # the next Keras epoch reads the loader's next epoch
    second = list(stoker.Loader(criteo, **OPTIONS))  # a fresh loader's epoch 0
    assert not np.array_equal(x["I1"], second[0]["I1"])


def test_an_epoch_left_early_is_read_again_and_indexes_are_not_positions(
        criteo: Path) -> None:
    expected = list(stoker.Loader(criteo, **OPTIONS))
    data = stoker.keras.PyDataset(stoker.Loader(criteo, **OPTIONS), label="label")
    data[0], data[1]  # Keras's look at the first batches for their spec ...
    data.on_epoch_end()  # ... then a reset
    order = [3, 0, 7, 1, 2, 6, 5, 4]  # fit(shuffle=True) asks in a shuffled order
    assert len(order) == len(expected)
    for k, index in enumerate(order):
        _, y = data[index]
        np.testing.assert_array_equal(y, expected[k]["label"])  # the k-th of the epoch
    with pytest.raises(IndexError, match="all 8 batches"):
        data[0]
    with pytest.raises(IndexError, match="outside"):
        data[8]


def test_keras_workers_are_refused(criteo: Path) -> None:
    with pytest.raises(ValueError, match="workers=1"):
        stoker.keras.PyDataset(stoker.Loader(criteo, **OPTIONS), workers=4)
    with pytest.raises(ValueError, match="no column 'nope'"):
        stoker.keras.PyDataset(stoker.Loader(criteo, **OPTIONS), label="nope")


def test_model_fit_reads_one_loader_epoch_per_keras_epoch(criteo: Path) -> None:
    loader = stoker.Loader(criteo, **OPTIONS)
    inputs = {name: keras.Input(shape=(), name=name) for name in ("I1", "I2")}
    stacked = keras.layers.Concatenate()([keras.layers.Reshape((1,))(v) for v in inputs.values()])
    model = keras.Model(inputs, keras.layers.Dense(1)(stacked))
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(stoker.keras.PyDataset(loader, label="label", features=["I1", "I2"]),
                        epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    assert loader.state_dict()["epoch"] == 2
