"""One definition of the keyword options (stoker._options.keywords): Loader, MixtureLoader and
RemoteLoader document every keyword from it, the Loader's and MixtureLoader's defaults are the
engine's, and the command line's loader flags take their help and defaults from it."""

from __future__ import annotations

import argparse
import inspect
from pathlib import Path

import pytest
import stoker
from stoker import _core, cli
from stoker._options import keywords as _keywords
from stoker._options.convert import LOADER_DEFAULTS
from stoker._options.keywords import KEYWORDS

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "stoker"

CLASSES = [stoker.Loader, stoker.MixtureLoader, stoker.RemoteLoader]


def _keywords_of(cls: type) -> list[str]:
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return [p.name for p in parameters if p.kind is not p.VAR_KEYWORD]


def _documented(cls: type) -> list[str]:
    doc = inspect.getdoc(cls)
    assert doc is not None
    args = doc[doc.index("Args:\n"):].splitlines()[1:]
    names = []
    for line in args:
        if line.startswith("    ") and not line.startswith("        "):
            names += [n.strip() for n in line.strip().split(":")[0].split(",")]
    return names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_keyword_is_documented_once_in_signature_order(cls: type) -> None:
    documented = _documented(cls)
    assert sorted(documented) == sorted(_keywords_of(cls))
    assert len(set(documented)) == len(documented)


def test_each_definition_names_loader_keywords_and_the_loaders_use_each() -> None:
    defined = [name for keyword in KEYWORDS for name in keyword.names]
    assert len(set(defined)) == len(defined)
    taken = {"source", "mixture", "servers"}  # the first arguments
    for cls in CLASSES:
        taken |= set(_keywords_of(cls))
    assert set(defined) == taken


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_each_signature_is_keywords_in_its_order(cls: type) -> None:
    """The three signatures come from KEYWORDS, in its order: the same keyword sits at the same
    place relative to the others in each."""
    assert _keywords_of(cls)[1:] == _keywords.names_of(cls.__name__)  # after the first
    order = [name for keyword in KEYWORDS for name in keyword.names]
    assert _keywords_of(cls) == sorted(_keywords_of(cls), key=order.index)
    assert inspect.signature(cls) == inspect.signature(cls.__init__).replace(
        parameters=list(inspect.signature(cls.__init__).parameters.values())[1:])


def test_a_remote_loaders_defaults_are_the_engines_or_the_servers() -> None:
    signature = inspect.signature(stoker.RemoteLoader)
    for name in _keywords.names_of("RemoteLoader"):
        keyword = next(k for k in KEYWORDS if name in k.names)
        default = signature.parameters[name].default
        if keyword.served:  # None: whatever the servers were started with
            assert default is None, name
        elif name in LOADER_DEFAULTS.fields and keyword.default is _keywords.ENGINE:
            assert default == getattr(LOADER_DEFAULTS, name), name
    assert signature.parameters["rank"].default == LOADER_DEFAULTS.rank
    assert signature.parameters["world_size"].default == LOADER_DEFAULTS.world_size


def test_an_option_defined_once_reaches_every_loader_that_takes_it(monkeypatch) -> None:
    """One Keyword added to KEYWORDS is in each taker's written signature, with its type and
    default, and in no other's."""
    novel = _keywords.Keyword(("novel",), "a new option.", annotation="int", default=7,
                              takers="LR")
    monkeypatch.setattr(_keywords, "KEYWORDS", [*KEYWORDS, novel])
    monkeypatch.setitem(_keywords._BY_NAME, "novel", novel)
    for loader in ("Loader", "RemoteLoader"):
        assert _keywords.parameters_source(loader).splitlines()[-1].strip() == "novel: int = 7,"
    assert "novel" not in _keywords.parameters_source("MixtureLoader")

    class Probe:
        def __init__(self, source: object, *, novel: int = 7) -> None:
            pass

    _keywords.define(Probe, "Summary.")
    assert "novel: a new option." in (inspect.getdoc(Probe) or "")


@pytest.mark.parametrize("loader", sorted(_keywords.MODULES))
def test_the_written_signatures_are_keywords(loader: str) -> None:
    """What each loader's module in this checkout holds between the markers is what KEYWORDS
    writes: an option added there reaches every loader that takes it once `make signatures`
    has run."""
    text = (PACKAGE / _keywords.MODULES[loader]).read_text()
    assert _keywords.written(text, loader) == text, "run `make signatures`"


def test_binding_is_pythons_own_refusal() -> None:
    with pytest.raises(TypeError, match=r"missing 1 required keyword-only argument: "
                                        r"'batch_size'"):
        stoker.Loader("nowhere.parquet")
    with pytest.raises(TypeError, match=r"got an unexpected keyword argument 'batch_sise'"):
        stoker.Loader("nowhere.parquet", batch_sise=4)


def test_a_mixture_shares_the_loaders_text_for_what_it_does_not_redefine() -> None:
    mixture, loader = inspect.getdoc(stoker.MixtureLoader), inspect.getdoc(stoker.Loader)
    assert mixture is not None and loader is not None
    drop_last = next(k for k in KEYWORDS if k.names == ("drop_last",))
    assert f"drop_last: {drop_last.doc}" in mixture and f"drop_last: {drop_last.doc}" in loader
    assert "keys the interleaving" in mixture and "keys the interleaving" not in loader
    assert f"None: {_core.DEFAULT_SHUFFLE_WINDOW}." in loader


@pytest.mark.parametrize("cls", [stoker.Loader, stoker.MixtureLoader], ids=lambda c: c.__name__)
def test_defaults_are_the_engines(cls: type) -> None:
    signature = inspect.signature(cls.__init__)
    for name in LOADER_DEFAULTS.fields:
        parameter = signature.parameters.get(name)
        # None: the engine's default, or a value converted first (partitioning, index).
        if parameter is not None and parameter.default not in (None, parameter.empty):
            assert signature.parameters[name].default == getattr(LOADER_DEFAULTS, name), name


def test_an_undocumented_keyword_is_an_error_at_import() -> None:
    class Extra:
        def __init__(self, *, batch_size: int, novel: int = 0) -> None:
            pass

    with pytest.raises(TypeError, match="Extra: keyword 'novel' is documented nowhere"):
        _keywords.document(Extra, "Summary.")
    _keywords.document(Extra, "Summary.", {"novel": "a new option."})
    assert "novel: a new option." in (inspect.getdoc(Extra) or "")


def _flags(command: str) -> dict[str, argparse.Action]:
    parser = cli._build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: a for a in commands.choices[command]._actions}


@pytest.mark.parametrize("command", ["serve", "doctor", "bench"])
def test_the_command_lines_loader_flags_come_from_the_definition(command: str) -> None:
    flags = _flags(command)
    by_name = {name: keyword for keyword in KEYWORDS for name in keyword.names}
    shared = ("columns", "batch_size", "shuffle", "seed", "shuffle_window", "num_threads",
              "prefetch")
    for name in shared + (() if command == "bench" else cli._LOADER_FLAGS):
        help_text = by_name[name].flag_help(name)
        assert help_text is not None and flags[name].help == help_text, name
    assert flags["seed"].default == LOADER_DEFAULTS.seed
    assert flags["batch_size"].required is (command != "bench")


def test_serve_and_doctor_take_every_loader_option_a_command_line_can_spell() -> None:
    # The Loader's keywords but those that need Python (a filter expression, a callable,
    # storage options, a table object), the output kinds (and TorchRec's features), the
    # timeline and the device; and transforms, which both commands read from a file of their
    # own.
    # engine_cpus too: a server's streams start in src/serve, which does not pin them yet.
    python_only = {"source", "filter", "batch_transform", "storage_options", "output",
                   "transforms", "rank", "world_size", "trace", "trace_events", "device",
                   "device_prefetch", "torchrec", "engine_cpus"}
    spelled = set(_keywords_of(stoker.Loader)) - python_only
    assert set(_keywords.LOADER_FLAGS) == spelled
    for command in ("serve", "doctor"):
        assert spelled <= set(_flags(command)), command
    assert _flags("serve")["max_bad_fraction"].type is float
    assert _flags("serve")["mode"].default == LOADER_DEFAULTS.mode


def test_ranges_on_the_command_line_are_the_engines(criteo: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # No second range check: a value the engine refuses comes back with the engine's words.
    code = stoker.cli.main(["doctor", str(criteo), "--batch-size", "0", "--seconds", "0.1",
                            "--no-probe"])
    assert code == 1
    assert "batch_size must be >= 1" in capsys.readouterr().err


def test_a_mixture_checks_rank_with_the_engines_rule(criteo: Path) -> None:
    mixture = stoker.Mixture([stoker.Source(str(criteo), weight=1.0)])
    with pytest.raises(ValueError, match=r"rank must satisfy 0 <= rank < world_size \(2\)"):
        stoker.Loader(mixture, batch_size=8, rank=2, world_size=2)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        stoker.Loader(mixture, batch_size=0)
