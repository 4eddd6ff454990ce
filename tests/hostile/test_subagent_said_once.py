"""A subagent's file that is given and cannot be read (damaged, no permission) is said once,
on its `error:` line (it was said again as an `unreadable` warning), and the note on the
subagent its session names says the file was found but could not be read (it asked the
user to pass the folder just given)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from shared_paths import TESTS

runner = CliRunner()
SPOTTER = TESTS / "data" / "journals" / "claude-code" / "spotter-2.1.39-subagents-compaction"
SUBAGENT = "258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl"


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(SPOTTER, tmp_path / "sp")
    monkeypatch.chdir(tmp_path)
    return Path("sp")


@pytest.mark.parametrize("command", ["summary", "export", "collect"])
def test_a_damaged_subagent_file_is_said_once(session: Path, command: str) -> None:
    (session / SUBAGENT).write_bytes(bytes(range(1, 256)) * 16)
    more = {"export": ["-o", "t.pftrace"], "collect": ["--to", "ds"]}.get(command, [])
    args = [command, str(session), *more]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output + result.stderr
    named = [line for line in result.stderr.splitlines() if "agent-a881341" in line]
    assert named == [f"error: sp/{SUBAGENT}:1: not a JSONL journal (first line is not JSON)"]
    assert "1 warning (subagent-not-read: 1)" in result.stderr
    assert (
        "1 subagent named by this session was not read: its file was found but could not be "
        "read, as said above"
    ) in result.stderr
    assert "pass its file or folder" not in result.stderr


def test_a_subagent_file_not_given_is_still_asked_for(session: Path) -> None:
    (session / SUBAGENT).unlink()
    result = runner.invoke(app, ["summary", str(session)])
    assert "was not read: pass its file or folder" in result.stderr
