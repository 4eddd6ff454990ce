"""An OpenCode database read while OpenCode starts (review-motion 6). The races are made
deterministic: the file changes, or a writer starts, inside the read (a wrapped query),
never after a sleep."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_cases import opencode_db

from agent_profiler.adapters import opencode_storage as storage
from agent_profiler.adapters import opencode_v2
from agent_profiler.diagnostics import Diagnostics


@pytest.fixture
def database(tmp_path: Path) -> Path:
    """A small WAL-mode database left as OpenCode leaves it when idle: no `-wal` beside it."""
    folder = tmp_path / "db"
    folder.mkdir()
    path = opencode_db(folder, wal=True)
    assert storage._quiescent_wal(path)
    return path


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each connection the reader opens is immutable, in order."""
    seen: list[bool] = []
    connect = storage._connect

    def recording(path: Path, immutable: bool) -> sqlite3.Connection:
        seen.append(immutable)
        return connect(path, immutable)

    monkeypatch.setattr(storage, "_connect", recording)
    return seen


def during_reads(
    monkeypatch: pytest.MonkeyPatch, reads: int, change: Callable[[], None], *, fail: bool = False
) -> None:
    """In each of the first `reads` reads, after its first query: `change()` the database,
    then do what a read without locks over changing pages does: warn that a table is
    damaged (or, with `fail`, fail as SQLite does on such a page)."""
    select = opencode_v2.select
    connections: list[sqlite3.Connection] = []  # one per read

    def wrapped(connection: sqlite3.Connection, *args: Any) -> Any:
        found = select(connection, *args)
        if len(connections) < reads and connection not in connections:
            connections.append(connection)
            change()
            if fail:
                raise sqlite3.DatabaseError("database disk image is malformed")
            args[-1].warn(args[-2], None, "damaged-table", "table part is damaged (mixed)")
        return found

    monkeypatch.setattr(opencode_v2, "select", wrapped)


def touch(path: Path) -> Callable[[], None]:
    """A checkpoint's write: the file's modification time moves on."""

    def change() -> None:
        facts = path.stat()
        os.utime(path, ns=(facts.st_atime_ns, facts.st_mtime_ns + 1_000_000))

    return change


def clean(path: Path) -> tuple[list[Any], Diagnostics]:
    diagnostics = Diagnostics()
    stored = storage.read_db(path, diagnostics)
    return [(s.info, s.messages) for s in stored], diagnostics


def test_a_database_written_during_a_read_without_locks_is_read_again(
    database: Path, monkeypatch: pytest.MonkeyPatch, connects: list[bool]
) -> None:
    # GIVEN a quiescent database whose file changes during the first (immutable) read
    expected, counted = clean(database)
    connects.clear()
    during_reads(monkeypatch, 1, touch(database))
    # WHEN read
    found, diagnostics = clean(database)
    # THEN the read that saw the change is dropped with what it warned about: no damaged
    # table is claimed, the rows are the database's, counted once
    assert found == expected
    assert diagnostics.warning_counts == counted.warning_counts == {}
    assert diagnostics.rows_read == counted.rows_read
    # and the second read, the file still quiescent, is immutable again: nothing created
    assert connects == [True, True]
    assert sorted(p.name for p in database.parent.iterdir()) == ["opencode.db"]


def test_a_read_without_locks_that_failed_on_a_changing_file_is_read_again(
    database: Path, monkeypatch: pytest.MonkeyPatch, connects: list[bool]
) -> None:
    expected, _ = clean(database)
    connects.clear()
    during_reads(monkeypatch, 1, touch(database), fail=True)
    found, diagnostics = clean(database)
    assert found == expected
    assert diagnostics.warning_counts == {}
    assert connects == [True, True]


def test_a_database_that_never_settles_is_read_with_locks_at_last(
    database: Path, monkeypatch: pytest.MonkeyPatch, connects: list[bool]
) -> None:
    expected, _ = clean(database)
    connects.clear()
    during_reads(monkeypatch, 10, touch(database))
    found, diagnostics = clean(database)
    # The last of READ_TRIES reads takes SQLite's locks (`mode=ro`): one moment, whatever
    # the writer does. It is the only one kept: its own damage would be real.
    assert connects == [True] * (storage.READ_TRIES - 1) + [False]
    assert found == expected
    assert diagnostics.warning_counts == {"damaged-table": 1}


def test_opencode_starting_during_the_read_is_read_through_its_wal(
    database: Path, monkeypatch: pytest.MonkeyPatch, connects: list[bool]
) -> None:
    # GIVEN OpenCode starting during the read: its `-wal` appears, holding a new title
    writer = sqlite3.connect(database)

    def start() -> None:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute("UPDATE session SET title = 'renamed while read'")
        writer.commit()

    during_reads(monkeypatch, 1, start)
    try:
        (stored,) = storage.read_db(database, diagnostics := Diagnostics())
    finally:
        writer.close()
    # THEN it is read again with locks, as of the writer's commit, without a damaged table
    assert connects == [True, False]
    assert stored.info["title"] == "renamed while read"
    assert diagnostics.warning_counts == {}
