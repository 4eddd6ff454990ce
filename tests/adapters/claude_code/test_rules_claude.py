"""Every category rule of the Claude Code adapter, pinned on real corpus records (copies in
tests/data/journals/claude-code). Each test names the record by file and line, reads what it
holds with the json module, and asserts the exact category, size and estimate the adapter
gives it. Rules with no example in the corpus (skill bodies, bash and task tags, interrupts)
use a real record whose text is swapped for the tagged one. Also pinned: usage merged per field
with max, compaction timing from `durationMs`, unfinished tool calls marked incomplete."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.model import Category, SourceKind
from rules_spy import Added, by_id, excerpt, raw_lines, record, sessions, spy, write
from samples import read
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "claude-code"
E4B = DATA / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"
E51 = DATA / "entire-51-0c10bf7b7a-0_v2.0.76_parallel-task-subagents.jsonl"
ACOMPACT = (
    DATA
    / "spotter-2.1.39-subagents-compaction"
    / "258c7280-ae70-4798-800f-63464d01a85d"
    / "subagents"
    / "agent-acompact-fffbd0.jsonl"
)
STDERR = DATA / "context-command" / "smartagent-so-pai_v2.0.57_703e4528_stderr-then-stdout.jsonl"
STREAM_BG = DATA / "trackgentic-mpa014m2_v2.1.143_bg-tasks-result.jsonl"

P, OV, E, K, A, R, S = (
    Category.PROMPTS,
    Category.OVERHEAD,
    Category.ENVIRONMENT,
    Category.SKILLS,
    Category.ASSISTANT,
    Category.RESULTS,
    Category.SUMMARIES,
)


def raw_line_ok(path: Path, line: int) -> bool:
    """True when line `line` of `path` is a JSON object (not blank, not stderr noise)."""
    text = raw_lines(path)[line - 1].strip()
    return text.startswith("{")


def _user_text(value: dict[str, Any]) -> str:
    content = value["message"]["content"]
    text = content if isinstance(content, str) else content[0]["text"]
    assert isinstance(text, str)
    return text


def _items_of(added: list[Added], uuid: str) -> list[Added]:
    return [a for a in added if a.id.startswith(f"{uuid}:")]


# (file, line, category, label, chars, tokens): user text as the harness wrote it.
REAL_USER_TEXT = [
    (E4B, 4, P, "User prompt", 11, 3),  # "commit this"
    (E51, 7, K, "Command or skill body", 16100, 4025),  # isMeta: a /review command body
    (E4B, 73, OV, "Harness wrapper", 245, 62),  # isMeta, but <local-command-caveat> first
    (E4B, 74, OV, "Harness wrapper", 134, 34),  # <command-name>/compact
    (E4B, 75, E, "Environment", 92, 23),  # <local-command-stdout>
    (ACOMPACT, 1, OV, "Harness wrapper", 1606, 402),  # <system-reminder>, isMeta
    (ACOMPACT, 2, OV, "Harness wrapper", 332, 83),  # <system-reminder>, isMeta
    (STDERR, 2, E, "Environment", 635, 159),  # <local-command-stderr>
]


@pytest.mark.parametrize(
    ("path", "line", "category", "label", "chars", "tokens"),
    REAL_USER_TEXT,
    ids=[f"{p.name[:12]}:{n}" for p, n, *_ in REAL_USER_TEXT],
)
def test_real_user_text_is_categorised_by_its_rule(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    path: Path,
    line: int,
    category: Category,
    label: str,
    chars: int,
    tokens: int,
) -> None:
    value = record(path, line)
    assert len(_user_text(value)) == chars  # the independent reading
    added = spy(monkeypatch)
    sessions(excerpt(tmp_path, path, [line]))
    (item,) = _items_of(added, value["uuid"])
    assert (item.category, item.label, item.chars, item.tokens) == (category, label, chars, tokens)
    tool = value.get("sourceToolUseID") if category is K else None
    expected_kind = SourceKind.PROMPT if category is P else SourceKind.NONE
    assert (item.source_id, item.source_kind) == (
        (tool, SourceKind.TOOL) if tool else ("", expected_kind)
    )


# Tagged text with no example in the corpus: line 4 of E4B ("commit this") with its text swapped.
SWAPPED_TEXT = [
    ("<system-reminder>\nThe TodoWrite tool hasn't been used.\n</system-reminder>", False, OV),
    ("  \n<system-reminder>indented</system-reminder>", False, OV),
    ("<command-message>review</command-message>", False, OV),
    ("<command-args>--all</command-args>", False, OV),
    ("[Request interrupted by user for tool use]", False, OV),
    ("<bash-input>ls</bash-input>", False, E),
    ("<bash-stdout>a.txt</bash-stdout>", False, E),
    ("<bash-stderr>nope</bash-stderr>", False, E),
    ("<task-notification>done</task-notification>", False, E),
    ("<user-prompt-submit-hook>ok</user-prompt-submit-hook>", False, E),
    ("Base directory for this skill: /skills/pdf\n\n# PDF", False, K),
    ("Base directory for this skill: /skills/pdf", True, K),
    ("<system-reminder>meta</system-reminder>", True, OV),
    ("<local-command-stdout>meta</local-command-stdout>", True, E),
    ("Expanded body of /deploy: run the pipeline", True, K),
    ("<some-other-tag>typed by the user</some-other-tag>", False, P),
    ("please look at <system-reminder> in the code", False, P),
]


@pytest.mark.parametrize(("text", "is_meta", "category"), SWAPPED_TEXT)
def test_every_user_text_rule(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    is_meta: bool,
    category: Category,
) -> None:
    value = record(E4B, 4)
    value["message"]["content"] = text
    if is_meta:
        value["isMeta"] = True
    added = spy(monkeypatch)
    (session,) = sessions(write(tmp_path, [value]))
    (item,) = _items_of(added, value["uuid"])
    assert item.category is category
    assert (item.chars, item.tokens) == (len(text), -(-len(text) // 4))
    # Only the user's own text is a prompt of the session.
    assert [p.chars for p in session.prompts] == ([len(text)] if category is P else [])


def test_a_skill_body_points_at_the_call_that_loaded_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    value = record(E4B, 4)
    value["message"]["content"] = [{"type": "text", "text": "Base directory for this skill: /s"}]
    value["sourceToolUseID"] = "toolu_skill"
    added = spy(monkeypatch)
    sessions(write(tmp_path, [value]))
    (item,) = _items_of(added, value["uuid"])
    assert (item.category, item.label, item.source_id, item.source_kind) == (
        K,
        "Skill body",
        "toolu_skill",
        SourceKind.TOOL,
    )


def test_assistant_thinking_text_tool_calls_and_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines 4–10 and 22 of E4B: a prompt, visible thinking, three Bash calls, a result,
    the closing text. Thinking stays in Assistant history with its full length."""
    added = spy(monkeypatch)
    sessions(excerpt(tmp_path, E4B, [4, 5, 6, 7, 8, 9, 10, 22]))
    items = by_id(added)
    thinking = record(E4B, 5)["message"]["content"][0]["thinking"]
    got = items[f"{record(E4B, 5)['uuid']}:0"]
    assert (got.category, got.label, got.chars) == (A, "Thinking", len(thinking))
    assert got.tokens == -(-len(thinking) // 4) > 0
    # Both are the response's own additions: linked to it by its message id, as a bare
    # string block is (and as Codex and Pi link theirs).
    assert (got.source_id, got.source_kind) == (
        record(E4B, 5)["message"]["id"],
        SourceKind.RESPONSE,
    )
    text = record(E4B, 22)["message"]["content"][0]["text"]
    got = items[f"{record(E4B, 22)['uuid']}:0"]
    assert (got.category, got.label, got.chars) == (A, "Assistant text", len(text))
    assert (got.source_id, got.source_kind) == (
        record(E4B, 22)["message"]["id"],
        SourceKind.RESPONSE,
    )
    call = record(E4B, 6)["message"]["content"][0]
    encoded = json.dumps(call["input"], separators=(",", ":"), ensure_ascii=False).encode()
    got = items[f"call:{call['id']}"]
    assert (got.category, got.label, got.source_id, got.source_kind) == (
        A,
        "Tool arguments",
        call["id"],
        SourceKind.TOOL,
    )
    assert got.chars == len("Bash") + len(encoded) == 69
    for line in (9, 10):
        block = record(E4B, line)["message"]["content"][0]
        got = items[f"result:{block['tool_use_id']}"]
        assert (got.category, got.label, got.source_kind) == (R, "Tool result", SourceKind.TOOL)
        assert got.chars == len(block["content"])
    assert sorted({a.category for a in added}) == sorted({P, A, R})


def test_a_tool_call_without_a_result_is_incomplete(tmp_path: Path) -> None:
    call_id = record(E4B, 6)["message"]["content"][0]["id"]
    (open_session,) = sessions(excerpt(tmp_path, E4B, [4, 5, 6, 22], name="open.jsonl"))
    (done_session,) = sessions(excerpt(tmp_path, E4B, [4, 5, 6, 10, 22], name="done.jsonl"))
    (open_call,) = [t for t in open_session.tool_calls if t.call_id == call_id]
    (done_call,) = [t for t in done_session.tool_calls if t.call_id == call_id]
    assert open_call.incomplete is True
    assert open_call.end_ns == open_session.end_ns  # runs to the end of what was recorded
    assert done_call.incomplete is False
    assert done_call.end_ns - done_call.start_ns == 1_000_000 * 1_223  # 01:41:13.986 → 15.209
    assert done_call.result_chars == len(record(E4B, 10)["message"]["content"][0]["content"])


def test_usage_is_merged_per_field_with_max(tmp_path: Path) -> None:
    """One response (msg_01Xoo…) is four records; each field keeps its largest value, whatever
    the order — not the last non-zero one."""
    lines = [record(E4B, n) for n in (4, 5, 6, 7, 8)]
    usages = [
        {"input_tokens": 10, "cache_read_input_tokens": 142_439, "output_tokens": 8},
        {"input_tokens": 3, "cache_creation_input_tokens": 5, "output_tokens": 120},
        {"input_tokens": 0, "cache_read_input_tokens": 100_000, "output_tokens": 0},
        {"input_tokens": 7, "cache_read_input_tokens": 0, "output_tokens": 40},
    ]
    for value, usage in zip(lines[1:], usages, strict=True):
        value["message"]["usage"] = usage
    (session,) = sessions(write(tmp_path, lines))
    (response,) = session.responses
    usage = response.usage
    assert (usage.input_tokens, usage.cache_write_tokens, usage.cache_read_tokens) == (
        10,
        5,
        142_439,
    )
    assert usage.output_tokens == 120
    assert usage.prompt_tokens == 10 + 5 + 142_439
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == response.id]
    assert snapshot.reported_tokens == 142_454


def test_a_response_whose_usage_is_all_zero_is_not_a_request(tmp_path: Path) -> None:
    lines = [record(E4B, n) for n in (4, 5, 6)]
    for value in lines[1:]:
        value["message"]["usage"] = {"input_tokens": 0, "output_tokens": 0}
    (session,) = sessions(write(tmp_path, lines))
    assert session.responses == ()
    assert not [s for s in session.snapshots if s.anchor_id == "msg_01Xoo2GzARUu4weag5sCWRoF"]


def _compaction_lines(duration_ms: int | None) -> list[dict[str, Any]]:
    values = [record(E4B, n) for n in (4, 5, 6, 10, 22, 71, 72, 79, 80)]
    if duration_ms is not None:
        values[5]["compactMetadata"] = {**values[5]["compactMetadata"], "durationMs": duration_ms}
    return values


def test_compaction_timing_comes_from_duration_ms(tmp_path: Path) -> None:
    (plain,) = sessions(write(tmp_path, _compaction_lines(None), name="plain.jsonl"))
    (timed,) = sessions(write(tmp_path, _compaction_lines(42_250), name="timed.jsonl"))
    (c_plain,) = plain.compactions
    (c_timed,) = timed.compactions
    # Line 71 has no durationMs: a zero-length slice at the boundary record, said so.
    assert c_plain.end_ns == c_plain.start_ns
    assert c_plain.timing == "boundary record only"
    assert c_timed.end_ns == c_plain.end_ns
    assert c_timed.end_ns - c_timed.start_ns == 42_250 * 1_000_000
    assert c_timed.timing == "compactMetadata.durationMs"
    assert (c_plain.trigger, c_plain.pre_tokens, c_plain.post_tokens) == ("manual", 153_739, None)
    assert c_plain.kind == "compaction"


def test_compaction_clears_history_and_the_summary_is_a_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    added = spy(monkeypatch)
    (session,) = sessions(write(tmp_path, _compaction_lines(None)))
    summary = record(E4B, 72)
    got = by_id(added)[f"summary:{summary['uuid']}"]
    assert (got.category, got.label, got.chars) == (
        S,
        "Compaction summary",
        len(_user_text(summary)),
    )
    (compaction,) = session.compactions
    # The prompt, the thinking, the call, its result and the closing text left the context.
    assert compaction.removed_items == 5
    post = [s for s in session.snapshots if s.anchor_id == compaction.id]
    (snapshot,) = post
    # History left; the inferred head (not in the journal) stays.
    assert dict(snapshot.categories) == {S: got.tokens, Category.UNATTRIBUTED: 142_451}


def test_hook_context_is_environment() -> None:
    """stream-json line 2: a SessionStart hook's additionalContext enters the context."""
    output = json.loads(record(STREAM_BG, 2)["output"])
    text = output["hookSpecificOutput"]["additionalContext"]
    added: list[Added] = []
    with pytest.MonkeyPatch.context() as mp:
        added = spy(mp)
        sessions(STREAM_BG)
    hooks = [a for a in added if a.id.startswith("hook:")]
    assert [(a.category, a.label, a.chars) for a in hooks] == [(E, "Hook context", len(text))]


def test_undecodable_images_and_snapshot_redacted_thinking_are_counted_not_estimated(
    tmp_path: Path,
) -> None:
    """An image whose data is no image, and redacted thinking in a 2.1.14 response (its usage
    a streaming snapshot, no stop_reason): both `unmeasured`, by kind."""
    prompt = record(E4B, 4)
    prompt["message"]["content"] = [
        {"type": "text", "text": "what is this"},
        {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
    ]
    answer = copy.deepcopy(record(E4B, 5))
    answer["message"]["content"] = [{"type": "redacted_thinking", "data": "xyz"}]
    (session,) = sessions(write(tmp_path, [prompt, answer]))
    unmeasured = dict(session.unmeasured)
    assert unmeasured.get("image") == 1
    assert unmeasured.get("thinking-not-in-journal") == 1


def test_stream_json_init_and_result_facts() -> None:
    """bg-tasks stream-json: line 3's init lists tools, skills, agents and commands; line 46's
    result gives the window from modelUsage (glm-5.1: 200,000), said to be from the journal."""
    init = record(STREAM_BG, 3)
    (session,) = [s for s in sessions(STREAM_BG) if s.parent_session is None]
    facts = dict(session.facts)
    for key in ("tools", "skills", "agents", "slash_commands"):
        assert facts[f"init_{key}"] == len(init[key])
    assert facts["init_mcp_servers"] == ""
    assert facts["init_plugins"] == 0
    assert facts["result"] == "success"
    assert session.models[0] == init["model"] == "glm-5.1"
    windows = {s.window_tokens for s in session.snapshots}
    assert windows == {record(STREAM_BG, 46)["modelUsage"]["glm-5.1"]["contextWindow"]}


def test_a_microcompaction_removes_the_named_results() -> None:
    """handmade small.jsonl line 18: microcompactMetadata names the results it cleared."""
    small = DATA / "handmade" / "small.jsonl"
    meta = record(small, 18)["microcompactMetadata"]
    (session,) = sessions(small)
    (micro,) = [c for c in session.compactions if c.kind == "microcompaction"]
    assert micro.id == record(small, 18)["uuid"]  # the boundary record's own id
    assert (micro.trigger, micro.pre_tokens) == ("auto", meta["preTokens"])
    assert micro.post_tokens == meta["preTokens"] - meta["tokensSaved"]
    assert micro.removed_items == len(meta["compactedToolIds"])
    assert micro.start_ns == micro.end_ns
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == micro.id]
    removed = {c.id for c in snapshot.changes if c.change.value == "removed"}
    assert removed == {f"result:{i}" for i in meta["compactedToolIds"]}


def test_errors_and_stop_reasons_of_responses(tmp_path: Path) -> None:
    lines = [record(E4B, n) for n in (4, 5, 22)]
    lines[2]["isApiErrorMessage"] = True
    (session,) = sessions(write(tmp_path, lines))
    by_message = {r.id: r for r in session.responses}
    assert by_message[lines[1]["message"]["id"]].is_error is False
    last = by_message[lines[2]["message"]["id"]]
    assert last.is_error is True
    assert last.stop_reason == lines[2]["message"]["stop_reason"]
    assert all(r.output_tokens_reliable is False for r in session.responses)


def test_hook_context_of_a_transcript_attachment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    attachment = {
        **{k: record(E4B, 4)[k] for k in ("sessionId", "cwd", "version", "timestamp")},
        "type": "attachment",
        "uuid": "att-1",
        "attachment": {"type": "hook_additional_context", "content": ["be careful", "twice"]},
    }
    attachment["attachment"]["content"] = "be careful with the database"
    added = spy(monkeypatch)
    sessions(write(tmp_path, [attachment, record(E4B, 4), record(E4B, 5)]))
    got = by_id(added)["hook:att-1"]
    assert (got.category, got.label, got.chars) == (E, "Hook context", 28)


CONTEXT_RUN = DATA / "context-command" / "simonw-cct-pr51_v2.1.2_44baca89.jsonl"


def test_a_context_run_is_a_native_baseline_whose_head_replaces_the_inferred_one() -> None:
    """Lines 1–2 of simonw-cct-pr51: `/context` and its screen (v2.1.2, 24k of 200k, autocompact
    buffer leaving 155k). The head rows the screen lists are items; what a head category holds
    beyond them is one `native:<category>` item."""
    (session,) = sessions(CONTEXT_RUN)
    assert (session.window_tokens, session.window_source) == (200_000, "journal (/context)")
    # The session holds only /context output: its one snapshot is the native one (issue 15.7:
    # no partial end-of-session estimate beside it).
    (native,) = session.snapshots
    assert (native.anchor.value, native.anchor_id, native.item_stage) == (
        "native",
        "context-command@2",
        "native-summary",
    )
    assert (native.window_tokens, native.effective_window_tokens, native.reported_tokens) == (
        200_000,
        155_000,
        24_000,
    )
    assert native.baseline is True
    tools = dict(native.categories)[Category.TOOLS]
    listed = [c for c in native.changes if c.category is Category.TOOLS]
    rest = {c.id: c.tokens for c in listed}.pop("native:tools")
    assert rest == tools - sum(c.tokens for c in listed if c.id != "native:tools") == 15_632
    by_id_ = {c.id: c for c in native.changes}
    assert by_id_["native:tools"].label == f"{Category.TOOLS.label} (from /context)"
    assert by_id_["native:system"].tokens == dict(native.categories)[Category.SYSTEM] == 2_900
    # Rules (303) and skills (270) are wholly their listed items: no `native:` rest for them,
    # not even an empty one.
    assert sorted(c.id for c in native.changes if c.id.startswith("native:")) == [
        "native:system",
        "native:tools",
    ]
    assert all(c.tokens > 0 for c in native.changes)


def test_the_window_of_a_stream_json_result(tmp_path: Path) -> None:
    """Line 46's modelUsage: the main model's contextWindow, else the largest one."""
    values = [record(STREAM_BG, n) for n in range(1, 47) if raw_line_ok(STREAM_BG, n)]
    result = values[-1]
    assert result["type"] == "result"
    result["modelUsage"]["side-model"] = {"contextWindow": 1_000_000}
    (main,) = [s for s in sessions(write(tmp_path, values)) if s.parent_session is None]
    assert {s.window_tokens for s in main.snapshots} == {200_000}
    del result["modelUsage"]["glm-5.1"]
    other = tmp_path / "other"
    other.mkdir()
    (main,) = [s for s in sessions(write(other, values)) if s.parent_session is None]
    assert {s.window_tokens for s in main.snapshots} == {1_000_000}
    assert main.window_source == "journal"


def test_init_lists_mcp_servers_and_the_model_once(tmp_path: Path) -> None:
    values = [record(STREAM_BG, n) for n in range(1, 47) if raw_line_ok(STREAM_BG, n)]
    init = next(v for v in values if v.get("subtype") == "init")
    init["mcp_servers"] = [{"name": "github", "status": "connected"}, {"status": "x"}, "bad"]
    init["plugins"] = [{"name": "p"}]
    (main,) = [s for s in sessions(write(tmp_path, values)) if s.parent_session is None]
    facts = dict(main.facts)
    assert (facts["init_mcp_servers"], facts["init_plugins"]) == ("github", 1)
    assert main.models.count("glm-5.1") == 1


def test_snake_case_microcompaction_metadata(tmp_path: Path) -> None:
    """The same microcompaction written with snake_case keys (as stream-json spells them)."""
    small = DATA / "handmade" / "small.jsonl"
    count = len(raw_lines(small))
    values = [record(small, n) for n in range(1, count + 1) if raw_line_ok(small, n)]
    boundary = next(v for v in values if v.get("subtype") == "microcompact_boundary")
    meta = boundary.pop("microcompactMetadata")
    boundary["microcompact_metadata"] = {
        "trigger": meta["trigger"],
        "pre_tokens": meta["preTokens"],
        "tokens_saved": meta["tokensSaved"],
        "compacted_tool_ids": meta["compactedToolIds"],
    }
    (session,) = sessions(write(tmp_path, values))
    (micro,) = [c for c in session.compactions if c.kind == "microcompaction"]
    assert (micro.pre_tokens, micro.post_tokens) == (
        meta["preTokens"],
        meta["preTokens"] - meta["tokensSaved"],
    )
    assert micro.removed_items == len(meta["compactedToolIds"])


def test_snake_case_compaction_metadata(tmp_path: Path) -> None:
    """Line 71's boundary with stream-json's spelling (`compact_metadata`, `pre_tokens`,
    `post_tokens`, `duration_ms`): the same compaction."""
    values = _compaction_lines(None)
    boundary = values[5]
    meta = boundary.pop("compactMetadata")
    boundary["compact_metadata"] = {
        "trigger": meta["trigger"],
        "pre_tokens": meta["preTokens"],
        "post_tokens": 2_500,
        "duration_ms": 1_500,
    }
    (session,) = sessions(write(tmp_path, values))
    (compaction,) = session.compactions
    assert (compaction.id, compaction.trigger) == (boundary["uuid"], "manual")
    assert (compaction.pre_tokens, compaction.post_tokens) == (153_739, 2_500)
    assert compaction.end_ns - compaction.start_ns == 1_500 * 1_000_000
    assert compaction.timing == "compactMetadata.durationMs"
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == compaction.id]
    assert snapshot.reported_tokens == 2_500


def test_a_response_without_a_message_id(tmp_path: Path) -> None:
    """Older records: the response is named by `requestId`, else by the record's uuid."""
    prompt, first, second = record(E4B, 4), record(E4B, 5), record(E4B, 22)
    del first["message"]["id"]
    first["requestId"] = "req_1"
    del second["message"]["id"]
    second.pop("requestId", None)
    (session,) = sessions(write(tmp_path, [prompt, first, second]))
    assert [r.id for r in session.responses] == ["req_1", second["uuid"]]
    assert [r.model for r in session.responses] == [first["message"]["model"]] * 2


# --------------------------------------------------------------------------- claude_code.py
# Detection, which records are read, and which files form one session.

LEGACY = DATA / "codemie-2.0.64-legacy-agent-files" / "-tmp-private"
LEGACY_ID = "4c2ddfdc-b619-4525-8d03-1950fb1b0257"
SPOTTER_DIR = DATA / "spotter-2.1.39-subagents-compaction"
SPOTTER_ID = "258c7280-ae70-4798-800f-63464d01a85d"
SUBAGENT = SPOTTER_DIR / SPOTTER_ID / "subagents" / "agent-a881341.jsonl"


def _without(value: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k not in keys}


# (record, what detection says): real first records of each kind, and the same records
# edited so that only one rule of `detect` can recognise them.
DETECTED = [
    ("user", record(E4B, 4), True),
    ("assistant", record(E4B, 5), True),
    ("system/turn_duration", record(E4B, 2), True),
    ("progress", record(E4B, 23), True),
    ("queue-operation", record(E4B, 67), True),
    ("summary, leafUuid only", record(E51, 1), True),
    ("summary with sessionId", {**_without(record(E51, 1), "leafUuid"), "sessionId": "s"}, True),
    ("file-history-snapshot", record(E51, 2), True),
    (
        "file-history-snapshot with sessionId",
        {**_without(record(E51, 2), "snapshot"), "sessionId": "s"},
        True,
    ),
    ("attachment", {**_without(record(E4B, 4), "message"), "type": "attachment"}, True),
    ("stream init", record(STREAM_BG, 3), True),
    ("stream hook_started", record(STREAM_BG, 1), True),
    ("stream hook_response", record(STREAM_BG, 2), True),
    ("stream init without session_id", _without(record(STREAM_BG, 3), "session_id"), False),
    ("stream assistant", record(STREAM_BG, 4), True),
    ("stream user", record(STREAM_BG, 8), True),
    ("stream assistant, message not an object", {**record(STREAM_BG, 4), "message": "x"}, False),
    ("stream result", record(STREAM_BG, 46), False),
    ("summary without leafUuid or sessionId", _without(record(E51, 1), "leafUuid"), False),
    ("snapshot without snapshot or sessionId", _without(record(E51, 2), "snapshot"), False),
    # A transcript holding so far only what the UI keeps (a resumed session's pointer, a
    # title) is Claude Code's; a type Claude Code does not write is not.
    ("pr-link with sessionId", {**record(E4B, 67), "type": "pr-link"}, True),
    (
        "last-prompt with sessionId",
        {"type": "last-prompt", "lastPrompt": "x", "sessionId": "s"},
        True,
    ),
    ("unknown type with sessionId", {**record(E4B, 67), "type": "zzz-note"}, False),
    ("last-prompt without sessionId", {"type": "last-prompt", "lastPrompt": "x"}, False),
]


@pytest.mark.parametrize(
    ("value", "expected"), [d[1:] for d in DETECTED], ids=[d[0] for d in DETECTED]
)
def test_which_first_records_say_claude_code(value: dict[str, Any], expected: bool) -> None:
    from agent_profiler.adapters import claude_code

    assert claude_code.detect([value]) is expected
    # Values that are not objects (a JSON array line) are passed over, not taken as a no.
    assert claude_code.detect([[1, 2], "text", value]) is expected


def _typed(kind: str) -> dict[str, Any]:
    """E4B line 23 (a real `progress` record) as another record type."""
    return {**record(E4B, 23), "type": kind}


def test_records_without_model_input_are_counted_as_skipped_by_kind(tmp_path: Path) -> None:
    """E4B: every record not read is counted under its kind (independent count with json);
    the types FORMATS.md §1.2 lists as holding no model input, absent from the corpus, are
    made from line 23 with the type swapped."""
    _, diagnostics = read(E4B)
    expected: dict[str, int] = {}
    for text in raw_lines(E4B):
        if not text.strip().startswith("{"):
            continue
        value = json.loads(text)
        kind = value["type"]
        if kind == "system" and value["subtype"] != "compact_boundary":
            key = f"claude:system/{value['subtype']}"
        elif kind in {"user", "assistant", "system"}:
            continue
        else:
            key = f"claude:{kind}"
        expected[key] = expected.get(key, 0) + 1
    assert dict(diagnostics.skipped) == expected
    assert expected["claude:progress"] == 68 and expected["claude:system/turn_duration"] == 3
    assert dict(diagnostics.unrecognised) == {}
    known = ["pr-link", "ai-title", "custom-title", "agent-setting", "agent-name"]
    known += ["last-prompt", "tag", "summary", "file-history-snapshot", "queue-operation"]
    values = [record(E4B, 4), *(_typed(k) for k in known), record(E4B, 5)]
    _, diagnostics = read(write(tmp_path, values))
    assert dict(diagnostics.skipped) == {f"claude:{k}": 1 for k in known}
    assert dict(diagnostics.unrecognised) == {}


def test_records_of_an_unknown_type_are_not_recognised(tmp_path: Path) -> None:
    """Line 23 as a type no build wrote yet, and without any type: not read, and counted as
    not recognised (never as skipped on purpose)."""
    values = [record(E4B, 4), _typed("brand-new"), _without(record(E4B, 23), "type")]
    _, diagnostics = read(write(tmp_path, [*values, record(E4B, 5)]))
    assert dict(diagnostics.unrecognised) == {"claude:brand-new": 1, "claude:untyped": 1}
    assert dict(diagnostics.skipped) == {}


def test_bad_records_are_warned_about_with_their_line(tmp_path: Path) -> None:
    """Line 2 is a JSON array, line 3 is E4B line 5 without its sessionId: both left out with
    a warning that names the line; the prompt (line 1) and line 4 are read."""
    path = tmp_path / "bad.jsonl"
    lines = [
        raw_lines(E4B)[3],
        "[1, 2]",
        json.dumps(_without(record(E4B, 5), "sessionId")),
        raw_lines(E4B)[21],
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (session,), diagnostics = read(path)
    assert [(w.path, w.line, w.kind, w.message) for w in diagnostics.warnings] == [
        (str(path), 2, "bad-shape", "record is not a JSON object"),
        (str(path), 3, "bad-shape", "record without sessionId"),
    ]
    assert [r.id for r in session.responses] == [record(E4B, 22)["message"]["id"]]


def _ts(text: str) -> int:
    from agent_profiler.adapters.common import timestamp_ns

    value = timestamp_ns(text)
    assert value is not None
    return value


def test_sidechain_records_inside_a_main_file_are_a_subagent(tmp_path: Path) -> None:
    """codemie: the main transcript with agent-36541525's two sidechain records appended to
    it (as older builds wrote them): a child session `<id>/36541525` of the main one."""
    main_file = LEGACY / f"{LEGACY_ID}.jsonl"
    agent_file = LEGACY / "agent-36541525.jsonl"
    text = main_file.read_text(encoding="utf-8") + agent_file.read_text(encoding="utf-8")
    path = tmp_path / f"{LEGACY_ID}.jsonl"
    path.write_text(text, encoding="utf-8")
    sessions_, _ = read(path)
    main, child = sessions_
    assert (main.session_id, child.session_id) == (LEGACY_ID, f"{LEGACY_ID}/36541525")
    assert (child.parent_session, child.agent_id, child.child_role) == (
        LEGACY_ID,
        "36541525",
        "subagent",
    )
    assert main.parent_session is None and main.agent_id is None and main.child_role is None
    assert [r.id for r in child.responses] == [record(agent_file, 2)["message"]["id"]]
    assert child.prompts[0].source == "agent"
    # The agent's own file read with it (the folder): the same thread, one session more
    # source, not a second session.
    (tmp_path / "with-file").mkdir()
    path.rename(tmp_path / "with-file" / path.name)
    (tmp_path / "with-file" / agent_file.name).write_bytes(agent_file.read_bytes())
    main, child = read(tmp_path / "with-file")[0]
    assert child.session_id == f"{LEGACY_ID}/36541525"
    assert child.sources == (
        str(tmp_path / "with-file" / path.name),
        str(tmp_path / "with-file" / agent_file.name),
    )
    # A sidechain flag without a text agentId stays in the main thread.
    values = [record(main_file, n) for n in (2, 3)]
    values += [{**record(agent_file, n), "agentId": 5} for n in (1, 2)]
    (only,), _ = read(write(tmp_path, values, name="flat.jsonl"))
    assert only.session_id == LEGACY_ID
    assert len(only.responses) == 2


def test_warmup_subagents_stretch_their_session(tmp_path: Path) -> None:
    """codemie: the two warmup agents start at 19:37:37.157 (agent-50243ee8), before the
    main file's first record (19:37:45.343), and agent-36541525 ends at 19:38:56.408, after
    its last (19:38:31.216): the session covers them."""
    sessions_, _ = read(LEGACY)
    main = next(s for s in sessions_ if s.session_id == LEGACY_ID)
    assert record(LEGACY / f"{LEGACY_ID}.jsonl", 2)["timestamp"] == "2025-12-10T19:37:45.343Z"
    assert (main.start_ns, main.end_ns) == (
        _ts(record(LEGACY / "agent-50243ee8.jsonl", 1)["timestamp"]),
        _ts(record(LEGACY / "agent-36541525.jsonl", 2)["timestamp"]),
    )


def test_a_subagent_file_given_alone_is_read_on_its_own(tmp_path: Path) -> None:
    """agent-36541525.jsonl without its main transcript: its own session, still naming the
    session it belongs to."""
    (child,), _ = read(LEGACY / "agent-36541525.jsonl")
    assert child.session_id == f"{LEGACY_ID}/36541525"
    assert child.parent_session == LEGACY_ID
    assert child.parent_call_id is None


def test_a_subagent_file_given_with_its_main_file_attaches_to_it() -> None:
    """The codemie main file and one agent file named on the command line: one tree."""
    sessions_, _ = read(LEGACY / f"{LEGACY_ID}.jsonl", LEGACY / "agent-50243ee8.jsonl")
    assert [s.session_id for s in sessions_] == [LEGACY_ID, f"{LEGACY_ID}/50243ee8"]
    assert sessions_[1].parent_session == LEGACY_ID
    assert sessions_[0].start_ns == _ts("2025-12-10T19:37:37.157Z")


def test_two_files_of_one_session_are_both_read(tmp_path: Path) -> None:
    """E4B twice, the second with one more blank line (a resumed run, a longer copy; the
    very same bytes are read once): both are read, the second as `#2`."""
    (tmp_path / "a.jsonl").write_bytes(E4B.read_bytes())
    (tmp_path / "b.jsonl").write_bytes(E4B.read_bytes() + b"\n")
    sessions_, _ = read(tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    sid = record(E4B, 4)["sessionId"]
    assert [s.session_id for s in sessions_] == [sid, f"{sid}#2"]
    assert sessions_[0].responses == sessions_[1].responses


def _spotter_copy(tmp_path: Path, main_edit: Any = None) -> Path:
    """The spotter tree in tmp_path, its main transcript unpacked (and edited: a function of
    the records' list) so that records can be added to it."""
    import gzip
    import shutil

    folder = tmp_path / "spotter"
    shutil.copytree(SPOTTER_DIR / SPOTTER_ID, folder / SPOTTER_ID)
    with gzip.open(SPOTTER_DIR / f"{SPOTTER_ID}.jsonl.gz", "rt", encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    if main_edit is not None:
        lines = main_edit(lines)
    (folder / f"{SPOTTER_ID}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _main_and_child(sessions_: list[Any]) -> tuple[Any, Any]:
    found = {s.session_id: s for s in sessions_}
    return found[SPOTTER_ID], found.get(f"{SPOTTER_ID}/a881341")


ACOMPACT_REQUEST = "msg_01EmKCTGA88TYu4RzLxm2E5i"


def test_the_compaction_request_file_times_its_compaction(tmp_path: Path) -> None:
    """spotter: the boundary (main line 1256, 21:18:41.543) has no durationMs; the
    agent-acompact file's response (line 4, 21:18:41.098) was triggered by its line 3
    (21:17:14.555): that is when the compaction started. The request is the compaction's,
    not a session of its own, and its file is a source of the main session."""
    sessions_, _ = read(_spotter_copy(tmp_path))
    main, _child = _main_and_child(sessions_)
    assert {s.session_id for s in sessions_} == {SPOTTER_ID, f"{SPOTTER_ID}/a881341"}
    (compaction,) = main.compactions
    request = compaction.request
    assert request is not None
    assert (request.id, request.model) == (
        ACOMPACT_REQUEST,
        record(ACOMPACT, 4)["message"]["model"],
    )
    assert (request.start_ns, request.end_ns) == (
        _ts(record(ACOMPACT, 3)["timestamp"]),
        _ts(record(ACOMPACT, 4)["timestamp"]),
    )
    assert request.output_tokens_reliable is False
    assert (compaction.start_ns, compaction.end_ns) == (
        request.start_ns,
        _ts("2026-02-11T21:18:41.543Z"),
    )
    assert compaction.timing == "summarisation request (agent-acompact file) → boundary record"
    acompact = str(tmp_path / "spotter" / SPOTTER_ID / "subagents" / ACOMPACT.name)
    assert acompact in main.sources


def test_a_compaction_request_goes_to_the_nearest_compaction(tmp_path: Path) -> None:
    """spotter with two boundaries added (copies of line 1256), one at 21:00 before it and
    one at 21:40 after it: the request (ending 21:18:41.098) belongs to the real one, 0.4 s
    away, not to either new one."""

    def add_boundaries(lines: list[str]) -> list[str]:
        early, late = json.loads(lines[1255]), json.loads(lines[1255])
        early.update(uuid="early-boundary", timestamp="2026-02-11T21:00:00.000Z")
        late.update(uuid="late-boundary", timestamp="2026-02-11T21:40:00.000Z")
        return [
            *lines[:1255],
            json.dumps(early),
            *lines[1255:1850],
            json.dumps(late),
            *lines[1850:],
        ]

    sessions_, _ = read(_spotter_copy(tmp_path, add_boundaries))
    main, _ = _main_and_child(sessions_)
    early, real, late = main.compactions
    assert (early.id, real.id, late.id) == (
        "early-boundary",
        "d46d6800-2f43-4360-ba84-c1de9c1ecbae",
        "late-boundary",
    )
    assert real.request is not None and real.request.id == ACOMPACT_REQUEST
    assert early.request is None and late.request is None
    assert late.start_ns == late.end_ns == _ts("2026-02-11T21:40:00.000Z")


def test_a_compaction_request_without_a_compaction_is_left_out(tmp_path: Path) -> None:
    """spotter without its boundary record (line 1256): the acompact file has nothing to
    time; it is neither a session nor a source of the main one."""
    sessions_, _ = read(_spotter_copy(tmp_path, lambda lines: lines[:1255] + lines[1256:]))
    main, _ = _main_and_child(sessions_)
    assert main.compactions == ()
    assert not [s for s in main.sources if "acompact" in s]
    assert {s.session_id for s in sessions_} == {SPOTTER_ID, f"{SPOTTER_ID}/a881341"}


def test_a_compaction_request_is_known_by_its_agent_id_too(tmp_path: Path) -> None:
    """The acompact file renamed `agent-renamed.jsonl`: its records' agentId
    (`acompact-fffbd0`) still says it is a compaction request."""
    folder = _spotter_copy(tmp_path)
    subagents = folder / SPOTTER_ID / "subagents"
    (subagents / ACOMPACT.name).rename(subagents / "agent-renamed.jsonl")
    sessions_, _ = read(folder)
    main, _ = _main_and_child(sessions_)
    assert {s.session_id for s in sessions_} == {SPOTTER_ID, f"{SPOTTER_ID}/a881341"}
    assert main.compactions[0].request is not None


def _with_sidecar(tmp_path: Path, text: str) -> tuple[Any, Any]:
    folder = _spotter_copy(tmp_path)
    (folder / SPOTTER_ID / "subagents" / "agent-a881341.meta.json").write_text(text)
    return _main_and_child(read(folder)[0])


LAUNCHER = "toolu_01VmaERAwhb19LGUwu9GenaK"  # main line 1480's Task call, toolUseResult.agentId


def test_the_sidecar_names_the_launching_call_and_the_parent_agent(tmp_path: Path) -> None:
    """Hand-made `agent-a881341.meta.json` (newer builds write one; the corpus has none):
    its toolUseId is the launching call, its parentAgentId makes a nested agent."""
    main, child = _with_sidecar(
        tmp_path, json.dumps({"toolUseId": "toolu_sidecar", "parentAgentId": "aparent"})
    )
    assert child.parent_call_id == "toolu_sidecar"
    assert child.parent_session == f"{SPOTTER_ID}/aparent"
    # Its parent agent was not read: the main session's Task call is not linked to it.
    launcher = next(t for t in main.tool_calls if t.call_id == LAUNCHER)
    assert launcher.child_session is None


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "[1, 2]",
        json.dumps({"toolUseId": 7, "parentAgentId": ""}),
        json.dumps({"parentAgentId": ["a"]}),
    ],
)
def test_a_sidecar_without_usable_fields_changes_nothing(tmp_path: Path, text: str) -> None:
    """The link then comes from the main file: line 1480's toolUseResult.agentId."""
    main, child = _with_sidecar(tmp_path, text)
    assert (child.parent_call_id, child.parent_session) == (LAUNCHER, SPOTTER_ID)
    launcher = next(t for t in main.tool_calls if t.call_id == LAUNCHER)
    assert launcher.child_session == child.session_id


def test_an_unreadable_subagent_file_is_warned_about_and_the_rest_read(tmp_path: Path) -> None:
    """A UTF-16 `agent-0broken.jsonl` beside the spotter subagents (sorted first): one
    warning, and the files after it are still read."""
    folder = _spotter_copy(tmp_path)
    broken = folder / SPOTTER_ID / "subagents" / "agent-0broken.jsonl"
    broken.write_bytes("{}\n".encode("utf-16"))
    # Named by the main file alone, the subagent files are found by the adapter.
    sessions_, diagnostics = read(folder / f"{SPOTTER_ID}.jsonl")
    assert {s.session_id for s in sessions_} == {SPOTTER_ID, f"{SPOTTER_ID}/a881341"}
    assert [(w.path, w.line, w.kind) for w in diagnostics.warnings] == [
        (str(broken), None, "unreadable")
    ]
    main, _ = _main_and_child(sessions_)
    assert main.compactions[0].request is not None


def test_subagent_files_in_nested_folders_belong_to_the_session(tmp_path: Path) -> None:
    """`<session>/subagents/**/agent-*.jsonl`: a subagent file one folder deeper is found."""
    folder = _spotter_copy(tmp_path)
    subagents = folder / SPOTTER_ID / "subagents"
    (subagents / "deeper").mkdir()
    (subagents / SUBAGENT.name).rename(subagents / "deeper" / SUBAGENT.name)
    _main, child = _main_and_child(read(folder / f"{SPOTTER_ID}.jsonl")[0])
    assert child is not None and child.parent_call_id == LAUNCHER


def test_a_compaction_request_file_alone_is_no_session() -> None:
    """agent-acompact-fffbd0.jsonl given without its session: it is the request of a
    compaction that is not there, not a session of its own."""
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.loader import load

    result = load([ACOMPACT], Diagnostics())
    assert (result.sessions, result.failures) == ([], [])


def test_a_stream_json_file_and_a_transcript_named_together(tmp_path: Path) -> None:
    """bg-tasks (stream-json) named before E4B (a transcript): both are read."""
    sessions_, _ = read(STREAM_BG, E4B)
    assert [s.session_id for s in sessions_] == [
        record(STREAM_BG, 3)["session_id"],
        record(E4B, 4)["sessionId"],
    ]


def test_a_sidechain_file_not_named_agent_is_still_a_subagent(tmp_path: Path) -> None:
    """codemie's agent-50243ee8.jsonl renamed `warmup.jsonl` beside its main file: its
    records are sidechains, so it is read with the main file, whose span it stretches
    (it starts at 19:37:37.157, 8 s before the main file's first record)."""
    main_file = LEGACY / f"{LEGACY_ID}.jsonl"
    (tmp_path / main_file.name).write_bytes(main_file.read_bytes())
    (tmp_path / "warmup.jsonl").write_bytes((LEGACY / "agent-50243ee8.jsonl").read_bytes())
    main, child = read(tmp_path)[0]
    assert child.session_id == f"{LEGACY_ID}/50243ee8"
    assert main.start_ns == child.start_ns == _ts("2025-12-10T19:37:37.157Z")


def test_the_sidecar_of_a_compressed_subagent_file(tmp_path: Path) -> None:
    """agent-a881341.jsonl gzipped (`agent-a881341.jsonl.gz`): its sidecar is still
    `agent-a881341.meta.json` (hand-made)."""
    import gzip

    folder = _spotter_copy(tmp_path)
    subagents = folder / SPOTTER_ID / "subagents"
    plain = subagents / SUBAGENT.name
    (subagents / f"{SUBAGENT.name}.gz").write_bytes(gzip.compress(plain.read_bytes()))
    plain.unlink()
    (subagents / "agent-a881341.meta.json").write_text(json.dumps({"toolUseId": "toolu_gz"}))
    _main, child = _main_and_child(read(folder / f"{SPOTTER_ID}.jsonl")[0])
    assert child is not None and child.parent_call_id == "toolu_gz"


def test_the_request_after_a_compaction_summary_starts_at_the_summary(tmp_path: Path) -> None:
    """E4B up to its compaction (the boundary, line 71; the summary record, line 72), then
    the next answer (line 80) with the user records between left out: that request was
    triggered by the summary record, so it starts at the summary's time, not at the answer's."""
    path = excerpt(tmp_path, E4B, [*range(1, 73), 80])
    (session,) = sessions(path)
    answer = record(E4B, 80)["message"]["id"]
    (response,) = [r for r in session.responses if r.id == answer]
    assert response.start_ns == _ts(record(E4B, 72)["timestamp"])
    assert response.start_ns < _ts(record(E4B, 80)["timestamp"])


def test_a_transcript_record_with_a_snake_case_session_id_is_still_a_transcript() -> None:
    """A transcript's first record also carrying `session_id` (hand-made: a hook's input
    copied in) is still a transcript: stream-json frames have `session_id` and never
    `sessionId`."""
    from agent_profiler.adapters.claude_code import is_stream_json

    first = record(E4B, 1)
    assert "sessionId" in first
    assert not is_stream_json([{**first, "session_id": first["sessionId"]}])
    assert is_stream_json([{"type": "system", "subtype": "init", "session_id": "s"}])
