"""The one pass against the model path on hand-made Codex rollouts (a small real one,
changed): what the corpus holds little of (a command's duration, no window, a request
left open at the end, rollbacks) must come out equal; what the pass does not handle (a
spawned thread, a command's end read after its call was written, a window first reported
after the first request, a request read after one that starts later) must fall back to
the model path's bytes."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from test_pi_stream_cases import both

from shared_paths import TESTS

SMALL = (
    TESTS
    / "data"
    / "journals"
    / "codex"
    / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
)
FIRST_CALL = "call_OIMY41RetdVChp5U51mMLGOD"
LAST_CALL = "call_kTYGACDKLb03RGgGqdx4XgBl"

Lines = list[dict[str, Any]]


def _event(after: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": after["timestamp"], "type": "event_msg", "payload": payload}


def _index(lines: Lines, kind: str, call_id: str = "") -> int:
    return next(
        i
        for i, line in enumerate(lines)
        if line["payload"].get("type") == kind and line["payload"].get("call_id", "") == call_id
    )


def _exec_end(call_id: str, secs: int) -> dict[str, Any]:
    return {"type": "exec_command_end", "call_id": call_id, "exit_code": 0,
            "duration": {"secs": secs, "nanos": 0}}  # fmt: skip


def late_command_end(lines: Lines) -> None:
    # the first call's command ends (its duration) after the last request
    lines.insert(len(lines) - 1, _event(lines[-2], _exec_end(FIRST_CALL, 5)))


def command_end(lines: Lines) -> None:
    # the last call's command end right after its output: its span is the duration's
    at = _index(lines, "function_call_output", LAST_CALL)
    lines.insert(at + 1, _event(lines[at], _exec_end(LAST_CALL, 3)))


def rollback(lines: Lines) -> None:
    lines.insert(len(lines) - 1, _event(lines[-2], {"type": "thread_rolled_back", "num_turns": 1}))


def rollback_mid(lines: Lines) -> None:
    # a prompt after the first call's output, a request, then that turn rolled back: the
    # requests after it see the context without the prompt and the request's output
    at = _index(lines, "function_call_output", FIRST_CALL)
    text = "and list the workflows first " * 40
    said = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    prompt = {"timestamp": lines[at]["timestamp"], "type": "response_item", "payload": said}
    lines[at + 1 : at + 1] = [prompt, _event(lines[at], {"type": "user_message", "message": text})]
    cut = _index(lines, "function_call_output", "call_SengCcPYInk46d62DPE6eqqb")
    lines.insert(cut + 1, _event(lines[cut], {"type": "thread_rolled_back", "num_turns": 1}))


def time_back(lines: Lines) -> None:
    # the last request's lines stamped a second before the one before it started (at
    # the token_count before it: a clock put back): the one before it is written already
    closes = [i for i, line in enumerate(lines) if line["payload"].get("type") == "token_count"]
    earlier = lines[closes[-4]]["timestamp"]  # (each request's token_count comes twice)
    back = datetime.fromisoformat(earlier.replace("Z", "+00:00")) - timedelta(seconds=1)
    for line in lines[closes[-2] + 1 :]:
        line["timestamp"] = back.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def spawned(lines: Lines) -> None:
    lines[0]["payload"]["source"] = {
        "subagent": {"thread_spawn": {"parent_thread_id": "p-1", "agent_role": "worker"}}
    }


def _windowless(lines: Lines, first: int) -> None:
    counts = 0
    for line in lines:
        payload = line["payload"]
        if payload.get("type") == "task_started":
            payload.pop("model_context_window", None)
        info = payload.get("info") if payload.get("type") == "token_count" else None
        if isinstance(info, dict):
            counts += 1
            if counts <= first:
                info.pop("model_context_window", None)


def no_window(lines: Lines) -> None:
    _windowless(lines, 1_000)


def window_later(lines: Lines) -> None:
    _windowless(lines, 2)


def left_open(lines: Lines) -> None:
    # the last request's usage never came: its output began, no token_count
    assert lines[-2]["payload"]["type"] == "token_count"
    del lines[-2]


CASES: dict[str, tuple[Callable[[Lines], None], bool]] = {
    "command_end": (command_end, True),
    "no_window": (no_window, True),
    "left_open": (left_open, True),
    "late_command_end": (late_command_end, False),
    "rollback": (rollback, True),
    "rollback_mid": (rollback_mid, True),
    "spawned": (spawned, False),
    "time_back": (time_back, False),
    "window_later": (window_later, False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hand_made_rollouts(
    case: str, tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    change, handled = CASES[case]
    lines = [json.loads(line) for line in SMALL.read_text().splitlines()]
    change(lines)
    path = tmp_path / SMALL.name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    # THEN equal to the model path (handled), or its bytes (not handled)
    assert both(path, export_trace, monkeypatch) is handled


def test_damaged_lines_are_said_the_same_way(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a rollout with a cut line and a line that is no object
    lines = SMALL.read_text().splitlines(keepends=True)
    lines.insert(20, '{"timestamp": "2026-02-23T19:34:41.000Z", "type": "event_msg", \n')
    lines.insert(30, "[1, 2]\n")
    path = tmp_path / SMALL.name
    path.write_text("".join(lines))
    # THEN the same warnings, the same trace
    assert both(path, export_trace, monkeypatch)


def test_no_user_path_and_the_same_bytes_with_workers(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_pi_stream_pipeline import run_export

    from agent_profiler import stream

    # GIVEN rollouts whose cwd is under a user's home, a call reading a file under it
    folder = tmp_path / "sessions"
    folder.mkdir()
    for name in ("a", "b"):
        lines = [json.loads(line) for line in SMALL.read_text().splitlines()]
        lines[0]["payload"]["cwd"] = f"/home/alice/work/{name}"
        lines[0]["payload"]["id"] = f"{name * 8}-0000-4000-8000-000000000000"
        at = _index(lines, "function_call", FIRST_CALL)
        path = f"/home/alice/work/{name}/src/parser.py"
        lines[at]["payload"]["arguments"] = json.dumps({"path": path})
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert both(folder / "a.jsonl", export_trace, monkeypatch)
    # THEN the pass's trace says no user's path, and is the same bytes with workers
    monkeypatch.setenv(stream.SWITCH, "1")
    got = export_trace(folder / "a.jsonl", args=("--no-compress",), require_addition=False)
    assert b"alice" not in got.path.read_bytes()
    assert any("parser.py" in str(s.args) for s in got.view.slices)
    once = run_export(folder, tmp_path / "1.pftrace", "--jobs", "1")
    workers = run_export(folder, tmp_path / "2.pftrace", "--jobs", "2")
    assert once == workers
