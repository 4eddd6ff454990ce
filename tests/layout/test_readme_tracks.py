"""The README's "What the trace shows" table names every track a session can have, as the
track table (layout/tracks.py) lays them out, and every context category's counter: a
newcomer reading it before opening a trace finds each track there (`Context window` and
the `Requests`, `Compaction responses` and `Context command` rows were once missing)."""

from __future__ import annotations

import re

from agent_profiler.layout.tracks import TRACKS
from agent_profiler.model import Category
from shared_paths import REPO

README = (REPO / "README.md").read_text()


def _table() -> list[str]:
    """The first column of the table under "## What the trace shows", row by row."""
    section = README.split("## What the trace shows", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert rows, "the README's track table is gone"
    return [row.split(" | ", 1)[0] for row in rows]


def _names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_every_track_of_the_table_is_in_the_readme() -> None:
    listed = [name for cell in _table() for name in _names(cell)]
    expected = [row.name for row in TRACKS]
    missing = [name for name in expected if name not in listed]
    assert not missing, f"tracks the README's table does not name: {missing}"
    for row in TRACKS:
        for child in row.children:
            assert f"`{row.name}` ▸ `{child.name}`" in README, child.name


def test_the_readme_names_only_tracks_that_exist() -> None:
    known = {row.name for row in TRACKS} | {c.name for row in TRACKS for c in row.children}
    for cell in _table():
        for name in _names(cell):
            assert name in known or name == "Context: <Category>", name


def test_every_context_category_is_in_the_readme() -> None:
    (row,) = [r for r in README.splitlines() if r.startswith("| `Context` ▸ `Context: <Category>`")]
    listed = row.split(" | ")[1].split(": ", 1)[1].rstrip(" |").split(", ")
    assert listed == [c.label for c in Category]
