"""A journal collected and later damaged (review-bad finding 20): turned to garbage (a
sync conflict), its session's rows were dropped; a `.gz` cut short, they were replaced
by the rows before the cut. A journal deleted keeps them (the dataset is an archive):
one damaged does no worse. Its rows collected before are kept, the closing line says so,
and the next collect tries it again; a journal that grew whole is read again as always."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
from dsfiles import collected, journals, run, sessions

from samples import CLAUDE_SMALL

pytest.importorskip("duckdb")
KEPT = (
    "1 session whose journal collected before is unusable or damaged now (said above): its "
    "rows collected before are kept"
)


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    journals(tmp_path)
    return tmp_path


def test_a_collected_journal_turned_to_garbage_keeps_its_rows(here: Path) -> None:
    collected("J")
    collected("more")
    journal = Path("J") / CLAUDE_SMALL.name
    good = journal.read_bytes()
    journal.write_bytes(os.urandom(4000).replace(b"\n", b" "))
    for _ in range(2):  # said at every collect until it reads again
        result = run("collect", "J", "--to", "ds")
        assert result.exit_code == 1
        assert f"error: {journal}:1: " in result.stderr
        assert f"; {KEPT}; 1 collected before and not found now (kept); 2 sessions\n" in (
            result.stdout
        )
        assert sessions() == 2
    journal.write_bytes(good)
    again = collected("J")
    assert "nothing new or changed; 1 journal: 0 new, 0 changed, 1 unchanged" in again.stdout


def test_a_collected_gzip_cut_short_keeps_its_rows(here: Path) -> None:
    Path("Z").mkdir()
    journal = Path("Z/a.jsonl.gz")
    whole = gzip.compress(CLAUDE_SMALL.read_bytes())
    journal.write_bytes(whole)
    collected("Z")
    before = json.loads(run("fleet", "ds", "--json", "--no-cost").stdout)
    journal.write_bytes(whole[: len(whole) // 2])
    result = run("collect", "Z", "--to", "ds")
    assert result.exit_code == 1
    assert "corrupt or truncated gzip stream" in result.stderr
    assert KEPT in result.stdout
    after = json.loads(run("fleet", "ds", "--json", "--no-cost").stdout)
    assert (after["requests"], after["sessions"]) == (before["requests"], before["sessions"])


def test_a_journal_that_grew_whole_is_read_again(here: Path) -> None:
    """Only damage keeps the old rows."""
    journal = Path("J") / CLAUDE_SMALL.name
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(lines[:-3]))
    collected("J")
    journal.write_text("".join(lines))
    result = collected("J")
    assert "0 new, 1 changed" in result.stdout and "kept" not in result.stdout


def test_a_journal_kept_while_the_dataset_is_outdated_is_read_again_once_whole(
    here: Path,
) -> None:
    """A dataset of another revision reads every journal again; one unusable then keeps
    its old rows and its mark, so the collect that reads it whole still rewrites them."""
    from dsfiles import edit_manifest

    collected("J")
    edit_manifest(lambda d: d.update(rows=1))
    journal = Path("J") / CLAUDE_SMALL.name
    good = journal.read_bytes()
    journal.write_bytes(os.urandom(4000).replace(b"\n", b" "))
    result = run("collect", "J", "more", "--to", "ds")  # a version of the new revision
    assert result.exit_code == 1 and KEPT in result.stdout
    assert "version 2" in result.stdout
    journal.write_bytes(good)
    again = collected("J")
    assert "1 unchanged read again" in again.stdout, again.stdout
