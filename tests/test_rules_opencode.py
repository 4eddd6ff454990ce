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
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters import SniffedFile, opencode
from agent_profiler.adapters import opencode_storage as storage
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import JournalError
from agent_profiler.loader import load
from agent_profiler.model import Category, Session, SourceKind
from rules_spy import Added, by_id, spy

HERE = Path(__file__).parent
DATA = HERE / "data" / "journals" / "opencode"
EXPLORE = DATA / "ses_2bef25635ffe8EzID0I1Oeymal.export.json"  # 1.3.7 `@explore` child
DOCS = DATA / "ses_fd4c895f0ffe6gKgxHiEgiQCcd.export.json"  # 1.18.21 `@docs` child
CORPUS = HERE.resolve().parent.parent / "shared" / "corpus" / "opencode"
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


def read(*paths: Path) -> tuple[list[Session], Diagnostics]:
    diagnostics = Diagnostics()
    result = load(list(paths), diagnostics)
    assert result.failures == [], result.failures
    return list(result.sessions), diagnostics


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
    usage = opencode.usage_of(tokens)
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
    usage = opencode.usage_of(edited)
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
    usage = opencode.usage_of(tokens)
    assert (usage.prompt_tokens, usage.output_tokens, usage.reasoning_tokens) == (17802, 124, 18)
    # A total that is less than prompt + output is no sum of them: reasoning is beside.
    usage = opencode.usage_of({**tokens, "total": 17802 + 123})
    assert usage.output_tokens == 124 + 18


def test_without_total_reasoning_is_assumed_beside_output() -> None:
    """Builds before 1.2 write no `total` (the database's v1.16.0 rows all have one; this is
    a real 1.18.21 record with `total` removed)."""
    tokens = {"input": 1800, "output": 229, "reasoning": 45, "cache": {"write": 7, "read": 17792}}
    usage = opencode.usage_of(tokens)
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
    assert opencode.usage_of(None).prompt_tokens == 0
    assert opencode.usage_of([1, 2]).output_tokens == 0
    usage = opencode.usage_of({"input": 5, "output": 3, "cache": [1, 2], "reasoning": "9"})
    assert (usage.prompt_tokens, usage.output_tokens, usage.reasoning_tokens) == (5, 3, 0)
    usage = opencode.usage_of({"input": True, "output": 2, "cache": {"read": 4, "write": None}})
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
        assert response.usage == opencode.usage_of(info["tokens"])
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
