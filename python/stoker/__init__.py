"""Stoker: feeds deep-learning training from Parquet datasets.

    import stoker
    loader = stoker.Loader("data/train/", batch_size=4096, seed=7)
    for epoch in range(3):
        for batch in loader:   # dict: column -> numpy array
            ...
"""

import pyarrow  # noqa: F401  (loads the Arrow C++ libraries the engine links against)

from stoker._loading.loader import Loader
from stoker._loading.mixture import Mixture, Source
from stoker._loading.mixture_loader import MixtureLoader
from stoker._loading.tables import delta_table, iceberg_table
from stoker._remote.remote_loader import RemoteLoader

__all__ = ["Loader", "Mixture", "MixtureLoader", "RemoteLoader", "Source", "delta_table",
           "iceberg_table"]
__version__ = "0.1.0"
