"""The keyword options of ``Loader``, ``MixtureLoader`` and ``RemoteLoader``, and the loader
flags of ``stoker serve``, ``doctor`` and ``bench``: each defined once here (its documentation
and, when the command line offers it, its one-line help). The classes build their docstrings
from this list and the command line its flags; the defaults are the engine's own
(``LOADER_DEFAULTS``, read from the C++ option structs), and ranges are checked by the
engine's ``Validate()`` alone."""

from __future__ import annotations

import argparse
import enum
import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from stoker import _core
from stoker._options.convert import LOADER_DEFAULTS

__all__ = ["KEYWORDS", "LOADER_FLAGS", "add_flags", "define", "flag_values", "given"]


class _Default(enum.Enum):
    ENGINE = "the engine's"
    REQUIRED = "required"


# A keyword whose default is the engine's (``LOADER_DEFAULTS``, the C++ struct's), and one
# a caller must give.
ENGINE = _Default.ENGINE
REQUIRED = _Default.REQUIRED

# Who takes a keyword (``Keyword.takers``): the letters of the loaders.
TAKERS = {"L": "Loader", "M": "MixtureLoader", "R": "RemoteLoader"}


@dataclass(frozen=True)
class Keyword:
    """One option, defined once: the keywords it names (``rank, world_size`` are documented
    together), what it does, its ``--flag`` help where the command line takes it, and what
    each loader's signature shows of it: its type, its default and which loaders take it."""

    names: tuple[str, ...]
    doc: str
    # The --flag's help: one line, or one per name for a group (None: not a flag).
    cli: str | dict[str, str] | None = None
    # The annotation the signatures show: one for every name, or one per name.
    annotation: str | dict[str, str] = "Any"
    default: Any = ENGINE  # ENGINE, REQUIRED, or the value itself
    takers: str = "L"  # the loaders that take it (TAKERS' letters)
    positional: bool = False  # the first argument (source, mixture, servers)
    # RemoteLoader: the servers' setting; None (its default) takes theirs, a value is checked
    # against it.
    served: bool = False
    # A Mixture takes it per stoker.Source, not for the whole mixture.
    per_source: bool = False

    def flag_help(self, name: str) -> str | None:
        return self.cli.get(name) if isinstance(self.cli, dict) else self.cli

    def annotation_of(self, name: str, loader: str = "Loader") -> str:
        """The type ``loader``'s signature shows for ``name`` (a served one may be None)."""
        shown = self.annotation[name] if isinstance(self.annotation, dict) else self.annotation
        if loader == "RemoteLoader" and self.served and not shown.endswith("| None"):
            shown += " | None"
        return shown

    def default_source(self, name: str, loader: str) -> str:
        """``name``'s default as ``loader``'s written signature shows it (" = ...", or "" for
        a required keyword): None for a RemoteLoader's served options, the engine's as
        ``_DEFAULTS.<name>``, else the value itself."""
        if loader == "RemoteLoader" and self.served:
            return " = None"
        if self.default is REQUIRED:
            return ""
        if self.default is ENGINE:
            return f" = _DEFAULTS.{name}"
        if isinstance(self.default, str):
            return f' = "{self.default}"'
        return f" = {self.default!r}"


# In the order every loader's signature lists those it takes.
KEYWORDS: list[Keyword] = [
    Keyword(("source",), """\
a Parquet file, a directory (searched recursively for ``*.parquet``), a glob,
or a list of those. Files are read in sorted path order. Or a table pinned to a
version: ``stoker.delta_table(uri, version=...)`` or ``stoker.iceberg_table(catalog,
"db.table", snapshot_id=...)`` (docs/partitions-and-tables.md). A
``stoker.Mixture`` of several sources returns a ``MixtureLoader`` instead
(docs/mixtures.md).""",
            annotation="str | os.PathLike | Sequence[str | os.PathLike] | Table | Mixture",
            default=REQUIRED, takers="L", positional=True),
    Keyword(("mixture",), "the sources and their policy.",
            annotation="Mixture", default=REQUIRED, takers="M", positional=True),
    Keyword(("servers",), """\
Flight locations, e.g. ``["grpc://10.0.0.5:8815", "grpc+tls://..."]``, or a
``stoker.ray.Fleet`` or its name (docs/ray.md): its addresses are resolved at the
start of each epoch and after a failure (waiting for Ray to restart a server).""",
            annotation="str | Sequence[str] | Any", default=REQUIRED, takers="R",
            positional=True),
    Keyword(("columns",), """\
columns to read, in output order; None reads all.""",
            cli="comma-separated columns to read (default: all)",
            annotation="Sequence[str] | None", default=None, takers="LR", served=True, per_source=True),
    Keyword(("batch_size",), """\
rows per batch. Every batch has exactly this many rows except possibly
the last of an epoch (dropped when ``drop_last``).""",
            cli="rows per batch",
            annotation="int", default=REQUIRED, takers="LMR", served=True),
    Keyword(("shuffle",), """\
shuffle rows; False delivers file order, row-group order, row order.""",
            cli="read rows in dataset order",
            annotation="bool", takers="LMR", served=True),
    Keyword(("seed",), """\
key of the shuffle; the same seed gives the same batches.""",
            cli="shuffle seed: the same seed gives the same batches (default %(default)s)",
            annotation="int", takers="LMR", served=True),
    Keyword(("shuffle_window",), f"""\
rows mixed together (rounded up to whole row groups); memory holds
about this many decoded rows. None: {_core.DEFAULT_SHUFFLE_WINDOW}.""",
            cli="rows shuffled together; memory holds at least twice this many decoded rows "
                f"(default {_core.DEFAULT_SHUFFLE_WINDOW:,}; docs/shuffle.md)",
            annotation="int | None", takers="LMR", served=True),
    Keyword(("plan_version",), f"""\
which plan the epochs follow: 1 gives the batches of Stoker releases before
version 2 existed; {_core.LATEST_PLAN_VERSION} (the default) shuffles as well in fewer steps. The same
seed gives other batches under another version; a state resumes under its own.""",
            cli="plan version: 1 gives the batches of releases before version 2 "
                "(default %(default)s; docs/shuffle.md)",
            annotation="int", takers="LMR", served=True),
    Keyword(("rank", "world_size"), """\
this process's data-parallel rank. Ranks see disjoint rows and the
same number of batches; at most ``world_size - 1`` rows per epoch are left out
(with ``mode="train"``).""",
            annotation="int", takers="LMR"),
    Keyword(("drop_last",), """\
drop a short last batch (not with ``mode="eval"``).""",
            cli="leave out each rank's last, short batch",
            annotation="bool", takers="LMR", served=True),
    Keyword(("mode",), """\
"train" (equal slices per rank, equal steps) or "eval": every row exactly once,
each rank a contiguous share of the epoch (shares differ by at most one row, so
batch counts by at most one). Set ``shuffle=False`` for evaluation in file order
(docs/evaluation.md).""",
            cli="train (equal steps per rank) or eval (every row exactly once; "
                "docs/evaluation.md)",
            annotation="str", takers="LM"),
    Keyword(("pad_to_equal_steps",), """\
with ``mode="eval"``, every rank delivers the same number of
batches, all of ``batch_size`` rows; rows past a rank's share repeat its last
row and a bool column ``_valid`` marks the real ones.""",
            cli="with --mode eval: every rank the same number of full batches, a bool column "
                "_valid marking the real rows",
            annotation="bool", takers="LM"),
    Keyword(("with_row_origin",), """\
add ``_file_index`` (int32, an index into ``loader.files``) and
``_row_in_file`` (int64) to every batch, to join output back to its input. Not
with a ``filter``.""",
            cli="add _file_index and _row_in_file to every batch",
            annotation="bool", takers="L"),
    Keyword(("num_threads",), """\
worker threads; None or "auto": a pool of this rank's share of the CPUs the
process may use (affinity mask and cgroup quota, divided by the ranks on this
node as ``LOCAL_WORLD_SIZE``, Horovod, MPI, Slurm or Lightning's ``WORLD_SIZE``
say; ``stats()["cpu_budget"]``), of which the controller keeps as many at work
as the training step needs (``autotune``).""",
            cli="decode threads (default: as many of this rank's share of the CPUs as the "
                "controller finds needed)",
            annotation="int | str | None", takers="LM"),
    Keyword(("engine_cpus",), """\
CPUs (ids, e.g. ``[1, 2, 3]`` or ``range(1, 8)``) the engine's own threads run
on: its workers and I/O threads are pinned to them, never the calling thread, so
a training loop kept on the other CPUs is not preempted by them (pin it there
yourself, e.g. ``os.sched_setaffinity(0, {0})`` after making the loader). Each
must be in the affinity mask of the thread that makes the loader; an unset
``num_threads`` counts these alone. None: the engine's threads run on any CPU
the process may use (docs/benchmarks.md, "The trainer's own cores").""",
            annotation="Sequence[int] | None", default=None, takers="LM"),
    Keyword(("prefetch",), """\
finished batches kept ready ahead of the consumer; None: at most 2 per
thread, as many as the controller finds needed (``autotune``).""",
            cli="batches assembled ahead of the consumer (default: at most 2 per thread, as "
                "the controller finds needed)",
            annotation="int | None", takers="LM"),
    Keyword(("autotune",), """\
the controller that sizes what ``num_threads`` and ``prefetch`` leave unset
from the consumer's waits (docs/autotune.md): None or True (on), False (fixed:
the CPU share and 2 batches per thread), or a dict of ``target_stall`` (the
wait's share of the wall time it keeps below; 0.01), ``window_batches`` (32)
and ``window_seconds`` (0.25; a decision needs both), ``random_moves`` (a seed:
a random setting after every batch, for tests). The batches never depend on it;
``stats()["autotune"]`` shows the setting and each decision.""",
            cli="fix the threads and prefetch left unset at the CPU share and 2 per thread "
                "instead of sizing them from the consumer's waits (docs/autotune.md)",
            annotation="bool | dict[str, Any] | None", default=None, takers="L"),
    Keyword(("output",), """\
"numpy" (dict of np.ndarray), "torch" (dict of torch.Tensor), "jax" (dict
of jax.Array), "tensorflow" (dict of tf.Tensor) — each over the engine's buffers,
no copy but for bool columns — "arrow" (pyarrow.RecordBatch), or "torchrec"
(torchrec.datasets.utils.Batch with a KeyedJaggedTensor: see ``torchrec``).""",
            annotation="str", default="numpy", takers="LMR"),
    Keyword(("codecs",), """\
binary columns holding encoded values (Petastorm's codecs) decoded to tensors
per row group in the C++ workers, before the transforms and the cache: a list of
dicts ``{"column": "image", "codec": "png", "dtype": "uint8", "shape": [32, 32,
3]}``; codec "ndarray", "compressed_ndarray", "png" or "jpeg"; -1 for a dimension
of unknown size (the column is then a list: ``output="arrow"`` or a pad
transform). ``stoker.petastorm`` builds them from a dataset's stored Unischema
(docs/petastorm.md). None: none.""",
            cli="a JSON file listing the encoded columns to decode ([{\"column\": ..., \"codec\":"
                " ..., \"dtype\": ..., \"shape\": [...]}]; docs/petastorm.md)",
            annotation="Sequence[dict[str, Any]] | None", default=None, takers="L"),
    Keyword(("transforms",), """\
feature transforms run per row group in the C++ workers: a list of
dicts such as ``{"op": "log1p", "column": "I1"}`` (docs/transforms.md).""",
            annotation="Sequence[dict[str, Any]] | None", default=None, takers="L", per_source=True),
    Keyword(("filter",), """\
a ``pyarrow.compute`` expression; only rows for which it is true are
delivered. Row groups whose statistics rule it out are skipped unread.""",
            annotation="pc.Expression | None", default=None, takers="L",
            per_source=True),
    Keyword(("batch_transform",), """\
a Python callable applied to each finished batch in a background
thread: the slow path, for what the transforms cannot express.""",
            annotation="Callable[[Any], Any] | None", default=None, takers="LMR"),
    Keyword(("storage_options",), f"""\
how to reach ``s3://`` sources: region, endpoint_override, scheme,
anonymous, access_key/secret_key/session_token (default: the AWS credential
chain), max_attempts, connect_timeout, request_timeout, io_threads,
metadata_threads (footer reads in flight while the manifest is built without an
index; default {_core.DEFAULT_METADATA_THREADS}) (docs/storage.md).""",
            annotation="dict[str, Any] | None", default=None, takers="LM"),
    Keyword(("partitioning",), """\
"hive": ``key=value`` directory names below a directory source
become columns after the file columns (URL-decoded,
``__HIVE_DEFAULT_PARTITION__`` null), typed as ``pyarrow.dataset``'s hive
discovery types them (int32 when every value is one, else string); a
``pyarrow.Schema`` gives some or all keys their types (and turns discovery on);
None (the default, as in ``pyarrow.dataset``): no partition columns.
A ``filter`` on partition columns rules whole files out before their footers are
read (``stats()["files_pruned"]``; docs/partitions-and-tables.md).""",
            cli="hive: key=value directory names become columns (docs/partitions-and-tables.md)",
            annotation="str | pa.Schema | None", default=None, takers="L"),
    Keyword(("index",), """\
what a directory's summary file ``_metadata`` (``stoker index``, pyarrow,
Dask) does: "use" (None: the default) builds the manifest from it (one read instead of one per
footer) and raises ValueError naming the file when it no longer matches the
directory (a file added, removed or rewritten); "fallback" reads every footer
instead when it is stale; "ignore" never reads it; "trust" takes the directory's
files from an index ``stoker index`` wrote without listing the directory, and
checks each file's size and modification time at its first read (a file
rewritten or removed since is an error naming it; one ADDED since is not seen);
with an index ``stoker index --checksums`` wrote, it checks the bytes of each
column chunk it reads against their checksum instead (no request per file).
The batches are the same either way (docs/large-datasets.md).""",
            cli="what the summary file _metadata does: use (default), fallback, ignore or trust "
                "(docs/large-datasets.md)",
            annotation="str | None", default=None, takers="LM"),
    Keyword(("cache_dir",), """\
a local directory caching finished row groups (after projection, filter
and transforms) so later epochs skip reads and decoding; the output is the same
with or without it (docs/cache.md). None: no cache.""",
            cli="keep decoded, transformed row groups on this local disk (docs/cache.md)",
            annotation="str | os.PathLike | None", default=None, takers="LM"),
    Keyword(("cache_limit_bytes",), """\
what the cache may hold on disk (0: no limit).""",
            cli="evict the cache's oldest entries above this size (0: no limit)",
            annotation="int", takers="LM"),
    Keyword(("cache_policy",), """\
"lru" evicts the least recently used entries to stay under the limit;
"fill" stores until the limit and then keeps what it has.""",
            cli="lru (default) evicts the least recently used entries; fill keeps what it stored "
                "first",
            annotation="str", takers="LM"),
    Keyword(("on_error",), """\
"raise" (a row group that cannot be fetched, decoded or checked ends the
epoch with its error) or "skip": such a row group is skipped, its rows absent
from the batches that held them (shorter batches; the plan, other rows'
positions and resume are unchanged), listed in ``stats()["skipped_units"]`` and
in ``quarantine_report()`` (docs/bad-data.md).""",
            cli="raise (default) or skip: a row group that cannot be read is skipped and listed "
                "(docs/bad-data.md)",
            annotation="str", takers="L"),
    Keyword(("max_bad_units", "max_bad_fraction"), """\
with ``on_error="skip"``, the most row groups (a
count, or a fraction of the dataset's) this loader may skip; one more is an
error naming them. None: no limit.""",
            cli={"max_bad_units": "with --on-error skip: the most row groups skipped "
                                  "(default: no limit)",
                 "max_bad_fraction": "with --on-error skip: the largest fraction of row "
                                     "groups skipped (default: no limit)"},
            annotation={"max_bad_units": "int | None", "max_bad_fraction": "float | None"}, takers="L"),
    Keyword(("trace",), """\
a path: keep a timeline of the work (each unit's fetch, decode, transform
and staging, each batch's assembly and the consumer's wait, per thread) and
write it there as Chrome trace JSON at the end of every epoch (open it in
ui.perfetto.dev; docs/observability.md). None: no timeline.""",
            annotation="str | os.PathLike | None", default=None, takers="LR"),
    Keyword(("trace_events",), f"""\
the spans kept, the last ones (about 40 bytes each); 0 with a
``trace`` path means ``_core.DEFAULT_TRACE_EVENTS`` ({_core.DEFAULT_TRACE_EVENTS:,}).""",
            annotation="int", takers="LR"),
    Keyword(("device",), """\
where batches go. With ``output="torch"``: "cuda" or "cuda:N" — batches
are assembled in pinned host memory and copied to the GPU on a side stream,
``device_prefetch`` batches ahead of the consumer, whose stream waits on each
copy's event (docs/frameworks.md); None: host memory. With ``output="jax"``: a
platform ("cpu", "gpu", "tpu") or "<platform>:N"; None: JAX's default device.
Batches for an accelerator are put there with ``jax.device_put``,
``device_prefetch`` batches ahead; for the CPU they stay zero-copy.""",
            annotation="str | None", default=None, takers="LM"),
    Keyword(("device_prefetch",), """\
batches in flight to the device (device memory holds this many
plus the one being used).""",
            annotation="int", default=2, takers="LM"),
    Keyword(("torchrec",), """\
with ``output="torchrec"``: a dict (or ``stoker.torchrec.Features``) of
``sparse`` (the KeyedJaggedTensor's keys, in order: list-of-integer or integer
columns), ``dense`` (columns stacked into ``dense_features`` [B, n] float32),
``labels`` (one column: [B]; several: [B, k]), ``weights`` (key -> its paired
list column) and ``values_dtype`` ("int32"/"int64"; None: the keys' own).
The engine gathers the keys' ids key-major into one buffer; lengths and
length_per_key/offset_per_key come with each batch (docs/torchrec.md).""",
            annotation="Features | dict[str, Any] | None", default=None, takers="LR"),
    Keyword(("token",), "bearer token, when the servers need one.",
            annotation="str | None", default=None, takers="R"),
    Keyword(("tls_root_certs",), """\
PEM of the CA that signed the servers' certificates (grpc+tls://).""",
            annotation="bytes | str | None", default=None, takers="R"),
    Keyword(("reconnect_timeout",), """\
seconds to keep reconnecting to a failed server (or waiting for a
fleet's restarted one) before giving up.""",
            annotation="float", default=60.0, takers="R"),
    Keyword(("local",), """\
read local first (docs/autotune.md): the trainer's own engine serves a run of
chunks of each period, the servers the rest, and a controller moves the split by
where the consumer waits. True: a fleet's source and options; a dict: Loader
options over them (e.g. ``{"num_threads": 4}``), and ``"source"`` with servers
given by address. An autoscaled fleet (``Fleet.start(autoscale=...)``) sizes itself
from these loaders' reports. False: every batch from the servers.""",
            annotation="bool | dict[str, Any]", default=False, takers="R"),
    Keyword(("split",), """\
the local-first controller's options: ``target_stall`` (0.01),
``window_batches`` (64), ``window_seconds`` (1.0), ``max_local`` (8 local chunks a
period), ``chunk_windows`` (4 shuffle windows a chunk), ``random_moves`` (a seed:
move at random every window; tests).""",
            annotation="dict[str, Any] | None", default=None, takers="R"),
]

_BY_NAME = {name: keyword for keyword in KEYWORDS for name in keyword.names}


def _letter(loader: str) -> str:
    """``loader``'s letter in Keyword.takers (TAKERS)."""
    return next(k for k, v in TAKERS.items() if v == loader)


def names_of(loader: str) -> list[str]:
    """The keyword options ``loader`` ("Loader", "MixtureLoader", "RemoteLoader") takes, in
    KEYWORDS' order, its positional first argument left out."""
    letter = _letter(loader)
    return [name for keyword in KEYWORDS if letter in keyword.takers and not keyword.positional
            for name in keyword.names]


# The markers between which each loader's module holds its generated parameters.
BEGIN = "# <keywords: scripts/write_signatures.py writes these from KEYWORDS>"
END = "# </keywords>"


def parameters_source(loader: str, indent: str = " " * 8) -> str:
    """``loader``'s ``__init__`` parameters as Python source, from KEYWORDS: ``self``, its
    first argument, then its keyword options in KEYWORDS' order with their types and defaults
    (the engine's as ``_DEFAULTS.<name>``). scripts/write_signatures.py writes it into the
    loader's module between BEGIN and END, and tests/python/test_keywords.py fails when what is
    there differs: the signature is a real ``def`` that editors and type checkers read, and
    still defined once."""
    first = next(k for k in KEYWORDS if k.positional and _letter(loader) in k.takers)
    lines = ["self,", f"{first.names[0]}: {first.annotation_of(first.names[0])},", "*,"]
    for name in names_of(loader):
        keyword = _BY_NAME[name]
        lines.append(f"{name}: {keyword.annotation_of(name, loader)}"
                     f"{keyword.default_source(name, loader)},")
    return "\n".join(indent + line for line in lines)


# Where each loader's signature is written, below python/stoker.
MODULES = {"Loader": "_loading/loader.py", "MixtureLoader": "_loading/mixture_loader.py",
           "RemoteLoader": "_remote/remote_loader.py"}


def written(text: str, loader: str) -> str:
    """``text`` (a module's source) with ``loader``'s parameters between BEGIN and END as
    KEYWORDS writes them."""
    begin, end = text.index(BEGIN), text.index(END)
    start = text.index("\n", begin) + 1
    stop = text.rindex("\n", 0, end) + 1
    return text[:start] + parameters_source(loader) + "\n" + text[stop:]


def given(arguments: dict[str, Any]) -> dict[str, Any]:
    """A loader's keyword options from its ``__init__``'s ``locals()`` (called first thing):
    all but ``self`` and the first argument."""
    return {name: value for name, value in arguments.items()
            if name in _BY_NAME and not _BY_NAME[name].positional}


def define(cls: type, summary: str, own: dict[str, str] | None = None) -> None:
    """Sets ``cls.__doc__`` (``document``), and what ``inspect.signature(cls)`` shows: its
    ``__init__``'s, KEYWORDS' (``parameters_source``), not a ``__new__``'s that dispatches (the
    Loader's hands a Mixture to MixtureLoader)."""
    init = inspect.signature(cls.__init__)  # type: ignore[misc]
    # (typeshed declares no __signature__ on classes, which inspect reads all the same.)
    cls.__signature__ = init.replace(  # type: ignore[attr-defined]
        parameters=list(init.parameters.values())[1:])
    document(cls, summary, own)


def document(cls: type, summary: str, own: dict[str, str] | None = None) -> None:
    """Sets ``cls.__doc__``: ``summary``, then an Args section listing every parameter of
    ``cls.__init__`` in order, each with the doc ``own`` gives it (a key may name several
    parameters, "a, b") or else the Loader's from KEYWORDS. A parameter documented nowhere is
    an error at import: no option goes undocumented."""
    own_by_name = {name.strip(): (key, doc) for key, doc in (own or {}).items()
                   for name in key.split(",")}
    lines = [inspect.cleandoc(summary), "", "Args:"]
    done: set[str] = set()
    parameters = inspect.signature(cls.__init__).parameters.values()  # type: ignore[misc]
    for parameter in list(parameters)[1:]:
        name = parameter.name
        if name in done or parameter.kind is parameter.VAR_KEYWORD:
            continue
        if name in own_by_name:
            key, doc = own_by_name[name]
            names = [n.strip() for n in key.split(",")]
        elif name in _BY_NAME:
            names, doc = list(_BY_NAME[name].names), _BY_NAME[name].doc
        else:
            raise TypeError(f"{cls.__name__}: keyword {name!r} is documented nowhere")
        done.update(names)
        text = f"{', '.join(names)}: {inspect.cleandoc(doc)}"
        lines.append(_entry(text))
    cls.__doc__ = "\n".join(lines) + "\n"


def _entry(text: str) -> str:
    first, *rest = text.splitlines()
    return "\n".join(["    " + first, *("        " + line for line in rest)])


# How a flag's text becomes the option's value, where not an int (booleans are switches).
_PARSE: dict[str, Callable[[str], Any]] = {
    "mode": str, "cache_policy": str, "on_error": str, "index": str, "partitioning": str,
    "cache_dir": str, "max_bad_fraction": float,
}
# Options whose engine default is no value a flag can spell: the flag's default is None (the
# Loader's own default).
_NO_DEFAULT = ("columns", "cache_dir", "codecs", "partitioning", "index")

# Every Loader option a command line can spell (those with a flag's help), in the Loader's
# order (filters, callables, storage options and tables need Python; transforms and codecs
# come from JSON files).
LOADER_FLAGS = tuple(name for keyword in KEYWORDS if keyword.cli is not None
                     and "L" in keyword.takers for name in keyword.names)


def add_flags(parser: argparse.ArgumentParser, names: Sequence[str], *,
              required: Sequence[str] = (), defaults: dict[str, Any] | None = None) -> None:
    """Adds ``--<name>`` for each of ``names`` (``--no-shuffle`` for shuffle) with its help
    from KEYWORDS and its default from the engine (or ``defaults``); values are parsed to the
    option's type and range-checked by the engine when the Loader is made."""
    defaults = defaults or {}
    for name in names:
        help_text = _BY_NAME[name].flag_help(name)
        flag = "--" + name.replace("_", "-")
        default = defaults.get(
            name, None if name in _NO_DEFAULT else getattr(LOADER_DEFAULTS, name))
        if name == "shuffle":
            parser.add_argument("--no-shuffle", dest="shuffle", action="store_false",
                                help=help_text)
        elif name == "autotune":  # on unless --no-autotune (None: the engine's default)
            parser.add_argument("--no-autotune", dest="autotune", action="store_const",
                                const=False, default=None, help=help_text)
        elif isinstance(default, bool):
            parser.add_argument(flag, action="store_true", default=default, help=help_text)
        elif name == "columns":
            parser.add_argument(flag, type=_column_list, default=None, help=help_text)
        elif name == "codecs":
            parser.add_argument(flag, type=_json_file, metavar="JSON_FILE", default=None,
                                help=help_text)
        else:
            parser.add_argument(flag, type=_PARSE.get(name, int), required=name in required,
                                default=None if name in required else default, help=help_text)


def flag_values(args: argparse.Namespace, names: Sequence[str]) -> dict[str, Any]:
    """The Loader keyword arguments of the flags ``add_flags`` added."""
    return {name: getattr(args, name) for name in names}


def _json_file(path: str) -> Any:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        raise argparse.ArgumentTypeError(f"cannot read {path} as JSON: {error}") from None


def _column_list(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"empty column name in {text!r}")
    return names
