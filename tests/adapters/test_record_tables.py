"""Every record type of every corpus journal is in its adapter's table (issue 28, point 2).

Each adapter names every record type and sub-type it knows, as read (into which category)
or skipped on purpose (why it is not model input). This test reads every corpus journal of
Codex, Pi, Gemini CLI, OpenCode and Muse Code with plain json (or sqlite3), independently of
the adapters, and fails on any type outside its table: a new harness version's record type
must be classified by a person, never fall through. It also reads each journal with the
tool and checks that nothing was reported as not recognised. Journals are read from the
shared corpus (some GPL-3.0: never copied into tests/data); skipped when absent."""

from __future__ import annotations

import gzip
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters import (
    codex_records,
    gemini_recording,
    gemini_session,
    muse_records,
    opencode_session,
    pi_records,
)
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from shared_paths import CORPUS, SHARED_REASON

Found = list[tuple[str, str]]  # (table name, type) per record


def _open(path: Path) -> str:
    if path.name.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            return handle.read()
    return path.read_text(encoding="utf-8")


def _jsonl(path: Path) -> Iterator[Any]:
    for line in _open(path).splitlines():
        if line.strip():
            try:
                yield json.loads(line)
            except ValueError:
                continue


def _files(harness: str) -> list[Path]:
    root = CORPUS / harness
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.endswith(".md"))


# -- the independent readers ----------------------------------------------------------------


def _codex(path: Path) -> Found:
    found: Found = []
    for value in _jsonl(path):
        kind, payload = value.get("type"), value.get("payload") or {}
        found.append(("LINE_TYPES", kind))
        if kind == "response_item":
            found.append(("RESPONSE_ITEM_TYPES", payload.get("type")))
        elif kind == "event_msg":
            found.append(("EVENT_MSG_TYPES", payload.get("type")))
        elif kind == "compacted":
            for item in payload.get("replacement_history") or []:
                found.append(("RESPONSE_ITEM_TYPES", item.get("type")))
    return found


def _pi(path: Path) -> Found:
    found: Found = []
    for value in _jsonl(path):
        found.append(("ENTRY_TYPES", value.get("type")))
        if value.get("type") == "message":
            found.append(("MESSAGE_ROLES", (value.get("message") or {}).get("role")))
    return found


def _gemini_part(part: dict[str, Any]) -> str:
    if "text" in part:
        return "thought" if part.get("thought") else "text"
    known = [key for key in gemini_recording.PART_KINDS if key in part]
    return known[0] if known else "+".join(sorted(part))


def _gemini(path: Path) -> Found:
    text = _open(path)
    try:
        document = json.loads(text)
        messages = document.get("messages", []) if isinstance(document, dict) else []
    except ValueError:  # a JSONL log: a header, messages, `$set` updates
        messages = []
        for value in _jsonl(path):
            if "$set" in value:
                messages += (value["$set"] or {}).get("messages") or []
            elif "type" in value:
                messages.append(value)
    if not messages:
        return []  # logs.json (a prompt log) or a header-only log
    found: Found = []
    for message in messages:
        found.append(("MESSAGE_TYPES", message.get("type")))
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict):
                found.append(("PART_KINDS", _gemini_part(part)))
    return found


def _opencode_messages(path: Path) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    if path.name.endswith(".db"):
        # immutable: a read-only WAL reader would create -wal/-shm beside the corpus file
        database = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
        try:
            parts: dict[str, list[dict[str, Any]]] = {}
            for message_id, data in database.execute("select message_id, data from part"):
                parts.setdefault(message_id, []).append(json.loads(data))
            for message_id, data in database.execute("select id, data from message"):
                yield json.loads(data), parts.get(message_id, [])
        finally:
            database.close()
        return
    document = json.loads(_open(path))
    for message in document.get("messages", []):
        yield message.get("info") or {}, message.get("parts") or []


def _opencode(path: Path) -> Found:
    found: Found = []
    for info, parts in _opencode_messages(path):
        found.append(("MESSAGE_ROLES", info.get("role")))
        found += [("PART_TYPES", part.get("type")) for part in parts]
    return found


def _muse_payload(table: str, payload_type: str, payload: dict[str, Any]) -> Found:
    if payload_type != "runtime.session":
        if any(payload_type.startswith(p) for p in muse_records.PAYLOAD_FAMILIES):
            return []
        return [(table, payload_type)]
    kind = payload.get("kind")
    found: Found = [("RUNTIME_SESSION_KINDS", kind)]
    if kind == "run":
        found.append(("RUN_EVENT_KINDS", (payload.get("event") or {}).get("kind")))
    return found


def _muse(path: Path) -> Found:
    if not path.name.endswith(".jsonl"):
        return []  # an export of events without envelopes: refused by the tool, with a reason
    found: Found = []
    for value in _jsonl(path):
        envelopes = [value]
        if "retained_frame" in value:
            envelopes = [json.loads(c["record_json"]) for c in value.get("children") or []]
        for envelope in envelopes:
            if isinstance(envelope.get("payload_type"), str):
                found += _muse_payload(
                    "PAYLOAD_TYPES", envelope["payload_type"], envelope.get("payload") or {}
                )
    return found


HARNESSES = {
    "codex": (_codex, codex_records),
    "pi": (_pi, pi_records),
    "gemini-cli": (_gemini, gemini_session),
    "opencode": (_opencode, opencode_session),
    "muse": (_muse, muse_records),
}
TABLE_OWNER = {"PART_KINDS": gemini_recording}
CASES = [(harness, path) for harness in HARNESSES for path in _files(harness)]


def _table(module: object, name: str) -> dict[str, tuple[str, str]]:
    table = getattr(TABLE_OWNER.get(name, module), name)
    assert isinstance(table, dict)
    return table


@pytest.mark.skipif(not CASES, reason=SHARED_REASON)
@pytest.mark.parametrize(("harness", "path"), CASES, ids=[f"{h}:{p.name[:40]}" for h, p in CASES])
def test_every_record_type_of_a_corpus_journal_is_in_its_table(harness: str, path: Path) -> None:
    scan, module = HARNESSES[harness]
    found = scan(path)
    outside = sorted(
        {f"{name}: {kind!r}" for name, kind in found if kind not in _table(module, name)}
    )
    assert outside == [], f"{path.name}: record types no table names"
    diagnostics = Diagnostics()
    load([path], diagnostics)
    assert dict(diagnostics.unrecognised) == {}


@pytest.mark.parametrize("harness", list(HARNESSES))
def test_each_table_says_read_or_skipped_and_why(harness: str) -> None:
    """Every entry is (read | skipped on purpose, a reason): nothing half-classified."""
    module = HARNESSES[harness][1]
    tables = [
        getattr(module, name)
        for name in dir(module)
        if name.isupper()
        and isinstance(getattr(module, name), dict)
        and name.endswith(("_TYPES", "_ROLES", "_KINDS", "_FAMILIES"))
    ]
    if harness == "gemini-cli":
        tables.append(gemini_recording.PART_KINDS)
    assert tables
    for table in tables:
        for kind, entry in table.items():
            assert isinstance(kind, str) and kind
            how, why = entry
            assert how in {"read", "skipped on purpose"} and len(why) > 10, (kind, entry)
