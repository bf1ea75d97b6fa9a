"""Each combination docs/combinations.md lists as refused is refused when the loader is made,
with the error the table gives (its beginning, word for word)."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.compute as pc
import pytest
import stoker
from stoker_devtools.serve import COLUMNS, OPTIONS

DOC = Path(__file__).resolve().parents[2] / "docs" / "combinations.md"


def _documented_errors() -> list[str]:
    """The 'error (beginning)' cells of the refusals table."""
    text = DOC.read_text()
    table = text[text.index("## Refused combinations"):text.index("## Combinations that work")]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    return [row.split(" | ")[1] for row in rows[1:]]


ERRORS = _documented_errors()


def _mixture(criteo: Path, **policy: bool) -> stoker.Mixture:
    return stoker.Mixture([stoker.Source(criteo, weight=1.0)], **policy)


def _cases(criteo: Path) -> dict[str, tuple[type[Exception], object]]:
    """Each documented error → (its type, a call that should raise it)."""
    options = {"batch_size": 64, "columns": COLUMNS}
    return {
        "ValueError: drop_last cannot be set with mode='eval'":
            (ValueError, lambda: stoker.Loader(criteo, mode="eval", drop_last=True, **options)),
        "ValueError: pad_to_equal_steps needs mode='eval'":
            (ValueError, lambda: stoker.Loader(criteo, pad_to_equal_steps=True, **options)),
        "ValueError: with_row_origin cannot be used with a filter":
            (ValueError, lambda: stoker.Loader(criteo, with_row_origin=True,
                                               filter=pc.field("label") > 0, **options)),
        "ValueError: max_bad_units and max_bad_fraction need on_error='skip'":
            (ValueError, lambda: stoker.Loader(criteo, max_bad_units=1, **options)),
        'ValueError: device="cuda" places torch or JAX batches: set output="torch" or '
        'output="jax"':
            (ValueError, lambda: stoker.Loader(criteo, device="cuda", **options)),
        'ValueError: output="torchrec" with a Mixture: not supported (yet)':
            (ValueError, lambda: stoker.Loader(_mixture(criteo), batch_size=64,
                                               output="torchrec")),
        'ValueError: output="torchrec" with local=: not supported (yet)':
            (ValueError, lambda: stoker.RemoteLoader(["grpc://127.0.0.1:1"], output="torchrec",
                                                     torchrec={"sparse": ["C1"]},
                                                     local={"source": str(criteo)})),
        "ValueError: columns= is per source in a Mixture: give it to stoker.Source":
            (ValueError, lambda: stoker.Loader(_mixture(criteo), batch_size=64,
                                               columns=COLUMNS)),
        "ValueError: with_row_origin= is not supported with a Mixture":
            (ValueError, lambda: stoker.Loader(_mixture(criteo), batch_size=64,
                                               with_row_origin=True)),
        "ValueError: mode='eval' cannot be used with a stratified Mixture":
            (ValueError, lambda: stoker.Loader(_mixture(criteo, stratified=True), batch_size=64,
                                               mode="eval")),
        "ValueError: device= with output='torch' is not supported with a Mixture (yet)":
            (ValueError, lambda: stoker.Loader(_mixture(criteo), batch_size=64, output="torch",
                                               device="cuda")),
    }


def test_the_table_lists_the_refusals_this_file_checks_and_more() -> None:
    assert len(ERRORS) >= 10
    assert all(error.startswith(("ValueError: ", "TypeError: ")) for error in ERRORS)


@pytest.mark.parametrize("documented", ERRORS)
def test_each_refusal_raises_its_documented_error(documented: str, criteo: Path,
                                                  servers) -> None:
    kind, _, words = documented.partition(": ")
    cases = _cases(criteo)
    if documented in cases:
        expected, make = cases[documented]
        with pytest.raises(expected, match="^" + re.escape(words)):
            make()  # type: ignore[operator]
    elif documented.startswith("ValueError: the servers were started with other options"):
        server = servers()
        with pytest.raises(ValueError, match="^" + re.escape(words)):
            stoker.RemoteLoader([server.location], **{**OPTIONS, "batch_size": 1})
    elif documented.startswith("ValueError: server … serves another configuration"):
        a, b = servers(), servers("--drop-last")
        with pytest.raises(ValueError, match=r"^server \S+ serves another configuration"):
            stoker.RemoteLoader([a.location, b.location])
    elif documented.startswith("ValueError: the state does not match this loader"):
        state = stoker.Loader(criteo, seed=1, batch_size=64).state_dict()
        with pytest.raises(ValueError, match=r"^the state does not match this loader: .*differs"):
            stoker.Loader(criteo, seed=2, batch_size=64).load_state_dict(state)
    else:
        pytest.fail(f"no check for the documented refusal {documented!r}")
    assert kind == "ValueError"
