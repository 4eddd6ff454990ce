"""Reading OpenCode's three containers into one shape (FORMATS-gemini-opencode.md §2):
the SQLite database (≥1.2; from 2.0.3 its messages are `session_message` rows, turned into
the 1.x shape by `opencode_v2`), the JSON files under `storage/` (≤1.1.x, left on disk
after the migration), and `opencode export <id>` documents. `opencode.py` maps
the result onto the model; nothing here knows about requests or context.

The database is the user's live one, and OpenCode keeps it in WAL mode. It is
opened read-only through a URI (`mode=ro`), so this process never writes it, and
all queries run in one read transaction: the three tables as of one moment while
OpenCode keeps writing (WAL readers never block its writer). But a read-only WAL
reader still *creates* `-wal` and `-shm` beside the file when they are missing
(checked: it did so on a copied database). So when the database is in WAL mode
and has no `-wal` file, nothing is in flight, and it is opened `immutable=1`
instead: no locks, no files created, the same rows. But `immutable=1` promises
SQLite that nothing writes the file: OpenCode starting during the read (creating the
`-wal`, checkpointing pages into the file) gave a mix of old and new pages, read as a
damaged table or as rows missing (review-motion 6). So such a read is kept only when
the file (its size, time, inode) and the absence of `-wal` held from before it to after
it; else it is read again, with `mode=ro` once OpenCode is seen running (the `-wal` and
`-shm` it may create are then OpenCode's own) and on the last of `READ_TRIES` whatever
is seen. A rollback-journal database (no WAL) creates nothing when read; it gets
`mode=ro` and waits up to `LOCK_WAIT_S` for a writer's exclusive lock, then says the
database is locked.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import stat
import urllib.parse
from collections.abc import Iterator
from dataclasses import field
from pathlib import Path
from typing import Any

import orjson

from agent_profiler.adapters import opencode_v2
from agent_profiler.adapters.opencode_v2 import column_text as v2text
from agent_profiler.adapters.opencode_v2 import is_utf8
from agent_profiler.console import counted
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import JournalError
from agent_profiler.inputs import os_reason
from agent_profiler.jsonl import open_journal, peek
from agent_profiler.records import record

SQLITE_MAGIC = b"SQLite format 3\x00"
LOCK_WAIT_S = 2.0  # how long to wait for a writer's exclusive lock before giving up
READ_TRIES = 3  # reads of a database that changed under a read without locks
MAX_DOCUMENT_BYTES = 512 * 1024 * 1024


@record
class StoredSession:
    """One session as stored: its info, and its messages (info with `id`) each with
    its parts (with `id`), in time order."""

    info: dict[str, Any]
    source: str
    messages: list[tuple[dict[str, Any], list[dict[str, Any]]]] = field(default_factory=list)

    @property
    def id(self) -> str:
        value = self.info.get("id")
        return value if isinstance(value, str) else ""


def kind_of(path: Path) -> str:
    """ "db", "export", "storage" (a session file under storage/) or ""."""
    head = peek(path)
    if head.startswith(SQLITE_MAGIC) or (
        path.name.startswith("opencode") and path.name.endswith(".db")
    ):
        return "db"
    if head.lstrip()[:1] != b"{":
        return ""
    if b'"info"' in head and b'"messages"' in head:
        return "export"
    if b'"ses_' in head and storage_root(path) is not None:
        return "storage"
    return ""


def storage_root(path: Path) -> Path | None:
    """The storage folder of a session file: `<root>/session/<project>/ses_*.json`
    (≥0.4) or `<root>/session/info/ses_*.json` (early 0.x)."""
    if path.parent.parent.name == "session" and path.name.startswith("ses_"):
        return path.parent.parent.parent
    return None


def _load_json(path: Path, diagnostics: Diagnostics, *, whole: bool = False) -> Any:
    """A JSON file's value, or None with a warning. `whole` (an export: the file is the
    session) raises instead, so a damaged export costs one line naming it, not two; one
    cut short keeps its complete messages (`_salvage`)."""
    data = b""
    try:
        with open_journal(path) as stream:
            data = stream.read(MAX_DOCUMENT_BYTES + 1)
        if len(data) > MAX_DOCUMENT_BYTES:
            raise JournalError(str(path), "JSON document over 512 MB; not read")
        diagnostics.documents_read += 1
        value = orjson.loads(data.removeprefix(b"\xef\xbb\xbf"))
    except JournalError as error:
        if whole:
            raise  # the guarded reader's error (a damaged gzip), naming the file once
        diagnostics.warn(str(path), None, "read-error", error.message)
        return None
    except (OSError, EOFError) as error:
        if whole:
            raise JournalError(str(path), f"cannot read ({error})") from error
        diagnostics.warn(str(path), None, "read-error", f"cannot read ({error})")
        return None
    except (ValueError, RecursionError) as error:
        if whole:
            salvaged = _salvage(path, data, diagnostics)
            if salvaged is not None:
                return salvaged
            raise JournalError(
                str(path), f"OpenCode export is cut short or damaged ({str(error)[:60]})"
            ) from error
        diagnostics.warn(str(path), None, "not-json", f"damaged JSON file ({str(error)[:60]})")
        return None
    diagnostics.records_parsed += 1
    return value


# --------------------------------------------------------------------------- export


def _salvage(path: Path, data: bytes, diagnostics: Diagnostics) -> dict[str, Any] | None:
    """An export cut short (copied while written, a download stopped) or damaged: its
    `info` and every complete message before the cut, as `gemini_recording._salvage`
    keeps a Gemini CLI document's, with one `truncated-document` warning saying where (the
    line the first message not kept starts on); None when not even `info` is whole (the
    caller's one error line)."""
    text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace")
    decoder = json.JSONDecoder()
    found: dict[str, Any] = {}
    messages: list[Any] = []
    position = _skip(text, 0)
    if not text.startswith("{", position):
        return None
    position += 1
    inside = False  # in the messages list
    try:
        while not text.startswith("}", position := _skip(text, position)):
            key, position = decoder.raw_decode(text, position)
            position = _skip(text, position)
            if not isinstance(key, str) or not text.startswith(":", position):
                break
            position = _skip(text, position + 1)
            if key != "messages":
                found[key], position = decoder.raw_decode(text, position)
                continue
            if not text.startswith("[", position):
                break
            position += 1
            inside = True
            while not text.startswith("]", position := _skip(text, position)):
                message, position = decoder.raw_decode(text, position)
                messages.append(message)
            position += 1
            inside = False
    except (ValueError, RecursionError):
        pass  # `position`: where the value that is not whole starts
    if not isinstance(found.get("info"), dict):
        return None
    line = text.count("\n", 0, position) + 1
    place = f"in messages[{len(messages)}]" if inside else "after its messages"
    diagnostics.warn(
        str(path),
        line,
        "truncated-document",
        f"OpenCode export cut short or damaged {place}; the first "
        f"{counted(len(messages), 'complete message')} kept",
    )
    diagnostics.records_parsed += 1
    return {"info": found["info"], "messages": messages}


def _skip(text: str, position: int) -> int:
    """Past whitespace and the commas between a JSON object's members or a list's items."""
    while position < len(text) and text[position] in " \t\r\n,":
        position += 1
    return position


def read_export(path: Path, diagnostics: Diagnostics) -> list[StoredSession]:
    value = _load_json(path, diagnostics, whole=True)
    info = value.get("info") if isinstance(value, dict) else None
    messages = value.get("messages") if isinstance(value, dict) else None
    if not isinstance(info, dict) or not isinstance(messages, list):
        raise JournalError(str(path), "not an OpenCode export (no info and messages)")
    session = StoredSession(info, str(path))
    # Each message and part is a record (a row of the database): counted as such, so one
    # not recognised is one record of many, as it is when read from the database.
    diagnostics.records_parsed += sum(
        1 + len(e["parts"]) if isinstance(e, dict) and isinstance(e.get("parts"), list) else 1
        for e in messages
    )
    for index, entry in enumerate(messages):
        message = entry.get("info") if isinstance(entry, dict) else None
        parts = entry.get("parts") if isinstance(entry, dict) else None
        if not isinstance(message, dict):
            said = "without info" if isinstance(entry, dict) else "is not a JSON object"
            records = 1 + len(parts) if isinstance(parts, list) else 1  # as counted above
            diagnostics.reject(str(path), None, f"messages[{index}] {said}; not read", records)
            continue
        session.messages.append(
            (message, [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else [])
        )
    return [session]


# --------------------------------------------------------------------------- storage


def _json_files(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.glob("*.json") if p.is_file())
    except OSError:
        return []


def storage_sessions(root: Path) -> list[Path]:
    return [
        path
        for folder in sorted((root / "session").glob("*"))
        if folder.is_dir()
        for path in _json_files(folder)
        if path.name.startswith("ses_")
    ]


def read_storage(
    root: Path, wanted: set[str] | None, diagnostics: Diagnostics
) -> list[StoredSession]:
    """Sessions of a storage folder: those named in `wanted` and their descendants
    (subagent sessions), or all of them when `wanted` is None."""
    infos: dict[str, tuple[dict[str, Any], Path]] = {}
    for path in storage_sessions(root):
        info = _load_json(path, diagnostics)
        if isinstance(info, dict) and isinstance(info.get("id"), str):
            infos[info["id"]] = (info, path)
    chosen = set(infos) if wanted is None else set(wanted) & set(infos)
    # Add the descendants of the chosen sessions: each session's children found once, so a
    # chain of thousands (each the parent of the next) costs its length, not its square.
    children: dict[str, list[str]] = {}
    for session_id, (info, _) in infos.items():
        parent = info.get("parentID")
        if isinstance(parent, str):  # (an id of the folder is a string)
            children.setdefault(parent, []).append(session_id)
    todo = list(chosen)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in chosen:
                chosen.add(child)
                todo.append(child)
    sessions = []
    for session_id in sorted(chosen):
        info, path = infos[session_id]
        session = StoredSession(info, str(path))
        folders = [root / "message" / session_id, root / "session" / "message" / session_id]
        message_files = [p for folder in folders for p in _json_files(folder)]
        loaded = [(_load_json(p, diagnostics), p) for p in message_files]
        messages = [(m, p) for m, p in loaded if isinstance(m, dict) and "id" in m]
        messages.sort(key=lambda mp: (_created(mp[0]), str(mp[0]["id"])))
        missing = 0
        for message, _ in messages:
            message_id = str(message["id"])
            part_folders = [
                root / "part" / message_id,
                root / "session" / "part" / session_id / message_id,
            ]
            part_files = [p for folder in part_folders for p in _json_files(folder)]
            parts = [v for v in (_load_json(p, diagnostics) for p in part_files)]
            kept = sorted(
                (p for p in parts if isinstance(p, dict)), key=lambda p: str(p.get("id", ""))
            )
            if not kept and message.get("role") == "assistant":
                missing += 1
            session.messages.append((message, kept))
        if missing:
            diagnostics.warn(
                str(path),
                None,
                "missing-parts",
                f"{counted(missing, 'assistant message')} {'has' if missing == 1 else 'have'} "
                "no part files (their content is unknown)",
            )
        sessions.append(session)
    return sessions


def _created(message: dict[str, Any]) -> int:
    time = message.get("time")
    created = time.get("created") if isinstance(time, dict) else None
    return created if isinstance(created, int) and not isinstance(created, bool) else 0


# --------------------------------------------------------------------------- database


def _connect(path: Path, immutable: bool) -> sqlite3.Connection:
    uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro"
    if immutable:
        uri += "&immutable=1"
    return sqlite3.connect(uri, uri=True, timeout=LOCK_WAIT_S, isolation_level=None)


def _quiescent_wal(path: Path) -> bool:
    """A WAL-mode database (header bytes 18-19 = 2) with no `-wal` beside it."""
    try:
        with path.open("rb") as stream:
            header = stream.read(100)
    except OSError:
        return False
    in_wal_mode = header.startswith(SQLITE_MAGIC) and header[18:20] == b"\x02\x02"
    return in_wal_mode and not Path(str(path) + "-wal").exists()


def _stamp(path: Path) -> tuple[int, int, int, bool] | None:
    """What changes when the database is written: its inode, size and modification time,
    and whether a `-wal` is beside it (None when it cannot be looked at)."""
    try:
        facts = path.stat()
    except OSError:
        return None
    wal = Path(str(path) + "-wal").exists()
    return facts.st_ino, facts.st_size, facts.st_mtime_ns, wal


def _open_db(path: Path, immutable: bool) -> sqlite3.Connection:
    source = str(path)
    try:
        mode = path.stat().st_mode
    except OSError as error:  # deleted after planning: said as every harness says it
        raise JournalError(source, f"cannot open: {os_reason(error)}") from error
    if not stat.S_ISREG(mode):
        said = "is a directory" if stat.S_ISDIR(mode) else "not a file"
        raise JournalError(source, f"cannot open: {said}")
    try:
        connection = _connect(path, immutable)
        # Text as bytes (`opencode_v2.column_text`): one row's invalid UTF-8 made the query fail,
        # its text quoted in SQLite's error (review-bad 9); bytes are faster to read too.
        connection.text_factory = bytes
        try:
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except (sqlite3.Error, UnicodeDecodeError):
            connection.close()
            raise
        return connection
    except sqlite3.OperationalError as error:
        reason = str(error)
        if "locked" in reason or "busy" in reason:
            raise JournalError(
                source,
                f"database is locked by another process ({reason}); try again when OpenCode "
                "is idle, or read `opencode export <session id>` output instead",
            ) from error
        raise JournalError(source, f"cannot open the database read-only ({reason})") from error
    except sqlite3.DatabaseError as error:
        raise JournalError(source, f"not a SQLite database, or corrupt ({error})") from error
    except UnicodeDecodeError as error:  # SQLite's own error text, about a damaged schema
        raise JournalError(source, f"the database is corrupt ({_DAMAGED_TEXT})") from error


_DAMAGED_TEXT = "a damaged byte in its schema or a page: SQLite's message about it is no text"


def _reason(error: Exception) -> str:
    """SQLite's message, without a row's text it may quote (`… with text '…'`)."""
    return str(error).split(" with text ", 1)[0]


def read_db(path: Path, diagnostics: Diagnostics) -> list[StoredSession]:
    """The sessions of a database: a 1.x session from `message`/`part`; a session that
    2.x (≥2.0.3) has messages of in `session_message` from those rows only (the 1.x rows
    of a session continued after the upgrade are a frozen copy of its start). A read
    without locks that the file changed under is not used, nor what it warned about (a
    table it saw half-written is not damaged): it is read again (module doc)."""
    for _ in range(READ_TRIES - 1):
        before = _stamp(path)
        if not _quiescent_wal(path):
            break
        counted = Diagnostics(
            keep_first=diagnostics.keep_first, on_progress=diagnostics.on_progress
        )
        try:
            sessions = _read_db(path, counted, immutable=True)
        except JournalError:
            if _stamp(path) == before:
                raise
            continue
        if _stamp(path) == before:
            diagnostics.absorb(counted)
            diagnostics.listed |= counted.listed
            return sessions
    return _read_db(path, diagnostics, immutable=False)


def _read_db(path: Path, diagnostics: Diagnostics, immutable: bool) -> list[StoredSession]:
    source = str(path)
    connection = _open_db(path, immutable)
    try:
        tables = {v2text(r[0]) for r in connection.execute("SELECT name FROM sqlite_master")}
        v1 = {"message", "part"} <= tables
        v2 = "session_message" in tables
        if not (tables & {"session", "session_v2"} and (v1 or v2)):
            raise JournalError(
                source,
                "not an OpenCode database (no session/message/part tables, "
                "nor 2.x session_message)",
            )
        # One read transaction: the tables as of one moment, however OpenCode writes.
        connection.execute("BEGIN")
        sessions = [
            s
            for t in ("session_v2", "session")
            if t in tables
            for s in _db_sessions(connection, t, source, diagnostics)
        ]
        v2_rows = opencode_v2.rows(connection, source, diagnostics) if v2 else []
        messages = (
            opencode_v2.select(
                connection,
                "id, session_id, time_created, data",
                "message",
                "session_id, time_created, id",
                source,
                diagnostics,
            )[1]
            if v1
            else []
        )
        parts = (
            opencode_v2.select(
                connection,
                "id, message_id, session_id, data",
                "part",
                "message_id, id",
                source,
                diagnostics,
            )[1]
            if v1
            else []
        )
        # Every row is in hand: ending the read transaction cannot lose any. After a
        # damaged index (`opencode_v2.select`) SQLite repeats its error here: not news.
        with contextlib.suppress(sqlite3.DatabaseError):
            connection.execute("COMMIT")
    except sqlite3.OperationalError as error:
        what = "is locked by another process" if "locked" in str(error) else "cannot be read"
        raise JournalError(source, f"the database {what} ({_reason(error)})") from error
    except sqlite3.DatabaseError as error:
        raise JournalError(source, f"the database is corrupt ({_reason(error)})") from error
    except UnicodeDecodeError as error:
        raise JournalError(source, f"the database is corrupt ({_DAMAGED_TEXT})") from error
    finally:
        connection.close()
    by_id: dict[str, StoredSession] = {}
    for session in sessions:  # a session in both tables: its session_v2 row (read first)
        by_id.setdefault(session.id, session)
    held = opencode_v2.messages(v2_rows, source, diagnostics)
    orphans = 0
    for session_id, read in held.items():
        if session_id not in by_id:  # its row is in no session table we know
            orphans += 1
            by_id[session_id] = StoredSession({"id": session_id}, source)
        by_id[session_id].messages = read
    if orphans:
        diagnostics.warn(
            source,
            None,
            "no-session-row",
            f"{counted(orphans, 'OpenCode 2.x session')} in session_message "
            f"{'has' if orphans == 1 else 'have'} no row in session or session_v2: read "
            "without title, folder, version or parent",
        )
    by_message: dict[str, list[dict[str, Any]]] = {}
    for raw_part, raw_message, raw_session, data in parts:
        part_id, message_id, session_id = v2text(raw_part), v2text(raw_message), v2text(raw_session)
        if str(session_id) in held:
            _copy_of_v2(diagnostics, "part")
            continue
        value = _row_json(data, f"part {part_id}", source, diagnostics)
        if isinstance(value, dict):
            by_message.setdefault(str(message_id), []).append({**value, "id": part_id})
    for raw_message, raw_session, created, data in messages:
        message_id, session_id = v2text(raw_message), v2text(raw_session)
        if str(session_id) in held:
            _copy_of_v2(diagnostics, "message")
            continue
        value = _row_json(data, f"message {message_id}", source, diagnostics)
        owner = by_id.get(str(session_id))
        if not isinstance(value, dict) or owner is None:
            if owner is None:
                diagnostics.note("opencode:message-of-unknown-session")
            continue
        raw_time = value.get("time")
        time: dict[str, Any] = raw_time if isinstance(raw_time, dict) else {}
        message = {**value, "id": message_id, "time": {"created": created, **time}}
        owner.messages.append((message, by_message.pop(str(message_id), [])))
    for parts_left in by_message.values():  # of no message read (never dropped unsaid)
        for _ in parts_left:
            diagnostics.note("opencode:part-of-unknown-message")
    return list(by_id.values())


def _copy_of_v2(diagnostics: Diagnostics, table: str) -> None:
    """A 1.x row of a session that 2.x holds in `session_message`: read, not used."""
    diagnostics.rows_read += 1
    diagnostics.records_parsed += 1
    diagnostics.skip(f"opencode:{table} (1.x copy of a 2.x session)")


def _db_sessions(
    connection: sqlite3.Connection, table: str, source: str, diagnostics: Diagnostics
) -> Iterator[StoredSession]:
    """The rows of `session` (1.x, and 2.x before `session_v2`) or `session_v2` (2.x)."""
    names, found = opencode_v2.select(
        connection, "*", table, "time_created, id", source, diagnostics
    )
    for row in found:
        record = dict(zip((v2text(n) for n in names), row, strict=True))
        damaged = [k for k, v in record.items() if isinstance(v, bytes) and not is_utf8(v)]
        record = {k: v2text(v) for k, v in record.items()}
        if damaged:
            said = f"session {record.get('id')}: invalid UTF-8 replaced with U+FFFD ({damaged[0]})"
            diagnostics.warn_each(source, None, "bad-utf8", said)
        info: dict[str, Any] = {
            "id": record.get("id"),
            "parentID": record.get("parent_id"),
            "directory": record.get("directory"),
            "title": record.get("title"),
            "version": record.get("version"),
            "agent": record.get("agent"),
            "time": {"created": record.get("time_created"), "updated": record.get("time_updated")},
        }
        model = record.get("model")
        if isinstance(model, str):
            with contextlib.suppress(ValueError):
                info["model"] = orjson.loads(model)
        yield StoredSession(info, source)


def _row_json(data: object, where: str, source: str, diagnostics: Diagnostics) -> Any:
    diagnostics.rows_read += 1
    try:
        value = opencode_v2.row_json(data, where, source, diagnostics)
    except (ValueError, RecursionError):
        diagnostics.warn(source, None, "not-json", f"{where}: its data is not JSON")
        return None
    diagnostics.records_parsed += 1
    return value
