"""Every category rule of the Gemini CLI adapter, pinned on real recordings (copies in
tests/data/journals/gemini-cli, the rest of the corpus in ../shared): a ≤0.38 JSON document
(entire-ab, gemini-2.5-flash, embedded tool results, an all-zero `tokens` record), the 0.39.1
JSONL log (tp-tutor, repeated ids, cancelled requests), the ≥0.44 `<session_context>` turn
(damini-ai a2a) and the 0.37.1 nested subagents (expenses-tracker). Cases the corpus lacks
(`functionResponse` user turns, media parts, `API Error` notices, compression notices, Gemma
models, `agentId` links) are real records edited, and each test says so."""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters import gemini_cli
from agent_profiler.adapters.common import MS, preview, timestamp_ns
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.model import Category, ChangeKind, Harness, Session, SourceKind
from rules_spy import by_id, excerpt, raw_lines, record, sessions, spy, write
from samples import read
from shared_paths import CORPUS, TESTS

DATA = TESTS / "data" / "journals" / "gemini-cli"
SHARED = CORPUS / "gemini-cli"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f"no shared corpus at {SHARED}")
DOCUMENT = DATA / "entire-ab-2b9748b105-0_session.json"
LOG = DATA / "tp-tutor-0.39.1-jsonl/anthonyguera/chats/session-2026-04-24T23-16-c8b2cbd9.jsonl"
TREE = DATA / "expenses-tracker-0.37.1-subagents/agunginsani/chats"
A2A = SHARED / "damini-ai-a2a-jsonl/m09-tapan/chats"
CONTEXT_TURN = A2A / "session-2026-07-05T12-27-a2a-serv.jsonl"

PR, AS, RE, EN, RU, SU = (
    Category.PROMPTS,
    Category.ASSISTANT,
    Category.RESULTS,
    Category.ENVIRONMENT,
    Category.RULES,
    Category.SUMMARIES,
)


def _doc(path: Path = DOCUMENT) -> dict[str, Any]:
    value = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(value, dict)
    return value


def _messages(path: Path = DOCUMENT) -> list[dict[str, Any]]:
    messages = _doc(path)["messages"]
    assert isinstance(messages, list)
    return messages


def document(
    tmp_path: Path,
    messages: list[dict[str, Any]],
    source: Path = DOCUMENT,
    name: str = "session-edited.json",
    **header: Any,
) -> Path:
    """A pretty-printed session document: the real header of `source`, these messages."""
    value = {k: v for k, v in _doc(source).items() if k != "messages"}
    value.update(header)
    value["messages"] = messages
    out = tmp_path / name
    out.write_text(json.dumps(value, indent=2), encoding="utf-8")
    return out


def ns(text: str) -> int:
    value = timestamp_ns(text)
    assert value is not None
    return value


def _output(call: dict[str, Any]) -> str:
    output = call["result"][0]["functionResponse"]["response"]["output"]
    assert isinstance(output, str)
    return output


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --------------------------------------------------------------------------- items


def test_prompt_answer_call_and_result_of_a_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """entire-ab: the typed prompt (string content), the first answer, its write_file call
    and the call's embedded result, each its own item with its own source."""
    messages = _messages()
    added = spy(monkeypatch)
    (session,) = sessions(document(tmp_path, messages[:3]))
    items = by_id(added)
    user, first = messages[0], messages[1]
    got = items[f"{user['id']}:0"]
    assert (got.category, got.label, got.chars, got.source_kind) == (
        PR,
        "User prompt",
        len(user["content"]),
        SourceKind.PROMPT,
    )
    got = items[f"{first['id']}:text"]
    assert (got.category, got.label, got.chars) == (AS, "Assistant text", len(first["content"]))
    assert (got.source_id, got.source_kind) == (first["id"], SourceKind.RESPONSE)
    call = first["toolCalls"][0]
    got = items[f"call:{call['id']}"]
    assert (got.category, got.label, got.source_id, got.source_kind) == (
        AS,
        "Tool arguments",
        call["id"],
        SourceKind.TOOL,
    )
    assert got.chars == len(call["name"]) + len(_compact(call["args"]))
    got = items[f"result:{call['id']}"]
    assert (got.category, got.label, got.chars, got.source_id) == (
        RE,
        "Tool result",
        len(_output(call)),
        call["id"],
    )
    # Thought summaries are not history: no item for them.
    assert not [a for a in added if "thought" in a.id.lower()]
    # The prompt is the turn's: its size, its preview, its responses.
    (prompt,) = session.prompts
    assert (prompt.id, prompt.start_ns, prompt.chars, prompt.source) == (
        user["id"],
        ns(user["timestamp"]),
        len(user["content"]),
        "user",
    )
    assert prompt.preview == preview(user["content"])
    assert [r.prompt_id for r in session.responses] == [user["id"], user["id"]]


def test_a_request_runs_from_the_record_before_it_or_its_first_thought(tmp_path: Path) -> None:
    """A `gemini` record is dated when the response ended; the request began at the record
    before it, or at its first thought when that streamed in earlier (hand-moved here: in
    the file the thoughts come after the user turn)."""
    messages = _messages()
    (session,) = sessions(document(tmp_path, messages[:3]))
    first, second = session.responses
    assert (first.start_ns, first.end_ns) == (
        ns(messages[0]["timestamp"]),
        ns(messages[1]["timestamp"]),
    )
    # The second request starts when the first call completed (the record before it ended
    # earlier): the call's completion is the last thing the recording saw.
    call_end = ns(messages[1]["toolCalls"][0]["timestamp"])
    assert (second.start_ns, second.end_ns) == (call_end, ns(messages[2]["timestamp"]))
    edited = copy.deepcopy(messages[:3])
    early = "2026-01-15T20:51:48.000Z"  # before the user turn (20:51:48.582Z)
    edited[1]["thoughts"][0]["timestamp"] = early
    edited[2]["thoughts"] = [{"subject": "s", "timestamp": "2099-01-01T00:00:00Z"}]
    (moved,) = sessions(document(tmp_path, edited, name="session-thought.json"))
    assert moved.responses[0].start_ns == ns(early)
    # A thought dated after its record (here 2099) is not believed.
    assert moved.responses[1].start_ns == call_end


def test_a_call_runs_from_its_response_to_its_completion(tmp_path: Path) -> None:
    """entire-ab message 1: the call starts when its response ended and ends at its own
    (completion) timestamp; it belongs to that response and that turn."""
    messages = _messages()
    (session,) = sessions(document(tmp_path, messages[:2]))
    call = messages[1]["toolCalls"][0]
    (tool,) = session.tool_calls
    assert (tool.call_id, tool.name, tool.start_ns, tool.end_ns) == (
        call["id"],
        "write_file",
        ns(messages[1]["timestamp"]),
        ns(call["timestamp"]),
    )
    assert (tool.response_id, tool.prompt_id) == (messages[1]["id"], messages[0]["id"])
    assert (tool.is_error, tool.incomplete, tool.result_chars) == (False, False, len(_output(call)))
    assert tool.timing == "journal: response end → call completion"
    assert tool.arg_keys == ("file_path", "content")
    # The completion is the last thing recorded: the session ends there.
    assert session.end_ns == ns(call["timestamp"])


def test_a_call_without_result_id_or_name_and_one_that_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """entire-ab message 1's call edited: no `result` (never completed), no `id`, no
    `name`, `status: error`; and a completion dated in 2099 that is not believed."""
    messages = copy.deepcopy(_messages()[:2])
    call = messages[1]["toolCalls"][0]
    del call["result"], call["id"], call["name"]
    call["status"] = "error"
    call["timestamp"] = "2099-01-01T00:00:00.000Z"
    added = spy(monkeypatch)
    (session,) = sessions(document(tmp_path, messages))
    (tool,) = session.tool_calls
    call_id = f"{messages[1]['id']}:call0"
    assert (tool.call_id, tool.name, tool.is_error, tool.incomplete, tool.result_chars) == (
        call_id,
        "tool",
        True,
        True,
        0,
    )
    # The 2099 completion is not believed: the call ends with its response, and so does
    # the session.
    end = ns(messages[1]["timestamp"])
    assert (tool.start_ns, tool.end_ns, session.end_ns) == (end, end, end)
    ids = [a.id for a in added]
    assert f"call:{call_id}" in ids and f"result:{call_id}" not in ids
    assert by_id(added)[f"call:{call_id}"].chars == len("tool") + len(_compact(call["args"]))


@pytest.mark.parametrize("status", ["cancelled", "error", "success"])
def test_a_call_is_an_error_when_cancelled_or_failed(tmp_path: Path, status: str) -> None:
    messages = copy.deepcopy(_messages()[:2])
    messages[1]["toolCalls"][0]["status"] = status
    (session,) = sessions(document(tmp_path, messages))
    assert session.tool_calls[0].is_error is (status != "success")


def test_an_all_zero_usage_record_is_a_request_of_unknown_size(tmp_path: Path) -> None:
    """entire-ab message 6 (`tokens` all 0) given text (edited: as written it only holds
    the late calls of message 4, test_gemini_late_calls.py; a real one with text is
    pomodoro's first record, pinned there): a request was made (its call links to it),
    its size is unknown; it is not a failure and not a measured response."""
    messages = copy.deepcopy(_messages()[:7])
    zero = messages[6]
    zero["content"] = "I will remove it."
    (session,) = sessions(document(tmp_path, messages))
    (unmetered,) = session.unmetered_responses
    assert (unmetered.id, unmetered.usage_known, unmetered.output_tokens_reliable) == (
        zero["id"],
        False,
        False,
    )
    assert (unmetered.start_ns, unmetered.end_ns) == (
        ns(messages[5]["timestamp"]),
        ns(zero["timestamp"]),
    )
    assert zero["id"] not in {r.id for r in session.responses}
    assert not session.failed_requests and "requests_without_usage" not in dict(session.facts)
    tool = next(t for t in session.tool_calls if t.call_id == zero["toolCalls"][0]["id"])
    assert tool.response_id == zero["id"]


def test_a_record_without_tokens_is_a_failed_request(tmp_path: Path) -> None:
    """tp-tutor lines 19 and 26 given text (edited: as written they only hold the
    cancelled calls of the responses before them, test_gemini_late_calls.py): a `gemini`
    record with text and no `tokens` is a request whose usage was never recorded; its
    calls ran but belong to no response."""
    lines = [json.loads(line) for line in raw_lines(LOG) if line.strip()]
    for number in (19, 26):
        lines[number - 1]["content"] = "Running it."
    (session,) = sessions(write(tmp_path, lines, "session-2026-04-24T23-16-c8b2cbd9.jsonl"))
    cancelled = [lines[18], lines[25]]
    assert [(r.id, r.stop_reason) for r in session.failed_requests] == [
        (m["id"], "no usage recorded (cancelled?)") for m in cancelled
    ]
    assert dict(session.facts)["requests_without_usage"] == "no usage recorded (cancelled?): 2"
    assert dict(session.facts)["recording_format"] == "jsonl"
    for message in cancelled:
        call = message["toolCalls"][0]
        tool = next(t for t in session.tool_calls if t.call_id == call["id"])
        assert (tool.response_id, tool.is_error, tool.incomplete) == (None, True, False)
        # Completed 1–2 ms before its record was written: it ends with the record.
        assert tool.end_ns == ns(message["timestamp"]) > ns(call["timestamp"])


def test_tokens_without_a_prompt_size_are_unreadable_usage(tmp_path: Path) -> None:
    """entire-ab message 1 with `input` dropped (hand-edited: the corpus has none)."""
    messages = copy.deepcopy(_messages()[:2])
    del messages[1]["tokens"]["input"]
    (session,) = sessions(document(tmp_path, messages))
    assert [(r.id, r.stop_reason) for r in session.failed_requests] == [
        (messages[1]["id"], "usage unreadable")
    ]
    assert session.responses == () and session.unmetered_responses == ()
    assert dict(session.facts)["requests_without_usage"] == "usage unreadable: 1"
    # No request: the call is not linked to it.
    assert session.tool_calls[0].response_id is None


# --------------------------------------------------------------------------- user turns


def _result_turn(call: dict[str, Any], message_id: str, **response: Any) -> dict[str, Any]:
    """A ≥0.44 synthetic user turn repeating `call`'s result (the corpus has none: built
    from the call's own `functionResponse` part, as ShtiyaOS's 0.45 files write it)."""
    part = copy.deepcopy(call["result"][0])
    if response:
        part["functionResponse"]["response"] = response
    return {
        "id": message_id,
        "timestamp": call["timestamp"],
        "type": "user",
        "content": [part],
    }


def test_a_repeated_result_turn_is_not_counted_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """entire-ab messages 0–2 with, after message 1, the synthetic user turn ≥0.44 writes
    for its call's result: noted, no item, no prompt, no turn."""
    messages = _messages()[:3]
    call = messages[1]["toolCalls"][0]
    turn = _result_turn(call, "synthetic-1")
    added = spy(monkeypatch)
    (session,), diagnostics = read(document(tmp_path, [*messages[:2], turn, messages[2]]))
    assert diagnostics.notes["gemini-cli:synthetic-result-turn"] == 1
    assert not [a for a in added if a.id.startswith("synthetic-1")]
    assert [p.id for p in session.prompts] == [messages[0]["id"]]
    assert [r.prompt_id for r in session.responses] == [messages[0]["id"]] * 2


def test_a_result_turn_of_an_unknown_call_is_a_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same synthetic turn when its call is not in the recording (edited: the id of
    the `functionResponse` changed): its text enters the context as a tool result, the
    output string when the response holds only that, else the response's JSON."""
    messages = _messages()[:3]
    call = copy.deepcopy(messages[1]["toolCalls"][0])
    call["result"][0]["functionResponse"]["id"] = "elsewhere"
    alone = _result_turn(call, "synthetic-1")
    both = _result_turn(call, "synthetic-2", output="done", error="partly")
    added = spy(monkeypatch)
    (session,), diagnostics = read(document(tmp_path, [messages[0], alone, both, messages[2]]))
    items = by_id(added)
    got = items["synthetic-1:0"]
    assert (got.category, got.label, got.chars) == (RE, "Tool result", len(_output(call)))
    got = items["synthetic-2:0"]
    assert (got.category, got.label, got.chars) == (
        RE,
        "Tool result",
        len('{"output":"done","error":"partly"}'),
    )
    assert diagnostics.notes["gemini-cli:synthetic-result-turn"] == 0
    assert [p.id for p in session.prompts] == [messages[0]["id"]]


def test_media_and_thought_parts_are_not_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """entire-ab messages 0–1 edited: two image parts, a thought part and a string that is
    no Part beside the typed text, two text parts and a thought part in the answer, two
    images and a text part beside the call's result (the corpus has none of them)."""
    messages = copy.deepcopy(_messages()[:2])
    image = {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}
    messages[0]["content"] = [
        {"text": "look at this"},
        image,
        "a stray string, no Part",
        {"text": "hidden reasoning", "thought": True},
        {"text": " please"},
        image,
    ]
    call = messages[1]["toolCalls"][0]
    call["result"] += [image, {"text": "see the image"}, image]
    messages[1]["content"] = [
        {"text": "visible"},
        {"text": "thinking", "thought": True},
        {"text": " too"},
    ]
    added = spy(monkeypatch)
    (session,) = sessions(document(tmp_path, messages))
    user = messages[0]["id"]
    assert [(a.id, a.chars) for a in added if a.id.startswith(user)] == [
        (f"{user}:0", len("look at this")),
        (f"{user}:2", len(" please")),  # a thought part is no part at all
    ]
    (prompt,) = session.prompts
    assert (prompt.chars, prompt.preview) == (len("look at this please"), "look at this")
    assert dict(session.unmeasured) == {"media-part": 4}
    answer = by_id(added)[f"{messages[1]['id']}:text"]
    assert answer.chars == len("visible too")
    # The media parts of the result are counted, not measured: the result is its text parts,
    # one a line.
    result = by_id(added)[f"result:{call['id']}"]
    assert result.chars == len(_output(call)) + 1 + len("see the image")
    assert session.tool_calls[0].result_chars == result.chars


@needs_shared
def test_the_session_context_turn_is_environment_and_its_loaded_context_rules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """damini-ai 07-05 (≥0.44): the only turn is `<session_context>` with one
    `<loaded_context>` (GEMINI.md of an extension): that block is Rules, the rest
    Environment; neither is a prompt."""
    line = record(CONTEXT_TURN, 2)
    (turn,) = line["$set"]["messages"]
    text = turn["content"][0]["text"]
    start = text.index("<loaded_context>")
    end = text.index("</loaded_context>") + len("</loaded_context>")
    added = spy(monkeypatch)
    (session,) = sessions(CONTEXT_TURN)
    assert [(a.id, a.category, a.label, a.chars) for a in added] == [
        (f"{turn['id']}:0", EN, "Session context (environment)", len(text) - (end - start)),
        (f"{turn['id']}:0:loaded", RU, "Loaded context (GEMINI.md, extensions)", end - start),
    ]
    assert session.prompts == () and session.responses == ()
    start = record(CONTEXT_TURN, 1)["startTime"]  # 1 ms before the turn
    assert (session.session_id, session.start_ns) == ("a2a-server", ns(start))


@needs_shared
def test_a_session_context_without_loaded_context_is_all_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same turn with its `<loaded_context>` block cut out, as a plain (not
    checkpointed) message line."""
    header, line = record(CONTEXT_TURN, 1), record(CONTEXT_TURN, 2)
    (turn,) = line["$set"]["messages"]
    text = turn["content"][0]["text"]
    start = text.index("<loaded_context>")
    end = text.index("</loaded_context>") + len("</loaded_context>")
    turn["content"][0]["text"] = "  " + text[:start] + text[end:]
    added = spy(monkeypatch)
    (session,) = sessions(write(tmp_path, [header, turn], name="session-a.jsonl"))
    assert [(a.id, a.category, a.chars) for a in added] == [
        (f"{turn['id']}:0", EN, 2 + len(text) - (end - start))
    ]
    assert session.prompts == ()


def test_a_state_snapshot_is_a_summary_only_inside_a_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """≥0.44 compression writes `$set.messages` with a `<state_snapshot>` user turn (not in
    the corpus: tp-tutor's line 2 edited); typed by the user it is just a prompt."""
    header, user = record(LOG, 1), record(LOG, 2)
    summary = "\n<state_snapshot>ok</state_snapshot>"
    snapshot = {**user, "id": "snap", "content": [{"text": summary}]}
    added = spy(monkeypatch)
    (session,) = sessions(
        write(tmp_path, [header, user, {"$set": {"messages": [snapshot]}}], name="session-c.jsonl")
    )
    got = by_id(added)["snap:0"]
    assert (got.category, got.label, got.chars) == (SU, "Compression summary", len(summary))
    assert [p.id for p in session.prompts] == [user["id"]]
    added.clear()
    (typed,) = sessions(write(tmp_path, [header, snapshot], name="session-t.jsonl"))
    got = by_id(added)["snap:0"]
    assert (got.category, got.label) == (PR, "User prompt")
    assert [p.id for p in typed.prompts] == ["snap"]


def test_a_checkpoint_message_that_is_not_an_object_is_said(tmp_path: Path) -> None:
    """A `$set.messages` entry that is not an object was skipped without a word (hand-made:
    tp-tutor's lines 1-2 and a checkpoint holding the user turn and a number)."""
    header, user = record(LOG, 1), record(LOG, 2)
    path = write(
        tmp_path, [header, user, {"$set": {"messages": [user, 17]}}], name="session-k.jsonl"
    )
    diagnostics = Diagnostics()
    (session,) = load([path], diagnostics).sessions
    assert [p.id for p in session.prompts] == [user["id"]]  # the object is still read
    assert [(w.path, w.line, w.kind, w.message) for w in diagnostics.warnings] == [
        (str(path), 3, "bad-shape", "$set.messages[1] is not a JSON object; not read")
    ]


# --------------------------------------------------------------------------- notices


THRESHOLD = (
    "IMPORTANT: This conversation exceeded the compress threshold. A compressed context will"
    " be sent for future messages (compressed from: 12849 to 4000 tokens)."
)


@pytest.mark.parametrize(
    ("content", "trigger", "post"),
    [
        ("Context compressed from 68% to 3%.", "auto", None),
        (THRESHOLD, "auto", 4_000),
        ("", "manual", None),
    ],
)
def test_a_compression_notice_clears_the_context(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    content: str,
    trigger: str,
    post: int | None,
) -> None:
    """entire-ab's `info` (message 5, an update notice) edited to the notices compression
    writes (automatic: ≥0.33 with its percentages, 0.15–0.32 "IMPORTANT: …" with its
    counts; `/compress`: empty), and the next request's size lowered to show a drop: the
    summary is not stored, and here the history ends in a model turn without calls, so
    Gemini CLI compresses all of it: everything recorded before leaves the context; the
    next request measures the head again."""
    messages = copy.deepcopy(_messages()[:8])
    notice = messages[5]
    notice["content"] = content
    messages[7]["tokens"]["input"] = 9_000
    added = spy(monkeypatch)
    (session,) = sessions(document(tmp_path, messages))
    later = next(i for i, a in enumerate(added) if messages[6]["toolCalls"][0]["id"] in a.id)
    before = {a.id for a in added[:later]}
    (compaction,) = session.compactions
    assert (compaction.id, compaction.kind, compaction.trigger) == (
        notice["id"],
        "compaction",
        trigger,
    )
    assert (compaction.start_ns, compaction.end_ns) == (
        ns(messages[4]["timestamp"]),
        ns(notice["timestamp"]),
    )
    assert (compaction.pre_tokens, compaction.post_tokens, compaction.removed_items) == (
        messages[4]["tokens"]["input"],
        post,
        len(before),
    )
    assert compaction.timing == "previous record → compression notice"
    assert not [m for m in session.markers if m.kind == "info"]
    after = next(s for s in session.snapshots if s.anchor_id == notice["id"])
    # Only the inferred head (system prompt, tools) is left, as the first request saw it.
    head = dict(session.snapshots[0].categories)[Category.UNATTRIBUTED]
    assert (after.time_ns, after.categories) == (
        ns(notice["timestamp"]),
        ((Category.UNATTRIBUTED, head),),
    )


def test_other_notices_are_markers(tmp_path: Path) -> None:
    """entire-ab's update notice, and tp-tutor's "Request cancelled." notices: markers
    with their text, nothing more."""
    messages = _messages()
    (session,) = sessions(document(tmp_path, messages[:8]))
    assert [(m.time_ns, m.kind, m.value) for m in session.markers] == [
        (ns(messages[5]["timestamp"]), "info", preview(messages[5]["content"]))
    ]
    assert session.compactions == ()
    (log,) = sessions(LOG)
    cancelled = [m for m in log.markers if m.value == "Request cancelled."]
    assert [m.time_ns for m in cancelled] == [ns(record(LOG, n)["timestamp"]) for n in (17, 24, 27)]


@needs_shared
def test_an_error_notice_is_a_marker_and_an_api_error_a_failed_request(tmp_path: Path) -> None:
    """myflix 0.29.5 17-54: an `error` ("Automatic update failed…") and an `info`. Edited
    to the `[API Error: …]` text Gemini CLI records when a request fails (not in the
    corpus), the error is also a failed request from the record before it."""
    path = SHARED / "myflix-0.29.5/jules/chats/session-2026-02-25T17-54-48c7bcc7.json"
    messages = _messages(path)
    error, info = messages
    (session,) = sessions(path)
    assert [(m.kind, m.value) for m in session.markers] == [
        ("error", preview(error["content"])),
        ("info", preview(info["content"])),
    ]
    assert session.failed_requests == () and session.responses == ()
    api = "[API Error: Requested entity was not found.]"
    edited = [info, {**error, "timestamp": "2026-02-25T17:56:00.000Z", "content": api}]
    (failed,) = sessions(document(tmp_path, edited, source=path))
    (request,) = failed.failed_requests
    assert (request.id, request.start_ns, request.end_ns) == (
        error["id"],
        ns(info["timestamp"]),
        ns("2026-02-25T17:56:00.000Z"),
    )
    assert (request.is_error, request.stop_reason, request.model) == (True, api, "")
    assert request.usage.prompt_tokens == 0
    assert dict(failed.facts)["requests_without_usage"] == f"{api}: 1"
    # The first record of a session: it starts where it ends.
    (first,) = sessions(document(tmp_path, [edited[1]], source=path, name="session-1.json"))
    assert first.failed_requests[0].start_ns == ns("2026-02-25T17:56:00.000Z")


# --------------------------------------------------------------------------- the log


FIRST_TURNS = [1, 2, 4, 6, 8, 10, 11]  # tp-tutor: two prompts, three requests, one call


def test_the_last_version_of_a_message_wins_in_first_seen_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tp-tutor lines 8 and 10 are the same response (311877a9), written again once its
    call was added: one response, with the call, placed where it was first seen."""
    added = spy(monkeypatch)
    (session,) = sessions(excerpt(tmp_path, LOG, FIRST_TURNS, name="session-x.jsonl"))
    again = record(LOG, 10)
    assert [r.id for r in session.responses] == [
        record(LOG, 4)["id"],
        again["id"],
        record(LOG, 11)["id"],
    ]
    assert [t.call_id for t in session.tool_calls] == [again["toolCalls"][0]["id"]]
    assert [a.id for a in added].count(f"{again['id']}:text") == 1
    # The call ran from its response's end to its completion, and the next request
    # started there.
    done = ns(again["toolCalls"][0]["timestamp"])
    assert session.tool_calls[0].end_ns == done == session.responses[2].start_ns


def _rewound(tmp_path: Path, target: str) -> tuple[Session, dict[str, ChangeKind]]:
    """tp-tutor's first turns, `/rewind` to `target` (the corpus has no `$rewindTo`), then
    line 13's prompt and line 15's request: the session, and what that request saw change."""
    path = excerpt(tmp_path, LOG, FIRST_TURNS, name=f"session-{target[:4]}.jsonl")
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"$rewindTo": target}) + "\n")
        out.write("\n".join(raw_lines(LOG)[n - 1] for n in (13, 15)) + "\n")
    (session,) = sessions(path)
    last = session.snapshots[-1]
    assert last.anchor_id == record(LOG, 15)["id"]
    return session, {c.id: c.change for c in last.changes}


def test_a_rewind_drops_the_message_and_all_after_it(tmp_path: Path) -> None:
    """Rewound to the second prompt (line 6): it, its answer, call and result leave the
    context; the first turn stays. The rewind is a marker at the last record's time."""
    call = record(LOG, 10)["toolCalls"][0]["id"]
    target = record(LOG, 6)["id"]
    session, changes = _rewound(tmp_path, target)
    assert changes == {
        f"{target}:0": ChangeKind.REMOVED,
        f"{record(LOG, 8)['id']}:text": ChangeKind.REMOVED,
        f"call:{call}": ChangeKind.REMOVED,
        f"result:{call}": ChangeKind.REMOVED,
        f"{record(LOG, 13)['id']}:0": ChangeKind.ADDED,
    }
    rewinds = [(m.time_ns, m.value) for m in session.markers if m.kind == "rewind"]
    assert rewinds == [(ns(record(LOG, 11)["timestamp"]), target)]


def test_a_rewind_to_an_unknown_message_drops_everything(tmp_path: Path) -> None:
    target = "not-a-message-id" * 8
    session, changes = _rewound(tmp_path, target)
    assert [m.value for m in session.markers if m.kind == "rewind"] == [target[:80]]
    removed = {k for k, v in changes.items() if v is ChangeKind.REMOVED}
    assert {f"{record(LOG, 2)['id']}:0", f"{record(LOG, 4)['id']}:text"} <= removed
    assert len(removed) == 6


def test_a_rewind_before_any_message_is_placed_at_the_session_start(
    tmp_path: Path, export_trace: Any
) -> None:
    """A `$rewindTo` right after the header (hand-placed: the corpus has no `$rewindTo`) has
    no moment of its own yet: its marker is at the session's start, not at 1970, and the
    trace meets the contract."""
    lines = raw_lines(LOG)
    path = tmp_path / "session-early-rewind.jsonl"
    rest = "\n".join(lines[n - 1] for n in FIRST_TURNS[1:])
    path.write_text(
        f"{lines[FIRST_TURNS[0] - 1]}\n{json.dumps({'$rewindTo': 'nothing-yet'})}\n{rest}\n",
        encoding="utf-8",
    )
    (session,) = sessions(path)
    rewinds = [(m.time_ns, m.value) for m in session.markers if m.kind == "rewind"]
    assert rewinds == [(session.start_ns, "nothing-yet")]
    assert session.start_ns > 0
    export_trace(path, require_addition=False)


def _checkpointed(tmp_path: Path, *updates: list[dict[str, Any]]) -> tuple[Session, Path]:
    """tp-tutor's first turns, then one `$set.messages` per update (≥0.44; the corpus has
    only damini-ai's first one), then line 13's prompt and line 15's request."""
    path = excerpt(tmp_path, LOG, FIRST_TURNS, name=f"session-c{len(updates)}.jsonl")
    with path.open("a", encoding="utf-8") as out:
        for messages in updates:
            out.write(json.dumps({"$set": {"messages": messages}}) + "\n")
        out.write("\n".join(raw_lines(LOG)[n - 1] for n in (13, 15)) + "\n")
    (session,) = sessions(path)
    return session, path


def test_a_shorter_history_is_a_compaction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compression ≥0.44: the list becomes the first prompt and a `<state_snapshot>`
    turn (new): four messages left for one new, a compaction at the last record's time
    (line 11), of everything the four held."""
    first = record(LOG, 2)
    snapshot = {**first, "id": "snap", "content": [{"text": "<state_snapshot>s</state_snapshot>"}]}
    added = spy(monkeypatch)
    session, _ = _checkpointed(tmp_path, [first, snapshot])
    call = record(LOG, 10)["toolCalls"][0]["id"]
    (compaction,) = session.compactions
    done = ns(record(LOG, 11)["timestamp"])
    assert (compaction.id, compaction.start_ns, compaction.end_ns) == ("checkpoint:0", done, done)
    assert (compaction.kind, compaction.trigger, compaction.pre_tokens) == (
        "compaction",
        "history replaced ($set.messages)",
        record(LOG, 11)["tokens"]["input"],
    )
    # Line 4's answer, line 6's prompt, line 10's answer, call and result, line 11's answer.
    assert compaction.removed_items == 6
    assert by_id(added)["snap:0"].category is SU
    assert [a.id for a in added].count(f"{first['id']}:0") == 1  # kept, not added again
    after = next(s for s in session.snapshots if s.anchor_id == "checkpoint:0")
    assert after.time_ns == done
    assert {c.id for c in after.changes if c.change is ChangeKind.REMOVED} == {
        f"{record(LOG, 4)['id']}:text",
        f"{record(LOG, 6)['id']}:0",
        f"{record(LOG, 8)['id']}:text",
        f"call:{call}",
        f"result:{call}",
    }  # line 11's answer was never sent: it left unseen
    assert [p.id for p in session.prompts] == [
        first["id"],
        record(LOG, 6)["id"],
        record(LOG, 13)["id"],
    ]


def test_new_turns_in_a_checkpoint_are_history_not_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `$set.messages` that keeps every turn and adds a user text, an all-zero and a
    token-less response (edited copies of lines 2 and 4): their text is in the context,
    but they are no prompt, no request of unknown size, no failed request."""
    kept = [record(LOG, n) for n in (2, 4, 6, 10, 11)]
    typed = {**record(LOG, 2), "id": "typed", "content": [{"text": "history text"}]}
    zero = {**record(LOG, 4), "id": "zero", "tokens": dict.fromkeys(record(LOG, 4)["tokens"], 0)}
    bare = {**record(LOG, 10), "id": "bare", "tokens": None}
    bare["toolCalls"] = [{**bare["toolCalls"][0], "id": "resynced-call"}]
    added = spy(monkeypatch)
    session, _ = _checkpointed(tmp_path, [*kept, typed, zero, bare])
    items = by_id(added)
    assert (items["typed:0"].category, items["typed:0"].chars) == (PR, len("history text"))
    assert (items["zero:text"].category, items["bare:text"].category) == (AS, AS)
    assert "typed" not in {p.id for p in session.prompts}
    assert session.failed_requests == () and session.unmetered_responses == ()
    assert session.compactions == ()
    # A call first met in a checkpoint is on the timeline, linked to no request.
    assert [(t.call_id, t.response_id) for t in session.tool_calls] == [
        (record(LOG, 10)["toolCalls"][0]["id"], record(LOG, 10)["id"]),
        ("resynced-call", None),
    ]
    # The prompt after the checkpoint is a turn again.
    assert session.prompts[-1].id == record(LOG, 13)["id"]


def test_a_history_resync_under_new_ids_is_not_a_compaction(tmp_path: Path) -> None:
    """The same turns written again under new ids (history sync), as many as left: no
    compaction. A second, shorter list is the next compaction, `checkpoint:1`."""
    lines = [record(LOG, n) for n in FIRST_TURNS[1:]]
    resync = [{**m, "id": f"hex{i}", "tokens": None} for i, m in enumerate(lines)]
    resync = [m for i, m in enumerate(resync) if i != 3]  # line 8: an older copy of line 10
    session, _ = _checkpointed(tmp_path, resync)
    assert session.compactions == ()
    # The call of the copy of line 10 is the same call: still the original's.
    call = record(LOG, 10)["toolCalls"][0]
    (tool,) = session.tool_calls
    assert (tool.call_id, tool.response_id, tool.end_ns) == (
        call["id"],
        record(LOG, 10)["id"],
        ns(call["timestamp"]),
    )
    shorter = [resync[0]]
    twice, _ = _checkpointed(tmp_path, [{**record(LOG, 2), "id": "summary"}], shorter)
    assert [c.id for c in twice.compactions] == ["checkpoint:0"]
    thrice, _ = _checkpointed(tmp_path, [record(LOG, 2), *resync[1:3]], [])
    assert [c.id for c in thrice.compactions] == ["checkpoint:0", "checkpoint:1"]


def test_the_history_without_its_last_turns_is_a_rollback(tmp_path: Path) -> None:
    """≥0.55 rolls the history back after a failed or cancelled request (geminiChat.ts:
    `agentHistory.rollback`, then `updateMessagesFromHistory` writes the list): the
    `$set.messages` list is the one before without its last turns. They leave the context,
    as a rewind's do, and an instant on Events says so: no compaction."""
    session, _ = _checkpointed(tmp_path, [record(LOG, n) for n in (2, 4)])
    assert session.compactions == ()
    (rollback,) = [m for m in session.markers if m.kind == "rollback"]
    assert (rollback.time_ns, rollback.value) == (
        ns(record(LOG, 11)["timestamp"]),
        "rolled back 3 messages",
    )
    # The next request's: line 6's prompt, line 8's text and its call with its result (line
    # 11's text was in no request yet: a response's text is context from the next one on).
    after = {c.id: c.change for c in session.snapshots[-1].changes}
    call = record(LOG, 10)["toolCalls"][0]["id"]
    assert {i for i, change in after.items() if change is ChangeKind.REMOVED} == {
        f"{record(LOG, 6)['id']}:0",
        f"{record(LOG, 8)['id']}:text",
        f"call:{call}",
        f"result:{call}",
    }


# --------------------------------------------------------------------------- session facts


GEMINI_SOURCE = "model: Gemini CLI tokenLimit() for Gemini models (not in journal)"
GEMMA_SOURCE = "model: Gemini CLI tokenLimit() for Gemma 4 (not in the journal)"
ASSUMED = "assumed: Gemini CLI's default window (model unknown, not in journal)"


@pytest.mark.parametrize(
    ("model", "window", "source"),
    [
        ("gemini-2.5-flash", 1_048_576, GEMINI_SOURCE),
        ("Gemma-4-27b-it", 256_000, GEMMA_SOURCE),
        ("gemma4:e4b", 256_000, GEMMA_SOURCE),
        ("auto-gemini-3", 1_048_576, ASSUMED),
        ("", 1_048_576, ASSUMED),
    ],
)
def test_the_window_is_gemini_cli_s_token_limit_for_the_first_model(
    tmp_path: Path, model: str, window: int, source: str
) -> None:
    """entire-ab's first request with its model edited (the corpus has gemini-2.5-flash,
    gemini-3-flash-preview, the router alias auto-gemini-3; no Gemma): the window is not in
    the journal, it is Gemini CLI's own tokenLimit(model), on the session and each request."""
    messages = copy.deepcopy(_messages()[:2])
    messages[1]["model"] = model
    (session,) = sessions(document(tmp_path, messages))
    assert (session.window_tokens, session.window_source) == (window, source)
    assert session.snapshots[0].window_tokens == window
    assert session.models == ((model,) if model else ())
    assert (session.provider, session.responses[0].model) == ("google", model)


def test_models_are_listed_once_in_order_of_their_first_measured_request(tmp_path: Path) -> None:
    """entire-ab's requests with models edited: flash, pro, flash; the all-zero request's
    model (message 6) is not a measured one and is not listed."""
    messages = copy.deepcopy(_messages()[:8])
    for index, model in ((1, "gemini-2.5-flash"), (2, "gemini-2.5-pro"), (3, "gemini-2.5-flash")):
        messages[index]["model"] = model
    messages[4]["model"] = "gemini-2.5-flash"
    messages[6]["model"] = "gemma-4-unmetered"
    messages[7]["model"] = "gemini-2.5-pro"
    (session,) = sessions(document(tmp_path, messages))
    assert session.models == ("gemini-2.5-flash", "gemini-2.5-pro")
    assert session.window_tokens == 1_048_576


def test_the_session_facts_and_summary(tmp_path: Path) -> None:
    """expenses-tracker's main session (0.37.1): `kind: main`, a `summary` in its header;
    the session id is the header's, the project the folder's slug."""
    path = TREE / "session-2026-04-12T01-18-01b2c62e.json"
    header = _doc(path)
    main = next(s for s in sessions(path) if s.parent_session is None)
    assert main.session_id == header["sessionId"]
    assert dict(main.facts)["recording_format"] == "json"
    assert dict(main.facts)["session_summary"] == preview(header["summary"])
    # its folder is the slug of /Users/agunginsani, the user's home (its projectHash)
    assert (main.harness, main.sources, main.project) == (Harness.GEMINI_CLI, (str(path),), "~")
    assert main.start_ns == ns(header["startTime"])
    # A summary that is not text is left out; a header without an id takes the file's.
    messages = _messages(path)[:3]
    plain = document(tmp_path, messages, source=path, name="session-x.json", summary=["a"])
    value = json.loads(plain.read_text())
    value["sessionId"] = 7  # not text: the id comes from the name
    plain.write_text(json.dumps(value, indent=2))
    (session,) = sessions(plain)
    assert "session_summary" not in dict(session.facts)
    assert session.session_id == "session-x"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize(
    ("folder", "marker", "root", "project"),
    [
        ("myproject", "/home/someone/src/webapp\n", "/x", "webapp"),
        ("myproject", "/home/someone\n", "/x", "~"),
        ("myproject", "\n", "/x", None),
        # a slug without its marker: maybe a user's name, never shown
        ("myproject", None, "/srv/myproject", None),
        ("a" * 64, None, "/x", None),
        ("A" * 64, None, "/x", None),
        # the slug of a home folder, told by the projectHash: `~`
        ("alice", None, "/home/alice", "~"),
        ("m09-tapan", None, "/home/m09_tapan", "~"),
        ("j-d-smith", None, "/Users/j.d_smith", "~"),
        ("bob", None, "C:\\Users\\bob", "~"),
        ("root", None, "/root", "~"),
        ("alice", None, "/home/alice/src", None),
    ],
)
def test_the_project_is_project_root_or_a_home_folder(
    tmp_path: Path, folder: str, marker: str | None, root: str, project: str | None
) -> None:
    """`.project_root` in the project folder (≥0.29); without it the folder is a slug
    (≥0.29) or the sha256 of the path (≤0.28), and a slug is the user's name when Gemini
    CLI ran in the home folder: the project is `~` when the header's projectHash is that
    of the home the slug names, else none."""
    chats = tmp_path / ".gemini" / "tmp" / folder / "chats"
    chats.mkdir(parents=True)
    if marker is not None:
        (chats.parent / ".project_root").write_text(marker, encoding="utf-8")
    path = chats / DOCUMENT.name
    value = json.loads(DOCUMENT.read_text())
    value["projectHash"] = _sha(root)
    path.write_text(json.dumps(value))
    (session,) = sessions(path)
    assert session.project == project


def test_a_project_root_that_is_not_text_falls_back_to_the_projecthash(tmp_path: Path) -> None:
    chats = tmp_path / "x" / "chats"
    chats.mkdir(parents=True)
    (chats.parent / ".project_root").write_bytes(b"\xff\xfe/home/x")
    path = chats / DOCUMENT.name
    value = json.loads(DOCUMENT.read_text())
    value["projectHash"] = _sha("/home/x")
    path.write_text(json.dumps(value))
    assert sessions(path)[0].project == "~"
    value["projectHash"] = _sha("/srv/x")
    path.write_text(json.dumps(value))
    assert sessions(path)[0].project is None


def test_outside_a_chats_folder_the_project_is_the_first_directory(tmp_path: Path) -> None:
    """expenses-tracker's subagent shcg5o has `directories`; copied out of `chats/` the
    first one names the project; without the list there is none."""
    source = TREE / "01b2c62e-cba4-4088-8755-b240504efb70" / "shcg5o.json"
    value = _doc(source)
    copy_ = tmp_path / "shcg5o.json"
    copy_.write_text(json.dumps(value, indent=2))
    (session,) = sessions(copy_)
    assert value["directories"][0] == "/Users/agunginsani"
    assert session.project == "~"  # a home folder is not shown by name
    value["directories"] = ["/work/webapp", "/work/other"]
    copy_.write_text(json.dumps(value, indent=2))
    assert sessions(copy_)[0].project == "webapp"
    for directories in ("/home/x", [], [7]):
        value["directories"] = directories
        copy_.write_text(json.dumps(value, indent=2))
        assert sessions(copy_)[0].project is None


# --------------------------------------------------------------------------- subagents

PARENT = "01b2c62e-cba4-4088-8755-b240504efb70"
# FORMATS-gemini-opencode §1.9: which cli_help call ran which nested subagent (by time).
LAUNCHED = {"shcg5o": "cli_help_1775960815673_0", "ngzcxj": "cli_help_1775961116366_0"}


def _tree(tmp_path: Path, edit: Any = None) -> Path:
    """A copy of the expenses-tracker tree; `edit(name, document)` may change a file."""
    root = tmp_path / "agunginsani" / "chats"
    for source in sorted(TREE.rglob("*.json")):
        target = root / source.relative_to(TREE)
        target.parent.mkdir(parents=True, exist_ok=True)
        value = _doc(source)
        if edit is not None:
            edit(source.stem, value)
        target.write_text(json.dumps(value, indent=2), encoding="utf-8")
    return root


def _by_id(found: list[Session]) -> dict[str, Session]:
    return {s.session_id: s for s in found}


def test_nested_subagents_link_to_the_call_running_when_they_started() -> None:
    """expenses-tracker 0.37.1: `chats/<parent id>/<agent id>.json`, no `agentId` yet: each
    subagent belongs to the parent's cli_help call that was running when it started."""
    found = _by_id(sessions(TREE))
    parent = found[PARENT]
    assert parent.parent_session is None and parent.agent_id is None
    for agent, call_id in LAUNCHED.items():
        child = found[f"{PARENT}/{agent}"]
        assert (child.parent_session, child.parent_call_id, child.agent_id, child.child_role) == (
            PARENT,
            call_id,
            agent,
            "subagent",
        )
        # Its first prompt is the task the parent gave it; no user types into a subagent.
        assert child.prompts[0].source == "agent"
        assert "user" not in {p.source for p in child.prompts}
    children = {t.call_id: t.child_session for t in parent.tool_calls if t.child_session}
    assert children == {call: f"{PARENT}/{agent}" for agent, call in LAUNCHED.items()}
    assert [p.source for p in parent.prompts] == ["user"] * len(parent.prompts)


NUDGE = "60491e7e-598e-4b5d-9f3c-79b018ad34a4"  # ngzcxj's second user-role message


def _nudge(value: dict[str, Any]) -> dict[str, Any]:
    found = next(m for m in value["messages"] if m["id"] == NUDGE)
    assert isinstance(found, dict)
    return found


def test_a_subagent_s_runtime_notice_is_the_harness_s_not_a_user_prompt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ngzcxj (0.37.1) ran out of turns: the runtime wrote "You have exceeded the maximum
    number of turns. You have one final chance …" as a user-role message. No user typed
    it: its prompt's source is `harness`, and its text is Harness overhead, not User
    prompts."""
    added = spy(monkeypatch)
    child = _by_id(sessions(TREE))[f"{PARENT}/ngzcxj"]
    assert [(p.source, p.id) for p in child.prompts][1:] == [("harness", NUDGE)]
    text = _nudge(_doc(TREE / PARENT / "ngzcxj.json"))["content"][0]["text"]
    assert text.startswith("You have exceeded the maximum number of turns.")
    got = by_id(added)[f"{NUDGE}:0"]
    assert (got.category, got.label, got.chars) == (Category.OVERHEAD, "Runtime notice", len(text))


def test_a_subagent_s_later_prompt_is_the_agent_s_and_a_main_s_notice_is_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Edited: ngzcxj's notice reworded (no runtime text) is still no user's: the agent's.
    The runtime's words in a main session are what its user typed (only a subagent has a
    runtime that writes them)."""

    notice = _nudge(_doc(TREE / PARENT / "ngzcxj.json"))

    def reword(name: str, value: dict[str, Any]) -> None:
        if name == "ngzcxj":
            _nudge(value)["content"][0]["text"] = "Please finish now."
        elif name.startswith("session-"):
            value["messages"].append({**notice, "timestamp": value["lastUpdated"]})

    added = spy(monkeypatch)
    found = _by_id(sessions(_tree(tmp_path, reword)))
    assert [p.source for p in found[f"{PARENT}/ngzcxj"].prompts] == ["agent", "agent"]
    assert by_id(added)[f"{NUDGE}:0"].category == PR
    main = found[PARENT]
    assert main.prompts[-1].source == "user"
    assert {p.source for p in main.prompts} == {"user"}


def test_agent_id_links_a_subagent_to_its_call_before_time_does(tmp_path: Path) -> None:
    """≥0.39 calls carry `agentId`: edited in, swapped (shcg5o named by the later call),
    the link follows the id, not the time."""

    def swap(name: str, value: dict[str, Any]) -> None:
        for message in value["messages"] if name.startswith("session-") else []:
            for call in message.get("toolCalls", []):
                if call["id"] == LAUNCHED["shcg5o"]:
                    call["agentId"] = "ngzcxj"
                elif call["id"] == LAUNCHED["ngzcxj"]:
                    call["agentId"] = "shcg5o"

    found = _by_id(sessions(_tree(tmp_path, swap)))
    assert found[f"{PARENT}/shcg5o"].parent_call_id == LAUNCHED["ngzcxj"]
    assert found[f"{PARENT}/ngzcxj"].parent_call_id == LAUNCHED["shcg5o"]


def test_a_launching_call_names_its_subagent_when_its_file_is_not_read(tmp_path: Path) -> None:
    """≥0.39 calls carry `agentId` (edited in): given the main file without its folder's
    subagents, each launching call keeps the id its child would have (`<parent>/<agent>`),
    the profile counts the two not read and one warning says so; an older call names
    none (a time is no name)."""

    def name(call_name: str, value: dict[str, Any]) -> None:
        for message in value["messages"] if call_name.startswith("session-") else []:
            for call in message.get("toolCalls", []):
                for agent, call_id in LAUNCHED.items():
                    if call["id"] == call_id:
                        call["agentId"] = agent

    alone = tmp_path / "alone"
    alone.mkdir()
    for with_ids, edit in ((True, name), (False, None)):
        (alone / MAIN).write_bytes((_tree(tmp_path / str(with_ids), edit) / MAIN).read_bytes())
        diagnostics = Diagnostics()
        (parent,) = load([alone / MAIN], diagnostics).sessions
        launched = {t.call_id: t.child_session for t in parent.tool_calls if t.child_session}
        if not with_ids:
            assert launched == {} and not diagnostics.warnings
            continue
        assert launched == {c: f"{PARENT}/{a}" for a, c in LAUNCHED.items()}
        assert dict(parent.facts)["unavailable_child_sessions"] == 2
        (warning,) = diagnostics.warnings
        assert warning.kind == "subagent-not-read" and "2 subagents" in warning.message


def test_a_subagent_started_before_any_call_ran_is_not_linked(tmp_path: Path) -> None:
    """shcg5o moved to start well before the parent's first request (edited): no running
    call, so no link; ngzcxj keeps its own."""
    early = "2026-04-12T01:00:00.000Z"

    def move(name: str, value: dict[str, Any]) -> None:
        if name == "shcg5o":
            value["startTime"] = early
            value["messages"][0]["timestamp"] = early

    found = _by_id(sessions(_tree(tmp_path, move)))
    assert found[f"{PARENT}/shcg5o"].parent_call_id is None
    assert found[f"{PARENT}/ngzcxj"].parent_call_id == LAUNCHED["ngzcxj"]
    parent = found[PARENT]
    assert {t.call_id for t in parent.tool_calls if t.child_session} == {LAUNCHED["ngzcxj"]}


def _beside_launch(agent: str, extra: dict[str, Any]) -> Any:
    """An edit for `_tree`: `extra`, a call made in parallel with the one that launched
    `agent` (same message, done earlier: a shorter run), inserted before it."""

    def edit(name: str, value: dict[str, Any]) -> None:
        for message in value["messages"] if name.startswith("session-") else []:
            calls = message.get("toolCalls", [])
            if any(c["id"] == LAUNCHED[agent] for c in calls):
                calls.insert(0, extra)

    return edit


def _plain_call(call_id: str, done: str) -> dict[str, Any]:
    """The real tree's first run_shell_command, renamed and done at `done`."""
    calls = [c for m in _messages(TREE / MAIN) for c in m.get("toolCalls", [])]
    first = next(c for c in calls if c["name"] == "run_shell_command")
    result = copy.deepcopy(first["result"])
    result[0]["functionResponse"]["id"] = call_id
    return {**first, "id": call_id, "timestamp": done, "result": result}


MAIN = "session-2026-04-12T01-18-01b2c62e.json"


# What tells a call that ran a subagent, each alone (the real cli_help has all three).
LAUNCH_SIGNS = {
    "isSubagentProgress": {"resultDisplay": {"isSubagentProgress": True}},
    "agentName": {"resultDisplay": {"agentName": "cli_help"}},
    "result": {"resultDisplay": "done"},
}


@pytest.mark.parametrize("sign", LAUNCH_SIGNS)
def test_a_subagent_links_to_its_launching_call_not_a_shorter_parallel_one(
    tmp_path: Path, sign: str
) -> None:
    """expenses-tracker 0.37.1 edited: a run_shell_command in the same message as the
    cli_help that ran shcg5o (02:26:55.797 → 02:27:20.826), done at 02:27:00: running when
    shcg5o started, and shorter. The cli_help ran a subagent: it is the one. Told by its
    `resultDisplay.isSubagentProgress`, its `agentName` (the call's name) or its result
    "Subagent 'cli_help' finished", each alone; its question and shcg5o's answer, which
    name shcg5o, are taken out (without a sign, the shorter call was taken)."""
    extra = _plain_call("run_shell_command_1775960815670_0", "2026-04-12T02:27:00.000Z")
    beside = _beside_launch("shcg5o", extra)

    def edit(name: str, value: dict[str, Any]) -> None:
        beside(name, value)
        if name == "shcg5o":
            del value["summary"]
        for message in value["messages"] if name.startswith("session-") else []:
            for call in message.get("toolCalls", []):
                if call["id"] == LAUNCHED["shcg5o"]:
                    call.update(args={}, **LAUNCH_SIGNS[sign])
                    if sign != "result":
                        call["result"][0]["functionResponse"]["response"] = {"output": "…"}

    found = _by_id(sessions(_tree(tmp_path, edit)))
    assert found[f"{PARENT}/shcg5o"].parent_call_id == LAUNCHED["shcg5o"]
    assert found[f"{PARENT}/ngzcxj"].parent_call_id == LAUNCHED["ngzcxj"]
    launched = {t.call_id: t.child_session for t in found[PARENT].tool_calls}
    assert launched[extra["id"]] is None
    assert launched[LAUNCHED["shcg5o"]] == f"{PARENT}/shcg5o"


def test_of_two_parallel_launches_the_one_whose_words_name_the_subagent_wins(
    tmp_path: Path,
) -> None:
    """Edited: a second, shorter cli_help beside the one that ran shcg5o (its copy asking
    ngzcxj's question, answering with ngzcxj's summary): both ran a subagent while shcg5o
    started; the one whose result holds shcg5o's answer ran it. Without that result, the
    question in shcg5o's task prompt tells."""
    launches = [
        c for m in _messages(TREE / MAIN) for c in m.get("toolCalls", []) if c["name"] == "cli_help"
    ]
    other = copy.deepcopy(launches[1])  # ngzcxj's: its question and its answer
    other.update(id="cli_help_1775960815600_1", timestamp="2026-04-12T02:27:00.000Z")
    found = _by_id(sessions(_tree(tmp_path, _beside_launch("shcg5o", other))))
    assert found[f"{PARENT}/shcg5o"].parent_call_id == LAUNCHED["shcg5o"]

    def no_result(name: str, value: dict[str, Any]) -> None:
        _beside_launch("shcg5o", other)(name, value)
        for message in value["messages"] if name.startswith("session-") else []:
            for call in message.get("toolCalls", []):
                if call["name"] == "cli_help":
                    call["result"][0]["functionResponse"]["response"] = {"output": ""}

    found = _by_id(sessions(_tree(tmp_path / "bare", no_result)))
    assert found[f"{PARENT}/shcg5o"].parent_call_id == LAUNCHED["shcg5o"]


def test_a_main_file_given_alone_reads_its_subagent_folder(tmp_path: Path) -> None:
    """The main file `discover` lists, given alone: `chats/<its id>/` is read with it
    (both subagents, linked); given with that folder or the subagent files too, each
    subagent is read once."""
    main = TREE / MAIN
    for inputs in ([main], [main, TREE / PARENT], [TREE / PARENT / "ngzcxj.json", main]):
        found, diagnostics = read(*inputs)
        assert sorted(s.session_id for s in found) == sorted(
            [PARENT, *(f"{PARENT}/{a}" for a in LAUNCHED)]
        ), inputs
        links = {s.agent_id: s.parent_call_id for s in found if s.parent_session}
        assert links == LAUNCHED
        assert diagnostics.warnings == []


@pytest.mark.parametrize("sid", ["..", "../other", "/abs", ".hidden"])
def test_a_session_id_that_is_no_folder_name_reads_no_folder(tmp_path: Path, sid: str) -> None:
    """entire-ab given a session id that would name a folder elsewhere (edited): only its
    own file is read, never the recordings of the folder its id points at."""
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x.json").write_bytes(DOCUMENT.read_bytes())
    chats = tmp_path / "chats"
    chats.mkdir()
    main = document(chats, _messages()[:3], name="session-x.json", sessionId=sid)
    found, diagnostics = read(main)
    assert [s.session_id for s in found] == [sid]
    assert diagnostics.warnings == []


def _stray(tmp_path: Path, late: bool = False) -> Path:
    """ngzcxj copied out of its parent's folder (`other/ngzcxj.json`); `late`: every time
    in it two hours later (04:31–04:33, after its parent's end at 03:18)."""
    text = (TREE / PARENT / "ngzcxj.json").read_text(encoding="utf-8")
    if late:
        text = text.replace('"2026-04-12T02:', '"2026-04-12T04:')
    out = tmp_path / "other" / "ngzcxj.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return out


def test_a_subagent_outside_its_parent_s_folder_finds_it_among_its_project_s_sessions(
    tmp_path: Path,
) -> None:
    """A ≥0.37 subagent file does not name its parent: out of `chats/<parent id>/`, the main
    sessions of its project (`projectHash`) given with it are searched for the call that
    ran it. ngzcxj beside a copy of its parent's file, and in another folder: linked as in
    place, never its own parent."""
    mains = tmp_path / "mains"
    mains.mkdir()
    (mains / MAIN).write_bytes((TREE / MAIN).read_bytes())
    found, diagnostics = read(mains, _stray(tmp_path))
    child = _by_id(found)[f"{PARENT}/ngzcxj"]
    assert (child.parent_session, child.parent_call_id) == (PARENT, LAUNCHED["ngzcxj"])
    assert diagnostics.warnings == []


def test_a_subagent_whose_parent_cannot_be_found_is_no_one_s_child(tmp_path: Path) -> None:
    """ngzcxj out of its folder, alone: no parent to name (not itself); with its project's
    session but run (edited) when none of its calls ran: still none. One warning each,
    saying its parent could not be determined, and why."""
    found, diagnostics = read(_stray(tmp_path))
    (child,) = found
    assert (child.session_id, child.parent_session, child.agent_id, child.child_role) == (
        "ngzcxj",
        None,
        "ngzcxj",
        "subagent",
    )
    assert child.is_subagent  # counted as one (export: "1 subagent"), its parent unnamed
    said = [(Path(w.path).name, w.kind, w.message) for w in diagnostics.warnings]
    where = "its file is not in its parent's chats/<session id>/ folder, and"
    assert said == [
        (
            "ngzcxj.json",
            "parent-not-exported",
            f"subagent ngzcxj: its parent could not be determined ({where} no session of its "
            "project was read): pass its parent's session file with it",
        )
    ]
    mains = tmp_path / "mains"
    mains.mkdir()
    (mains / MAIN).write_bytes((TREE / MAIN).read_bytes())
    found, diagnostics = read(mains, _stray(tmp_path / "late", late=True))
    assert _by_id(found)["ngzcxj"].parent_session is None
    assert [w.message for w in diagnostics.warnings] == [
        f"subagent ngzcxj: its parent could not be determined ({where} no call of the 1 "
        "session of its project read was running when it started)"
    ]


def test_a_call_launches_one_subagent_only(tmp_path: Path) -> None:
    """Both subagents edited to start inside the first cli_help call: the first one read
    (ngzcxj) takes it; the other is left unlinked rather than sharing it."""
    start = "2026-04-12T02:27:00.000Z"

    def move(name: str, value: dict[str, Any]) -> None:
        if name in LAUNCHED:
            value["startTime"] = start
            value["messages"][0]["timestamp"] = start

    found = _by_id(sessions(_tree(tmp_path, move)))
    links = {a: found[f"{PARENT}/{a}"].parent_call_id for a in LAUNCHED}
    assert links == {"ngzcxj": LAUNCHED["shcg5o"], "shcg5o": None}


SIBLING = SHARED / "myflix-0.29.5/jules/chats/session-2026-02-25T12-46-7740a707.json"


@needs_shared
def test_a_sibling_subagent_shares_its_parent_s_id(tmp_path: Path) -> None:
    """≤0.35: the codebase investigator is written beside its parent with the parent's
    `sessionId` and a task prompt ("Your task is to …"); myflix's parent was not published
    (it holds credentials), so it stands alone, unlinked, named by its file. Its parent's
    recording is in no folder: its parent is named (the id it shares) but not shown
    (FORMATS-gemini §1.9)."""
    value = _doc(SIBLING)
    (child,) = sessions(SIBLING)
    stem = SIBLING.name.split(".")[0]
    assert (child.session_id, child.parent_call_id, child.agent_id, child.child_role) == (
        f"{value['sessionId']}/{stem}",
        None,
        stem,
        "subagent",
    )
    assert child.parent_session == value["sessionId"] and child.is_subagent
    assert child.prompts[0].source == "agent"
    # Marked `kind: main` (≥0.31 headers say), the same file is a main session.
    main = document(tmp_path, value["messages"], source=SIBLING, name=SIBLING.name, kind="main")
    (alone,) = sessions(main)
    assert (alone.session_id, alone.parent_session) == (value["sessionId"], None)
    assert alone.prompts[0].source == "user"


@needs_shared
def test_a_sibling_whose_parent_recording_is_missing_says_so(tmp_path: Path) -> None:
    """myflix's folder given whole: the investigator's parent (same id) is in no file of
    it (not published; ≤0.35 writes parent and subagent as `session-<minute>-<id8>.json`,
    so one started in the same minute overwrites the other). The one warning says the
    parent's recording is missing, not "pass its folder" (the folder was passed)."""
    found, diagnostics = read(SIBLING.parent)
    sid = _doc(SIBLING)["sessionId"]
    (child,) = [s for s in found if s.child_role == "subagent"]
    # Its parent's id is known (the sibling shares it): kept, so it is a subagent
    assert (child.session_id, child.parent_session) == (f"{sid}/{SIBLING.stem}", sid)
    assert child.is_subagent
    assert dict(child.facts)["parent_unknown"].startswith("session 7740a707…, whose recording")
    said = [(Path(w.path).name, w.kind, w.message) for w in diagnostics.warnings]
    assert said == [
        (
            SIBLING.name,
            "parent-not-exported",
            f"subagent {sid}/{SIBLING.stem}: its parent's recording (session 7740a707…) is "
            "missing from its folder: not copied, or overwritten by this subagent's own file "
            "(Gemini CLI ≤0.35 names both session-<minute>-<id>.json)",
        )
    ]
    assert diagnostics.warning_counts == {"parent-not-exported": 1}


@needs_shared
def test_a_sibling_whose_parent_is_beside_it_but_not_given_names_it(tmp_path: Path) -> None:
    """The investigator copied beside a file of its id (its parent's name, one minute
    earlier: FORMATS-gemini §1.9), only the investigator given: its parent is that id, and
    the warning asks for the parent's journal (it is there, not read)."""
    chats = tmp_path / "jules" / "chats"
    chats.mkdir(parents=True)
    child_path = chats / SIBLING.name
    child_path.write_bytes(SIBLING.read_bytes())
    (chats / "session-2026-02-25T12-45-7740a707.json").write_text("{}")
    found, diagnostics = read(child_path)
    sid = _doc(SIBLING)["sessionId"]
    (child,) = found
    assert (child.session_id, child.parent_session) == (f"{sid}/{SIBLING.stem}", sid)
    (warning,) = diagnostics.warnings
    assert warning.kind == "parent-not-exported"
    assert "not among the journals read" in warning.message


@needs_shared
def test_a_sibling_subagent_links_to_the_parent_call_running_when_it_started(
    tmp_path: Path,
) -> None:
    """The myflix investigator given entire-ab's session id and moved (edited) to start
    during entire-ab's write_file call: both in one `chats/`, it is that call's subagent."""
    parent_doc = _doc()
    messages = copy.deepcopy(_doc(SIBLING)["messages"])
    start = ns(parent_doc["messages"][1]["timestamp"])
    for index, message in enumerate(messages):
        message["timestamp"] = f"2026-01-15T20:51:{53 + index}.000Z"
    chats = tmp_path / "jules" / "chats"
    chats.mkdir(parents=True)
    (chats / "session-2026-01-15T20-51-f7633853.json").write_bytes(DOCUMENT.read_bytes())
    child_path = chats / "session-2026-01-15T20-52-f7633853.json"
    sid = parent_doc["sessionId"]
    document(
        chats,
        messages,
        source=SIBLING,
        name=child_path.name,
        sessionId=sid,
        startTime="2026-01-15T20:51:53.000Z",
    )
    found = _by_id(sessions(chats))
    child = found[f"{sid}/session-2026-01-15T20-52-f7633853"]
    call = parent_doc["messages"][1]["toolCalls"][0]["id"]
    assert (child.parent_session, child.parent_call_id) == (sid, call)
    assert child.start_ns > start
    tool = next(t for t in found[sid].tool_calls if t.call_id == call)
    assert tool.child_session == child.session_id


@needs_shared
def test_a_sibling_read_with_its_parent_from_another_folder_is_its_child(
    tmp_path: Path,
) -> None:
    """The hand-made pair of the test above, the parent given from another folder: no
    file of its id beside the subagent, but its parent is read: linked, no warning."""
    parent_doc = _doc()
    messages = copy.deepcopy(_doc(SIBLING)["messages"])
    for index, message in enumerate(messages):
        message["timestamp"] = f"2026-01-15T20:51:{53 + index}.000Z"
    here, there = tmp_path / "a" / "chats", tmp_path / "b"
    here.mkdir(parents=True)
    there.mkdir()
    (there / "session-2026-01-15T20-51-f7633853.json").write_bytes(DOCUMENT.read_bytes())
    sid = parent_doc["sessionId"]
    child_path = document(
        here,
        messages,
        source=SIBLING,
        name="session-2026-01-15T20-52-f7633853.json",
        sessionId=sid,
        startTime="2026-01-15T20:51:53.000Z",
    )
    found, diagnostics = read(there, child_path)
    child = _by_id(found)[f"{sid}/session-2026-01-15T20-52-f7633853"]
    assert (child.parent_session, child.parent_call_id) == (
        sid,
        parent_doc["messages"][1]["toolCalls"][0]["id"],
    )
    assert diagnostics.warnings == []


def test_a_legacy_document_resumed_as_a_log_is_read_once(tmp_path: Path) -> None:
    """≥0.39 resumes a ≤0.38 session into a `.jsonl` beside the `.json`, under the same
    id: the log supersedes the document (here the tp-tutor log given entire-ab's id)."""
    folder = tmp_path / "proj" / "chats"
    folder.mkdir(parents=True)
    legacy = folder / "session-2026-01-15T20-51-f7633853.json"
    legacy.write_bytes(DOCUMENT.read_bytes())
    lines = raw_lines(LOG)
    header = json.loads(lines[0])
    header["sessionId"] = _doc()["sessionId"]
    log = folder / "session-2026-01-15T20-51-f7633853.jsonl"
    log.write_text("\n".join([json.dumps(header), *lines[1:]]), encoding="utf-8")
    (session,), diagnostics = read(legacy, log)
    assert diagnostics.notes["gemini-cli:legacy-json-superseded"] == 1
    assert (session.session_id, session.sources) == (header["sessionId"], (str(log),))


# --------------------------------------------------------------------------- containers


def _warnings(diagnostics: Diagnostics) -> list[tuple[str, int | None, str, str]]:
    return [(Path(w.path).name, w.line, w.kind, w.message) for w in diagnostics.warnings]


def test_log_lines_that_are_not_records_are_warned_by_line(tmp_path: Path) -> None:
    """tp-tutor with, after line 4, a JSON array, a `$set` that is no object and a message
    without an id (hand-made lines: no real log has them): warned by line or given the
    line as id; `$set` fields other than messages update the header."""
    lines = raw_lines(LOG)
    message = {**record(LOG, 6)}
    del message["id"]
    extra = ["[1, 2]", json.dumps({"$set": ["x"]}), json.dumps(message), '{"hologram": 1}']
    summary = json.dumps({"$set": {"summary": "Set up the terminal."}})
    path = tmp_path / "session-l.jsonl"
    path.write_text("\n".join([*lines[:4], *extra, summary, *lines[4:]]), encoding="utf-8")
    (session,), diagnostics = read(path)
    assert _warnings(diagnostics) == [
        ("session-l.jsonl", 5, "bad-shape", "line is not a JSON object"),
        ("session-l.jsonl", 6, "bad-shape", "$set is not an object"),
    ]
    assert "line-7" in {p.id for p in session.prompts}
    assert dict(session.facts)["session_summary"] == "Set up the terminal."
    assert dict(diagnostics.unrecognised) == {"gemini-cli:untyped": 1}


def test_a_log_without_its_header_line_is_read(tmp_path: Path) -> None:
    """A 0.46 log re-created while the CLI ran lost its header (DingJun1028/esggo, not
    copied): tp-tutor without line 1 is still read, its id from the file's name."""
    path = tmp_path / "session-2026-04-24T23-16-c8b2cbd9.jsonl"
    path.write_text("\n".join(raw_lines(LOG)[1:]), encoding="utf-8")
    (session,), diagnostics = read(path)
    assert _warnings(diagnostics) == [
        (path.name, 2 - 1, "no-header", "no session header line; id from the name")
    ]
    assert session.session_id == path.stem
    assert len(session.responses) == 5
    assert dict(session.facts)["recording_format"] == "jsonl"


def test_checkpoint_messages_without_ids_get_the_line_s(tmp_path: Path) -> None:
    """A `$set.messages` holding a non-object and tp-tutor's line 2 without its id."""
    header = json.loads(raw_lines(LOG)[0])
    turn = {**record(LOG, 2)}
    del turn["id"]
    path = write(tmp_path, [header, {"$set": {"messages": ["x", turn]}}], name="session-i.jsonl")
    (session,) = sessions(path)
    assert [c.id for c in session.snapshots[-1].changes] == ["line-2.1:0"]


def test_a_one_line_document_is_a_document(tmp_path: Path) -> None:
    """A legacy document written on one line (`JSON.stringify` without indent, which
    ≥0.39's reader also accepts): entire-ab compacted onto one line."""
    path = tmp_path / "session-one.jsonl"
    path.write_text(json.dumps(_doc()), encoding="utf-8")
    (session,), diagnostics = read(path)
    assert dict(session.facts)["recording_format"] == "json (one line)"
    assert len(session.responses) == 10 and diagnostics.warnings == []
    # Named .json it is the document it is.
    other = tmp_path / "session-one.json"
    other.write_text(json.dumps(_doc()), encoding="utf-8")
    (same,) = sessions(other)
    assert dict(same.facts)["recording_format"] == "json"


def test_a_log_named_json_is_read_as_a_log(tmp_path: Path) -> None:
    """tp-tutor from line 3 on (its header lost: the first line is a short `$set`),
    saved as `.json`: the lines are a log, not a document."""
    path = tmp_path / "session-x.json"
    path.write_text("\n".join(raw_lines(LOG)[2:]), encoding="utf-8")
    (session,), diagnostics = read(path)
    assert dict(session.facts)["recording_format"] == "jsonl"
    assert [w.kind for w in diagnostics.warnings] == ["no-header"]
    assert len(session.responses) == 5


def _adapter_read(path: Path) -> tuple[list[Session], Diagnostics]:
    """The adapter itself on one file, as the loader hands it a group (no sniffing)."""
    from agent_profiler.adapters import SniffedFile

    diagnostics = Diagnostics()
    (group,) = gemini_cli.plan([SniffedFile(path, [])])
    return gemini_cli.read(group, diagnostics), diagnostics


def test_a_document_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """entire-ab with a UTF-8 BOM (hand-made). Only the adapter reads it: the loader's
    sniff refuses the file first (see /tmp/survivors/gemini.md, "bugs")."""
    path = tmp_path / "session-bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + DOCUMENT.read_bytes())
    (session,), diagnostics = _adapter_read(path)
    assert len(session.responses) == 10
    assert (diagnostics.documents_read, diagnostics.records_parsed) == (1, len(_messages()))
    # Parsed whole, not salvaged.
    assert (diagnostics.warnings, dict(session.facts)["recording_format"]) == ([], "json")


def test_each_document_counts_its_messages_as_records(tmp_path: Path) -> None:
    """entire-ab (13 messages) read with the warning-only session (1 message) and one
    whose messages are no list in a one-line document (hand-made): one record each at
    least, every document one document; a message without id is named by its place."""
    warning = DATA / "entire-ec-38b74f08e3-2_session-warning-only.json"
    nothing = tmp_path / "session-null.jsonl"
    nothing.write_text(json.dumps({**_doc(), "messages": None}) + "\n", encoding="utf-8")
    diagnostics = Diagnostics()
    result = load([DOCUMENT, warning, nothing], diagnostics)
    assert result.failures == [] and len(result.sessions) == 2
    # two .json documents, and the one-line .jsonl read as a line
    assert (diagnostics.documents_read, diagnostics.lines_read) == (2, 1)
    assert diagnostics.records_parsed == len(_messages()) + 1 + 1
    messages = copy.deepcopy(_messages()[:2])
    del messages[0]["id"]
    (session,) = sessions(document(tmp_path, messages))
    assert [p.id for p in session.prompts] == ["message-0"]


def test_a_document_without_messages_is_not_a_session(tmp_path: Path) -> None:
    value = {k: v for k, v in _doc().items() if k != "messages"}
    value["messages"] = {"not": "a list"}
    path = tmp_path / "session-bad.json"
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")
    result = load([path], Diagnostics())
    assert [str(e) for e in result.failures] == [
        f"{path}: not a Gemini CLI session (no messages list)"
    ]


def test_a_cut_short_document_keeps_its_header_and_complete_messages(tmp_path: Path) -> None:
    """entire-ab cut inside message 4 (copied while Gemini CLI rewrote it): the header
    fields and messages 0–3 are kept, with one warning naming the file."""
    data = DOCUMENT.read_bytes()
    messages = _messages()
    cut = data.index(messages[4]["id"].encode()) + 10
    path = tmp_path / "session-cut.json"
    path.write_bytes(data[:cut])
    (session,), diagnostics = read(path)
    assert _warnings(diagnostics) == [
        (
            path.name,
            None,
            "truncated-document",
            "JSON document cut short or damaged; the first 4 complete messages kept",
        )
    ]
    assert diagnostics.records_parsed == 4
    header = _doc()
    assert (session.session_id, session.start_ns) == (
        header["sessionId"],
        ns(header["startTime"]),
    )
    assert dict(session.facts)["recording_format"] == "json (cut short)"
    assert [r.id for r in session.responses] == [m["id"] for m in messages[1:4]]


def test_a_document_cut_before_its_messages_is_not_a_session(tmp_path: Path) -> None:
    """Cut before its `messages`, or with a header whose id is no text (edited)."""
    data = DOCUMENT.read_bytes()
    value = _doc()
    value["sessionId"] = 7
    unnamed = json.dumps(value, indent=2).encode()
    cuts = (
        ("session-a.json", data[: data.index(b'"messages"')]),
        ("session-b.json", unnamed[:-300]),
    )
    for name, cut in cuts:
        path = tmp_path / name
        path.write_bytes(cut)
        result = load([path], Diagnostics())
        assert [str(e) for e in result.failures] == [
            f"{path}: not a Gemini CLI session (damaged JSON document)"
        ], name


# --------------------------------------------------------------------------- times


def test_a_lying_timestamp_is_warned_by_its_place_in_the_document(tmp_path: Path) -> None:
    """entire-ab's message 3 dated 2099 (edited): warned as `messages[3]` (a document has
    no lines to number) and placed 1 ms after the record before it."""
    messages = copy.deepcopy(_messages()[:5])
    messages[3]["timestamp"] = "2099-01-01T00:00:00.000Z"
    path = document(tmp_path, messages)
    (session,), diagnostics = read(path)
    ((name, line, kind, message),) = _warnings(diagnostics)
    assert (name, line, kind) == (path.name, None, "time-outlier")
    assert message.startswith("messages[3]: timestamp 2099-01-01T00:00:00Z is ")
    response = next(r for r in session.responses if r.id == messages[3]["id"])
    placed = ns(messages[2]["timestamp"]) + MS
    # Placed by the records' clock, which does not see call completions: it starts where
    # it ends, since the call before it completed later.
    assert (response.start_ns, response.end_ns) == (placed, placed)
    assert session.end_ns == ns(messages[4]["timestamp"])


def test_a_lying_timestamp_in_a_log_is_warned_by_line(tmp_path: Path) -> None:
    """tp-tutor's line 11 dated 1999 (edited)."""
    lines = raw_lines(LOG)
    edited = record(LOG, 11)
    edited["timestamp"] = "1999-12-31T00:00:00.000Z"
    lines[10] = json.dumps(edited)
    path = tmp_path / "session-t.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    (session,), diagnostics = read(path)
    ((_, line, kind, message),) = _warnings(diagnostics)
    assert (line, kind) == (11, "time-outlier")
    assert message.startswith("timestamp 1999-12-31T00:00:00Z is ")
    response = next(r for r in session.responses if r.id == edited["id"])
    assert response.end_ns == ns(record(LOG, 10)["timestamp"]) + MS


def test_a_message_without_a_time_is_placed_after_the_one_before(tmp_path: Path) -> None:
    """entire-ab's message 2 without `timestamp` (edited): noted, not warned (Gemini CLI
    always writes one), placed 1 ms after the last time seen (message 1's call)."""
    messages = copy.deepcopy(_messages()[:4])
    del messages[2]["timestamp"]
    (session,), diagnostics = read(document(tmp_path, messages))
    assert diagnostics.notes["gemini-cli:message-without-timestamp"] == 1
    assert diagnostics.warnings == []
    response = next(r for r in session.responses if r.id == messages[2]["id"])
    # The clock follows records, not call completions: 1 ms after message 1.
    assert response.end_ns == ns(messages[1]["timestamp"]) + MS


def test_the_session_starts_at_the_header_s_start_time_when_it_is_believable(
    tmp_path: Path,
) -> None:
    """entire-ab's `startTime` equals its first message's time; moved 1 s earlier it is
    the session's start; in 2099 it is not believed and the first message is the start.
    An undated first message is placed at the start time."""
    messages = copy.deepcopy(_messages()[:3])
    first = ns(messages[0]["timestamp"])
    earlier = document(
        tmp_path, messages, name="session-e.json", startTime="2026-01-15T20:51:47.582Z"
    )
    assert sessions(earlier)[0].start_ns == first - 1000 * MS
    lying = document(tmp_path, messages, name="session-l.json", startTime="2099-01-01T00:00:00Z")
    assert sessions(lying)[0].start_ns == first
    del messages[0]["timestamp"]
    undated = document(
        tmp_path, messages, name="session-u.json", startTime="2026-01-15T20:51:47.582Z"
    )
    (session,) = sessions(undated)
    assert (session.start_ns, session.prompts[0].start_ns) == (first - 1000 * MS,) * 2


# --------------------------------------------------------------------------- finding files


def test_the_sniff_knows_a_header_a_set_line_or_a_gemini_record() -> None:
    """tp-tutor's lines: the header (line 1), a `$set` (line 3) and a `gemini` record
    (line 4) each say Gemini CLI; a user record (line 2) alone does not (other harnesses
    have those), nor a `$set` with other keys, nor a `gemini` record past the 20th line."""
    header, user, update, answer = (record(LOG, n) for n in (1, 2, 3, 4))
    assert gemini_cli.detect([header]) and gemini_cli.detect([update])
    assert gemini_cli.detect([user, answer])
    assert not gemini_cli.detect([user])
    assert not gemini_cli.detect([{**update, "id": "x"}])
    assert not gemini_cli.detect([{**answer, "sessionId": "s"}])
    assert not gemini_cli.detect([*[user] * 20, answer])
    assert gemini_cli.detect([*[user] * 19, answer])
    assert not gemini_cli.detect([{k: v for k, v in header.items() if k != "projectHash"}])
    assert not gemini_cli.detect([{**header, "sessionId": 7}])
    assert not gemini_cli.detect([])


def test_a_document_is_claimed_by_its_header_keys(tmp_path: Path) -> None:
    """entire-ab is claimed; so is it indented; not a JSON array, not a document whose
    header keys are past the first 4 KiB (here after its messages: hand-made)."""
    assert gemini_cli.claim(DOCUMENT)
    spaced = tmp_path / "spaced.json"
    spaced.write_bytes(b"\n  " + DOCUMENT.read_bytes())
    assert gemini_cli.claim(spaced)
    listed = tmp_path / "listed.json"
    listed.write_text(json.dumps([_doc()]), encoding="utf-8")
    assert not gemini_cli.claim(listed)
    value = _doc()
    late = tmp_path / "late.json"
    late.write_text(json.dumps({"messages": value["messages"], **value}), encoding="utf-8")
    assert not gemini_cli.claim(late)
    no_hash = tmp_path / "no-hash.json"
    no_hash.write_text(json.dumps({k: v for k, v in value.items() if k != "projectHash"}))
    assert not gemini_cli.claim(no_hash)
    assert not gemini_cli.claim(tmp_path / "missing.json")


def test_a_folder_walk_reads_session_documents_by_place_or_content(tmp_path: Path) -> None:
    """Which `.json` files a walk reads: `chats/session-*.json`, any in a nested subagent
    folder, and elsewhere only those with a session header (or a damaged gzip)."""
    chats = tmp_path / "chats"
    nested = chats / "parent-id"
    nested.mkdir(parents=True)
    other = tmp_path / "notes.json"
    other.write_text('{"a": 1}')
    for path in (chats / "session-1.json", chats / "other.json", nested / "agent.json"):
        path.write_text('{"a": 1}')
    copy_ = tmp_path / "entire-copy.json"
    copy_.write_bytes(DOCUMENT.read_bytes())
    damaged = tmp_path / "broken.json.gz"
    damaged.write_bytes(b"\x1f\x8b\x08\x00garbage")
    plain_gz = tmp_path / "plain.json.gz"
    plain_gz.write_bytes(gzip.compress(b'{"a": 1}'))
    roles = {
        p.name: gemini_cli.role(p)
        for p in (
            chats / "session-1.json",
            chats / "other.json",
            nested / "agent.json",
            other,
            copy_,
            damaged,
            plain_gz,
            tmp_path / "session-1.jsonl",
            chats / "session-1.txt",
        )
    }
    assert roles == {
        "session-1.json": "read",
        "other.json": "",
        "agent.json": "read",
        "notes.json": "",
        "entire-copy.json": "read",
        "broken.json.gz": "read",
        "plain.json.gz": "",
        "session-1.jsonl": "",
        "session-1.txt": "",
    }


def test_locate_lists_main_recordings_with_project_and_start(tmp_path: Path) -> None:
    """`~/.gemini/tmp/<project>/chats/session-*` (or `$GEMINI_CLI_HOME/.gemini`), sorted;
    a legacy `.json` beside the `.jsonl` it was resumed into is left out; the start time
    comes from the file's head."""
    home = tmp_path / "home"
    chats = home / ".gemini" / "tmp" / "webapp" / "chats"
    chats.mkdir(parents=True)
    (chats.parent / ".project_root").write_text("/work/webapp\n")
    other = home / ".gemini" / "tmp" / "a" / "chats"
    other.mkdir(parents=True)
    (other / "session-2026-04-24T23-16-c8b2cbd9.jsonl").write_bytes(LOG.read_bytes())
    (chats / "session-2026-01-15T20-51-f7633853.json").write_bytes(DOCUMENT.read_bytes())
    (chats / "session-2026-01-15T20-51-f7633853.jsonl.gz").write_bytes(
        gzip.compress(LOG.read_bytes())
    )
    (chats / "session-2026-01-16T00-00-aaaaaaaa.json").write_bytes(DOCUMENT.read_bytes())
    (chats / "session-2026-01-16T00-00-bbbbbbbb.json").write_text("{}")
    (chats / "notes.json").write_bytes(DOCUMENT.read_bytes())
    (other / "session-2026-04-25T00-00-cccccccc.json.gz").write_bytes(
        gzip.compress(DOCUMENT.read_bytes())
    )
    (other / "session-2026-04-25T00-00-cccccccc.jsonl").write_bytes(LOG.read_bytes())
    found = list(gemini_cli.locate({"HOME": str(home)}))
    log_start = ns(record(LOG, 1)["startTime"])
    assert [(p.path.relative_to(home).as_posix(), p.project, p.start_ns) for p in found] == [
        (".gemini/tmp/a/chats/session-2026-04-24T23-16-c8b2cbd9.jsonl", "a", log_start),
        (".gemini/tmp/a/chats/session-2026-04-25T00-00-cccccccc.jsonl", "a", log_start),
        (
            ".gemini/tmp/webapp/chats/session-2026-01-15T20-51-f7633853.jsonl.gz",
            "/work/webapp",
            log_start,
        ),
        (
            ".gemini/tmp/webapp/chats/session-2026-01-16T00-00-aaaaaaaa.json",
            "/work/webapp",
            ns(_doc()["startTime"]),
        ),
        (".gemini/tmp/webapp/chats/session-2026-01-16T00-00-bbbbbbbb.json", "/work/webapp", None),
    ]
    assert list(gemini_cli.locate({"GEMINI_CLI_HOME": str(tmp_path), "HOME": str(home)})) == []
    assert len(list(gemini_cli.locate({"GEMINI_CLI_HOME": str(home), "HOME": "/nowhere"}))) == 5


def test_files_of_one_session_tree_are_read_together(tmp_path: Path) -> None:
    """The plan: a nested subagent goes with its parent's id (its folder), a log by its
    header line, a document by the id in its head; a file with no id stands alone. The
    main file's folder of subagents, `chats/<its id>/`, comes with it (shcg5o, not given;
    ngzcxj, given, once)."""
    from agent_profiler.adapters import SniffedFile

    nested = TREE / PARENT / "ngzcxj.json"
    main = TREE / "session-2026-04-12T01-18-01b2c62e.json"
    lonely = tmp_path / "session-none.json"
    lonely.write_text("{}")
    other = tmp_path / "session-other.json"
    other.write_text("{}")
    files = [
        SniffedFile(nested, []),
        SniffedFile(LOG, [record(LOG, 1)]),
        SniffedFile(main, []),
        SniffedFile(DOCUMENT, [{"sessionId": 7}]),
        SniffedFile(lonely, []),
        SniffedFile(other, []),
    ]
    groups = gemini_cli.plan(files)
    tree = (nested, main, TREE / PARENT / "shcg5o.json")
    assert [g.paths for g in groups] == [tree, (LOG,), (DOCUMENT,), (lonely,), (other,)]
    assert {g.harness for g in groups} == {Harness.GEMINI_CLI}


# --------------------------------------------------------------------------- usage


def test_usage_prompt_includes_cached_and_output_includes_thoughts(tmp_path: Path) -> None:
    """entire-ab message 1: `input` is the whole prompt (cached included), the completion
    is `output` + `thoughts`. Edited: `tool` tokens (0 in every real file) are noted, and
    `cached` over `input` (never seen) is capped at the prompt."""
    messages = copy.deepcopy(_messages()[:2])
    tokens = messages[1]["tokens"]
    (session,), diagnostics = read(document(tmp_path, messages))
    (response,) = session.responses
    usage = response.usage
    assert (usage.prompt_tokens, usage.input_tokens, usage.cache_read_tokens) == (
        tokens["input"],
        tokens["input"],
        tokens["cached"],
    )
    assert (usage.output_tokens, usage.reasoning_tokens) == (
        tokens["output"] + tokens["thoughts"],
        tokens["thoughts"],
    )
    assert (response.model, response.is_error, response.stop_reason) == (
        messages[1]["model"],
        False,
        None,
    )
    assert session.snapshots[0].reported_tokens == tokens["input"]
    assert diagnostics.notes["gemini-cli:tool-use-prompt-tokens"] == 0
    tokens.update(tool=7, cached=tokens["input"] + 100)
    (edited,), diagnostics = read(document(tmp_path, messages, name="session-tool.json"))
    assert edited.responses[0].usage.cache_read_tokens == tokens["input"]
    assert diagnostics.notes["gemini-cli:tool-use-prompt-tokens"] == 1


def _cut_after(data: bytes, marker: bytes, extra: int = 0) -> bytes:
    return data[: data.index(marker) + extra]


def _salvaged(tmp_path: Path, data: bytes, name: str = "session-cut.json") -> Any:
    path = tmp_path / name
    path.write_bytes(data)
    return read(path)


def test_a_cut_document_s_header_comes_from_before_its_messages(tmp_path: Path) -> None:
    """entire-ab (its `startTime` moved 1 s earlier, `kind: main` and `directories` put in
    the header and a task prompt typed: hand-made) cut inside message 4: the start time
    and kind are kept, so the session starts at startTime and is no subagent despite the
    prompt; the messages are the list after `"messages"`, not the first list met."""
    messages = copy.deepcopy(_messages())
    messages[0]["content"] = "Your task is to " + messages[0]["content"]
    path = document(
        tmp_path,
        messages,
        startTime="2026-01-15T20:51:47.582Z",
        kind="main",
        directories=["/work/webapp"],
    )
    data = path.read_bytes()
    (session,), _ = _salvaged(tmp_path, _cut_after(data, messages[4]["id"].encode()))
    assert session.start_ns == ns("2026-01-15T20:51:47.582Z")
    assert (session.parent_session, session.prompts[0].source) == (None, "user")
    assert [r.id for r in session.responses] == [m["id"] for m in messages[1:4]]


@pytest.mark.parametrize(
    ("name", "kept"),
    [("pretty", 4), ("compact", 4), ("in-whitespace", 4), ("in-a-character", 5)],
)
def test_a_cut_document_keeps_every_complete_message(tmp_path: Path, name: str, kept: int) -> None:
    """entire-ab cut short: pretty-printed (as written) inside message 4, compact (one
    line, as ≥0.39 also accepts) inside message 4, in the whitespace after message 3,
    and inside the "→" of message 5's notice (a cut UTF-8 character)."""
    messages = _messages()
    pretty = DOCUMENT.read_bytes()
    compact = json.dumps(_doc(), ensure_ascii=False).encode()
    cut = {
        "pretty": _cut_after(pretty, messages[4]["id"].encode()),
        "compact": _cut_after(compact, messages[4]["id"].encode()),
        "in-whitespace": _cut_after(pretty, b'{\n      "id": "' + messages[4]["id"].encode()),
        "in-a-character": _cut_after(pretty, "→".encode(), 1),
    }[name]
    if name == "compact":  # the loader's sniff takes a one-line file for a log: no records
        path = tmp_path / "session-cut.json"
        path.write_bytes(cut)
        (session,), diagnostics = _adapter_read(path)
    else:
        (session,), diagnostics = _salvaged(tmp_path, cut)
    assert [w.message for w in diagnostics.warnings] == [
        "JSON document cut short or damaged; the first "
        f"{kept} complete message{'' if kept == 1 else 's'} kept"
    ]
    assert diagnostics.records_parsed == kept
    requests = [m["id"] for m in messages[:kept] if m["type"] == "gemini"]
    assert [r.id for r in session.responses] == requests


def test_a_cut_document_names_its_messages_by_place(tmp_path: Path) -> None:
    """entire-ab edited: message 3 without its id and dated 2099, message 2 holding a
    call whose arguments have a `messages` key; then cut inside message 4. The message
    without id is `message-3`, its warning says `messages[3]`, and the `messages` key of
    the arguments does not fool the salvage."""
    messages = copy.deepcopy(_messages())
    del messages[3]["id"]
    messages[3]["timestamp"] = "2099-01-01T00:00:00.000Z"
    messages[2]["toolCalls"][0]["args"] = {"messages": ["a", "b"]}
    data = document(tmp_path, messages).read_bytes()
    (session,), diagnostics = _salvaged(tmp_path, _cut_after(data, messages[4]["id"].encode()))
    assert [r.id for r in session.responses] == [messages[1]["id"], messages[2]["id"], "message-3"]
    (outlier,) = [w for w in diagnostics.warnings if w.kind == "time-outlier"]
    assert outlier.message.startswith("messages[3]: timestamp 2099-01-01T00:00:00Z is ")
    (call,) = [t for t in session.tool_calls if t.call_id == messages[2]["toolCalls"][0]["id"]]
    assert call.arg_keys == ("messages",)


def test_a_cut_document_stops_at_a_list_item_that_is_no_message(tmp_path: Path) -> None:
    """entire-ab with a string in its `messages` list after message 1 (hand-made), cut
    inside message 4: messages 0 and 1 are kept."""
    messages: list[Any] = copy.deepcopy(_messages())
    messages.insert(2, "not a message")
    data = document(tmp_path, messages).read_bytes()
    (session,), diagnostics = _salvaged(tmp_path, _cut_after(data, messages[5]["id"].encode()))
    assert [r.id for r in session.responses] == [messages[1]["id"]]
    assert diagnostics.records_parsed == 2


def test_a_cut_document_with_no_complete_message_counts_one_record(tmp_path: Path) -> None:
    """Cut right after `"messages": [`, read with the whole entire-ab: no session from
    the cut one, one record counted for it, beside the other's."""
    data = DOCUMENT.read_bytes()
    path = tmp_path / "session-empty.json"
    path.write_bytes(_cut_after(data, b'"messages": [', len(b'"messages": [')))
    found, diagnostics = read(DOCUMENT, path)
    assert len(found) == 1
    assert diagnostics.records_parsed == len(_messages()) + 1
    assert (diagnostics.documents_read, diagnostics.lines_read) == (2, 0)  # not lines
    assert [w.message for w in diagnostics.warnings] == [
        "JSON document cut short or damaged; the first 0 complete messages kept"
    ]


def test_a_turn_listed_twice_in_a_checkpoint_counts_once(tmp_path: Path) -> None:
    """History sync names turns by a hash of their content (≥0.44 hex ids), so two equal
    turns may share an id (hand-made: the corpus has no such checkpoint). Here the list
    keeps lines 2–6, drops lines 10–11, and adds one summary turn written twice: one new
    turn for two that left, a compaction."""
    first = record(LOG, 2)
    snapshot = {**first, "id": "snap", "content": [{"text": "<state_snapshot>s</state_snapshot>"}]}
    kept = [record(LOG, n) for n in (2, 4, 6)]
    session, _ = _checkpointed(tmp_path, [*kept, snapshot, snapshot])
    assert [c.id for c in session.compactions] == ["checkpoint:0"]
    assert session.compactions[0].removed_items == 4  # line 10's text, call, result; line 11


def test_an_api_error_in_a_turn_is_that_turn_s_failed_request(tmp_path: Path) -> None:
    """entire-ab's messages 0–1, then its `info` (message 5) edited into the `error` an
    API failure records: a failed request of the turn, from the last thing recorded (the
    call's completion) to the notice. An `error` without content is an empty marker."""
    messages = copy.deepcopy(_messages())
    api = "[API Error: Requested entity was not found.]"
    error = {**messages[5], "type": "error", "content": api}
    bare = {k: v for k, v in messages[5].items() if k != "content"}
    bare.update(type="error", id="bare", timestamp="2026-01-15T20:52:18.000Z")
    (session,) = sessions(document(tmp_path, [*messages[:2], error, bare]))
    (request,) = session.failed_requests
    assert (request.id, request.prompt_id, request.stop_reason) == (
        error["id"],
        messages[0]["id"],
        api,
    )
    assert (request.start_ns, request.end_ns) == (
        ns(messages[1]["toolCalls"][0]["timestamp"]),
        ns(error["timestamp"]),
    )
    assert [(m.kind, m.value) for m in session.markers] == [("error", api), ("error", "")]


def test_a_lie_on_the_first_message_is_judged_against_its_neighbours(tmp_path: Path) -> None:
    """entire-ab's first message (the prompt) dated 2099 (edited): judged against the
    median of the first three times, it is warned about and placed at the start time."""
    messages = copy.deepcopy(_messages()[:4])
    messages[0]["timestamp"] = "2099-01-01T00:00:00.000Z"
    (session,), diagnostics = read(document(tmp_path, messages))
    ((_, line, kind, message),) = _warnings(diagnostics)
    assert (line, kind) == (None, "time-outlier")
    assert message.startswith("messages[0]: timestamp 2099-01-01T00:00:00Z is ")
    assert message.endswith("days from the times around it; placed just after that record")
    start = ns(_doc()["startTime"])
    assert (session.start_ns, session.prompts[0].start_ns) == (start, start)
    assert session.end_ns == ns(messages[3]["toolCalls"][0]["timestamp"])


def test_an_undated_first_message_is_placed_at_the_first_believable_time(
    tmp_path: Path,
) -> None:
    """entire-ab's prompt without `timestamp` (edited): at the header's start time; with a
    start time a year off (edited, believable as a date but not beside the messages), at
    the first dated message; with no message dated at all, at the start time."""
    messages = copy.deepcopy(_messages()[:4])
    del messages[0]["timestamp"]
    start = ns(_doc()["startTime"])
    (session,) = sessions(document(tmp_path, messages, name="session-a.json"))
    assert session.prompts[0].start_ns == start
    off = document(tmp_path, messages, name="session-b.json", startTime="2025-01-01T00:00:00Z")
    (session,) = sessions(off)
    first = ns(messages[1]["timestamp"])
    assert (session.prompts[0].start_ns, session.start_ns) == (first, first)
    assert session.end_ns == ns(messages[3]["toolCalls"][0]["timestamp"])
    for message in messages:
        message.pop("timestamp", None)
        for call in message.get("toolCalls", []):
            call.pop("timestamp")
        for thought in message.get("thoughts", []):
            thought.pop("timestamp")
    (undated,) = sessions(document(tmp_path, messages, name="session-c.json"))
    assert [r.end_ns for r in undated.responses] == [start + MS, start + 2 * MS, start + 3 * MS]
    assert (undated.start_ns, undated.end_ns) == (start, start + 3 * MS)


def test_the_session_ends_at_the_last_thing_recorded(tmp_path: Path) -> None:
    """entire-ab's messages 0–4 with message 4 undated (edited): placed 1 ms after message
    3, before message 3's call completed; the session still ends at that completion."""
    messages = copy.deepcopy(_messages()[:5])
    del messages[4]["timestamp"]
    (session,) = sessions(document(tmp_path, messages))
    done = ns(messages[3]["toolCalls"][0]["timestamp"])
    assert session.responses[-1].end_ns == ns(messages[3]["timestamp"]) + MS < done
    assert session.end_ns == done


def test_a_thought_far_from_its_response_or_undated_is_not_its_start(tmp_path: Path) -> None:
    """entire-ab message 1's first thought dated 2020 (believable, but six years before its
    response) and its second undated (edited): the request starts at the record before."""
    messages = copy.deepcopy(_messages()[:2])
    messages[1]["thoughts"][0]["timestamp"] = "2020-01-01T00:00:00.000Z"
    del messages[1]["thoughts"][1]["timestamp"]
    (session,) = sessions(document(tmp_path, messages))
    assert session.responses[0].start_ns == ns(messages[0]["timestamp"])


def test_a_message_without_a_type_is_not_recognised(tmp_path: Path) -> None:
    """entire-ab's message 2 without `type` (edited): not read, counted as untyped; the
    warning-only session's `warning` (real) is a marker."""
    messages = copy.deepcopy(_messages()[:3])
    del messages[2]["type"]
    (session,), diagnostics = read(document(tmp_path, messages))
    assert dict(diagnostics.unrecognised) == {"gemini-cli:untyped": 1}
    assert [r.id for r in session.responses] == [messages[1]["id"]]
    warning = DATA / "entire-ec-38b74f08e3-2_session-warning-only.json"
    (only,), diagnostics = read(warning)
    (notice,) = _messages(warning)
    assert [(m.kind, m.value) for m in only.markers] == [("warning", preview(notice["content"]))]
    assert not diagnostics.unrecognised


def test_every_item_leaves_with_its_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Items of each kind of user turn go when their message goes: tp-tutor's prompt
    (line 2), a synthetic result turn of an unknown call, line 4's answer, then a
    checkpoint that keeps them and adds a `<session_context>` turn (with two
    `<loaded_context>` blocks) and a `<state_snapshot>` turn; line 11's request; then
    `/rewind` to the result turn, line 13's prompt and line 15's request (hand-made turns
    around real lines: the corpus has no rewind, no result turn, one loaded block)."""
    header, prompt = record(LOG, 1), record(LOG, 2)
    result = {
        **prompt,
        "id": "result-turn",
        "content": [
            {"functionResponse": {"id": "gone", "name": "x", "response": {"output": "ok"}}}
        ],
    }
    blocks = "<loaded_context>GEMINI.md one</loaded_context>\n<loaded_context>two</loaded_context>"
    context = {
        **prompt,
        "id": "context",
        "content": [{"text": f"<session_context>\nenv\n{blocks}\n</session_context>"}],
    }
    snapshot = {**prompt, "id": "snap", "content": [{"text": "<state_snapshot>s</state_snapshot>"}]}
    lines = [
        header,
        prompt,
        result,
        record(LOG, 4),
        {"$set": {"messages": [prompt, result, record(LOG, 4), context, snapshot]}},
        record(LOG, 11),
        {"$rewindTo": "result-turn"},
        record(LOG, 13),
        record(LOG, 15),
    ]
    added = spy(monkeypatch)
    (session,) = sessions(write(tmp_path, lines, name="session-items.jsonl"))
    loaded = by_id(added)["context:0:loaded"]
    assert (loaded.category, loaded.chars) == (RU, len(blocks) - 1)  # both, without the \n
    removed = {c.id for c in session.snapshots[-1].changes if c.change is ChangeKind.REMOVED}
    assert removed == {
        "result-turn:0",
        f"{record(LOG, 4)['id']}:text",
        "context:0",
        "context:0:loaded",
        "snap:0",
    }


def _shift(value: dict[str, Any], delta: int) -> None:
    """Every time of a session document moved by `delta` ns."""

    def moved(text: str) -> str:
        return (
            datetime.fromtimestamp((ns(text) + delta) / 1e9, tz=UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z")
        )

    value["startTime"] = moved(value["startTime"])
    for message in value["messages"]:
        message["timestamp"] = moved(message["timestamp"])
        for item in [*message.get("toolCalls", []), *message.get("thoughts", [])]:
            if "timestamp" in item:
                item["timestamp"] = moved(item["timestamp"])


@pytest.mark.parametrize(
    ("start", "linked"),
    [
        ("2026-04-12T02:26:53.000Z", True),  # after its request began, before the call
        ("2026-04-12T02:26:50.183Z", True),  # exactly 2 s before its request began
        ("2026-04-12T02:26:50.182Z", False),  # 1 ms earlier than that
        ("2026-04-12T02:27:20.826Z", True),  # exactly when the call completed
        ("2026-04-12T02:27:20.827Z", False),  # 1 ms after
    ],
)
def test_a_subagent_belongs_to_the_call_whose_request_was_running(
    tmp_path: Path, start: str, linked: bool
) -> None:
    """shcg5o's start moved (edited) around its cli_help call, whose request began at the
    prompt before it (02:26:52.183, message 50) and which completed at 02:27:20.826: the
    window runs from 2 s before the request to the completion, ends included."""

    def move(name: str, value: dict[str, Any]) -> None:
        if name == "shcg5o":
            _shift(value, ns(start) - ns(value["startTime"]))

    found = _by_id(sessions(_tree(tmp_path, move)))
    child = found[f"{PARENT}/shcg5o"]
    assert child.start_ns == ns(start)
    assert child.parent_call_id == (LAUNCHED["shcg5o"] if linked else None)


def test_of_two_running_calls_the_shortest_launched_the_subagent(tmp_path: Path) -> None:
    """A long call added (edited) to message 49, running from before cli_help to 1 s after
    it: both were running when shcg5o started; the shorter, cli_help, launched it."""

    def add(name: str, value: dict[str, Any]) -> None:
        if name.startswith("session-"):
            long = copy.deepcopy(value["messages"][48]["toolCalls"][0])
            long.update(id="run_shell_command_long", timestamp="2026-04-12T02:27:21.826Z")
            value["messages"][49]["toolCalls"] = [long]

    found = _by_id(sessions(_tree(tmp_path, add)))
    assert found[f"{PARENT}/shcg5o"].parent_call_id == LAUNCHED["shcg5o"]
    long = next(t for t in found[PARENT].tool_calls if t.call_id == "run_shell_command_long")
    assert long.end_ns - long.start_ns > 100 * 1000 * MS and long.child_session is None


def test_a_recording_is_a_subagent_by_kind_by_place_or_by_its_task(tmp_path: Path) -> None:
    """ngzcxj edited: `kind: subagent` copied out of `chats/` with a plain first prompt (a
    0.36 file: not nested yet) is a subagent; nested in `chats/<parent>/` without `kind`
    and with a plain prompt it is one too; `kind: main` is never one."""
    source = TREE / PARENT / "ngzcxj.json"
    value = _doc(source)
    value["messages"][0]["content"] = [{"text": "How do I install an extension?"}]
    alone = tmp_path / "ngzcxj.json"
    alone.write_text(json.dumps(value, indent=2))
    (session,) = sessions(alone)
    assert (session.session_id, session.parent_session, session.child_role) == (
        "ngzcxj",
        None,
        "subagent",
    )
    del value["kind"]
    nested = tmp_path / "chats" / PARENT / "ngzcxj.json"
    nested.parent.mkdir(parents=True)
    nested.write_text(json.dumps(value, indent=2))
    (session,) = sessions(nested)
    assert (session.session_id, session.parent_session) == (f"{PARENT}/ngzcxj", PARENT)
    value["kind"] = "main"
    nested.write_text(json.dumps(value, indent=2))
    (session,) = sessions(nested)
    assert (session.session_id, session.parent_session) == ("ngzcxj", None)


def test_a_superseded_document_does_not_stop_the_rest_of_its_tree(tmp_path: Path) -> None:
    """The resumed pair of the legacy test, plus a ≤0.35 sibling subagent (entire-ab with
    a task prompt, same id, a later minute: hand-made) read after the legacy document."""
    folder = tmp_path / "proj" / "chats"
    folder.mkdir(parents=True)
    (folder / "session-2026-01-15T20-51-f7633853.json").write_bytes(DOCUMENT.read_bytes())
    lines = raw_lines(LOG)
    header = json.loads(lines[0])
    header["sessionId"] = _doc()["sessionId"]
    log = folder / "session-2026-01-15T20-51-f7633853.jsonl"
    log.write_text("\n".join([json.dumps(header), *lines[1:]]), encoding="utf-8")
    messages = copy.deepcopy(_messages()[:3])
    messages[0]["content"] = "Your task is to " + messages[0]["content"]
    document(folder, messages, name="session-2026-01-15T20-59-f7633853.json")
    files = [
        folder / "session-2026-01-15T20-51-f7633853.jsonl",
        folder / "session-2026-01-15T20-51-f7633853.json",
        folder / "session-2026-01-15T20-59-f7633853.json",
    ]
    from agent_profiler.adapters import JournalGroup

    group = JournalGroup(Harness.GEMINI_CLI, None, tuple(files))
    found = gemini_cli.read(group, Diagnostics())
    sid = header["sessionId"]
    assert sorted(s.session_id for s in found) == [sid, f"{sid}/session-2026-01-15T20-59-f7633853"]


def test_an_info_notice_without_text_is_an_empty_marker(tmp_path: Path) -> None:
    """entire-ab's `info` (message 5) without `content` (edited): not a compression
    notice (that one has empty text), an empty marker."""
    messages = copy.deepcopy(_messages()[:6])
    del messages[5]["content"]
    (session,) = sessions(document(tmp_path, messages))
    assert [(m.kind, m.value) for m in session.markers] == [("info", "")]
    assert session.compactions == ()


def test_a_gzipped_log_is_read_as_a_log(tmp_path: Path) -> None:
    path = tmp_path / "session-2026-04-24T23-16-c8b2cbd9.jsonl.gz"
    path.write_bytes(gzip.compress(LOG.read_bytes()))
    (session,), diagnostics = read(path)
    assert dict(session.facts)["recording_format"] == "jsonl"
    assert (len(session.responses), diagnostics.warnings) == (5, [])


def test_a_checkpoint_message_is_warned_by_the_checkpoint_s_line(tmp_path: Path) -> None:
    """tp-tutor's first turns, then a `$set.messages` (line 8) adding a turn dated 2099."""
    late = {**record(LOG, 13), "id": "late", "timestamp": "2099-01-01T00:00:00.000Z"}
    _, path = _checkpointed(tmp_path, [record(LOG, n) for n in (2, 4, 6, 10, 11)] + [late])
    _, diagnostics = read(path)
    assert [(w.line, w.kind) for w in diagnostics.warnings] == [
        (len(FIRST_TURNS) + 1, "time-outlier")
    ]


def test_the_task_prompt_rule_reads_the_first_user_turn(tmp_path: Path) -> None:
    """A ≤0.35 recording (no `kind`, not nested) is a subagent when its first *user* turn
    is a task, whatever comes before it: entire-ab with its update notice moved first and
    a task prompt (edited); and a log without `kind` whose first event is a checkpoint."""
    messages = copy.deepcopy(_messages()[:6])
    messages[0]["content"] = "Your task is to " + messages[0]["content"]
    (session,) = sessions(document(tmp_path, [messages[5], *messages[:5]]))
    assert (session.child_role, session.agent_id) == ("subagent", "session-edited")
    header = {k: v for k, v in record(LOG, 1).items() if k != "kind"}
    lines = [header, {"$set": {"messages": [record(LOG, 2)]}}, record(LOG, 4)]
    (plain,) = sessions(write(tmp_path, lines, name="session-k.jsonl"))
    assert (plain.session_id, plain.parent_session, plain.child_role) == (
        header["sessionId"],
        None,
        None,
    )


def test_a_recording_without_any_time_is_still_read(tmp_path: Path) -> None:
    """entire-ab's messages 0–3 with every time and the header's `startTime` removed
    (hand-made): nothing to place them by, so they are laid out 1 ms apart."""
    messages = copy.deepcopy(_messages()[:4])
    for message in messages:
        del message["timestamp"]
        for item in [*message.get("toolCalls", []), *message.get("thoughts", [])]:
            item.pop("timestamp", None)
    path = document(tmp_path, messages)
    value = json.loads(path.read_text())
    del value["startTime"]
    path.write_text(json.dumps(value, indent=2))
    (session,) = sessions(path)
    assert [r.end_ns - session.start_ns for r in session.responses] == [MS, 2 * MS, 3 * MS]


def test_a_recording_with_no_message_does_not_stop_its_tree(tmp_path: Path) -> None:
    """The expenses-tracker tree plus a subagent file that holds only its header (as
    damini-ai's 202-byte log does; here ngzcxj's header with no messages), read first:
    it gives no session, the three others are all there."""
    root = _tree(tmp_path)
    header = {k: v for k, v in _doc(TREE / PARENT / "ngzcxj.json").items() if k != "messages"}
    (root / PARENT / "aaaaaa.json").write_text(json.dumps({**header, "messages": []}, indent=2))
    found = _by_id(sessions(root))
    assert sorted(found) == [PARENT, f"{PARENT}/ngzcxj", f"{PARENT}/shcg5o"]


def test_a_log_named_like_a_document_is_read_as_a_log(tmp_path: Path) -> None:
    """The real tp-tutor JSONL log copied under a `.json` name (a user's rename): its first
    line, a 200-odd byte header, is a whole object, so it is read as the log it is, the same
    session as under its own name."""
    chats = tmp_path / "chats"
    chats.mkdir()
    renamed = chats / "session-renamed.json"
    renamed.write_bytes(LOG.read_bytes())
    assert len(raw_lines(LOG)[0]) > 64
    (as_log,) = sessions(LOG)
    (as_json,) = sessions(renamed)
    assert (as_json.session_id, len(as_json.responses), len(as_json.prompts)) == (
        as_log.session_id,
        len(as_log.responses),
        len(as_log.prompts),
    )
    assert as_json.snapshots[-1].categories == as_log.snapshots[-1].categories


def test_a_document_with_a_byte_order_mark_is_still_a_gemini_document(tmp_path: Path) -> None:
    """The real ≤0.38 document with a UTF-8 BOM in front (an editor's save): claimed and
    read as without it."""
    marked = tmp_path / "exported.json"
    marked.write_bytes(b"\xef\xbb\xbf" + DOCUMENT.read_bytes())
    (plain,) = sessions(DOCUMENT)
    (bom,) = sessions(marked)
    assert (bom.session_id, len(bom.responses)) == (plain.session_id, len(plain.responses))
    assert bom.snapshots[-1].categories == plain.snapshots[-1].categories


def test_a_document_over_the_size_limit_is_one_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real ≤0.38 document, with the 512 MB limit lowered below its size (a real one
    that large is not kept in the repository): one failure naming the file and the limit."""
    from agent_profiler.adapters import gemini_recording
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.loader import load

    monkeypatch.setattr(gemini_recording, "MAX_DOCUMENT_BYTES", 1_000)
    result = load([DOCUMENT], Diagnostics())
    assert result.sessions == []
    assert [(f.path, f.message) for f in result.failures] == [
        (str(DOCUMENT), "Gemini CLI session document over 512 MB; not read")
    ]


def test_an_io_error_while_reading_a_document_is_one_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real ≤0.38 document, its read failing half way (hand-made: a disk or network
    share going away): one failure naming the file and the cause, no traceback."""
    import contextlib
    from collections.abc import Iterator

    from agent_profiler.adapters import gemini_recording
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.loader import load

    class Failing:
        def read(self, size: int = -1) -> bytes:
            raise OSError(5, "Input/output error")

    # The sniff reads the head through jsonl.peek, as usual; the document's read fails.
    @contextlib.contextmanager
    def opened(path: Any) -> Iterator[Any]:
        yield Failing()

    monkeypatch.setattr(gemini_recording, "open_journal", opened)
    result = load([DOCUMENT], Diagnostics())
    assert result.sessions == []
    assert [(f.path, f.message) for f in result.failures] == [
        (str(DOCUMENT), "cannot read ([Errno 5] Input/output error)")
    ]


def test_a_subagent_copy_given_with_its_main_file_is_read_once(tmp_path: Path) -> None:
    """The main file reads its `chats/<id>/` folder; a copy of one of those recordings given
    beside it (the very bytes) was read again, shown as `…/shcg5o#2`, its requests twice."""
    tree = _tree(tmp_path / "t")
    stray = tmp_path / "copy"
    stray.mkdir()
    (stray / "shcg5o.json").write_bytes((tree / PARENT / "shcg5o.json").read_bytes())
    diagnostics = Diagnostics()
    found = load([stray / "shcg5o.json", tree / MAIN], diagnostics).sessions
    assert sorted(s.session_id for s in found) == sorted(
        [PARENT, f"{PARENT}/shcg5o", f"{PARENT}/ngzcxj"]
    )
    assert "session-repeated" not in diagnostics.warning_counts


def test_a_subagent_without_a_parent_to_name_is_marked_a_subagent_in_the_summary(
    tmp_path: Path,
) -> None:
    """Counted as a subagent by export and the report, it was a main session's row in the
    summary's table."""
    from typer.testing import CliRunner

    from agent_profiler.cli import app

    result = CliRunner().invoke(app, ["summary", str(_stray(tmp_path))])
    assert "| ngzcxj (subagent) " in result.stdout
