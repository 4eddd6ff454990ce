"""Every category rule of the OpenCode adapter (`adapters/opencode.py`) and its three readers
(`adapters/opencode_storage.py`: the export document, the ≤1.1 JSON storage folder, the SQLite
database), pinned on real sessions: the two exports copied in tests/data/journals/opencode and
the shared corpus (`../shared/corpus/opencode`: the compacting session, the parent of the
`@docs` child, the v1.16.0 database; those tests are skipped when it is absent). A test cuts a
real export down to the messages it needs; a rule the corpus has no example of (a retry part,
a multi-step message, reasoning inside `output`) edits a real record and says so."""

from __future__ import annotations

import copy
import gzip
import json
import operator
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters import opencode, opencode_session
from agent_profiler.adapters import opencode_storage as storage
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import JournalError
from agent_profiler.loader import load
from agent_profiler.model import Category, Session, SourceKind
from rules_spy import Added, by_id, spy
from samples import read
from shared_paths import CORPUS as SHARED_CORPUS
from shared_paths import TESTS

HERE = TESTS
DATA = HERE / "data" / "journals" / "opencode"
EXPLORE = DATA / "ses_2bef25635ffe8EzID0I1Oeymal.export.json"  # 1.3.7 `@explore` child
DOCS = DATA / "ses_fd4c895f0ffe6gKgxHiEgiQCcd.export.json"  # 1.18.21 `@docs` child
CORPUS = SHARED_CORPUS / "opencode"
COMPACTING = (
    CORPUS / "session-bridge-1.4.3-compaction" / "ses_277daa810ffePOBsdfS6gm8uA2.export.json"
)
PARENT = (
    CORPUS / "dhc-dashboard-1.18.21-task-subagent" / "ses_fd4e13d58ffetoIsfha64XDWNj.export.json.gz"
)
DATABASE = CORPUS / "monkeycode-v1.16.0-sqlite" / "opencode.db"
needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"shared corpus not found at {CORPUS} (outside the repository)"
)
MS = 1_000_000  # OpenCode times are epoch milliseconds; the model's are nanoseconds

PR, AS, RE, OV, SU = (
    Category.PROMPTS,
    Category.ASSISTANT,
    Category.RESULTS,
    Category.OVERHEAD,
    Category.SUMMARIES,
)

_DOCUMENTS: dict[Path, dict[str, Any]] = {}


def document(path: Path) -> dict[str, Any]:
    """A real export, parsed once per test run (each caller gets its own copy to edit)."""
    if path not in _DOCUMENTS:
        data = path.read_bytes()
        _DOCUMENTS[path] = json.loads(gzip.decompress(data) if path.suffix == ".gz" else data)
    return copy.deepcopy(_DOCUMENTS[path])


def cut(path: Path, indices: list[int] | range) -> dict[str, Any]:
    """The export with only the messages at `indices` (in that order)."""
    doc = document(path)
    doc["messages"] = [doc["messages"][i] for i in indices]
    return doc


def write(tmp_path: Path, doc: dict[str, Any], name: str = "") -> Path:
    out = tmp_path / (name or f"{doc['info']['id']}.export.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc), encoding="utf-8")
    return out


def read_one(tmp_path: Path, doc: dict[str, Any]) -> tuple[Session, Diagnostics]:
    (session,), diagnostics = read(write(tmp_path, doc))
    return session, diagnostics


def msg(doc: dict[str, Any], index: int) -> dict[str, Any]:
    info = doc["messages"][index]["info"]
    assert isinstance(info, dict)
    return info


def parts(doc: dict[str, Any], index: int, kind: str) -> list[dict[str, Any]]:
    return [p for p in doc["messages"][index]["parts"] if p["type"] == kind]


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def item(added: list[Added], item_id: str) -> tuple[Category, str, int, str, SourceKind]:
    got = by_id(added)[item_id]
    return (got.category, got.label, got.chars, got.source_id, got.source_kind)


# --------------------------------------------------------------------------- items


def test_prompt_reasoning_answer_call_and_result_of_a_real_child_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole `@docs` child (5 messages): every part that is prompt content, once each."""
    doc = document(DOCS)
    added = spy(monkeypatch)
    session, diagnostics = read_one(tmp_path, doc)
    user, last = msg(doc, 0), msg(doc, 4)
    (typed,) = parts(doc, 0, "text")
    assert item(added, f"{user['id']}:{typed['id']}") == (
        PR,
        "User prompt",
        787,
        "",
        SourceKind.PROMPT,
    )
    assert by_id(added)[f"{user['id']}:{typed['id']}"].tokens == 197
    (thinking,) = parts(doc, 4, "reasoning")
    (answer,) = parts(doc, 4, "text")
    assert item(added, f"{last['id']}:{thinking['id']}") == (
        AS,
        "Reasoning",
        2146,
        last["id"],
        SourceKind.RESPONSE,
    )
    assert item(added, f"{last['id']}:{answer['id']}") == (
        AS,
        "Assistant text",
        3144,
        last["id"],
        SourceKind.RESPONSE,
    )
    call = parts(doc, 1, "tool")[0]
    assert item(added, f"call:{call['callID']}") == (
        AS,
        "Tool arguments",
        len(call["tool"]) + len(compact(call["state"]["input"])),
        call["callID"],
        SourceKind.TOOL,
    )
    assert item(added, f"result:{call['callID']}") == (
        RE,
        "Tool result",
        16434,
        call["callID"],
        SourceKind.TOOL,
    )
    # 1 prompt, 4 reasoning parts, 1 answer, 6 calls with their 6 results: nothing else (the
    # step-start / step-finish bookkeeping is not prompt content).
    assert len(added) == 1 + 4 + 1 + 6 + 6
    assert diagnostics.unrecognised == {} and diagnostics.notes == {}
    # The subagent's first prompt is its task: from the agent, at the message's time.
    (prompt,) = session.prompts
    assert (prompt.id, prompt.source, prompt.chars) == (user["id"], "agent", 787)
    assert prompt.start_ns == user["time"]["created"] * MS
    assert prompt.preview == typed["text"][: len(prompt.preview)] and prompt.preview
    # Each part belongs to its message: the summaries of every request name the prompt.
    assert [r.prompt_id for r in session.responses] == [user["id"]] * 4


def test_a_main_session_prompt_is_from_the_user_and_a_second_one_too(
    tmp_path: Path,
) -> None:
    """The explore child without its `parentID`: a session of its own, its prompt typed."""
    doc = document(EXPLORE)
    del doc["info"]["parentID"]
    second = copy.deepcopy(doc["messages"][0])
    second["info"]["id"] = "msg_d410ffffffffSecondPrompt00"
    second["info"]["time"]["created"] = msg(doc, 3)["time"]["completed"] + 1
    doc["messages"].append(second)
    session, _ = read_one(tmp_path, doc)
    assert [(p.id, p.source) for p in session.prompts] == [
        (msg(doc, 0)["id"], "user"),
        ("msg_d410ffffffffSecondPrompt00", "user"),
    ]
    assert (session.parent_session, session.child_role) == (None, None)
    # The session lasts until its last message, a prompt nothing answered yet.
    assert session.end_ns == second["info"]["time"]["created"] * MS


def test_a_child_session_prompt_after_its_task_is_from_the_user(tmp_path: Path) -> None:
    """Only a subagent's first prompt is the agent's task; a later one was typed into it."""
    doc = document(DOCS)
    second = copy.deepcopy(doc["messages"][0])
    second["info"]["id"] = "msg_02b3ffffffffSecondPrompt0"
    second["info"]["time"]["created"] = msg(doc, 4)["time"]["completed"] + 1
    doc["messages"].append(second)
    session, _ = read_one(tmp_path, doc)
    assert [p.source for p in session.prompts] == ["agent", "user"]
    assert (session.parent_session, session.child_role) == (
        "ses_fd4e13d58ffetoIsfha64XDWNj",
        "subagent",
    )


def test_ignored_text_is_not_in_the_prompt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A text part marked `ignored` (hand-marked real prompt): no item, no prompt."""
    doc = document(EXPLORE)
    doc["messages"][0]["parts"][0]["ignored"] = True
    added = spy(monkeypatch)
    session, _ = read_one(tmp_path, doc)
    assert not [a for a in added if a.id.startswith(msg(doc, 0)["id"])]
    assert session.prompts == ()
    # With no prompt, the requests belong to no turn.
    assert {r.prompt_id for r in session.responses} == {None}
    # An ignored part before the typed one: the typed text is still the prompt.
    typed = copy.deepcopy(doc["messages"][0]["parts"][0])
    del typed["ignored"]
    typed["id"] = "prt_typed"
    doc["messages"][0]["parts"].append(typed)
    session, _ = read_one(tmp_path, doc)
    assert [(p.id, p.chars) for p in session.prompts] == [(msg(doc, 0)["id"], 407)]


def test_a_user_text_part_without_text_is_an_empty_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hand-damaged: the prompt's `text` field removed, and a part with no `type` at all."""
    doc = document(EXPLORE)
    del doc["messages"][0]["parts"][0]["text"]
    doc["messages"][0]["parts"].append({"id": "prt_untyped"})
    added = spy(monkeypatch)
    session, diagnostics = read_one(tmp_path, doc)
    part_id = doc["messages"][0]["parts"][0]["id"]
    assert item(added, f"{msg(doc, 0)['id']}:{part_id}")[:3] == (PR, "User prompt", 0)
    assert [(p.id, p.chars) for p in session.prompts] == [(msg(doc, 0)["id"], 0)]
    assert diagnostics.unrecognised == {"opencode:part/": 1}


# --------------------------------------------------------------------------- usage


def test_the_prompt_is_input_plus_cache_read_plus_cache_write_and_reasoning_is_beside_output() -> (
    None
):
    """The explore child's last request (cache read, no reasoning) and, edited, the same
    record with a cache write and reasoning reported beside `output` (total = all of it)."""
    tokens = msg(document(EXPLORE), 3)["tokens"]
    assert tokens == {
        "total": 17268,
        "input": 10128,
        "output": 2187,
        "reasoning": 0,
        "cache": {"write": 0, "read": 4953},
    }
    usage = opencode_session.usage_of(tokens)
    assert (usage.prompt_tokens, usage.input_tokens, usage.cache_read_tokens) == (
        10128 + 4953,
        10128,
        4953,
    )
    assert (usage.output_tokens, usage.reasoning_tokens, usage.cache_write_tokens) == (2187, 0, 0)
    edited = {
        **tokens,
        "reasoning": 40,
        "total": 17268 + 300 + 40,
        "cache": {"write": 300, "read": 4953},
    }
    usage = opencode_session.usage_of(edited)
    assert (usage.prompt_tokens, usage.cache_write_tokens, usage.reasoning_tokens) == (
        10128 + 4953 + 300,
        300,
        40,
    )
    assert usage.output_tokens == 2187 + 40  # total − prompt: the whole completion


def test_reasoning_inside_output_is_not_counted_twice() -> None:
    """Some providers count `reasoning` inside `output`: `total` = prompt + output then
    (the parent's first request, its `total` edited to say so; the corpus has none)."""
    tokens = msg(document(PARENT), 1)["tokens"] if PARENT.is_file() else None
    tokens = tokens or {"total": 17944, "input": 17802, "output": 124, "reasoning": 18}
    tokens = {**tokens, "total": 17802 + 124}
    usage = opencode_session.usage_of(tokens)
    assert (usage.prompt_tokens, usage.output_tokens, usage.reasoning_tokens) == (17802, 124, 18)
    # A total that is less than prompt + output is no sum of them: reasoning is beside.
    usage = opencode_session.usage_of({**tokens, "total": 17802 + 123})
    assert usage.output_tokens == 124 + 18


def test_without_total_reasoning_is_assumed_beside_output() -> None:
    """Builds before 1.2 write no `total` (the database's v1.16.0 rows all have one; this is
    a real 1.18.21 record with `total` removed)."""
    tokens = {"input": 1800, "output": 229, "reasoning": 45, "cache": {"write": 7, "read": 17792}}
    usage = opencode_session.usage_of(tokens)
    assert (usage.prompt_tokens, usage.output_tokens, usage.reasoning_tokens) == (
        1800 + 17792 + 7,
        229 + 45,
        45,
    )
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
        1800,
        17792,
        7,
    )


def test_damaged_usage_counts_as_nothing_reported() -> None:
    """Hand-damaged `tokens`: not an object, a `cache` that is not one, counts of the wrong
    type. What is not a count is 0, and the rest is still read."""
    assert opencode_session.usage_of(None).prompt_tokens == 0
    assert opencode_session.usage_of([1, 2]).output_tokens == 0
    usage = opencode_session.usage_of({"input": 5, "output": 3, "cache": [1, 2], "reasoning": "9"})
    assert (usage.prompt_tokens, usage.output_tokens, usage.reasoning_tokens) == (5, 3, 0)
    usage = opencode_session.usage_of(
        {"input": True, "output": 2, "cache": {"read": 4, "write": None}}
    )
    assert (usage.prompt_tokens, usage.input_tokens, usage.cache_read_tokens) == (4, 0, 4)


# --------------------------------------------------------------------------- requests


def test_each_assistant_message_is_one_request_from_its_creation_to_its_completion(
    tmp_path: Path,
) -> None:
    doc = document(EXPLORE)
    session, _ = read_one(tmp_path, doc)
    assert [r.id for r in session.responses] == [msg(doc, i)["id"] for i in (1, 2, 3)]
    for index, response in zip((1, 2, 3), session.responses, strict=True):
        info = msg(doc, index)
        assert response.start_ns == info["time"]["created"] * MS
        assert response.end_ns == info["time"]["completed"] * MS
        assert (response.model, response.is_error) == ("claude-opus-4.6", False)
        assert response.stop_reason == info["finish"]
        assert response.usage == opencode_session.usage_of(info["tokens"])
    assert [r.stop_reason for r in session.responses] == ["tool-calls", "tool-calls", "stop"]
    assert (session.models, session.provider) == (("claude-opus-4.6",), "github-copilot")
    # The session starts when it was created (3 ms before its first message was written).
    assert session.start_ns == doc["info"]["time"]["created"] * MS == 1774912907722 * MS
    assert session.end_ns == msg(doc, 3)["time"]["completed"] * MS
    assert session.failed_requests == session.unmetered_responses == ()
    assert session.incomplete is False


def test_a_message_without_completion_ends_at_its_last_part(tmp_path: Path) -> None:
    """The explore child's first request with `time.completed` removed: it lasts until the
    latest time of its parts (a tool's end, here the last text part)."""
    doc = document(EXPLORE)
    del msg(doc, 1)["time"]["completed"]
    session, _ = read_one(tmp_path, doc)
    first = session.responses[0]
    times = [
        t
        for p in doc["messages"][1]["parts"]
        for holder in (p, p.get("state") or {})
        for t in (holder.get("time") or {}).values()
    ]
    assert first.end_ns == max(times) * MS == 1774912913966 * MS
    # The next request starts at its own creation, not where this one ended.
    assert session.responses[1].start_ns == msg(doc, 2)["time"]["created"] * MS
    # A call still running (a start, no end) at a later time: the request lasts until then.
    running = parts(doc, 1, "tool")[-1]
    running["state"] = {"status": "running", "input": {}, "time": {"start": 1774912913990}}
    session, _ = read_one(tmp_path, doc)
    assert session.responses[0].end_ns == 1774912913990 * MS


def test_an_unbelievable_completion_or_part_time_does_not_stretch_the_request(
    tmp_path: Path,
) -> None:
    """Hand-edited lies: a completion in 2099 and a tool end in 1970 (a zeroed clock) beside
    a request of 2026. Neither is believed; the request ends at its believable parts."""
    doc = document(EXPLORE)
    msg(doc, 1)["time"]["completed"] = 4_070_908_800_000  # 2099-01-01
    tool = parts(doc, 1, "tool")[-1]
    tool["state"]["time"]["end"] = 0
    session, diagnostics = read_one(tmp_path, doc)
    first = session.responses[0]
    assert first.end_ns == 1774912913957 * MS  # the text part's time, the latest believed
    call = next(t for t in session.tool_calls if t.call_id == tool["callID"])
    # A call whose end is not believed ends at its start.
    assert call.start_ns == call.end_ns == tool["state"]["time"]["start"] * MS
    assert session.end_ns == msg(doc, 3)["time"]["completed"] * MS
    assert diagnostics.warning_counts == {"parent-not-exported": 1}  # only the loader's


def test_an_aborted_message_is_a_failed_request_and_its_calls_are_not_its(
    tmp_path: Path,
) -> None:
    """The parent's message 15: aborted (`MessageAbortedError`) with no step-finish and zero
    tokens, after two calls ran. A failed request, not a request of size 0."""
    if not PARENT.is_file():
        pytest.skip("shared corpus absent")
    doc = cut(PARENT, [0, 14, 15])
    session, _ = read_one(tmp_path, doc)
    aborted = msg(doc, 2)
    assert [r.id for r in session.responses] == [msg(doc, 1)["id"]]
    (failed,) = session.failed_requests
    assert (failed.id, failed.is_error, failed.stop_reason) == (
        aborted["id"],
        True,
        "MessageAbortedError",
    )
    assert (failed.start_ns, failed.end_ns) == (
        aborted["time"]["created"] * MS,
        aborted["time"]["completed"] * MS,
    )
    assert failed.usage.prompt_tokens == 0 and failed.prompt_id == msg(doc, 0)["id"]
    assert dict(session.facts)["requests_without_usage"] == "MessageAbortedError: 1"
    calls = {t.call_id: t for t in session.tool_calls}
    for part in parts(doc, 2, "tool"):
        assert calls[part["callID"]].response_id is None
        assert calls[part["callID"]].incomplete is False
    for part in parts(doc, 1, "tool"):
        assert calls[part["callID"]].response_id == msg(doc, 1)["id"]


def test_a_step_finished_with_zero_usage_is_a_request_of_unknown_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent's message 95: a step-finish whose tokens are all 0 (reason `unknown`)."""
    if not PARENT.is_file():
        pytest.skip("shared corpus absent")
    doc = cut(PARENT, [74, 95])
    added = spy(monkeypatch)
    session, _ = read_one(tmp_path, doc)
    info = msg(doc, 1)
    assert session.responses == session.failed_requests == ()
    (unknown,) = session.unmetered_responses
    assert (unknown.id, unknown.usage_known, unknown.output_tokens_reliable) == (
        info["id"],
        False,
        False,
    )
    assert (unknown.stop_reason, unknown.is_error, unknown.model) == (
        "unknown",
        False,
        "x-preview-f-free",
    )
    # Its reasoning is still the model's text, sent with the next request.
    (thinking,) = parts(doc, 1, "reasoning")
    assert item(added, f"{info['id']}:{thinking['id']}") == (
        AS,
        "Reasoning",
        4675,
        info["id"],
        SourceKind.RESPONSE,
    )
    # A request that reported nothing names no model and no provider of the session.
    assert (session.models, session.provider) == ((), None)
    assert "requests_without_usage" not in dict(session.facts)


# --------------------------------------------------------------------------- tools


def test_a_tool_call_spans_its_state_times_and_is_linked_to_its_request(tmp_path: Path) -> None:
    doc = document(EXPLORE)
    session, _ = read_one(tmp_path, doc)
    calls = {t.call_id: t for t in session.tool_calls}
    assert len(calls) == 14
    part = parts(doc, 1, "tool")[1]  # glob, 21 files
    call = calls[part["callID"]]
    assert (call.name, call.response_id, call.prompt_id) == (
        "glob",
        msg(doc, 1)["id"],
        msg(doc, 0)["id"],
    )
    assert (call.start_ns, call.end_ns) == (1774912911868 * MS, 1774912911877 * MS)
    assert (call.is_error, call.incomplete, call.result_chars) == (False, False, 1368)
    assert call.arg_keys == tuple(part["state"]["input"])
    assert call.arg_bytes == len(compact(part["state"]["input"]).encode())
    assert call.child_session is None and call.timing == ""


def test_a_failed_tool_call_puts_its_error_in_the_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compacting session's message 58: `write` failed; the model saw `state.error`."""
    if not COMPACTING.is_file():
        pytest.skip("shared corpus absent")
    doc = cut(COMPACTING, [53, 58])
    added = spy(monkeypatch)
    session, _ = read_one(tmp_path, doc)
    (part,) = parts(doc, 1, "tool")
    error = part["state"]["error"]
    assert isinstance(error, str) and "output" not in part["state"]
    assert item(added, f"result:{part['callID']}") == (
        RE,
        "Tool result",
        len(error),
        part["callID"],
        SourceKind.TOOL,
    )
    (call,) = session.tool_calls
    assert (call.name, call.is_error, call.incomplete, call.result_chars) == (
        "write",
        True,
        False,
        len(error),
    )


def test_a_running_tool_call_has_no_result_and_is_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The explore child's `glob` call set back to `running` (no output yet, no end): its
    arguments are in the context, no result; the session is incomplete."""
    doc = document(EXPLORE)
    part = parts(doc, 1, "tool")[1]
    part["state"] = {
        "status": "running",
        "input": part["state"]["input"],
        "time": {"start": 1774912911868},
    }
    added = spy(monkeypatch)
    session, _ = read_one(tmp_path, doc)
    ids = {a.id for a in added}
    assert f"call:{part['callID']}" in ids and f"result:{part['callID']}" not in ids
    call = next(t for t in session.tool_calls if t.call_id == part["callID"])
    assert (call.incomplete, call.is_error, call.result_chars) == (True, False, 0)
    assert call.start_ns == 1774912911868 * MS
    assert session.incomplete is True


def test_a_completed_call_with_an_output_that_is_not_text_is_measured_as_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hand-edited: the `glob` output as a JSON object, and a `grep` output missing; a call
    with no callID goes by its part id, one with no tool name is `tool`."""
    doc = document(EXPLORE)
    glob, grep = parts(doc, 1, "tool")[1], parts(doc, 1, "tool")[2]
    glob["state"]["output"] = {"files": ["a.ts", "b.ts"]}
    del grep["state"]["output"]
    nameless = parts(doc, 1, "tool")[3]
    del nameless["callID"], nameless["tool"]
    added = spy(monkeypatch)
    session, _ = read_one(tmp_path, doc)
    assert by_id(added)[f"result:{glob['callID']}"].chars == len('{"files":["a.ts","b.ts"]}')
    assert by_id(added)[f"result:{grep['callID']}"].chars == 0
    calls = {t.call_id: t for t in session.tool_calls}
    assert calls[grep["callID"]].incomplete is False  # completed, with an empty result
    unnamed = calls[nameless["id"]]
    assert (unnamed.name, unnamed.result_chars) == ("tool", len(nameless["state"]["output"]))
    assert by_id(added)[f"call:{nameless['id']}"].chars == len("tool") + len(
        compact(nameless["state"]["input"])
    )


def test_a_call_without_times_starts_where_the_session_was(tmp_path: Path) -> None:
    """The explore child's first call with its `state.time` removed (and a state that is no
    object for the second): placed at the latest time seen before it, the request's start."""
    doc = document(EXPLORE)
    first, second = parts(doc, 1, "tool")[0], parts(doc, 1, "tool")[1]
    del first["state"]["time"]
    second["state"] = "running"
    session, _ = read_one(tmp_path, doc)
    calls = {t.call_id: t for t in session.tool_calls}
    assert calls[first["callID"]].start_ns == calls[first["callID"]].end_ns
    assert calls[first["callID"]].start_ns == msg(doc, 1)["time"]["created"] * MS
    broken = calls[second["callID"]]
    assert (broken.incomplete, broken.result_chars, broken.arg_bytes) == (True, 0, 0)
    assert broken.start_ns == msg(doc, 1)["time"]["created"] * MS


# --------------------------------------------------------------------------- other parts


def test_synthetic_text_is_an_attached_file_or_a_harness_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compacting session's message 39: a typed prompt with an `@src/extension.ts` file
    part, which OpenCode expands into two synthetic texts (the Read call and the file);
    message 46: the synthetic nudge after the compaction."""
    if not COMPACTING.is_file():
        pytest.skip("shared corpus absent")
    doc = cut(COMPACTING, [39, 46])
    added = spy(monkeypatch)
    session, _ = read_one(tmp_path, doc)
    user, nudge = msg(doc, 0), msg(doc, 1)
    typed, call, content = parts(doc, 0, "text")
    assert item(added, f"{user['id']}:{typed['id']}")[:3] == (PR, "User prompt", 74)
    assert call["text"].startswith("Called the Read tool")
    assert item(added, f"{user['id']}:{call['id']}")[:3] == (RE, "Attached file", 123)
    # The file's content is the read tool's output (`<path>…`): the attached file too, not
    # a harness message (its 37,652 characters were Harness overhead).
    assert content["text"].startswith("<path>")
    assert item(added, f"{user['id']}:{content['id']}")[:3] == (RE, "Attached file", 37652)
    (text,) = parts(doc, 1, "text")
    assert item(added, f"{nudge['id']}:{text['id']}")[:3] == (OV, "Harness message", 100)
    # Only typed text is the prompt; the file part itself is seen, not measured.
    assert [(p.id, p.chars) for p in session.prompts] == [(user["id"], 74)]
    assert dict(session.unmeasured)["file-part"] == 1
    assert len(added) == 4


def test_file_parts_are_seen_not_measured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The parent's message 18 attaches two files (`file` parts): counted, not measured (the
    text OpenCode makes of them comes as synthetic parts). An assistant `file` part
    (hand-added: the corpus has none) counts the same."""
    if not PARENT.is_file():
        pytest.skip("shared corpus absent")
    doc = cut(PARENT, [18, 19])
    assert len(parts(doc, 0, "file")) == 2
    doc["messages"][1]["parts"].insert(1, copy.deepcopy(parts(doc, 0, "file")[0]))
    added = spy(monkeypatch)
    session, _ = read_one(tmp_path, doc)
    assert dict(session.unmeasured)["file-part"] == 3
    assert not [a for a in added if a.id.endswith(parts(doc, 0, "file")[0]["id"])]


def test_patch_parts_are_markers_and_a_fact(tmp_path: Path) -> None:
    """The compacting session's messages 8–10: two requests that edited `src/extension.ts`
    each end with a `patch` part (file-state bookkeeping, not prompt content), written after
    the step-finish."""
    if not COMPACTING.is_file():
        pytest.skip("shared corpus absent")
    doc = cut(COMPACTING, [0, 8, 9, 10])
    session, _ = read_one(tmp_path, doc)
    patches = [m for m in session.markers if m.kind == "patch"]
    assert [m.value for m in patches] == ["1 file", "1 file"]
    # At the latest time read before the part: the end of the edit that made the patch.
    edits = [parts(doc, i, "tool")[-1] for i in (2, 3)]
    assert [e["tool"] for e in edits] == ["edit", "edit"]
    assert [m.time_ns for m in patches] == [e["state"]["time"]["end"] * MS for e in edits]
    assert dict(session.facts)["patch_parts"] == 2
    parts(doc, 2, "patch")[0]["files"] = "not a list"
    session, _ = read_one(tmp_path, doc)
    assert [m.value for m in session.markers if m.kind == "patch"] == ["0 files", "1 file"]


def test_a_patch_after_the_step_finish_belongs_to_the_one_request(tmp_path: Path) -> None:
    """OpenCode writes a step's `patch` part after its `step-finish`: that is the step's
    bookkeeping, not a second, unfinished request (which was named `<id>#2` and counted as
    a failed request)."""
    if not COMPACTING.is_file():
        pytest.skip("shared corpus absent")
    doc = cut(COMPACTING, [0, 8, 9, 10])
    session, _ = read_one(tmp_path, doc)
    assert [r.id for r in session.responses] == [msg(doc, i)["id"] for i in (1, 2, 3)]
    assert session.failed_requests == ()


def test_a_retry_part_is_a_marker_and_unknown_parts_are_named(tmp_path: Path) -> None:
    """Hand-made parts in real messages (the corpus has none): a `retry` part (attempt 2) in
    an assistant message, an `agent` and a `subtask` part in the user message (noted), and
    parts of a type no OpenCode writes, in either role (not recognised)."""
    doc = document(EXPLORE)
    user, first = doc["messages"][0]["parts"], doc["messages"][1]["parts"]
    user += [
        {"type": "agent", "id": "prt_a", "name": "explore"},
        {"type": "subtask", "id": "prt_b"},
        {"type": "hologram", "id": "prt_c"},
        {"type": "step-start", "id": "prt_d"},
    ]
    first.insert(1, {"type": "retry", "id": "prt_e", "attempt": 2})
    first.insert(2, {"type": "quasar", "id": "prt_f"})
    first.insert(3, {"type": "agent", "id": "prt_g"})
    first.insert(4, {"type": "subtask", "id": "prt_h"})
    first.insert(5, {"type": "compaction", "id": "prt_i"})
    first.insert(6, {"id": "prt_j"})
    session, diagnostics = read_one(tmp_path, doc)
    (retry,) = [m for m in session.markers if m.kind == "retry"]
    assert (retry.value, retry.time_ns) == ("2", msg(doc, 1)["time"]["created"] * MS)
    # In an assistant message, agent/subtask/compaction parts are OpenCode's own: silent.
    assert diagnostics.notes == {"opencode:part/agent": 1, "opencode:part/subtask": 1}
    assert diagnostics.unrecognised == {
        "opencode:part/hologram": 1,
        "opencode:part/quasar": 1,
        "opencode:part/": 1,
    }


def test_reasoning_without_text_is_encrypted_or_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `@docs` child's reasoning parts carry provider metadata. Edited: the first with
    its text emptied (only the opaque metadata was kept: encrypted, not measured), the
    second with its text replaced by `REDACTED` (Entire's scrub: a placeholder, not
    measured; with metadata it counts as encrypted), the third with neither text nor
    metadata (nothing)."""
    doc = document(DOCS)
    first, second, third, fourth = (parts(doc, i, "reasoning")[0] for i in (1, 2, 3, 4))
    first["text"] = fourth["text"] = ""
    doc["messages"][0]["parts"][0]["text"] += " key: REDACTED"
    second["text"] = "REDACTED"
    del second["metadata"]
    third["text"] = ""
    del third["metadata"]
    added = spy(monkeypatch)
    session, _ = read_one(tmp_path, doc)
    ids = {a.id for a in added}
    for index, part in ((1, first), (2, second), (3, third)):
        assert f"{msg(doc, index)['id']}:{part['id']}" not in ids
    unmeasured = dict(session.unmeasured)
    assert unmeasured["encrypted-reasoning"] == 2
    # One in the prompt's text, one for the scrubbed reasoning.
    assert unmeasured["redacted-placeholder"] == 2
    # A reasoning part with no `text` field at all: nothing either.
    del third["text"]
    added.clear()
    read_one(tmp_path, doc)
    assert f"{msg(doc, 3)['id']}:{third['id']}" not in {a.id for a in added}


def test_redacted_placeholders_in_part_metadata_are_counted(tmp_path: Path) -> None:
    """The compacting session's first two requests: each of their parts (reasoning and
    tool calls) carries the request's Copilot `reasoningOpaque`, cut by Entire's scrub with
    11 `REDACTED` (first request) and 10 (second): the journal holds less than was sent."""
    if not COMPACTING.is_file():
        pytest.skip("shared corpus absent")
    doc = cut(COMPACTING, [0, 1, 2])
    session, _ = read_one(tmp_path, doc)
    assert dict(session.unmeasured)["redacted-placeholder"] == 3 * 11 + 3 * 10
    (reasoning,) = parts(doc, 1, "reasoning")
    reasoning["metadata"] = {"copilot": {"reasoningOpaque": "opaque"}}
    session, _ = read_one(tmp_path, doc)
    assert dict(session.unmeasured)["redacted-placeholder"] == 2 * 11 + 3 * 10


def test_metadata_nested_beyond_what_can_be_written_is_not_counted(tmp_path: Path) -> None:
    """Hand-made: a reasoning part whose metadata nests 300 levels (orjson writes 255): no
    placeholder count, and the session is still read."""
    doc = document(DOCS)
    deep: dict[str, Any] = {"reasoningOpaque": "REDACTED"}
    for _ in range(300):
        deep = {"x": deep}
    parts(doc, 1, "reasoning")[0]["metadata"] = deep
    session, _ = read_one(tmp_path, doc)
    assert "redacted-placeholder" not in dict(session.unmeasured)
    assert len(session.responses) == 4


# --------------------------------------------------------------------------- compaction


_END = operator.attrgetter("end_ns")


def _compacting(indices: list[int] | range) -> dict[str, Any]:
    """Messages of the compacting session, without their `patch` parts (a step's bookkeeping
    after its finish: `test_a_patch_after_the_step_finish_belongs_to_the_one_request`)."""
    if not COMPACTING.is_file():
        pytest.skip("shared corpus absent")
    doc = cut(COMPACTING, indices)
    for message in doc["messages"]:
        message["parts"] = [p for p in message["parts"] if p["type"] != "patch"]
    return doc


def test_a_compaction_drops_the_older_messages_and_its_summary_enters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Messages 40–47 of the compacting session: four requests, the user `compaction` part
    (auto), the summarisation request (agent `compaction`, `summary: true`), the nudge, and
    the next request, which holds only the summary and what follows it."""
    doc = _compacting(range(40, 48))
    added = spy(monkeypatch)
    session, _ = read_one(tmp_path, doc)
    asked, summarised, nudge = msg(doc, 4), msg(doc, 5), msg(doc, 6)
    assert summarised["summary"] is True and summarised["agent"] == "compaction"
    (compaction,) = session.compactions
    assert (compaction.id, compaction.kind, compaction.trigger) == (
        asked["id"],
        "compaction",
        "auto",
    )
    assert compaction.start_ns == asked["time"]["created"] * MS
    assert compaction.end_ns == summarised["time"]["completed"] * MS
    assert compaction.timing == "compaction request → summary completed"
    # Its size before is the last request's before it (the summarisation request's own
    # input is another quantity: it was left NULL), after is unknown until the next request.
    last = max((r for r in session.responses if r.end_ns <= compaction.start_ns), key=_END)
    assert compaction.pre_tokens == last.usage.prompt_tokens > 0
    assert compaction.post_tokens is None
    # Every item of messages 40–43 (4 requests: their texts, calls and results) left.
    before = [a for a in added if a.id.split(":")[0] in {msg(doc, i)["id"] for i in range(4)}]
    calls = {p["callID"] for i in range(4) for p in parts(doc, i, "tool")}
    before += [a for a in added if a.id.split(":", 1)[1] in calls]
    assert compaction.removed_items == len(before) > 0
    # The summarisation request is the compaction's, not one of the session's requests.
    request = compaction.request
    assert request is not None and request.id == summarised["id"]
    assert request.usage.prompt_tokens != compaction.pre_tokens
    assert request.usage.prompt_tokens == 98_608
    assert summarised["id"] not in [r.id for r in session.responses]
    assert [r.id for r in session.responses] == [msg(doc, i)["id"] for i in (0, 1, 2, 3, 7)]
    (text,) = parts(doc, 5, "text")
    assert item(added, f"{summarised['id']}:{text['id']}") == (
        SU,
        "Compaction summary",
        4494,
        summarised["id"],
        SourceKind.RESPONSE,
    )
    (thinking,) = parts(doc, 5, "reasoning")
    assert item(added, f"{summarised['id']}:{thinking['id']}")[:2] == (AS, "Reasoning")
    # After it: the summary, its reasoning and the nudge, nothing older.
    after = next(s for s in session.snapshots if s.anchor_id == compaction.id)
    assert dict(after.categories)[SU.value] > 0
    (nudge_text,) = parts(doc, 6, "text")
    assert item(added, f"{nudge['id']}:{nudge_text['id']}")[:2] == (OV, "Harness message")


def test_a_manual_compaction_keeps_the_tail_it_names(tmp_path: Path) -> None:
    """The same messages with the compaction part edited: `auto: false` (the user's
    /compact) and `tail_start_id` naming message 43, which stays in the prompt."""
    doc = _compacting(range(40, 48))
    (part,) = parts(doc, 4, "compaction")
    whole, _ = read_one(tmp_path, doc)
    part["auto"] = False
    part["tail_start_id"] = msg(doc, 3)["id"]
    session, _ = read_one(tmp_path, doc)
    (compaction,) = session.compactions
    assert compaction.trigger == "manual"
    kept = whole.compactions[0].removed_items - compaction.removed_items
    tool_parts = parts(doc, 3, "tool")
    texts = [p for p in doc["messages"][3]["parts"] if p["type"] in {"text", "reasoning"}]
    assert kept == 2 * len(tool_parts) + len(texts) > 0
    # A tail id that is not a message of the session keeps nothing.
    part["tail_start_id"] = "msg_unknown"
    session, _ = read_one(tmp_path, doc)
    assert session.compactions[0].removed_items == whole.compactions[0].removed_items
    # `auto` absent counts as automatic (only `false` is the user's).
    del part["auto"], part["tail_start_id"]
    session, _ = read_one(tmp_path, doc)
    assert session.compactions[0].trigger == "auto"


def test_a_summary_without_its_compaction_part(tmp_path: Path) -> None:
    """Message 44 (the user `compaction` part) dropped: the summary still compacts, named
    after itself, with no trigger, from its request's start, dropping all before it."""
    doc = _compacting([40, 41, 45, 46, 47])
    session, _ = read_one(tmp_path, doc)
    summarised = msg(doc, 2)
    (compaction,) = session.compactions
    assert compaction.id == f"compaction:{summarised['id']}"
    assert compaction.trigger is None
    assert compaction.start_ns == summarised["time"]["created"] * MS
    assert compaction.end_ns == summarised["time"]["completed"] * MS
    items = sum(
        1 + (p["type"] == "tool")
        for i in (0, 1)
        for p in doc["messages"][i]["parts"]
        if p["type"] in {"text", "reasoning", "tool"}
    )
    assert compaction.removed_items == items


def test_a_summary_whose_request_reported_nothing(tmp_path: Path) -> None:
    """The summarisation request's usage zeroed (hand-edited): the compaction has no
    request, and its size before is the last reported prompt (message 43's)."""
    doc = _compacting(range(40, 48))
    zero = {"input": 0, "output": 0, "reasoning": 0, "cache": {"write": 0, "read": 0}}
    msg(doc, 5)["tokens"] = zero
    parts(doc, 5, "step-finish")[0]["tokens"] = zero
    session, _ = read_one(tmp_path, doc)
    (compaction,) = session.compactions
    assert compaction.request is None
    assert compaction.pre_tokens == opencode_session.usage_of(msg(doc, 3)["tokens"]).prompt_tokens
    # It ends at the latest time seen: the summary message's completion.
    assert compaction.end_ns == msg(doc, 5)["time"]["completed"] * MS
    assert compaction.start_ns == msg(doc, 4)["time"]["created"] * MS
    # A summarisation step with zero usage is neither a request of the session nor failed.
    assert session.unmetered_responses == () and session.failed_requests == ()


# --------------------------------------------------------------------------- steps and times


def _two_steps(doc: dict[str, Any]) -> dict[str, Any]:
    """The explore child's messages 1 and 2 as one message of two steps (older SDKs wrote
    several step-start … step-finish pairs per message; the corpus has one per message)."""
    first, second = doc["messages"][1], doc["messages"][2]
    first["parts"] += second["parts"]
    first["info"]["time"]["completed"] = second["info"]["time"]["completed"]
    del doc["messages"][2]
    return doc


def test_each_step_of_a_message_is_a_request_of_its_own(tmp_path: Path) -> None:
    doc = _two_steps(document(EXPLORE))
    session, _ = read_one(tmp_path, doc)
    message = msg(doc, 1)
    one, two = session.responses[:2]
    assert (one.id, two.id) == (f"{message['id']}#1", f"{message['id']}#2")
    finishes = parts(doc, 1, "step-finish")
    assert [one.usage, two.usage] == [opencode_session.usage_of(f["tokens"]) for f in finishes]
    assert (one.usage.prompt_tokens, two.usage.prompt_tokens) == (5389, 7158)
    assert [one.stop_reason, two.stop_reason] == ["tool-calls", "tool-calls"]
    # The first step ends at its last part's time; the second starts there and ends at the
    # message's completion.
    assert one.start_ns == message["time"]["created"] * MS
    assert one.end_ns == two.start_ns == 1774912913966 * MS
    assert two.end_ns == message["time"]["completed"] * MS
    calls = {t.call_id: t.response_id for t in session.tool_calls}
    assert {calls[p["callID"]] for p in parts(doc, 1, "tool")[:6]} == {one.id}
    assert {calls[p["callID"]] for p in parts(doc, 1, "tool")[6:]} == {two.id}


def test_a_trailing_step_without_its_finish_is_a_failed_request(tmp_path: Path) -> None:
    """The explore child's last message with a second step that never finished (a step-start
    and its text, hand-added: OpenCode was stopped while it streamed)."""
    doc = document(EXPLORE)
    last = doc["messages"][3]
    start, text = copy.deepcopy(last["parts"][0]), copy.deepcopy(last["parts"][1])
    start["id"], text["id"] = "prt_zz1", "prt_zz2"
    last["parts"] += [start, text]
    session, _ = read_one(tmp_path, doc)
    info = msg(doc, 3)
    assert session.responses[-1].id == f"{info['id']}#1"
    (failed,) = session.failed_requests
    assert (failed.id, failed.is_error, failed.stop_reason) == (f"{info['id']}#2", False, None)
    assert failed.usage.prompt_tokens == 0
    assert failed.start_ns == session.responses[-1].end_ns
    assert dict(session.facts)["requests_without_usage"] == "no usage: 1"
    # An error on the message marks only its last step as failed, with the error's name.
    info["error"] = {"name": "MessageAbortedError", "data": {"message": "Aborted"}}
    session, _ = read_one(tmp_path, doc)
    assert (session.responses[-1].is_error, session.responses[-1].stop_reason) == (False, "stop")
    (failed,) = session.failed_requests
    assert (failed.is_error, failed.stop_reason) == (True, "MessageAbortedError")
    # The first step's reason removed: it has none (the error is the last step's).
    del last["parts"][2]["reason"]
    session, _ = read_one(tmp_path, doc)
    assert session.responses[-1].stop_reason is None


def test_a_message_without_any_step_uses_the_message_usage(tmp_path: Path) -> None:
    """An old build's message: no step-start/step-finish, usage only on the message (the
    explore child's parts with the bookkeeping removed)."""
    doc = document(EXPLORE)
    for message in doc["messages"]:
        message["parts"] = [
            p for p in message["parts"] if p["type"] not in {"step-start", "step-finish"}
        ]
    session, _ = read_one(tmp_path, doc)
    assert [r.id for r in session.responses] == [msg(doc, i)["id"] for i in (1, 2, 3)]
    assert [r.usage for r in session.responses] == [
        opencode_session.usage_of(msg(doc, i)["tokens"]) for i in (1, 2, 3)
    ]
    # No finish, no reason: the message's error name would be one, and it has none.
    assert [r.stop_reason for r in session.responses] == [None, None, None]


def test_a_message_without_time_is_noted_and_placed_after_the_one_before(tmp_path: Path) -> None:
    doc = document(EXPLORE)
    del msg(doc, 2)["time"]
    session, diagnostics = read_one(tmp_path, doc)
    assert diagnostics.notes["opencode:message-without-time"] == 1
    second = session.responses[1]
    assert second.id == msg(doc, 2)["id"]
    # 1 ms after the message before it (the outlier rule's step), not at the epoch.
    assert second.start_ns == msg(doc, 1)["time"]["created"] * MS + MS
    assert session.start_ns == doc["info"]["time"]["created"] * MS


def test_a_message_dated_far_away_is_warned_about_by_its_place(tmp_path: Path) -> None:
    """The explore child's message 2 dated 2099 (hand-edited): warned as
    `messages[2] (msg_…)` (an export has no lines) and placed after the message before."""
    doc = document(EXPLORE)
    msg(doc, 2)["time"]["created"] = 4_070_908_800_000
    session, diagnostics = read_one(tmp_path, doc)
    (warning,) = [w for w in diagnostics.warnings if w.kind != "parent-not-exported"]
    assert warning.path == str(tmp_path / f"{doc['info']['id']}.export.json")
    assert warning.line is None
    assert f"messages[2] ({msg(doc, 2)['id']})" in warning.message
    assert session.responses[1].start_ns == msg(doc, 1)["time"]["created"] * MS + MS
    assert session.end_ns == msg(doc, 3)["time"]["completed"] * MS


def test_a_session_created_far_from_its_messages_starts_with_them(tmp_path: Path) -> None:
    """`info.time.created` zeroed (1970, hand-edited): not believed; the session starts at
    its first message, and an unreadable time field counts as none."""
    doc = document(EXPLORE)
    doc["info"]["time"]["created"] = 0
    session, _ = read_one(tmp_path, doc)
    assert session.start_ns == msg(doc, 0)["time"]["created"] * MS
    doc["info"]["time"] = "yesterday"
    msg(doc, 0)["time"]["created"] = True  # a bool is no time
    session, diagnostics = read_one(tmp_path, doc)
    assert diagnostics.notes["opencode:message-without-time"] == 1
    assert session.responses[0].start_ns == msg(doc, 1)["time"]["created"] * MS


def test_a_session_with_no_message_and_no_time_is_not_a_session(tmp_path: Path) -> None:
    doc = document(EXPLORE)
    doc["messages"] = []
    del doc["info"]["time"]
    sessions, _ = read(write(tmp_path, doc))
    assert sessions == []
    doc["info"]["time"] = {"created": 1774912907722}
    (session,), _ = read(write(tmp_path, doc))
    assert session.start_ns == session.end_ns == 1774912907722 * MS
    assert session.responses == () and len(session.snapshots) == 1


def test_a_message_of_an_unknown_role_is_not_recognised(tmp_path: Path) -> None:
    doc = document(EXPLORE)
    msg(doc, 2)["role"] = "oracle"
    session, diagnostics = read_one(tmp_path, doc)
    assert diagnostics.unrecognised == {"opencode:message/oracle": 1}
    assert [r.id for r in session.responses] == [msg(doc, i)["id"] for i in (1, 3)]


# --------------------------------------------------------------------------- the session


def test_the_session_facts_name_the_file_not_its_path(tmp_path: Path) -> None:
    doc = document(DOCS)
    session, _ = read_one(tmp_path, doc)
    info = doc["info"]
    facts = dict(session.facts)
    assert facts["storage"] == "ses_fd4c895f0ffe6gKgxHiEgiQCcd.export.json"
    assert (facts["session_title"], facts["session_slug"], facts["session_agent"]) == (
        "React Email testing guidance (@docs subagent)",
        "tidy-engine",
        "docs",
    )
    assert "patch_parts" not in facts and "requests_without_usage" not in facts
    assert (session.session_id, session.harness_version) == (info["id"], "1.18.21")
    assert session.project == "worktree-silver-forest-5b5f"  # the folder, not the path
    assert session.sources == (str(tmp_path / "ses_fd4c895f0ffe6gKgxHiEgiQCcd.export.json"),)
    # A title that is not text is left out; a version spelled `v1.16.0` loses its `v`.
    info["title"], info["version"] = ["a", "list"], "v1.16.0"
    del info["slug"], info["directory"]
    session, _ = read_one(tmp_path, doc)
    assert [k for k, _ in session.facts] == ["storage", "session_agent"]
    assert (session.harness_version, session.project) == ("1.16.0", None)
    info["version"] = ""
    session, _ = read_one(tmp_path, doc)
    assert session.harness_version is None


def test_a_long_title_is_cut_to_a_preview(tmp_path: Path) -> None:
    doc = document(DOCS)
    doc["info"]["title"] = "t" * 1000
    session, _ = read_one(tmp_path, doc)
    title = dict(session.facts)["session_title"]
    assert 0 < len(title) < 1000 and set(title) == {"t"}


def test_the_providers_and_models_of_a_session_in_order_once_each(tmp_path: Path) -> None:
    """The explore child's requests, the second edited to another model and provider."""
    doc = document(EXPLORE)
    msg(doc, 2)["modelID"], msg(doc, 2)["providerID"] = "gpt-5", "openai"
    session, _ = read_one(tmp_path, doc)
    assert session.models == ("claude-opus-4.6", "gpt-5")
    assert session.provider == "github-copilot"
    assert [r.model for r in session.responses] == ["claude-opus-4.6", "gpt-5", "claude-opus-4.6"]
    del msg(doc, 1)["modelID"]
    session, _ = read_one(tmp_path, doc)
    assert session.models == ("gpt-5", "claude-opus-4.6")
    assert session.responses[0].model == ""
    # The first request names no provider: the session's is the first one named.
    del msg(doc, 1)["providerID"]
    session, _ = read_one(tmp_path, doc)
    assert session.provider == "openai"


# --------------------------------------------------------------------------- subagents


def test_a_child_read_with_its_parent_is_linked_to_the_task_call(tmp_path: Path) -> None:
    """The parent's messages 61–62 (the `task` call that launched the `@docs` child) and the
    child's own export, read together; then the parent alone."""
    if not PARENT.is_file():
        pytest.skip("shared corpus absent")
    parent_doc = cut(PARENT, [61, 62])
    parent_path = write(tmp_path / "p", parent_doc)
    child_path = tmp_path / "c" / DOCS.name
    child_path.parent.mkdir()
    shutil.copy(DOCS, child_path)
    sessions, _ = read(parent_path, child_path)
    by_session = {s.session_id: s for s in sessions}
    parent, child = by_session[parent_doc["info"]["id"]], by_session[DOCS.name.split(".")[0]]
    (task,) = [t for t in parent.tool_calls if t.name == "task"]
    assert (task.call_id, task.child_session) == ("call_a3903eeb17654f9691117bcf", child.session_id)
    assert (child.parent_call_id, child.parent_session) == (task.call_id, parent.session_id)
    assert parent.parent_call_id is None and parent.child_role is None
    (alone,), _ = read(parent_path)
    (task,) = [t for t in alone.tool_calls if t.name == "task"]
    # The child was not read: its id stays on the call (the layout draws no flow to it),
    # and the parent counts it (it was dropped: a subagent that ran vanished)
    assert task.child_session == child.session_id
    assert task.call_id == "call_a3903eeb17654f9691117bcf"
    assert dict(alone.facts)["unavailable_child_sessions"] == 1


# --------------------------------------------------------------------------- files


def test_which_files_are_opencode_and_which_are_read(tmp_path: Path) -> None:
    """`role`: a database is read and its `-wal`/`-shm`/`-journal` are its members; in a
    storage folder only the session files are read; an export is read by its content."""
    root = tmp_path / "storage" / "opencode"  # a folder named storage above OpenCode's too
    (root / "storage" / "session" / "proj").mkdir(parents=True)
    (root / "storage" / "message" / "ses_x").mkdir(parents=True)
    session_file = root / "storage" / "session" / "proj" / "ses_x.json"
    session_file.write_text('{"id": "ses_x"}')
    message_file = root / "storage" / "message" / "ses_x" / "msg_1.json"
    message_file.write_text('{"id": "msg_1"}')
    not_json = root / "storage" / "session" / "proj" / "ses_x.txt"
    not_json.write_text("x")
    database = root / "opencode.db"
    shutil.copy(DATABASE, database) if DATABASE.is_file() else database.write_bytes(b"")
    roles = {
        database: "read",
        root / "opencode.db-wal": "member",
        root / "opencode.db-shm": "member",
        root / "opencode.db-journal": "member",
        root / "opencode-dev.db": "read",
        root / "other.db-wal": "",
        root / "other.db": "",
        root / "opencode-notes.txt": "",
        root / "storage" / "migration.json": "member",
        root / "storage" / "session" / "proj" / "notes.json": "member",
        session_file: "read",
        message_file: "member",
        not_json: "member",
        tmp_path / "plain.json": "",
    }
    (tmp_path / "plain.json").write_text('{"a": 1}')
    for path, expected in roles.items():
        assert opencode.role(path) == expected, path
    export = shutil.copy(EXPLORE, tmp_path / "x.json")
    assert opencode.role(Path(export)) == "read"
    gz = tmp_path / "x.json.gz"
    gz.write_bytes(gzip.compress(EXPLORE.read_bytes()))
    assert opencode.role(gz) == "read"
    (tmp_path / "broken.json.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    assert opencode.role(tmp_path / "broken.json.gz") == "read"  # named, not passed over
    (tmp_path / "broken.json").write_bytes(b"\x1f\x8b\x08\x00garbage")
    assert opencode.role(tmp_path / "broken.json") == ""
    # A folder named storage without a session/ folder is not OpenCode's storage.
    (tmp_path / "storage" / "ses_y.json").write_text('{"id": "ses_y"}')
    assert opencode.role(tmp_path / "storage" / "ses_y.json") == ""
    # A file at the top of a storage folder with no other `storage` above it: a member.
    plain = tmp_path / "plain" / "storage"
    (plain / "session").mkdir(parents=True)
    (plain / "migration").write_text("2")
    assert opencode.role(plain / "migration") == "member"
    assert opencode.claim(session_file) and opencode.claim(Path(export))
    assert not opencode.claim(tmp_path / "plain.json")


def test_an_export_is_detected_by_its_info_and_messages() -> None:
    exported = json.loads(EXPLORE.read_text())
    assert opencode.detect([exported])
    assert opencode.detect([exported, {"other": 1}])
    assert not opencode.detect([{"other": 1}, exported])
    assert not opencode.detect([])
    assert not opencode.detect([{**exported, "info": {**exported["info"], "id": "abc"}}])
    assert not opencode.detect([{**exported, "info": {"id": 7}}])
    assert not opencode.detect([{**exported, "info": "ses_x"}])
    assert not opencode.detect([{**exported, "messages": {}}])
    assert not opencode.detect([[exported]])


def test_locate_finds_the_databases_else_the_storage(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = home / ".local" / "share" / "opencode"
    storage_root = root / "storage"
    (storage_root / "session" / "proj").mkdir(parents=True)
    (storage_root / "session" / "proj" / "ses_b.json").write_text("{}")
    (storage_root / "session" / "proj" / "ses_a.json").write_text("{}")
    (storage_root / "session" / "proj" / "msg_a.json").write_text("{}")
    (storage_root / "session" / "stray.json").write_text("{}")

    def found(env: dict[str, str]) -> list[str]:
        return [str(j.path.relative_to(tmp_path)) for j in opencode.locate(env)]

    assert found({"HOME": str(home)}) == [
        "home/.local/share/opencode/storage/session/proj/ses_a.json",
        "home/.local/share/opencode/storage/session/proj/ses_b.json",
    ]
    (root / "opencode.db").write_bytes(b"")
    (root / "opencode-beta.db").write_bytes(b"")
    assert found({"HOME": str(home)}) == [
        "home/.local/share/opencode/opencode-beta.db",
        "home/.local/share/opencode/opencode.db",
    ]
    # $OPENCODE_DB: relative to the data folder, or absolute; once each; `:memory:` is none.
    assert found({"HOME": str(home), "OPENCODE_DB": "opencode.db"})[-1].endswith("/opencode.db")
    assert len(found({"HOME": str(home), "OPENCODE_DB": "opencode.db"})) == 2
    other = tmp_path / "elsewhere.db"
    other.write_bytes(b"")
    assert found({"HOME": str(home), "OPENCODE_DB": str(other)})[-1] == "elsewhere.db"
    assert len(found({"HOME": str(home), "OPENCODE_DB": ":memory:"})) == 2
    # A named database that does not exist: none read, and the storage is not read either.
    (root / "opencode.db").unlink()
    (root / "opencode-beta.db").unlink()
    assert found({"HOME": str(home), "OPENCODE_DB": str(tmp_path / "missing.db")}) == []
    # `:memory:` names no file: the storage is read as if no database were set.
    assert len(found({"HOME": str(home), "OPENCODE_DB": ":memory:"})) == 2
    # A relative name the glob would not find (not `opencode*.db`): in the data folder.
    (root / "custom.sqlite").write_bytes(b"")
    assert found({"HOME": str(home), "OPENCODE_DB": "custom.sqlite"}) == [
        "home/.local/share/opencode/custom.sqlite"
    ]
    # $XDG_DATA_HOME replaces ~/.local/share.
    data = tmp_path / "xdg" / "opencode" / "storage" / "session" / "p"
    data.mkdir(parents=True)
    (data / "ses_c.json").write_text("{}")
    assert found({"HOME": str(home), "XDG_DATA_HOME": str(tmp_path / "xdg")}) == [
        "xdg/opencode/storage/session/p/ses_c.json"
    ]


# --------------------------------------------------------------------------- export reader


def test_an_export_counts_each_message_and_part_as_a_record(tmp_path: Path) -> None:
    diagnostics = Diagnostics()
    (stored,) = storage.read_export(EXPLORE, diagnostics)
    doc = document(EXPLORE)
    assert stored.id == doc["info"]["id"] and stored.source == str(EXPLORE)
    assert [m["id"] for m, _ in stored.messages] == [msg(doc, i)["id"] for i in range(4)]
    assert [len(p) for _, p in stored.messages] == [1, 9, 11, 3]
    # The document (1, not a line), then each message and each part: 4 messages, 24 parts.
    assert (diagnostics.documents_read, diagnostics.records_parsed) == (1, 1 + 4 + 24)
    assert diagnostics.lines_read == 0
    assert diagnostics.warnings == []


def test_a_damaged_export_message_is_warned_about_and_the_rest_read(tmp_path: Path) -> None:
    """Hand-damaged: a message without `info`, one whose parts are not a list, a part that
    is not an object, and a byte-order mark before the document."""
    doc = document(EXPLORE)
    ids = [msg(doc, i)["id"] for i in range(4)]
    doc["messages"][1]["info"] = "gone"
    doc["messages"][2]["parts"] = {"not": "a list"}
    doc["messages"][3]["parts"].insert(0, "not a part")
    del doc["messages"][0]["parts"]
    doc["messages"].insert(1, "not a message")
    path = tmp_path / "damaged.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(doc).encode())
    diagnostics = Diagnostics()
    (stored,) = storage.read_export(path, diagnostics)
    assert [m["id"] for m, _ in stored.messages] == [ids[0], ids[2], ids[3]]
    assert [len(p) for _, p in stored.messages] == [0, 0, 3]
    assert [(w.path, w.line, w.kind, w.message) for w in diagnostics.warnings] == [
        (str(path), None, "bad-shape", "messages[1] is not a JSON object; not read"),
        (str(path), None, "bad-shape", "messages[2] without info; not read"),
    ]
    # 1 + 1 + 1 + (1 + 9) + 1 + (1 + 4): a message without a list of parts is one record.
    assert diagnostics.records_parsed == 1 + 1 + 1 + 10 + 1 + 5


def test_a_file_that_is_no_export_fails_with_its_name(tmp_path: Path) -> None:
    cases = {
        # Cut before its info is whole (one cut later keeps its complete messages:
        # tests/hostile/test_cut_opencode_export.py).
        "cut.json": (
            EXPLORE.read_bytes()[:60],
            "OpenCode export is cut short or damaged (unexpected end of data: line 4 column "
            "3 (char 60))",
        ),
        # orjson's reason, cut to its first 60 characters.
        "comma.json": (
            b'{"info": [' + b"\n" * 20000 + b"1" + b" " * 100000 + b',], "messages": []}',
            "OpenCode export is cut short or damaged (trailing comma is not allowed: line "
            "20001 column 100002 (cha)",
        ),
        "list.json": (b"[1, 2]", "not an OpenCode export (no info and messages)"),
        "noinfo.json": (b'{"info": [], "messages": []}', "not an OpenCode export"),
        "nomessages.json": (b'{"info": {}, "messages": {}}', "not an OpenCode export"),
    }
    for name, (data, message) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(JournalError) as raised:
            storage.read_export(tmp_path / name, Diagnostics())
        assert raised.value.path == str(tmp_path / name)
        assert raised.value.message.startswith(message), raised.value.message
        if name in {"cut.json", "comma.json"}:
            assert raised.value.message == message
    gz = tmp_path / "cut.json.gz"
    gz.write_bytes(gzip.compress(EXPLORE.read_bytes())[:3000])
    with pytest.raises(JournalError) as raised:
        storage.read_export(gz, Diagnostics())
    assert raised.value.path == str(gz)
    with pytest.raises(JournalError) as raised:
        storage.read_export(tmp_path / "missing.json", Diagnostics())
    assert raised.value.message == "cannot open: no such file or directory"


def test_kind_of_a_file_by_its_head(tmp_path: Path) -> None:
    export = Path(shutil.copy(EXPLORE, tmp_path / "anything.json"))
    assert storage.kind_of(export) == "export"
    assert storage.kind_of(DATABASE if DATABASE.is_file() else export) in {"db", "export"}
    sqlite = tmp_path / "renamed.sqlite"
    connection = sqlite3.connect(sqlite)
    connection.execute("CREATE TABLE t (x)")
    connection.commit()
    connection.close()
    assert storage.kind_of(sqlite) == "db"  # by its magic, whatever its name
    assert storage.kind_of(tmp_path / "opencode.db") == "db"  # by its name, even absent
    assert storage.kind_of(tmp_path / "opencodex.sqlite") == ""
    session_file = tmp_path / "storage" / "session" / "proj" / "ses_a.json"
    session_file.parent.mkdir(parents=True)
    session_file.write_text('  {"id": "ses_a", "title": "t"}')
    assert storage.kind_of(session_file) == "storage"
    elsewhere = tmp_path / "ses_b.json"
    elsewhere.write_text('{"id": "ses_b"}')
    assert storage.kind_of(elsewhere) == ""  # not under <root>/session/<project>/
    no_id = tmp_path / "storage" / "session" / "proj" / "ses_c.json"
    no_id.write_text('{"id": "msg_c"}')
    assert storage.kind_of(no_id) == ""
    (tmp_path / "info.json").write_text('{"info": {"id": "x"}, "other": []}')
    assert storage.kind_of(tmp_path / "info.json") == ""  # an export has both keys
    (tmp_path / "array.json").write_text('[{"info": 1, "messages": 2}]')
    assert storage.kind_of(tmp_path / "array.json") == ""
    assert storage.kind_of(tmp_path / "absent.json") == ""
    assert storage.storage_root(session_file) == tmp_path / "storage"
    assert storage.storage_root(tmp_path / "storage" / "session" / "proj" / "msg_a.json") is None


# --------------------------------------------------------------------------- storage reader


def lay_out(doc: dict[str, Any], root: Path, *, nested: bool = False) -> Path:
    """The export as OpenCode ≤1.1 storage: `session/<project>/<ses>.json`, then
    `message/<ses>/<msg>.json` and `part/<msg>/<prt>.json` (≥0.4) or, `nested`, under
    `session/message/<ses>/` and `session/part/<ses>/<msg>/` (early 0.x)."""
    info = doc["info"]
    folder = root / "session" / "proj"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{info['id']}.json").write_text(json.dumps(info))
    base = root / "session" if nested else root
    for message in doc["messages"]:
        m = message["info"]
        where = base / "message" / info["id"]
        where.mkdir(parents=True, exist_ok=True)
        (where / f"{m['id']}.json").write_text(json.dumps(m))
        for part in message["parts"]:
            there = base / "part" / info["id"] / m["id"] if nested else base / "part" / m["id"]
            there.mkdir(parents=True, exist_ok=True)
            (there / f"{part['id']}.json").write_text(json.dumps(part))
    return folder / f"{info['id']}.json"


def test_the_storage_folder_holds_the_same_session_as_the_export(tmp_path: Path) -> None:
    doc = document(EXPLORE)
    for nested in (False, True):
        root = tmp_path / f"storage{int(nested)}"
        lay_out(doc, root, nested=nested)
        diagnostics = Diagnostics()
        (stored,) = storage.read_storage(root, None, diagnostics)
        assert stored.info == doc["info"]
        assert stored.source == str(root / "session" / "proj" / f"{doc['info']['id']}.json")
        assert [m for m, _ in stored.messages] == [msg(doc, i) for i in range(4)]
        for (_, got), message in zip(stored.messages, doc["messages"], strict=True):
            assert got == sorted(message["parts"], key=lambda p: p["id"])
        # One file per session, message and part: each a document read, a record parsed.
        assert diagnostics.documents_read == diagnostics.records_parsed == 1 + 4 + 24
        assert diagnostics.lines_read == 0
        assert diagnostics.warnings == []


def test_storage_messages_are_in_time_order_then_by_id(tmp_path: Path) -> None:
    """File names do not order messages: their `time.created` does, then their id (edited:
    message 2 created before message 1, message 3 at message 1's time, a bad time as 0)."""
    doc = document(EXPLORE)
    ids = [msg(doc, i)["id"] for i in range(4)]
    msg(doc, 2)["time"]["created"] = msg(doc, 1)["time"]["created"] - 1
    msg(doc, 3)["time"]["created"] = msg(doc, 1)["time"]["created"]
    msg(doc, 0)["time"] = {"created": True}
    lay_out(doc, tmp_path)
    (stored,) = storage.read_storage(tmp_path, None, Diagnostics())
    assert [m["id"] for m, _ in stored.messages] == [ids[0], ids[2], ids[1], ids[3]]
    # Times that are no integer count as 0 (a bool, a float, none): then the id decides.
    for first, last in (({"created": True}, "never"), ({"created": 1.5}, {"created": 0})):
        msg(doc, 0)["time"], msg(doc, 3)["time"] = first, last
        lay_out(doc, tmp_path)
        (stored,) = storage.read_storage(tmp_path, None, Diagnostics())
        assert [m["id"] for m, _ in stored.messages] == [ids[0], ids[3], ids[2], ids[1]]


def test_file_names_do_not_order_parts_or_messages(tmp_path: Path) -> None:
    """Hand-laid storage whose file names run against the ids (OpenCode names each file by
    its id; a copy or a tool may not): parts are in id order, messages of one time too."""
    doc = document(EXPLORE)
    msg(doc, 3)["time"]["created"] = msg(doc, 2)["time"]["created"]
    sid = doc["info"]["id"]
    (tmp_path / "session" / "p").mkdir(parents=True)
    (tmp_path / "session" / "p" / f"{sid}.json").write_text(json.dumps(doc["info"]))
    for n, message in enumerate(doc["messages"]):
        folder = tmp_path / "message" / sid
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{9 - n}.json").write_text(json.dumps(message["info"]))
        for k, part in enumerate(message["parts"]):
            there = tmp_path / "part" / message["info"]["id"]
            there.mkdir(parents=True, exist_ok=True)
            (there / f"{99 - k:02}.json").write_text(json.dumps(part))
    (stored,) = storage.read_storage(tmp_path, None, Diagnostics())
    assert [m["id"] for m, _ in stored.messages] == [msg(doc, i)["id"] for i in range(4)]
    for (_, got), message in zip(stored.messages, doc["messages"], strict=True):
        assert [p["id"] for p in got] == sorted(p["id"] for p in message["parts"])


def test_storage_reads_the_wanted_sessions_and_their_subagents(tmp_path: Path) -> None:
    """The `@docs` child and the explore child laid out in one storage folder, with a
    grandchild (a copy of the docs child whose parent is the docs child) and its child."""
    docs, explore = document(DOCS), document(EXPLORE)
    grandchild = cut(DOCS, [0])
    grandchild["info"] = {
        **grandchild["info"],
        "id": "ses_grandchild",
        "parentID": docs["info"]["id"],
    }
    great = cut(DOCS, [0])
    great["info"] = {**great["info"], "id": "ses_great", "parentID": "ses_grandchild"}
    for doc in (docs, explore, grandchild, great):
        lay_out(doc, tmp_path)
    (tmp_path / "session" / "proj" / "ses_noid.json").write_text('{"title": "no id"}')
    (tmp_path / "session" / "proj" / "ses_list.json").write_text("[1]")

    def read_ids(wanted: set[str] | None) -> list[str]:
        return [s.id for s in storage.read_storage(tmp_path, wanted, Diagnostics())]

    # The parent of the docs child is not in the folder: only what was asked, and below.
    assert read_ids({docs["info"]["id"]}) == [docs["info"]["id"], "ses_grandchild", "ses_great"]
    assert read_ids({"ses_grandchild"}) == ["ses_grandchild", "ses_great"]
    assert read_ids({"ses_absent"}) == []
    assert read_ids(None) == sorted(
        [docs["info"]["id"], explore["info"]["id"], "ses_grandchild", "ses_great"]
    )
    # A wanted session that is not in the folder brings none of its children.
    assert read_ids({docs["info"]["parentID"]}) == []


class _Info(dict[str, Any]):
    """A stored session's info that counts each time its parent is asked for."""

    asked = 0

    def get(self, key: str, default: Any = None) -> Any:
        _Info.asked += key == "parentID"
        return super().get(key, default)


def test_a_chain_of_subagents_in_storage_asks_each_sessions_parent_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hand-laid storage: a chain of 60 sessions, each the parent of the next, the first
    wanted, and one whose `parentID` is a list (was a TypeError). The chain is read, and
    each session's parent is asked for once (before: every session's, once per generation
    of the chain: 62 × 61)."""
    folder = tmp_path / "session" / "proj"
    folder.mkdir(parents=True)
    chain = [f"ses_{k:03d}" for k in range(60)]
    for k, session_id in enumerate(chain):
        info = {"id": session_id, "parentID": chain[k - 1] if k else None}
        (folder / f"{session_id}.json").write_text(json.dumps(info))
    (folder / "ses_odd.json").write_text(json.dumps({"id": "ses_odd", "parentID": ["ses_000"]}))
    load_json = storage._load_json

    def counted(path: Path, diagnostics: Diagnostics, *, whole: bool = False) -> Any:
        found = load_json(path, diagnostics, whole=whole)
        return _Info(found) if isinstance(found, dict) else found

    monkeypatch.setattr(storage, "_load_json", counted)
    _Info.asked = 0
    read = storage.read_storage(tmp_path, {"ses_000"}, Diagnostics())
    assert [s.id for s in read] == chain
    assert _Info.asked == len(chain) + 1


def test_a_damaged_storage_file_is_warned_about_and_the_rest_read(tmp_path: Path) -> None:
    doc = document(EXPLORE)
    session_file = lay_out(doc, tmp_path)
    message_file = tmp_path / "message" / doc["info"]["id"] / f"{msg(doc, 2)['id']}.json"
    message_file.write_text('{"id": "msg_cut", "role": ')
    (tmp_path / "message" / doc["info"]["id"] / "msg_noid.json").write_text('{"role": "user"}')
    part_file = (
        tmp_path / "part" / msg(doc, 1)["id"] / f"{doc['messages'][1]['parts'][0]['id']}.json"
    )
    part_file.write_text("[]")
    diagnostics = Diagnostics()
    (stored,) = storage.read_storage(tmp_path, None, diagnostics)
    assert [m["id"] for m, _ in stored.messages] == [msg(doc, i)["id"] for i in (0, 1, 3)]
    assert len(stored.messages[1][1]) == 8  # the part that is no object is left out
    (warning,) = diagnostics.warnings
    assert (warning.path, warning.line, warning.kind) == (str(message_file), None, "not-json")
    assert warning.message == (
        "damaged JSON file (unexpected end of data: line 1 column 27 (char 26))"
    )
    assert diagnostics.documents_read == 1 + 5 + 24 - 11  # message 2's parts are not read
    assert diagnostics.records_parsed == diagnostics.documents_read - 1
    # An assistant message with no part files: its content is unknown, said once per session.
    for index in (0, 1, 3):  # the user message without parts is nothing to say
        for part in (tmp_path / "part" / msg(doc, index)["id"]).iterdir():
            part.unlink()
    diagnostics = Diagnostics()
    storage.read_storage(tmp_path, None, diagnostics)
    missing = [w for w in diagnostics.warnings if w.kind == "missing-parts"]
    assert [(w.path, w.line, w.message) for w in missing] == [
        (
            str(session_file),
            None,
            "2 assistant messages have no part files (their content is unknown)",
        )
    ]


def test_a_storage_file_that_cannot_be_read_is_a_read_error(tmp_path: Path) -> None:
    doc = document(EXPLORE)
    lay_out(doc, tmp_path)
    message_file = tmp_path / "message" / doc["info"]["id"] / f"{msg(doc, 3)['id']}.json"
    message_file.unlink()
    message_file.mkdir()  # a folder where the file was: not a file, not listed
    gz = tmp_path / "message" / doc["info"]["id"] / "msg_zz.json"
    gz.write_bytes(gzip.compress(b'{"id": "msg_zz"}')[:12])  # a gzip cut short, named .json
    diagnostics = Diagnostics()
    (stored,) = storage.read_storage(tmp_path, None, diagnostics)
    assert [m["id"] for m, _ in stored.messages] == [msg(doc, i)["id"] for i in range(3)]
    assert [(w.path, w.line, w.kind, w.message) for w in diagnostics.warnings] == [
        (
            str(gz),
            None,
            "read-error",
            "corrupt or truncated gzip stream (Compressed file ended before the "
            "end-of-stream marker was reached)",
        )
    ]


# --------------------------------------------------------------------------- database reader


@pytest.fixture
def database(tmp_path: Path) -> Path:
    """A copy of the real v1.16.0 database (WAL mode, no `-wal` beside it), in its own folder:
    the corpus copy is never opened."""
    if not DATABASE.is_file():
        pytest.skip("shared corpus absent")
    folder = tmp_path / "db"
    folder.mkdir()
    return Path(shutil.copy(DATABASE, folder / "opencode.db"))


def edit_db(path: Path, *statements: tuple[str, tuple[Any, ...]]) -> None:
    """Edit the copy, then leave it as OpenCode does when idle: WAL mode, no `-wal`."""
    connection = sqlite3.connect(path)
    for sql, args in statements:
        connection.execute(sql, args)
    connection.commit()
    connection.close()
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


SESSION_ID = "ses_04ca851f7ffevKrKMHW3RsPK1U"


def test_the_database_session_row_reads_as_an_export_info(database: Path) -> None:
    diagnostics = Diagnostics()
    (stored,) = storage.read_db(database, diagnostics)
    assert stored.info == {
        "id": SESSION_ID,
        "parentID": None,
        "directory": "/workspace",
        "title": "New session - 2026-07-30T14:04:55.689Z",
        "version": "v1.16.0",
        "agent": "build",
        "time": {"created": 1785420295689, "updated": 1785420864454},
        "model": {"id": "monkeycode-basic/deepseek-v4-flash", "providerID": "monkeycode-ai"},
    }
    assert stored.source == str(database)
    # 35 message rows and 118 part rows, each a record; parts carry their row's id.
    assert len(stored.messages) == 35
    assert sum(len(p) for _, p in stored.messages) == 118
    assert diagnostics.rows_read == diagnostics.records_parsed == 35 + 118
    assert diagnostics.lines_read == diagnostics.documents_read == 0
    first, first_parts = stored.messages[0]
    assert first["id"] == "msg_fb357c94400162LvgqZRiO662i"
    assert first["time"] == {"created": 1785420302660}
    assert [p["id"] for p in first_parts] == ["prt_fb357c948001zKs17bysmuZXKY"]
    # Nothing was created beside the database (opened immutable: no `-wal`, no `-shm`).
    assert sorted(p.name for p in database.parent.iterdir()) == ["opencode.db"]


def test_the_database_session_through_the_adapter(database: Path) -> None:
    (session,), _ = read(database)
    assert (session.session_id, session.harness_version, session.project) == (
        SESSION_ID,
        "1.16.0",
        "workspace",
    )
    facts = dict(session.facts)
    assert facts["storage"] == "opencode.db"
    assert (facts["session_title"], facts["session_agent"]) == (
        "New session - 2026-07-30T14:04:55.689Z",
        "build",
    )
    assert "session_slug" not in facts  # the database's session row has no slug column read
    assert (len(session.responses), len(session.tool_calls)) == (26, 21)
    # The last message is still streaming: no step-finish, no usage, no reason.
    (failed,) = session.failed_requests
    assert (failed.id, failed.stop_reason) == ("msg_fb3605bba001tG5tf65f4Cy0Si", None)
    assert facts["requests_without_usage"] == "no usage: 1"
    assert session.incomplete is False and session.child_role is None


def test_a_message_row_takes_its_time_from_its_column_unless_its_data_has_one(
    database: Path,
) -> None:
    """Edited rows: the first message's data without `time` (the column's `time_created`
    is its time); the second's data with a `time.created` other than its column (the data
    wins, as it is what OpenCode shows)."""
    first, second = "msg_fb357c94400162LvgqZRiO662i", "msg_fb357c9b0001vCeyfeGDJFOYFA"
    edit_db(
        database,
        ("UPDATE message SET data = json_remove(data, '$.time') WHERE id = ?", (first,)),
        (
            "UPDATE message SET data = json_set(data, '$.time.created', 1785420302700) "
            "WHERE id = ?",
            (second,),
        ),
    )
    (stored,) = storage.read_db(database, Diagnostics())
    times = {m["id"]: m["time"] for m, _ in stored.messages}
    assert times[first] == {"created": 1785420302660}
    assert times[second]["created"] == 1785420302700
    assert "completed" in times[second]


def test_damaged_database_rows_are_warned_about_and_the_rest_read(database: Path) -> None:
    """Edited rows: a part and a message whose data is not JSON, a message whose data is a
    JSON list, a message of a session the database does not hold, a part as a BLOB."""
    part, message = "prt_fb357c948001zKs17bysmuZXKY", "msg_fb357d33a001OUzp4KM421TL5K"
    listed = "msg_fb357c9b0001vCeyfeGDJFOYFA"
    edit_db(
        database,
        ("UPDATE part SET data = 'not json' WHERE id = ?", (part,)),
        ("UPDATE message SET data = '{\"role\": ' WHERE id = ?", (message,)),
        ("UPDATE message SET data = '[1]' WHERE id = ?", (listed,)),
        (
            "INSERT INTO message (id, session_id, time_created, time_updated, data) "
            "VALUES ('msg_orphan', 'ses_elsewhere', 1, 1, '{}')",
            (),
        ),
        (
            "UPDATE part SET data = CAST(data AS BLOB) WHERE id = 'prt_fb357d1d3001ZL9o3ItX7tLJwY'",
            (),
        ),
    )
    diagnostics = Diagnostics()
    (stored,) = storage.read_db(database, diagnostics)
    ids = [m["id"] for m, _ in stored.messages]
    assert len(ids) == 35 - 2 and message not in ids and listed not in ids
    assert stored.messages[0][1] == []  # its only part was damaged
    # Each names its row (never its text)
    assert [(w.path, w.line, w.kind, w.message) for w in diagnostics.warnings] == [
        (str(database), None, "not-json", f"part {part}: its data is not JSON"),
        (str(database), None, "not-json", f"message {message}: its data is not JSON"),
    ]
    # The orphan message's parts, and those of the two damaged messages: said, not read
    assert diagnostics.notes == {
        "opencode:message-of-unknown-session": 1,
        "opencode:part-of-unknown-message": 8,
    }
    assert diagnostics.rows_read == 36 + 118
    assert diagnostics.records_parsed == 36 + 118 - 2


def test_a_database_that_is_not_opencode_s_fails_with_its_reason(tmp_path: Path) -> None:
    folder = tmp_path / "opencode.db"
    folder.mkdir()
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all" * 100)
    other = tmp_path / "other.db"
    connection = sqlite3.connect(other)
    connection.execute("CREATE TABLE session (id)")
    connection.execute("CREATE TABLE message (id)")
    connection.commit()
    connection.close()
    cases = {
        folder: "cannot open: is a directory",
        # Deleted after planning: as every harness says it (review-motion 10), not "not a file"
        tmp_path / "opencode-gone.db": "cannot open: no such file or directory",
        garbage: "not a SQLite database, or corrupt (file is not a database)",
        other: "not an OpenCode database (no session/message/part tables, nor 2.x session_message)",
    }
    for path, message in cases.items():
        with pytest.raises(JournalError) as raised:
            storage.read_db(path, Diagnostics())
        assert (raised.value.path, raised.value.message) == (str(path), message)


def test_a_database_in_a_folder_with_uri_characters_is_read(tmp_path: Path) -> None:
    """The database is opened through a `file:` URI: `?`, `#` and `%` in its path are
    quoted, not taken for the URI's query or fragment."""
    if not DATABASE.is_file():
        pytest.skip("shared corpus absent")
    folder = tmp_path / "a ?x=1 #frag %20"
    folder.mkdir()
    path = Path(shutil.copy(DATABASE, folder / "opencode.db"))
    (stored,) = storage.read_db(path, Diagnostics())
    assert stored.id == SESSION_ID
    assert sorted(p.name for p in folder.iterdir()) == ["opencode.db"]


def test_a_live_database_is_read_as_of_one_moment(database: Path) -> None:
    """OpenCode running: a `-wal` beside the database (here an edit left uncheckpointed).
    The database is opened read-only, not immutable, so the `-wal`'s rows are seen."""
    writer = sqlite3.connect(database)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("UPDATE session SET title = 'renamed while running'")
    writer.commit()
    assert (database.parent / "opencode.db-wal").is_file()
    assert storage._quiescent_wal(database) is False
    (stored,) = storage.read_db(database, Diagnostics())
    assert stored.info["title"] == "renamed while running"
    writer.close()


def test_the_quiescent_wal_test_reads_the_header(tmp_path: Path, database: Path) -> None:
    """Header bytes 18–19 are 2, 2 in WAL mode; a rollback-journal database has 1, 1."""
    assert storage._quiescent_wal(database) is True
    rollback = tmp_path / "rollback.db"
    shutil.copy(database, rollback)
    connection = sqlite3.connect(rollback)
    connection.execute("PRAGMA journal_mode = DELETE")
    connection.close()
    assert rollback.read_bytes()[18:20] == b"\x01\x01"
    assert storage._quiescent_wal(rollback) is False
    assert storage._quiescent_wal(tmp_path / "absent.db") is False
    fake = tmp_path / "fake.db"
    fake.write_bytes(b"SQLite format 4\x00" + b"\x00\x00\x02\x02" + b"\x00" * 80)
    assert storage._quiescent_wal(fake) is False
    # A rollback-journal database is read read-only, and nothing is created beside it.
    (stored,) = storage.read_db(rollback, Diagnostics())
    assert stored.id == SESSION_ID
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db", "fake.db", "rollback.db"]


def test_a_database_locked_by_a_writer_says_so(
    tmp_path: Path, database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rollback-journal database with a writer's exclusive lock (OpenCode ≤1.2 writing):
    wait `LOCK_WAIT_S` (here shortened), then say it is locked and what to do."""
    rollback = tmp_path / "rollback.db"
    shutil.copy(database, rollback)
    connection = sqlite3.connect(rollback, isolation_level=None)
    connection.execute("PRAGMA journal_mode = DELETE")
    connection.execute("BEGIN EXCLUSIVE")
    monkeypatch.setattr(storage, "LOCK_WAIT_S", 0.05)
    started = time.monotonic()
    try:
        with pytest.raises(JournalError) as raised:
            storage.read_db(rollback, Diagnostics())
    finally:
        connection.close()
    assert time.monotonic() - started < 2.5  # LOCK_WAIT_S, not SQLite's default of 5 s
    assert raised.value.path == str(rollback)
    assert raised.value.message == (
        "database is locked by another process (database is locked); try again when "
        "OpenCode is idle, or read `opencode export <session id>` output instead"
    )


# --------------------------------------------------------------------------- what is read


def test_a_session_in_the_database_and_the_storage_is_read_from_the_database(
    tmp_path: Path, database: Path
) -> None:
    """After the migration to SQLite (1.2) the JSON storage stays on disk: a session both
    hold is read once, from the database, whichever order the files come in. Here the
    storage holds the explore child's messages under the database session's id."""
    doc = document(EXPLORE)
    doc["info"]["id"] = SESSION_ID
    del doc["info"]["parentID"]
    moved = lay_out(doc, tmp_path / "storage")
    other = document(DOCS)
    kept = lay_out(other, tmp_path / "storage")
    for order in ([moved, kept, database], [database, kept, moved]):
        diagnostics = Diagnostics()
        stored = opencode.read_stored(order, diagnostics)
        assert [(s.id, s.source) for s in stored] == [
            (SESSION_ID, str(database)),
            (other["info"]["id"], str(kept)),
        ]
        assert diagnostics.notes == {"opencode:session-read-twice": 1}
        assert len(stored[0].messages) == 35
    # Only the storage sessions pointed at (and their subagents) are read, not the folder.
    stored = opencode.read_stored([kept], Diagnostics())
    assert [s.id for s in stored] == [other["info"]["id"]]
    # An export read with the database: the database's sessions come first.
    export = Path(shutil.copy(EXPLORE, tmp_path / "x.export.json"))
    stored = opencode.read_stored([export, database], Diagnostics())
    assert [s.source for s in stored] == [str(database), str(export)]


def test_two_storage_folders_holding_one_session_read_it_once(tmp_path: Path) -> None:
    """A copy of the storage folder (a backup) read with the original: the session is read
    from the folder named first, and the other copy is noted as read twice."""
    first = lay_out(document(EXPLORE), tmp_path / "a" / "storage")
    second = lay_out(document(EXPLORE), tmp_path / "b" / "storage")
    diagnostics = Diagnostics()
    stored = opencode.read_stored([second, first], diagnostics)
    assert [s.source for s in stored] == [str(second)]
    assert diagnostics.notes == {"opencode:session-read-twice": 1}


def test_two_copies_of_one_export_are_both_read(tmp_path: Path) -> None:
    """Two exports of one session with other bytes (a later export, a longer copy): the
    adapter reads both, the loader names the second `#2`. A copy with the very bytes of
    the first is read once (repeats.py)."""
    first = Path(shutil.copy(EXPLORE, tmp_path / "a.export.json"))
    second = tmp_path / "b.export.json"
    second.write_bytes(EXPLORE.read_bytes() + b"\n")
    diagnostics = Diagnostics()
    stored = opencode.read_stored([second, first], diagnostics)
    assert [s.source for s in stored] == [str(second), str(first)]
    assert diagnostics.notes == {}
    sessions, _ = read(first, second)
    assert sorted(s.session_id for s in sessions) == [
        "ses_2bef25635ffe8EzID0I1Oeymal",
        "ses_2bef25635ffe8EzID0I1Oeymal#2",
    ]
    same = Path(shutil.copy(EXPLORE, tmp_path / "c.export.json"))
    sessions, _ = read(first, same)
    assert [s.session_id for s in sessions] == ["ses_2bef25635ffe8EzID0I1Oeymal"]


def test_the_export_and_the_storage_of_one_session_are_read_once(tmp_path: Path) -> None:
    """An export read beside the storage that holds the same session: the storage's copy
    is the one left out (read last, it is the older container)."""
    export = Path(shutil.copy(EXPLORE, tmp_path / "x.export.json"))
    laid = lay_out(document(EXPLORE), tmp_path / "storage")
    diagnostics = Diagnostics()
    stored = opencode.read_stored([laid, export], diagnostics)
    assert [s.source for s in stored] == [str(export)]
    assert diagnostics.notes == {"opencode:session-read-twice": 1}
    # Two session files of one storage folder: one reading of the folder, both sessions.
    other = lay_out(document(DOCS), tmp_path / "storage")
    diagnostics = Diagnostics()
    stored = opencode.read_stored([other, laid], diagnostics)
    assert sorted(s.id for s in stored) == sorted(
        ["ses_2bef25635ffe8EzID0I1Oeymal", "ses_fd4c895f0ffe6gKgxHiEgiQCcd"]
    )
    # session, messages, parts: each one JSON document
    assert diagnostics.documents_read == (1 + 4 + 24) + (1 + 5 + 20)


# --------------------------------------------------------------------------- edge requests


def test_an_aborted_message_without_any_part_is_still_a_failed_request(tmp_path: Path) -> None:
    """The parent's message 60: aborted before any part was written."""
    if not PARENT.is_file():
        pytest.skip("shared corpus absent")
    doc = cut(PARENT, [31, 60])
    assert doc["messages"][1]["parts"] == []
    session, _ = read_one(tmp_path, doc)
    (failed,) = session.failed_requests
    assert (failed.id, failed.is_error, failed.stop_reason) == (
        msg(doc, 1)["id"],
        True,
        "MessageAbortedError",
    )
    assert failed.end_ns == msg(doc, 1)["time"]["completed"] * MS


def test_the_parts_of_an_aborted_request_belong_to_no_response(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent's message 15 (aborted) with a text part added beside its reasoning: the
    model's text is in the context, but no response sent it."""
    if not PARENT.is_file():
        pytest.skip("shared corpus absent")
    doc = cut(PARENT, [0, 14, 15])
    (thinking,) = parts(doc, 2, "reasoning")
    text = {**thinking, "type": "text", "id": "prt_added_text"}
    doc["messages"][2]["parts"].insert(2, text)
    added = spy(monkeypatch)
    read_one(tmp_path, doc)
    aborted = msg(doc, 2)["id"]
    assert item(added, f"{aborted}:{thinking['id']}") == (
        AS,
        "Reasoning",
        len(thinking["text"]),
        "",
        SourceKind.RESPONSE,
    )
    assert item(added, f"{aborted}:prt_added_text")[3] == ""


def test_a_finished_step_with_output_but_no_prompt_is_a_failed_request(tmp_path: Path) -> None:
    """The parent's message 95 (zero usage) edited to report 12 output tokens and no prompt:
    a request that reported something is no unknown-size request; without a prompt size it
    is a failed one. And a prompt of a single token is a measured request."""
    if not PARENT.is_file():
        pytest.skip("shared corpus absent")
    doc = cut(PARENT, [74, 95])
    (finish,) = parts(doc, 1, "step-finish")
    finish["tokens"] = {**finish["tokens"], "output": 12}
    session, _ = read_one(tmp_path, doc)
    assert session.unmetered_responses == () and session.responses == ()
    (failed,) = session.failed_requests
    assert (failed.id, failed.stop_reason, failed.usage.output_tokens) == (
        msg(doc, 1)["id"],
        "unknown",
        12,
    )
    finish["tokens"] = {**finish["tokens"], "output": 0, "reasoning": 3}
    session, _ = read_one(tmp_path, doc)
    assert [r.id for r in session.failed_requests] == [msg(doc, 1)["id"]]
    finish["tokens"] = {**finish["tokens"], "input": 1}
    session, _ = read_one(tmp_path, doc)
    (response,) = session.responses
    assert response.usage.prompt_tokens == 1 and session.failed_requests == ()


def test_a_summary_is_known_by_either_of_its_flags(tmp_path: Path) -> None:
    """The compacting session's summarisation message with only `summary: true` (agent
    edited to `build`), then only the `compaction` agent (`summary` removed)."""
    doc = _compacting(range(40, 48))
    summarised = msg(doc, 5)
    summarised["agent"] = "build"
    session, _ = read_one(tmp_path, doc)
    assert [c.request.id for c in session.compactions if c.request] == [summarised["id"]]
    summarised["agent"] = "compaction"
    del summarised["summary"]
    session, _ = read_one(tmp_path, doc)
    assert [c.request.id for c in session.compactions if c.request] == [summarised["id"]]
    assert summarised["id"] not in [r.id for r in session.responses]
    assert session.failed_requests == () and session.unmetered_responses == ()


def test_what_the_compaction_request_message_holds_stays(tmp_path: Path) -> None:
    """Hand-made: a typed line beside the `compaction` part (as `/compact focus on X` might
    write): the message that asked stays in the prompt, only older ones leave."""
    doc = _compacting(range(40, 48))
    whole, _ = read_one(tmp_path, doc)
    doc["messages"][4]["parts"].append({"type": "text", "id": "prt_focus", "text": "focus"})
    session, _ = read_one(tmp_path, doc)
    assert session.compactions[0].removed_items == whole.compactions[0].removed_items


def test_an_unmeasured_summary_without_its_compaction_part_is_an_instant(tmp_path: Path) -> None:
    """No compaction part and no usage on the summary (both hand-removed): the compaction
    starts and ends where the summary message ends."""
    doc = _compacting([40, 41, 45, 46, 47])
    zero = {"input": 0, "output": 0, "reasoning": 0, "cache": {"write": 0, "read": 0}}
    msg(doc, 2)["tokens"] = zero
    parts(doc, 2, "step-finish")[0]["tokens"] = zero
    session, _ = read_one(tmp_path, doc)
    (compaction,) = session.compactions
    assert compaction.request is None and compaction.trigger is None
    assert compaction.start_ns == compaction.end_ns == msg(doc, 2)["time"]["completed"] * MS


def test_a_call_outside_its_messages_times_widens_the_session(tmp_path: Path) -> None:
    """Hand-edited, within the outlier limits: the first call started 2 s before the session
    was created (a skewed clock), and a call of message 2 ended 60 s after the last
    message completed. The session spans both."""
    doc = document(EXPLORE)
    first = parts(doc, 1, "tool")[0]
    first["state"]["time"]["start"] = doc["info"]["time"]["created"] - 2000
    late = parts(doc, 2, "tool")[0]
    late["state"]["time"]["end"] = msg(doc, 3)["time"]["completed"] + 60_000
    session, _ = read_one(tmp_path, doc)
    assert session.start_ns == (doc["info"]["time"]["created"] - 2000) * MS
    assert session.end_ns == (msg(doc, 3)["time"]["completed"] + 60_000) * MS


def test_undated_first_message_is_placed_at_the_session_creation(tmp_path: Path) -> None:
    """The explore child's prompt with its time removed: placed where the session was
    created; with the creation zeroed too, at the median of the first messages' times; with
    a creation 400 days before them (a real date, but not this session's), the same."""
    doc = document(EXPLORE)
    del msg(doc, 0)["time"]
    session, diagnostics = read_one(tmp_path, doc)
    assert session.prompts[0].start_ns == doc["info"]["time"]["created"] * MS
    assert diagnostics.warning_counts == {"parent-not-exported": 1}  # no bad-timestamp
    median = sorted(msg(doc, i)["time"]["created"] for i in (1, 2, 3))[1]
    for created in (0, msg(doc, 1)["time"]["created"] - 400 * 86_400_000):
        doc["info"]["time"]["created"] = created
        session, _ = read_one(tmp_path, doc)
        # (Which is after the first request started: see the report of issue 15.9.)
        assert session.prompts[0].start_ns == median * MS


def test_a_session_created_long_before_its_messages_starts_with_them(tmp_path: Path) -> None:
    doc = document(EXPLORE)
    doc["info"]["time"]["created"] = msg(doc, 0)["time"]["created"] - 400 * 86_400_000
    session, _ = read_one(tmp_path, doc)
    assert session.start_ns == msg(doc, 0)["time"]["created"] * MS


def test_a_first_message_dated_far_away_is_judged_by_the_ones_after_it(tmp_path: Path) -> None:
    doc = document(EXPLORE)
    msg(doc, 0)["time"]["created"] = 4_070_908_800_000  # 2099
    session, diagnostics = read_one(tmp_path, doc)
    (warning,) = [w for w in diagnostics.warnings if w.kind == "time-outlier"]
    assert f"messages[0] ({msg(doc, 0)['id']})" in warning.message
    assert session.prompts[0].start_ns == doc["info"]["time"]["created"] * MS


def test_message_times_that_are_no_epoch_milliseconds(tmp_path: Path) -> None:
    """Hand-damaged times of message 2: 0 (a zeroed clock: a time, the epoch, which the
    outlier rule rejects), 2**53 (beyond what a JSON number holds exactly: no time), and a
    date string (no time)."""
    doc = document(EXPLORE)
    expected = {0: ("time-outlier", 0), 2**53: (None, 1), "2026-03-30T12:00:00Z": (None, 1)}
    for value, (warned, noted) in expected.items():
        msg(doc, 2)["time"]["created"] = value
        session, diagnostics = read_one(tmp_path, doc)
        kinds = set(diagnostics.warning_counts) - {"parent-not-exported"}
        assert kinds == ({warned} if warned else set()), value
        assert diagnostics.notes.get("opencode:message-without-time", 0) == noted, value
        assert session.responses[1].start_ns == msg(doc, 1)["time"]["created"] * MS + MS


def test_a_database_left_with_its_wal_is_not_written(tmp_path: Path) -> None:
    """OpenCode killed mid-session leaves a `-wal` that no process holds (here: a copy of a
    live database and its `-wal`). It is read with the `-wal`'s rows, and neither file is
    changed: opened read-only, the reader cannot checkpoint the `-wal` into the database."""
    if not DATABASE.is_file():
        pytest.skip("shared corpus absent")
    live, left = tmp_path / "live", tmp_path / "left"
    live.mkdir()
    left.mkdir()
    shutil.copy(DATABASE, live / "opencode.db")
    writer = sqlite3.connect(live / "opencode.db")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("UPDATE session SET title = 'renamed before the crash'")
    writer.commit()
    for name in ("opencode.db", "opencode.db-wal"):
        shutil.copy(live / name, left / name)
    writer.close()
    before = {p.name: p.read_bytes() for p in left.iterdir()}
    (stored,) = storage.read_db(left / "opencode.db", Diagnostics())
    assert stored.info["title"] == "renamed before the crash"
    after = {p.name: p.read_bytes() for p in left.iterdir() if p.name != "opencode.db-shm"}
    assert after == before


def test_a_database_of_only_the_three_tables_is_read(tmp_path: Path, database: Path) -> None:
    """The tables the reader needs and no others (a trimmed copy)."""
    trimmed = tmp_path / "trimmed.db"
    connection = sqlite3.connect(trimmed)
    connection.execute("ATTACH ? AS src", (f"file:{database}?mode=ro&immutable=1",))
    for table in ("session", "message", "part"):
        connection.execute(f"CREATE TABLE {table} AS SELECT * FROM src.{table}")
    connection.commit()
    connection.execute("DETACH src")
    connection.close()
    (stored,) = storage.read_db(trimmed, Diagnostics())
    assert (stored.id, len(stored.messages)) == (SESSION_ID, 35)


def test_a_database_with_a_damaged_table_is_corrupt(tmp_path: Path, database: Path) -> None:
    """A copy whose `message` table's root page is overwritten: the header and the schema
    read, the rows do not."""
    probe = sqlite3.connect(f"file:{database}?mode=ro&immutable=1", uri=True)
    (root,) = probe.execute("SELECT rootpage FROM sqlite_master WHERE name = 'message'").fetchone()
    (page,) = probe.execute("PRAGMA page_size").fetchone()
    probe.close()
    data = bytearray(database.read_bytes())
    data[(root - 1) * page : root * page] = b"\xff" * page
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(bytes(data))
    with pytest.raises(JournalError) as raised:
        storage.read_db(damaged, Diagnostics())
    assert (raised.value.path, raised.value.message) == (
        str(damaged),
        "the database is corrupt (database disk image is malformed)",
    )


def test_a_session_row_whose_model_is_not_json(database: Path) -> None:
    edit_db(database, ("UPDATE session SET model = 'monkeycode-basic'", ()))
    (stored,) = storage.read_db(database, Diagnostics())
    assert "model" not in stored.info and stored.info["title"].startswith("New session")


def test_a_database_child_session_row_names_its_parent(database: Path) -> None:
    """A second session row, hand-added as a subagent of the real one (`parent_id`)."""
    edit_db(
        database,
        (
            "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, "
            "time_created, time_updated) SELECT 'ses_child', project_id, id, slug, directory, "
            "'child', version, time_created + 1, time_updated FROM session",
            (),
        ),
    )
    stored = {s.id: s for s in storage.read_db(database, Diagnostics())}
    assert stored["ses_child"].info["parentID"] == SESSION_ID
    assert stored[SESSION_ID].info["parentID"] is None
    sessions, _ = read(database)
    child = next(s for s in sessions if s.session_id == "ses_child")
    assert (child.parent_session, child.child_role) == (SESSION_ID, "subagent")


def test_an_export_over_the_size_limit_is_one_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real 1.18.21 export, with the 512 MB limit lowered below its size (a real one that
    large is not kept in the repository): one failure naming the file and the limit."""
    from agent_profiler.adapters import opencode_storage
    from agent_profiler.diagnostics import Diagnostics

    monkeypatch.setattr(opencode_storage, "MAX_DOCUMENT_BYTES", 1_000)
    result = load([DOCS], Diagnostics())
    assert result.sessions == []
    assert [(f.path, f.message) for f in result.failures] == [
        (str(DOCS), "JSON document over 512 MB; not read")
    ]


@pytest.mark.parametrize(
    ("error", "kept"),
    [
        (None, True),
        ({"name": "APIError", "data": {"message": "overloaded"}}, False),
        ({"name": "MessageAbortedError", "data": {}}, True),  # (with its calls: they stay)
        ({"name": "UnknownError", "data": {}}, False),
        ({}, False),  # (an object, any: JavaScript's `if (msg.info.error)`)
        ("overloaded", False),
    ],
)
def test_what_a_failed_message_wrote_is_not_sent_again(
    tmp_path: Path, error: object, kept: bool
) -> None:
    """OpenCode leaves an assistant message that failed out of every later request
    (`MessageV2.toModelMessages`), but one aborted with parts beyond its step starts and
    reasoning: the first request's answer and calls leave before the second, which sends
    only what came before; its calls are still drawn."""
    doc = document(EXPLORE)
    if error is not None:
        msg(doc, 1)["error"] = error
    session, _ = read_one(tmp_path, doc)
    second = next(s for s in session.snapshots if s.anchor_id == msg(doc, 2)["id"])
    first_items = {f"{msg(doc, 1)['id']}:{p['id']}" for p in doc["messages"][1]["parts"]}
    calls = {f"call:{p['callID']}" for p in parts(doc, 1, "tool")} | {
        f"result:{p['callID']}" for p in parts(doc, 1, "tool")
    }
    carried = {c.id for c in second.changes} & (first_items | calls)
    assert bool(carried) is kept
    assert {t.call_id for t in session.tool_calls} >= {p["callID"] for p in parts(doc, 1, "tool")}


def test_an_aborted_message_of_reasoning_alone_is_not_sent_again(tmp_path: Path) -> None:
    """An aborted message with nothing but its step starts and reasoning is left out."""
    doc = document(EXPLORE)
    msg(doc, 1)["error"] = {"name": "MessageAbortedError", "data": {}}
    created = msg(doc, 1)["time"]["created"]
    reasoning = {
        "id": "prt_reasoning",
        "sessionID": msg(doc, 1)["sessionID"],
        "messageID": msg(doc, 1)["id"],
        "type": "reasoning",
        "text": "I should look around the repository first.",
        "time": {"start": created, "end": created + 5},
    }
    kept = [p for p in doc["messages"][1]["parts"] if p["type"] == "step-start"]
    doc["messages"][1]["parts"] = [*kept, reasoning]
    session, _ = read_one(tmp_path, doc)
    second = next(s for s in session.snapshots if s.anchor_id == msg(doc, 2)["id"])
    assert f"{msg(doc, 1)['id']}:prt_reasoning" not in {c.id for c in second.changes}
    # the same message not aborted: its reasoning is sent again
    del msg(doc, 1)["error"]
    (tmp_path / "kept").mkdir()
    session, _ = read_one(tmp_path / "kept", doc)
    second = next(s for s in session.snapshots if s.anchor_id == msg(doc, 2)["id"])
    assert f"{msg(doc, 1)['id']}:prt_reasoning" in {c.id for c in second.changes}


@needs_corpus
def test_a_compaction_summary_that_failed_is_no_compaction(tmp_path: Path) -> None:
    """OpenCode counts a summary as a compaction only when it finished without an error
    (`filterCompacted`): an interrupted one left the history as it was, and what it wrote
    is not sent (1.4.3's compaction, message 45, made to fail)."""
    doc = document(COMPACTING)
    assert msg(doc, 45).get("summary") is True
    session, _ = read_one(tmp_path, doc)
    assert len(session.compactions) == 1
    msg(doc, 45)["error"] = {"name": "APIError", "data": {"message": "overloaded"}}
    (tmp_path / "failed").mkdir()
    session, _ = read_one(tmp_path / "failed", doc)
    assert session.compactions == ()
