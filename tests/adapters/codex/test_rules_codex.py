"""Every category rule of the Codex adapter, pinned on real rollout records (copies in
tests/data/journals/codex). Each test names the lines it uses and asserts the exact category,
label, size and estimate of every item they add. Tags with no example in the corpus swap the
text of a real record (line 6 of the 2026-05-11 rollout, "show tools")."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters import JournalGroup, codex
from agent_profiler.adapters.common import timestamp_ns
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.estimate import calibrated, use_estimator
from agent_profiler.jsonl import sniff
from agent_profiler.loader import load
from agent_profiler.model import Category, Harness, Session, SourceKind
from rules_spy import by_id, excerpt, raw_lines, record, sessions, spy, write
from samples import CLAUDE_SMALL, CODEX_SMALL
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "codex"
PLAIN = DATA / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz"
REDACTED = DATA / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl.gz"

SY, RU, SK, EN, OV, PR, AS, RE, UN, SU = (
    Category.SYSTEM,
    Category.RULES,
    Category.SKILLS,
    Category.ENVIRONMENT,
    Category.OVERHEAD,
    Category.PROMPTS,
    Category.ASSISTANT,
    Category.RESULTS,
    Category.UNATTRIBUTED,
    Category.SUMMARIES,
)


def _parts(path: Path, line: int) -> list[str]:
    return [part["text"] for part in record(path, line)["payload"]["content"]]


def _est(chars: int) -> int:
    return -(-chars // 4)


def test_base_instructions_are_system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = record(PLAIN, 1)["payload"]["base_instructions"]["text"]
    added = spy(monkeypatch)
    sessions(excerpt(tmp_path, PLAIN, [1]))
    got = by_id(added)["system:base_instructions"]
    assert (got.category, got.label, got.chars, got.tokens) == (
        SY,
        "Base instructions",
        len(text),
        _est(len(text)),
    )


def test_the_injected_context_blocks_of_a_real_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines 3 (developer: permissions, collaboration mode, skills, plugins), 4 (user role:
    AGENTS.md, environment context) and 6 (the typed prompt "show tools")."""
    added = spy(monkeypatch)
    sessions(excerpt(tmp_path, PLAIN, [1, 2, 3, 4, 5, 6, 7]))
    items = [a for a in added if a.id.startswith("item-")]
    texts = _parts(PLAIN, 3) + _parts(PLAIN, 4) + _parts(PLAIN, 6)
    assert [(a.category, a.label) for a in items] == [
        (EN, "Permissions"),
        (EN, "Collaboration mode"),
        (SK, "Skills listing"),
        (SK, "Plugins listing"),
        (RU, "AGENTS.md"),
        (EN, "Environment context"),
        (PR, "User prompt"),
    ]
    assert [(a.chars, a.tokens) for a in items] == [(len(t), _est(len(t))) for t in texts]
    assert [a.chars for a in items] == [9143, 996, 11881, 2347, 1162, 207, 10]
    assert [a.source_kind for a in items] == [SourceKind.NONE] * 6 + [SourceKind.PROMPT]


SWAPPED = [
    ("user", "<user_instructions>\nbe brief\n</user_instructions>", RU, "User instructions"),
    ("user", "<INSTRUCTIONS>\nrules\n</INSTRUCTIONS>", RU, "Instructions"),
    ("user", "<turn_aborted>\nby the user\n</turn_aborted>", OV, "Turn aborted"),
    ("user", "<user_shell_command>ls</user_shell_command>", EN, "Shell command"),
    ("user", "  \n<environment_context>x</environment_context>", EN, "Environment context"),
    ("developer", "You are in plan mode.", SY, "Developer instructions"),
    ("developer", "<skills_instructions>x", SK, "Skills listing"),
    ("assistant", "Here you go", AS, "Assistant text"),
    ("user", "why does <environment_context> appear?", PR, "User prompt"),
]


@pytest.mark.parametrize(("role", "text", "category", "label"), SWAPPED)
def test_every_message_rule(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    role: str,
    text: str,
    category: Category,
    label: str,
) -> None:
    meta = record(PLAIN, 1)
    meta["payload"].pop("base_instructions")
    message = record(PLAIN, 6)
    message["payload"]["role"] = role
    message["payload"]["content"] = [{"type": "input_text", "text": text}]
    added = spy(monkeypatch)
    sessions(write(tmp_path, [meta, message]))
    (got,) = added
    assert (got.category, got.label, got.chars, got.tokens) == (
        category,
        label,
        len(text),
        _est(len(text)),
    )
    expected_kind = (
        SourceKind.PROMPT
        if category is PR
        else SourceKind.RESPONSE
        if role == "assistant"
        else SourceKind.NONE
    )
    assert got.source_kind is expected_kind


def test_calls_results_reasoning_and_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines 6–17: the prompt, encrypted reasoning (sized from reasoning_output_tokens), an
    exec_command call, the token count, its output and the answer."""
    added = spy(monkeypatch)
    (session,) = sessions(excerpt(tmp_path, PLAIN, [1, 2, 5, 6, 7, 8, 9, 10, 11, 12, 16, 17]))
    items = by_id(added)
    call = record(PLAIN, 9)["payload"]
    got = items[f"call:{call['call_id']}"]
    assert (got.category, got.label, got.source_id, got.source_kind) == (
        AS,
        "Tool arguments",
        call["call_id"],
        SourceKind.TOOL,
    )
    assert got.chars == len("exec_command") + len(call["arguments"])
    output = record(PLAIN, 11)["payload"]
    got = items[f"result:{call['call_id']}"]
    assert (got.category, got.label, got.chars) == (RE, "Tool result", len(output["output"]))
    (answer,) = [a for a in added if a.id.startswith("item-assistant")]
    assert (answer.category, answer.label, answer.chars) == (AS, "Assistant text", 783)
    assert answer.source_kind is SourceKind.RESPONSE
    # line 8's encrypted reasoning: sized from line 10's reasoning_output_tokens (62)
    assert dict(session.unmeasured) == {}
    hidden = items["reasoning-hidden:2"]
    assert hidden.label == "Reasoning (encrypted) (estimate: reasoning-output-tokens)"
    assert session.estimate_methods == ("reasoning-output-tokens",)
    # Line 10: the request's size is last_token_usage.input_tokens (cached part included).
    (response,) = session.responses
    assert (response.usage.prompt_tokens, response.usage.output_tokens) == (18_703, 167)
    assert response.usage.reasoning_tokens == 62
    (tool,) = session.tool_calls
    assert (tool.name, tool.incomplete, tool.result_chars) == (
        "exec_command",
        False,
        len(output["output"]),
    )


def test_a_call_without_output_is_incomplete(tmp_path: Path) -> None:
    (session,) = sessions(excerpt(tmp_path, PLAIN, [1, 2, 5, 6, 7, 8, 9, 10]))
    (tool,) = session.tool_calls
    assert tool.incomplete is True
    assert tool.end_ns == session.end_ns


def test_a_custom_tool_output_is_unwrapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines 257/260: apply_patch's input is its argument; the output's JSON envelope
    `{"output": …, "metadata": {"exit_code": 0}}` is not what the model reads."""
    added = spy(monkeypatch)
    (session,) = sessions(excerpt(tmp_path, PLAIN, [1, 2, 5, 6, 7, 257, 260]))
    call = record(PLAIN, 257)["payload"]
    envelope = json.loads(record(PLAIN, 260)["payload"]["output"])
    items = by_id(added)
    got = items[f"call:{call['call_id']}"]
    assert (got.category, got.chars) == (AS, len("apply_patch") + len(call["input"]))
    got = items[f"result:{call['call_id']}"]
    assert (got.category, got.chars) == (RE, len(envelope["output"]))
    (tool,) = session.tool_calls
    assert (tool.name, tool.is_error, tool.incomplete) == ("apply_patch", False, False)


def test_a_web_search_is_a_result_of_its_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    added = spy(monkeypatch)
    sessions(excerpt(tmp_path, PLAIN, [1, 2, 5, 6, 7, 196, 197]))
    action = record(PLAIN, 197)["payload"]["action"]
    call_id = record(PLAIN, 196)["payload"]["call_id"]
    (got,) = [a for a in added if a.label == "Web search"]
    encoded = json.dumps(action, separators=(",", ":"), ensure_ascii=False)
    assert (got.category, got.chars, got.source_id, got.source_kind) == (
        RE,
        len(encoded),
        call_id,
        SourceKind.TOOL,
    )


def test_redacted_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The redacted rollout: a marker's stated length is the size; a user-role block is a
    prompt only when its sha is a user_message's, else it is unattributed."""
    added = spy(monkeypatch)
    sessions(excerpt(tmp_path, REDACTED, list(range(1, 17))))
    items = [a for a in added if a.id.startswith("item-")]
    by_line = [
        (2, SY, "Developer instructions", 3642),
        (3, SY, "Developer instructions", 6684),
        (4, UN, "Redacted user-role block", 3021),
        (5, UN, "Redacted user-role block", 112),
        (6, SY, "Developer instructions", 3679),
        (7, SY, "Developer instructions", 806),
    ]
    got = [(a.category, a.label, a.chars) for a in items[:6]]
    assert got == [(c, f"{lab} (length from a redaction marker)", n) for _, c, lab, n in by_line]
    reasoning = [a for a in added if a.label.startswith("Reasoning summary")]
    assert [(a.category, a.chars) for a in reasoning] == [(AS, 32)]


def test_a_redacted_prompt_known_by_its_sha(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 10's user_message has the sha of line 9's block: with the event first (as on
    replay of a compaction), the block is the user's prompt."""
    added = spy(monkeypatch)
    sessions(excerpt(tmp_path, REDACTED, [1, 10, 9]))
    (got,) = [a for a in added if a.id.startswith("item-user")]
    assert (got.category, got.label, got.chars) == (
        PR,
        "User prompt (length from a redaction marker)",
        32,
    )


def _compacted_line() -> int:
    lines = raw_lines(REDACTED)
    return next(n for n, text in enumerate(lines, 1) if '"type":"compacted"' in text)


def test_compaction_with_replacement_history(monkeypatch: pytest.MonkeyPatch) -> None:
    line = _compacted_line()
    history: list[dict[str, Any]] = record(REDACTED, line)["payload"]["replacement_history"]
    added = spy(monkeypatch)
    (session,) = sessions(REDACTED)
    (compaction,) = session.compactions
    replayed = [a for a in added if a.id.startswith("compaction-1-")]
    texts = [c for i in history for c in i.get("content") or [] if isinstance(c.get("text"), str)]
    assert len(replayed) == len(texts) == 47
    assert [a.chars for a in replayed] == [
        int(c["text"].split("len=")[1].split()[0]) for c in texts
    ]
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == compaction.id]
    categories = dict(snapshot.categories)
    # The history is what was replayed: no tool results; the assistant part is its messages.
    assert RE not in categories
    assert categories[AS] == sum(a.tokens for a in replayed if a.category is AS) == 9822
    # the base instructions stay; the developer messages are the history's 3, not the 40
    # from before the compaction (test_codex_context_truth.py)
    assert categories[SY] == 3_283 + 3_334
    before = [r for r in session.responses if r.end_ns <= compaction.end_ns]
    usage = before[-1].usage
    assert usage is not None
    assert compaction.pre_tokens == usage.prompt_tokens
    assert compaction.start_ns == before[-1].end_ns


def test_compaction_with_only_a_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Older builds: `compacted` holds only the message; rules, prompts and environment stay."""
    compacted = {
        "timestamp": record(PLAIN, 17)["timestamp"],
        "type": "compacted",
        "payload": {"message": "Summary of the work so far"},
    }
    lines = [record(PLAIN, n) for n in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 17)]
    added = spy(monkeypatch)
    (session,) = sessions(write(tmp_path, [*lines, compacted]))
    (got,) = [a for a in added if a.id == "summary:compaction-1"]
    assert (got.category, got.label, got.chars) == (SU, "Compaction summary", 26)
    (compaction,) = session.compactions
    assert compaction.pre_tokens == 18_703
    # the call, its output, the answer and the turn's encrypted reasoning
    assert compaction.removed_items == 4
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == compaction.id]
    assert AS not in dict(snapshot.categories)
    assert {SY, RU, SK, EN, PR, SU} <= set(dict(snapshot.categories))


# -- the session's identity, from session_meta and turn_context -------------------------------


def _ns(iso: str) -> int:
    value = timestamp_ns(iso)
    assert value is not None
    return value


def _meta(**changes: Any) -> dict[str, Any]:
    """Line 1 of the 2026-05-11 rollout without its 21k-character base instructions."""
    meta = record(PLAIN, 1)
    meta["payload"].pop("base_instructions")
    meta["payload"].update(changes)
    return {**meta, "payload": {k: v for k, v in meta["payload"].items() if v is not None}}


def test_every_prompt_of_a_subagent_rollout_is_the_agent_s(tmp_path: Path) -> None:
    """A subagent rollout (line 1 edited to a `thread_spawn` child) with two turns of the
    2026-05-11 rollout: the second user message is the parent's follow-up (`send_input`),
    not a user's: both prompts are the agent's. The same turns in a main rollout are the
    user's."""
    turns = [record(PLAIN, n) for n in (6, 7, 17, 19, 20, 22, 23)]
    spawn = {"subagent": {"thread_spawn": {"depth": 1, "parent_thread_id": "p-1"}}}
    child = write(tmp_path, [_meta(source=spawn), *turns], name="rollout-child.jsonl")
    main = write(tmp_path, [_meta(), *turns], name="rollout-main.jsonl")
    (session,) = sessions(child)
    assert session.parent_session == "p-1"
    assert [p.source for p in session.prompts] == ["agent", "agent"]
    assert [p.source for p in sessions(main)[0].prompts] == ["user", "user"]


def _load(path: Path) -> tuple[list[Session], Diagnostics]:
    diagnostics = Diagnostics()
    result = load([path], diagnostics)
    assert result.failures == [], result.failures
    return list(result.sessions), diagnostics


def test_a_sessions_identity_is_its_first_session_meta(tmp_path: Path) -> None:
    """Line 1, then a second session_meta naming another thread, folder, version and
    provider (as a resumed rollout may): the first one names the session."""
    second = _meta(
        id="019e0000-0000-0000-0000-000000000000",
        cwd="/elsewhere",
        cli_version="9.9.9",
        originator="codex_exec",
        model_provider="azure",
        source=None,
    )
    path = write(tmp_path, [_meta(), second, record(PLAIN, 5), record(PLAIN, 6)])
    (session,) = sessions(path)
    assert session.sources == (str(path),)
    assert (session.session_id, session.project, session.harness_version, session.provider) == (
        "019e1625-789d-76c0-80ab-3724b5ddb799",
        "codemie-code",  # the folder's name: full paths are private unless asked for
        "0.125.0",
        "openai",
    )
    assert session.facts == (("source", "cli"), ("originator", "codex-tui"), ("effort", "medium"))
    assert session.models == ("gpt-5.5",)
    assert (session.parent_session, session.child_role) == (None, None)


def test_a_repeated_session_meta_states_its_source_once(tmp_path: Path) -> None:
    """Line 1 twice (a resumed rollout writes its session_meta again): one `source` fact."""
    path = write(tmp_path, [_meta(), _meta(), record(PLAIN, 5), record(PLAIN, 6)])
    (session,) = sessions(path)
    assert [value for key, value in session.facts if key == "source"] == ["cli"]


def test_a_rollout_without_ids_is_named_by_its_file(tmp_path: Path) -> None:
    """A session_meta without id, folder, version, originator or provider (an edited line 1):
    the file's stem names the session, the provider is OpenAI's, and no window is claimed."""
    meta = _meta(id=None, cwd=None, cli_version=None, originator=None, model_provider=None)
    path = write(tmp_path, [meta, record(PLAIN, 6)], name="rollout-x.jsonl")
    (session,) = sessions(path)
    assert (session.session_id, session.provider, session.project) == ("rollout-x", "openai", None)
    assert (session.harness_version, session.window_tokens, session.window_source) == (
        None,
        None,
        None,
    )
    assert session.facts == (("source", "cli"),)


SPAWNS = [
    ({"parent_thread_id": "p-1", "agent_role": "worker"}, "p-1", "worker"),
    ({"parent_thread_id": "p-1", "agent_nickname": "Ada"}, "p-1", "Ada"),
    (
        {"parent_thread_id": "p-1", "agent_role": "explorer", "agent_nickname": "Ada"},
        "p-1",
        "explorer",
    ),
    ({"parent_thread_id": "p-1"}, "p-1", "subagent"),
    ({"parent_thread_id": "p-1", "agent_role": 7}, "p-1", "subagent"),
    ({"agent_role": "worker"}, None, None),
    ({"parent_thread_id": 42, "agent_role": "worker"}, None, None),
]


@pytest.mark.parametrize(("spawn", "parent", "role"), SPAWNS)
def test_a_subagent_rollout_names_its_parent_and_role(
    tmp_path: Path, spawn: dict[str, Any], parent: str | None, role: str | None
) -> None:
    """Line 1 with a subagent `source` (FORMATS §3.6; the corpus has no subagent rollout):
    the parent thread and the role (or nickname) come from `thread_spawn`. The first prompt
    of a subagent is its task, from the agent."""
    meta = _meta(source={"subagent": {"thread_spawn": {"depth": 1, **spawn}}})
    (session,) = sessions(write(tmp_path, [meta, record(PLAIN, 6), record(PLAIN, 7)]))
    assert (session.parent_session, session.child_role) == (parent, role)
    assert session.facts == (("originator", "codex-tui"),)
    assert [p.source for p in session.prompts] == ["agent" if parent else "user"]


def test_a_source_that_is_not_a_spawn_is_not_a_subagent(tmp_path: Path) -> None:
    """`source: {"subagent": "review"}` (a review subagent, no thread_spawn): no parent."""
    meta = _meta(source={"subagent": "review"})
    (session,) = sessions(write(tmp_path, [meta, record(PLAIN, 6)]))
    assert (session.parent_session, session.child_role) == (None, None)
    assert session.facts == (("originator", "codex-tui"),)


def test_the_instructions_of_older_builds_are_the_system_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before `base_instructions`, session_meta held `instructions` (a string); an empty one
    adds nothing. With both, `base_instructions.text` is the prompt."""
    added = spy(monkeypatch)
    sessions(write(tmp_path, [_meta(instructions="You are Codex."), record(PLAIN, 6)], "a.jsonl"))
    sessions(write(tmp_path, [_meta(instructions=""), record(PLAIN, 6)], "b.jsonl"))
    both = _meta(instructions="old", base_instructions={"text": "new text"})
    sessions(write(tmp_path, [both, record(PLAIN, 6)], "c.jsonl"))
    system = [(a.id, a.chars, a.label) for a in added if a.category is SY]
    assert system == [
        ("system:base_instructions", 14, "Base instructions"),
        ("system:base_instructions", 8, "Base instructions"),
    ]


def test_models_and_effort_come_from_turn_context(tmp_path: Path) -> None:
    """Line 5 (gpt-5.5, effort medium), then the same with another model, then an empty model
    and a turn without `effort` whose collaboration mode says `xhigh`: models are listed once
    each in order, an empty one is ignored, and the last effort wins. Each request is
    answered by the model of its turn."""
    turn = record(PLAIN, 5)
    other = json.loads(json.dumps(turn))
    other["payload"]["model"] = "gpt-5.5-mini"
    blank = json.loads(json.dumps(turn))
    blank["payload"]["model"] = ""
    blank["payload"].pop("effort")
    blank["payload"]["collaboration_mode"]["settings"]["reasoning_effort"] = "xhigh"
    lines = [_meta(), turn, record(PLAIN, 6), record(PLAIN, 7), record(PLAIN, 9)]
    lines += [record(PLAIN, 10), other, turn, blank, record(PLAIN, 13), record(PLAIN, 14)]
    (session,) = sessions(write(tmp_path, lines))
    assert session.models == ("gpt-5.5", "gpt-5.5-mini")
    assert [r.model for r in session.responses] == ["gpt-5.5", "gpt-5.5"]
    assert dict(session.facts)["effort"] == "xhigh"


def test_a_turns_own_effort_wins_over_its_collaboration_mode(tmp_path: Path) -> None:
    """Line 5 with `effort: high` while its collaboration mode says medium (edited)."""
    turn = record(PLAIN, 5)
    turn["payload"]["effort"] = "high"
    (session,) = sessions(write(tmp_path, [_meta(), turn, record(PLAIN, 6)]))
    assert dict(session.facts)["effort"] == "high"


def test_an_effort_that_is_not_text_is_not_a_fact(tmp_path: Path) -> None:
    turn = record(PLAIN, 5)
    turn["payload"]["effort"] = None
    turn["payload"]["collaboration_mode"] = {"mode": "default", "settings": "high"}
    (session,) = sessions(write(tmp_path, [_meta(), turn, record(PLAIN, 6)]))
    assert "effort" not in dict(session.facts)


# -- requests: one per token_count, starting at the input that triggered it -------------------

TURN = [1, 2, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]  # the first turn, whole


def _time(line: int) -> int:
    return _ns(record(PLAIN, line)["timestamp"])


def test_each_request_starts_at_the_input_that_triggered_it(tmp_path: Path) -> None:
    """The first turn (lines 1–18): request 1 starts at the user_message (line 7), request 2
    at the output of the call before it (line 11), request 3 at the output on line 15; each
    ends at its token_count, with that record's last_token_usage as its usage."""
    (session,) = sessions(excerpt(tmp_path, PLAIN, TURN))
    got = [(r.id, r.start_ns, r.end_ns, r.prompt_id, r.model) for r in session.responses]
    assert got == [
        ("request-1", _time(7), _time(10), "turn-1", "gpt-5.5"),
        ("request-2", _time(11), _time(14), "turn-1", "gpt-5.5"),
        ("request-3", _time(15), _time(18), "turn-1", "gpt-5.5"),
    ]
    usage = session.responses[1].usage
    assert (usage.prompt_tokens, usage.input_tokens, usage.output_tokens) == (18911, 18911, 37)
    assert (usage.cache_read_tokens, usage.cache_write_tokens, usage.reasoning_tokens) == (
        18304,
        0,
        0,
    )
    (prompt,) = session.prompts
    assert (prompt.id, prompt.start_ns, prompt.end_ns, prompt.chars, prompt.preview) == (
        "turn-1",
        _time(7),
        _time(18),
        10,
        "show tools",
    )
    assert (session.start_ns, session.end_ns) == (_time(1), _time(18))
    assert (session.window_tokens, session.window_source) == (258_400, "journal")
    assert session.incomplete is False
    requests = [s for s in session.snapshots if s.anchor_id.startswith("request")]
    assert [(s.anchor_id, s.time_ns, s.model, s.reported_tokens) for s in requests] == [
        ("request-1", _time(7), "gpt-5.5", 18_703),
        ("request-2", _time(11), "gpt-5.5", 18_911),
        ("request-3", _time(15), "gpt-5.5", 20_292),
    ]


def test_a_request_before_any_turn_context_names_no_model(tmp_path: Path) -> None:
    (session,) = sessions(excerpt(tmp_path, PLAIN, [1, 6, 7, 9, 10]))
    (response,) = session.responses
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == "request-1"]
    assert (response.model, snapshot.model, session.models) == ("", None, ())


def test_a_requests_snapshot_is_the_context_before_its_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Request 3 of the first turn (line 17's answer, line 18's token count): its snapshot is
    what the model was sent, the two calls and their results, not the answer it wrote."""
    added = spy(monkeypatch)
    (session,) = sessions(excerpt(tmp_path, PLAIN, TURN))
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == "request-3"]
    sent = [a for a in added if a.category is AS and not a.id.startswith("item-assistant")]
    assert [a.id for a in sent] == [
        "reasoning-hidden:2",  # line 8's encrypted reasoning: request 1's 62 reasoning tokens
        *(f"call:{record(PLAIN, n)['payload']['call_id']}" for n in (9, 13)),
    ]
    assert dict(snapshot.categories)[AS] == sum(a.tokens for a in sent) + 62


def test_a_request_without_new_input_starts_where_the_last_one_ended(tmp_path: Path) -> None:
    """Lines 1–10, then line 13's call and line 14's token count without line 11's output
    between them (edited): the second request starts where the first ended (line 10)."""
    (session,) = sessions(excerpt(tmp_path, PLAIN, [1, 5, 6, 7, 8, 9, 10, 13, 14]))
    assert [(r.start_ns, r.end_ns) for r in session.responses] == [
        (_time(7), _time(10)),
        (_time(10), _time(14)),
    ]


def test_a_trigger_after_the_output_began_is_not_the_start(tmp_path: Path) -> None:
    """Line 6's prompt dated 44 ms after the reasoning that answers it (line 8; the clock
    allows small steps back): the request starts at its first output item, not after it."""
    late = record(PLAIN, 6)
    late["timestamp"] = "2026-05-11T08:27:21.600Z"
    lines = [record(PLAIN, 1), record(PLAIN, 5), late] + [record(PLAIN, n) for n in (8, 9, 10)]
    (session,) = sessions(write(tmp_path, lines))
    (response,) = session.responses
    assert (response.start_ns, response.end_ns) == (_time(8), _time(10))


def test_without_a_prompt_event_the_users_message_is_the_trigger(tmp_path: Path) -> None:
    """Lines 1, 5, 6, 8, 9, 10 (no user_message event, as in older builds): the request
    starts at line 6's message; a developer message after it (line 3, dated between 6 and
    8) is context, not the input that triggered the request."""
    developer = {**record(PLAIN, 3), "timestamp": "2026-05-11T08:27:20.000Z"}
    lines = [record(PLAIN, n) for n in (1, 5, 6)] + [developer]
    lines += [record(PLAIN, n) for n in (8, 9, 10)]
    (session,) = sessions(write(tmp_path, lines))
    assert [(r.start_ns, r.end_ns) for r in session.responses] == [(_time(6), _time(10))]


def test_the_cache_write_part_of_a_usage_is_read(tmp_path: Path) -> None:
    """Line 10 with `cache_write_input_tokens` (newer builds; not in the corpus)."""
    count = record(PLAIN, 10)
    count["payload"]["info"]["last_token_usage"]["cache_write_input_tokens"] = 512
    (session,) = sessions(write(tmp_path, [record(PLAIN, n) for n in (1, 6, 9)] + [count]))
    (response,) = session.responses
    assert (response.usage.cache_write_tokens, response.usage.reasoning_tokens) == (512, 62)


def test_token_counts_that_are_not_requests(tmp_path: Path) -> None:
    """Desktop line 12 (`info: null`, rate limits only), a repeat of line 10 (same
    total_token_usage), an all-zero usage (remote compaction) and one without
    last_token_usage (warned about with its line): only line 10 is a request."""
    zero = record(PLAIN, 14)
    zero["payload"]["info"]["last_token_usage"] = dict.fromkeys(
        zero["payload"]["info"]["last_token_usage"], 0
    )
    broken = record(PLAIN, 18)
    broken["payload"]["info"].pop("last_token_usage")
    null = {**record(REDACTED, 12), "timestamp": record(PLAIN, 10)["timestamp"]}
    lines = [record(PLAIN, n) for n in (1, 5, 6, 7, 9)]
    lines += [null, record(PLAIN, 10), record(PLAIN, 10), zero, broken]
    path = write(tmp_path, lines)
    (session,), diagnostics = _load(path)
    assert [r.usage.prompt_tokens for r in session.responses] == [18_703]
    assert [(w.path, w.line, w.kind, w.message) for w in diagnostics.warnings] == [
        (str(path), 10, "bad-shape", "token_count without last_token_usage")
    ]


def test_a_request_without_output_is_still_a_request(tmp_path: Path) -> None:
    """Line 10 with `output_tokens: 0` (an answer cut off before its first token)."""
    count = record(PLAIN, 10)
    count["payload"]["info"]["last_token_usage"]["output_tokens"] = 0
    (session,) = sessions(write(tmp_path, [record(PLAIN, n) for n in (1, 6, 9)] + [count]))
    (response,) = session.responses
    assert (response.usage.prompt_tokens, response.usage.output_tokens) == (18_703, 0)


def test_a_token_count_without_totals_is_never_a_repeat(tmp_path: Path) -> None:
    """Line 10 twice without `total_token_usage`: nothing tells a repeat, so both count."""
    count = record(PLAIN, 10)
    count["payload"]["info"].pop("total_token_usage")
    lines = [record(PLAIN, n) for n in (1, 6, 9)] + [count, record(PLAIN, 13), count]
    (session,) = sessions(write(tmp_path, lines))
    assert [r.usage.prompt_tokens for r in session.responses] == [18_703, 18_703]


def test_a_repeat_is_the_same_totals_in_any_key_order(tmp_path: Path) -> None:
    """Line 10 again with its total_token_usage's keys in another order is its repeat;
    with the same counts under another key (`total_tokens` named otherwise) it is not: a
    repeat is the same totals, compared as a dict, not the same list of numbers."""
    count = record(PLAIN, 10)
    totals = count["payload"]["info"]["total_token_usage"]
    reordered = record(PLAIN, 10)
    reordered["payload"]["info"]["total_token_usage"] = dict(reversed(totals.items()))
    renamed = record(PLAIN, 10)
    renamed["payload"]["info"]["total_token_usage"] = {
        ("tokens_total" if key == "total_tokens" else key): value for key, value in totals.items()
    }
    lines = [record(PLAIN, n) for n in (1, 6, 9)] + [count, reordered, renamed]
    (session,) = sessions(write(tmp_path, lines))
    assert [r.usage.prompt_tokens for r in session.responses] == [18_703, 18_703]


def test_counts_that_are_no_token_counts_are_read_as_zero(tmp_path: Path) -> None:
    """Line 10 with null cached counts and a string reasoning count: its usage reads both
    as 0 (the string warned about); again with a 0 for the null total is its repeat (the
    same counts, once read); with the total's output as 167.0 (no token count: 0) it is
    not, and is a second request (of 20,000 tokens), warned about too."""
    nulls = record(PLAIN, 10)
    info = nulls["payload"]["info"]
    info["last_token_usage"] |= {"cached_input_tokens": None, "reasoning_output_tokens": "62"}
    info["total_token_usage"]["cached_input_tokens"] = None
    zero = record(PLAIN, 10)
    zero["payload"]["info"]["last_token_usage"]["cached_input_tokens"] = None
    fraction = record(PLAIN, 10)
    fraction["payload"]["info"]["total_token_usage"]["output_tokens"] = 167.0
    fraction["payload"]["info"]["last_token_usage"]["input_tokens"] = 20_000
    lines = [record(PLAIN, n) for n in (1, 6, 9)] + [nulls, zero, record(PLAIN, 13), fraction]
    (session,), diagnostics = _load(write(tmp_path, lines))
    assert [
        (u.prompt_tokens, u.output_tokens, u.cache_read_tokens, u.reasoning_tokens)
        for u in (r.usage for r in session.responses)
    ] == [(18_703, 167, 0, 0), (20_000, 167, 0, 62)]
    assert diagnostics.warning_counts["bad-usage"] == 2


@pytest.mark.parametrize("usage", ["last_token_usage", "total_token_usage"])
@pytest.mark.parametrize("count", [-5, True, 10**15, 10**15 - 1])
def test_a_count_at_the_edge_of_a_token_count_takes_the_checked_path(
    tmp_path: Path, usage: str, count: object
) -> None:
    """Line 10 with its reasoning count (62) replaced, in its last or its total usage, by a
    count just outside what a token count is (negative, a bool, the limit 10**15) or just
    inside it (10**15 - 1): the edges of `on_token_count`'s test of all counts at once.
    Outside, the count is read as 0 and warned about (`bad-usage`), as `token_count` reads
    it; inside, it is the count and no warning."""
    line = record(PLAIN, 10)
    line["payload"]["info"][usage]["reasoning_output_tokens"] = count
    (session,), diagnostics = _load(write(tmp_path, [record(PLAIN, n) for n in (1, 6, 9)] + [line]))
    (response,) = session.responses
    valid = count == 10**15 - 1
    expected = 62 if usage == "total_token_usage" else count if valid else 0
    assert response.usage.reasoning_tokens == expected
    assert type(response.usage.reasoning_tokens) is int
    assert (response.usage.prompt_tokens, response.usage.output_tokens) == (18_703, 167)
    assert diagnostics.warning_counts["bad-usage"] == (0 if valid else 1)


@pytest.mark.parametrize("damaged", [False, True])
def test_counts_not_given_in_the_last_usage_are_0(tmp_path: Path, damaged: bool) -> None:
    """Line 10 whose last usage gives only its output (and, damaged, a string reasoning
    count: the checked path): the prompt, cache and reasoning counts it leaves out are 0,
    ints, on both paths of `on_token_count`; the request is made (it has an output)."""
    line = record(PLAIN, 10)
    last = line["payload"]["info"]["last_token_usage"] = {"output_tokens": 167}
    if damaged:
        last["reasoning_output_tokens"] = "62"
    (session,), diagnostics = _load(write(tmp_path, [record(PLAIN, n) for n in (1, 6, 9)] + [line]))
    (response,) = session.responses
    usage = response.usage
    got = (usage.prompt_tokens, usage.input_tokens, usage.cache_read_tokens)
    got += (usage.cache_write_tokens, usage.reasoning_tokens, usage.output_tokens)
    assert got == (0, 0, 0, 0, 0, 167)
    assert all(type(n) is int for n in got)
    assert diagnostics.warning_counts["bad-usage"] == int(damaged)


def test_each_request_has_the_window_reported_with_it(tmp_path: Path) -> None:
    """task_started (line 2) says 258,400: the first request's window; a later token_count
    saying 400,000 is the window from that request on (a model switch changes the window,
    issue 28) and the session's last one; a window of 0 changes nothing."""
    count = record(PLAIN, 14)
    count["payload"]["info"]["model_context_window"] = 400_000
    started = record(PLAIN, 20)
    started["payload"]["model_context_window"] = 0
    zero = record(PLAIN, 18)
    zero["payload"]["info"]["model_context_window"] = 0
    lines = [record(PLAIN, n) for n in (1, 2, 6, 9, 10, 13)] + [count, started, zero]
    (session,) = sessions(write(tmp_path, lines))
    assert session.window_tokens == 400_000
    windows = [s.window_tokens for s in session.snapshots if s.anchor_id.startswith("request")]
    assert windows == [258_400, 400_000, 400_000]
    (only_started,) = sessions(excerpt(tmp_path, PLAIN, [1, 2, 6], "started.jsonl"))
    assert (only_started.window_tokens, only_started.window_source) == (258_400, "journal")


def test_output_without_usage_leaves_the_session_incomplete(tmp_path: Path) -> None:
    """Lines 1–9: the reasoning and the call began a request, no token_count came."""
    (session,) = sessions(excerpt(tmp_path, PLAIN, [1, 2, 5, 6, 7, 8, 9]))
    assert (session.responses, session.incomplete) == ((), True)
    assert session.snapshots == ()  # a request never sized is no context observation
    (tool,) = session.tool_calls
    assert (tool.response_id, tool.incomplete) == (None, True)


# -- tool calls and their results -------------------------------------------------------------


def test_a_tool_call_lasts_its_measured_execution(tmp_path: Path) -> None:
    """Lines 9–15: exec_command (line 9) returned its first output after 1 s (line 11), but
    exec_command_end (line 12) says it ran 5.087741459 s; write_stdin (line 13) has no end
    record and lasts until its output (line 15)."""
    (session,) = sessions(excerpt(tmp_path, PLAIN, TURN))
    first, second = session.tool_calls
    call = record(PLAIN, 9)["payload"]
    assert (first.call_id, first.name, first.start_ns, first.end_ns) == (
        call["call_id"],
        "exec_command",
        _time(9),
        _time(9) + 5_087_741_459,
    )
    assert (first.response_id, first.prompt_id, first.is_error, first.incomplete) == (
        "request-1",
        "turn-1",
        False,
        False,
    )
    assert first.timing == "journal: call record + exec_command_end duration"
    assert first.arg_keys == tuple(json.loads(call["arguments"]))
    assert first.result_chars == len(record(PLAIN, 11)["payload"]["output"])
    assert (second.name, second.start_ns, second.end_ns, second.timing) == (
        "write_stdin",
        _time(13),
        _time(15),
        "",
    )
    assert (second.response_id, second.result_chars) == (
        "request-2",
        len(record(PLAIN, 15)["payload"]["output"]),
    )


def test_a_measured_duration_never_outlasts_the_session(tmp_path: Path) -> None:
    """Line 12 with a 3-hour duration: the call ends with the session (line 12's time)."""
    end = record(PLAIN, 12)
    end["payload"]["duration"] = {"secs": 3 * 3600, "nanos": 0}
    lines = [record(PLAIN, n) for n in (1, 6, 9, 10, 11)] + [end]
    (session,) = sessions(write(tmp_path, lines))
    (tool,) = session.tool_calls
    assert (tool.start_ns, tool.end_ns) == (_time(9), _time(12))


EXITS = [
    ("Process exited with code 0", None, False),
    ("Process exited with code 1", None, True),
    ("Process exited with code -9", None, True),
    ("Process exited with code 0", 2, True),  # exec_command_end's exit code wins
    ("Process exited with code 3", 0, False),
    ("Process exited with code 0", True, False),  # a boolean is not an exit code
    ("Process running with session ID 48230", None, False),
]


@pytest.mark.parametrize(("said", "code", "error"), EXITS)
def test_a_commands_exit_code_says_whether_it_failed(
    tmp_path: Path, said: str, code: object, error: bool
) -> None:
    """Line 15's output says how the command exited (in its first 400 characters); a
    following exec_command_end (line 12, edited) with an integer exit code says it too."""
    output = record(PLAIN, 15)
    output["payload"]["output"] = output["payload"]["output"].replace(
        "Process exited with code 0", said
    )
    lines = [record(PLAIN, n) for n in (1, 6, 13, 14)] + [output]
    if code is not None:
        end = record(PLAIN, 12)
        end["payload"].update(call_id=output["payload"]["call_id"], exit_code=code)
        lines.append(end)
    (session,) = sessions(write(tmp_path, lines))
    (tool,) = session.tool_calls
    assert tool.is_error is error


@pytest.mark.parametrize(("padding", "error"), [(374, True), (375, False)])
def test_an_exit_code_is_read_from_the_first_400_characters(
    tmp_path: Path, padding: int, error: bool
) -> None:
    """Line 15's output with the exit line pushed down: a code whose digit is the 400th
    character is read; one character later it is not (the rest is the command's output)."""
    output = record(PLAIN, 15)
    output["payload"]["output"] = "x" * padding + "Process exited with code 1\n"
    lines = [record(PLAIN, n) for n in (1, 6, 13, 14)] + [output]
    (session,) = sessions(write(tmp_path, lines))
    assert session.tool_calls[0].is_error is error


ENVELOPES = [
    ({"output": "done", "metadata": {"exit_code": 0}}, 4, False),
    ({"output": "boom", "metadata": {"exit_code": 1}}, 4, True),
    ({"output": "boom", "metadata": {"exit_code": True}}, 4, False),
    ({"output": "boom", "metadata": "exit 1"}, 4, False),
    ({"output": ["not", "text"], "metadata": {"exit_code": 1}}, None, True),
]


@pytest.mark.parametrize(("envelope", "chars", "error"), ENVELOPES)
def test_the_json_envelope_of_an_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, envelope: Any, chars: int | None, error: bool
) -> None:
    """Line 260 (apply_patch's output, `{"output": …, "metadata": {"exit_code": 0}}`) with
    other contents: the model reads the inner text; an inner value that is not text leaves
    the envelope as it is; only an integer exit code says the call failed."""
    output = record(PLAIN, 260)
    output["payload"]["output"] = json.dumps(envelope, separators=(",", ":"))
    lines = [record(PLAIN, n) for n in (1, 6, 257)] + [output]
    added = spy(monkeypatch)
    (session,) = sessions(write(tmp_path, lines))
    (result,) = [a for a in added if a.id.startswith("result:")]
    assert result.chars == (len(output["payload"]["output"]) if chars is None else chars)
    assert session.tool_calls[0].is_error is error


def test_an_output_that_only_looks_like_an_envelope_is_read_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 260's output cut short (not JSON) and a JSON list: measured whole, no exit code."""
    cut = record(PLAIN, 260)
    text = cut["payload"]["output"][:40]
    cut["payload"]["output"] = text
    lines = [record(PLAIN, n) for n in (1, 6, 257)] + [cut]
    added = spy(monkeypatch)
    (session,) = sessions(write(tmp_path, lines))
    (result,) = [a for a in added if a.id.startswith("result:")]
    assert (result.chars, session.tool_calls[0].is_error) == (40, False)


OUTPUTS = [
    ({"content": "plain content"}, 13),
    (
        [
            {"type": "input_text", "text": "ab"},
            {"type": "input_image", "image_url": "x"},
            "z",
            {"type": "input_text", "text": "cd"},
        ],
        4,
    ),
    (None, 0),
]


@pytest.mark.parametrize(("output", "chars"), OUTPUTS)
def test_an_output_that_is_not_a_string_is_measured_by_its_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output: Any, chars: int
) -> None:
    """Line 11 with a structured output (`{"content": "…"}`, or a list of content parts as
    newer builds write for images): its text parts are what the model reads; a result
    without text is still a result, of 0 characters."""
    result = record(PLAIN, 11)
    result["payload"]["output"] = output
    added = spy(monkeypatch)
    (session,) = sessions(write(tmp_path, [record(PLAIN, n) for n in (1, 6, 9, 10)] + [result]))
    (got,) = [a for a in added if a.id.startswith("result:")]
    assert (got.id, got.category, got.label, got.chars) == (
        f"result:{result['payload']['call_id']}",
        RE,
        "Tool result",
        chars,
    )
    assert (session.tool_calls[0].result_chars, session.tool_calls[0].incomplete) == (chars, False)


def test_calls_and_results_without_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Line 9 without call_id and line 11 without call_id (damaged records): each still
    enters the context under an id of its own, and the result, whose call is unknown, ends
    no call (a note says so)."""
    call = record(PLAIN, 9)
    call["payload"].pop("call_id")
    output = record(PLAIN, 11)
    output["payload"].pop("call_id")
    added = spy(monkeypatch)
    lines = [record(PLAIN, n) for n in (1, 6)] + [call, record(PLAIN, 10), output]
    (session,), diagnostics = _load(write(tmp_path, lines))
    ids = [a.id for a in added if a.category in (AS, RE)]
    assert ids == ["call:call:2", "result:output:3"]
    (tool,) = session.tool_calls
    assert (tool.call_id, tool.incomplete) == ("call:2", True)
    assert dict(diagnostics.notes) == {"codex:output-without-call": 1}


def test_a_local_shell_call_is_named_by_its_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 9 as a `local_shell_call` (older builds: no name, `id` for the call id, an
    `action` for the arguments; FORMATS §3.4): it is a tool call named `local_shell_call`."""
    call = record(PLAIN, 9)
    action = {"type": "exec", "command": ["ls", "-la"]}
    call["payload"] = {
        "type": "local_shell_call",
        "id": "ls_1",
        "status": "completed",
        "action": action,
    }
    output = record(PLAIN, 11)
    output["payload"].update(type="local_shell_call_output", call_id="ls_1")
    added = spy(monkeypatch)
    lines = [record(PLAIN, n) for n in (1, 6)] + [call, record(PLAIN, 10), output]
    (session,) = sessions(write(tmp_path, lines))
    (tool,) = session.tool_calls
    assert (tool.call_id, tool.name, tool.arg_keys, tool.incomplete) == (
        "ls_1",
        "local_shell_call",
        ("type", "command"),
        False,
    )
    text = "local_shell_call" + json.dumps(action, separators=(",", ":"))
    assert by_id(added)["call:ls_1"].chars == len(text)
    assert by_id(added)["result:ls_1"].chars == len(output["payload"]["output"])


def test_a_repeated_call_is_one_tool_call(tmp_path: Path) -> None:
    """Line 9 twice (a resumed rollout repeats it): one call, started by the first."""
    repeat = {**record(PLAIN, 9), "timestamp": record(PLAIN, 10)["timestamp"]}
    lines = [record(PLAIN, n) for n in (1, 6, 9)] + [repeat, record(PLAIN, 10), record(PLAIN, 11)]
    (session,) = sessions(write(tmp_path, lines))
    (tool,) = session.tool_calls
    assert (tool.start_ns, tool.end_ns) == (_time(9), _time(11))


def test_a_result_dated_before_its_call_ends_at_the_calls_start(tmp_path: Path) -> None:
    early = {**record(PLAIN, 11), "timestamp": "2026-05-11T08:27:22.000Z"}
    (session,) = sessions(write(tmp_path, [record(PLAIN, n) for n in (1, 6, 9, 10)] + [early]))
    (tool,) = session.tool_calls
    assert (tool.start_ns, tool.end_ns, tool.incomplete) == (_time(9), _time(9), False)
    # the session ends at its latest record (line 10), not at its last one
    assert session.end_ns == _time(10)


def test_a_failed_patch_is_an_error(tmp_path: Path) -> None:
    """Line 259's patch_apply_end says `success: false` (edited; the corpus's patches all
    applied); a `success` that is not a boolean says nothing."""
    failed = record(PLAIN, 259)
    failed["payload"]["success"] = False
    unsure = {**record(PLAIN, 259), "payload": {**record(PLAIN, 259)["payload"], "success": "no"}}
    lines = [record(PLAIN, n) for n in (1, 6, 257)]
    (bad,) = sessions(write(tmp_path, [*lines, failed], "bad.jsonl"))
    (odd,) = sessions(write(tmp_path, [*lines, unsure], "odd.jsonl"))
    assert (bad.tool_calls[0].is_error, odd.tool_calls[0].is_error) == (True, False)


def test_end_records_of_unknown_calls_change_nothing(tmp_path: Path) -> None:
    """exec_command_end (line 12) and patch_apply_end (line 259) naming calls this rollout
    does not have: ignored."""
    end = record(PLAIN, 12)
    end["payload"]["exit_code"] = 1
    lines = [record(PLAIN, n) for n in (1, 6, 13, 14, 15)] + [end, record(PLAIN, 259)]
    (session,) = sessions(write(tmp_path, lines))
    (tool,) = session.tool_calls
    assert (tool.name, tool.is_error, tool.timing, tool.end_ns) == (
        "write_stdin",
        False,
        "",
        _time(15),
    )


# -- what the model does not see, and records that are not what they should be ----------------


def test_records_the_model_does_not_see_are_skipped_by_kind(tmp_path: Path) -> None:
    """A real UI event (agent_message line 16; task_complete line 19 is read, a turn's
    end), a newer line type Codex writes beside the history (`world_state`), a response
    item this reader does not know (`ghost_snapshot`) and context_compacted (whose facts
    are on the `compacted` line):
    each is counted as skipped on purpose under its kind, context_compacted not at all; an
    unknown line type between them is counted as not recognised and reading goes on."""
    world = {"timestamp": record(PLAIN, 20)["timestamp"], "type": "world_state", "payload": {}}
    future = {**world, "type": "future_line"}
    ghost = record(PLAIN, 17)
    ghost["payload"] = {"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}}
    compacted = record(PLAIN, 19)
    compacted["payload"] = {"type": "context_compacted"}
    lines = [record(PLAIN, n) for n in (1, 6, 16, 19)] + [world, future, ghost, compacted]
    (session,), diagnostics = _load(write(tmp_path, lines))
    assert dict(diagnostics.skipped) == {
        "codex:event_msg/agent_message": 1,
        "codex:world_state": 1,
        "codex:response_item/ghost_snapshot": 1,
    }
    # a line type Codex does not write (yet) is not "skipped on purpose", and is no end
    assert (dict(diagnostics.unrecognised), diagnostics.warning_total) == (
        {"codex:future_line": 1},
        0,
    )
    # lines not read (world_state, future_line, dated line 20's time) do not end the session
    assert session.end_ns == _time(19)


def test_lines_that_are_not_records_are_warned_about_by_line(tmp_path: Path) -> None:
    """Line 6 as a JSON list, line 17 without its payload, a response_item whose payload is
    a string: each is named by path:line and read no further."""
    no_payload = {k: v for k, v in record(PLAIN, 17).items() if k != "payload"}
    text_payload = {**record(PLAIN, 17), "payload": "message"}
    path = tmp_path / "damaged.jsonl"
    body = [json.dumps(record(PLAIN, 1)), json.dumps([record(PLAIN, 6)])]
    body += [json.dumps(no_payload), json.dumps(text_payload), json.dumps(record(PLAIN, 6))]
    path.write_text("\n".join(body) + "\n")
    (session,), diagnostics = _load(path)
    assert [(w.line, w.kind, w.message) for w in diagnostics.warnings] == [
        (2, "bad-shape", "line is not a JSON object"),
        (3, "bad-shape", "response_item line without a payload"),
        (4, "bad-shape", "response_item line without a payload"),
    ]
    assert {w.path for w in diagnostics.warnings} == {str(path)}
    assert [p.chars for p in session.prompts] == []  # line 5 is the prompt's item, not its event
    assert session.end_ns == _time(6)


def test_reasoning_summaries_are_assistant_text_and_encrypted_reasoning_is_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 14 of the redacted rollout: one summary part (a 32-character marker) and
    encrypted content; line 8 of the plain one: no summary, encrypted content."""
    added = spy(monkeypatch)
    (session,) = sessions(excerpt(tmp_path, REDACTED, [1, 9, 14]))
    (got,) = [a for a in added if a.category is AS and not a.id.startswith("reasoning-hidden")]
    assert (got.id, got.label, got.chars, got.source_kind) == (
        "item-reasoning:2:0",
        "Reasoning summary (length from a redaction marker)",
        32,
        SourceKind.RESPONSE,
    )
    assert dict(session.unmeasured) == {"encrypted-reasoning": 1}
    assert dict(session.facts)["redacted_items"] == 3  # base instructions, prompt, summary
    # no token_count followed: the encrypted reasoning's size is unknown (unmeasured); a
    # reasoning item without its content (stripped) is hidden reasoning, likewise
    reasoning = record(PLAIN, 8)
    reasoning["payload"]["encrypted_content"] = ""
    (plain,) = sessions(write(tmp_path, [record(PLAIN, 1), record(PLAIN, 6), reasoning]))
    assert dict(plain.unmeasured) == {"hidden-reasoning": 1}


def test_agent_message_items_are_prompts_and_raw_reasoning_text_is_assistant_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item types the corpus has no example of, made from line 8 of the plain rollout (a
    reasoning item): an `agent_message` item is another agent's message to this model
    (openai/codex `ResponseItem::AgentMessage`, never model output), User prompts labelled
    by its author (here none: "another agent"); a reasoning item's raw
    `content` (open models write their reasoning as text) is Reasoning; an image the model
    generated (`image_generation_call`) is counted as unmeasured, once per item."""
    agent = record(PLAIN, 8)
    agent["payload"] = {"type": "agent_message", "content": [{"type": "text", "text": "Done."}]}
    raw = record(PLAIN, 8)
    raw["payload"] = {
        "type": "reasoning",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": "Think it through."}],
    }
    image = record(PLAIN, 8)
    image["payload"] = {"type": "image_generation_call", "id": "ig_1", "status": "completed"}
    added = spy(monkeypatch)
    (session,) = sessions(
        write(tmp_path, [record(PLAIN, 1), record(PLAIN, 6), agent, raw, image, image])
    )
    got = [(a.id, a.category, a.label, a.chars) for a in added[2:]]
    assert got == [
        ("item-agent:2:0", Category.PROMPTS, "Message from another agent", 5),
        ("item-reasoning-text:3:0", AS, "Reasoning", 17),
    ]
    assert dict(session.unmeasured) == {"generated-image": 2}


def test_a_spawn_that_is_not_an_object_is_not_a_subagent(tmp_path: Path) -> None:
    """`source.subagent.thread_spawn` that is not an object (damage, or a build that writes
    it another way) names no parent, and the rollout is read as a session of its own."""
    meta = _meta(source={"subagent": {"thread_spawn": "p-1"}})
    (session,) = sessions(write(tmp_path, [meta, record(PLAIN, 6)]))
    assert (session.parent_session, session.child_role) == (None, None)


def test_the_items_of_a_message_are_numbered_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines 3, 4 and 6: each part is an item `item-<role>:<n>:<part index>`, n counting
    every item of the rollout; a message without a role (edited line 6) is the user's."""
    anonymous = record(PLAIN, 6)
    anonymous["payload"].pop("role")
    added = spy(monkeypatch)
    lines = [record(PLAIN, n) for n in (1, 3, 4, 6)] + [anonymous]
    sessions(write(tmp_path, lines))
    assert [a.id for a in added] == [
        "system:base_instructions",
        "item-developer:1:0",
        "item-developer:2:1",
        "item-developer:3:2",
        "item-developer:4:3",
        "item-user:5:0",
        "item-user:6:1",
        "item-user:7:0",
        "item-user:8:0",
    ]
    assert (added[-1].category, added[-1].label, added[-1].chars) == (PR, "User prompt", 10)


def test_message_parts_without_text_add_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 6 with an image part, a part whose text is not a string and a bare string part
    beside its text part: only the text part enters (as the message's part 0); content
    given as one string is one part; content that is neither adds nothing."""
    parts = record(PLAIN, 6)
    parts["payload"]["content"] = [
        {"type": "input_image", "image_url": "data:…"},
        {"type": "input_text", "text": None},
        "stray",
        {"type": "input_text", "text": "show tools"},
    ]
    whole = record(PLAIN, 6)
    whole["payload"]["content"] = "show tools please"
    empty = record(PLAIN, 6)
    empty["payload"]["content"] = {"text": "not a list"}
    added = spy(monkeypatch)
    sessions(write(tmp_path, [_meta(), parts, whole, empty]))
    assert [(a.id, a.chars) for a in added] == [("item-user:1:0", 10), ("item-user:2:0", 17)]


def test_a_web_search_call_without_its_end_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 197 alone (no web_search_end before it, as Codex Desktop 0.104 writes every
    search) is the only record of its search: a zero-length `web_search` call with its
    query, whose result it is; without an action, a call without arguments and an empty
    result. (They were results of no call, and the 0.104 rollout's 7 searches were in no
    count.)"""
    bare = record(PLAIN, 197)
    bare["payload"].pop("action")
    added = spy(monkeypatch)
    lines = [record(PLAIN, n) for n in (1, 6, 197)] + [bare]
    (session,) = sessions(write(tmp_path, lines))
    searches = [(a.id, a.category, a.chars, a.source_id, a.source_kind) for a in added[1:]]
    action = record(PLAIN, 197)["payload"]["action"]
    said = json.dumps(action, separators=(",", ":"))
    assert searches == [
        ("item-user:1:0", PR, 10, "", SourceKind.PROMPT),
        ("item-search:2", RE, len(said), "web-search:2", SourceKind.TOOL),
        ("item-search:3", RE, 0, "web-search:3", SourceKind.TOOL),
    ]
    first, second = session.tool_calls
    assert (first.call_id, first.name, first.start_ns) == (
        "web-search:2",
        "web_search",
        first.end_ns,
    )
    assert first.arg_keys == ("query",) and (second.call_id, second.arg_keys) == (
        "web-search:3",
        (),
    )
    assert not first.is_error and not second.is_error


def test_a_web_search_is_a_tool_call_from_its_end_record(tmp_path: Path) -> None:
    """Line 196 (web_search_end), after the prompt (lines 6, 7), opens a request and is a
    zero-length `web_search` call of that request and turn, its query as the argument;
    without `query` the action's query is used."""
    end = record(PLAIN, 196)
    query = end["payload"]["query"]
    bare = json.loads(json.dumps(end))
    bare["payload"].pop("query")
    bare["payload"]["call_id"] = "ws_2"
    lines = [record(PLAIN, n) for n in (1, 6, 7)] + [end, record(PLAIN, 197), bare]
    (session,) = sessions(write(tmp_path, lines))
    (answered,) = sessions(write(tmp_path, [*lines, record(PLAIN, 10)], "answered.jsonl"))
    got = [(t.response_id, t.prompt_id) for t in answered.tool_calls]
    assert got == [("request-1", "turn-1"), ("request-1", "turn-1")]
    first, second = session.tool_calls
    assert (first.call_id, first.name, first.start_ns, first.end_ns) == (
        end["payload"]["call_id"],
        "web_search",
        _time(196),
        _time(196),
    )
    assert (first.arg_keys, first.args_preview, first.incomplete) == (
        ("query",),
        (("query", query),),
        False,
    )
    assert (second.call_id, second.args_preview) == ("ws_2", (("query", query),))
    assert session.responses == ()  # no token_count: the request it opened never came back
    without_id = json.loads(json.dumps(end))
    without_id["payload"].pop("call_id")
    (none,) = sessions(write(tmp_path, [record(PLAIN, 1), without_id], "no-id.jsonl"))
    assert none.tool_calls == ()
    blank = json.loads(json.dumps(end))
    blank["payload"] = {"type": "web_search_end", "call_id": "ws_3"}
    (unnamed,) = sessions(write(tmp_path, [record(PLAIN, 1), blank], "blank.jsonl"))
    assert [(t.call_id, t.name) for t in unnamed.tool_calls] == [("ws_3", "web_search")]
    # No query given is no query, not the text "None".
    assert unnamed.tool_calls[0].args_preview == ()


# -- prompts ----------------------------------------------------------------------------------


def test_each_user_message_is_a_prompt(tmp_path: Path) -> None:
    """Lines 7 and 23 (the two typed prompts), the redacted rollout's line 10 and a
    user_message without text: prompts `turn-1…` at their times, with their sizes; a
    redacted or missing message has no preview."""
    redacted = {**record(REDACTED, 10), "timestamp": record(PLAIN, 20)["timestamp"]}
    silent = {**record(PLAIN, 23), "timestamp": record(PLAIN, 24)["timestamp"]}
    silent["payload"] = {**silent["payload"], "message": None}
    lines = [record(PLAIN, n) for n in (1, 7, 23)] + [redacted, silent]
    (session,) = sessions(write(tmp_path, lines))
    got = [(p.id, p.start_ns, p.chars, p.source, p.preview) for p in session.prompts]
    assert got == [
        ("turn-1", _time(7), 10, "user", "show tools"),
        (
            "turn-2",
            _time(23),
            57,
            "user",
            "let's update the defailt context compart to 90 in env var",
        ),
        ("turn-3", _time(20), 32, "user", ""),
        ("turn-4", _time(24), 0, "user", ""),
    ]


def test_a_prompts_preview_is_capped(tmp_path: Path) -> None:
    long = record(PLAIN, 7)
    long["payload"]["message"] = "x" * 500
    (session,) = sessions(write(tmp_path, [record(PLAIN, 1), long]))
    (prompt,) = session.prompts
    assert (prompt.chars, prompt.preview) == (500, "x" * 200)


def test_a_redacted_block_is_a_prompt_only_with_its_prompts_sha(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redacted line 10 (user_message, sha 821fd802) then line 9 (its block): a prompt. The
    same block after a user_message with another sha, or with no sha, is unattributed; a
    redacted assistant block (line 16) stays the assistant's."""
    other = record(REDACTED, 10)
    other["payload"]["message"] = "[REDACTED_MESSAGE len=32 sha=0badf00d]"
    nosha = record(REDACTED, 10)
    nosha["payload"]["message"] = "[REDACTED_MESSAGE len=32]"
    added = spy(monkeypatch)
    for name, event in (("same", record(REDACTED, 10)), ("other", other), ("none", nosha)):
        path = write(tmp_path, [record(REDACTED, 1), event, record(REDACTED, 9)], f"{name}.jsonl")
        sessions(path)
    sessions(excerpt(tmp_path, REDACTED, [1, 16], "answer.jsonl"))
    blocks = [(a.category, a.label, a.source_kind) for a in added if a.id.startswith("item-")]
    marker = " (length from a redaction marker)"
    assert blocks == [
        (PR, "User prompt" + marker, SourceKind.PROMPT),
        (UN, "Redacted user-role block" + marker, SourceKind.NONE),
        (UN, "Redacted user-role block" + marker, SourceKind.NONE),
        (AS, "Assistant text" + marker, SourceKind.RESPONSE),
    ]


# -- compaction -------------------------------------------------------------------------------


def test_a_compaction_fails_the_request_it_interrupted(tmp_path: Path) -> None:
    """Lines 1–9 (the call began request 1, no token_count) then an older build's
    `compacted` line: the interrupted request is no response but a failed request (from
    its start to its call, line 9), its call linked to none; the next token_count (line
    10, after the compaction) is request 2, starting at the compaction, which starts at
    the failed request's end. (It was dropped: its id went to the next request, and so
    did its call, which started before that request.)"""
    compacted = {
        "timestamp": "2026-05-11T08:27:22.600Z",
        "type": "compacted",
        "payload": {"message": "Summary so far"},
    }
    lines = [record(PLAIN, n) for n in (1, 2, 5, 6, 7, 8, 9)] + [compacted, record(PLAIN, 10)]
    (session,) = sessions(write(tmp_path, lines))
    (response,) = session.responses
    # a later request does not change what the compaction left (the first one after it)
    (longer,) = sessions(
        write(tmp_path, [*lines, *(record(PLAIN, n) for n in (11, 13, 14))], "l.jsonl")
    )
    assert [c.post_tokens for c in longer.compactions] == [18_703]
    compaction_end = _ns(compacted["timestamp"])
    assert (response.id, response.start_ns, response.end_ns) == (
        "request-2",
        compaction_end,
        _time(10),
    )
    (failed,) = session.failed_requests
    assert (failed.id, failed.stop_reason, failed.end_ns) == ("request-1", "compacted", _time(9))
    (call,) = session.tool_calls
    assert call.response_id is None
    (compaction,) = session.compactions
    assert (compaction.id, compaction.start_ns, compaction.end_ns) == (
        "compaction-1",
        _time(9),
        compaction_end,
    )
    assert (compaction.pre_tokens, compaction.post_tokens) == (None, 18_703)
    assert compaction.timing == "previous request's end → compacted line"
    assert session.incomplete is True  # the call never got its output
    (post,) = [s for s in session.snapshots if s.anchor_id == "compaction-1"]
    assert (post.model, post.window_tokens, post.reported_tokens) == ("gpt-5.5", 258_400, 18_703)
    # the interrupted request is no snapshot: one per request, one for the compaction
    assert [(s.anchor_id, s.time_ns) for s in session.snapshots] == [
        ("compaction-1", compaction_end),
        ("request-2", compaction_end),
    ]


def test_a_compaction_without_a_summary_adds_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older build's `compacted` line with an empty message: no summary item."""
    compacted = {"timestamp": record(PLAIN, 19)["timestamp"], "type": "compacted", "payload": {}}
    added = spy(monkeypatch)
    (session,) = sessions(write(tmp_path, [record(PLAIN, n) for n in (1, 6, 9, 10)] + [compacted]))
    assert [a.id for a in added if a.category is SU] == []
    (compaction,) = session.compactions
    assert (compaction.start_ns, compaction.end_ns, compaction.pre_tokens) == (
        _time(10),
        _time(19),
        18_703,
    )
    assert compaction.removed_items == 1  # the call; base instructions and prompt stay


def test_a_replacement_history_is_replayed_without_new_calls_or_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first turn (lines 1–18 without line 15, so line 13's call has no output yet),
    then a `compacted` line whose replacement history holds lines 6, 9, 11 and 17, a stray
    string, line 30's call (never made in this rollout) and line 15 (the missing output):
    they are the context again, under `compaction-1-…` ids, but they are no new request,
    call, result or trigger, and the message beside them is not a summary."""
    history = [record(PLAIN, n)["payload"] for n in (6, 9, 11, 17)]
    history += ["stray", record(PLAIN, 30)["payload"], record(PLAIN, 15)["payload"]]
    compacted = {
        "timestamp": record(PLAIN, 19)["timestamp"],
        "type": "compacted",
        "payload": {"message": "Summary", "replacement_history": history},
    }
    added = spy(monkeypatch)
    lines = [record(PLAIN, n) for n in (1, 5, 6, 7, 9, 10, 11, 12, 13, 14, 17, 18)]
    lines += [compacted] + [record(PLAIN, n) for n in (20, 22, 23, 24, 27, 28)]
    (session,) = sessions(write(tmp_path, lines))
    call_id = history[1]["call_id"]
    ids = [a.id for a in added]
    start = ids.index("compaction-1-user:3:0")
    assert [(a.id, a.category) for a in added[start : start + 4]] == [
        ("compaction-1-user:3:0", PR),
        (f"call:{call_id}", AS),
        (f"result:{call_id}", RE),
        ("compaction-1-assistant:4:0", AS),
    ]
    assert [r.id for r in session.responses] == [f"request-{n}" for n in (1, 2, 3, 4)]
    # request 4 starts at line 23's prompt event, not at the replayed prompt
    assert session.responses[3].start_ns == _time(23)
    assert [(t.call_id, t.start_ns, t.incomplete) for t in session.tool_calls] == [
        (call_id, _time(9), False),
        (record(PLAIN, 13)["payload"]["call_id"], _time(13), True),  # no output in the rollout
        (record(PLAIN, 27)["payload"]["call_id"], _time(27), True),
    ]
    assert session.tool_calls[0].end_ns == _time(9) + 5_087_741_459
    (compaction,) = session.compactions
    assert (compaction.start_ns, compaction.end_ns) == (_time(18), _time(19))
    assert (compaction.pre_tokens, compaction.post_tokens, compaction.removed_items) == (
        20_292,
        20_419,
        5,  # everything but the base instructions: prompt, two calls, a result, the answer
    )
    assert [a.id for a in added if a.category is SU] == []


# -- detection, and rollouts read together ----------------------------------------------------


def test_a_rollout_is_told_by_its_envelope() -> None:
    """A head is Codex's when one of its objects is a `{timestamp, type, payload}` line of a
    Codex line type with an object payload (line 1, after a stray non-object value)."""
    meta = record(PLAIN, 1)
    assert codex.detect([[1, 2], "text", meta]) is True
    assert codex.detect([record(PLAIN, 17)]) is True
    assert codex.detect([{k: v for k, v in meta.items() if k != "timestamp"}]) is False
    assert codex.detect([{**meta, "payload": "session"}]) is False
    assert codex.detect([{**meta, "type": "world_state"}]) is False
    assert codex.detect([{**meta, "type": ["session_meta"]}]) is False
    assert codex.detect([]) is False
    assert codex.detect(sniff(CLAUDE_SMALL)) is False


def test_unreadable_rollouts_found_beside_are_warned_about_and_the_others_read(
    tmp_path: Path,
) -> None:
    """A missing file and a gzip cut at its start, found beside the small real rollout given
    (`given:1`): each is one `unreadable` warning naming its file (it may be no child of
    the one given); the real rollout is still a session."""
    cut = tmp_path / "rollout-cut.jsonl.gz"
    cut.write_bytes(gzip.compress(raw_lines(PLAIN)[0].encode())[:20])
    missing = tmp_path / "rollout-missing.jsonl"
    diagnostics = Diagnostics()
    group = JournalGroup(Harness.CODEX, None, (CODEX_SMALL, missing, cut), "given:1")
    (session,) = codex.read(group, diagnostics)
    assert session.session_id == "019c8bfe-ec25-79e0-97d7-bda6a9c575ff"
    assert [(w.path, w.line, w.kind) for w in diagnostics.warnings] == [
        (str(missing), None, "unreadable"),
        (str(cut), None, "unreadable"),
    ]
    assert diagnostics.warnings[0].message == "cannot open: no such file or directory"
    assert diagnostics.warnings[1].message.startswith("corrupt or truncated gzip stream")


def test_a_rollout_with_nothing_dated_is_no_session(tmp_path: Path) -> None:
    """Only lines this reader skips (`world_state`, and a line without payload): no session."""
    world = {"timestamp": record(PLAIN, 1)["timestamp"], "type": "world_state", "payload": {}}
    empty = {"timestamp": record(PLAIN, 1)["timestamp"], "type": "session_meta"}
    path = write(tmp_path, [world, empty])
    assert codex.read(JournalGroup(Harness.CODEX, None, (path,)), Diagnostics()) == []


def _spawn_lines(child: str) -> list[dict[str, Any]]:
    """The 2026-05-11 rollout's first turn, whose line 9 call spawned `child` (edited: the
    corpus has no subagent rollouts)."""
    spawn = record(PLAIN, 9)
    spawn["payload"].update(name="spawn_agent", arguments='{"message": "look"}')
    end = {
        "timestamp": record(PLAIN, 10)["timestamp"],
        "type": "event_msg",
        "payload": {
            "type": "collab_agent_spawn_end",
            "call_id": spawn["payload"]["call_id"],
            "new_thread_id": child,
        },
    }
    return [record(PLAIN, n) for n in (1, 6, 7)] + [spawn, end, record(PLAIN, 10)]


def test_a_spawned_rollout_is_linked_to_its_parent_when_read_together(tmp_path: Path) -> None:
    """The parent (above) and the redacted rollout's first lines as the child, whose own
    session_meta names no parent (a Desktop rollout, `source: vscode`): read together, the
    child is the parent's subagent, linked to the spawn call; read alone, it is not."""
    child_id = record(REDACTED, 1)["payload"]["id"]
    parent = write(tmp_path, _spawn_lines(child_id), "rollout-parent.jsonl")
    child = excerpt(tmp_path, REDACTED, [1, 9, 10], "rollout-child.jsonl")
    found = {s.session_id: s for s in sessions(parent, child)}
    kid = found[child_id]
    call_id = record(PLAIN, 9)["payload"]["call_id"]
    assert (kid.parent_session, kid.parent_call_id) == (record(PLAIN, 1)["payload"]["id"], call_id)
    (spawn,) = found[record(PLAIN, 1)["payload"]["id"]].tool_calls
    assert (spawn.name, spawn.child_session) == ("spawn_agent", child_id)
    (alone,) = sessions(child)
    assert (alone.parent_session, alone.parent_call_id) == (None, None)
    (parent_alone,) = sessions(parent)
    assert parent_alone.tool_calls[0].child_session == child_id


def test_a_spawn_record_without_its_call_links_nothing(tmp_path: Path) -> None:
    """The spawn end (above) without its call id: the child, read with its parent, is not
    taken for a subagent."""
    child_id = record(REDACTED, 1)["payload"]["id"]
    lines = _spawn_lines(child_id)
    lines[4]["payload"].pop("call_id")
    parent = write(tmp_path, lines, "rollout-parent.jsonl")
    child = excerpt(tmp_path, REDACTED, [1, 9, 10], "rollout-child.jsonl")
    found = {s.session_id: s for s in sessions(parent, child)}
    assert (found[child_id].parent_session, found[child_id].parent_call_id) == (None, None)


def test_a_child_that_names_another_parent_keeps_it(tmp_path: Path) -> None:
    """A child whose session_meta names its parent thread keeps that one, and is linked to
    no call of a rollout that did not spawn it; a spawn record without ids links nothing."""
    child_id = record(REDACTED, 1)["payload"]["id"]
    lines = _spawn_lines(child_id)
    lines[4]["payload"]["new_thread_id"] = None  # the spawn end lost its thread id
    parent = write(tmp_path, lines, "rollout-parent.jsonl")
    meta = record(REDACTED, 1)
    meta["payload"]["source"] = {"subagent": {"thread_spawn": {"parent_thread_id": "p-0"}}}
    child = write(tmp_path, [meta, record(REDACTED, 9)], "rollout-child.jsonl")
    found = {s.session_id: s for s in sessions(parent, child)}
    assert (found[child_id].parent_session, found[child_id].parent_call_id) == ("p-0", None)
    assert found[record(PLAIN, 1)["payload"]["id"]].tool_calls[0].child_session is None


def test_each_encrypted_compaction_item_is_counted(tmp_path: Path) -> None:
    """A replacement history with two `compaction` items (encrypted summaries, FORMATS §3.4):
    two unmeasured summaries."""
    item = {"type": "compaction", "encrypted_content": "gAAAAB…"}
    compacted = {
        "timestamp": record(PLAIN, 19)["timestamp"],
        "type": "compacted",
        "payload": {"message": "", "replacement_history": [item, item]},
    }
    (session,) = sessions(write(tmp_path, [record(PLAIN, n) for n in (1, 6)] + [compacted]))
    assert dict(session.unmeasured) == {"encrypted-compaction-summary": 2}


def test_the_estimator_sees_the_text_but_only_the_length_of_a_redaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the calibrated estimator (`--estimate calibrated`), line 15's output (a skill
    file: markdown and code) is estimated from its text's content classes, and a redaction
    marker of the same stated length only from its length."""
    output = record(PLAIN, 15)
    text = output["payload"]["output"]
    redacted = json.loads(json.dumps(output))
    redacted["payload"]["call_id"] = "call_redacted"
    redacted["payload"]["output"] = f"[REDACTED_OUTPUT len={len(text)} sha=0123abcd]"
    added = spy(monkeypatch)
    estimator = calibrated()
    with use_estimator(estimator):
        sessions(write(tmp_path, [record(PLAIN, n) for n in (1, 6, 13)] + [output, redacted]))
    plain, marker = [a for a in added if a.category is RE]
    codex_estimator = estimator.for_harness("codex")
    assert (plain.chars, plain.tokens) == (len(text), codex_estimator.text_tokens(text))
    assert (marker.chars, marker.tokens) == (len(text), codex_estimator.chars_tokens(len(text)))
    assert plain.tokens != marker.tokens


def test_a_web_search_item_is_linked_to_its_end_by_the_page_it_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.141's `open_page` search: its end names the page as `query`, its item has only
    `action.url`; the item was a result of no call (and would now be a second call). A
    search made twice links each item to its own end; a failed one is a failed call."""
    end = record(PLAIN, 196)
    url = "https://example.org/page"
    end["payload"] |= {"query": url, "action": {"type": "open_page", "url": url}}
    item = record(PLAIN, 197)
    item["payload"]["action"] = {"type": "open_page", "url": url}
    again = json.loads(json.dumps(end))
    again["payload"]["call_id"] = "ws_2"
    failed = json.loads(json.dumps(item))
    failed["payload"]["status"] = "failed"
    added = spy(monkeypatch)
    lines = [record(PLAIN, n) for n in (1, 6, 7)] + [end, item, again, failed]
    (session,) = sessions(write(tmp_path, lines))
    linked = [(a.source_id, a.source_kind) for a in added if a.label == "Web search"]
    first = end["payload"]["call_id"]
    assert linked == [(first, SourceKind.TOOL), ("ws_2", SourceKind.TOOL)]
    assert [c.call_id for c in session.tool_calls] == [first, "ws_2"]
    # an item alone (0.104) is the call: its failed status is the call's
    web_only = [record(PLAIN, n) for n in (1, 6, 7)] + [failed]
    (alone,) = sessions(write(tmp_path, web_only, "alone.jsonl"))
    (call,) = alone.tool_calls
    assert call.name == "web_search" and call.is_error


def test_a_web_search_end_without_a_query_is_its_items_call(tmp_path: Path) -> None:
    """An end that names no query (nor a page) still made the call; the item after it,
    which then matched no end, made a second one: one search, two calls."""
    end = record(PLAIN, 196)
    end["payload"].pop("query")
    end["payload"].pop("action", None)
    lines = [record(PLAIN, n) for n in (1, 6, 7)] + [end, record(PLAIN, 197)]
    (session,) = sessions(write(tmp_path, lines))
    assert [c.call_id for c in session.tool_calls] == [end["payload"]["call_id"]]
