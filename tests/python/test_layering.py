"""The engine's stages depend one way: no folder under src/ includes, directly or through
others, a folder that includes it, and the core stages include nothing of serve/ or python/
(docs/architecture.md, "Folders and files"). Read from the #include lines themselves."""

from __future__ import annotations

import re
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
_INCLUDE = re.compile(r'^#include "([a-z_]+)/', re.MULTILINE)
# What only the extension and the Flight library may include.
_OUTER = {"serve", "python"}


def stage_includes() -> dict[str, set[str]]:
    """Each stage folder under src/ → the other stage folders its files include."""
    stages = {p.name for p in SRC.iterdir() if p.is_dir()}
    graph: dict[str, set[str]] = {stage: set() for stage in stages}
    for path in SRC.rglob("*"):
        if path.suffix not in (".h", ".cc"):
            continue
        stage = path.relative_to(SRC).parts[0]
        for used in _INCLUDE.findall(path.read_text()):
            if used in stages and used != stage:
                graph[stage].add(used)
    return graph


def test_the_stages_form_no_cycle() -> None:
    graph = stage_includes()
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as error:
        raise AssertionError(f"stage folders include each other: {error.args[1]}") from None
    assert set(order) == set(graph)


def test_the_core_includes_nothing_of_serving_or_the_binding() -> None:
    graph = stage_includes()
    leaks = {stage: used & _OUTER for stage, used in graph.items()
             if stage not in _OUTER and used & _OUTER}
    assert leaks == {}
