"""Every category rule of the Pi adapter, pinned on real v1 session records (copies in
tests/data/journals/pi). A Pi item enters the context when a request is sent on its branch, so
each excerpt ends with a request. Rules with no example in the corpus (extension messages,
`!!` commands) swap a real record's role."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.model import Category, SourceKind
from rules_spy import by_id, excerpt, raw_lines, record, sessions, spy, write
from samples import pi_fork_source
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "pi"
LARGE = DATA / "pi-mono_large-session_v1.jsonl"
# The corpus fork's source, as the fork holds it (samples.pi_fork_source): the fork made no
# request of its own.
COMPACTING = pi_fork_source()

PR, AS, RE, EN, SU = (
    Category.PROMPTS,
    Category.ASSISTANT,
    Category.RESULTS,
    Category.ENVIRONMENT,
    Category.SUMMARIES,
)
# Pi wraps a compaction summary in a fixed preamble and closing tag (core/messages.ts).
COMPACTION_WRAPPING = len(
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n"
) + len("\n</summary>")


def _message(path: Path, line: int) -> dict[str, Any]:
    message = record(path, line)["message"]
    assert isinstance(message, dict)
    return message


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def test_prompt_answer_call_and_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines 1–7 of the large session, then the request of line 17 that carries them."""
    added = spy(monkeypatch)
    (session,) = sessions(excerpt(tmp_path, LARGE, [1, 2, 3, 4, 5, 6, 7, 17]))
    items = by_id(added)
    prompt = _message(LARGE, 2)["content"][0]["text"]
    got = items["line-2:0"]
    assert (got.category, got.label, got.chars, got.tokens) == (
        PR,
        "User prompt",
        len(prompt),
        -(-len(prompt) // 4),
    )
    assert got.source_kind is SourceKind.PROMPT
    answer = _message(LARGE, 6)["content"]
    text_index = next(i for i, b in enumerate(answer) if b["type"] == "text")
    got = items[f"line-6:{text_index}"]
    assert (got.category, got.label, got.chars) == (
        AS,
        "Assistant text",
        len(answer[text_index]["text"]),
    )
    assert (got.source_id, got.source_kind) == ("line-6", SourceKind.RESPONSE)
    call_index = next(i for i, b in enumerate(answer) if b["type"] == "toolCall")
    call = answer[call_index]
    got = items[f"line-6:{call_index}"]
    assert (got.category, got.label, got.source_id, got.source_kind) == (
        AS,
        "Tool arguments",
        call["id"],
        SourceKind.TOOL,
    )
    assert got.chars == len(call["name"]) + len(_compact(call["arguments"]))
    result = _message(LARGE, 7)
    got = items["line-7:result"]
    assert (got.category, got.label, got.source_id) == (RE, "Tool result", result["toolCallId"])
    assert got.chars == sum(len(b["text"]) for b in result["content"] if b["type"] == "text")
    # The aborted line 3 has no usage worth a request: it is a failed request, not a size 0.
    assert [r.id for r in session.failed_requests] == ["line-3"]
    tools = {t.call_id: t for t in session.tool_calls}
    calls = [b["id"] for b in answer if b["type"] == "toolCall"]
    assert list(tools) == calls
    done = tools[result["toolCallId"]]
    assert (done.incomplete, done.result_chars, done.timing) == (False, got.chars, "")
    # The other two got no result before the conversation moved on (line 17).
    assert [t.incomplete for t in tools.values()] == [c != result["toolCallId"] for c in calls]


def test_prompt_size_is_input_plus_cache_read_plus_cache_write(tmp_path: Path) -> None:
    (session,) = sessions(excerpt(tmp_path, LARGE, [1, 2, 5, 6]))
    usage = _message(LARGE, 6)["usage"]
    (response,) = session.responses
    assert response.usage.prompt_tokens == usage["input"] + usage["cacheRead"] + usage["cacheWrite"]
    assert (response.usage.input_tokens, response.usage.output_tokens) == (
        usage["input"],
        usage["output"],
    )
    assert (response.usage.cache_read_tokens, response.usage.cache_write_tokens) == (
        usage["cacheRead"],
        usage["cacheWrite"],
    )


def test_thinking_stays_in_assistant_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 14 of the compacting session: visible thinking and text, replayed at line 16."""
    added = spy(monkeypatch)
    sessions(excerpt(tmp_path, COMPACTING, list(range(1, 17))))
    content = _message(COMPACTING, 14)["content"]
    index = next(i for i, b in enumerate(content) if b["type"] == "thinking")
    got = by_id(added)[f"line-14:{index}"]
    thinking = content[index]["thinking"]
    assert (got.category, got.label, got.chars) == (AS, "Thinking", len(thinking))
    assert got.tokens == -(-len(thinking) // 4) > 0


def test_a_failed_message_is_not_replayed_and_its_calls_never_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 33 of the large session ends in error with text and a tool call."""
    assert _message(LARGE, 33)["stopReason"] == "error"
    added = spy(monkeypatch)
    lines = list(range(1, 40))
    (session,) = sessions(excerpt(tmp_path, LARGE, lines))
    assert not [a for a in added if a.id.startswith("line-33:")]
    calls = {b["id"] for b in _message(LARGE, 33)["content"] if b["type"] == "toolCall"}
    assert calls and not calls & {t.call_id for t in session.tool_calls}
    assert dict(session.facts)["tool_calls_not_run"] == len(calls)


def test_a_call_without_a_result(tmp_path: Path) -> None:
    """Line 6's calls with line 7's result dropped: the next entry ends them, incomplete."""
    (session,) = sessions(excerpt(tmp_path, LARGE, [1, 2, 5, 6, 17]))
    assert len(session.tool_calls) == 3
    for tool in session.tool_calls:
        assert tool.incomplete is True
        assert tool.timing == "journal: call → next entry (no result)"
    assert session.incomplete is False
    (at_end,) = sessions(excerpt(tmp_path, LARGE, [1, 2, 5, 6], name="end.jsonl"))
    for tool in at_end.tool_calls:
        assert (tool.incomplete, tool.end_ns) == (True, at_end.end_ns)
        assert tool.timing == "journal: call → end of journal (no result)"
    assert at_end.incomplete is True


def _bash_line() -> int:
    return next(
        n for n, text in enumerate(raw_lines(COMPACTING), 1) if '"role":"bashExecution"' in text
    )


def test_a_user_shell_command_is_a_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    line = _bash_line()
    message = _message(COMPACTING, line)
    text = f"Ran `{message['command']}`\n" + (
        f"```\n{message['output']}\n```" if message.get("output") else "(no output)"
    )
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif message.get("exitCode") not in (None, 0):
        text += f"\n\nCommand exited with code {message['exitCode']}"
    request = next(
        n
        for n in range(line + 1, line + 40)
        if _message(COMPACTING, n).get("role") == "assistant"
        and _message(COMPACTING, n).get("usage", {}).get("input")
    )
    added = spy(monkeypatch)
    sessions(excerpt(tmp_path, COMPACTING, [1, line, request]))
    got = by_id(added)["line-2:bash"]  # v1 ids are line numbers, here of the excerpt
    assert (got.category, got.label, got.chars) == (RE, "User shell command (!)", len(text))
    hidden = record(COMPACTING, line)
    hidden["message"]["excludeFromContext"] = True
    added.clear()
    sessions(write(tmp_path, [record(COMPACTING, 1), hidden, record(COMPACTING, request)]))
    assert not [a for a in added if a.id.endswith(":bash")]


@pytest.mark.parametrize("role", ["custom", "hookMessage"])
def test_an_extension_message_is_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, role: str
) -> None:
    value = record(LARGE, 2)
    value["message"]["role"] = role
    value["message"]["customType"] = "git-status"
    text = value["message"]["content"][0]["text"]
    added = spy(monkeypatch)
    (session,) = sessions(write(tmp_path, [record(LARGE, 1), value, record(LARGE, 6)]))
    got = by_id(added)["line-2:0"]
    assert (got.category, got.label, got.chars) == (EN, "Extension message (git-status)", len(text))
    assert session.prompts == ()  # not the user's prompt


def test_an_extension_entry_is_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    value = {
        "type": "custom_message",
        "timestamp": record(LARGE, 2)["timestamp"],
        "customType": "memory",
        "content": "remember the style guide",
    }
    added = spy(monkeypatch)
    sessions(write(tmp_path, [record(LARGE, 1), value, record(LARGE, 6)]))
    got = by_id(added)["line-2:0"]
    assert (got.category, got.label, got.chars) == (EN, "Extension message (memory)", 24)


def test_compaction_summary_and_what_it_keeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 360: the summary (with Pi's wrapping) replaces what came before the first kept
    entry; the rest stays."""
    value = record(COMPACTING, 360)
    added = spy(monkeypatch)
    (session,) = sessions(COMPACTING)
    got = by_id(added)["line-360:summary"]
    assert COMPACTION_WRAPPING == 107
    assert (got.category, got.label, got.chars) == (
        SU,
        "Compaction summary",
        len(value["summary"]) + COMPACTION_WRAPPING,
    )
    (compaction,) = [c for c in session.compactions if c.id == "line-360"]
    assert compaction.pre_tokens == value["tokensBefore"]
    kept_line = value["firstKeptEntryIndex"] + 1  # the header is index 0, on line 1
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == "line-360"]
    removed = [c for c in snapshot.changes if c.change.value == "removed"]
    assert removed and all(int(c.id.split(":")[0].split("-")[1]) < kept_line for c in removed)
    assert compaction.removed_items >= len(removed)
    assert dict(snapshot.categories)[SU] == got.tokens


def test_a_branch_summary_is_a_summary_in_pi_wrapping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hand-made (the corpus has no `branch_summary`): lines 1, 5, 6 of the large session, then
    a summary of the branch the user came back from, then the request of line 17. An empty
    summary sends nothing."""
    header, prompt, answer, final = (record(LARGE, n) for n in (1, 5, 6, 17))
    summary = {
        "type": "branch_summary",
        "timestamp": answer["timestamp"],
        "fromId": "gone",
        "summary": "Tried theme.ts; reverted.",
    }
    added = spy(monkeypatch)
    sessions(write(tmp_path, [header, prompt, answer, summary, final]))
    got = by_id(added)["line-4:summary"]
    wrapping = len(
        "The following is a summary of a branch that this conversation came back from:"
        "\n\n<summary>\n"
    ) + len("</summary>")
    assert (got.category, got.label, got.chars) == (SU, "Branch summary", wrapping + 25)
    assert (got.source_id, got.source_kind) == ("", SourceKind.NONE)
    summary["summary"] = ""
    added.clear()
    sessions(write(tmp_path, [header, prompt, answer, summary, final]))
    assert not [a for a in added if a.id.startswith("line-4:")]
