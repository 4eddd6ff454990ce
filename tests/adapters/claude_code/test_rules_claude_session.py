"""What each Claude Code record means for one session (adapters/claude_session.py), pinned on
real records of tests/data/journals/claude-code: tool results (failed, without their call,
made of blocks), user and assistant records the reader cannot use, prompts and their source,
usage that is not a token count, hook context, compaction records written without some of
their fields, and the window a session without one is given. Where the corpus has no
example (an image block, a `<synthetic>` reply, a summary flagged `isSynthetic`), a real record
is edited, and the docstring says so."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters.common import timestamp_ns
from agent_profiler.diagnostics import LATER, Diagnostics, shown_path
from agent_profiler.loader import load
from agent_profiler.model import AnchorKind, Category, Session, SourceKind
from agent_profiler.views import context_size_series
from rules_spy import Added, by_id, record, spy, write
from shared_paths import SHARED, TESTS

DATA = TESTS / "data" / "journals" / "claude-code"
E4B = DATA / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"
SMALL = DATA / "handmade" / "small.jsonl"
STREAM_BG = DATA / "trackgentic-mpa014m2_v2.1.143_bg-tasks-result.jsonl"
SPOTTER_AGENT = (
    DATA
    / "spotter-2.1.39-subagents-compaction"
    / "258c7280-ae70-4798-800f-63464d01a85d"
    / "subagents"
    / "agent-a881341.jsonl"
)
FAILED_CALL = "toolu_01RrDqVo7Sw1HKdxJJzjapqs"  # E4B line 92's Grep, failed on line 93
PLANETFALL = "planetfall-39648afe5b-4_v2.1.179_queued-commands.jsonl"  # (shared corpus)


def load_one(path: Path) -> tuple[Session, Diagnostics]:
    diagnostics = Diagnostics()
    result = load([path], diagnostics)
    assert result.failures == [], result.failures
    (session,) = result.sessions
    return session, diagnostics


def ts(value: dict[str, Any]) -> int:
    found = timestamp_ns(value["timestamp"])
    assert found is not None
    return found


def lines(*numbers: int) -> list[dict[str, Any]]:
    return [record(E4B, n) for n in numbers]


# --------------------------------------------------------------------------- tool results


def test_a_failed_tool_result_marks_its_call_failed(tmp_path: Path) -> None:
    """E4B lines 91–93: a Grep call whose result is `is_error: true` (a spawn error)."""
    values = lines(79, 91, 92, 93)
    session, _ = load_one(write(tmp_path, values))
    (call,) = session.tool_calls
    content = values[3]["message"]["content"][0]["content"]
    assert (call.call_id, call.name, call.is_error) == (FAILED_CALL, "Grep", True)
    assert call.result_chars == len(content) == 97
    assert (call.start_ns, call.end_ns) == (ts(values[2]), ts(values[3]))
    assert call.incomplete is False
    # A text result holds no image.
    assert dict(session.unmeasured).get("image", 0) == 0


def test_a_result_whose_call_is_not_in_the_journal_still_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E4B line 93 without line 92 (a journal that starts mid-turn): no tool call, but the
    result is in the context all the same."""
    added = spy(monkeypatch)
    values = lines(79, 93)
    session, _ = load_one(write(tmp_path, values))
    assert session.tool_calls == ()
    content = values[1]["message"]["content"][0]["content"]
    got = by_id(added)[f"result:{FAILED_CALL}"]
    assert (got.category, got.chars, got.source_id) == (Category.RESULTS, len(content), FAILED_CALL)


def test_a_result_dated_before_its_call_ends_at_the_call(tmp_path: Path) -> None:
    """Line 93 dated 1 s before its call (line 92): the call is not given a negative span."""
    values = lines(79, 91, 92, 93)
    values[3]["timestamp"] = "2026-01-22T02:06:38.578Z"
    session, _ = load_one(write(tmp_path, values))
    (call,) = session.tool_calls
    assert call.end_ns == call.start_ns == ts(values[2])


def test_a_result_made_of_blocks_counts_its_text_and_its_images(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 93's result content as blocks (edited; the corpus has no image result): the text
    blocks joined are the result, an image whose data is no image and a document are counted
    (`unmeasured`, each by its kind), not estimated, and what is not a block is passed over."""
    values = lines(79, 91, 92, 93)
    block = values[3]["message"]["content"][0]
    block["content"] = [
        {"type": "text", "text": "first part, "},
        {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
        "not a block",
        {"type": "text", "text": 42},
        {"type": "text", "text": "second part"},
        {"type": "document", "source": {"type": "base64", "data": "AAAA"}},
    ]
    added = spy(monkeypatch)
    session, _ = load_one(write(tmp_path, values))
    got = by_id(added)[f"result:{FAILED_CALL}"]
    assert got.chars == len("first part, second part")
    assert session.tool_calls[0].result_chars == len("first part, second part")
    assert dict(session.unmeasured) == {"image": 1, "document": 1}


def test_a_result_without_a_call_id_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = lines(79, 91, 92, 93)
    values[3]["message"]["content"][0]["tool_use_id"] = None
    added = spy(monkeypatch)
    session, _ = load_one(write(tmp_path, values))
    assert not [a for a in added if a.id.startswith("result:")]
    assert session.tool_calls[0].incomplete is True


def test_the_agent_a_task_launched_is_named_in_its_result(tmp_path: Path) -> None:
    """A Task result's `toolUseResult.agentId` (stream-json spells it `tool_use_result`)
    links the subagent file to the call: the spotter agent read with an edited E4B turn
    whose Grep result names agent a881341."""
    for spelling in ("toolUseResult", "tool_use_result"):
        values = lines(79, 91, 92, 93)
        for value in values:
            value["sessionId"] = record(SPOTTER_AGENT, 1)["sessionId"]
        values[3].pop("toolUseResult")
        values[3][spelling] = {"agentId": "a881341", "status": "completed"}
        folder = tmp_path / spelling
        sid = values[0]["sessionId"]
        (folder / sid / "subagents").mkdir(parents=True)
        (folder / sid / "subagents" / SPOTTER_AGENT.name).write_bytes(SPOTTER_AGENT.read_bytes())
        write(folder, values, name=f"{sid}.jsonl")
        result = load([folder / f"{sid}.jsonl"], Diagnostics())
        main, child = result.sessions
        assert child.parent_call_id == FAILED_CALL
        assert main.tool_calls[0].child_session == child.session_id


# --------------------------------------------------------------------------- user records


@pytest.mark.parametrize("content", [None, {"text": "a dict"}, 7])
def test_a_user_record_without_readable_content_is_warned_about(
    tmp_path: Path, content: object
) -> None:
    """E4B line 79 (a prompt) with its content replaced: a warning naming the line; the
    record adds nothing, and the response after it is still read."""
    values = lines(4, 79, 80)
    values[1]["message"]["content"] = content
    path = write(tmp_path, values)
    session, diagnostics = load_one(path)
    assert [(w.path, w.line, w.kind, w.message) for w in diagnostics.warnings] == [
        (str(path), 2, "bad-shape", "user record without a readable message content")
    ]
    assert [p.id for p in session.prompts] == [values[0]["uuid"]]
    assert len(session.responses) == 1


def test_a_prompt_of_several_text_blocks_is_one_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 79 as two text blocks (pasted text beside the typed one) and an image: one
    prompt of both texts' length, previewed by the first; the image is counted."""
    values = lines(79, 80)
    first, second = "look at this comment", "and this one too"
    values[0]["message"]["content"] = [
        {"type": "text", "text": first},
        {"type": "text", "text": None},
        {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
        {"type": "text", "text": second},
        {"type": "document", "source": {}},
    ]
    added = spy(monkeypatch)
    session, _ = load_one(write(tmp_path, values))
    (prompt,) = session.prompts
    assert (prompt.id, prompt.chars, prompt.preview) == (
        values[0]["uuid"],
        len(first) + len(second),
        first,
    )
    assert prompt.source == "user"
    uuid = values[0]["uuid"]
    items = [(a.id, a.category, a.chars, a.source_kind) for a in added if a.id.startswith(uuid)]
    assert items == [
        (f"{uuid}:0", Category.PROMPTS, len(first), SourceKind.PROMPT),
        (f"{uuid}:3", Category.PROMPTS, len(second), SourceKind.PROMPT),
    ]
    assert dict(session.unmeasured) == {"image": 1, "document": 1}


def test_a_user_record_without_a_uuid_is_named_by_its_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = lines(79, 80)
    del values[0]["uuid"]
    added = spy(monkeypatch)
    session, _ = load_one(write(tmp_path, values))
    name = f"user@{ts(values[0])}"
    assert [p.id for p in session.prompts] == [name]
    assert f"{name}:0" in by_id(added)
    assert session.responses[0].prompt_id == name


def test_who_wrote_a_prompt(tmp_path: Path) -> None:
    """A main-thread prompt is the user's; the first prompt of a subagent is the agent's
    (spotter agent-a881341 line 1), and so is a sidechain prompt with no parent record
    (line 79 flagged isSidechain, parentUuid null)."""
    session, _ = load_one(write(tmp_path, lines(79, 80), name="main.jsonl"))
    assert [p.source for p in session.prompts] == ["user"]
    values = lines(79, 80)
    values[0].update(isSidechain=True, parentUuid=None)
    session, _ = load_one(write(tmp_path, values, name="side.jsonl"))
    assert [p.source for p in session.prompts] == ["agent"]
    child, _ = load_one(SPOTTER_AGENT)
    assert child.parent_session is not None
    assert [p.source for p in child.prompts] == ["agent"]
    # The agent's first prompt has a parent record in the same file in newer builds:
    # still the agent's, because the file is a subagent's.
    values = [record(SPOTTER_AGENT, n) for n in range(1, 11)]
    values[0]["parentUuid"] = "something-before"
    child, _ = load_one(write(tmp_path, values, name="agent-a881341.jsonl"))
    assert [p.source for p in child.prompts] == ["agent"]


def test_a_synthetic_record_after_a_compaction_is_its_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 72 (the summary after boundary 71) flagged `isSynthetic` instead of
    `isCompactSummary` (edited): still the compaction summary. The same flag on a prompt
    with no compaction pending is an ordinary prompt."""
    values = lines(4, 5, 71, 72, 79, 80)
    del values[3]["isCompactSummary"]
    values[3]["isSynthetic"] = True
    added = spy(monkeypatch)
    session, _ = load_one(write(tmp_path, values))
    uuid = values[3]["uuid"]
    got = by_id(added)[f"summary:{uuid}"]
    assert (got.category, got.label) == (Category.SUMMARIES, "Compaction summary")
    (compaction,) = session.compactions
    (post,) = [s for s in session.snapshots if s.anchor_id == compaction.id]
    assert dict(post.categories)[Category.SUMMARIES] == got.tokens
    values = lines(79, 80)
    values[0]["isSynthetic"] = True
    session, _ = load_one(write(tmp_path, values, name="plain.jsonl"))
    assert [p.id for p in session.prompts] == [values[0]["uuid"]]


def test_a_summary_with_an_image_counts_the_image(tmp_path: Path) -> None:
    values = lines(4, 5, 71, 72, 79, 80)
    text = values[3]["message"]["content"]
    values[3]["message"]["content"] = [
        {"type": "text", "text": text},
        {"type": "image", "source": {}},
    ]
    session, _ = load_one(write(tmp_path, values))
    assert dict(session.unmeasured)["image"] == 1


# --------------------------------------------------------------------------- assistant records


def test_an_assistant_record_without_a_message_is_warned_about(tmp_path: Path) -> None:
    values = lines(4, 5, 22)
    values[1]["message"] = "not an object"
    path = write(tmp_path, values)
    session, diagnostics = load_one(path)
    assert [(w.path, w.line, w.kind, w.message) for w in diagnostics.warnings] == [
        (str(path), 2, "bad-shape", "assistant record without a message")
    ]
    assert [r.id for r in session.responses] == [values[2]["message"]["id"]]


def test_a_response_without_any_id_is_named_by_its_line(tmp_path: Path) -> None:
    """Line 22 without message id, requestId, uuid or model (edited)."""
    values = lines(4, 22)
    del values[1]["message"]["id"]
    values[1].pop("requestId", None)
    del values[1]["uuid"]
    del values[1]["message"]["model"]
    session, _ = load_one(write(tmp_path, values))
    assert [(r.id, r.model) for r in session.responses] == [("response@2", "")]
    # A response without a model names none.
    assert session.models == ()


def test_assistant_content_as_a_string_is_assistant_text_of_its_response(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 22's closing text written as a bare string (older builds; edited)."""
    values = lines(4, 22)
    text = values[1]["message"]["content"][0]["text"]
    values[1]["message"]["content"] = text
    added = spy(monkeypatch)
    load_one(write(tmp_path, values))
    got = by_id(added)[f"{values[1]['uuid']}:0"]
    assert got == Added(
        f"{values[1]['uuid']}:0",
        Category.ASSISTANT,
        len(text),
        -(-len(text) // 4),
        "Assistant text",
        values[1]["message"]["id"],
        SourceKind.RESPONSE,
    )


def test_blocks_the_reader_cannot_use_are_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 5 (thinking) and 6 (a Bash call) with damaged blocks beside the real ones: a
    thinking block without text, a non-object, a call without an id, a call without a
    name (named `tool`), and a server tool call (web search), which is a call too."""
    values = lines(4, 5, 6, 10)
    values[1]["message"]["content"] += [{"type": "thinking", "thinking": None}, "x", 5]
    values[2]["message"]["content"] += [
        {"type": "tool_use", "name": "Read", "input": {}},
        {"type": "tool_use", "id": "toolu_noname", "input": {"q": 1}},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
    ]
    added = spy(monkeypatch)
    session, _ = load_one(write(tmp_path, values))
    names = {t.call_id: t.name for t in session.tool_calls}
    assert names == {
        "toolu_014ETBnJsKeTM1QRvsvVBqDX": "Bash",
        "toolu_noname": "tool",
        "srvtoolu_1": "web_search",
    }
    thinking = [a for a in added if a.label == "Thinking"]
    assert [a.id for a in thinking] == [f"{values[1]['uuid']}:0"]
    assert f"{values[1]['uuid']}:2" in by_id(added)  # the string "x": assistant text
    assert by_id(added)[f"{values[1]['uuid']}:2"].chars == 1


def test_a_synthetic_reply_is_no_model_and_no_request(tmp_path: Path) -> None:
    """Claude Code writes an API error as a reply of model `<synthetic>` with zero usage
    (none in the corpus: line 22 edited). It names no model and is not a response span."""
    values = lines(4, 5, 22)
    values[2]["message"]["model"] = "<synthetic>"
    values[2]["message"]["usage"] = {"input_tokens": 0, "output_tokens": 0}
    values[2]["isApiErrorMessage"] = True
    session, _ = load_one(write(tmp_path, values))
    assert session.models == (values[1]["message"]["model"],)
    assert [r.id for r in session.responses] == [values[1]["message"]["id"]]
    assert session.unmetered_responses == ()


def test_a_zero_usage_reply_of_a_real_model_is_an_unmetered_response(tmp_path: Path) -> None:
    values = lines(4, 5, 22)
    values[2]["message"]["usage"] = {"input_tokens": 0, "output_tokens": 0}
    values[2]["error"] = "overloaded"
    session, _ = load_one(write(tmp_path, values))
    (unmetered,) = session.unmetered_responses
    assert (unmetered.id, unmetered.usage_known, unmetered.is_error) == (
        values[2]["message"]["id"],
        False,
        True,
    )
    assert unmetered.stop_reason == values[2]["message"]["stop_reason"]
    # It starts at the prompt that triggered it, like any response.
    assert (unmetered.start_ns, unmetered.end_ns) == (ts(values[0]), ts(values[2]))


def test_a_response_logged_before_its_trigger_starts_at_itself(tmp_path: Path) -> None:
    """Line 22's response dated before the prompt that precedes it in the file (clock skew):
    it starts at its own time, not at the later prompt's."""
    values = lines(4, 22)
    values[1]["timestamp"] = "2026-01-22T01:41:09.000Z"
    session, _ = load_one(write(tmp_path, values))
    (response,) = session.responses
    assert response.start_ns == response.end_ns == ts(values[1])
    (snapshot,) = [x for x in session.snapshots if x.anchor_id == response.id]
    assert (snapshot.time_ns, snapshot.model) == (response.start_ns, values[1]["message"]["model"])


@pytest.mark.parametrize(
    ("usage", "message"),
    [
        (
            {"input_tokens": "12", "cache_read_input_tokens": 5},
            "usage input_tokens not a token count ('12'); counted as 0",
        ),
        (
            {"input_tokens": 3, "cache_creation_input_tokens": -1, "output_tokens": True},
            "usage cache_creation_input_tokens, output_tokens not a token count (-1); counted as 0",
        ),
    ],
)
def test_usage_that_is_not_a_token_count_is_warned_about_each_time(
    tmp_path: Path, usage: dict[str, Any], message: str
) -> None:
    """Line 5's usage damaged (and line 6's too): a warning each, the first listed with its
    place, the second counted (a count of one per file said one of 91)."""
    values = lines(4, 5, 6)
    values[1]["message"]["usage"] = usage
    values[2]["message"]["usage"] = {"input_tokens": "99"}
    path = write(tmp_path, values)
    session, diagnostics = load_one(path)
    assert [(w.path, w.line, w.kind, w.message) for w in diagnostics.warnings] == [
        (str(path), 2, "bad-usage", f"{message} (the first in this file; {LATER})")
    ]
    assert diagnostics.warning_counts == {"bad-usage": 2}
    (response,) = session.responses
    good = {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}
    assert response.usage.prompt_tokens == sum(v for v in good.values() if v > 0)


# --------------------------------------------------------------------------- hooks


def _attachment(**fields: Any) -> dict[str, Any]:
    """Hand-made `attachment` record (the corpus has none) with E4B line 4's envelope."""
    base = {k: record(E4B, 4)[k] for k in ("sessionId", "cwd", "version", "timestamp")}
    return {**base, "type": "attachment", **fields}


def test_attachments_are_read_by_their_type_and_an_unknown_one_is_not_recognised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records without an `attachment` object (a stream-json hook output pasted in) add
    nothing; an @-mentioned `file` is a result; a type the table does not know is `not
    recognised` with its path:line, never skipped on purpose; a hook's additionalContext
    without a uuid is named by its line."""
    added = spy(monkeypatch)
    records = [
        _attachment(uuid="a1", attachment={"type": "file", "content": "file text"}),
        _attachment(uuid="a2", output='{"additionalContext": broken'),
        _attachment(uuid="a3", output=json.dumps({"additionalContext": "x"})),
        _attachment(uuid="a4", attachment={"type": "hook_context", "content": "c"}),
        _attachment(attachment={"type": "hook_additional_context", "content": "no id"}),
        record(E4B, 4),
        record(E4B, 5),
    ]
    path = write(tmp_path, records)
    _, diagnostics = load_one(path)
    got = [
        (a.id, a.category, a.chars) for a in added if a.id.split(":")[0] in {"hook", "attachment"}
    ]
    assert got == [
        ("attachment:a1", Category.RESULTS, len("file text")),
        ("hook:attachment@5", Category.ENVIRONMENT, len("no id")),
    ]
    assert diagnostics.unrecognised == {
        "claude:attachment/hook_context": 1,
        "claude:attachment/untyped": 2,
    }
    # its place as stderr shows it (the path as given, never absolute: `shown_path`)
    assert (
        diagnostics.unrecognised_at["claude:attachment/hook_context"]
        == f"{shown_path(str(path))}:4"
    )


# Each attachment type read into the context, hand-made in the shape Claude Code writes it
# (claude_records.ATTACHMENT_TYPES; the newest corpus journals hold a few of them, below), and
# the text it puts there: the item's size is that text's.
_ATTACHMENT_TEXTS: list[tuple[dict[str, Any], str, str]] = [
    (
        {
            "type": "deferred_tools_delta",
            "addedNames": ["WebFetch", 7, "Read"],
            "addedLines": ["x"],
        },
        "WebFetch\nRead",
        "Deferred tools listed",
    ),
    (
        {"type": "agent_listing_delta", "addedLines": ["- general: any task", "- plan"]},
        "- general: any task\n- plan",
        "Agent types listed",
    ),
    (
        {"type": "edited_text_file", "filename": "/p/a.py", "snippet": "12  x = 1\n13  y = 2"},
        "12  x = 1\n13  y = 2",
        "File changed outside the agent",
    ),
    (
        {"type": "compact_file_reference", "filename": "/p/src/app.py"},
        "/p/src/app.py",
        "File named after a compaction",
    ),
    ({"type": "date_change", "newDate": "2026-12-04"}, "2026-12-04", "Date change"),
    (
        {
            "type": "hook_blocking_error",
            "blockingError": {"blockingError": "lint failed: 3 errors"},
        },
        "lint failed: 3 errors",
        "Hook blocking error",
    ),
    (
        {"type": "hook_blocking_error", "blockingError": "denied by policy"},
        "denied by policy",
        "Hook blocking error",
    ),
    (
        {
            "type": "invoked_skills",
            "skills": [{"name": "pdf", "content": "Use pdftotext."}, "x", {"content": "Be brief."}],
        },
        "Use pdftotext.\nBe brief.",
        "Skills invoked before a compaction",
    ),
    (
        {"type": "file", "content": {"type": "text", "file": {"content": "line one\nline two"}}},
        "line one\nline two",
        "Attached file",
    ),
    (
        {"type": "file", "content": {"type": "text", "content": "older shape"}},
        "older shape",
        "Attached file",
    ),
    (
        {"type": "task_reminder", "content": [{"id": "1", "content": "Fix it", "status": "open"}]},
        '[{"id":"1","content":"Fix it","status":"open"}]',
        "Task reminder",
    ),
]


@pytest.mark.parametrize(("attachment", "text", "label"), _ATTACHMENT_TEXTS)
def test_each_attachment_type_puts_its_own_text_in_the_context(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    attachment: dict[str, Any],
    text: str,
    label: str,
) -> None:
    added = spy(monkeypatch)
    records = [_attachment(uuid="a1", attachment=attachment), record(E4B, 4), record(E4B, 5)]
    load_one(write(tmp_path, records))
    (got,) = [a for a in added if a.id == "attachment:a1" or a.id == "hook:a1"]
    assert (got.label, got.chars) == (label, len(text))


def test_a_queued_message_is_a_prompt_by_its_mode_or_its_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message typed while the agent was busy (`queued_command`): `commandMode: prompt` is
    the user's prompt; another mode is classified as typed text is (plain words: a prompt
    of the user's, not a command's body; a task notification: harness overhead)."""
    added = spy(monkeypatch)
    queued = [
        {"type": "queued_command", "commandMode": "prompt", "prompt": "and the tests too"},
        {"type": "queued_command", "commandMode": "bash", "prompt": "plain words"},
        {
            "type": "queued_command",
            "commandMode": "task-notification",
            "prompt": "<system-reminder>task 3 finished</system-reminder>",
        },
    ]
    records = [_attachment(uuid=f"q{n}", attachment=a) for n, a in enumerate(queued)]
    session, _ = load_one(write(tmp_path, [*records, record(E4B, 4), record(E4B, 5)]))
    got = [(a.id, a.category, a.label) for a in added if a.id.startswith("queued:")]
    assert got == [
        ("queued:q0", Category.PROMPTS, "User prompt (queued)"),
        ("queued:q1", Category.PROMPTS, "User prompt"),
        ("queued:q2", Category.OVERHEAD, "Harness wrapper"),
    ]
    # a main session's queued prompts are the user's (a subagent's first one is its task)
    assert [(p.id, p.source) for p in session.prompts][:2] == [("q0", "user"), ("q1", "user")]


def test_the_request_a_queued_prompt_is_delivered_with_starts_at_it(tmp_path: Path) -> None:
    """E4B lines 4–13 with a prompt queued while the calls ran, delivered 8 ms after the
    last result (as planetfall's 2.1.179 transcript writes one, right before the request is
    sent): the second request is that prompt's and starts at it, not at the result before
    it (8 ms before its own prompt, and no flow from the prompt's input)."""
    values = lines(4, 5, 6, 7, 8, 9, 10, 11, 12, 13)
    queued = _attachment(
        uuid="q0",
        attachment={"type": "queued_command", "commandMode": "prompt", "prompt": "tests too"},
    )
    queued["timestamp"] = "2026-01-22T01:41:15.217Z"  # (line 11's result: 15.209)
    values.insert(8, queued)
    session, _ = load_one(write(tmp_path, values))
    second = session.responses[1]
    assert second.prompt_id == "q0"
    assert second.start_ns == ts(queued)
    # A queued prompt stamped before that result leaves the request at the result.
    queued["timestamp"] = "2026-01-22T01:41:15.100Z"
    (tmp_path / "before").mkdir()
    session, _ = load_one(write(tmp_path / "before", values))
    assert session.responses[1].start_ns == ts(values[7])  # (line 11's result)
    planetfall = SHARED / "corpus" / "claude-code" / "transcripts" / PLANETFALL
    if planetfall.is_file():  # (its two queued prompts' requests started 8 and 117 ms early)
        session, _ = load_one(planetfall)
        prompts = {p.id: p.start_ns for p in session.prompts}
        late = [r.id for r in session.responses if r.start_ns < prompts.get(r.prompt_id, 0)]
        assert late == []
        starts = {r.id: r.start_ns - prompts[r.prompt_id] for r in session.responses if r.prompt_id}
        assert starts["msg_01JCeWhHN7yjxhjguEd3FZjX"] == starts["msg_01T1WLvhfumNDLRg1qHCNKxX"] == 0


def test_an_attachment_of_another_type_or_shape_puts_nothing_in_the_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fields of a known type in shapes Claude Code does not write: skills that are not a
    list and a file of no text add nothing; a task reminder whose content is text (not its
    list of tasks) is that text."""
    added = spy(monkeypatch)
    odd = [
        {"type": "invoked_skills", "skills": "pdf"},
        {"type": "task_reminder", "content": "not a list"},
        {"type": "file", "content": {"type": "image"}},
    ]
    records = [_attachment(uuid=f"a{n}", attachment=a) for n, a in enumerate(odd)]
    load_one(write(tmp_path, [*records, record(E4B, 4), record(E4B, 5)]))
    got = [(a.id, a.chars) for a in added if a.id.startswith("attachment:")]
    assert got == [("attachment:a1", len("not a list"))]


# --------------------------------------------------------------------------- compactions


def test_a_boundary_without_metadata_or_uuid(tmp_path: Path) -> None:
    """Line 71 with its compactMetadata not an object and no uuid: a zero-length compaction
    named by its time, with no trigger or sizes."""
    values = lines(4, 5, 71, 72, 79, 80)
    values[2]["compactMetadata"] = ["manual"]
    del values[2]["uuid"]
    session, _ = load_one(write(tmp_path, values))
    (compaction,) = session.compactions
    assert compaction.id == f"compaction@{ts(values[2])}"
    assert (compaction.trigger, compaction.pre_tokens, compaction.post_tokens) == (None, None, None)
    assert compaction.start_ns == compaction.end_ns


def test_a_boundary_with_zero_or_odd_sizes(tmp_path: Path) -> None:
    values = lines(4, 5, 71, 72, 79, 80)
    values[2]["compactMetadata"] = {"trigger": 3, "preTokens": 0, "postTokens": 0}
    session, _ = load_one(write(tmp_path, values))
    (compaction,) = session.compactions
    assert (compaction.trigger, compaction.pre_tokens, compaction.post_tokens) == (None, None, None)
    (post,) = [s for s in session.snapshots if s.anchor_id == compaction.id]
    assert post.reported_tokens is None


def _micro(tmp_path: Path, meta: Any, **edits: Any) -> Session:
    """small.jsonl (hand-made) with line 18's microcompactMetadata replaced."""
    count = len(SMALL.read_text().splitlines())
    values = [record(SMALL, n) for n in range(1, count + 1)]
    boundary = next(v for v in values if v.get("subtype") == "microcompact_boundary")
    boundary["microcompactMetadata"] = meta
    boundary.update(edits)
    session, _ = load_one(write(tmp_path, values))
    return session


def test_a_microcompaction_without_sizes_reports_none(tmp_path: Path) -> None:
    session = _micro(tmp_path, {"trigger": 1, "compactedToolIds": ["toolu_bash", 5]})
    (micro,) = [c for c in session.compactions if c.kind == "microcompaction"]
    assert (micro.trigger, micro.pre_tokens, micro.post_tokens, micro.removed_items) == (
        None,
        None,
        None,
        1,
    )


def test_a_microcompaction_saving_more_than_it_had_reports_no_size(tmp_path: Path) -> None:
    meta = {"preTokens": 100, "tokensSaved": 101, "compactedToolIds": "toolu_bash"}
    session = _micro(tmp_path, meta)
    (micro,) = [c for c in session.compactions if c.kind == "microcompaction"]
    assert (micro.pre_tokens, micro.post_tokens, micro.removed_items) == (100, None, 0)
    (tmp_path / "exact").mkdir()
    exact = _micro(tmp_path / "exact", {"preTokens": 100, "tokensSaved": 100})
    (micro,) = [c for c in exact.compactions if c.kind == "microcompaction"]
    assert (micro.post_tokens, micro.removed_items) == (0, 0)


def test_the_request_after_a_microcompaction_starts_at_its_boundary(tmp_path: Path) -> None:
    """Claude Code microcompacts right before it sends a request, so its boundary comes
    after the result that triggered that request (small.jsonl's boundary moved between
    the Bash result, 10:01:20, and msg_E, 10:01:22, stamped 10:01:21): msg_E starts at the
    boundary, as a request after a compaction does. It started at the result, a second
    before the boundary its snapshot comes after, and the context counters went back to
    the boundary's values during it."""
    count = len(SMALL.read_text().splitlines())
    values = [record(SMALL, n) for n in range(1, count + 1)]
    at = next(i for i, v in enumerate(values) if v.get("subtype") == "microcompact_boundary")
    boundary = values.pop(at)
    boundary["timestamp"] = "2026-01-01T10:01:21.000Z"
    result = next(i for i, v in enumerate(values) if v.get("uuid") == "u7")
    values.insert(result + 1, boundary)
    session, _ = load_one(write(tmp_path, values))
    (micro,) = [c for c in session.compactions if c.kind == "microcompaction"]
    (response,) = [r for r in session.responses if r.id == "msg_E"]
    assert response.start_ns == micro.end_ns == ts(boundary)
    times = [(s.anchor_id, s.time_ns) for s in session.snapshots]
    assert times == sorted(times, key=lambda x: x[1])  # (the log's order is time's)
    assert times.index((micro.id, micro.end_ns)) + 1 == times.index(("msg_E", ts(boundary)))
    # The Context size there is the request's own reported size (12,111), not the
    # boundary's preTokens − tokensSaved (11,906), which shares its time.
    at_boundary = [size for t, size in context_size_series(session) if t == ts(boundary)]
    assert at_boundary == [response.usage.prompt_tokens] != [micro.post_tokens]
    # A boundary stamped before that result does not move the request before it.
    boundary["timestamp"] = "2026-01-01T10:01:19.000Z"
    (tmp_path / "before").mkdir()
    session, _ = load_one(write(tmp_path / "before", values))
    (response,) = [r for r in session.responses if r.id == "msg_E"]
    assert response.start_ns == ts(values[result])


def test_a_microcompaction_without_a_uuid_is_named_by_its_time(tmp_path: Path) -> None:
    session = _micro(tmp_path, {"preTokens": 10}, uuid=None)
    (micro,) = [c for c in session.compactions if c.kind == "microcompaction"]
    assert micro.id.startswith("microcompaction@")
    assert micro.id == f"microcompaction@{micro.end_ns}"


# --------------------------------------------------------------------------- the session


def test_the_version_of_a_stream_session_comes_from_its_init() -> None:
    """bg-tasks: stream-json frames say `claude_code_version` (2.1.143), not `version`."""
    sessions = load([STREAM_BG], Diagnostics()).sessions
    assert [s.harness_version for s in sessions] == ["2.1.143"]
    assert sessions[0].project == "trackgentic"


def test_the_first_version_and_directory_are_kept(tmp_path: Path) -> None:
    values = lines(4, 5, 22)
    values[1]["version"], values[1]["cwd"] = "9.9.9", "/elsewhere/other"
    session, _ = load_one(write(tmp_path, values))
    assert (session.harness_version, session.project) == ("2.1.14", "cli")


def test_no_window_is_assumed_for_a_model_that_is_not_claude(tmp_path: Path) -> None:
    """E4B's turn with its model renamed `glm-5.1` (a proxy backend): the Claude default
    window is not assumed for it."""
    values = copy.deepcopy(lines(4, 5, 22))
    for value in values[1:]:
        value["message"]["model"] = "glm-5.1"
    session, _ = load_one(write(tmp_path, values))
    assert (session.window_tokens, session.window_source) == (None, None)
    assert {s.window_tokens for s in session.snapshots} == {None}


def test_a_session_without_requests_ends_with_a_snapshot_of_what_it_holds(tmp_path: Path) -> None:
    """E4B line 4 and line 5 with zero usage: no request to anchor a snapshot on; one
    end-of-session snapshot with the model and the assumed window."""
    values = lines(4, 5)
    values[1]["message"]["usage"] = {"input_tokens": 0}
    session, _ = load_one(write(tmp_path, values))
    (snapshot,) = session.snapshots
    assert snapshot.anchor is AnchorKind.SESSION
    assert (snapshot.time_ns, snapshot.window_tokens) == (ts(values[1]), 200_000)
    assert snapshot.model == values[1]["message"]["model"]


# --------------------------------------------------------------------------- /context runs

CONTEXT = DATA / "context-command"


def _native_rules(path: Path) -> tuple[Session, list[list[tuple[str, int, str]]]]:
    session, _ = load_one(path)
    runs = [
        [(c.id, c.tokens, c.label) for c in s.changes if c.category is Category.RULES]
        for s in session.snapshots
        if s.anchor is AnchorKind.NATIVE
    ]
    return session, runs


def test_memory_files_of_a_context_run_are_named_without_the_home_folder() -> None:
    """obra (v1.0.120): `/context` lists `/Users/testuser/.claude/CLAUDE.md` (2.6k of the 6k
    rules): the item is `~/.claude/CLAUDE.md`, in its id and its label; the rest of the rules
    row is one `native:rules` item. The session has no assistant record: its model and window
    are the screen's."""
    text = (CONTEXT / "obra-episodic-memory_v1.0.120_0fae0449.jsonl").read_text()
    assert "/Users/testuser/.claude/CLAUDE.md" in text
    session, runs = _native_rules(CONTEXT / "obra-episodic-memory_v1.0.120_0fae0449.jsonl")
    assert runs == [
        [
            ("native:rules", 3_400, "Rules and memory (from /context)"),
            ("rule:~/.claude/CLAUDE.md", 2_600, "~/.claude/CLAUDE.md (User)"),
        ]
    ]
    assert session.models == ("claude-sonnet-4-20250514",)
    assert (session.window_tokens, session.window_source) == (1_000_000, "journal (/context)")


def test_every_run_of_context_is_a_native_snapshot_with_private_names() -> None:
    """hannibal (v2.1.222): two `/context` runs (lines 2 and 5); the memory files under
    `/home/moxa/.claude/` keep only `~/…`, and the project folder in the auto-memory path is
    `…`; what the rules row holds beyond its files (31 tokens) is `native:rules`."""
    path = CONTEXT / "hannibal8856-claude_backup_v2.1.222_5a198443_incl-queued.jsonl"
    session, runs = _native_rules(path)
    expected = [
        ("rule:~/.claude/CLAUDE.md", 2_400, "~/.claude/CLAUDE.md (User)"),
        (
            "rule:~/.claude/projects/…/memory/MEMORY.md",
            1_100,
            "~/.claude/projects/…/memory/MEMORY.md (AutoMem)",
        ),
        ("rule:~/.claude/RTK.md", 369, "~/.claude/RTK.md (User)"),
        ("native:rules", 31, "Rules and memory (from /context)"),
    ]
    assert runs == [expected, expected]
    assert [s.anchor_id for s in session.snapshots if s.anchor is AnchorKind.NATIVE] == [
        "context-command@2",
        "context-command@5",
    ]
    shown = " ".join(f"{c.id} {c.label}" for s in session.snapshots for c in s.changes)
    assert "/home/moxa" not in shown


@pytest.mark.parametrize("given", ["", 7, None])
def test_a_message_id_that_is_empty_or_no_string_is_read_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: object
) -> None:
    """Line 22's message id made empty, a number or null (edited): an empty or null id is
    no id, and its record's requestId names the response; a number is its text. Its text
    is linked to the response so named (a non-empty string id is taken at once)."""
    values = lines(4, 22)
    values[1]["message"]["id"] = given
    added = spy(monkeypatch)
    session, _ = load_one(write(tmp_path, values))
    expected = "7" if given == 7 else values[1]["requestId"]
    assert [r.id for r in session.responses] == [expected]
    assert by_id(added)[f"{values[1]['uuid']}:0"].source_id == expected


def test_an_assistant_record_of_empty_text_adds_no_item(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 22's content an empty string (edited): no block, no item (a bare string is a
    text block only when there is text); its response is still read."""
    values = lines(4, 22)
    values[1]["message"]["content"] = ""
    added = spy(monkeypatch)
    session, _ = load_one(write(tmp_path, values))
    assert [a.id for a in added if a.id.startswith(values[1]["uuid"])] == []
    assert [r.id for r in session.responses] == [values[1]["message"]["id"]]


@pytest.mark.parametrize("blocks", [False, True])
def test_records_without_a_uuid_name_their_items_by_time_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blocks: bool
) -> None:
    """Lines 4 and 22 without their uuid (edited; the prompt a string, or a text block):
    the prompt's item and the prompt are named by its time (`user@<ts>`), the answer's
    item by its response and its line (`<message id>@2`), as when every record made its
    uuid up front."""
    values = lines(4, 22)
    for value in values:
        del value["uuid"]
    if blocks:
        text = values[0]["message"]["content"]
        values[0]["message"]["content"] = [{"type": "text", "text": text}]
    added = spy(monkeypatch)
    session, _ = load_one(write(tmp_path, values))
    prompt = f"user@{ts(values[0])}"
    answer = f"{values[1]['message']['id']}@2"
    assert [a.id for a in added if a.id.startswith((prompt, answer))] == [
        f"{prompt}:0",
        f"{answer}:0",
    ]
    assert [p.id for p in session.prompts] == [prompt]
