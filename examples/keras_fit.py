"""Keras 3 `model.fit` on a Stoker loader, on whichever backend KERAS_BACKEND names.

    KERAS_BACKEND=jax python examples/keras_fit.py --data DIR

The same script runs on TensorFlow, JAX and PyTorch: stoker.keras.PyDataset hands Keras
numpy batches, which every backend takes. On TensorFlow, stoker.tf.dataset(loader) is the
tf.data route (zero-copy tf.Tensors, tf.distribute)."""

from __future__ import annotations

import argparse
import json

import keras
import stoker
import stoker.keras

FEATURES = [f"I{i}" for i in range(1, 14)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True, help="a criteo-preset dataset (stoker gen)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=1024)
    args = parser.parse_args()

    loader = stoker.Loader(args.data, columns=["label", *FEATURES], batch_size=args.batch_size,
                           seed=7, transforms=[{"op": "log1p", "column": c} for c in FEATURES]
                           + [{"op": "stack", "columns": FEATURES, "output": "features"}])
    inputs = keras.Input(shape=(len(FEATURES),), name="features")
    hidden = keras.layers.Dense(16, activation="relu")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(1)(hidden))
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(stoker.keras.PyDataset(loader, label="label"), epochs=args.epochs,
                        verbose=0)
    print(json.dumps({"backend": keras.backend.backend(), "loss": history.history["loss"],
                      "loader_epoch": loader.state_dict()["epoch"]}))


if __name__ == "__main__":
    main()
