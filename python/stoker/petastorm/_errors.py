"""The exceptions Petastorm's reader API raises that Python has no built-in for."""

from __future__ import annotations


class NoDataAvailableError(Exception):
    """A reader would deliver no rows: more shards (``shard_count``) than the dataset has row
    groups, as Petastorm's ``petastorm.errors.NoDataAvailableError``."""
