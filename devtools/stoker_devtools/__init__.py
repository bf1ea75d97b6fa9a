"""What Stoker's tests and benchmarks share, never shipped: the servers the tests start (S3,
`stoker serve`), Petastorm's dataset writer, and the benchmarks' timing, medians and results
files (devtools/README.md)."""
