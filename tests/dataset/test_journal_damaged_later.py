"""A journal collected and later damaged (review-bad finding 20): turned to garbage (a
sync conflict), its session's rows were dropped; a `.gz` cut short, they were replaced
by the rows before the cut. A journal deleted keeps them (the dataset is an archive):
one damaged does no worse. Its rows collected before are kept, the closing line says so,
and the next collect tries it again; a journal that grew whole is read again as always."""

from __future__ import annotations

import gzip
import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
from dsfiles import collected, journals, run, sessions

from samples import CLAUDE_SMALL
from shared_paths import TESTS

pytest.importorskip("duckdb")
SPOTTER = TESTS / "data" / "journals" / "claude-code" / "spotter-2.1.39-subagents-compaction"
SPOTTER_ID = "258c7280-ae70-4798-800f-63464d01a85d"
SUBAGENT = "agent-a881341.jsonl"
HANDMADE = TESTS / "data" / "dataset" / "claude-cost-split.jsonl"
# A rollout of 2,722 lines: cut halfway, its head (sniffed when planned) is whole.
LONG_ROLLOUT = (
    TESTS
    / "data"
    / "journals"
    / "codex"
    / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl.gz"
)
KEPT = (
    "1 session whose journal collected before is unusable or damaged now (said above): its "
    "rows collected before are kept"
)


def _garbage(size: int) -> bytes:
    """Bytes that are no journal, the same every run: random ones once failed the test
    when a carriage return among them made the file read as one of lines ending in \\r
    alone (a message of its own)."""
    return random.Random(size).randbytes(size).replace(b"\n", b" ").replace(b"\r", b" ")


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
    journal.write_bytes(_garbage(4000))
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
    journal.write_bytes(_garbage(4000))
    result = run("collect", "J", "more", "--to", "ds")  # a version of the new revision
    assert result.exit_code == 1 and KEPT in result.stdout
    assert "version 2" in result.stdout
    journal.write_bytes(good)
    again = collected("J")
    assert "1 unchanged read again" in again.stdout, again.stdout


def test_two_sessions_damaged_at_once_are_both_kept_and_not_read_again_once_whole(
    here: Path,
) -> None:
    """Two journals turned to garbage in one collect that writes a version (a third one
    changed): both sessions are kept, counted as two, and their entries are the ones
    collected, so once whole again they are unchanged (not read), not read again as
    entries marked stale are."""
    Path("K").mkdir()
    (Path("K") / HANDMADE.name).write_bytes(HANDMADE.read_bytes())
    _collected("J", "more", "K")
    good = {path: path.read_bytes() for path in (*Path("J").iterdir(), *Path("more").iterdir())}
    for path in good:
        path.write_bytes(b"no journal now\n")
    with (Path("K") / HANDMADE.name).open("a") as grown:
        grown.write("\n")
    result = run("collect", "J", "more", "K", "--to", "ds")
    assert result.exit_code == 1, result.output
    assert result.stdout.startswith(
        "ds: version 2; 3 journals: 0 new, 1 changed, 0 unchanged (not read); 2 sessions "
        "whose journal collected before is unusable or damaged now (said above): its rows "
        "collected before are kept; read 1 journal group"
    ), result.stdout
    for path, data in good.items():
        path.write_bytes(data)
    again = _collected("J", "more", "K")
    assert again.stdout == (
        "ds: nothing new or changed; 3 journals: 0 new, 0 changed, 3 unchanged (not read); "
        "3 sessions\n"
    )


def _collected(*journals: str) -> Any:
    result = run("collect", *journals, "--to", "ds")
    assert result.exit_code == 0, result.output
    return result


def _spotter(without: str | None = None) -> tuple[Path, Path]:
    """The spotter session (a parent, a subagent, a compaction file) copied to `sp`, the
    file named `without` set aside in `aside`: (the parent, the subagents' folder)."""
    shutil.copytree(SPOTTER, "sp")
    subagents = Path("sp", SPOTTER_ID, "subagents")
    if without is not None:
        Path("aside").mkdir()
        (subagents / without).rename(Path("aside", without))
    return Path("sp", f"{SPOTTER_ID}.jsonl.gz"), subagents


def test_a_new_subagent_of_a_session_kept_is_left_for_the_next_collect(here: Path) -> None:
    """A session collected without one of its subagents, whose parent is garbage when the
    subagent arrives: the session is kept as collected, and the new subagent, held back
    with it, is neither counted as a journal nor as new (the next collect reads it)."""
    parent, subagents = _spotter(without=SUBAGENT)
    assert run("collect", "sp", "--to", "ds").exit_code == 0
    Path("aside", SUBAGENT).rename(subagents / SUBAGENT)
    parent.write_bytes(b"no journal now\n")
    result = run("collect", "sp", "--to", "ds")
    assert result.exit_code == 1, result.output
    assert result.stdout == (
        f"ds: nothing new or changed; 2 journals: 0 new, 0 changed, 1 unchanged (not read); "
        f"{KEPT}; 1 session\n"
    )


def test_the_journals_of_a_session_kept_while_the_dataset_is_outdated_are_not_read_again(
    here: Path,
) -> None:
    """A dataset of another revision reads every journal again; a session whose parent is
    garbage now is kept, and its subagents, held back with it, are not counted as read
    again: only the other journal is."""
    from dsfiles import edit_manifest

    parent, _ = _spotter()
    _collected("sp", "more")
    edit_manifest(lambda d: d.update(rows=1))
    parent.write_bytes(b"no journal now\n")
    result = run("collect", "sp", "more", "--to", "ds")
    assert result.exit_code == 1, result.output
    assert result.stdout.startswith(
        "ds: version 2; 4 journals: 0 new, 0 changed, 0 unchanged (not read); 1 unchanged "
        "read again (the dataset's tables were written by another version, with other "
        f"columns or figures); {KEPT}; read 1 journal group"
    ), result.stdout


GONE_KEPT = (
    ": 1 journal of its session collected before not found now (not given, nor beside it): "
    "kept, with its session's rows collected before\n"
)


@pytest.mark.parametrize("damage", ["garbage", "gzip-cut-short"])
def test_a_session_kept_with_a_journal_of_it_gone_is_kept_whole(here: Path, damage: str) -> None:
    """A session whose subagent is gone (its rows kept: the dataset is an archive) and
    whose parent is garbage now (refused when planned) or a `.gz` cut short (found damaged
    when read): kept as collected, the subagent's session with it, and the subagent
    counted and said as kept. It was said "its session is read again without it, its rows
    dropped" before the session was found unusable, then the closing line said its rows
    collected before were kept, not counting the subagent among the journals kept."""
    parent, subagents = _spotter()
    collected("sp")
    (subagents / SUBAGENT).unlink()
    whole = parent.read_bytes()
    parent.write_bytes(b"no journal now\n" if damage == "garbage" else whole[: len(whole) // 2])
    result = run("collect", "sp", "--to", "ds")
    assert result.exit_code == 1, result.output
    assert result.stdout == (
        f"ds: nothing new or changed; 2 journals: 0 new, 0 changed, 1 unchanged (not read); "
        f"{KEPT}; 1 collected before and not found now (kept); 2 sessions\n"
    )
    assert result.stderr.startswith(f"{parent}{GONE_KEPT}"), result.stderr
    assert "dropped" not in result.stderr
    fleet = json.loads(run("fleet", "ds", "--json", "--no-cost").stdout)["sessions"]
    assert (fleet["count"], fleet["subagents"]) == (1, 1)
    # AND once the parent reads whole again (its bytes as collected), nothing is read:
    # the dataset holds them, the subagent still kept
    parent.write_bytes(whole)
    again = collected("sp")
    assert again.stdout == (
        "ds: nothing new or changed; 2 journals: 0 new, 0 changed, 2 unchanged (not read); 1 "
        "collected before and not found now (kept); 2 sessions\n"
    )


def test_a_gzip_cut_short_keeps_only_its_own_sessions_rows(here: Path) -> None:
    """A collected `.gz` cut short past its head (read, and found damaged then) while
    another collected journal grew, both collected again at once: the cut one's session
    keeps its rows collected before, and only it; the grown one is read again (the one
    group read, its rows the ones added)."""
    Path("Z").mkdir()
    journal = Path("Z") / LONG_ROLLOUT.name
    whole = LONG_ROLLOUT.read_bytes()
    journal.write_bytes(whole)
    _collected("Z", "J")
    journal.write_bytes(whole[: len(whole) // 2])
    with (Path("J") / CLAUDE_SMALL.name).open("a") as grown:
        grown.write("\n")
    result = run("collect", "Z", "J", "--to", "ds")
    assert result.exit_code == 1, result.output
    assert "corrupt or truncated gzip stream after line " in result.stderr
    assert result.stdout.startswith(
        f"ds: version 2; 2 journals: 0 new, 1 changed, 0 unchanged (not read); {KEPT}; read 1 "
        "journal group in 1 process; rows added: sessions 1,"
    ), result.stdout
    assert result.stdout.endswith("; 2 sessions in the dataset\n"), result.stdout
