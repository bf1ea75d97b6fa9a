"""Writes a Petastorm dataset with every codec, by Petastorm's own code, and what Petastorm's
make_reader reads back from it. Runs in Petastorm's environment (.bench-petastorm-venv: petastorm
0.13.1, pyspark for the Spark SQL types, opencv for the image codec):

    .bench-petastorm-venv/bin/python tests/petastorm/make_dataset.py OUT_DIR [--spark]
    .bench-petastorm-venv/bin/python tests/petastorm/make_dataset.py OUT_DIR --hello-world

Without --spark, each value is encoded by its field's codec (``codec.encode``), the rows are
written by pyarrow, and the Unischema and row-group counts are stored by Petastorm's
dataset_metadata helpers (what materialize_dataset does after Spark has written the files:
stoker_devtools.petastorm_writer, which benchmarks/petastorm_readers.py writes with too).
With --spark, Petastorm's materialize_dataset and dict_to_spark_row write it through Spark
itself (needs a JRE). Either way OUT_DIR/dataset is the dataset and OUT_DIR/expected.npz holds
every row's values as Petastorm's make_reader decodes them, keyed "<field>/<id>". With
--hello-world, OUT_DIR is Petastorm's hello-world dataset instead (its example's schema and row
generator, 10 rows), written the same way without Spark."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from petastorm import make_reader
from petastorm.codecs import CompressedImageCodec, CompressedNdarrayCodec, NdarrayCodec, ScalarCodec
from petastorm.unischema import Unischema, UnischemaField
from pyspark.sql.types import DoubleType, IntegerType, StringType
from stoker_devtools.petastorm_writer import image, write_with_codecs

ROWS = 40
FILES = 2
ROW_GROUP_ROWS = 8

Schema = Unischema("EveryCodec", [
    UnischemaField("id", np.int32, (), ScalarCodec(IntegerType()), False),
    UnischemaField("weight", np.float64, (), ScalarCodec(DoubleType()), False),
    UnischemaField("name", np.str_, (), ScalarCodec(StringType()), False),
    UnischemaField("matrix", np.float32, (4, 3), NdarrayCodec(), False),
    UnischemaField("fortran", np.float64, (3, 5), NdarrayCodec(), False),
    UnischemaField("ragged", np.int16, (None, 2), NdarrayCodec(), False),
    UnischemaField("cube", np.uint8, (None, 4, None), NdarrayCodec(), False),
    UnischemaField("packed", np.int64, (16,), CompressedNdarrayCodec(), False),
    UnischemaField("packed_ragged", np.float32, (None,), CompressedNdarrayCodec(), False),
    UnischemaField("rgb_png", np.uint8, (24, 32, 3), CompressedImageCodec("png"), False),
    UnischemaField("grey_png", np.uint8, (24, 32), CompressedImageCodec("png"), False),
    UnischemaField("rgb_jpeg", np.uint8, (24, 32, 3), CompressedImageCodec("jpeg", 90), False),
    UnischemaField("grey_jpeg", np.uint8, (None, None), CompressedImageCodec("jpeg", 75), False),
])


def row(i: int) -> dict:
    rng = np.random.default_rng(i)
    return {
        "id": np.int32(i),
        "weight": float(rng.normal()),
        "name": f"row-{i}",
        "matrix": rng.normal(size=(4, 3)).astype(np.float32),
        "fortran": np.asfortranarray(rng.normal(size=(3, 5))),
        "ragged": rng.integers(-999, 999, size=(int(rng.integers(1, 6)), 2)).astype(np.int16),
        "cube": rng.integers(0, 255, size=(int(rng.integers(1, 4)), 4,
                                           int(rng.integers(1, 5)))).astype(np.uint8),
        "packed": np.arange(16, dtype=np.int64) * i - 7,
        "packed_ragged": rng.normal(size=int(rng.integers(0, 30))).astype(np.float32),
        "rgb_png": image(rng, (24, 32, 3)),
        "grey_png": image(rng, (24, 32)),
        "rgb_jpeg": image(rng, (24, 32, 3)),
        "grey_jpeg": image(rng, (int(rng.integers(8, 40)), int(rng.integers(8, 40)))),
    }


def write_with_spark(dataset: Path) -> None:
    from petastorm.etl.dataset_metadata import materialize_dataset
    from petastorm.unischema import dict_to_spark_row
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Spark's Python workers: this one
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false") \
        .getOrCreate()
    url = dataset.resolve().as_uri()
    with materialize_dataset(spark, url, Schema, row_group_size_mb=1):
        rows = [dict_to_spark_row(Schema, row(i)) for i in range(ROWS)]
        spark.createDataFrame(rows, Schema.as_spark_schema()).coalesce(FILES) \
            .write.mode("overwrite").option("parquet.block.size", 4096).parquet(url)
    spark.stop()


def read_back(dataset: Path) -> dict[str, np.ndarray]:
    """Every row as Petastorm's make_reader decodes it."""
    expected = {}
    with make_reader(dataset.resolve().as_uri(), reader_pool_type="dummy",
                     shuffle_row_groups=False) as reader:
        for sample in reader:
            for name, value in sample._asdict().items():
                expected[f"{name}/{int(sample.id)}"] = np.asarray(value)
    return expected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--spark", action="store_true")
    parser.add_argument("--hello-world", action="store_true")
    args = parser.parse_args()
    out = Path(args.out)
    if args.hello_world:
        from examples.hello_world.petastorm_dataset import generate_petastorm_dataset as hello

        write_with_codecs(out, hello.HelloWorldSchema, hello.row_generator, rows=10, files=2,
                          row_group_rows=ROW_GROUP_ROWS)
        print(f"wrote Petastorm's hello-world dataset to {out}")
        return
    dataset = out / "dataset"
    if args.spark:
        write_with_spark(dataset)
    else:
        write_with_codecs(dataset, Schema, row, rows=ROWS, files=FILES,
                          row_group_rows=ROW_GROUP_ROWS)
    expected = read_back(dataset)
    assert len(expected) == ROWS * len(Schema.fields), len(expected)
    np.savez_compressed(out / "expected.npz", **expected)
    print(f"wrote {dataset} and {out / 'expected.npz'}: {ROWS} rows read back by Petastorm")


if __name__ == "__main__":
    main()
