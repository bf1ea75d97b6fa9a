"""Batches across machines: the Flight client and the RemoteLoader over it, local-first
reading and its split, and the `stoker serve` server. README.md lists the files."""
