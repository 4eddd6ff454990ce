"""Tests that kill the survivors of `gemini_timing.py`'s sample (mutation round 3,
fourteenth session; tests/mutation-survivors.md): hand-made Gemini CLI documents (the
corpus has no journal of these cases), in the shape of `test_gemini_late_calls.py`'s."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_profiler.adapters.common import timestamp_ns
from agent_profiler.adapters.gemini_timing import CREATED, STREAM_END
from agent_profiler.model import Session
from rules_spy import sessions

HEADER = {"sessionId": "hand-made", "projectHash": "ab", "startTime": "2026-01-01T00:00:00Z"}
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z in ms


def _at(ms: int) -> str:
    seconds, rest = divmod(ms, 1000)
    return f"2026-01-01T00:{seconds // 60:02d}:{seconds % 60:02d}.{rest:03d}Z"


def ns(text: str) -> int:
    value = timestamp_ns(text)
    assert value is not None
    return value


def _call(made: int, done: str, name: str = "read_file", call_id: str = "") -> dict[str, Any]:
    output = {"functionResponse": {"id": "x", "name": name, "response": {"output": "ok"}}}
    return {
        "id": call_id or f"{name}_{T0 + made}_0",
        "name": name,
        "args": {"path": "a"},
        "result": [output],
        "status": "success",
        "timestamp": done,
    }


def _gemini(mid: str, at: int, text: str, calls: list[Any], tokens: int | None) -> dict[str, Any]:
    record: dict[str, Any] = {"id": mid, "timestamp": _at(at), "type": "gemini", "content": text}
    record |= {"model": "gemini-2.5-pro", "toolCalls": calls}
    if tokens is not None:
        record["tokens"] = {"input": tokens, "output": 5, "cached": 0, "thoughts": 0}
    return record


def _session(tmp_path: Path, messages: list[dict[str, Any]]) -> Session:
    user = {"id": "u", "timestamp": _at(0), "type": "user", "content": "go"}
    path = tmp_path / "session-2026-01-01T00-00-handmade.json"
    path.write_text(json.dumps({**HEADER, "messages": [user, *messages]}), encoding="utf-8")
    (session,) = sessions(path)
    return session


def _starts(session: Session) -> list[tuple[str, int, str]]:
    return [
        (t.response_id, (t.start_ns - ns(_at(0))) // 1_000_000, t.timing)
        for t in session.tool_calls
    ]


def test_a_completion_days_before_its_record_is_not_believed(tmp_path: Path) -> None:
    """A call with a model-given id (no time in it) completed, by its `timestamp`, three
    days before its record: not believed, so it does not end the response's first calls,
    and a call made after the record is not taken for a later response merged into it."""
    calls = [
        _call(0, "2025-12-29T00:00:00.000Z", call_id="call_given"),
        _call(14_000, _at(14_500)),
    ]
    session = _session(tmp_path, [_gemini("g1", 10_000, "Reading.", calls, 100)])
    assert [r.id for r in session.responses] == ["g1"]
    assert session.unmetered_responses == ()
    assert _starts(session) == [("g1", 10_000, STREAM_END), ("g1", 10_000, STREAM_END)]


def test_parallel_calls_of_a_record_written_at_their_completion_start_together(
    tmp_path: Path,
) -> None:
    """A tool-only response with two calls made 100 ms apart (the second before the first
    completed: one response), its record written when the last completed: the response
    ended, and both calls started, when the last was made."""
    calls = [_call(22_000, _at(24_000)), _call(22_100, _at(25_000))]
    session = _session(
        tmp_path, [_gemini("g1", 2_000, "Reading.", [], 100), _gemini("g2", 25_000, "", calls, 300)]
    )
    g2 = session.responses[1]
    assert g2.end_ns == ns(_at(22_100))
    assert _starts(session) == [("g2", 22_100, CREATED), ("g2", 22_100, CREATED)]


def test_a_call_only_record_with_usage_after_a_notice_is_a_request_of_its_own(
    tmp_path: Path,
) -> None:
    """As the late record of the response before (no text, its call made while that
    response ran, a notice between), but with usage of its own: a request, not late calls."""
    notice = {"id": "n", "timestamp": _at(9_000), "type": "info", "content": "Request cancelled."}
    late = _gemini("late", 9_500, "", [_call(1_990, _at(9_499))], None)
    late["tokens"] = {"input": 120, "output": 0, "cached": 0, "thoughts": 0}
    session = _session(tmp_path, [_gemini("g1", 2_000, "Reading.", [], 100), notice, late])
    assert [r.id for r in session.responses] == ["g1", "late"]
    assert [t.response_id for t in session.tool_calls] == ["late"]
