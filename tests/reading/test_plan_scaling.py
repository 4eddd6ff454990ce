"""Work before any journal is read that grew with the square of the input (notes:
review-scaling, the sweep after finding 3): copies with the same bytes in one folder
(`repeats.distinct` listed the folder again for each copy) and a parent whose subagent
files all failed (`links.warn_unread_children` looked for each child's id in every failed
file's name). The work is counted, not timed; and what the faster code must keep is
pinned on its outcome."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import JournalError
from agent_profiler.links import warn_unread_children
from agent_profiler.repeats import distinct

# --------------------------------------------------------------------------- repeats


def _folders_looked_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, copies: int) -> int:
    folder = tmp_path / str(copies)
    folder.mkdir()
    files = [folder / f"session-{index:05d}.jsonl" for index in range(copies)]
    for path in files:
        path.write_text('{"type":"summary","summary":"x"}\n')
    looked = 0
    real = Path.is_dir

    def is_dir(path: Path) -> bool:
        nonlocal looked
        looked += 1
        return real(path)

    monkeypatch.setattr(Path, "is_dir", is_dir)
    kept, repeats = distinct(files)
    monkeypatch.undo()
    assert kept == files[:1] and len(repeats) == copies - 1
    return looked


def test_copies_in_one_folder_look_at_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which copy has its subagents' folder beside it: doubling the copies in one folder
    doubles the entries looked at (each copy looked at every entry: 200 → 400 copies went
    from 40,000 to 160,000; 4,000 copies took 56 s)."""
    counts = [_folders_looked_at(tmp_path, monkeypatch, n) for n in (100, 200, 400)]
    assert counts[-1] <= 2 * 400, counts
    assert all(later <= 2.2 * earlier for earlier, later in pairwise(counts)), counts


def test_the_copy_kept_is_the_first_with_a_folder_of_its_own(tmp_path: Path) -> None:
    """Of copies in one folder, the first with a folder beside it named as the file (or,
    as Gemini CLI's, beginning with the id the name ends with) is read; a file of that name
    is no such folder; copies of other bytes in the same folder, none with a folder: the
    first."""
    names = ["a-111.jsonl", "b-222.jsonl", "c-333.jsonl", "d-444.jsonl", "e-555.jsonl"]
    files = [tmp_path / name for name in names]
    for path in files[:3]:
        path.write_text('{"one": 1}\n')
    for path in files[3:]:
        path.write_text('{"two": 2}\n')
    (tmp_path / "a-111").write_text("a file, not a folder")
    (tmp_path / "222-subagents").mkdir()
    (tmp_path / "c-333").mkdir()
    kept, repeats = distinct(files)
    assert kept == [files[1], files[3]]
    assert repeats == [(files[0], files[1]), (files[2], files[1]), (files[4], files[3])]


# --------------------------------------------------------------------------- links

SESSION = "11111111-2222-4333-8444-555555555555"


class CountedName(str):
    """A failed file's path (and the pieces cut from it) that counts the looks into it."""

    looked = 0

    def __contains__(self, part: object) -> bool:
        CountedName.looked += 1
        return str.__contains__(self, part)  # type: ignore[operator]

    def __getitem__(self, key: int | slice) -> CountedName:  # type: ignore[override]
        CountedName.looked += 1
        return CountedName(str.__getitem__(self, key))


def _looks(children: int) -> int:
    """The looks into the failed files' names of a parent whose `children` subagent files
    all failed."""
    ids = tuple(f"{SESSION}/agent-a{index:07x}" for index in range(children))
    failed = [
        JournalError(CountedName(f"/p/{SESSION}/subagents/agent-a{index:07x}.jsonl"), "empty")
        for index in range(children)
    ]
    diagnostics = Diagnostics()
    CountedName.looked = 0
    warn_unread_children([(f"{SESSION}.jsonl", children, ids)], diagnostics, failed=failed)
    (warning,) = diagnostics.warnings
    assert "their files were found but could not be read" in warning.message
    return CountedName.looked


def test_subagents_whose_files_failed_are_found_in_linear_work() -> None:
    """Doubling the subagents whose files failed doubles the looks into the files' names
    (each id looked for in every name: 500 → 1,000 subagents went from 125,750 looks to
    501,500; 8,000 took a second)."""
    counts = [_looks(n) for n in (250, 500, 1000)]
    assert counts[-1] <= 10 * 1000, counts
    assert all(later <= 2.2 * earlier for earlier, later in pairwise(counts)), counts


def _said(parents: list[tuple[str, int, tuple[str, ...]]], failed: list[str]) -> str:
    diagnostics = Diagnostics()
    errors = [JournalError(path, "empty") for path in failed]
    warn_unread_children(parents, diagnostics, failed=errors)
    (warning,) = diagnostics.warnings
    return warning.message.removesuffix(" (the launching call keeps the id, `child_session`)")


def test_a_subagent_is_given_when_its_id_is_part_of_a_failed_files_name() -> None:
    """A child's id (after its session's `/`, without a `#2`) anywhere in a failed file's
    name, ids of any length from 4 characters (one of a length, or several): given; a
    child of two parents counts for each; an id shorter than 4 never does; and never more
    than the children not read."""
    failed = ["/p/agent-aaaa1111.jsonl", "/p/x-dddd.json", "/q/cc.jsonl", "/q/ffff9999.jsonl"]
    parents = [
        ("p1.jsonl", 5, ("S/aaaa1111", "S/bbbb2222", "S/cc", "S/dddd", "S#2/ffff9999#2")),
        ("p2.jsonl", 1, ("S/aaaa1111",)),
    ]
    assert _said(parents, failed) == (
        "6 subagents named by 2 sessions (this one first) were not read: 4 of their files "
        "could not be read (said above); pass the others'"
    )
    parents = [("p1.jsonl", 1, ("S/aaaa1111", "S/dddd"))]
    assert _said(parents, failed) == (
        "1 subagent named by this session was not read: its file was found but could not "
        "be read, as said above"
    )
    assert _said([("p1.jsonl", 1, ("S/cc",))], failed) == (
        "1 subagent named by this session was not read: pass its file or folder"
    )
