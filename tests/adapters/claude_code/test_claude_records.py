"""Claude Code drift is loud (issue 28.2) and the counts are right (28.5): every record
type, `system` subtype and `attachment` type of every Claude Code journal we hold is in the
adapter's tables (claude_records.py), and the tool calls, prompts and requests of the
2.1.16x corpus journals equal a count made from the raw JSON without the adapter. The
planetfall journals are GPL-3.0: read from ../shared, skipped when absent."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters.claude_records import (
    ATTACHMENT_TYPES,
    RECORD_TYPES,
    STREAM_TYPES,
    SYSTEM_SUBTYPES,
)
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from shared_paths import CORPUS, SHARED_REASON, TESTS

HERE = TESTS / "data" / "journals" / "claude-code"
TRANSCRIPTS = CORPUS / "claude-code" / "transcripts"
NEW = [
    TRANSCRIPTS / "planetfall-39648afe5b-4_v2.1.179_queued-commands.jsonl",
    TRANSCRIPTS / "planetfall-68d6759acfe5-1_v2.1.165_api-errors_images.jsonl.gz",
]


def _journals() -> list[Path]:
    roots = [HERE, CORPUS / "claude-code"]
    found = {p for root in roots if root.is_dir() for p in root.rglob("*.jsonl*")}
    return sorted(p for p in found if p.name.endswith((".jsonl", ".jsonl.gz")))


def _records(path: Path) -> list[tuple[int, Any]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    out = []
    with opener(path, "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    out.append((number, json.loads(line)))
                except ValueError:
                    continue  # a damaged line is the reader's business, not the table's
    return out


def _kinds(path: Path) -> set[str]:
    """Every record kind of a journal as the tables name it, read with plain json."""
    kinds = set()
    for _, value in _records(path):
        if not isinstance(value, dict):
            continue
        kind = value.get("type")
        if "session_id" in value and "sessionId" not in value:  # stream-json
            kinds.add(
                "stream " + (f"system/{value.get('subtype')}" if kind == "system" else str(kind))
            )
        elif kind == "system":
            kinds.add(f"system/{value.get('subtype')}")
        elif kind == "attachment":
            kinds.add(f"attachment/{(value.get('attachment') or {}).get('type')}")
        else:
            kinds.add(str(kind))
    return kinds


def _known(kind: str) -> bool:
    if kind.startswith("stream "):
        return kind.removeprefix("stream ") in STREAM_TYPES
    if kind.startswith("system/"):
        return kind.removeprefix("system/") in SYSTEM_SUBTYPES
    if kind.startswith("attachment/"):
        return kind.removeprefix("attachment/") in ATTACHMENT_TYPES
    return kind in RECORD_TYPES


def test_every_record_kind_of_every_claude_journal_is_in_the_tables() -> None:
    journals = _journals()
    assert len(journals) >= 10
    unknown = {}
    for path in journals:
        for kind in _kinds(path):
            if not _known(kind):
                unknown.setdefault(kind, path.name)
    # `None`: a file of another harness with no `type` (Gemini CLI's) kept beside ours.
    unknown.pop("None", None)
    assert unknown == {}


@pytest.mark.skipif(not NEW[0].exists(), reason=SHARED_REASON)
def test_the_new_journals_read_with_nothing_unrecognised_and_mode_skipped() -> None:
    diagnostics = Diagnostics()
    load(NEW, diagnostics)
    assert diagnostics.unrecognised == {}
    assert diagnostics.skipped["claude:mode"] == 41
    assert diagnostics.skipped["claude:permission-mode"] == 41
    assert diagnostics.skipped["claude:ai-title"] == 41
    assert diagnostics.skipped["claude:attachment/command_permissions"] == 1


def test_every_row_says_why() -> None:
    for table in (RECORD_TYPES, SYSTEM_SUBTYPES, ATTACHMENT_TYPES, STREAM_TYPES):
        for kind, known in table.items():
            assert len(known.why) > 10, kind
    # attachments read into the context name their category; those that take context out
    # (claude_attachments._TAKING_OUT) add no item, and only they have none
    from agent_profiler.adapters.claude_attachments import _TAKING_OUT

    read = {kind for kind, k in ATTACHMENT_TYPES.items() if k.read}
    assert {kind for kind in read if ATTACHMENT_TYPES[kind].category is None} == set(_TAKING_OUT)


# --------------------------------------------------------------------------- independent counts

_HARNESS_TEXT = ("<", "[Request interrupted", "Base directory for this skill", "Caveat:")


def _raw_counts(path: Path) -> dict[str, int]:
    """Requests, tool calls and user prompts, counted from the raw records: a request is a
    message id with a non-zero usage (not `<synthetic>`), a tool call a tool_use id, a
    prompt a user record's typed text (not harness text, not a tool result) or a queued
    prompt (`attachment` queued_command, commandMode `prompt`)."""
    requests: set[str] = set()
    calls: set[str] = set()
    prompts = 0
    for _, r in _records(path):
        if not isinstance(r, dict) or r.get("isSidechain"):
            continue
        message = r.get("message") or {}
        if r.get("type") == "assistant":
            usage = message.get("usage") or {}
            if message.get("model") != "<synthetic>" and any(
                isinstance(v, int) and v > 0 for v in usage.values()
            ):
                requests.add(message["id"])
            calls |= {
                b["id"]
                for b in message.get("content") or []
                if isinstance(b, dict) and b.get("type") in {"tool_use", "server_tool_use"}
            }
        elif r.get("type") == "user" and not r.get("isMeta") and not r.get("isCompactSummary"):
            content = message.get("content")
            texts = (
                [content]
                if isinstance(content, str)
                else [b.get("text", "") for b in content or [] if b.get("type") == "text"]
            )
            prompts += any(t.strip() and not t.lstrip().startswith(_HARNESS_TEXT) for t in texts)
        elif r.get("type") == "attachment":
            attachment = r.get("attachment") or {}
            prompts += (
                attachment.get("type") == "queued_command"
                and attachment.get("commandMode") == "prompt"
            )
    return {"requests": len(requests), "tool_calls": len(calls), "prompts": prompts}


@pytest.mark.skipif(not NEW[0].exists(), reason=SHARED_REASON)
@pytest.mark.parametrize("path", NEW, ids=["2.1.179", "2.1.165"])
def test_counts_equal_an_independent_count_of_the_raw_journal(
    path: Path, export_trace: Any
) -> None:
    raw = _raw_counts(path)
    exported = export_trace(path)
    kinds = Counter(s.kind for s in exported.view.slices)
    assert {
        "requests": kinds["assistant-message"],
        "tool_calls": kinds["tool-execution"],
        "prompts": kinds["prompt"],
    } == raw
    # the trace names how hidden content was sized: on the capture and on each such change
    (profile,) = [s for s in exported.view.slices if s.name == "profile (1)"]
    assert set(profile.args["estimate_methods"]) == {"image-pixels", "output-tokens-minus-visible"}
    methods = {
        change["method"]
        for s in exported.view.slices
        for change in (s.args.get("context") or {}).get("changes", [])
        if "method" in change
    }
    assert methods == {"image-pixels", "output-tokens-minus-visible"}
