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
