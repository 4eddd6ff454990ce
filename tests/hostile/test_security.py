"""No network, no paths followed from inside journals, no bodies by default, and
--strict turns warnings into exit code 1."""

from __future__ import annotations

import builtins
import io
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from traceview import plain_bytes

DATA = Path(__file__).resolve().parents[1] / "data" / "journals"
SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
GHAW = DATA / "claude-code" / "gh-aw_sample_claude_log_new_format.txt"
SMALL = DATA / "claude-code" / "handmade" / "small.jsonl"
runner = CliRunner()


def test_export_opens_no_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a socket was opened during export")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    out = tmp_path / "t.pftrace"
    result = runner.invoke(app, ["export", str(SPOTTER), "-o", str(out)])
    assert result.exit_code == 0, result.output + result.stderr
    result = runner.invoke(app, ["summary", str(SPOTTER), "--json"])
    assert result.exit_code == 0


def test_paths_named_in_journals_are_never_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    journal = tmp_path / "j.jsonl"
    record = {
        "type": "user",
        "sessionId": "s",
        "uuid": "u",
        "timestamp": "2026-01-01T00:00:00Z",
        "cwd": str(tmp_path),
        "message": {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t",
                    "content": f"<persisted-output>{secret}</persisted-output>",
                }
            ],
        },
    }
    journal.write_text(json.dumps(record) + "\n")
    opened: list[str] = []
    real_open = builtins.open
    real_io_open = io.open

    def spy(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    def spy_io(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_io_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(io, "open", spy_io)
    result = runner.invoke(app, ["export", str(journal), "-o", str(tmp_path / "t.pftrace")])
    assert result.exit_code == 0, result.output + result.stderr
    assert str(secret) not in opened


def test_default_trace_holds_no_bodies(tmp_path: Path) -> None:
    out = tmp_path / "t.pftrace"
    assert runner.invoke(app, ["export", str(SPOTTER), "-o", str(out)]).exit_code == 0
    data = plain_bytes(out)  # packets inflated: deflated text would hide from the check
    # a phrase from the first user prompt and one from a tool result of the spotter session
    assert b"Implement spotter-gqc" not in data
    assert b"What is the output contract for Claude Code hooks" not in data


def test_previews_are_length_capped(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    result = runner.invoke(app, ["export", str(SPOTTER), "-o", str(out), "--previews"])
    assert result.exit_code == 0
    events = json.loads(out.read_text())["traceEvents"]
    texts = [e["args"]["text"] for e in events if e.get("args", {}).get("kind") == "prompt"]
    assert texts and max(len(t) for t in texts) <= 200
    args = [
        v
        for e in events
        if e.get("args", {}).get("kind") == "tool-execution"
        for v in e["args"].get("args", {}).values()
    ]
    assert args and max(len(v) for v in args) <= 200


def test_strict_turns_warnings_into_exit_1(tmp_path: Path) -> None:
    out = tmp_path / "t.pftrace"
    assert runner.invoke(app, ["export", str(GHAW), "-o", str(out)]).exit_code == 0
    result = runner.invoke(app, ["export", str(GHAW), "-o", str(out), "--force", "--strict"])
    assert result.exit_code == 1 and out.exists()


def test_strict_fails_a_run_with_records_not_recognised(tmp_path: Path) -> None:
    """A record of a type no adapter table knows is not read: --strict, which promises every
    record read as meant, exited 0 on it (it is no warning)."""
    lines = SMALL.read_text().splitlines()
    journal = tmp_path / "new-kind.jsonl"
    journal.write_text("\n".join([*lines, '{"type":"brand-new-kind","uuid":"x1"}']) + "\n")
    out = tmp_path / "t.pftrace"
    plain = runner.invoke(app, ["export", str(journal), "-o", str(out)])
    assert (
        plain.exit_code == 0
        and "not recognised (not read): claude:brand-new-kind 1" in plain.stderr
    )
    strict = runner.invoke(app, ["export", str(journal), "-o", str(out), "--force", "--strict"])
    assert strict.exit_code == 1 and out.exists()


def test_an_interrupted_export_leaves_no_partial_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_profiler.writers import PerfettoWriter

    out = tmp_path / "t.pftrace"
    out.write_bytes(b"the good trace from before")

    def interrupted(self: Any, sessions: Any, stream: Any, group: int) -> int:
        stream.write(b"\x0a\x05half")
        raise KeyboardInterrupt  # Ctrl-C halfway through writing

    monkeypatch.setattr(PerfettoWriter, "write_group", interrupted)
    result = runner.invoke(app, ["export", str(SPOTTER), "-o", str(out), "--force"])
    assert result.exit_code != 0
    assert out.read_bytes() == b"the good trace from before"
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left behind

    def disk_full(self: Any, sessions: Any, stream: Any, group: int) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(PerfettoWriter, "write_group", disk_full)
    result = runner.invoke(app, ["export", str(SPOTTER), "-o", str(out), "--force"])
    assert result.exit_code == 1 and "No space left on device" in result.stderr
    assert out.read_bytes() == b"the good trace from before"
    assert list(tmp_path.iterdir()) == [out]
