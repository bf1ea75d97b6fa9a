"""The engine's stages depend one way: no folder under src/ includes, directly or through
others, a folder that includes it, and the core stages include nothing of serve/ or python/
(docs/architecture.md, "What each folder owns"). Read from the #include lines themselves."""

from __future__ import annotations

import ast
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


# The Python package: no module imports, directly or through others, a module that imports it
# (python/README.md). Every import counts, those inside functions and under TYPE_CHECKING too:
# a lazy import hides a cycle from the interpreter, not from a reader.
PACKAGE = SRC.parent / "python" / "stoker"


def _module_name(path: Path) -> str:
    parts = ("stoker",) + path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def python_imports() -> dict[str, set[str]]:
    """Each module of the package → the modules of the package its code needs: the module an
    import names, or for `from p import name`, the submodule `p.name` if there is one, else
    `p` itself (whose __init__ defines `name`). Running the packages on the way to a submodule
    is not a need: a submodule loads from a package still being initialized, a name from it
    does not. The extension (_core, a .pyi here) is a module like the others."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths) | {_module_name(p) for p in PACKAGE.rglob("*.pyi")}
    graph: dict[str, set[str]] = {name: set() for name in paths}
    for name, path in paths.items():
        used = graph[name]
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                used.update(alias.name for alias in node.names if alias.name in modules)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                for alias in node.names:
                    if f"{base}.{alias.name}" in modules:
                        used.add(f"{base}.{alias.name}")
                    elif base in modules:
                        used.add(base)
        used.discard(name)
    return {name: used & set(paths) for name, used in graph.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as error:
        return list(error.args[1])
    return None


def test_the_python_modules_form_no_cycle() -> None:
    graph = python_imports()
    assert "stoker._loading.loader" in graph and graph["stoker"], "the package was not read"
    cycle = _cycle(graph)
    assert cycle is None, "modules of python/stoker import each other: " + " -> ".join(cycle)


def test_a_lazy_import_cycle_is_found() -> None:
    """The check itself: an import inside a function closes a cycle as well as one at the top."""
    graph = python_imports()
    graph["stoker._loading.cursor"].add("stoker._loading.loader")  # as a lazy import would
    assert _cycle(graph) is not None
