"""OpenCode 2.x (≥2.0.3) sessions: one row of `session_message` per message, turned into
the shape the 1.x `message`/`part` rows have (a message with `role`, `time`, `tokens`…
and its parts), so that `opencode_session` gives both generations one meaning.

Read from OpenCode's source (anomalyco/opencode, `packages/core/src/session/`; the index
copies, not a release tag):
- `sql.ts` (02ce4a33): `session_message(id, session_id, type, seq, time_created,
  time_updated, data JSON)`, `session_id` → the session table (`session`; 2.0.25 databases
  name it `session_v2`); `seq` (migration 20260603040000) is the order of the history;
- `projector.ts` (008d5715): `data` is the encoded message without its `id` and `type`
  (those are columns); times are epoch milliseconds;
- `message-updater.ts`: a step starts a new `assistant` row and its end writes `tokens`
  (the 1.x object: `input` excludes the cache), `cost`, `finish`, `time.completed`:
  one row, one request. `content[]` holds `text`, `reasoning` and `tool` items; a tool
  item holds its call and result (`state.status` streaming|running|completed|error,
  `state.content[]` the output, `time.pruned` once pruned);
- `runner/to-llm-message.ts`: what each type sends: `user` its text and text files;
  `synthetic`, `skill`, `shell` ("Shell command: …" and the output) as the user; `system`
  as a system message; a `completed` `compaction` as the user (its `summary` and
  `recent`); the switch markers nothing;
- `history.ts`: the model gets the rows from the last completed compaction on;
- migration 20260722170000_canonical_tool_results: a finished tool's output is
  `state.content[]` (earlier rows: `structured`/`result`).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import math
import sqlite3
from collections.abc import Callable
from typing import Any

import orjson

from agent_profiler.adapters.common import json_text, text_field
from agent_profiler.adapters.opencode_records import SENT_WHEN_FAILED
from agent_profiler.console import counted
from agent_profiler.diagnostics import Diagnostics, journal_name

Message = tuple[dict[str, Any], list[dict[str, Any]]]  # a 1.x message and its parts
READ, SKIPPED = "read", "skipped on purpose"
ROW_TYPES: dict[str, tuple[str, str]] = {
    "user": (READ, "a user message: its text → User prompts; text files attached → read"),
    "assistant": (READ, "one request: text, reasoning, tool calls and results; its tokens"),
    "synthetic": (READ, "text OpenCode sends as the user → Harness message"),
    "skill": (READ, "a skill's text, sent as the user → Harness message"),
    "system": (READ, "a system message sent mid-session (a context update) → Harness message"),
    "shell": (READ, "a user's shell command and its output, sent as the user → Harness message"),
    "compaction": (READ, "a finished compaction: its summary replaces what came before"),
    "agent-switched": (SKIPPED, "the agent changed: a marker, not sent to the model"),
    "model-switched": (SKIPPED, "the model changed: a marker, not sent to the model"),
    "location-switched": (SKIPPED, "the folder changed: a marker, not sent to the model"),
    "idle": (SKIPPED, "a run ended: a marker, not sent to the model"),
}
_NEEDED = ("id", "session_id", "type", "data")
_TEXT_MIMES = {"text/plain": "file", "application/x-directory": "directory"}


def column_text(value: object) -> Any:
    """A TEXT column's value as str. The database is read with `text_factory = bytes`
    (`opencode_storage._open_db`): a row with invalid UTF-8 (a damaged byte) then costs
    that value's U+FFFD, not the whole query, and its JSON `data` is parsed from the bytes."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def row_json(data: object, where: str, source: str, diagnostics: Diagnostics) -> Any:
    """A row's JSON `data`; invalid UTF-8 in it replaced with U+FFFD, with a `bad-utf8`
    warning naming the row (never its text). Raises ValueError when it is not JSON."""
    raw = data if isinstance(data, str | bytes) else b""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        if not isinstance(raw, bytes) or is_utf8(raw):
            raise
    said = f"{where}: invalid UTF-8 replaced with U+FFFD"
    diagnostics.warn_each(source, None, "bad-utf8", said)
    return orjson.loads(raw.decode("utf-8", "replace"))


def is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def select(
    connection: sqlite3.Connection,
    columns: str,
    table: str,
    order: str,
    source: str,
    diagnostics: Diagnostics,
) -> tuple[list[str], list[Any]]:
    """The column names and rows of `SELECT columns FROM table ORDER BY order`. A damaged
    page of an index (the one the order uses) fails that query as `malformed` while the
    table itself reads: then its rows are read from the table alone (`NOT INDEXED`) and
    sorted here, and a damaged page of the table keeps the rows before it; one
    `damaged-table` warning says which. Only a table that yields nothing fails."""
    cursor = connection.cursor()
    try:
        cursor.execute(f"SELECT {columns} FROM {table} ORDER BY {order}")
        return [d[0] for d in cursor.description], cursor.fetchall()
    except sqlite3.OperationalError:
        raise  # locked, busy, no such column: not damage
    except sqlite3.DatabaseError as error:
        cursor.close()  # its statement ended (COMMIT fails while it is open)
        reason = str(error).split(" with text ", 1)[0]
        keys = len(order.split(","))
        found: list[Any] = []
        try:
            cursor = connection.execute(f"SELECT {columns}, {order} FROM {table} NOT INDEXED")
            found.extend(cursor)
            said = "its rows read from the table itself"
            what = f"an index of table {table}"
        except sqlite3.OperationalError:
            raise
        except sqlite3.DatabaseError:
            if not found:
                raise error from None
            said = f"the {counted(len(found), 'row')} before the damage read, the rest not"
            what = f"table {table}"
    diagnostics.warn(source, None, "damaged-table", f"{what} is damaged ({reason}); {said}")
    found.sort(key=lambda row: tuple(_sql_order(v) for v in row[-keys:]))
    return [d[0] for d in cursor.description][:-keys], [row[:-keys] for row in found]


def _sql_order(value: object) -> tuple[int, Any]:
    """SQLite's order of values of mixed types: NULL, numbers, text, blobs."""
    if value is None:
        return 0, 0
    if isinstance(value, int | float):
        return 1, value
    if isinstance(value, str):
        return 2, value.encode()
    return 2, value  # text read as bytes (BINARY collation: the bytes' order)


class _Unreadable(Exception):
    """A row of a known type whose data lacks what that type always has."""


def rows(connection: sqlite3.Connection, source: str, diagnostics: Diagnostics) -> list[Any]:
    """The `session_message` rows, in the order of each session's history; none (and one
    warning when there are rows) when the table lacks a column this reader needs."""
    columns = {column_text(r[1]) for r in connection.execute("PRAGMA table_info(session_message)")}
    missing = [c for c in _NEEDED if c not in columns]
    if missing:
        (count,) = connection.execute("SELECT count(*) FROM session_message").fetchone()
        if count:
            diagnostics.warn(
                source,
                None,
                "unknown-schema",
                f"{counted(count, 'OpenCode 2.x message')} not read: table session_message "
                f"has no column {', '.join(missing)} (a layout this version does not know)",
            )
        return []
    created = "time_created" if "time_created" in columns else "NULL"
    updated = "time_updated" if "time_updated" in columns else "NULL"
    order = "seq" if "seq" in columns else created if created != "NULL" else "rowid"
    wanted = f"id, session_id, type, {created}, {updated}, data"
    by = f"session_id, {order}, id"
    return select(connection, wanted, "session_message", by, source, diagnostics)[1]


def messages(found: list[Any], source: str, diagnostics: Diagnostics) -> dict[str, list[Message]]:
    """Each session's messages in the 1.x shape. A row that cannot be understood is not
    read, and the database says so in one warning (how many, and the first one's why)."""
    sessions: dict[str, list[Message]] = {}
    bad, rejected, first = 0, 0, ""
    for raw_id, session_id, raw_kind, created, updated, data in found:
        diagnostics.rows_read += 1
        row_id, kind = column_text(raw_id), column_text(raw_kind)
        read = sessions.setdefault(str(column_text(session_id)), [])
        try:
            value = row_json(data, f"message {row_id}", source, diagnostics)
        except (ValueError, RecursionError):
            value = None
        if not isinstance(value, dict):
            bad += 1
            first = first or f"message {row_id}: its data is not a JSON object"
            continue
        diagnostics.records_parsed += 1
        kind = kind if isinstance(kind, str) else repr(kind)
        verdict = ROW_TYPES.get(kind, ("", ""))[0]
        if verdict == SKIPPED:
            diagnostics.skip(f"opencode:session_message/{kind}")
            continue
        if verdict != READ:
            where = f"{source} (message {row_id})"
            diagnostics.not_recognised(f"opencode:session_message/{kind}", where)
            continue
        time = _times(value, created, updated)
        try:
            read += _MAPPERS[kind](str(row_id), value, time, diagnostics, source)
        except _Unreadable as error:
            bad += 1
            rejected += 1
            first = first or f"message {row_id} ({kind}): {error}"
    if bad:
        was = "was" if bad == 1 else "were"
        message = (
            f"{counted(bad, 'OpenCode 2.x message')} (session_message rows) could not be "
            f"understood and {was} not read; the first: {first}"
        )
        diagnostics.reject(source, None, message, rejected)
    return sessions


def _ms(value: object) -> int | None:
    """Epoch milliseconds, or None for anything else (a bool, text, an endless float)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if math.isfinite(value) else None


def _times(value: dict[str, Any], created: object, updated: object) -> dict[str, Any]:
    """`time` as 1.x has it: `created` (the data's, else the row's) and `completed`."""
    raw = value.get("time")
    time = raw if isinstance(raw, dict) else {}
    result: dict[str, Any] = {"created": _ms(time.get("created")) or _ms(created)}
    if _ms(time.get("completed")) is not None:
        result["completed"] = _ms(time.get("completed"))
    result["updated"] = _ms(updated)
    return result


def _text(value: dict[str, Any], key: str = "text") -> str:
    text = value.get(key)
    if not isinstance(text, str):
        raise _Unreadable(f"no {key}")
    return text


def _user(message_id: str, time: dict[str, Any], parts: list[dict[str, Any]]) -> list[Message]:
    return [({"role": "user", "id": message_id, "time": time}, parts)]


def _said(
    message_id: str, value: dict[str, Any], time: dict[str, Any], _: Diagnostics, __: str
) -> list[Message]:
    """`user`: the typed text is the prompt; a text file or folder attached is sent as
    text ("Attached file: <name>", its description, then its content), anything else
    (an image) is seen but not measured, as a 1.x `file` part."""
    text = _text(value)
    parts: list[dict[str, Any]] = [{"type": "text", "id": "text", "text": text}] if text else []
    files = value.get("files")
    for index, attached in enumerate(files if isinstance(files, list) else []):
        parts.append(_attachment(attached, index))
    agents = value.get("agents")
    for index, _agent in enumerate(agents if isinstance(agents, list) else []):
        parts.append({"type": "agent", "id": f"agent{index}"})
    return _user(message_id, time, parts)


def _attachment(attached: object, index: int) -> dict[str, Any]:
    unmeasured = {"type": "file", "id": f"file{index}"}
    if not isinstance(attached, dict):
        return unmeasured
    kind = _TEXT_MIMES.get(text_field(attached, "mime") or "")
    data = attached.get("data")
    if kind is None or not isinstance(data, str):
        return unmeasured
    try:
        content = base64.b64decode(data, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return unmeasured
    source = attached.get("source")
    uri = text_field(source, "uri") if isinstance(source, dict) else None
    name = text_field(attached, "name") or uri or ("inline attachment" if kind == "file" else kind)
    lines = [f"Attached {kind}: {name}"]
    if text_field(attached, "description") is not None:
        lines.append(f"Description: {attached['description']}")
    if content or kind == "file":
        lines += ["", content]
    return {"type": "text", "id": f"file{index}", "synthetic": True, "text": "\n".join(lines)}


def _harness(
    message_id: str, value: dict[str, Any], time: dict[str, Any], _: Diagnostics, __: str
) -> list[Message]:
    """`synthetic`, `skill`, `system`: text OpenCode adds, as a 1.x synthetic text part."""
    return _user(
        message_id, time, [{"type": "text", "id": "text", "synthetic": True, "text": _text(value)}]
    )


def _shell(
    message_id: str, value: dict[str, Any], time: dict[str, Any], _: Diagnostics, __: str
) -> list[Message]:
    """`shell`: the command the user ran and its output (a string, or `{output, …}` in
    later rows), sent as "Shell command: <command>", a blank line, the output."""
    output = value.get("output")
    if isinstance(output, dict):
        output = output.get("output")
    text = (
        f"Shell command: {_text(value, 'command')}\n\n{output if isinstance(output, str) else ''}"
    )
    return _user(
        message_id, time, [{"type": "text", "id": "text", "synthetic": True, "text": text}]
    )


def _assistant(
    message_id: str, value: dict[str, Any], time: dict[str, Any], said: Diagnostics, source: str
) -> list[Message]:
    """`assistant`: one step, one request: its usage in a `step-finish` part (the 1.x
    one-step message) when the step ended with `tokens`; without them (aborted, failed,
    still running) the message is a request that failed, as in 1.x."""
    content = value.get("content")
    if not isinstance(content, list):
        raise _Unreadable("no content list")
    message = _assistant_info(message_id, value, time)
    parts: list[dict[str, Any]] = []
    for index, item in enumerate(content):
        parts += _item(item, index)
        for unknown in _unknown_output(item):
            said.warn(
                source,
                None,
                "unknown-block",
                f"message {message_id}: tool output item of type '{journal_name(unknown)}' "
                "not recognised (not read)",
            )
    retry = value.get("retry")
    if isinstance(retry, dict):
        parts.append({"type": "retry", "id": "retry", "attempt": retry.get("attempt")})
    if isinstance(value.get("tokens"), dict):
        finish = text_field(value, "finish")
        parts.append(
            {
                "type": "step-finish",
                "id": "finish",
                "reason": finish,
                "tokens": value["tokens"],
                "cost": value.get("cost"),
            }
        )
    return [(message, parts)]


def _assistant_info(message_id: str, value: dict[str, Any], time: dict[str, Any]) -> dict[str, Any]:
    model = value.get("model")
    model = model if isinstance(model, dict) else {}
    message: dict[str, Any] = {
        "role": "assistant",
        "id": message_id,
        "time": time,
        "modelID": text_field(model, "id"),
        "providerID": text_field(model, "providerID"),
        "agent": value.get("agent"),
        "cost": value.get("cost"),
        "tokens": value.get("tokens"),
    }
    error = value.get("error")
    if error is not None:
        name = next(
            (
                text_field(error, k)
                for k in ("name", "type", "_tag")
                if isinstance(error, dict) and text_field(error, k)
            ),
            None,
        )
        message["error"] = {"name": name or "error"}
        message[SENT_WHEN_FAILED] = True  # (2.x sends a failed message again)
    return message


def _item(item: object, index: int) -> list[dict[str, Any]]:
    """One `content[]` item as 1.x parts: text, reasoning, or a tool part (with a `file`
    part for each output item that is not text: seen, not measured)."""
    if not isinstance(item, dict):
        return [{"type": repr(type(item).__name__), "id": f"c{index}"}]
    kind = text_field(item, "type") or ""
    part_id = f"c{index}"
    if kind == "text":
        return [{"type": "text", "id": part_id, "text": item.get("text")}]
    if kind == "reasoning":
        opaque = item.get("providerMetadata") or item.get("state")
        return [
            {
                "type": "reasoning",
                "id": part_id,
                "text": item.get("text"),
                "metadata": opaque or None,
            }
        ]
    if kind != "tool":
        return [{**item, "id": part_id}]  # named as not recognised by opencode_session
    return _tool(item, part_id)


def _tool(item: dict[str, Any], part_id: str) -> list[dict[str, Any]]:
    raw = item.get("state")
    state = raw if isinstance(raw, dict) else {}
    status = text_field(state, "status") or ""
    arguments = state.get("input")
    if isinstance(arguments, str):  # still streaming: the JSON text so far
        with contextlib.suppress(ValueError):
            arguments = orjson.loads(arguments)
    content = state.get("content")
    items = content if isinstance(content, list) else []
    texts = [
        text_field(c, "text") or ""
        for c in items
        if isinstance(c, dict) and c.get("type") == "text"
    ]
    output = "\n".join(texts)
    if not texts:  # rows before the canonical tool results: `result` or `structured`
        result = state.get("result")
        result = result.get("value") if isinstance(result, dict) and "value" in result else result
        kept = result if result not in (None, "", {}) else state.get("structured")
        output = kept if isinstance(kept, str) else "" if kept in (None, {}) else json_text(kept)
    one: dict[str, Any] = {
        "status": {"streaming": "pending"}.get(status, status),
        "input": arguments,
    }
    if status == "completed":
        one["output"] = output
    elif status == "error":
        error = state.get("error")
        said = text_field(error, "message") if isinstance(error, dict) else error
        said = said if isinstance(said, str) else "" if error is None else json_text(error)
        one["error"] = "\n".join(t for t in (said, output) if t)
    metadata = state.get("metadata") or state.get("structured")
    if isinstance(metadata, dict) and metadata:
        # 2.x's `subagent` call names its child `sessionID`; 1.x's `task` call `sessionId`.
        child = metadata.get("sessionID")
        one["metadata"] = {"sessionId": child, **metadata} if isinstance(child, str) else metadata
    raw_time = item.get("time")
    times = raw_time if isinstance(raw_time, dict) else {}
    one["time"] = {
        "start": _ms(times.get("ran")) or _ms(times.get("created")),
        "end": _ms(times.get("completed")),
        "compacted": _ms(times.get("pruned")),
    }
    one["time"] = {k: v for k, v in one["time"].items() if v is not None}
    part = {
        "type": "tool",
        "id": part_id,
        "callID": text_field(item, "id"),
        "tool": text_field(item, "name"),
        "state": one,
    }
    unseen = [c for c in items if isinstance(c, dict) and c.get("type") in _SEEN_OUTPUT]
    return [part] + [{"type": "file", "id": f"{part_id}.{n}"} for n, _ in enumerate(unseen)]


# A tool's output items (`state.content[]`) besides text: a file or an image, seen but not
# measured (a `file` part each). Any other type is an `unknown-block` warning (not read).
_SEEN_OUTPUT = frozenset({"file", "image", "media"})


def _unknown_output(item: object) -> list[object]:
    """The types of a tool item's output items this reader does not know."""
    if not isinstance(item, dict) or item.get("type") != "tool":
        return []
    state = item.get("state")
    content = state.get("content") if isinstance(state, dict) else None
    return [
        c["type"] if isinstance(c, dict) and isinstance(c.get("type"), str) else "untyped"
        for c in (content if isinstance(content, list) else [])
        if not (isinstance(c, dict) and c.get("type") in _SEEN_OUTPUT | {"text"})
    ]


def _compaction(
    message_id: str,
    value: dict[str, Any],
    time: dict[str, Any],
    diagnostics: Diagnostics,
    _: str,
) -> list[Message]:
    """A `completed` compaction (or one without `status`: the first rows) as 1.x writes
    one: a user message asking for it (a `compaction` part), then the summary message
    (`summary: true`), its `summary` and `recent` text what the model gets from then on,
    its own usage (written from 2.0.x, #47974) the summarising request's, when there. A
    compaction still running or failed sends nothing: skipped."""
    status = value.get("status")
    if status not in (None, "completed"):
        diagnostics.skip(f"opencode:session_message/compaction ({_status(status)})")
        return []
    summary = _text(value, "summary")
    recent = value.get("recent")
    request = {"type": "compaction", "id": "compaction", "auto": value.get("reason") != "manual"}
    info = _assistant_info(message_id, value, {**time, "completed": time.get("updated")})
    info |= {"summary": True, "agent": "compaction"}
    parts: list[dict[str, Any]] = [{"type": "text", "id": "summary", "text": summary}]
    if isinstance(recent, str) and recent:
        parts.append({"type": "text", "id": "recent", "text": recent})
    tokens = value.get("tokens")
    parts.append(
        {
            "type": "step-finish",
            "id": "finish",
            "tokens": tokens if isinstance(tokens, dict) else None,
            "cost": value.get("cost"),
        }
    )
    return [*_user(f"{message_id}:request", time, [request]), (info, parts)]


def _status(status: object) -> str:
    return status if isinstance(status, str) and len(status) < 20 else "unknown status"


_Mapper = Callable[[str, dict[str, Any], dict[str, Any], Diagnostics, str], list[Message]]
_MAPPERS: dict[str, _Mapper] = {
    "user": _said,
    "assistant": _assistant,
    "synthetic": _harness,
    "skill": _harness,
    "system": _harness,
    "shell": _shell,
    "compaction": _compaction,
}
