"""One tool call whose argument (or result) nests deeper than orjson writes (255 levels)
must not cost the session: every adapter sizes arguments through the one guarded measure
(`estimate.tool_call_text`, `drafts.ToolArguments`). Muse used to call `orjson.dumps`
unguarded and lost the whole session; Pi and Codex are checked alongside it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.model import Harness, Session

DEEP: Any = json.loads("[" * 300 + "]" * 300)  # 300 levels: orjson reads it, cannot write it


def read(path: Path) -> list[Session]:
    diagnostics = Diagnostics()
    result = load([path], diagnostics)
    assert result.failures == []
    return result.sessions


def _muse_record(sequence: int, event: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "id": f"id-{sequence}",
        "stream": {"kind": "session", "id": "deep-1"},
        "sequence": sequence,
        "recorded_at": 1_791_000_000_000_000 + sequence * 1_000_000,
        "payload_type": "runtime.session",
        "payload": {"kind": "run", "run_id": "r1", "event": event},
    }


def test_a_300_level_argument_does_not_lose_a_muse_session(
    tmp_path: Path, export_trace: Any
) -> None:
    # GIVEN a Muse session whose one tool call has a 300-level argument and result
    call = {"call_id": "c1", "name": "deep", "args": {"a": DEEP}}
    records = [
        _muse_record(1, {"kind": "started", "prompt": "go"}),
        _muse_record(2, {"kind": "assistant_tool_calls_committed", "tool_calls": [call]}),
        _muse_record(3, {"kind": "model_completed", "usage": {"input_tokens": 500}}),
        _muse_record(
            4,
            {
                "kind": "tool_result_batch_committed",
                "results": [{"tool_call_id": "c1", "text": DEEP}],
            },
        ),
        _muse_record(5, {"kind": "model_completed", "usage": {"input_tokens": 900}}),
    ]
    path = tmp_path / "deep" / "session.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    # WHEN it is read
    (session,) = read(path)
    # THEN the session, its call and its requests are all there
    assert session.harness is Harness.MUSE
    (tool,) = session.tool_calls
    assert tool.arg_keys == ("a",) and tool.arg_bytes > 300
    assert len(session.responses) == 2
    export_trace(path, require_addition=False)


def test_a_300_level_argument_does_not_lose_a_pi_session(tmp_path: Path, export_trace: Any) -> None:
    # GIVEN a Pi session whose one tool call has a 300-level argument
    header = {
        "type": "session",
        "version": 3,
        "id": "deep-pi",
        "timestamp": "2026-01-01T10:00:00.000Z",
        "cwd": "/w",
    }

    def entry(n: int, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
        time = f"2026-01-01T10:00:0{n}.000Z"
        return {
            "type": "message",
            "id": f"e{n}",
            "parentId": parent,
            "timestamp": time,
            "message": message,
        }

    usage = {"input": 2, "output": 5, "cacheRead": 400, "cacheWrite": 1}
    lines = [
        header,
        entry(1, None, {"role": "user", "content": [{"type": "text", "text": "go"}]}),
        entry(
            2,
            "e1",
            {
                "role": "assistant",
                "content": [
                    {"type": "toolCall", "id": "c1", "name": "deep", "arguments": {"a": DEEP}}
                ],
                "provider": "anthropic",
                "model": "m1",
                "usage": usage,
                "stopReason": "toolUse",
            },
        ),
        entry(
            3,
            "e2",
            {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "deep",
                "content": [{"type": "text", "text": "ok"}],
                "isError": False,
            },
        ),
    ]
    path = tmp_path / "deep.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    # WHEN it is read
    (session,) = read(path)
    # THEN its call is measured (by its repr, the guarded fallback) and kept
    assert session.harness is Harness.PI
    (tool,) = session.tool_calls
    assert tool.arg_keys == ("a",) and tool.arg_bytes > 300 and not tool.incomplete
    export_trace(path, require_addition=False)
