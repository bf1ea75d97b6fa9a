"""What Stoker's tests and benchmarks share, never shipped: the servers the tests start (S3,
`stoker serve`) and Petastorm's dataset writer (devtools/README.md)."""
