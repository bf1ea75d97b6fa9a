"""`stoker state FILE`: where a saved checkpoint stands, read from a JSON, pickle or
torch.save file without running anything the file could name (docs/state.md)."""

from __future__ import annotations

import argparse
import io
import json
import pickle
from pathlib import Path
from typing import Any

from stoker._loading import state as _state

_STATE_KEYS = ("version", "epoch", "rounds", "dataset_fingerprint")


class _DataOnlyUnpickler(pickle.Unpickler):
    """Unpickles plain data (dicts, lists, strings, numbers) and refuses any class or function
    a pickle names: loading a checkpoint must never run code it carries."""

    def find_class(self, module: str, name: str) -> Any:
        raise ValueError(f"the pickle names {module}.{name}: only plain data (dict, list, str, "
                         f"int, float) is loaded from a pickle")


def load_file(path: str | Path) -> Any:
    """The object a checkpoint file holds: JSON, a torch.save file (torch.load with
    weights_only=True) or a pickle of plain data; anything else is refused."""
    data = Path(path).read_bytes()  # OSError (FileNotFoundError...) names the file
    if data[:4] == b"PK\x03\x04":  # torch.save's zip format
        try:
            import torch
        except ImportError as e:
            raise ValueError(f"{path} is a torch.save file: reading it needs PyTorch "
                             f"(pip install torch)") from e
        try:
            return torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
        except Exception as e:  # torch raises several kinds; all mean the file was refused
            raise ValueError(f"{path}: torch.load(weights_only=True) refused it: {e}") from e
    if data[:1] == b"\x80":  # a pickle (protocol 2 and later)
        try:
            return _DataOnlyUnpickler(io.BytesIO(data)).load()
        except (pickle.UnpicklingError, EOFError) as e:
            raise ValueError(f"{path}: not a readable pickle: {e}") from e
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from e
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ValueError(f"{path} is neither JSON, a pickle nor a torch.save file: cannot "
                         f"read a Loader.state_dict() from it") from None


def find_state(obj: Any) -> dict[str, Any] | None:
    """The Loader.state_dict() in `obj`: obj itself or the first (depth first) found in the
    dicts and lists nested in it at any depth: training scripts save it beside the model
    ({"model": ..., "data": loader.state_dict()}), Lightning four levels down in a list
    (loops.fit_loop.state_dict.combined_loader[0])."""
    pending = [obj]
    while pending:  # a stack, not recursion: a checkpoint's nesting is the file's to choose
        item = pending.pop()
        if isinstance(item, dict):
            if all(key in item for key in _STATE_KEYS):
                return item
            pending.extend(reversed(list(item.values())))
        elif isinstance(item, (list, tuple)):
            pending.extend(reversed(item))
    return None


def describe(state: dict[str, Any]) -> dict[str, Any]:
    """What `stoker state` reports, as one flat dict."""
    rows, batch_size, drop_last = state["rows"], state["batch_size"], state["drop_last"]
    world_size, rounds = state["world_size"], state["rounds"]
    mode = state.get("mode", "train")
    # What is left follows from the training split; evaluation shares differ per rank.
    left_per_rank = _state.rows_left(rows, rounds, world_size) if mode == "train" else None
    consumed_per_rank = sum(r for _, r in rounds)
    return {
        "epoch": state["epoch"],
        "mode": mode,
        "batches_consumed": sum(_state.batches_of(r, batch_size, drop_last)
                                for _, r in rounds),
        "rows_consumed_per_rank": consumed_per_rank,
        "rows_consumed_all_ranks": rows - _state.rows_left(rows, rounds, 1),
        "batches_left": (None if left_per_rank is None
                         else _state.batches_of(left_per_rank, batch_size, drop_last)),
        "rows_left_per_rank": left_per_rank,
        "rounds": rounds,
        "rank": state["rank"],
        "world_size": world_size,
        "batch_size": batch_size,
        "seed": state["seed"],
        "shuffle": state["shuffle"],
        "dataset_rows": rows,
        "dataset_files": state["files"],
        "dataset_fingerprint": state["dataset_fingerprint"],
        "options_digest": _state.options_digest(state),
        "delivered_digest": state.get("delivered_digest", ""),
    }


def show(path: str | Path, *, as_json: bool) -> str:
    state = find_state(load_file(path))
    if state is None:
        raise ValueError(f"{path} holds no Loader.state_dict() (looked for a dict with "
                         f"{', '.join(_STATE_KEYS)} at any depth)")
    info = describe(state)
    if as_json:
        return json.dumps(info, indent=2)
    rounds = ", ".join(f"{r} rows per rank at world size {n}" for n, r in info["rounds"])
    lines = [
        f"epoch            {info['epoch']}" + ("" if info["mode"] == "train"
                                                     else f" (mode {info['mode']})"),
        (f"consumed         {info['batches_consumed']} batches of {info['batch_size']}: "
         f"{info['rows_consumed_per_rank']} rows per rank, {info['rows_consumed_all_ranks']} "
         f"rows of {info['dataset_rows']} in all" + (f" ({rounds})" if rounds else "")),
        (f"left             {info['batches_left']} batches, {info['rows_left_per_rank']} rows "
         f"per rank at world size {info['world_size']}" if info["mode"] == "train"
         else "left             (evaluation shares differ per rank)"),
        f"saved by         rank {info['rank']} of world size {info['world_size']}",
        (f"options          seed {info['seed']}, shuffle {info['shuffle']}, digest "
         f"{info['options_digest']}"),
        (f"dataset          {info['dataset_files']} files, {info['dataset_rows']} rows, "
         f"fingerprint {info['dataset_fingerprint']}"),
        f"delivered digest {info['delivered_digest'] or '-'}",
    ]
    return "\n".join(lines)


# The command line: `stoker state`.
HELP = "show where a saved checkpoint stands"
DESCRIPTION = (
    "Print where a saved Loader.state_dict() stands: epoch, batches and rows consumed and "
    "left, world size and rank, the options digest. FILE is JSON, a pickle of plain data or a "
    "torch.save file (read with weights_only=True); the state may be nested in it, e.g. "
    "{'model': ..., 'data': loader.state_dict()} (docs/state.md).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    print(show(args.file, as_json=args.json))
    return 0
