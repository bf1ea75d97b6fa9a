"""What several subcommands' flags share: number parsers with a minimum, the Loader options of
the commands that run one (`serve`, `doctor`), and an options dataclass read from the flags."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, TypeVar

from stoker._options import keywords as _keywords

__all__ = [
    "LOADER_FLAGS",
    "add_loader_options",
    "float_at_least",
    "int_at_least",
    "loader_options",
    "non_negative_int",
    "options",
    "positive_int",
]

# The Loader options `serve` and `doctor` take as flags: every one a command line can spell
# (their help, defaults and checks are the Loader's: _keywords); --transforms names a file the
# command reads.
LOADER_FLAGS = _keywords.LOADER_FLAGS


def add_loader_options(parser: argparse.ArgumentParser) -> None:
    """The Loader options of the commands that run one (serve, doctor); `loader_options`
    reads them back, but for --transforms (a file the command reads)."""
    _keywords.add_flags(parser, LOADER_FLAGS, required=("batch_size",))
    parser.add_argument("--transforms", metavar="JSON_FILE", help="transform spec (a JSON list)")


def loader_options(args: argparse.Namespace) -> dict[str, object]:
    return _keywords.flag_values(args, LOADER_FLAGS)


class _ValidatedOptions(Protocol):
    """An options dataclass with a `validate()` that raises ValueError naming the option."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    def validate(self) -> None: ...


Options = TypeVar("Options", bound=_ValidatedOptions)


def options(kind: type[Options], args: argparse.Namespace) -> Options:
    """The options dataclass `kind` from the arguments of the same names, validated: an invalid
    combination is a usage error (exit code 2)."""
    result = kind(**{field.name: getattr(args, field.name) for field in dataclasses.fields(kind)})
    try:
        result.validate()
    except ValueError as exc:
        args.usage_error(str(exc))
    return result


def int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def float_at_least(minimum: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not value >= minimum:  # NaN too
            raise argparse.ArgumentTypeError(f"must be >= {minimum:g}, got {text}")
        return value

    return parse


positive_int = int_at_least(1)
non_negative_int = int_at_least(0)
