"""Gemini CLI, a parent of many subagents: each is linked to its launching call without a
pass over all the parent's calls per subagent (gemini_cli._Tree indexes them once), by
`agentId` (≥0.39) or by the calls running when it started. Counted, not timed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters import gemini_cli
from agent_profiler.adapters.gemini_session import CallDraft, SessionBuilder
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.model import Session, ToolCall

PARENT = "9dc5818b-fa07-4525-bba2-805c2fb01669"
PROJECT = "80f438cecd03b8230f245e6994cfb4f5c7475d038405a50cb1404aa42b46fed4"


def _at(seconds: float) -> str:
    whole = int(seconds)
    return f"2026-01-01T10:{whole // 60:02d}:{whole % 60:02d}.{round(seconds % 1 * 1000):03d}Z"


def _write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _tree(root: Path, children: int, agent_ids: bool) -> Path:
    """A hand-made JSONL log whose every request makes one call that runs a subagent
    (`isSubagentProgress`), each subagent's log in `chats/<parent>/`, started while its
    call ran; the calls carry `agentId` or not (then linked by time)."""
    chats = root / "chats"
    usage = {"output": 10, "cached": 0, "thoughts": 0, "tool": 0}
    lines: list[dict[str, Any]] = [
        {"sessionId": PARENT, "projectHash": PROJECT, "startTime": _at(0), "kind": "main"},
        {"id": "u0", "timestamp": _at(0), "type": "user", "content": [{"text": "go"}]},
    ]
    for k in range(children):
        t, agent, call_id = 1 + 2 * k, f"agent{k:03d}", f"call_{k}"
        response = {"functionResponse": {"id": call_id, "name": "investigator"}}
        call = {
            "id": call_id,
            "name": "investigator",
            "args": {"objective": f"look at module number {k} please"},
            "status": "success",
            "timestamp": _at(t + 1.5),
            "resultDisplay": {"isSubagentProgress": True},
            "result": [response],
        }
        if agent_ids:
            call["agentId"] = agent
        tokens = {"input": 1000 + k, "total": 1010 + k, **usage}
        lines.append(
            {"id": f"g{k}", "timestamp": _at(t), "type": "gemini", "content": "", "thoughts": []}
            | {"tokens": tokens, "model": "gemini-2.5-pro", "toolCalls": [call]}
        )
        header = {"sessionId": agent, "projectHash": PROJECT, "startTime": _at(t + 0.2)}
        prompt = [{"text": f"Your task is to look at module number {k} please"}]
        reply = {"tokens": {"input": 500, "total": 505, **usage}, "model": "gemini-2.5-flash"}
        _write(
            chats / PARENT / f"{agent}.jsonl",
            [
                header | {"kind": "subagent", "directories": ["/home/USER"]},
                {"id": "s0", "timestamp": _at(t + 0.2), "type": "user", "content": prompt},
                {"id": "s1", "timestamp": _at(t + 1), "type": "gemini", "content": "ok"} | reply,
            ],
        )
    _write(chats / "session-2026-01-01T10-00-9dc5818b.jsonl", lines)
    return chats / "session-2026-01-01T10-00-9dc5818b.jsonl"


class _Calls(tuple[ToolCall, ...]):
    passes = 0

    def __iter__(self) -> Iterator[ToolCall]:
        _Calls.passes += 1
        return super().__iter__()


class _Drafts(dict[str, CallDraft]):
    passes = 0

    def values(self) -> Any:
        _Drafts.passes += 1
        return super().values()

    def items(self) -> Any:
        _Drafts.passes += 1
        return super().items()

    def __iter__(self) -> Iterator[str]:
        _Drafts.passes += 1
        return super().__iter__()


class _Counting(SessionBuilder):
    """The parent's calls and call drafts as read, counting each pass linking makes."""

    def finish(self) -> Session | None:
        session = super().finish()
        if session is not None and not self.subagent:
            object.__setattr__(session, "tool_calls", _Calls(session.tool_calls))
            self.calls = _Drafts(self.calls)
        return session


def _linked(tmp_path: Path, children: int, agent_ids: bool) -> tuple[int, dict[str, str | None]]:
    main = _tree(tmp_path / f"{children}-{agent_ids}", children, agent_ids)
    _Calls.passes = _Drafts.passes = 0
    result = load([main], Diagnostics())
    assert result.failures == []
    links = {s.session_id: s.parent_call_id for s in result.sessions if s.parent_session}
    return _Calls.passes + _Drafts.passes, links


@pytest.mark.parametrize("agent_ids", [True, False], ids=["agentId", "by time"])
def test_thirty_subagents_pass_over_their_parents_calls_as_often_as_three(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent_ids: bool
) -> None:
    """Linking 30 subagents goes through the parent's calls and drafts as often as linking
    3 (before: once or twice each per subagent), and each is linked to its own call."""
    monkeypatch.setattr(gemini_cli, "SessionBuilder", _Counting)
    few, few_links = _linked(tmp_path, 3, agent_ids)
    many, many_links = _linked(tmp_path, 30, agent_ids)
    assert many == few
    assert few_links == {f"{PARENT}/agent{k:03d}": f"call_{k}" for k in range(3)}
    assert many_links == {f"{PARENT}/agent{k:03d}": f"call_{k}" for k in range(30)}
