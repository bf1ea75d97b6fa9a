"""The `stoker` command: gen writes what it promises, inspect reports it, bench measures both
readers. Every test writes real Parquet files of a few thousand rows at most."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import stoker
from stoker.cli import main

CRITEO_NAMES = (
    ["row_id", "label"] + [f"I{i}" for i in range(1, 14)] + [f"C{i}" for i in range(1, 27)]
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Runs the command in-process: (exit code, stdout, stderr), usage errors included."""
    try:
        code = main([str(arg) for arg in argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def gen(capsys: pytest.CaptureFixture[str], out: Path, *argv: str) -> list[Path]:
    code, _, err = run(capsys, "gen", out, *argv)
    assert code == 0, err
    return sorted(out.glob("*.parquet"))


def file_digests(paths: list[Path]) -> list[bytes]:
    return [path.read_bytes() for path in paths]


# --- gen: schemas and values -----------------------------------------------------------------


def test_criteo_schema_and_values(tmp_path, capsys):
    (path,) = gen(capsys, tmp_path, "--preset", "criteo", "--rows", 3000)
    table = pq.read_table(path)

    assert path.name == "part-00000.parquet"
    assert table.schema.names == CRITEO_NAMES
    assert table.num_rows == 3000
    assert table.schema.field("row_id").type == pa.int64()
    assert all(table.schema.field(name).type == pa.float32() for name in CRITEO_NAMES[1:15])
    assert all(table.schema.field(name).type == pa.int64() for name in CRITEO_NAMES[15:])
    assert all(column.null_count == 0 for column in table.columns)
    np.testing.assert_array_equal(table["row_id"].to_numpy(), np.arange(3000))

    labels = table["label"].to_numpy()
    assert set(np.unique(labels)) == {0.0, 1.0}
    assert 0.2 < labels.mean() < 0.3  # 25% positive; 3000 draws keep it well inside.
    for i in range(1, 14):
        assert table[f"I{i}"].to_numpy().min() > 0

    cardinalities = []
    for i in range(1, 27):
        field = table.schema.field(f"C{i}")
        cardinality = int(field.metadata[b"cardinality"])
        ids = table[f"C{i}"].to_numpy()
        assert ids.min() >= 0 and ids.max() < cardinality
        cardinalities.append(cardinality)
    assert cardinalities[0] == 10 and cardinalities[-1] == 1_000_000
    assert cardinalities == sorted(cardinalities)
    # Skewed: the smallest id of the 10-value column is by far the most frequent.
    counts = np.bincount(table["C1"].to_numpy(), minlength=10)
    assert counts[0] > 2 * counts[9]


def test_criteo_nulls_schema_and_values(tmp_path, capsys):
    (path,) = gen(capsys, tmp_path, "--preset", "criteo-nulls", "--rows", 3000)
    table = pq.read_table(path)
    (plain,) = gen(capsys, tmp_path / "plain", "--preset", "criteo", "--rows", 3000)
    criteo = pq.read_table(plain)

    assert table.schema.names == [*CRITEO_NAMES, "domain"]
    assert table.schema.field("domain").type == pa.string()
    assert int(table.schema.field("domain").metadata[b"cardinality"]) == 10_000
    nullable = {f"I{i}" for i in range(1, 14, 2)} | {f"C{i}" for i in range(1, 27, 2)}
    for name in table.schema.names:
        nulls = table[name].null_count
        if name in nullable or name == "domain":
            assert 200 < nulls < 400, (name, nulls)  # 10% of 3000 rows.
        else:
            assert nulls == 0, name
    # Drawn as the criteo preset draws, nulls masked on top: the values that are there agree.
    for name in CRITEO_NAMES:
        present = table[name].is_valid()
        assert table[name].filter(present).equals(criteo[name].filter(present)), name
    words = table["domain"].drop_null().to_pylist()
    assert all(3 <= len(word) <= 30 and word.isalpha() and word.islower() for word in words)
    assert len(set(words)) < len(words)  # Skewed: frequent words repeat.


def test_wide_schema(tmp_path, capsys):
    (path,) = gen(capsys, tmp_path / "narrow", "--preset", "wide", "--rows", 500, "--columns", 7)
    table = pq.read_table(path)
    assert table.schema.names == ["row_id", "label"] + [f"f{i}" for i in range(7)]
    assert all(table.schema.field(f"f{i}").type == pa.float32() for i in range(7))
    np.testing.assert_array_equal(table["row_id"].to_numpy(), np.arange(500))
    assert abs(float(np.mean(table["f3"].to_numpy()))) < 0.2  # Standard normal features.

    (path,) = gen(capsys, tmp_path / "default", "--preset", "wide", "--rows", 20)
    schema = pq.read_schema(path)
    assert len(schema) == 2 + 500
    assert schema.names[-1] == "f499"


def test_embeddings_schema(tmp_path, capsys):
    (path,) = gen(
        capsys, tmp_path / "small", "--preset", "embeddings", "--rows", 1000, "--list-size", 8
    )
    table = pq.read_table(path)
    assert table.schema.names == ["row_id", "label", "item_id", "embedding", "user_embedding"]
    assert table.schema.field("item_id").type == pa.int64()
    for name in ("embedding", "user_embedding"):
        assert table.schema.field(name).type == pa.list_(pa.float32(), 8)
        values = table[name].combine_chunks().flatten().to_numpy()
        assert values.shape == (8000,) and np.isfinite(values).all()
    assert all(column.null_count == 0 for column in table.columns)
    np.testing.assert_array_equal(table["row_id"].to_numpy(), np.arange(1000))

    (path,) = gen(capsys, tmp_path / "default", "--preset", "embeddings", "--rows", 10)
    assert pq.read_schema(path).field("embedding").type == pa.list_(pa.float32(), 64)


# --- gen: layout options ------------------------------------------------------------------------


def test_files_and_row_groups_follow_options(tmp_path, capsys):
    paths = gen(
        capsys, tmp_path, "--preset", "wide", "--columns", 3, "--rows", 1000, "--files", 3,
        "--row-group-size", 100,
    )  # fmt: skip

    assert [path.name for path in paths] == [f"part-0000{i}.parquet" for i in range(3)]
    metadata = [pq.read_metadata(path) for path in paths]
    assert [m.num_rows for m in metadata] == [334, 333, 333]
    assert [metadata[0].row_group(i).num_rows for i in range(4)] == [100, 100, 100, 34]
    assert [metadata[2].row_group(i).num_rows for i in range(4)] == [100, 100, 100, 33]
    assert all(m.num_row_groups == 4 for m in metadata)
    # Rows are numbered 0..N-1 across the files in file order.
    row_ids = np.concatenate([pq.read_table(p, columns=["row_id"])["row_id"] for p in paths])
    np.testing.assert_array_equal(row_ids, np.arange(1000))
    assert metadata[0].row_group(0).column(0).compression == "SNAPPY"


@pytest.mark.parametrize(
    ("flag", "codec"),
    [("zstd", "ZSTD"), ("gzip", "GZIP"), ("lz4", "LZ4"), ("none", "UNCOMPRESSED")],
)
def test_compression_option(tmp_path, capsys, flag, codec):
    (path,) = gen(capsys, tmp_path, "--preset", "criteo", "--rows", 100, "--compression", flag)
    group = pq.read_metadata(path).row_group(0)
    assert {group.column(j).compression for j in range(group.num_columns)} == {codec}


def test_summary_line(tmp_path, capsys):
    code, out, _ = run(capsys, "gen", tmp_path, "--preset", "criteo", "--rows", 1000, "--files", 2)
    assert code == 0
    size = sum(path.stat().st_size for path in tmp_path.glob("*.parquet"))
    assert out.startswith("wrote 2 file(s), 1,000 rows, ")
    assert f"{size / 1000:.1f} kB" in out
    assert str(tmp_path) in out


# --- gen: determinism ---------------------------------------------------------------------------


@pytest.mark.parametrize("preset", ["criteo", "criteo-nulls", "wide", "embeddings"])
def test_same_seed_gives_identical_bytes(tmp_path, capsys, preset):
    argv = ["--preset", preset, "--rows", 600, "--files", 2, "--row-group-size", 128, "--seed", 7]
    first = gen(capsys, tmp_path / "a", *argv)
    second = gen(capsys, tmp_path / "b", *argv)
    assert len(first) == 2
    assert file_digests(first) == file_digests(second)


def test_different_seed_gives_different_data(tmp_path, capsys):
    argv = ["--preset", "criteo", "--rows", 500]
    (a,) = gen(capsys, tmp_path / "a", *argv, "--seed", 1)
    (b,) = gen(capsys, tmp_path / "b", *argv, "--seed", 2)
    table_a, table_b = pq.read_table(a), pq.read_table(b)
    assert table_a["row_id"].equals(table_b["row_id"])
    for name in ("label", "I1", "C26"):
        assert not table_a[name].equals(table_b[name]), name


def test_each_file_has_its_own_stream(tmp_path, capsys):
    # Files are seeded by (seed, file index), not by one stream run across all files.
    a, b = gen(capsys, tmp_path, "--preset", "wide", "--columns", 2, "--rows", 200, "--files", 2)
    f0_a, f0_b = (pq.read_table(p)["f0"].to_numpy() for p in (a, b))
    assert not np.array_equal(f0_a, f0_b)


# --- gen: errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--rows", "0"], "--rows: must be >= 1"),
        (["--rows", "ten"], "--rows: expected an integer"),
        (["--rows", "10", "--files", "0"], "--files: must be >= 1"),
        (["--rows", "2", "--files", "3"], "files (3) must not exceed rows (2)"),
        (["--rows", "10", "--row-group-size", "0"], "--row-group-size: must be >= 1"),
        (["--rows", "10", "--seed", "-1"], "--seed: must be >= 0"),
        (["--rows", "10", "--compression", "brotli"], "invalid choice: 'brotli'"),
        (["--rows", "10", "--columns", "5"], "columns applies only to preset 'wide'"),
        (["--rows", "10", "--list-size", "5"], "list_size applies only to preset 'embeddings'"),
    ],
)
def test_gen_argument_errors(tmp_path, capsys, argv, message):
    code, _, err = run(capsys, "gen", tmp_path / "out", "--preset", "criteo", *argv)
    assert code == 2
    assert message in err
    assert not (tmp_path / "out").exists()


def test_gen_refuses_to_mix_with_existing_parts(tmp_path, capsys):
    gen(capsys, tmp_path, "--preset", "criteo", "--rows", 30, "--files", 3)
    code, _, err = run(capsys, "gen", tmp_path, "--preset", "criteo", "--rows", 30)
    assert code == 1
    assert "already holds 3 part-*.parquet file(s)" in err and "--overwrite" in err

    paths = gen(capsys, tmp_path, "--preset", "criteo", "--rows", 30, "--overwrite")
    assert [path.name for path in paths] == ["part-00000.parquet"]
    assert pq.read_metadata(paths[0]).num_rows == 30


# --- inspect ----------------------------------------------------------------------------------


@pytest.fixture
def dataset(tmp_path, capsys) -> list[Path]:
    return gen(
        capsys, tmp_path / "data", "--preset", "criteo", "--rows", 1000, "--files", 2,
        "--row-group-size", 300,
    )  # fmt: skip


def compressed_bytes(path: Path) -> int:
    metadata = pq.read_metadata(path)
    return sum(
        metadata.row_group(i).column(j).total_compressed_size
        for i in range(metadata.num_row_groups)
        for j in range(metadata.num_columns)
    )


def test_inspect_text(dataset, capsys):
    code, out, err = run(capsys, "inspect", dataset[0].parent)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["path", "row", "groups", "rows", "compressed", "uncompressed"]
    assert lines[1].startswith(str(dataset[0])) and lines[1].split()[1:3] == ["2", "500"]
    assert lines[2].startswith(str(dataset[1])) and lines[2].split()[1:3] == ["2", "500"]
    assert lines[3].startswith("total (2 files)") and lines[3].split()[3:5] == ["4", "1,000"]
    assert "schema (41 columns):" in lines
    assert "  row_id: int64" in lines
    assert "  label: float" in lines
    assert "  C26: int64  (cardinality=1000000)" in lines
    assert "warning" not in out


def test_inspect_json(dataset, capsys):
    code, out, _ = run(capsys, "inspect", "--json", dataset[0].parent)
    assert code == 0
    report = json.loads(out)
    assert [entry["path"] for entry in report["files"]] == [str(p) for p in dataset]
    assert [entry["rows"] for entry in report["files"]] == [500, 500]
    assert [entry["row_groups"] for entry in report["files"]] == [2, 2]
    assert [entry["compressed_bytes"] for entry in report["files"]] == [
        compressed_bytes(p) for p in dataset
    ]
    assert [entry["file_bytes"] for entry in report["files"]] == [p.stat().st_size for p in dataset]
    assert report["total"]["files"] == 2
    assert report["total"]["rows"] == 1000
    assert report["total"]["row_groups"] == 4
    assert report["total"]["compressed_bytes"] == sum(compressed_bytes(p) for p in dataset)
    assert [field["name"] for field in report["schema"]] == CRITEO_NAMES
    assert report["schema"][0] == {
        "name": "row_id", "type": "int64", "nullable": True, "metadata": {}
    }  # fmt: skip
    assert report["schema"][-1]["metadata"] == {"cardinality": "1000000"}
    assert report["schema_mismatch"] == []


def test_inspect_expands_sources_in_sorted_order(tmp_path, capsys):
    for name in ("b", "a/nested"):
        gen(capsys, tmp_path / name, "--preset", "criteo", "--rows", 10, "--files", 2)
    (tmp_path / "notes.txt").write_text("not parquet, not matched")

    code, out, _ = run(capsys, "inspect", "--json", tmp_path)
    assert code == 0
    expected = [
        str(tmp_path / "a/nested/part-00000.parquet"),
        str(tmp_path / "a/nested/part-00001.parquet"),
        str(tmp_path / "b/part-00000.parquet"),
        str(tmp_path / "b/part-00001.parquet"),
    ]
    assert [entry["path"] for entry in json.loads(out)["files"]] == expected

    # A glob, then a file it already named: each file once, sources in the order given.
    single = tmp_path / "a/nested/part-00001.parquet"
    code, out, _ = run(capsys, "inspect", "--json", f"{tmp_path}/b/*.parquet", single, single)
    assert code == 0
    assert [entry["path"] for entry in json.loads(out)["files"]] == [*expected[2:], str(single)]


def test_inspect_reports_schema_mismatch(tmp_path, capsys):
    (criteo,) = gen(capsys, tmp_path / "c", "--preset", "criteo", "--rows", 10)
    (wide,) = gen(capsys, tmp_path / "w", "--preset", "wide", "--rows", 10, "--columns", 2)
    code, out, _ = run(capsys, "inspect", criteo, wide)
    assert code == 0
    assert f"warning: schema differs from {criteo}'s in:\n  {wide}" in out

    code, out, _ = run(capsys, "inspect", "--json", criteo, wide)
    assert json.loads(out)["schema_mismatch"] == [str(wide)]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing.parquet", "no such file or directory: {}"),
        (lambda d: d / "*.parquet", "no files match pattern: {}"),
        (lambda d: d, "no *.parquet files under directory: {}"),
    ],
)
def test_inspect_missing_source(tmp_path, capsys, make, message):
    source = make(tmp_path)
    code, out, err = run(capsys, "inspect", source)
    assert code == 1
    assert out == ""
    assert err == f"stoker inspect: error: {message.format(source)}\n"


def test_inspect_not_parquet(tmp_path, capsys):
    bogus = tmp_path / "bogus.parquet"
    bogus.write_bytes(b"PAR1 this is not a parquet file at all")
    code, _, err = run(capsys, "inspect", bogus)
    assert code == 1
    assert err.startswith(f"stoker inspect: error: {bogus}: not a readable Parquet file (")
    assert "Traceback" not in err


def test_python_dash_m_runs_the_cli(dataset):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run(
        [sys.executable, "-m", "stoker", "inspect", "--json", str(dataset[0])],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["total"]["rows"] == 500


# --- bench --------------------------------------------------------------------------------------


def test_bench_measures_stoker_shuffled_unshuffled_and_pyarrow(tmp_path, capsys):
    pytest.importorskip("stoker._core", reason="the compiled engine (stoker._core) is not built")
    list_size = 4
    gen(
        capsys, tmp_path, "--preset", "embeddings", "--rows", 2000, "--list-size", list_size,
        "--files", 2, "--row-group-size", 300,
    )  # fmt: skip
    code, out, err = run(capsys, "bench", tmp_path, "--json", "--batch-size", 256, "--epochs", 2)
    assert code == 0, err

    result = json.loads(out)
    # numpy output: row_id int64, label float32, item_id int64, two float32 vectors.
    row_bytes = 8 + 4 + 8 + 2 * list_size * 4
    for kind in ("stoker", "stoker_unshuffled", "pyarrow"):
        figures = result[kind]
        assert figures["rows"] == 4000, kind
        assert figures["bytes"] == 4000 * row_bytes, kind
        assert figures["rows_per_s"] > 0 and figures["mb_per_s"] > 0, kind
        assert 0 < figures["first_batch_seconds"] <= figures["seconds"], kind
        assert figures["cpu_seconds"] > 0, kind
        assert figures["peak_rss_bytes"] >= figures["baseline_rss_bytes"] > 0, kind
    assert result["stoker"]["batches"] == 2 * 8  # ceil(2000 / 256) per epoch.
    assert result["stoker"]["stats"]["rows"] == 4000
    assert result["stoker_unshuffled"]["stats"]["rows"] == 4000
    assert result["pyarrow"]["stats"] is None
    assert result["options"]["shuffle"] is True  # The unshuffled run is the extra one.
    rate = {kind: result[kind]["rows_per_s"] for kind in ("stoker", "stoker_unshuffled", "pyarrow")}
    assert result["ratios"] == pytest.approx({
        "shuffled_vs_pyarrow": rate["stoker"] / rate["pyarrow"],
        "unshuffled_vs_pyarrow": rate["stoker_unshuffled"] / rate["pyarrow"],
        "shuffled_vs_unshuffled": rate["stoker"] / rate["stoker_unshuffled"],
    })
    assert result["ratio"] == result["ratios"]["shuffled_vs_pyarrow"]

    code, out, err = run(capsys, "bench", tmp_path, "--batch-size", 500)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].split() == ["stoker", "stoker", "no-shuffle", "pyarrow"]
    assert lines[2].split() == ["rows", "2,000", "2,000", "2,000"]
    ratios = [line.split(" rows/s: ")[0] for line in lines if " rows/s: " in line]
    assert ratios == ["stoker / pyarrow", "stoker no-shuffle / pyarrow",
                      "stoker / stoker no-shuffle"]

    code, out, err = run(capsys, "bench", tmp_path, "--skip-pyarrow", "--no-shuffle")
    assert code == 0, err
    lines = out.splitlines()
    assert (
        lines[0]
        == f"{tmp_path}: batch size 4096, no shuffle, 1 epoch(s), numpy output, all columns"
    )
    assert lines[1].split() == ["stoker"]
    assert lines[2].split() == ["rows", "2,000"]
    assert "stoker / pyarrow" not in out and "rows/s: " not in out

    code, out, err = run(capsys, "bench", tmp_path, "--json", "--skip-unshuffled")
    assert code == 0, err
    result = json.loads(out)
    assert result["stoker_unshuffled"] is None and result["pyarrow"]["rows"] == 2000
    assert result["ratios"]["shuffled_vs_unshuffled"] is None
    assert result["ratios"]["shuffled_vs_pyarrow"] == result["ratio"] > 0


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"stoker {stoker.__version__}\n"


def test_gen_help_prints_percent_signs_once(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["gen", "--help"])
    out = capsys.readouterr().out
    assert "25% positive" in out and "10% nulls" in out and "%%" not in out


def test_the_command_line_takes_its_defaults_from_the_engine() -> None:
    """`stoker serve`/`doctor` restate no default: each loader and server option's default is
    the bound option struct's (what the Loader's signature reads too)."""
    from stoker import _core, cli

    parser = cli._build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    loader, server = _core.LoaderOptions(), _core.ServeOptions()
    for name in ("serve", "doctor"):
        defaults = {a.dest: a.default for a in commands.choices[name]._actions}
        assert defaults["seed"] == loader.seed
        assert defaults["cache_limit_bytes"] == loader.cache_limit_bytes
        assert defaults["shuffle_window"] is None  # the engine resolves it
        assert f"{_core.DEFAULT_SHUFFLE_WINDOW:,}" in commands.choices[name].format_help()
    serve = {a.dest: a.default for a in commands.choices["serve"]._actions}
    assert (serve["host"], serve["max_streams"], serve["chunk_batches"],
            serve["stream_idle_timeout"]) == (server.host, server.max_streams,
                                              server.chunk_batches,
                                              server.stream_idle_timeout_s)
