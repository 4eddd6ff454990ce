"""A Claude Code transcript that starts mid-conversation (its first record's parent is in
no record of the file: the end of a turn whose start is elsewhere) had its whole earlier
history named "System prompt and tool schemas, inferred": 142,451 tokens of the 2.1.14
excerpt's first request, of which the journal explains 3. It is said, and its Unattributed
keeps its own name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.model import MID_CONVERSATION
from agent_profiler.views import HEAD_LABEL, starts_mid_conversation, unattributed_is_head
from shared_paths import CORPUS, TESTS

EXCERPT = TESTS / "data" / "journals" / "claude-code"
EXCERPT = EXCERPT / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"
SPOTTER = CORPUS / "claude-code" / "transcripts" / "spotter-2.1.39-subagents-compaction"
SESSION = "0d5e7a7a-1111-4222-8333-444455556666"
runner = CliRunner()


def _record(uuid: str, parent: str | None, kind: str = "user", **more: Any) -> dict[str, Any]:
    record = {"type": kind, "sessionId": SESSION, "uuid": uuid, "parentUuid": parent}
    record |= {"timestamp": "2026-06-05T15:13:20.000Z"}
    if kind == "user":
        record["message"] = {"role": "user", "content": "hello"}
    return record | more


def _session(tmp_path: Path, *records: dict[str, Any]) -> Any:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    (session,) = load([path], Diagnostics()).sessions
    return session


def test_the_excerpt_that_starts_mid_turn_is_said_to() -> None:
    (session,) = load([EXCERPT], Diagnostics()).sessions
    assert starts_mid_conversation(session) and not unattributed_is_head(session)
    assert dict(session.facts)[MID_CONVERSATION].startswith("its first record's parent")
    rows = orjson.loads(runner.invoke(app, ["summary", str(EXCERPT), "--json"]).stdout)
    assert rows[0]["starts_mid_conversation"] is True and rows[0]["inferred_head"] is False
    text = runner.invoke(app, ["summary", str(EXCERPT)]).stdout
    assert "Unattributed 66%" in text and HEAD_LABEL not in text
    assert (
        ": the journal starts mid-conversation (its first record's parent is not in the journal)"
        in text
    )


@pytest.mark.skipif(not SPOTTER.is_dir(), reason="../shared/corpus is absent")
def test_a_journal_whose_first_read_record_hangs_from_a_skipped_one_starts_at_its_root() -> None:
    """spotter's first user record's parent is a `progress` record (skipped, not read):
    the file starts at its root all the same."""
    sessions = load([SPOTTER], Diagnostics()).sessions
    assert sessions and not any(starts_mid_conversation(s) for s in sessions)


@pytest.mark.parametrize(
    ("records", "expected"),
    [
        ([_record("a", None), _record("b", "a")], False),  # a root
        ([_record("b", "a"), _record("c", "b")], True),  # a's record is not in the file
        ([_record("b", "a"), _record("a", None)], False),  # it is, later (a copy's order)
        ([{"type": "summary", "summary": "s", "leafUuid": "z"}, _record("b", "a")], True),
        ([_record("b", 7), _record("c", "b")], False),  # no uuid at all: nothing is said
    ],
)
def test_the_first_records_parent_decides(
    tmp_path: Path, records: list[dict[str, Any]], expected: bool
) -> None:
    assert starts_mid_conversation(_session(tmp_path, *records)) is expected
