"""When a Gemini CLI tool call ran and which response made it (gemini_timing.py): a call's
id holds the time the model produced it, its `timestamp` when it completed, and the
record it is in was written either at the stream's end or at the calls' completion, or
is a late record of the calls of the response before it (a notice came between).

Real cases: tp-tutor 0.39.1 (two cancelled shell calls written after "Request
cancelled."), entire-ab 0.23 (a shell call written after an update notice), entire-12
(tool-only responses written at their calls' completion), pomodoro (three responses'
calls merged into one record). Hand-made documents for the rules on their own."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters.common import timestamp_ns
from agent_profiler.adapters.gemini_timing import CREATED, STREAM_END, created_ns
from agent_profiler.model import Session
from rules_spy import raw_lines, sessions
from shared_paths import CORPUS, TESTS

DATA = TESTS / "data" / "journals" / "gemini-cli"
SHARED = CORPUS / "gemini-cli"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f"no shared corpus at {SHARED}")
LOG = DATA / "tp-tutor-0.39.1-jsonl/anthonyguera/chats/session-2026-04-24T23-16-c8b2cbd9.jsonl"
DOCUMENT = DATA / "entire-ab-2b9748b105-0_session.json"


def ns(text: str) -> int:
    value = timestamp_ns(text)
    assert value is not None
    return value


def _messages(path: Path) -> list[dict[str, Any]]:
    value = json.loads(path.read_text(encoding="utf-8"))["messages"]
    assert isinstance(value, list)
    return value


def _tool(session: Session, call_id: str) -> Any:
    return next(t for t in session.tool_calls if t.call_id == call_id)


def test_the_time_in_a_call_id_is_when_the_model_made_it() -> None:
    assert created_ns("run_shell_command-1768510330706-5580149e8442") == ns(
        "2026-01-15T20:52:10.706Z"
    )
    assert created_ns("run_shell_command_1777072733107_0") == ns("2026-04-24T23:18:53.107Z")
    assert created_ns("read_file__read_file_1777072733107_12") == ns("2026-04-24T23:18:53.107Z")
    assert created_ns("call_abc123") is None and created_ns(None) is None


def test_cancelled_calls_written_after_the_notice_are_the_previous_response_s() -> None:
    """tp-tutor: 9bb8ffa0 (23:18:53.124, text only) → "Request cancelled." → 1c3235be (no
    tokens, no text, the call created 23:18:53.107): no request at 23:20:44; the shell
    call ran from 9bb8ffa0's end until its cancel, 111.286 s (and 217.502 s for the
    second, 63496b73 → 8b8bb17e)."""
    (session,) = sessions(LOG)
    lines = [json.loads(line) for line in raw_lines(LOG) if line.strip()]
    assert not session.failed_requests and "requests_without_usage" not in dict(session.facts)
    assert len(session.responses) == 5 and not session.unmetered_responses
    for owner, late in ((15, 19), (22, 26)):
        call = lines[late - 1]["toolCalls"][0]
        tool = _tool(session, call["id"])
        assert tool.response_id == lines[owner - 1]["id"]
        assert (tool.start_ns, tool.end_ns) == (
            ns(lines[owner - 1]["timestamp"]),
            ns(call["timestamp"]),
        )
        assert (tool.is_error, tool.incomplete, tool.timing) == (True, False, STREAM_END)
    durations = [(t.end_ns - t.start_ns) / 1e9 for t in session.tool_calls if t.is_error]
    assert durations == [111.286, 217.502]


def test_a_call_written_after_an_update_notice_is_no_response_of_unknown_size() -> None:
    """entire-ab: e5a71c36 (20:52:10.706, text) → an update notice → 5b9afa41 (all-zero
    tokens, no text, its call created 20:52:10.706): the shell call is e5a71c36's and ran
    14.983 s; no response without usage."""
    messages = _messages(DOCUMENT)
    (session,) = sessions(DOCUMENT)
    assert len(session.responses) == 10 and not session.unmetered_responses
    call = messages[6]["toolCalls"][0]
    tool = _tool(session, call["id"])
    assert (tool.response_id, tool.start_ns, tool.end_ns) == (
        messages[4]["id"],
        ns(messages[4]["timestamp"]),
        ns(call["timestamp"]),
    )
    # The next request starts when that call completed, as before.
    after = next(r for r in session.responses if r.id == messages[7]["id"])
    assert after.start_ns == ns(call["timestamp"])


def test_a_usage_less_record_after_a_user_turn_is_still_a_request(tmp_path: Path) -> None:
    """entire-ab edited: a user turn between e5a71c36 and the call record (the calls can
    then not be e5a71c36's): the record stays a request of unknown size."""
    messages = copy.deepcopy(_messages(DOCUMENT)[:7])
    messages[5] = {**messages[0], "id": "typed", "timestamp": messages[5]["timestamp"]}
    value = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    value["messages"] = messages
    path = tmp_path / "session-edited.json"
    path.write_text(json.dumps(value), encoding="utf-8")
    (session,) = sessions(path)
    assert [r.id for r in session.unmetered_responses] == [messages[6]["id"]]


@needs_shared
def test_a_record_written_at_its_calls_completion_ends_when_they_were_made() -> None:
    """entire-12 (0.2x): b2136b82 and e8531023 hold no text; each was written when its
    call completed (02:09:21.386, 02:09:25.833), its call made 60 ms and 1.786 s before.
    The response ends, and the call starts, when the call was made."""
    path = SHARED / "entire-12-cbfeaa512b-0_session.json"
    messages = _messages(path)
    (session,) = sessions(path)
    for index, took in ((3, 0.06), (4, 1.786)):
        call = messages[index]["toolCalls"][0]
        made = created_ns(call["id"])
        response = next(r for r in session.responses if r.id == messages[index]["id"])
        tool = _tool(session, call["id"])
        assert response.end_ns == made == tool.start_ns
        assert (tool.end_ns - tool.start_ns) / 1e9 == took
        assert (tool.response_id, tool.timing) == (messages[index]["id"], CREATED)
    # A record written at its stream's end is unchanged (its call made before it).
    first = next(r for r in session.responses if r.id == messages[1]["id"])
    assert first.end_ns == ns(messages[1]["timestamp"])


@needs_shared
def test_calls_merged_from_later_responses_are_requests_of_their_own() -> None:
    """pomodoro: e5679916 (all-zero tokens, text) holds three write_file calls, each made
    after the one before completed: two more tool-only responses merged into it. They
    are requests of unknown size (13 measured + 3 unknown = 16), and each write ran for
    its own 17–46 ms, not 3.3 s and 11.3 s."""
    path = SHARED / "ai-sessions_gemini-cli-pomodoro-timer.json"
    messages = _messages(path)
    (session,) = sessions(path)
    record = messages[1]
    assert len(session.responses) == 13
    unknown = session.unmetered_responses
    assert [r.id for r in unknown] == [record["id"], f"{record['id']}#1", f"{record['id']}#2"]
    assert all(not r.usage_known and r.model == record["model"] for r in unknown)
    calls = record["toolCalls"]
    spans = [(r.start_ns, r.end_ns) for r in unknown[1:]]
    assert spans == [
        (ns(calls[0]["timestamp"]), created_ns(calls[1]["id"])),
        (ns(calls[1]["timestamp"]), created_ns(calls[2]["id"])),
    ]
    tools = [_tool(session, c["id"]) for c in calls]
    assert [t.response_id for t in tools] == [r.id for r in unknown]
    assert [round((t.end_ns - t.start_ns) / 1e6) for t in tools] == [45, 17, 16]
    assert [t.timing for t in tools] == [STREAM_END, CREATED, CREATED]
    # The next request starts when the last merged call completed.
    after = next(r for r in session.responses if r.id == messages[2]["id"])
    assert after.start_ns == ns(calls[2]["timestamp"])


# --------------------------------------------------------------------------- hand-made


HEADER = {"sessionId": "hand-made", "projectHash": "ab", "startTime": "2026-01-01T00:00:00Z"}
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z in ms


def _at(ms: int) -> str:
    seconds, rest = divmod(ms, 1000)
    return f"2026-01-01T00:{seconds // 60:02d}:{seconds % 60:02d}.{rest:03d}Z"


def _call(made: int, done: int, name: str = "read_file", call_id: str = "") -> dict[str, Any]:
    output = {"functionResponse": {"id": "x", "name": name, "response": {"output": "ok"}}}
    return {
        "id": call_id or f"{name}_{T0 + made}_0",
        "name": name,
        "args": {"path": "a"},
        "result": [output],
        "status": "success",
        "timestamp": _at(done),
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


def test_hand_made_late_record_merged_responses_and_ids_without_a_time(tmp_path: Path) -> None:
    notice = {"id": "n", "timestamp": _at(9_000), "type": "info", "content": "Request cancelled."}
    session = _session(
        tmp_path,
        [
            _gemini("g1", 2_000, "Reading.", [], 100),  # its call written late, below
            notice,
            _gemini("late", 9_500, "", [_call(1_990, 9_499)], None),
            # text at 10 s with a call made at 9.99 s (ran 1 s), then two merged
            # tool-only responses: calls made at 14 s and 20 s, after the one before ended
            _gemini(
                "g2",
                10_000,
                "More.",
                [_call(9_990, 11_000), _call(14_000, 14_500), _call(20_000, 20_100)],
                200,
            ),
            # written at its call's completion (25 s), the call made at 22 s
            _gemini("g3", 25_000, "", [_call(22_000, 25_000, "write_file")], 300),
            # a model-given id: no time, the record's time is the start, as before
            _gemini("g4", 30_000, "Done.", [_call(0, 31_000, call_id="call_given")], 400),
        ],
    )
    assert [r.id for r in session.responses] == ["g1", "g2", "g3", "g4"]
    assert [(r.id, r.start_ns, r.end_ns) for r in session.unmetered_responses] == [
        ("g2#1", ns(_at(11_000)), ns(_at(14_000))),
        ("g2#2", ns(_at(14_500)), ns(_at(20_000))),
    ]
    assert not session.failed_requests
    g3 = session.responses[2]
    assert (g3.start_ns, g3.end_ns) == (ns(_at(20_100)), ns(_at(22_000)))
    spans = [
        (
            t.response_id,
            (t.start_ns - ns(_at(0))) // 1_000_000,
            (t.end_ns - t.start_ns) // 1_000_000,
        )
        for t in session.tool_calls
    ]
    assert spans == [
        ("g1", 2_000, 7_499),  # from its response's end to its completion
        ("g2", 10_000, 1_000),
        ("g2#1", 14_000, 500),
        ("g2#2", 20_000, 100),
        ("g3", 22_000, 3_000),
        ("g4", 30_000, 1_000),
    ]
