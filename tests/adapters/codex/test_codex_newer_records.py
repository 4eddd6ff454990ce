"""Record types newer Codex builds write that were "not recognised" (review C4) and the
events that replace those the newest persistence policy no longer writes (review C3).

- `event_msg/injected_message` — openai/codex `InjectedMessageEvent {content, source}`
  (`InjectedMessage::event`: a timer's message, source "timer <id>", or an external
  program's); the model sees the message as a user `message` (`prompt_input_item`);
- `rollout_reference` — `RolloutReferenceItem {rollout_id?, rollout_path, thread_id?,
  rollout_timestamp?, segment_id?, max_depth, nth_user_message?, …}` (`thread-store`
  `segment_writer.rs`: a rotated rollout starts with a reference to its sealed predecessor;
  forks reference their base): the history it continues is not in this file.

Rollouts are lines of the real 2026-05-11 rollout (tests/data/journals/codex) with the new
lines put where Codex writes them; their payloads follow the source's structs (serde field
names); no real rollout with them was available."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.model import MID_CONVERSATION
from agent_profiler.views import starts_mid_conversation, unattributed_is_head
from rules_spy import record, write
from samples import CODEX_PLAIN, read_single

PLAIN = CODEX_PLAIN
THREAD = record(PLAIN, 1)["payload"]["id"]


def _line(at: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": record(PLAIN, at)["timestamp"], "type": kind, "payload": payload}


def test_an_injected_message_is_a_prompt_from_the_harness(tmp_path: Path) -> None:
    """A timer's message in place of the typed prompt (line 7's `user_message`): its
    user `message` item (line 6, as `prompt_input_item` renders it) is context as before;
    the event is the turn's prompt, from the harness."""
    event = _line(
        7, "event_msg", {"type": "injected_message", "content": "ping", "source": "timer t-1"}
    )
    lines = [record(PLAIN, n) for n in (1, 2, 3, 4, 5, 6)] + [event]
    lines += [record(PLAIN, n) for n in (8, 9, 10)]
    session, diagnostics = read_single(write(tmp_path, lines, "rollout-injected.jsonl"))
    assert dict(diagnostics.unrecognised) == {}
    (prompt,) = session.prompts
    assert (prompt.source, prompt.chars, prompt.preview) == ("harness", 4, "ping")
    assert session.responses[0].prompt_id == prompt.id


def test_a_rollout_reference_marks_the_inherited_history_it_does_not_read(
    tmp_path: Path,
) -> None:
    """A rotated segment: session_meta, the reference to its predecessor (same thread),
    then the turn. The inherited turns are in the first request's inferred head, so the
    session says it starts mid-conversation and names what it continues."""
    reference = _line(
        1,
        "rollout_reference",
        {
            "rollout_id": THREAD,
            "rollout_path": f"/home/u/.codex/rollout_segments/{THREAD}/s-1/rollout-x.jsonl",
            "thread_id": THREAD,
            "segment_id": "s-1",
            "max_depth": 2,
        },
    )
    lines = [record(PLAIN, 1), reference] + [record(PLAIN, n) for n in range(2, 11)]
    session, diagnostics = read_single(write(tmp_path, lines, "rollout-segment.jsonl"))
    assert dict(diagnostics.unrecognised) == {}
    facts = dict(session.facts)
    assert facts["rollout_reference"] == "an earlier segment of this thread (rollout-x.jsonl)"
    assert "rollout_reference, not read" in str(facts[MID_CONVERSATION])
    assert starts_mid_conversation(session) and not unattributed_is_head(session)
    # A fork names its base thread and how far it inherits.
    fork = dict(reference["payload"], thread_id="base-1", nth_user_message=3)
    lines[1] = _line(1, "rollout_reference", fork)
    forked, _ = read_single(write(tmp_path, lines, "rollout-fork.jsonl"))
    said = dict(forked.facts)["rollout_reference"]
    assert said == "thread base-1 (rollout-x.jsonl), up to its user message 3"
    # The summary and the report say why in the harness's terms, not Claude Code's
    why = (
        "the journal starts mid-conversation (its history continues thread base-1"
        " (rollout-x.jsonl), up to its user message 3: a rollout_reference, not read)"
    )
    text = CliRunner().invoke(app, ["summary", str(tmp_path / "rollout-fork.jsonl")]).stdout
    assert why in text and "first record's parent" not in text
    page = tmp_path / "r.html"
    result = CliRunner().invoke(
        app, ["report", str(tmp_path / "rollout-fork.jsonl"), "-o", str(page)]
    )
    assert result.exit_code in (0, 1), result.output
    assert why.replace("the journal", "The journal") in " ".join(page.read_text().split())


# -- C3: what a paginated thread and the newest policy write instead of the legacy events ---

CALL = record(PLAIN, 9)["payload"]["call_id"]  # exec_command, its output line 11


def _completed(at: int, item: dict[str, Any]) -> dict[str, Any]:
    """`ItemCompletedEvent {thread_id, turn_id, item, completed_at_ms}`; the item as
    `TurnItem` serialises (`#[serde(tag = "type")]`, the variant's name)."""
    payload = {"type": "item_completed", "thread_id": THREAD, "turn_id": "t-1", "item": item}
    return _line(at, "event_msg", {**payload, "completed_at_ms": 0})


def _paginated(
    tmp_path: Path,
    *extra: dict[str, Any],
    name: str = "paginated",
    exit_code: dict[str, Any] | None = None,
    output: str | None = None,
) -> Any:
    """Turn 1 of the rollout as a paginated thread writes it: its `user_message` (line 7)
    and `exec_command_end` (line 12) replaced by `item_completed` lines, `extra` after
    (`exit_code`: the command item's exit code field, camelCase `exitCode: 0` if not
    given; `output`: the command's output on line 11, the rollout's own if not given)."""
    prompt = {
        "type": "UserMessage",
        "id": "u-1",
        "content": [{"type": "text", "text": "show tools", "text_elements": []}],
    }
    command = {
        "type": "CommandExecution",
        "id": CALL,
        "command": ["/bin/zsh", "-lc", "sed"],
        "status": "completed",
        **({"exitCode": 0} if exit_code is None else exit_code),
        "duration": {"secs": 5, "nanos": 0},
    }
    lines = [record(PLAIN, n) for n in (1, 2, 3, 4, 5, 6)] + [_completed(7, prompt)]
    result = record(PLAIN, 11)
    if output is not None:
        result["payload"]["output"] = output
    lines += [record(PLAIN, n) for n in (8, 9, 10)] + [result, _completed(12, command)]
    lines += [record(PLAIN, n) for n in (13, 14, 15)] + list(extra)
    return read_single(write(tmp_path, lines, f"rollout-{name}.jsonl"))


def test_a_paginated_threads_prompt_and_command_come_from_item_completed(
    tmp_path: Path,
) -> None:
    session, diagnostics = _paginated(tmp_path)
    (prompt,) = session.prompts
    assert (prompt.source, prompt.chars, prompt.preview) == ("user", 10, "show tools")
    command = next(t for t in session.tool_calls if t.call_id == CALL)
    assert command.end_ns - command.start_ns == 5_000_000_000
    assert "exec_command_end duration" in command.timing
    assert dict(diagnostics.unrecognised) == {}


@pytest.mark.parametrize(
    ("field", "failed"),
    [({"exit_code": 2}, True), ({"exitCode": 2}, True), ({"exit_code": 0}, False)],
)
def test_a_commands_exit_code_is_read_in_either_spelling(
    tmp_path: Path, field: dict[str, Any], failed: bool
) -> None:
    """Core's `CommandExecutionItem` writes snake_case (`exit_code`), the app server's copy
    camelCase: a failed command is a failed call either way."""
    # (the rollout's own output says the command still runs: its exit is the later call's)
    session, _ = _paginated(tmp_path, exit_code=field, output="sed: done")
    command = next(t for t in session.tool_calls if t.call_id == CALL)
    assert command.is_error is failed


def test_a_web_search_recorded_only_by_item_completed_is_a_tool_call(tmp_path: Path) -> None:
    """`WebSearchItem {id, query, action}` (its legacy event is `web_search_end {call_id:
    id, query, action}`); the `web_search_call` item after it is the same search."""
    action = {"type": "search", "query": "codex rollout policy"}
    search = {"type": "WebSearch", "id": "ws_1", "query": "codex rollout policy", "action": action}
    item = _line(
        16, "response_item", {"type": "web_search_call", "status": "completed", "action": action}
    )
    session, _ = _paginated(tmp_path, _completed(16, search), item)
    (web,) = [t for t in session.tool_calls if t.name == "web_search"]
    assert web.call_id == "ws_1"
    alone, _ = _paginated(tmp_path, _completed(16, search), name="alone")
    assert [t.call_id for t in alone.tool_calls if t.name == "web_search"] == ["ws_1"]


def test_other_turn_items_are_skipped_by_type_and_unknown_ones_are_loud(
    tmp_path: Path,
) -> None:
    plan = {"type": "Plan", "id": "p-1", "text": "1. read"}
    future = {"type": "Hologram", "id": "h-1"}
    newest = [
        {"type": kind, "id": f"n-{kind}"}
        for kind in ("FunctionCallOutput", "Extension", "EnteredReviewMode", "ExitedReviewMode")
    ]
    _, diagnostics = _paginated(
        tmp_path,
        _completed(16, plan),
        _completed(16, future),
        *[_completed(16, item) for item in newest],
    )
    assert dict(diagnostics.skipped)["codex:event_msg/item_completed/Plan"] == 1
    for item in newest:
        assert dict(diagnostics.skipped)[f"codex:event_msg/item_completed/{item['type']}"] == 1
    assert dict(diagnostics.unrecognised) == {"codex:event_msg/item_completed/Hologram": 1}


# -- C3: the spawn call → child link without collab_agent_spawn_end --------------------------


def _spawn_pair(tmp_path: Path, output: str, child_spawn: dict[str, Any], *after: Any) -> Any:
    """A parent whose line 9 is a `spawn_agent` call and line 11 its output `output` (the
    JSON of the handler's `SpawnAgentResult`: `tool_output_json_text`), with no
    `collab_agent_spawn_end` (the newest policy persists none); a child "thread-c" whose
    session_meta names its parent (`thread_spawn`)."""
    call = record(PLAIN, 9)
    call["payload"].update(name="spawn_agent", arguments='{"message": "look", "task_name": "w"}')
    result = record(PLAIN, 11)
    result["payload"]["output"] = output
    parent = write(
        tmp_path,
        [record(PLAIN, n) for n in (1, 6, 8)] + [call, record(PLAIN, 10), result, *after],
        "rollout-parent.jsonl",
    )
    meta = record(PLAIN, 1)
    meta["payload"].update(id="thread-c", source={"subagent": {"thread_spawn": child_spawn}})
    meta["payload"].pop("base_instructions")
    child = write(tmp_path, [meta, record(PLAIN, 6)], "rollout-child.jsonl")
    diagnostics = Diagnostics()
    found = {s.session_id: s for s in load([parent, child], diagnostics).sessions}
    (spawn,) = [t for t in found[THREAD].tool_calls if t.name == "spawn_agent"]
    return spawn, found["thread-c"]


def test_a_v1_spawns_output_names_its_child_thread(tmp_path: Path) -> None:
    """multi_agents/spawn.rs: `SpawnAgentResult {agent_id: <thread id>, nickname}`."""
    spawn, child = _spawn_pair(
        tmp_path, '{"agent_id":"thread-c","nickname":null}', {"parent_thread_id": THREAD}
    )
    assert spawn.child_session == "thread-c"
    assert child.parent_call_id == spawn.call_id


def test_a_v2_spawns_output_names_its_childs_agent_path(tmp_path: Path) -> None:
    """multi_agents_v2/spawn.rs: `{task_name: <the child's agent path>, nickname}`; the
    child's `thread_spawn.agent_path` is that path, beside its parent's thread id."""
    spawn_of = {"parent_thread_id": THREAD, "agent_path": "/root/w", "agent_nickname": "Ada"}
    spawn, child = _spawn_pair(tmp_path, '{"task_name":"/root/w","nickname":"Ada"}', spawn_of)
    assert spawn.child_session == "thread-c"
    assert child.parent_call_id == spawn.call_id
    # Another thread's child of the same path is not this one's.
    other = {**spawn_of, "parent_thread_id": "someone-else"}
    spawn, child = _spawn_pair(tmp_path, '{"task_name":"/root/w","nickname":"Ada"}', other)
    assert (spawn.child_session, child.parent_call_id) == (None, None)


def test_a_paginated_spawns_item_completed_names_its_child(tmp_path: Path) -> None:
    """`CollabAgentToolCallItem` (camelCase: `tool: "spawnAgent"`, `receiverThreadIds`),
    its `id` the call's id as the legacy events' `call_id` (a guess: the core emits it so
    for send_input and wait; the spawn's emission was not found)."""
    item = {
        "type": "CollabAgentToolCall",
        "id": record(PLAIN, 9)["payload"]["call_id"],
        "tool": "spawnAgent",
        "status": "completed",
        "senderThreadId": THREAD,
        "receiverThreadIds": ["thread-c"],
    }
    spawn, child = _spawn_pair(
        tmp_path, "spawned", {"parent_thread_id": THREAD}, _completed(11, item)
    )
    assert spawn.child_session == "thread-c"
    assert child.parent_call_id == spawn.call_id
    # core's own spelling (`#[serde(rename_all = "snake_case")]`)
    snake = {**item, "tool": "spawn_agent", "receiver_thread_ids": ["thread-c"]}
    del snake["receiverThreadIds"]
    (tmp_path / "snake").mkdir()
    spawn, child = _spawn_pair(
        tmp_path / "snake", "spawned", {"parent_thread_id": THREAD}, _completed(11, snake)
    )
    assert spawn.child_session == "thread-c"


# -- the newest response items -----------------------------------------------------------


def test_tool_definitions_sent_in_the_input_are_tool_definitions(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """`additional_tools {role: developer, tools}` (Responses Lite models): the tools' JSON
    as the model is sent it, `Tool definitions`; a `system` message is never sent
    (codex-rs `is_api_message`); a `configuration_update` is a control item, skipped."""
    from rules_spy import spy

    added = spy(monkeypatch)
    tools = [
        {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
        {"type": "function", "name": "view_image", "parameters": {"type": "object"}},
    ]
    lines = [record(PLAIN, n) for n in (1, 2, 3, 4, 5, 6, 7, 8)]
    lines.insert(
        6,
        _line(
            6, "response_item", {"type": "additional_tools", "role": "developer", "tools": tools}
        ),
    )
    lines.insert(
        6,
        _line(
            6,
            "response_item",
            {
                "type": "message",
                "role": "system",
                "content": [{"type": "input_text", "text": "hidden"}],
            },
        ),
    )
    lines.insert(
        6,
        _line(
            6, "response_item", {"type": "configuration_update", "reasoning": {"effort": "high"}}
        ),
    )
    _, diagnostics = read_single(write(tmp_path, lines, "rollout-tools.jsonl"))
    (defined,) = [a for a in added if a.label == "Tool definitions (in the input)"]
    assert (defined.category.value, defined.chars) == (
        "tools",
        len(json.dumps(tools, separators=(",", ":"))),
    )
    assert not [a for a in added if a.id.startswith("item-system")]
    assert dict(diagnostics.skipped)["codex:response_item/message/system"] == 1
    assert dict(diagnostics.skipped)["codex:response_item/configuration_update"] == 1
    assert dict(diagnostics.unrecognised) == {}


@pytest.mark.parametrize(
    ("policy", "budget"),
    [
        ({"mode": "tokens", "limit": 100}, 480),  # 100 × 1.2 tokens of 4 bytes
        ({"mode": "bytes", "limit": 1000}, 1200),
        ({"mode": "tokens", "limit": 10000}, None),  # the rollout's own: 48,000, not reached
        ({"mode": "lines", "limit": 5}, None),  # a mode not known: not truncated
        (None, 48000),  # none stated (0.140 and later): the corpus's tokens 10000 assumed
    ],
)
def test_a_tool_output_is_measured_as_sent_under_the_turns_truncation_policy(
    tmp_path: Path, monkeypatch: Any, policy: dict[str, Any] | None, budget: int | None
) -> None:
    """codex-rs records a tool's output into the model's history truncated to the turn's
    `truncation_policy` × 1.2 (its head and tail), and the rollout keeps it whole: line
    15's output (made 5,490 ASCII characters) is measured as sent; the call keeps what it
    returned."""
    from rules_spy import spy

    added = spy(monkeypatch)
    lines = [record(PLAIN, n) for n in range(1, 16)]
    if policy is None:
        del lines[4]["payload"]["truncation_policy"]
        lines[14]["payload"]["output"] = "".join(f"line {n}\n" for n in range(7000))
    else:
        lines[4]["payload"]["truncation_policy"] = policy
        lines[14]["payload"]["output"] = "".join(f"line {n}\n" for n in range(700))  # (ASCII)
    session, _ = read_single(write(tmp_path, lines, "rollout-policy.jsonl"))
    call = lines[14]["payload"]["call_id"]
    (result,) = [a for a in added if a.id == f"result:{call}"]
    whole = len(lines[14]["payload"]["output"])
    if budget is None:
        assert (result.chars, result.label) == (whole, "Tool result")
    else:
        marker = (  # (codex-rs `truncate_text`: tokens rounded up, or the chars cut)
            f"…{-(-(whole - budget) // 4)} tokens truncated…"
            if policy is None or policy["mode"] == "tokens"
            else f"…{whole - budget} chars truncated…"
        )
        assumed = ", the policy assumed" if policy is None else ""
        assert (result.chars, result.label) == (
            budget + len(marker),
            f"Tool result (truncated as sent{assumed})",
        )
    (tool,) = [t for t in session.tool_calls if t.call_id == call]
    assert tool.result_chars == whole


def test_an_output_is_cut_by_its_bytes_at_characters() -> None:
    """codex-rs counts a text's UTF-8 bytes (4 to a token) and cuts head and tail at
    characters: 300 × 漢 (900 bytes) under tokens 100 (480 bytes) is sent as 80 + 80 of them
    and the marker; an ASCII text within the budget is sent whole; a redaction marker's
    stated length is cut the same way."""
    from agent_profiler.adapters.codex_rollout import output_budget, sent_output, sent_size

    budget = output_budget({"mode": "tokens", "limit": 100})
    assert budget == (480, "tokens")
    assert sent_output("漢" * 300, budget) == "漢" * 80 + "…105 tokens truncated…" + "漢" * 80
    assert sent_output("x" * 480, budget) is None
    assert sent_output("漢" * 160, budget) is None  # (480 bytes: at the budget)
    assert sent_output("漢" * 161, budget) is not None
    assert sent_output("x" * 483, budget) == "x" * 240 + "…1 tokens truncated…" + "x" * 240
    assert sent_size(480, budget) is None
    assert sent_size(900, budget) == 480 + len("…105 tokens truncated…")
    assert sent_size(516, budget) == 480 + len("…9 tokens truncated…")  # (36 bytes: 9 tokens)
    by_bytes = output_budget({"mode": "bytes", "limit": 101})  # (121.2: 122, rounded up)
    assert by_bytes == (122, "bytes")
    assert sent_output("ab" * 100, by_bytes) == "ab" * 30 + "a…78 chars truncated…b" + "ab" * 30


def _sent(texts: list[str], budget: Any) -> list[str] | None:
    """`sent_items` of plain texts: the texts sent (their characters checked)."""
    from agent_profiler.adapters.codex_rollout import sent_items

    cut = sent_items([(text, len(text), False) for text in texts], budget)
    if cut is None:
        return None
    parts, chars = cut
    assert chars == sum(map(len, parts))
    return parts


def test_a_list_output_is_cut_item_by_item() -> None:
    """codex-rs cuts an output of content items item by item
    (`truncate_function_output_items_with_policy`): whole items while the budget lasts, the
    first past it cut to what is left, the rest counted in a last item; images cost
    nothing (they are not among the texts)."""
    from agent_profiler.adapters.codex_rollout import output_budget, sent_output

    budget = output_budget({"mode": "tokens", "limit": 100})  # 120 tokens, 480 bytes
    assert budget is not None
    texts = ["a" * 200, "b" * 200, "c" * 400, "d" * 10, ""]  # 50, 50, 100, 3, 0 tokens
    assert _sent(texts, budget) == [
        "a" * 200,
        "b" * 200,
        "c" * 40 + "…80 tokens truncated…" + "c" * 40,  # (20 tokens left: 80 bytes)
        "[omitted 2 text items ...]",
    ]
    assert _sent(["a" * 200, "b" * 280], budget) is None  # (at the budget: whole)
    assert _sent(["a" * 480, "x"], budget) == ["a" * 480, "[omitted 1 text items ...]"]
    # (479 bytes are 120 tokens, rounded up: nothing is left for the next)
    assert _sent(["a" * 479, "b"], budget) == ["a" * 479, "[omitted 1 text items ...]"]
    assert _sent(["a" * 481], budget) == [sent_output("a" * 481, budget)]
    by_bytes = output_budget({"mode": "bytes", "limit": 101})  # 122 bytes
    assert by_bytes is not None
    assert _sent(["ab" * 50, "漢" * 20], by_bytes) == [  # (22 bytes left)
        "ab" * 50,
        "漢" * 3 + "…14 chars truncated…" + "漢" * 3,
    ]


def test_a_list_of_redaction_markers_is_cut_by_their_stated_lengths() -> None:
    """A sanitised list output: each marker's stated length is its item's size, kept as
    the marker, cut as a marker's length is cut (`sent_size`)."""
    from agent_profiler.adapters.codex_rollout import output_budget, sent_items, sent_size

    budget = output_budget({"mode": "tokens", "limit": 100})  # 120 tokens, 480 bytes
    assert budget is not None
    first, second = "[REDACTED_MCP len=480 sha=ab]", "[REDACTED_MCP len=100 sha=cd]"
    omitted = "[omitted 1 text items ...]"
    items = [(first, 480, True), (second, 100, True)]
    assert sent_items(items, budget) == ([first, omitted], 480 + len(omitted))
    items = [("x" * 100, 100, False), (second.replace("100", "2000"), 2000, True)]
    parts, chars = sent_items(items, budget) or ([], 0)
    assert parts == [item[0] for item in items]  # (95 tokens left: 380 bytes of the 2,000)
    assert chars == 100 + (sent_size(2000, (380, "tokens")) or 0)
    assert chars == 100 + 380 + len("…405 tokens truncated…")


@pytest.mark.parametrize("wrapped", [False, True])
def test_a_list_output_is_measured_as_sent(tmp_path: Path, monkeypatch: Any, wrapped: bool) -> None:
    """An output of text and image items past the turn's budget (as a list, or as an
    object's `content`) is measured as its items are sent; the call keeps what the tool
    returned."""
    from rules_spy import spy

    added = spy(monkeypatch)
    lines = [record(PLAIN, n) for n in range(1, 16)]
    lines[4]["payload"]["truncation_policy"] = {"mode": "tokens", "limit": 100}
    items = [
        {"type": "input_text", "text": "x" * 300},
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
        {"type": "input_text", "text": "y" * 300},
        {"type": "input_text", "text": "z" * 10},
    ]
    lines[14]["payload"]["output"] = {"content": items, "success": True} if wrapped else items
    session, _ = read_single(write(tmp_path, lines, "rollout-items.jsonl"))
    call = lines[14]["payload"]["call_id"]
    (result,) = [a for a in added if a.id == f"result:{call}"]
    # 75 tokens, then 45 left of 120: 180 bytes of the second (30 tokens cut), the third left out
    sent = 300 + 180 + len("…30 tokens truncated…") + len("[omitted 1 text items ...]")
    assert (result.chars, result.label) == (sent, "Tool result (truncated as sent)")
    (tool,) = [t for t in session.tool_calls if t.call_id == call]
    assert tool.result_chars == 610


def test_a_sanitised_list_output_is_measured_by_its_markers(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A list output whose first item is a redaction marker: each item is measured on its
    own (the marker at its stated length, not the joined text's first marker), cut as
    sent; the call keeps the items' whole length."""
    from rules_spy import spy

    added = spy(monkeypatch)
    lines = [record(PLAIN, n) for n in range(1, 16)]
    lines[4]["payload"]["truncation_policy"] = {"mode": "tokens", "limit": 100}
    lines[14]["payload"]["output"] = [
        {"type": "input_text", "text": "[REDACTED_MCP_OUTPUT len=2000 sha=ab12]"},
        {"type": "input_text", "text": "y" * 10},
    ]
    session, _ = read_single(write(tmp_path, lines, "rollout-redacted-items.jsonl"))
    call = lines[14]["payload"]["call_id"]
    (result,) = [a for a in added if a.id == f"result:{call}"]
    sent = 480 + len("…380 tokens truncated…") + len("[omitted 1 text items ...]")
    label = "Tool result (truncated as sent) (length from a redaction marker)"
    assert (result.chars, result.label) == (sent, label)
    (tool,) = [t for t in session.tool_calls if t.call_id == call]
    assert tool.result_chars == 2010


def test_the_corpus_outputs_past_the_budget_are_measured_as_sent(monkeypatch: Any) -> None:
    """The sanitised 0.104 Desktop rollouts state tokens 10000 (48,000 bytes), and two MCP
    outputs there are longer (redaction markers of 83,556 and 75,079 characters, and one
    just past it): sent truncated, measured so; the calls keep what they returned."""
    from agent_profiler.adapters.codex_rollout import sent_size
    from rules_spy import spy
    from shared_paths import CORPUS, SHARED_REASON

    folder = CORPUS / "codex" / "localpush-0.104.0-desktop-sanitized"
    if not folder.is_dir():
        pytest.skip(SHARED_REASON)
    added = spy(monkeypatch)
    budget = (48000, "tokens")
    for name, stated in (
        ("rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl", 83556),
        ("rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl", 75079),
    ):
        added.clear()
        session, _ = read_single(folder / name)
        cut = {a.id: a.chars for a in added if "truncated as sent" in a.label}
        returned = {f"result:{t.call_id}": t.result_chars for t in session.tool_calls}
        assert stated in {returned[item] for item in cut}
        for item, chars in cut.items():
            assert returned[item] > 48000
            assert chars == sent_size(returned[item], budget)
