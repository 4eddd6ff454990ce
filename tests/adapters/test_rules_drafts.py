"""The rules of the drafts every adapter fills (adapters/drafts.py), pinned on real records: the
messages-own-their-items session of Gemini CLI and OpenCode (`MessagesDraft`: what leaves the
context with a message, what a compaction observes, the failed-request fact), how a tool call's
arguments are measured (`ToolArguments`) and how drafts become model data (`ToolDraft`,
`RequestDraft`, `CompactionDraft`, `finish_prompts`).

Records come from tests/data/journals and the shared corpus; where a case has no real example
(a Gemini `$rewindTo`, an API error notice) the test says so and edits a real record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters.common import args_digest
from agent_profiler.attribution import ContextLog, Observation
from agent_profiler.model import AnchorKind, Category, Stage
from rules_spy import excerpt, raw_lines, record, sessions
from samples import DATA, GEMINI_JSONL, MUSE_SINGLE_TURN, OPENCODE_EXPLORE
from shared_paths import CORPUS, SHARED_REASON

TP_TUTOR = GEMINI_JSONL
WARNING_ONLY = DATA / "gemini-cli" / "entire-ec-38b74f08e3-2_session-warning-only.json"
OC_COMPACTION = (
    CORPUS
    / "opencode"
    / "session-bridge-1.4.3-compaction"
    / "ses_277daa810ffePOBsdfS6gm8uA2.export.json"
)
CODEX_CODEMIE = (
    DATA / "codex" / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz"
)
PI_LARGE = DATA / "pi" / "pi-mono_large-session_v1.jsonl"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=SHARED_REASON)


def _log_events(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """Every add, remove and observation of a ContextLog from now on, in order:
    ("add", item id), ("remove", item id), ("observe", Observation)."""
    events: list[tuple[str, Any]] = []
    add, remove, observe = ContextLog.add, ContextLog.remove, ContextLog.observe

    def spy_add(self: ContextLog, item_id: str, *args: Any, **kw: Any) -> None:
        events.append(("add", item_id))
        add(self, item_id, *args, **kw)

    def spy_remove(self: ContextLog, item_id: str) -> int:
        events.append(("remove", item_id))
        return remove(self, item_id)

    def spy_observe(self: ContextLog, observation: Observation) -> None:
        events.append(("observe", observation))
        observe(self, observation)

    monkeypatch.setattr(ContextLog, "add", spy_add)
    monkeypatch.setattr(ContextLog, "remove", spy_remove)
    monkeypatch.setattr(ContextLog, "observe", spy_observe)
    return events


def _present(events: list[tuple[str, Any]]) -> set[str]:
    items: set[str] = set()
    for kind, value in events:
        if kind == "add":
            items.add(value)
        elif kind == "remove":
            items.discard(value)
    return items


def _lines(tmp_path: Path, path: Path, lines: list[int | dict[str, Any]]) -> Path:
    """A JSONL journal of real lines of `path` (by number) and hand-made records (dicts)."""
    raw = raw_lines(path)
    out = tmp_path / path.name.removesuffix(".gz")
    texts = [raw[n - 1] if isinstance(n, int) else json.dumps(n) for n in lines]
    out.write_text("\n".join(texts) + "\n", encoding="utf-8")
    return out


# --------------------------------------------------------------------------- MessagesDraft


@needs_corpus
def test_a_compaction_takes_every_earlier_message_with_its_tool_calls_and_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OpenCode 1.4.3 (corpus): messages 0–43 precede the compaction request (message 44);
    the summary (message 45) is all that stays. Every item of the earlier messages leaves,
    their tool calls and results included, and `removed_items` counts each one."""
    events = _log_events(monkeypatch)
    (session,) = sessions(OC_COMPACTION)
    (compaction,) = session.compactions
    messages = json.loads(OC_COMPACTION.read_text(encoding="utf-8"))["messages"]
    assert messages[44]["info"]["id"] == compaction.id
    summary_id = messages[45]["info"]["id"]
    at = next(
        i
        for i, (kind, value) in enumerate(events)
        if kind == "observe" and value.anchor is AnchorKind.COMPACTION
    )
    observed = events[at][1]
    assert (observed.anchor_id, observed.stage, observed.time_ns) == (
        compaction.id,
        Stage.POST_COMPACTION,
        compaction.end_ns,
    )
    before = events[:at]
    added = [i for kind, i in before if kind == "add" and not i.startswith(f"{summary_id}:")]
    removed = [i for kind, i in before if kind == "remove"]
    assert sorted(removed) == sorted(added)
    assert compaction.removed_items == len(added) == 133
    assert _present(before) == {i for kind, i in before if kind == "add"} - set(added)
    assert all(i.startswith(f"{summary_id}:") for i in _present(before))
    tools = [p for m in messages[:44] for p in m["parts"] if p["type"] == "tool"]
    calls = {f"call:{p['callID']}" for p in tools}
    results = {
        f"result:{p['callID']}" for p in tools if p["state"]["status"] in {"completed", "error"}
    }
    assert len(calls) == len(results) == 47
    assert calls | results <= set(removed)
    # The context the compaction left: the summary, the summariser's reasoning, the head.
    (after,) = [s for s in session.snapshots if s.stage is Stage.POST_COMPACTION]
    assert (after.anchor, after.anchor_id) == (AnchorKind.COMPACTION, compaction.id)
    assert [c for c, _ in after.categories] == [
        Category.ASSISTANT,
        Category.SUMMARIES,
        Category.UNATTRIBUTED,
    ]


def test_a_rewind_takes_the_rewound_messages_items_out_a_notice_among_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gemini CLI 0.39.1 (tp-tutor): lines 1–19, then `/rewind` to the prompt of line 13, then
    the prompt and answer of lines 20 and 22. The `$rewindTo` record is hand-made (no real file
    has one, FORMATS-gemini-opencode.md). Lines 13–19 leave the context: the prompt, the answer
    text of line 15, the "Request cancelled." notice of line 17 (it owns no item) and the
    cancelled call of line 19 with its result."""
    events = _log_events(monkeypatch)
    prompt, answer, notice, cancelled = (record(TP_TUTOR, n) for n in (13, 15, 17, 19))
    path = _lines(tmp_path, TP_TUTOR, [*range(1, 20), {"$rewindTo": prompt["id"]}, 20, 22])
    (session,) = sessions(path)
    (call,) = cancelled["toolCalls"]
    assert (notice["type"], cancelled["content"]) == ("info", "")
    removed = [i for kind, i in events if kind == "remove"]
    assert removed == [
        f"{prompt['id']}:0",
        f"{answer['id']}:text",
        f"call:{call['id']}",
        f"result:{call['id']}",
    ]
    # Nothing of them is sent with the next request (line 22), which sees the new prompt.
    last = next(i for i, (kind, _) in enumerate(events) if kind == "remove")
    (kind, observed) = events[-2]
    assert (kind, observed.anchor_id) == ("observe", record(TP_TUTOR, 22)["id"])
    assert _present(events[:-1]) == (
        {i for kind, i in events[:last] if kind == "add"} - set(removed)
    ) | {f"{record(TP_TUTOR, 20)['id']}:0"}
    assert [(m.kind, m.value) for m in session.markers] == [
        ("info", "Request cancelled."),
        ("rewind", prompt["id"]),
    ]


def test_a_session_without_any_request_is_observed_once_at_its_end(tmp_path: Path) -> None:
    """Gemini CLI 0.39.1 (tp-tutor) lines 1–3: the header and the user's "exit", answered by no
    request. Its context is still shown: one snapshot at the session's end holding the prompt."""
    (session,) = sessions(_lines(tmp_path, TP_TUTOR, [1, 2, 3]))
    assert (session.responses, session.compactions) == ((), ())
    (snapshot,) = session.snapshots
    assert (snapshot.time_ns, snapshot.anchor, snapshot.anchor_id, snapshot.stage) == (
        session.end_ns,
        AnchorKind.SESSION,
        "",
        Stage.TRANSCRIPT_OBSERVED,
    )
    assert snapshot.categories == ((Category.PROMPTS, 1),)  # "exit": 4 characters


def test_a_real_warning_only_document_is_one_empty_snapshot_at_its_end() -> None:
    """Gemini CLI (entire, a single `warning` message): nothing was sent, nothing is in it."""
    (session,) = sessions(WARNING_ONLY)
    (snapshot,) = session.snapshots
    assert (snapshot.time_ns, snapshot.anchor, snapshot.stage, snapshot.categories) == (
        session.end_ns,
        AnchorKind.SESSION,
        Stage.TRANSCRIPT_OBSERVED,
        (),
    )


def test_requests_without_usage_are_counted_per_reason_most_frequent_first(
    tmp_path: Path,
) -> None:
    """Gemini CLI 0.39.1 (tp-tutor, whole file): two usage-less records (lines 19, 26) given
    text (as written they only hold the late calls of the records before them: no
    requests, tests/adapters/gemini_cli/test_gemini_late_calls.py), so two requests without
    usage, and one API error: the info notice of line 24 edited into an `error` notice (no
    real file has an API error), which is a failed request of its own."""
    error = {**record(TP_TUTOR, 24), "type": "error"}
    error["content"] = "[API Error: got status: 429 Too Many Requests.]"
    lines: list[int | dict[str, Any]] = list(range(1, 31))
    lines[23] = error
    for number in (19, 26):
        lines[number - 1] = {**record(TP_TUTOR, number), "content": "Running it."}
    (session,) = sessions(_lines(tmp_path, TP_TUTOR, lines))
    assert [(r.id, r.stop_reason) for r in session.failed_requests] == [
        (record(TP_TUTOR, 19)["id"], "no usage recorded (cancelled?)"),
        (error["id"], error["content"]),
        (record(TP_TUTOR, 26)["id"], "no usage recorded (cancelled?)"),
    ]
    facts = dict(session.facts)
    assert facts["requests_without_usage"] == (
        "no usage recorded (cancelled?): 2, [API Error: got status: 429 Too Many Requests.]: 1"
    )


def test_a_session_whose_requests_all_got_usage_states_no_failure_fact() -> None:
    (session,) = sessions(OPENCODE_EXPLORE)
    assert session.failed_requests == ()
    assert "requests_without_usage" not in dict(session.facts)


def test_a_prompt_is_previewed_by_its_first_typed_text_capped_at_200_characters() -> None:
    """OpenCode (session-bridge explore subagent): the task the agent was given, 407 characters;
    its preview is the first 200, and the subagent's first prompt comes from the agent."""
    messages = json.loads(OPENCODE_EXPLORE.read_text(encoding="utf-8"))["messages"]
    (text,) = [p["text"] for p in messages[0]["parts"] if p["type"] == "text"]
    (session,) = sessions(OPENCODE_EXPLORE)
    first = session.prompts[0]
    assert (first.id, first.chars, first.source) == (messages[0]["info"]["id"], 407, "agent")
    assert len(text) == 407 and first.preview == text[:200]


def test_a_muse_finish_reason_is_the_response_stop_reason(tmp_path: Path) -> None:
    """Muse 1.4.2 (hcn single turn): the `model_completed` record of line 64, with the
    `finish_reason` FORMATS-muse.md §5.14 documents added (no real journal carries one)."""
    completed = record(MUSE_SINGLE_TURN, 64)
    completed["payload"]["event"]["finish_reason"] = "tool_calls"
    lines = len(raw_lines(MUSE_SINGLE_TURN)) - 1
    edited = [n if n != 64 else completed for n in range(1, lines + 1)]
    (session,) = sessions(_lines(tmp_path, MUSE_SINGLE_TURN, edited))
    assert [r.stop_reason for r in session.responses] == ["tool_calls"]
    (plain,) = sessions(MUSE_SINGLE_TURN)
    assert [r.stop_reason for r in plain.responses] == [None]


# --------------------------------------------------------------------------- ToolArguments


def test_tool_arguments_keys_previews_bytes_and_digest(tmp_path: Path) -> None:
    """Codex 0.125 (codemie): lines 1–14 hold two function calls whose arguments are JSON text
    (line 9: strings and numbers), lines 257–260 the `apply_patch` custom call, whose input is
    plain text. Line 13's arguments are cut short (edited: a journal written to the middle of a
    record) and line 253's emptied (edited: a call without arguments); no real file has either.
    Every writer shows a call by these keys, previews, size and digest."""
    exec_call = record(CODEX_CODEMIE, 9)["payload"]
    cut = record(CODEX_CODEMIE, 13)
    cut["payload"]["arguments"] = cut["payload"]["arguments"][:30]
    empty = record(CODEX_CODEMIE, 253)
    empty["payload"]["arguments"] = ""
    patch = record(CODEX_CODEMIE, 257)["payload"]
    lines: list[int | dict[str, Any]] = [*range(1, 13), cut, 14, empty, 254, 257, 258, 260]
    (session,) = sessions(_lines(tmp_path, CODEX_CODEMIE, lines))
    calls = {t.call_id: t for t in session.tool_calls}
    # JSON arguments: the decoded object's keys; a string value as it is, any other as JSON.
    got = calls[exec_call["call_id"]]
    decoded = json.loads(exec_call["arguments"])
    assert got.arg_keys == ("cmd", "workdir", "yield_time_ms", "max_output_tokens")
    assert got.args_preview == (
        ("cmd", decoded["cmd"]),
        ("workdir", decoded["workdir"]),
        ("yield_time_ms", "1000"),
        ("max_output_tokens", "12000"),
    )
    assert got.arg_bytes == len(exec_call["arguments"].encode())
    assert got.args_digest == args_digest(decoded)
    # Text that is not JSON (a custom tool's input, cut-short arguments): one `input` preview,
    # capped at 200 characters, and the digest of the text itself.
    got = calls[patch["call_id"]]
    assert (got.arg_keys, got.args_preview) == ((), (("input", patch["input"][:200]),))
    assert (got.arg_bytes, got.args_digest) == (
        len(patch["input"].encode()),
        args_digest(patch["input"]),
    )
    text = cut["payload"]["arguments"]
    got = calls[cut["payload"]["call_id"]]
    assert (got.arg_keys, got.args_preview) == ((), (("input", text),))
    assert (got.arg_bytes, got.args_digest) == (30, args_digest(text))
    # No arguments at all: nothing to preview, nothing measured.
    got = calls[empty["payload"]["call_id"]]
    assert (got.arg_keys, got.args_preview, got.arg_bytes) == ((), (), 0)
    assert len({t.args_digest for t in calls.values()}) == 4


# --------------------------------------------------------------------------- ToolDraft, prompts


def test_a_turn_lasts_until_its_last_tool_call_has_ended(tmp_path: Path) -> None:
    """Pi (large v1 session) lines 1–7: the prompt of line 5, its answer (line 6) with three
    tool calls, and the result of the first one only (line 7). The answer ends first; the turn
    lasts until its calls end: the two without a result end with the journal (line 7)."""
    (session,) = sessions(excerpt(tmp_path, PI_LARGE, [1, 2, 3, 4, 5, 6, 7]))
    (response,) = session.responses
    turn = session.prompts[1]
    assert (turn.id, response.prompt_id) == ("line-5", "line-5")
    assert {t.prompt_id for t in session.tool_calls} == {"line-5"}
    ends = [t.end_ns for t in session.tool_calls]
    assert [t.incomplete for t in session.tool_calls] == [False, True, True]
    assert ends[0] == record(PI_LARGE, 7)["message"]["timestamp"] * 1_000_000
    assert response.end_ns < ends[0] < ends[1] == ends[2] == session.end_ns
    assert turn.end_ns == session.end_ns
    assert [p.source for p in session.prompts] == ["user", "user"]  # a main session's: typed


def test_a_call_whose_request_never_reported_usage_links_to_no_response(tmp_path: Path) -> None:
    """Codex 0.125 (codemie) lines 1–9: the journal ends with a function call, before the
    token count of its request (line 10). That request is no response, so the call links to
    none; with line 10 it links to `request-1`, and it stays open either way."""
    (cut,) = sessions(excerpt(tmp_path, CODEX_CODEMIE, list(range(1, 10))))
    assert (cut.responses, cut.failed_requests, cut.unmetered_responses) == ((), (), ())
    (call,) = cut.tool_calls
    assert (call.call_id, call.response_id, call.incomplete) == (
        record(CODEX_CODEMIE, 9)["payload"]["call_id"],
        None,
        True,
    )
    (whole,) = sessions(excerpt(tmp_path, CODEX_CODEMIE, list(range(1, 11)), name="whole.jsonl"))
    assert [r.id for r in whole.responses] == ["request-1"]
    assert [(t.response_id, t.incomplete) for t in whole.tool_calls] == [("request-1", True)]


def test_a_tool_still_running_when_exported_is_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenCode (session-bridge explore subagent): message 2's last `read`, edited into the
    `running` state an export taken mid-call holds (no real export has one): the call is
    incomplete, ends where it started, and has no result in the context; the others finished."""
    document = json.loads(OPENCODE_EXPLORE.read_text(encoding="utf-8"))
    part = [p for p in document["messages"][2]["parts"] if p["type"] == "tool"][-1]
    state = part["state"]
    part["state"] = {"status": "running", "input": state["input"], "time": state["time"]}
    del part["state"]["time"]["end"]
    path = tmp_path / OPENCODE_EXPLORE.name
    path.write_text(json.dumps(document), encoding="utf-8")
    events = _log_events(monkeypatch)
    (session,) = sessions(path)
    calls = {t.call_id: t for t in session.tool_calls}
    running = calls.pop(part["callID"])
    assert (running.incomplete, running.result_chars) == (True, 0)
    assert running.end_ns == running.start_ns == state["time"]["start"] * 1_000_000
    assert len(calls) == 13 and not any(t.incomplete for t in calls.values())
    added = {i for kind, i in events if kind == "add"}
    assert f"call:{part['callID']}" in added and f"result:{part['callID']}" not in added


def test_a_muse_turn_lasts_until_its_run_ends_past_its_last_call() -> None:
    """Muse 1.4.2 (hcn single turn): the run's `terminal` record (line 94) comes after the
    response and the last of its four tool calls have ended: the turn ends there."""
    terminal = record(MUSE_SINGLE_TURN, 94)
    assert terminal["payload"]["event"]["kind"] == "terminal"
    (session,) = sessions(MUSE_SINGLE_TURN)
    (turn,) = session.prompts
    assert turn.id == terminal["payload"]["run_id"]
    last = max([*(r.end_ns for r in session.responses), *(t.end_ns for t in session.tool_calls)])
    assert {t.prompt_id for t in session.tool_calls} == {turn.id}
    assert last < turn.end_ns == terminal["recorded_at"] * 1_000
    assert turn.source == "user"


def test_an_ended_prompt_is_the_prompt_replaced_in_every_other_field() -> None:
    """drafts.ended makes a finished prompt directly instead of dataclasses.replace: with a
    distinct value in every field of Prompt, the two give the same prompt (a field added to
    Prompt and not to `ended` fails here)."""
    import dataclasses

    from agent_profiler.adapters.drafts import ended
    from agent_profiler.model import Prompt

    values: dict[str, object] = {}
    for index, f in enumerate(dataclasses.fields(Prompt)):
        values[f.name] = index + 10 if f.type in {"int", "Nanoseconds"} else f"value-{index}"
    prompt = Prompt(**values)  # type: ignore[arg-type]
    assert ended(prompt, 99, "agent") == dataclasses.replace(prompt, end_ns=99, source="agent")
    assert ended(prompt, 99, "agent") != prompt


def test_the_classes_made_by_position_keep_their_field_order() -> None:
    """The read path makes a few classes by position (a class called with keywords builds
    a dict of them): ToolCall (drafts.ToolDraft.finish), Response (RequestDraft.finish,
    pi_messages, claude_response), Usage (pi_messages, codex_events, claude_response),
    Entry (pi.SessionBuilder._new_entry), Pi's Tool (pi_messages.on_tool_call). A field
    added or moved fails here, so those calls are updated with it."""
    import dataclasses

    from agent_profiler.adapters.pi_messages import Tool as PiTool
    from agent_profiler.adapters.pi_tree import Entry
    from agent_profiler.model import Response, ToolCall, Usage

    def names(cls: type) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    assert names(ToolCall) == [
        "call_id", "name", "start_ns", "end_ns", "response_id", "prompt_id", "is_error",
        "incomplete", "arg_keys", "arg_bytes", "args_preview", "args_digest", "target",
        "result_chars", "child_session", "timing", "by_model",
    ]  # fmt: skip
    assert names(Response) == [
        "id", "start_ns", "end_ns", "model", "usage", "prompt_id", "is_error", "stop_reason",
        "output_tokens_reliable", "usage_known", "price_context", "web_searches", "recorded_usd",
    ]  # fmt: skip
    assert names(Usage) == [
        "prompt_tokens", "input_tokens", "output_tokens", "cache_read_tokens",
        "cache_write_tokens", "reasoning_tokens", "cache_write_1h_tokens",
    ]  # fmt: skip
    assert names(PiTool)[:11] == [
        "call_id", "name", "start_ns", "response_id", "prompt_id", "arguments", "end_ns",
        "is_error", "result_chars", "child_session", "from_failed_response",
    ]  # fmt: skip
    assert names(Entry)[:8] == [
        "id", "parent", "kind", "time_ns", "parts", "first_kept", "prompt_id", "thinking_level"
    ]  # fmt: skip
