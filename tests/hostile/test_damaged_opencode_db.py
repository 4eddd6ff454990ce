"""A damaged OpenCode database (review-bad 9, 10). One row with invalid UTF-8 made SQLite's
query fail: the `error:` line quoted the row's JSON (a tool's input, a file path, the
file's content) and every session of the database was lost. A damaged byte in the schema
made SQLite's own message undecodable: reported as our bug ("please report this").
Now the row is read with U+FFFD and named by its id in a `bad-utf8` warning (never its
text), the rest is read, and a damaged schema is a corrupt database, one line."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from test_cases import opencode_db, opencode_document
from typer.testing import CliRunner

from agent_profiler.cli import app

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adapters" / "opencode"))
runner = CliRunner()
SECRET = b"/workspace/SECRET-PLAN.md"


def _damage(path: Path, table: str, row_id: str, column: str = "data") -> None:
    """Put invalid UTF-8 (and a file path that must not be shown) into one row's TEXT."""
    connection = sqlite3.connect(path)
    (data,) = connection.execute(f"SELECT {column} FROM {table} WHERE id = ?", (row_id,)).fetchone()
    try:
        value = json.loads(data)
    except ValueError:  # not JSON (a title): the bytes after it
        damaged = data.encode() + b"\xff\xfe"
    else:
        value["x"] = "PLACE"
        damaged = json.dumps(value).encode().replace(b"PLACE", SECRET + b"\xff\xfe")
    connection.execute(
        f"UPDATE {table} SET {column} = CAST(? AS TEXT) WHERE id = ?", (damaged, row_id)
    )
    connection.commit()
    connection.close()


def _summary(path: Path) -> tuple[int, str, list[dict[str, object]]]:
    done = runner.invoke(app, ["summary", str(path), "--json"])
    return done.exit_code, done.stderr, json.loads(done.stdout or "[]")


def test_a_part_with_invalid_utf8_is_read_and_named_without_its_text(tmp_path: Path) -> None:
    # GIVEN a database whose tool part holds invalid UTF-8 next to a file path
    path = opencode_db(tmp_path, wal=False)
    document = opencode_document()
    part = next(p["id"] for m in document["messages"] for p in m["parts"] if p["type"] == "tool")
    _damage(path, "part", part)
    # WHEN summarised
    code, stderr, sessions = _summary(path)
    # THEN the session is read whole (4 requests), one warning names the part by its id,
    # and nothing of the row's text reaches stderr
    assert code == 0, stderr
    assert [s["calls"] for s in sessions] == [4]
    assert f"opencode.db: part {part}: invalid UTF-8 replaced with U+FFFD" in stderr
    assert "bad-utf8: 1" in stderr
    assert SECRET.decode() not in stderr and "with text" not in stderr


def test_a_message_and_a_session_with_invalid_utf8_are_read(tmp_path: Path) -> None:
    path = opencode_db(tmp_path, wal=False)
    document = opencode_document()
    message = document["messages"][1]["info"]["id"]
    _damage(path, "message", message)
    _damage(path, "session", document["info"]["id"], "title")
    code, stderr, sessions = _summary(path)
    assert code == 0, stderr
    assert [s["calls"] for s in sessions] == [4]
    # Both counted; the file's first is listed (a damaged database may have many)
    assert "bad-utf8: 2" in stderr
    assert f"session {document['info']['id']}: invalid UTF-8 replaced with U+FFFD (title)" in stderr
    assert SECRET.decode() not in stderr


def test_a_2x_row_with_invalid_utf8_is_read(tmp_path: Path) -> None:
    from test_opencode_v2 import CONVERSATION, build

    path = build(tmp_path / "opencode.db", {"ses_a": CONVERSATION})
    _damage(path, "session_message", "msg_ses_a_3")
    code, stderr, sessions = _summary(path)
    assert code == 0, stderr
    assert [s["calls"] for s in sessions] == [2]
    assert "message msg_ses_a_3: invalid UTF-8 replaced with U+FFFD" in stderr
    assert SECRET.decode() not in stderr and "README" not in stderr


def test_a_damaged_schema_is_a_corrupt_database_not_our_bug(tmp_path: Path) -> None:
    # GIVEN a database whose schema names a table with a damaged byte (SQLite's message
    # about it then holds bytes that are not UTF-8)
    path = opencode_db(tmp_path, wal=False)
    data = bytearray(path.read_bytes())
    at = data.index(b"tablepartpart")
    data[at + 5] = 0x8E
    path.write_bytes(bytes(data))
    # WHEN summarised
    code, stderr, _ = _summary(path)
    # THEN one line says the database is corrupt; no request to report a bug of ours
    assert code == 1
    assert "opencode.db: the database is corrupt" in stderr
    assert "please report" not in stderr and "UnicodeDecodeError" not in stderr


def test_a_damaged_index_costs_no_row(tmp_path: Path) -> None:
    # GIVEN a database whose index on part(message_id), which the reader's order uses,
    # has a damaged page (SQLite: "database disk image is malformed"; the table is intact)
    path = opencode_db(tmp_path, wal=False)
    connection = sqlite3.connect(path)
    connection.execute("CREATE INDEX part_message_idx ON part (message_id, id)")
    connection.commit()
    (root,) = connection.execute(
        "SELECT rootpage FROM sqlite_master WHERE name = 'part_message_idx'"
    ).fetchone()
    (size,) = connection.execute("PRAGMA page_size").fetchone()
    connection.close()
    data = bytearray(path.read_bytes())
    data[(root - 1) * size] = 0x07  # no page type
    path.write_bytes(bytes(data))
    # WHEN summarised
    code, stderr, sessions = _summary(path)
    # THEN every request is read from the table itself, and one warning says so
    assert code == 0, stderr
    assert [s["calls"] for s in sessions] == [4]
    assert "damaged-table: 1" in stderr
    assert "an index of table part is damaged (database disk image is malformed)" in stderr
