"""A Claude Code session's span covers the records the reader reads no further whose time is
the session's (`claude_records.TIMED`: hook and tool progress, queued prompts). Claude Code
2.1.39 wrote a SessionStart hook's run as `progress` records, 2.1.179 as an `attachment`
(read): the same event started the span in one version and not in the other. Nothing but the
span moves: prompts, responses and tool calls keep their times."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters.common import timestamp_ns
from agent_profiler.views import session_span
from rules_spy import sessions, write
from samples import CLAUDE_E4B, SPOTTER_TRANSCRIPT
from shared_paths import CORPUS, SHARED_REASON

SPOTTER = SPOTTER_TRANSCRIPT
E4B = CLAUDE_E4B
P179 = (
    CORPUS
    / "claude-code"
    / "transcripts"
    / "planetfall-39648afe5b-4_v2.1.179_queued-commands.jsonl"
)
SESSION = "11111111-2222-4333-8444-555555555555"


def _ns(text: str) -> int:
    ts = timestamp_ns(text)
    assert ts is not None
    return ts


def test_spotter_starts_at_its_session_start_hook(export_trace: Any) -> None:
    """Spotter 2.1.39: three SessionStart `progress/hook_progress` records at 20:31:53.375,
    the first prompt 4 min 52 s later. The span started at the prompt."""
    main = next(s for s in sessions(SPOTTER) if s.parent_session is None)
    start, _ = session_span(main)
    assert start == main.start_ns == _ns("2026-02-11T20:31:53.375Z")
    # the prompt, and so its slice, stays where it was
    assert main.prompts[0].start_ns == _ns("2026-02-11T20:36:45.618Z")
    view = export_trace(SPOTTER).view
    profiles = [view.profile_of(c.uuid) for c in view.captures()]
    (profile,) = [p for p in profiles if p and p.args["session_id"] == main.session_id]
    assert profile.ts == start
    capture = view.capture_of(profile.track_uuid)
    prompts = [s for s in view.slices_named("prompt") if view.capture_of(s.track_uuid) == capture]
    assert min(s.ts for s in prompts) == main.prompts[0].start_ns > profile.ts


def test_entire_4b_ends_after_its_stop_hooks() -> None:
    """2.1.14: the last records are the Stop hooks' `progress`, 55 ms after the last one read."""
    (session,) = sessions(E4B)
    assert session.end_ns == _ns("2026-01-22T02:10:30.001Z")
    last_read = max(r.end_ns for r in session.responses)
    assert last_read < session.end_ns


@pytest.mark.skipif(not P179.exists(), reason=SHARED_REASON)
def test_a_session_start_hook_starts_the_span_in_every_version() -> None:
    """2.1.179 writes the SessionStart hook as an `attachment` (hook_success), read: the span
    started there already, as it now does for 2.1.39's `progress` records."""
    (session,) = sessions(P179)
    assert session.start_ns == _ns("2026-06-17T17:01:38.263Z") < session.prompts[0].start_ns


def _record(kind: str, time: str, number: int, **extra: Any) -> dict[str, Any]:
    return {
        "sessionId": SESSION,
        "version": "2.1.39",
        "cwd": "/home/USER/demo",
        "isSidechain": False,
        "type": kind,
        "uuid": f"r{number}",
        "parentUuid": f"r{number - 1}" if number else None,
        "timestamp": time,
        **extra,
    }


def _journal(tmp_path: Path, before: list[dict[str, Any]], after: list[dict[str, Any]]) -> Path:
    """A prompt at 10:00:00, a response at 10:00:02 asking for a tool that never returns,
    with `before` and `after` around them."""
    prompt = _record(
        "user", "2026-01-01T10:00:00.000Z", 10, message={"role": "user", "content": "hi"}
    )
    usage = {"input_tokens": 3, "cache_read_input_tokens": 1000, "output_tokens": 5}
    message = {
        "model": "claude-sonnet-4-5",
        "id": "msg_A",
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
        ],
        "stop_reason": "tool_use",
        "usage": usage,
    }
    response = _record("assistant", "2026-01-01T10:00:02.000Z", 11, message=message)
    return write(tmp_path, [*before, prompt, response, *after])


def _hook(time: str, number: int) -> dict[str, Any]:
    return _record("progress", time, number, data={"type": "hook_progress", "hookEvent": "Stop"})


def test_records_read_no_further_widen_the_span_and_move_nothing_else(tmp_path: Path) -> None:
    """A SessionStart hook's progress 5 minutes before the prompt, a prompt queued a minute
    after the last record read: the span covers both; the prompt, the response and the tool
    call that never returned (it ends at the last record read) stay where they were."""
    queued = _record("queue-operation", "2026-01-01T10:01:00.000Z", 12, operation="enqueue")
    path = _journal(tmp_path, [_hook("2026-01-01T09:55:00.000Z", 1)], [queued])
    (session,) = sessions(path)
    assert session_span(session) == (
        _ns("2026-01-01T09:55:00.000Z"),
        _ns("2026-01-01T10:01:00.000Z"),
    )
    assert session.prompts[0].start_ns == _ns("2026-01-01T10:00:00.000Z")
    (response,) = session.responses
    assert response.start_ns == _ns("2026-01-01T10:00:00.000Z")
    (call,) = session.tool_calls
    assert call.incomplete and call.end_ns == _ns("2026-01-01T10:00:02.000Z")


def test_an_outlier_time_on_a_record_read_no_further_does_not_stretch_the_span(
    tmp_path: Path,
) -> None:
    """The clock's outlier rule judges these times too: before 2000, or a year and more after
    the record before it, is not a time; a day back from the first records is not either."""
    for first, last in [
        ("1970-01-01T00:00:00.000Z", "2099-01-01T00:00:00.000Z"),
        ("2025-12-30T10:00:00.000Z", "2027-06-01T00:00:00.000Z"),
    ]:
        path = _journal(tmp_path, [_hook(first, 1)], [_hook(last, 12)])
        (session,) = sessions(path)
        assert session_span(session) == (
            _ns("2026-01-01T10:00:00.000Z"),
            _ns("2026-01-01T10:00:02.000Z"),
        ), (first, last)


def test_only_records_whose_time_is_the_sessions_widen_it(tmp_path: Path) -> None:
    """UI state (a title, the input mode) may carry a time, and a `summary` is written by a
    later session: none of them is the session's time."""
    before = [
        _record("ai-title", "2026-01-01T09:00:00.000Z", 1),
        _record("summary", "2026-01-01T09:01:00.000Z", 2),
    ]
    after = [_record("mode", "2026-01-01T11:00:00.000Z", 12)]
    (session,) = sessions(_journal(tmp_path, before, after))
    assert session_span(session) == (
        _ns("2026-01-01T10:00:00.000Z"),
        _ns("2026-01-01T10:00:02.000Z"),
    )
