"""A Parquet file of a dataset damaged without changing its size (review-bad findings 4
and 3): a byte changed inside changed `fleet`'s figures without a word, and a footer
damaged inside (its length and magic bytes whole) was `internal error` (exit 70) with
DuckDB's text over four lines. The manifest keeps each file's hash, checked by `fleet`
and `collect`; a dataset from before it (sizes only) has its files read once DuckDB
fails, and the first it cannot read is named."""

from __future__ import annotations

from pathlib import Path

import pytest
from dsfiles import HINT, NOT_CHANGED, collected, edit_manifest, journals, parquet, run, shown, tree

pytest.importorskip("duckdb")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    journals(tmp_path)
    return tmp_path


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x10
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("offset", [100, -20, -150])
def test_a_byte_changed_inside_a_parquet_file_is_named(here: Path, offset: int) -> None:
    """Same size, other bytes (a bad disk, a copy gone wrong): fleet reported other figures
    without a word (a byte at 100), or was `internal error` with DuckDB's text (a byte in
    the footer). Named by fleet and by collect, which changes nothing."""
    collected("J")
    damaged = parquet("sessions")
    _flip(damaged, offset)
    before = tree(here / "ds")
    said = f"error: {shown(damaged)}: damaged dataset file ("
    fleet = run("fleet", "ds", "--json")
    assert fleet.exit_code == 1 and fleet.stdout == ""
    assert fleet.stderr.startswith(said) and fleet.stderr.endswith(f"; {HINT}\n")
    assert fleet.stderr.count("\n") == 1
    collect = run("collect", "more", "--to", "ds")
    assert collect.exit_code == 1
    assert collect.stderr.startswith(said) and collect.stderr.endswith(f"; {NOT_CHANGED}\n")
    assert tree(here / "ds") == before


def test_a_byte_changed_in_the_body_is_said_as_such(here: Path) -> None:
    collected("J")
    damaged = parquet("requests")
    _flip(damaged, 100)
    fleet = run("fleet", "ds")
    assert (fleet.exit_code, fleet.stderr) == (
        1,
        f"error: {shown(damaged)}: damaged dataset file (its bytes changed since it was "
        f"written); {HINT}\n",
    )


@pytest.mark.parametrize("offset", [-20, -150])
def test_a_footer_damaged_inside_in_a_dataset_without_hashes_is_named(
    here: Path, offset: int
) -> None:
    """A dataset collected before the manifest kept hashes (sizes only): the footer's
    damage was DuckDB's plain `Error` ("don't know what type", "TProtocolException"),
    `internal error` (exit 70) over four lines."""
    collected("J")
    edit_manifest(lambda d: d.update(parquet={k: v[0] for k, v in d["parquet"].items()}))
    damaged = parquet("requests")
    data = bytearray(damaged.read_bytes())
    data[len(data) + offset] = 0xFF
    damaged.write_bytes(bytes(data))
    for command in (("fleet", "ds"), ("fleet", "ds", "--json"), ("fleet", "ds", "-o", "p.html")):
        fleet = run(*command)
        assert (fleet.exit_code, fleet.stderr) == (
            1,
            f"error: {shown(damaged)}: damaged dataset file (not a Parquet file DuckDB can "
            f"read); {HINT}\n",
        ), command
    assert not Path("p.html").exists()


def test_a_dataset_without_hashes_is_still_read(here: Path) -> None:
    """A manifest of sizes only (before the hashes): checked by size, read as before."""
    collected("J")
    edit_manifest(lambda d: d.update(parquet={k: v[0] for k, v in d["parquet"].items()}))
    fleet = run("fleet", "ds", "--json", "--no-cost")
    assert (fleet.exit_code, fleet.stderr) == (0, "")
    assert run("collect", "more", "--to", "ds").exit_code == 0
    assert run("fleet", "ds", "--no-cost").exit_code == 0
