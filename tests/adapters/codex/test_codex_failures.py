"""Which Codex tool calls failed, and what an injected skill is, as the newest rollouts write
them: a patch codex-rs refused ("apply_patch verification failed", no patch_apply_end), a
custom tool's "Exit code: N", a command that outlived its call (0.125's unified exec: its
exit is reported once, to the call that read it, not again by exec_command_end), and a
`<skill>` block injected when the user names a skill (0.141).

Hand-made rollouts, the test data's 0.125 rollout, and the corpus's 0.140/0.141 ones (MIT;
skipped when absent), their expectations counted from the raw lines with plain json."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.model import AnchorKind, Category
from samples import CODEX_PLAIN, read_single
from shared_paths import CORPUS, SHARED_REASON

PLAIN = CODEX_PLAIN
V140 = (
    CORPUS / "codex" / "agentv-0.140-0.141" / "agentv-a60726a745-0_v0.140.0_2compactions.jsonl.gz"
)
V141 = CORPUS / "codex" / "agentv-0.140-0.141" / "agentv-3c162d1d8a-1_v0.141.0_model-switch.jsonl"
TS = "2026-06-18T07:41:{:02d}.000Z"


def _raw(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _line(second: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": TS.format(second), "type": kind, "payload": payload}


def _count(second: int, prompt: int) -> dict[str, Any]:
    usage = {"input_tokens": prompt, "output_tokens": 10, "reasoning_output_tokens": 0}
    info = {"last_token_usage": usage, "total_token_usage": {"input_tokens": prompt * second}}
    return _line(second, "event_msg", {"type": "token_count", "info": info})


def _rollout(tmp_path: Path, middle: list[dict[str, Any]]) -> Path:
    head = [
        _line(0, "session_meta", {"id": "s-1", "cli_version": "0.140.0"}),
        _line(0, "turn_context", {"model": "gpt-5.5"}),
        _line(1, "event_msg", {"type": "user_message", "message": "fix it"}),
    ]
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(v) + "\n" for v in head + middle), encoding="utf-8")
    return path


def _patch(second: int, call_id: str, output: str) -> list[dict[str, Any]]:
    call = {"type": "custom_tool_call", "call_id": call_id, "name": "apply_patch", "input": "*"}
    result = {"type": "custom_tool_call_output", "call_id": call_id, "output": output}
    return [
        _line(second, "response_item", call),
        _count(second, 1000 + second),
        _line(second + 1, "response_item", result),
    ]


def test_a_refused_patch_and_a_custom_tools_exit_code_are_failures(tmp_path: Path) -> None:
    refused = "apply_patch verification failed: Failed to find expected lines in a.py:\nx = 1"
    path = _rollout(
        tmp_path,
        [
            *_patch(2, "refused", refused),
            *_patch(4, "exit-1", "Exit code: 1\nWall time: 0 seconds\nOutput:\nerror: no file"),
            *_patch(6, "exit-0", "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess."),
            *_patch(8, "says-nothing", "Success. Updated the following files:\nM a.py"),
            _count(10, 1200),
        ],
    )
    session, _ = read_single(path)
    failed = {call.call_id: call.is_error for call in session.tool_calls}
    assert failed == {"refused": True, "exit-1": True, "exit-0": False, "says-nothing": False}


def _background(second: int, call_id: str, session_id: int) -> list[dict[str, Any]]:
    call = {"type": "function_call", "call_id": call_id, "name": "exec_command", "arguments": "{}"}
    running = f"Chunk ID: 1\nWall time: 1.0 seconds\nProcess running with session ID {session_id}"
    return [
        _line(second, "response_item", call),
        _count(second, 1000 + second),
        _line(second, "response_item", {**call, "type": "function_call_output", "output": running}),
    ]


def test_a_command_that_outlived_its_call_fails_once(tmp_path: Path) -> None:
    """The launching call returned "Process running"; write_stdin read "Process exited with
    code 2"; exec_command_end then says exit 2 for the launching call: one failure, on the
    call that saw it. A command that ran in the foreground still fails by its end event."""
    poll = {"type": "function_call", "call_id": "poll", "name": "write_stdin", "arguments": "{}"}
    exited = "Chunk ID: 2\nWall time: 4.1 seconds\nProcess exited with code 2\nOutput:\nrg: no"
    end = {"type": "exec_command_end", "call_id": "launch", "process_id": "59181", "exit_code": 2}
    foreground = {
        "type": "function_call",
        "call_id": "fg",
        "name": "exec_command",
        "arguments": "{}",
    }
    path = _rollout(
        tmp_path,
        [
            *_background(2, "launch", 59181),
            _line(3, "response_item", poll),
            _count(3, 1010),
            _line(4, "response_item", {**poll, "type": "function_call_output", "output": exited}),
            _line(4, "event_msg", end),
            _line(5, "response_item", foreground),
            _count(5, 1020),
            _line(6, "event_msg", {**end, "call_id": "fg", "exit_code": 1}),
            _line(
                6, "response_item", {**foreground, "type": "function_call_output", "output": "x"}
            ),
            _count(7, 1030),
        ],
    )
    session, _ = read_single(path)
    failed = {call.call_id: call.is_error for call in session.tool_calls}
    assert failed == {"launch": False, "poll": True, "fg": True}


def _mcp(second: int, call_id: str, result: dict[str, Any]) -> list[dict[str, Any]]:
    call = {"type": "function_call", "call_id": call_id, "name": "docs__search", "arguments": "{}"}
    end = {
        "type": "mcp_tool_call_end",
        "call_id": call_id,
        "invocation": {"server": "docs", "tool": "search", "arguments": {}},
        "duration": {"secs": 1, "nanos": 0},
        "result": result,
    }
    output = {"type": "function_call_output", "call_id": call_id, "output": "no such page"}
    return [
        _line(second, "response_item", call),
        _count(second, 1000 + second),
        _line(second + 1, "event_msg", end),
        _line(second + 1, "response_item", output),
    ]


def test_an_mcp_tool_calls_failure_is_its_end_events(tmp_path: Path) -> None:
    """Newer codex-rs keeps `mcp_tool_call_end` in the rollout: its result is `{"Err":
    message}` when the call failed, or `{"Ok": {content, isError}}`. The output item after
    it states no failure."""
    text = [{"type": "text", "text": "no such page"}]
    path = _rollout(
        tmp_path,
        [
            *_mcp(2, "refused", {"Err": "tool call failed: timed out"}),
            *_mcp(4, "is-error", {"Ok": {"content": text, "isError": True}}),
            *_mcp(6, "found", {"Ok": {"content": text, "isError": False}}),
            *_mcp(8, "plain", {"Ok": {"content": text}}),
            *_mcp(10, "snake", {"Ok": {"content": text, "is_error": True}}),  # (mcp-types)
            _count(12, 1200),
        ],
    )
    session, diagnostics = read_single(path)
    failed = {call.call_id: call.is_error for call in session.tool_calls}
    assert failed == {
        "refused": True,
        "is-error": True,
        "found": False,
        "plain": False,
        "snake": True,
    }
    assert "codex:event_msg/mcp_tool_call_end" not in diagnostics.skipped


def _independent_failures(path: Path) -> int:
    """Failed calls counted from the raw lines: an output that states a non-zero exit
    ("Process exited with code N", a leading "Exit code: N") or a refused patch, else a
    non-zero exec_command_end / unsuccessful patch_apply_end of a call whose own output did
    not say its command was still running."""
    outputs: dict[str, str] = {}
    ends: dict[str, bool] = {}
    for line in _raw(path):
        payload = line.get("payload") or {}
        kind = payload.get("type")
        if kind in ("function_call_output", "custom_tool_call_output"):
            output = payload.get("output")
            outputs[payload["call_id"]] = output if isinstance(output, str) else ""
        elif kind == "exec_command_end":
            ends[payload["call_id"]] = payload.get("exit_code") != 0
        elif kind == "patch_apply_end":
            ends[payload["call_id"]] = not payload.get("success")
    failed = 0
    for call_id, output in outputs.items():
        stated = re.search(r"Process exited with code (-?\d+)", output[:400]) or re.match(
            r"Exit code: (-?\d+)\n", output
        )
        if stated:
            failed += int(stated.group(1)) != 0
        elif output.startswith("apply_patch verification failed"):
            failed += 1
        elif "Process running with session ID" not in output[:400]:
            failed += ends.get(call_id, False)
    return failed


def test_the_0_125_rollouts_failures_are_counted_once() -> None:
    """Four commands failed; each was counted twice (8): by exec_command_end on the call
    that launched it, and by the write_stdin output that read its exit."""
    session, _ = read_single(PLAIN)
    assert sum(c.is_error for c in session.tool_calls) == _independent_failures(PLAIN) == 4


@pytest.mark.skipif(not V140.exists(), reason=SHARED_REASON)
def test_the_0_140_rollouts_refused_patch_is_a_failure() -> None:
    session, _ = read_single(V140)
    failed = [c for c in session.tool_calls if c.is_error]
    assert len(failed) == _independent_failures(V140) == 21
    assert [c.name for c in failed].count("apply_patch") == 1


def test_an_injected_skill_is_skills_not_a_prompt(tmp_path: Path) -> None:
    skill = "<skill>\n<name>coordinator</name>\n<path>~/.agents/skills/coordinator/SKILL.md</path>"
    skill += "\n" + "Orchestrate worktree agents.\n" * 100
    message = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": skill}],
    }
    path = _rollout(tmp_path, [_line(2, "response_item", message), _count(3, 2000)])
    session, _ = read_single(path)
    (request,) = [s for s in session.snapshots if s.anchor is AnchorKind.RESPONSE]
    categories = dict(request.categories)
    assert categories[Category.SKILLS] == -(-len(skill) // 4)
    assert Category.PROMPTS not in categories
    (change,) = [c for c in request.changes if c.category is Category.SKILLS]
    assert change.label == "Skill body"


@pytest.mark.skipif(not V141.exists(), reason=SHARED_REASON)
def test_the_0_141_sessions_prompts_are_what_the_user_typed() -> None:
    """The `$coordinator` skill's 7,208-character SKILL.md was counted as a user prompt
    (prompts 2,648 tokens at the end; the 26 typed prompts are 846)."""
    session, _ = read_single(V141)
    last = [s for s in session.snapshots if s.anchor is AnchorKind.RESPONSE][-1]
    assert dict(last.categories)[Category.PROMPTS] == 846
    assert dict(last.categories)[Category.SKILLS] >= 7_208 // 4
