"""Batches delivered on a device: the bounded queue of batches in flight, and its CUDA and
JAX stages. README.md lists the files."""
