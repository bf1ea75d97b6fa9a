"""Writes the signatures of Loader, MixtureLoader and RemoteLoader from KEYWORDS
(python/stoker/_options/keywords.py, each option defined once) into their modules in this
checkout, between the markers keywords.BEGIN and keywords.END: `make signatures`, after
`make build` (KEYWORDS is read from the installed package, as stubgen reads the installed
extension). tests/python/test_keywords.py fails when a module holds another signature."""

from __future__ import annotations

import sys
from pathlib import Path

from stoker._options import keywords

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "stoker"


def main() -> int:
    changed = []
    for loader, module in keywords.MODULES.items():
        path = PACKAGE / module
        text = path.read_text()
        new = keywords.written(text, loader)
        if new != text:
            path.write_text(new)
            changed.append(module)
    print("rewrote " + ", ".join(changed) if changed else "signatures current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
