"""Time from iter() to the first batch against shuffle_window, on local disk and behind a
proxy adding 20 ms to every request (moto on loopback): 4,500,000 rows (row_id int64, x
float32, label int32) in 16 files of 65,536-row groups; num_threads 2 and 8; medians of 3
seeds (the Loader is built first: listing and footers are not counted). docs/benchmarks.md,
"Thread scaling and the shuffled gap".

    python benchmarks/studies/first_batch_window.py [WORKDIR]
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import stoker
from stoker_devtools.bench import listed, timed
from stoker_devtools.s3 import KEY, SECRET, FaultProxy, MotoServer

os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
local = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/stoker-first-batch") / "narrow45"
if not local.exists():
    local.mkdir(parents=True)
    per = 4_500_000 // 16
    for f in range(16):
        ids = np.arange(f * per, (f + 1) * per, dtype=np.int64)
        pq.write_table(pa.table({"row_id": ids, "x": ids.astype(np.float32),
                                 "label": (ids % 4 == 0).astype(np.int32)}),
                       local / f"part-{f:02d}.parquet", row_group_size=65_536)
server = MotoServer()
proxy = FaultProxy(server.endpoint, latency=0.020)
fs = pafs.S3FileSystem(access_key=KEY, secret_key=SECRET, scheme="http",
                       endpoint_override=server.endpoint, region="us-east-1",
                       allow_bucket_creation=True)
fs.create_dir("bench")
for p in sorted(local.iterdir()):
    with fs.open_output_stream(f"bench/narrow/{p.name}") as out:
        out.write(p.read_bytes())
s3 = {"endpoint_override": proxy.endpoint, "scheme": "http", "region": "us-east-1",
      "access_key": KEY, "secret_key": SECRET}
try:
    print("| storage | shuffle_window | threads | first batch, median | runs (ms) |")
    print("| --- | ---: | ---: | ---: | --- |")
    for where, source, opts in (("local", str(local), {}),
                                ("s3 + 20 ms", "s3://bench/narrow/", {"storage_options": s3})):
        for window in (65_536, 262_144, 1_048_576, 4_194_304):
            for threads in (2, 8):
                times = []
                for seed in (1, 2, 3):
                    ld = stoker.Loader(source, batch_size=4096, shuffle_window=window,
                                       num_threads=threads, seed=seed, **opts)
                    times.append(timed(lambda ld=ld: next(iter(ld)))[1])
                    del ld
                runs = listed(times, 1e3, ".0f", sep=" / ")
                print(f"| {where} | {window:,} | {threads} | "
                      f"{statistics.median(times) * 1e3:.0f} ms | {runs} |", flush=True)
finally:
    proxy.stop()
    server.stop()
