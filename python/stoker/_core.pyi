"""Stoker's C++ engine (use the stoker package, not this module)"""

from collections.abc import Sequence
from typing import overload


class Batch:
    """
    A batch of the engine's handed over unconverted (a received one): to_tensors and to_kjt_parts read it as it is, pyarrow.record_batch() makes it a pyarrow.RecordBatch over the same buffers.
    """

    @property
    def num_rows(self) -> int: ...

    @property
    def nbytes(self) -> int:
        """
        The bytes of its buffers, each counted once (pyarrow's get_total_buffer_size(); pyarrow's nbytes counts only the ranges referenced, at the cost of building them).
        """

    def __arrow_c_array__(self, requested_schema: object | None = None) -> object: ...

def to_tensors(batch: object, output: str = 'numpy', ragged: Sequence[str] = []) -> dict:
    """
    A pyarrow.RecordBatch as a dict of numpy arrays, torch tensors, jax.Arrays or TensorFlow tensors over its buffers, as a Loader delivers it (fixed-size lists as extra dimensions; each `ragged` column as values and '<name>_offsets').
    """

def check_output(output: str) -> None:
    """
    Raises ValueError unless output is "numpy", "torch", "jax", "tensorflow", "arrow" or "torchrec".
    """

class TransformOp:
    """One step of a transform spec (transform_options.h)."""

    def __init__(self) -> None: ...

    @property
    def kind(self) -> str: ...

    @kind.setter
    def kind(self, arg: str, /) -> None: ...

    @property
    def columns(self) -> list[str]: ...

    @columns.setter
    def columns(self, arg: Sequence[str], /) -> None: ...

    @property
    def output(self) -> str: ...

    @output.setter
    def output(self, arg: str, /) -> None: ...

    @property
    def dtype(self) -> str: ...

    @dtype.setter
    def dtype(self, arg: str, /) -> None: ...

    @property
    def number(self) -> float: ...

    @number.setter
    def number(self, arg: float, /) -> None: ...

    @property
    def text(self) -> str: ...

    @text.setter
    def text(self, arg: str, /) -> None: ...

    @property
    def is_text(self) -> bool: ...

    @is_text.setter
    def is_text(self, arg: bool, /) -> None: ...

    @property
    def low(self) -> float: ...

    @low.setter
    def low(self, arg: float, /) -> None: ...

    @property
    def high(self) -> float: ...

    @high.setter
    def high(self, arg: float, /) -> None: ...

    @property
    def mean(self) -> float: ...

    @mean.setter
    def mean(self, arg: float, /) -> None: ...

    @property
    def std(self) -> float: ...

    @std.setter
    def std(self, arg: float, /) -> None: ...

    @property
    def boundaries(self) -> list[float]: ...

    @boundaries.setter
    def boundaries(self, arg: Sequence[float], /) -> None: ...

    @property
    def num_buckets(self) -> int: ...

    @num_buckets.setter
    def num_buckets(self, arg: int, /) -> None: ...

    @property
    def path(self) -> str: ...

    @path.setter
    def path(self, arg: str, /) -> None: ...

    @property
    def default_id(self) -> int: ...

    @default_id.setter
    def default_id(self, arg: int, /) -> None: ...

    @property
    def length(self) -> int: ...

    @length.setter
    def length(self, arg: int, /) -> None: ...

    @property
    def keep(self) -> str: ...

    @keep.setter
    def keep(self, arg: str, /) -> None: ...

    @property
    def p(self) -> float: ...

    @p.setter
    def p(self, arg: float, /) -> None: ...

    @property
    def size(self) -> int: ...

    @size.setter
    def size(self, arg: int, /) -> None: ...

    @property
    def key(self) -> str: ...

    @key.setter
    def key(self, arg: str, /) -> None: ...

    fields: tuple = ...

    def __repr__(self) -> str: ...

class StorageOptions:
    """How to reach object storage (storage_options.h)."""

    def __init__(self) -> None: ...

    @property
    def region(self) -> str: ...

    @region.setter
    def region(self, arg: str, /) -> None: ...

    @property
    def endpoint_override(self) -> str: ...

    @endpoint_override.setter
    def endpoint_override(self, arg: str, /) -> None: ...

    @property
    def scheme(self) -> str: ...

    @scheme.setter
    def scheme(self, arg: str, /) -> None: ...

    @property
    def anonymous(self) -> bool: ...

    @anonymous.setter
    def anonymous(self, arg: bool, /) -> None: ...

    @property
    def access_key(self) -> str: ...

    @access_key.setter
    def access_key(self, arg: str, /) -> None: ...

    @property
    def secret_key(self) -> str: ...

    @secret_key.setter
    def secret_key(self, arg: str, /) -> None: ...

    @property
    def session_token(self) -> str: ...

    @session_token.setter
    def session_token(self, arg: str, /) -> None: ...

    @property
    def max_attempts(self) -> int: ...

    @max_attempts.setter
    def max_attempts(self, arg: int, /) -> None: ...

    @property
    def connect_timeout(self) -> float: ...

    @connect_timeout.setter
    def connect_timeout(self, arg: float, /) -> None: ...

    @property
    def request_timeout(self) -> float: ...

    @request_timeout.setter
    def request_timeout(self, arg: float, /) -> None: ...

    @property
    def io_threads(self) -> int: ...

    @io_threads.setter
    def io_threads(self, arg: int, /) -> None: ...

    @property
    def metadata_threads(self) -> int: ...

    @metadata_threads.setter
    def metadata_threads(self, arg: int, /) -> None: ...

    fields: tuple = ...

    def __repr__(self) -> str: ...

class PartitionOptions:
    """Where partition values come from (partition_options.h)."""

    def __init__(self) -> None: ...

    @property
    def hive(self) -> bool: ...

    @hive.setter
    def hive(self, arg: bool, /) -> None: ...

    @property
    def schema(self) -> bytes | None: ...

    @schema.setter
    def schema(self, arg: bytes | None, /) -> None: ...

    @property
    def file_values(self) -> list[list[str | None]]: ...

    @file_values.setter
    def file_values(self, arg: Sequence[Sequence[str | None]], /) -> None: ...

    @property
    def stored_in_files(self) -> bool: ...

    @stored_in_files.setter
    def stored_in_files(self, arg: bool, /) -> None: ...

    fields: tuple = ...

    def __repr__(self) -> str: ...

class AutotuneOptions:
    """How the loader sizes itself (options.h, docs/autotune.md)."""

    def __init__(self) -> None: ...

    @property
    def enabled(self) -> bool: ...

    @enabled.setter
    def enabled(self, arg: bool, /) -> None: ...

    @property
    def target_stall(self) -> float: ...

    @target_stall.setter
    def target_stall(self, arg: float, /) -> None: ...

    @property
    def window_batches(self) -> int: ...

    @window_batches.setter
    def window_batches(self, arg: int, /) -> None: ...

    @property
    def window_seconds(self) -> float: ...

    @window_seconds.setter
    def window_seconds(self, arg: float, /) -> None: ...

    @property
    def random_moves(self) -> int: ...

    @random_moves.setter
    def random_moves(self, arg: int, /) -> None: ...

    fields: tuple = ...

    def __repr__(self) -> str: ...

class LoaderOptions:
    """Everything that configures a Loader (options.h)."""

    def __init__(self) -> None: ...

    @property
    def sources(self) -> list[str]: ...

    @sources.setter
    def sources(self, arg: Sequence[str], /) -> None: ...

    @property
    def columns(self) -> list[str]: ...

    @columns.setter
    def columns(self, arg: Sequence[str], /) -> None: ...

    @property
    def batch_size(self) -> int: ...

    @batch_size.setter
    def batch_size(self, arg: int, /) -> None: ...

    @property
    def shuffle(self) -> bool: ...

    @shuffle.setter
    def shuffle(self, arg: bool, /) -> None: ...

    @property
    def plan_version(self) -> int: ...

    @plan_version.setter
    def plan_version(self, arg: int, /) -> None: ...

    @property
    def rank(self) -> int: ...

    @rank.setter
    def rank(self, arg: int, /) -> None: ...

    @property
    def world_size(self) -> int: ...

    @world_size.setter
    def world_size(self, arg: int, /) -> None: ...

    @property
    def drop_last(self) -> bool: ...

    @drop_last.setter
    def drop_last(self, arg: bool, /) -> None: ...

    @property
    def pad_to_equal_steps(self) -> bool: ...

    @pad_to_equal_steps.setter
    def pad_to_equal_steps(self, arg: bool, /) -> None: ...

    @property
    def with_row_origin(self) -> bool: ...

    @with_row_origin.setter
    def with_row_origin(self, arg: bool, /) -> None: ...

    @property
    def engine_cpus(self) -> list[int]: ...

    @engine_cpus.setter
    def engine_cpus(self, arg: Sequence[int], /) -> None: ...

    @property
    def autotune(self) -> AutotuneOptions: ...

    @autotune.setter
    def autotune(self, arg: AutotuneOptions, /) -> None: ...

    @property
    def cache_limit_bytes(self) -> int: ...

    @cache_limit_bytes.setter
    def cache_limit_bytes(self, arg: int, /) -> None: ...

    @property
    def max_bad_units(self) -> int | None: ...

    @max_bad_units.setter
    def max_bad_units(self, arg: int | None, /) -> None: ...

    @property
    def max_bad_fraction(self) -> float | None: ...

    @max_bad_fraction.setter
    def max_bad_fraction(self, arg: float | None, /) -> None: ...

    @property
    def storage(self) -> StorageOptions: ...

    @storage.setter
    def storage(self, arg: StorageOptions, /) -> None: ...

    @property
    def partitioning(self) -> PartitionOptions: ...

    @partitioning.setter
    def partitioning(self, arg: PartitionOptions, /) -> None: ...

    @property
    def transforms(self) -> list[TransformOp]: ...

    @transforms.setter
    def transforms(self, arg: Sequence[TransformOp], /) -> None: ...

    @property
    def trace_events(self) -> int: ...

    @trace_events.setter
    def trace_events(self, arg: int, /) -> None: ...

    @property
    def pinned_output(self) -> bool: ...

    @pinned_output.setter
    def pinned_output(self, arg: bool, /) -> None: ...

    @property
    def seed(self) -> int: ...

    @seed.setter
    def seed(self, arg: int, /) -> None: ...

    @property
    def shuffle_window(self) -> int | None: ...

    @shuffle_window.setter
    def shuffle_window(self, arg: int | None, /) -> None: ...

    @property
    def mode(self) -> str: ...

    @mode.setter
    def mode(self, arg: str, /) -> None: ...

    @property
    def num_threads(self) -> int | None: ...

    @num_threads.setter
    def num_threads(self, arg: int | None, /) -> None: ...

    @property
    def prefetch(self) -> int | None: ...

    @prefetch.setter
    def prefetch(self, arg: int | None, /) -> None: ...

    @property
    def cache_dir(self) -> str | None: ...

    @cache_dir.setter
    def cache_dir(self, arg: str | None, /) -> None: ...

    @property
    def cache_policy(self) -> str: ...

    @cache_policy.setter
    def cache_policy(self, arg: str, /) -> None: ...

    @property
    def on_error(self) -> str: ...

    @on_error.setter
    def on_error(self, arg: str, /) -> None: ...

    @property
    def index(self) -> str: ...

    @index.setter
    def index(self, arg: str | None, /) -> None: ...

    @property
    def codecs(self) -> list: ...

    @codecs.setter
    def codecs(self, arg: Sequence[dict], /) -> None: ...

    @property
    def filter(self) -> bytes | None: ...

    @filter.setter
    def filter(self, arg: bytes | None, /) -> None: ...

    fields: tuple = ...

    def __repr__(self) -> str: ...

    def validate(self) -> None:
        """Raises ValueError naming the first option out of range."""

class ServeOptions:
    """How `stoker serve` runs (flight_service.h)."""

    def __init__(self) -> None: ...

    @property
    def host(self) -> str: ...

    @host.setter
    def host(self, arg: str, /) -> None: ...

    @property
    def port(self) -> int: ...

    @port.setter
    def port(self, arg: int, /) -> None: ...

    @property
    def token(self) -> str: ...

    @token.setter
    def token(self, arg: str, /) -> None: ...

    @property
    def tls_cert_pem(self) -> str: ...

    @tls_cert_pem.setter
    def tls_cert_pem(self, arg: str, /) -> None: ...

    @property
    def tls_key_pem(self) -> str: ...

    @tls_key_pem.setter
    def tls_key_pem(self, arg: str, /) -> None: ...

    @property
    def max_streams(self) -> int: ...

    @max_streams.setter
    def max_streams(self, arg: int, /) -> None: ...

    @property
    def chunk_batches(self) -> int: ...

    @chunk_batches.setter
    def chunk_batches(self, arg: int, /) -> None: ...

    @property
    def stream_idle_timeout_s(self) -> int: ...

    @stream_idle_timeout_s.setter
    def stream_idle_timeout_s(self, arg: int, /) -> None: ...

    @property
    def shutdown_grace_s(self) -> int: ...

    @shutdown_grace_s.setter
    def shutdown_grace_s(self, arg: int, /) -> None: ...

    fields: tuple = ...

    def __repr__(self) -> str: ...

    def validate(self) -> None:
        """Raises ValueError naming the first option out of range."""

DEFAULT_TRACE_EVENTS: int = 262144

DEFAULT_SHUFFLE_WINDOW: int = 262144

LATEST_PLAN_VERSION: int = 2

DEFAULT_METADATA_THREADS: int = 64

def validate_rank(rank: int, world_size: int) -> None:
    """
    Raises ValueError unless 0 <= rank < world_size (the check LoaderOptions uses).
    """

RESUME_IDENTITY: tuple = ...

def read_cpu_budget(cgroup_root: str = '/sys/fs/cgroup') -> dict:
    """
    The CPUs this process may use and this rank's share (what num_threads=None resolves to): the affinity mask, the cgroup's CPU quota, the ranks on this node.
    """

class Epoch:
    def wait_ready(self) -> bool:
        """Waits up to 100 ms; True once next() would not block."""

    def next(self) -> object:
        """The next batch, or None after the last one."""

    def close(self) -> None:
        """Stop the workers now."""

    def use_kjt(self, spec: KjtSpec) -> None:
        """Deliver the batches as TorchRec's parts (to_kjt_parts) from now on."""

    def num_batches(self) -> int: ...

    def planned_rows(self) -> int:
        """
        Planned rows of the batches delivered so far (skipped units' rows included).
        """

class Loader:
    def __init__(self, options: LoaderOptions, output: str) -> None: ...

    def warn_about_cache(self) -> None: ...

    def num_batches(self) -> int: ...

    def schema_capsule(self) -> object: ...

    def start_epoch(self, epoch: int, resumed: Sequence[tuple[int, int]]) -> Epoch: ...

    def start_share(self, epoch: int, resumed: Sequence[tuple[int, int]], *, shards: int, shard: int, span: int, chunk: int, first: int) -> Epoch:
        """
        The batches b of this rank's epoch with shard <= (b // chunk) % shards < shard + span and b >= first, in plan order.
        """

    def restore_digest(self, hex: str) -> None: ...

    def stats(self) -> dict: ...

    def write_trace(self, path: str) -> None: ...

    def dataset(self) -> dict: ...

    def config(self) -> str:
        """What a server over this loader would advertise (JSON, docs/serve.md)."""

class Server:
    @overload
    def __init__(self, loader: Loader, options: ServeOptions) -> None: ...

    @overload
    def __init__(self, mixture: object, identity_json: str, options: ServeOptions) -> None:
        """
        A server over a _core.MixtureReader's streams, advertising identity_json (the mixture loader's identity as a JSON object) with its digest and chunk added.
        """

    @property
    def port(self) -> int: ...

    def config(self) -> str: ...

    def stats(self) -> dict:
        """The server's counters (docs/observability.md)."""

    def serve(self) -> None: ...

    def shutdown(self) -> None: ...

DEFAULT_CHUNK_BATCHES: int = 16

def encode_ticket(config: str, *, epoch: int, rank: int, world_size: int, rounds: Sequence[tuple[int, int]], shards: int = 1, shard: int = 0, span: int = 1, chunk: int = 1, first: int = 0, chunk_rows: int = 0, first_row: int = 0) -> bytes:
    """The ticket naming a stream (the format docs/serve.md documents)."""

def decode_ticket(ticket: bytes) -> dict:
    """
    A ticket's fields as a dict; ValueError naming what is wrong with a bad one.
    """

class FlightStream:
    """A server's DoGet stream, read ahead on a C++ thread of its own."""

    def wait_ready(self, timeout_s: float = 0.1) -> bool:
        """
        Whether next() answers without waiting, after waiting up to timeout_s for it.
        """

    def next(self) -> object:
        """
        The next batch as a _core.Batch; None at the stream's end; the stream's error as pyarrow.flight raises it.
        """

    def cancel(self) -> None: ...

class FlightConnection:
    """A Flight client of one server, whose streams are read ahead."""

    def __init__(self, location: str, headers: Sequence[tuple[str, str]], tls_root_certs: str) -> None: ...

    def read(self, ticket: bytes, depth: int) -> FlightStream:
        """The DoGet stream of `ticket`, up to `depth` batches received ahead."""

def transform_ops() -> list:
    """
    Every transform op in order: {'name', 'required' and 'optional' keys of its spec dict, 'singular': {key accepted instead of a list key: that list key}}.
    """

class FaultProbe:
    def __init__(self, *, pages_per_round: int = 8, interval_us: int = 1000) -> None:
        """
        Starts a thread that maps fresh pages and times each first touch and each mmap/munmap.
        """

    def stop(self) -> dict:
        """
        Stops the probe (once) and returns its timings: seconds, and for touches and maps each count, p50_us, p99_us, max_us, over_1ms and over_1ms_blocked.
        """

class TraceRing:
    def __init__(self, capacity: int) -> None:
        """Keeps the last `capacity` spans."""

    @staticmethod
    def now() -> int:
        """The ring's clock in ns: time spans with it."""

    def record(self, stage: str, start_ns: int, end_ns: int, batch: int, server: int = -1) -> None:
        """
        Records a batch's span ("receive" with the server's index, "convert", "wait") on the calling thread's row.
        """

    def write(self, path: str) -> None:
        """Writes the spans kept as Chrome trace JSON."""

    @property
    def recorded(self) -> int: ...

def write_index(source: str, storage: StorageOptions, overwrite: bool = False, checksums: bool = False) -> dict:
    """
    Writes <source>/_metadata (every data file's footer, and each file's size and mtime for the stale check; with checksums, each column chunk's); returns {'path', 'files', 'row_groups', 'bytes', 'checksums', 'bytes_checksummed'}.
    """

class MixturePlan:
    """
    Which source fills each position of a mixture's epoch: a pure function of (source rows, batch rows, seed, epoch, position).
    """

    def __init__(self, source_rows: Sequence[int], batch_rows: int, seed: int) -> None:
        """
        batch_rows 0: proportion mode; > 0: stratified batches of that many rows.
        """

    @property
    def epoch_rows(self) -> int: ...

    @property
    def source_rows(self) -> list[int]: ...

    @property
    def block_rows(self) -> int: ...

    @property
    def num_blocks(self) -> int: ...

    @property
    def stratified(self) -> bool: ...

    def rows_before_block(self, block: int) -> list[int]:
        """Rows of each source before block `block` (the same every epoch)."""

    def block_sources(self, epoch: int, block: int) -> bytes:
        """The source index of every position of the block, one byte each."""

    def rows_before(self, epoch: int, position: int) -> list[int]:
        """Rows of each source in positions [0, position) of the epoch."""

class MixtureReader:
    """
    Starts a mixture's epochs (src/mixture/mixture_stream.h) and counts what they delivered.
    """

    def __init__(self, sources: list, plan: MixturePlan, output: str, mode: str = 'train', pad_to_equal_steps: bool = False) -> None:
        """
        sources: each source's _core.Loader (world size 1, built with the mixture's options), read with its share of the mixture's shuffle window; mode and pad_to_equal_steps: how ranks share an epoch's positions (a Loader's rule).
        """

    def start_epoch(self, epoch: int, resumed: Sequence[tuple[int, int]], rank: int, world_size: int) -> object:
        """
        An Epoch of the mixture for this rank after the resumed (world_size, rows per rank) rounds; its batches are gathered ahead of the consumer. Padded (pad_to_equal_steps): batch_size rows each, copies of the plan's pad position's row after the real ones, and the _valid column.
        """

    @property
    def shuffle_windows(self) -> list[int]:
        """Each source's share of the mixture's shuffle window, in rows."""

    @property
    def num_threads(self) -> int:
        """Worker threads of each epoch, which every source's engine shares."""

    def rows_delivered(self) -> list[int]:
        """Rows each source delivered, over every epoch started here."""

    def batches_delivered(self) -> int: ...

def apportion(total: int, weights: Sequence[float], tie_key: int) -> list[int]:
    """
    `total` rows split in proportion to `weights` (each > 0) by largest remainder, ties ordered by `tie_key`.
    """

def mixture_source_seed(seed: int, source: int) -> int:
    """The seed of source `source`'s own plan in a mixture seeded `seed`."""

def rank_segments(total_rows: int, resumed: Sequence[tuple[int, int]], world_size: int, rank: int) -> list[tuple[int, int]]:
    """
    This rank's [begin, end) ranges of an epoch of `total_rows` positions after the `resumed` (world_size, rows per rank) rounds: the elastic rule of the epoch plan.
    """

def rows_left(total_rows: int, resumed: Sequence[tuple[int, int]], world_size: int) -> int:
    """
    Rows each of `world_size` ranks has left of an epoch of `total_rows` rows after the `resumed` (world_size, rows per rank) rounds (mode="train": equal shares).
    """

def batches_left(total_rows: int, resumed: Sequence[tuple[int, int]], world_size: int, rank: int, batch_size: int, drop_last: bool, mode: str, pad_to_equal_steps: bool) -> int:
    """
    Batches rank `rank` of `world_size` has left of an epoch of `total_rows` rows after the `resumed` rounds, in mode "train" or "eval" (with its padding): the plan's own count, without data.
    """

def rank_rows(total_rows: int, resumed: Sequence[tuple[int, int]], world_size: int, rank: int, batch_size: int, drop_last: bool, mode: str, pad_to_equal_steps: bool) -> int:
    """
    Planned rows (padding included) of those batches: batch b holds min(batch_size, rank_rows - b * batch_size) of them, however many a skipped unit left out.
    """

def batches_per_rank(rows: int, batch_size: int, drop_last: bool) -> int:
    """
    Batches `rows` rows make at `batch_size` (the last one short unless `drop_last`).
    """

def transforms_from_spec(transforms: object | None) -> list[TransformOp]:
    """
    The engine's ops for a transform spec (a list of dicts, docs/transforms.md), its shape checked against each op's keys; None gives none.
    """

class KjtSpec:
    """What output="torchrec" makes of a batch (python/stoker/torchrec.py)."""

    def __init__(self, keys: Sequence[str], weights: Sequence[str], dense: Sequence[str], labels: Sequence[str], values_dtype: str) -> None: ...

    @property
    def keys(self) -> list[str]: ...

    @property
    def weights(self) -> list[str]: ...

    @property
    def dense(self) -> list[str]: ...

    @property
    def labels(self) -> list[str]: ...

def to_kjt_parts(batch: object, spec: KjtSpec) -> tuple:
    """
    A pyarrow.RecordBatch as the parts of a TorchRec batch: (values, lengths, weights, length_per_key, offset_per_key, dense, labels, stride).
    """
