"""An OpenCode database read while OpenCode starts, or that cannot be read beside other
OpenCode files (review-motion 6, 7). The races are made deterministic: the file changes,
or a writer starts, inside the read (a wrapped query), never after a sleep."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_cases import opencode_db
from typer.testing import CliRunner

from agent_profiler.adapters import opencode_storage as storage
from agent_profiler.adapters import opencode_v2
from agent_profiler.cli import app
from agent_profiler.diagnostics import Diagnostics
from shared_paths import TESTS

EXPORT = TESTS / "data" / "journals" / "opencode" / "ses_fd4c895f0ffe6gKgxHiEgiQCcd.export.json"
runner = CliRunner()


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


def _summary(*args: str) -> tuple[int, str, list[dict[str, Any]]]:
    done = runner.invoke(app, ["summary", *args, "--json", "-j", "1"])
    return done.exit_code, done.stderr, json.loads(done.stdout or "[]")


def test_a_damaged_database_costs_itself_not_the_exports_beside_it(tmp_path: Path) -> None:
    # GIVEN a folder with an OpenCode export and an `opencode.db` that is no database
    folder = tmp_path / "mix"
    folder.mkdir()
    shutil.copy(EXPORT, folder)
    (folder / "opencode.db").write_bytes(b"not a database at all" * 100)
    # WHEN summarised
    code, stderr, sessions = _summary(str(folder))
    # THEN the export's session is read, the database named with its reason, exit 1
    assert [s["session"] for s in sessions] == [EXPORT.name.split(".")[0]]
    assert "opencode.db: not a SQLite database, or corrupt (file is not a database)" in stderr
    assert "no readable sessions" not in stderr
    assert code == 1


def test_a_locked_database_costs_itself_not_the_export_given_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a database OpenCode holds locked (a rollback journal, an exclusive lock), and
    # the `opencode export` output its message recommends, given together
    path = opencode_db(tmp_path, wal=False)
    export = Path(shutil.copy(EXPORT, tmp_path))
    lock = sqlite3.connect(path, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")
    monkeypatch.setattr(storage, "LOCK_WAIT_S", 0.05)
    try:
        code, stderr, sessions = _summary(str(path), str(export))
    finally:
        lock.close()
    assert [s["session"] for s in sessions] == [EXPORT.name.split(".")[0]]
    assert "opencode.db: database is locked by another process" in stderr
    assert code == 1


def test_a_database_alone_that_cannot_be_read_is_one_error_line(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    path.write_bytes(b"not a database at all" * 100)
    other = tmp_path / "opencode-2.db"
    other.write_bytes(b"nor is this one" * 100)
    code, stderr, sessions = _summary(str(path), str(other))
    assert sessions == []
    assert code == 1
    # Nothing of the group read: the first is the group's `error:` line, the other named too
    lines = [line for line in stderr.splitlines() if "opencode" in line]
    assert any(line.startswith("error: ") and "opencode-2.db" not in line for line in lines)
    assert any("opencode-2.db: not a SQLite database" in line for line in lines)
