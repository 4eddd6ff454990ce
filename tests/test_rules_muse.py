"""Every category rule of the Muse Code adapter, pinned on the real 1.4.2 session (copy in
tests/data/journals/muse): context blocks by kind, the request's byte lanes, the prompt, the
assistant history, the base instructions; zero-usage calls (the echo provider of the 1.1.1
excerpt) are not requests; a request starts `duration_ms` before its model_completed."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters.muse_lanes import BLOCKS, Lane, block_category, lane_category
from agent_profiler.model import Basis, Category, Coverage, SourceKind
from rules_spy import by_id, record, sessions, spy, write

DATA = Path(__file__).parent / "data" / "journals" / "muse"
HCN = DATA / "hcn-1.4.2-R4684.1_meta_single-turn_retained-frame.session.jsonl"
ECHO = DATA / "codeburn-1.1.1-R2514.1_echo-provider_excerpt.session.jsonl"

SY, RU, SK, TO, EN, OV, PR, AS, RE, SU, ME, UN = (
    Category.SYSTEM,
    Category.RULES,
    Category.SKILLS,
    Category.TOOLS,
    Category.ENVIRONMENT,
    Category.OVERHEAD,
    Category.PROMPTS,
    Category.ASSISTANT,
    Category.RESULTS,
    Category.SUMMARIES,
    Category.MESSAGES,
    Category.UNATTRIBUTED,
)

# FORMATS-muse §5.3: the kind of each context block.
BLOCK_KINDS = {
    "rules_file": (RU, "Rules file"),
    "memory_snapshot": (RU, "Memory snapshot"),
    "skills_catalog": (SK, "Skills catalog"),
    "skills": (SK, "Skills catalog"),
    "agent_definition_catalog": (SK, "Agent definitions catalog"),
    "workspace_identity": (EN, "Workspace identity"),
    "security_mode": (EN, "Security mode"),
    "sandbox_policy": (EN, "Sandbox policy"),
    "session_identity": (EN, "Session identity"),
    "context_usage": (EN, "Context usage"),
    "user_shell_command": (EN, "Shell command"),
    "workflow_choice": (SY, "Workflow guidance"),
    "workflow_cookbook": (SY, "Workflow cookbook"),
    "subagent_delegation": (SY, "Subagent delegation guidance"),
    "meta_context_note": (SY, "Muse core note"),
    "step_budget": (OV, "Step budget"),
    "file_mention": (PR, "File mention"),
    "user_steer": (PR, "User steer"),
    "subagent_result": (RE, "Subagent result"),
    "background_task_terminal": (RE, "Background task result"),
    "mcp_resource": (RE, "MCP resource"),
}
MARKER = re.compile(r"^<redacted: .*, (\d+) chars>$", re.DOTALL)


def _event(line: int, path: Path = HCN) -> dict[str, Any]:
    event = record(path, line)["payload"]["event"]
    assert isinstance(event, dict)
    return event


@pytest.mark.parametrize("block_id", sorted(BLOCK_KINDS))
def test_every_block_kind(block_id: str) -> None:
    assert block_category(block_id) == BLOCK_KINDS[block_id]
    assert block_category("unknown-id", block_id) == BLOCK_KINDS[block_id]  # by source
    assert set(BLOCKS) == set(BLOCK_KINDS)


def test_an_unknown_block_is_unattributed() -> None:
    assert block_category("fancy_new_block") == (
        UN,
        "Context block fancy_new_block (kind not known)",
    )
    assert block_category("", "src") == (UN, "Context block src (kind not known)")


LANES = [
    ("system_base", "provider_default", "option:meta.instructions", SY),
    ("tool_specs", "default", "request.tools", TO),
    ("tool_result", "tool", "message.role:tool", RE),
    ("provider_options", "provider_request_options", "option:meta.model", OV),
    ("history", "compaction_summary", "message.role:user", SU),
    ("history", "summary", "message.role:developer", SU),
    ("history", "current_user", "message.role:developer", PR),
    ("history", "prior_turns", "message.role:user", PR),
    ("history", "prior_turns", "message.role:assistant", AS),
    ("history", "prior_turns", "message.role:developer", ME),
    ("something_new", "x", "y", UN),
]


@pytest.mark.parametrize(("lane", "source", "destination", "category"), LANES)
def test_every_lane_kind(lane: str, source: str, destination: str, category: Category) -> None:
    assert lane_category(Lane(lane, source, destination, 10)) is category


def _diagnostic_bytes() -> dict[str, int]:
    out = {}
    for line in range(24, 35):
        event = _event(line)
        out[event["block_id"]] = event["text_bytes"]
    return out


def test_the_items_of_a_real_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """Line 22 (the prompt), 35 (base instructions and 11 context blocks), 61 (the answer)."""
    added = spy(monkeypatch)
    sessions(HCN)
    items = by_id(added)
    prompt = _event(22)["prompt"]
    got = items["prompt:d0faab84-e05f-48ad-9c5d-5c6e85984779"]
    assert (got.category, got.chars, got.tokens, got.source_kind) == (
        PR,
        len(prompt),
        -(-len(prompt) // 4),
        SourceKind.PROMPT,
    )
    configured = _event(35)
    got = items["system:base_instructions"]
    assert (got.category, got.label, got.chars) == (SY, "System", 40_884)
    assert len(configured["base_instructions"]) == 40_884
    measured = _diagnostic_bytes()
    blocks = configured["run_context_messages"]
    assert len(blocks) == 11
    for block in blocks:
        category, label = BLOCK_KINDS[block["id"]]
        text = block["text"]
        marker = MARKER.match(text)
        if marker:
            chars, label = int(marker.group(1)), f"{label} (length from a redaction marker)"
        elif len(text.encode()) != measured[block["id"]]:
            chars, label = measured[block["id"]], f"{label} (length from context_block_diagnostic)"
        else:
            chars = len(text)
        got = items[f"context:{block['id']}"]
        assert (got.category, got.label, got.chars) == (category, label, chars), block["id"]
    answer = _event(61)
    got = items[answer["message_id"]]
    assert (got.category, got.label, got.chars) == (AS, "Assistant history", 5)
    assert got.source_kind is SourceKind.RESPONSE


def test_the_request_snapshot_is_its_lanes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Line 51's lanes /4 are the snapshot; the context lane split by the blocks' measured
    bytes, its glue overhead; what the lanes miss of input_tokens (line 64) is its own item."""
    (session,) = sessions(HCN)
    (response,) = session.responses
    completed = _event(64)
    assert response.usage.prompt_tokens == completed["usage"]["input_tokens"] == 31_979
    assert response.usage.reasoning_tokens == 38
    ended = record(HCN, 64)["recorded_at"] * 1_000
    assert (response.end_ns, response.end_ns - response.start_ns) == (ended, 4_838 * 1_000_000)
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == response.id]
    # tool_specs says 0 bytes though tools are sent: the lanes miss part of the input.
    assert (snapshot.basis, snapshot.coverage) == (Basis.NATIVE_BYTES, Coverage.PARTIAL)
    lanes = {
        (a["logical_lane"]["value"], a["source"]["value"]): a["byte_count"]
        for a in _event(51)["bounded"]["aggregates"]
    }
    measured = _diagnostic_bytes()
    by: dict[Category, int] = {}
    for block_id, size in measured.items():
        category = BLOCK_KINDS[block_id][0]
        by[category] = by.get(category, 0) + size
    by[SY] += lanes[("system_base", "provider_default")]
    by[OV] = lanes[("context", "run_context")] - sum(measured.values())
    by[PR] = lanes[("history", "current_user")]
    expected = {c: -(-b // 4) for c, b in by.items() if b}
    expected[UN] = 31_979 - sum(expected.values())
    assert dict(snapshot.categories) == expected
    assert sum(dict(snapshot.categories).values()) == snapshot.reported_tokens == 31_979


def test_without_lanes_the_request_falls_back_to_items(tmp_path: Path) -> None:
    values = [json.loads(text) for text in HCN.read_text().splitlines() if text.strip()]
    kept = [v for i, v in enumerate(values, 1) if i != 51]
    (session,) = sessions(write(tmp_path, kept, name="session.jsonl"))
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == session.responses[0].id]
    assert (snapshot.basis, snapshot.coverage) == (Basis.CHARS, Coverage.PARTIAL)
    categories = dict(snapshot.categories)
    assert categories[PR] == -(-len(_event(22)["prompt"]) // 4)


def test_echo_provider_calls_are_not_requests() -> None:
    """The 1.1.1 excerpt: `--provider echo` reports zero usage (line 13)."""
    assert not any(_event(13, ECHO)["usage"].values())
    (session,) = sessions(ECHO)
    assert session.responses == ()


def test_tool_calls_and_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Line 61 turned into a tool call (args are a JSON string), and its result after it."""
    values = [json.loads(text) for text in HCN.read_text().splitlines() if text.strip()]
    call_line = copy.deepcopy(values[60])
    call_line["payload"]["event"] = {
        "kind": "assistant_tool_calls_committed",
        "tool_calls": [{"call_id": "call-1", "name": "read_file", "args": '{"path": "a.py"}'}],
    }
    result_line = copy.deepcopy(values[60])
    result_line["payload"]["event"] = {
        "kind": "tool_result_committed",
        "tool_call_id": "call-1",
        "text": "print('hi')\n",
    }
    open_call = [*values[:60], call_line, *values[61:]]
    with_result = [*values[:60], call_line, result_line, *values[61:]]
    added = spy(monkeypatch)
    (done,) = sessions(write(tmp_path, with_result, name="session.jsonl"))
    items = by_id(added)
    got = items["call:call-1"]
    assert (got.category, got.label, got.chars, got.source_kind) == (
        AS,
        "Tool arguments",
        len("read_file") + len('{"path": "a.py"}'),
        SourceKind.TOOL,
    )
    got = items["result:call-1"]
    assert (got.category, got.label, got.chars, got.source_id) == (RE, "Tool result", 12, "call-1")
    (tool,) = [t for t in done.tool_calls if t.call_id == "call-1"]
    assert (tool.incomplete, tool.result_chars, tool.arg_keys) == (False, 12, ("path",))
    other = tmp_path / "open"
    other.mkdir()
    (unfinished,) = sessions(write(other, open_call, name="session.jsonl"))
    (tool,) = [t for t in unfinished.tool_calls if t.call_id == "call-1"]
    assert tool.incomplete is True
