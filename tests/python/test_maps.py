"""Every source file is on a map: each folder that holds sources has a README.md that names
each of them, by its name (`row_store.h`) or, for files that share a stem, by the stem with
their extensions in braces (`row_store.{h,cc}`). A file added without a line in its folder's
README fails here, naming the file and the README to add it to. Plain file reading: no
extension needed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent

# (folder, the extensions of its source files): every folder under it, itself included,
# that holds such files must list them in its README.md. One line per root.
ROOTS = [
    ("src", (".h", ".cc")),
    ("python/stoker", (".py",)),
]
# Folders whose map is not their own README.md: the package's is python/README.md.
README_OF = {"python/stoker": "python/README.md"}


def _folders(root: str, extensions: tuple[str, ...]) -> list[Path]:
    top = REPO / root
    folders = [top, *(path for path in top.rglob("*") if path.is_dir())]
    return sorted(folder for folder in folders
                  if any(path.suffix in extensions for path in folder.iterdir()))


def _listed(readme: str, source: Path) -> bool:
    """Whether `readme` names `source`: its whole name, or its stem with its extension among
    others in braces (`stem.{h,cc}`); not as part of a longer name (`partition_options.cc`
    does not list `options.cc`)."""
    stem, extension = re.escape(source.stem), re.escape(source.suffix[1:])
    alone = rf"(?<![\w.]){stem}\.{extension}(?!\w)"
    braced = rf"(?<![\w.]){stem}\.\{{[\w,]*(?<=[{{,]){extension}(?=[,}}])[\w,]*\}}"
    return re.search(alone, readme) is not None or re.search(braced, readme) is not None


@pytest.mark.parametrize(("root", "extensions"), ROOTS, ids=[root for root, _ in ROOTS])
def test_every_source_file_is_in_its_folders_readme(root: str,
                                                     extensions: tuple[str, ...]) -> None:
    folders = _folders(root, extensions)
    assert folders, f"no {'/'.join(extensions)} files under {REPO / root}"
    missing = []
    for folder in folders:
        readme = REPO / README_OF.get(str(folder.relative_to(REPO)), folder / "README.md")
        sources = sorted(path for path in folder.iterdir() if path.suffix in extensions)
        if not readme.exists():
            missing.append(f"{readme.relative_to(REPO)} (missing): "
                           + ", ".join(path.name for path in sources))
            continue
        text = readme.read_text()
        unlisted = [path.name for path in sources if not _listed(text, path)]
        if unlisted:
            missing.append(f"{readme.relative_to(REPO)}: " + ", ".join(unlisted))
    assert not missing, ("source files no README lists; add a line on what each owns to:\n  "
                         + "\n  ".join(missing))
