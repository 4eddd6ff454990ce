"""A Claude Code tool result written before its call: 2.1.165 wrote the `user` record of a
Read's result the line before the `assistant` record of its tool_use (35 ms apart). The result
is matched to its call by `tool_use_id` whatever the order: the call is complete, ends at its
result, and the result is in context (linked to the call) from the next request on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_profiler.adapters.common import timestamp_ns
from agent_profiler.model import Category, ChangeKind, SourceKind
from samples import CLAUDE_SMALL, read, read_single
from shared_paths import CORPUS, SHARED_REASON

CALL = "toolu_read2"  # small.jsonl: the Read whose tool_use is line a3, its result line u2
# Lines 252–253: the result of the Read of PLAN.md, then its tool_use.
PLANETFALL = (
    CORPUS
    / "claude-code"
    / "transcripts"
    / "planetfall-68d6759acfe5-1_v2.1.165_api-errors_images.jsonl.gz"
)


def _journal(tmp_path: Path, result_time: str | None = None, call: bool = True) -> Path:
    """small.jsonl with the result line (u2) moved before its call's line (a3); with
    `result_time`, the result stamped then; without `call`, the call's line left out."""
    records = [json.loads(line) for line in CLAUDE_SMALL.read_text().splitlines()]
    uuids = [r.get("uuid") for r in records]
    result = records.pop(uuids.index("u2"))
    if result_time is not None:
        result["timestamp"] = result_time
    records.insert(uuids.index("a3"), result)
    if not call:
        records = [r for r in records if r.get("uuid") != "a3"]
    path = tmp_path / "early-result.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _ns(stamp: str) -> int:
    """A time of the hand-made journal (all on 2026-01-01 10:00 UTC) in ns."""
    ns = timestamp_ns(f"2026-01-01T10:00:{stamp}Z")
    assert ns is not None
    return ns


@pytest.mark.parametrize(
    ("result_time", "end"),
    [
        (None, "03.000"),  # the result's own time (after the call's start)
        # Stamped before its call: the call ends where it starts, never before.
        ("2026-01-01T10:00:02.600Z", "02.700"),
    ],
)
def test_result_before_its_call_completes_the_call(
    tmp_path: Path, result_time: str | None, end: str
) -> None:
    ordinary, _ = read_single(CLAUDE_SMALL)
    session, diagnostics = read_single(_journal(tmp_path, result_time))
    (call,) = [t for t in session.tool_calls if t.call_id == CALL]
    (expected,) = [t for t in ordinary.tool_calls if t.call_id == CALL]
    assert not call.incomplete
    assert not session.incomplete
    assert call.result_chars == expected.result_chars > 0
    assert call.start_ns == _ns("02.700")
    assert call.end_ns == _ns(end)
    assert diagnostics.warnings == []
    # The result's item enters at the request after it (msg_B), as an ordinary result
    # does, in Tool results and linked to its call.
    added = {
        snapshot.anchor_id: [c for c in snapshot.changes if c.id == f"result:{CALL}"]
        for snapshot in session.snapshots
    }
    assert added["msg_A"] == []
    (change,) = added["msg_B"]
    assert change.change is ChangeKind.ADDED
    assert change.category is Category.RESULTS
    assert change.source_id == CALL
    assert change.source_kind is SourceKind.TOOL
    assert change.chars == expected.result_chars


def test_result_whose_call_never_comes_counts_in_context(tmp_path: Path) -> None:
    """As before: a result without its call (a journal that starts mid-turn) is in
    context, makes no tool call, and leaves no call open."""
    session, _ = read_single(_journal(tmp_path, call=False))
    assert CALL not in {t.call_id for t in session.tool_calls}
    assert not session.incomplete
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == "msg_B"]
    assert f"result:{CALL}" in {c.id for c in snapshot.changes}


@pytest.mark.skipif(not PLANETFALL.exists(), reason=SHARED_REASON)
def test_corpus_read_of_plan_written_after_its_result() -> None:
    sessions, _ = read(PLANETFALL)
    (read_plan,) = [
        t for s in sessions for t in s.tool_calls if t.call_id.startswith("toolu_0179K5km")
    ]
    assert read_plan.name == "Read"
    assert not read_plan.incomplete
    assert read_plan.result_chars > 0
    # It ends at its result, 35 ms after it started (not at the session's end, 5.5 h on).
    assert read_plan.end_ns - read_plan.start_ns == 35_000_000
