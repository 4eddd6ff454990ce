"""A dataset whose folder's name DuckDB takes for a glob (`?`, `*`, `[`: review-bad
finding 13): `fleet` and `collect` read its own files only."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from dsfiles import collected, journals, run

from samples import CLAUDE_SMALL, CODEX_SMALL

pytest.importorskip("duckdb")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    journals(tmp_path)
    return tmp_path


@pytest.mark.parametrize("name", ["ds?y", "ds[A]y", "ds*", "ds\\b", "d's"])
def test_a_dataset_named_like_a_glob_reads_its_own_files_only(here: Path, name: str) -> None:
    """`fleet 'ds?y'` read `dsAy`'s files too, `ds[A]y` only `dsAy`'s; and a collect that
    rewrites a batch without a changed journal's rows read them in."""
    # What the globs match: a Claude Code session, and a Codex one in files of the very
    # names the dataset's own (its partition, its batch).
    shutil.copy(CODEX_SMALL, Path("J") / "c.jsonl")
    collected("J", "dsAy")
    Path("cx").mkdir()
    shutil.copy(CODEX_SMALL, "cx/a.jsonl")
    collected("cx", name)
    fleet = run("fleet", name, "--json", "--no-cost")
    assert fleet.exit_code == 0, fleet.output
    assert json.loads(fleet.stdout)["sessions"]["by_harness"] == {"codex": 1}
    # The journal changed: its batch file is rewritten without its old rows (read by DuckDB).
    with open("cx/a.jsonl", "a") as handle:
        handle.write("\n")
    Path("cx2").mkdir()
    shutil.copy(CLAUDE_SMALL, "cx2/b.jsonl")
    assert run("collect", "cx", "cx2", "--to", name).exit_code == 0
    fleet = run("fleet", name, "--json", "--no-cost")
    assert json.loads(fleet.stdout)["sessions"]["by_harness"] == {"claude-code": 1, "codex": 1}


def test_a_dataset_path_with_a_backslash_and_a_glob_character_is_one_line(here: Path) -> None:
    """A glob has no escape for a backslash in DuckDB: refused, by name, before anything
    is written; a dataset moved there is refused by fleet the same way."""
    said = (
        "error: a\\[b: a path holding a backslash and one of * ? [ cannot be read by DuckDB; "
        "rename or move the dataset's folder\n"
    )
    collect = run("collect", "more", "--to", "a\\[b")
    assert (collect.exit_code, collect.stderr) == (2, said)
    assert not Path("a\\[b").exists()
    collected("more")
    Path("ds").rename("a\\[b")
    fleet = run("fleet", "a\\[b")
    assert (fleet.exit_code, fleet.stderr) == (2, said)
