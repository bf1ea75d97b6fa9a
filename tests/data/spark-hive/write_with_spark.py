"""Writes tests/data/spark-hive/events with a real Spark job (pyspark 4.3.0 on OpenJDK 17, local
mode): 600 rows partitioned by `day` (a date) and `region` (a string, null for every fifth row),
two tasks, so two part files per partition, beside Spark's `_SUCCESS` and Hadoop's `.crc` files.
About two minutes here, so the output is kept in the repository rather than written by `make
test`:

    python -m venv /tmp/spark-venv && /tmp/spark-venv/bin/pip install pyspark==4.3.0
    /tmp/spark-venv/bin/python tests/data/spark-hive/write_with_spark.py tests/data/spark-hive/events
"""

import sys

from pyspark.sql import SparkSession

spark = (SparkSession.builder.master("local[1]").appName("stoker-test")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
         .getOrCreate())
rows = spark.range(0, 600).selectExpr(
    "id", "cast(id / 7 as float) as x", "date_add(date'2026-11-01', cast(id % 3 as int)) as day",
    "case when id % 5 = 0 then null else concat('r', id % 2) end as region")
rows.repartition(2).write.partitionBy("day", "region").parquet(sys.argv[1])
spark.stop()
