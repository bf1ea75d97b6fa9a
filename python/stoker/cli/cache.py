"""`stoker cache info DIR` and `stoker cache clear DIR`'s flags; what they read and delete is
stoker._loading.cache_dir's (docs/cache.md)."""

from __future__ import annotations

import argparse

from stoker._loading import cache_dir as _cache_dir

__all__ = ["DESCRIPTION", "HELP", "add_arguments", "run"]

HELP = "inspect or clear a disk cache"
DESCRIPTION = "Inspect or clear a Stoker disk cache directory (docs/cache.md)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    info = actions.add_parser("info", help="entries and bytes a cache holds")
    info.add_argument("dir", metavar="DIR")
    info.add_argument("--json", action="store_true", help="print JSON")
    clear = actions.add_parser("clear", help="delete every entry of a cache")
    clear.add_argument("dir", metavar="DIR")


def run(args: argparse.Namespace) -> int:
    if args.action == "info":
        print(_cache_dir.info(args.dir, as_json=args.json))
    else:
        print(_cache_dir.clear(args.dir))
    return 0
