"""PNG charts of the harness's results (matplotlib, which only the benchmark environment has):
throughput per loader and dataset, stall share against the simulated accelerator speed R, and
Stoker's throughput and memory as the dataset grows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # Files only: no display on a build machine.
import matplotlib.pyplot as plt
from goals import LOADER_ORDER, STALL_GOAL_PEER, STALL_GOAL_STOKER

__all__ = ["write_charts"]

SHORT_LABELS = {
    "stoker": "Stoker",
    "stoker-warm": "Stoker warm",
    "stoker-unshuffled": "Stoker\nno shuffle",
    "pyarrow": "PyArrow floor\n(no shuffle)",
    "torch-dataloader": "PyTorch\nDataLoader",
    "petastorm": "Petastorm",
    "ray-data": "Ray Data",
    "streaming": "Mosaic\nStreaming",
    "grain": "Grain",
}
COLORS = {
    "stoker": "#1f77b4",
    "stoker-warm": "#6baed6",
    "stoker-unshuffled": "#9ecae1",
    "pyarrow": "#7f7f7f",
    "torch-dataloader": "#ff7f0e",
    "petastorm": "#2ca02c",
    "ray-data": "#d62728",
    "streaming": "#9467bd",
    "grain": "#8c564b",
}
DPI = 130


def write_charts(results: dict[str, Any], out: Path) -> list[Path]:
    """Writes the charts there is data for into `out`; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, draw in (
        ("bench-throughput.png", _throughput),
        ("bench-stall.png", _stall),
        ("bench-growth.png", _growth),
    ):
        figure = draw(results)
        if figure is not None:
            path = out / name
            figure.savefig(path, dpi=DPI, bbox_inches="tight")
            plt.close(figure)
            written.append(path)
    return written


def _throughput(results: dict[str, Any]) -> Any:
    datasets = list(results["meta"]["datasets"])
    entries = [e for e in results["summary"] if e["phase"] == "throughput" and e.get("best")]
    if not entries:
        return None
    figure, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets), 3.8), squeeze=False)
    for ax, dataset in zip(axes[0], datasets, strict=True):
        mine = {e["loader"]: e for e in entries if e["dataset"] == dataset}
        loaders = [name for name in LOADER_ORDER if name in mine]
        values = [mine[n]["rows_per_s"] / 1e6 if mine[n]["status"] == "ok" else 0 for n in loaders]
        bars = ax.barh(range(len(loaders)), values, color=[COLORS[n] for n in loaders])
        for bar, name, value in zip(bars, loaders, values, strict=True):
            text = f" {value:.2f}M" if mine[name]["status"] == "ok" else " not measured"
            ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, text, va="center",
                    fontsize=8)
        ax.set_yticks(range(len(loaders)), [SHORT_LABELS[n] for n in loaders], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, max(values + [1e-9]) * 1.3)
        ax.set_xlabel("million rows/s (torch tensors)")
        ax.set_title(dataset)
        ax.grid(axis="x", alpha=0.3)
    figure.suptitle(f"Throughput, median of {results['meta']['repeats']} runs "
                    f"(batch {results['meta']['batch_size']:,})")
    figure.tight_layout()
    return figure


def _stall(results: dict[str, Any]) -> Any:
    entries = [e for e in results["summary"] if e["phase"] == "stall" and e["status"] == "ok"]
    if not entries:
        return None
    figure, ax = plt.subplots(figsize=(6.4, 4.2))
    for loader in LOADER_ORDER:
        points = sorted((e["step_rows_per_s"], e["stall_share"]) for e in entries
                        if e["loader"] == loader)
        if points:
            rates, shares = zip(*points, strict=True)
            ax.plot(rates, [100 * s for s in shares], marker="o", color=COLORS[loader],
                    label=SHORT_LABELS[loader].replace("\n", " "))
    ax.axhline(100 * STALL_GOAL_STOKER, color="black", linestyle=":", linewidth=1)
    ax.axhline(100 * STALL_GOAL_PEER, color="black", linestyle="--", linewidth=1)
    ax.set_xscale("log")
    rates = sorted({e["step_rows_per_s"] for e in entries})
    ax.set_xticks(rates, [f"{rate / 1e6:g}M" for rate in rates])
    ax.minorticks_off()
    ax.set_xlabel("simulated accelerator speed R (rows/s)")
    ax.set_ylabel("stall share of wall time (%)")
    ax.set_ylim(-2, 100)
    ax.set_title(f"Data stall on {entries[0]['dataset']} (dotted: 5%, dashed: 50%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    figure.tight_layout()
    return figure


def _growth(results: dict[str, Any]) -> Any:
    entries = [e for e in results["summary"] if e["phase"] == "growth" and e["status"] == "ok"]
    if not entries:
        return None
    top = max(e["settings"]["num_threads"] for e in entries)
    points = sorted((e["size"], e) for e in entries if e["settings"]["num_threads"] == top)
    sizes = [size for size, _ in points]
    figure, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
    left.plot(sizes, [e["rows_per_s"] / 1e6 for _, e in points], marker="o",
              color=COLORS["stoker"])
    left.set_ylabel("million rows/s")
    left.set_ylim(bottom=0)
    right.plot(sizes, [e["peak_memory_bytes"] / 1e6 for _, e in points], marker="o",
               color=COLORS["stoker"])
    right.set_ylabel("peak memory (MB)")
    right.set_ylim(bottom=0)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [f"{s}x" for s in sizes])
        ax.set_xlabel(f"dataset size ({entries[0]['dataset']}, {top} threads)")
        ax.grid(alpha=0.3)
    figure.suptitle("Stoker as the dataset grows")
    figure.tight_layout()
    return figure
