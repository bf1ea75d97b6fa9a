"""A model of startup on real S3 for many ranks and files, with and without the dataset
index, from per-request costs (measured by benchmarks/studies/startup.py and manifest_memory.py, or
given): each rank lists the prefix (1,000 keys per page, pages one after another), then
either reads every footer (one ranged GET each, --metadata-threads at a time) or reads the
index in one GET and decodes it; with index="trust" it does not list (one HEAD of the index
instead), and checks each file it reads with a HEAD at its first read, beside the data reads
(counted apart: they follow the data, not the startup). The store caps the whole job's
request rate per prefix.

    python benchmarks/studies/startup_model.py [--ranks 256] [--files 100000] [--row-groups 4]
        [--columns 20] [--latency-ms 30] [--list-page-s 0.1] [--metadata-threads 64]
        [--prefix-rps 5500] [--stream-mb-s 80] [--chunk-bytes 121] [--decode-us-per-chunk 10]
"""

from __future__ import annotations

import argparse


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=256)
    p.add_argument("--files", type=int, default=100_000)
    p.add_argument("--row-groups", type=int, default=4, help="per file")
    p.add_argument("--columns", type=int, default=20)
    p.add_argument("--latency-ms", type=float, default=30, help="one small ranged GET")
    p.add_argument("--list-page-s", type=float, default=0.1, help="one 1,000-key listing page")
    p.add_argument("--metadata-threads", type=int, default=64)
    p.add_argument("--prefix-rps", type=float, default=5500,
                   help="GET/HEAD/LIST per second S3 serves one prefix (partition)")
    p.add_argument("--stream-mb-s", type=float, default=80, help="one GET's throughput")
    p.add_argument("--chunk-bytes", type=float, default=121,
                   help="index bytes per column chunk (measured: pyarrow 26 defaults)")
    p.add_argument("--decode-us-per-chunk", type=float, default=10,
                   help="CPU to decode one column chunk's metadata (measured)")
    a = p.parse_args()

    pages = -(-a.files // 1000)
    list_s = pages * a.list_page_s
    chunks = a.files * a.row_groups * a.columns
    decode_s = chunks * a.decode_us_per_chunk / 1e6
    # Without an index: every footer, metadata_threads at a time, and the same decoding.
    footers_s = a.files * a.latency_ms / 1000 / a.metadata_threads + decode_s
    requests_no = pages + a.files
    job_no = a.ranks * requests_no
    # With: one GET of the whole index, then decoding it.
    index_mb = chunks * a.chunk_bytes / 1e6
    index_s = a.latency_ms / 1000 + index_mb / a.stream_mb_s + decode_s
    requests_yes = pages + 1
    job_yes = a.ranks * requests_yes
    # Trusting the index: a HEAD of it and its GET; no listing.
    requests_trust = 2
    job_trust = a.ranks * requests_trust
    trust_s = a.latency_ms / 1000 + index_s
    # Later, one HEAD per file a rank reads (about files x row groups / ranks when ranks
    # outnumber a file's row groups), beside its data reads.
    checks_per_rank = min(a.files, a.files * a.row_groups / a.ranks)
    print(f"{a.ranks} ranks x {a.files:,} files x {a.row_groups} row groups x {a.columns} "
          f"columns; {a.latency_ms:g} ms per GET, {a.list_page_s:g} s per listing page, "
          f"{a.metadata_threads} footer reads at a time, {a.prefix_rps:,.0f} requests/s per "
          f"prefix, {a.stream_mb_s:g} MB/s per GET, index {a.chunk_bytes:g} B and "
          f"{a.decode_us_per_chunk:g} us of decoding per column chunk\n")
    print("| | requests per rank | requests, whole job | one rank alone, s | "
          "whole job at the prefix's rate, s |")
    print("|---|---:|---:|---:|---:|")
    for name, per_rank, job, alone in (
            ("no index", requests_no, job_no, list_s + footers_s),
            (f"index ({index_mb:,.0f} MB)", requests_yes, job_yes, list_s + index_s),
            ("index, trust", requests_trust, job_trust, trust_s)):
        print(f"| {name} | {per_rank:,} | {job:,} | {alone:,.0f} | "
              f"{max(alone, job / a.prefix_rps):,.0f} |")
    print(f"\nindex=\"trust\" adds about {checks_per_rank:,.0f} HEADs per rank over an epoch "
          f"(one per file it reads, at its first read, beside {a.files * a.row_groups / a.ranks:,.0f}"
          f" data reads)")


if __name__ == "__main__":
    main()
