"""An `error:` line names its journal as the warnings of the same run do (`shown_path`):
`~` for the home folder, a Claude Code project folder without the user name it spells,
and any control character of a file name escaped (`\\x1b`, `\\n`), so that a folder someone
else filled can neither clear the screen nor forge a line. Error lines printed the raw
path: the home folder, the user name twice, the escape codes as they were."""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler import console
from agent_profiler.cli import app
from agent_profiler.errors import JournalError
from samples import CLAUDE_SMALL

runner = CliRunner()


def _garbage(size: int) -> bytes:
    """Bytes that are no journal, the same every run: random ones once failed the test
    when a carriage return among them made the file read as one of lines ending in \\r
    alone (a message of its own)."""
    return random.Random(size).randbytes(size).replace(b"\n", b" ").replace(b"\r", b" ")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder `…/home/zed`, with a Claude Code project folder spelling it, holding a
    journal and a file that is none; the current folder is outside it."""
    home = tmp_path / "home" / "zed"
    project = home / ".claude" / "projects" / (re.sub(r"[^A-Za-z0-9]", "-", str(home)) + "-app")
    project.mkdir(parents=True)
    shutil.copy(CLAUDE_SMALL, project / "0cf3db51-1c73-43bb-8d05-dc02739514a5.jsonl")
    (project / "bad.jsonl").write_bytes(bytes(range(256)) * 4)
    lines = CLAUDE_SMALL.read_text().splitlines(keepends=True)
    (project / "fv.jsonl").write_text(lines[0] + "{broken\n")
    monkeypatch.setenv("HOME", str(home))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return home


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


def test_an_error_names_a_journal_under_home_as_its_warnings_do(home: Path) -> None:
    result = runner.invoke(app, ["summary", str(home / ".claude" / "projects")])
    assert result.exit_code == 1, result.output + result.stderr
    assert _errors(result.stderr) == [
        "error: ~/.claude/projects/app/bad.jsonl:1: not a JSONL journal (first line is not JSON)"
    ]
    assert "  ~/.claude/projects/app/fv.jsonl:2: not JSON" in result.stderr
    assert "zed" not in result.stderr and str(home) not in result.stderr


def test_an_error_of_a_project_folder_given_relative_drops_the_user_name(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    projects = home / ".claude" / "projects"
    monkeypatch.chdir(projects)
    (folder,) = [p.name for p in projects.iterdir()]
    result = runner.invoke(app, ["summary", "--", folder])
    assert _errors(result.stderr) == [
        "error: app/bad.jsonl:1: not a JSONL journal (first line is not JSON)"
    ]
    assert "zed" not in result.stderr


def test_a_missing_file_under_home_is_named_from_home(home: Path) -> None:
    result = runner.invoke(app, ["summary", str(home / "proj" / "none.jsonl")])
    assert _errors(result.stderr)[0] == "error: ~/proj/none.jsonl: no such file or directory"


def test_an_error_ending_the_run_names_its_journal_the_same_way(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert console.failure(JournalError(str(home / "a\x1b[2J.jsonl"), "refused", 3)) == 1
    assert capsys.readouterr().err == "error: ~/a\\x1b[2J.jsonl:3: refused\n"


def test_control_characters_in_file_names_are_escaped_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "esc"
    folder.mkdir()
    lines = CLAUDE_SMALL.read_text().splitlines(keepends=True)
    (folder / "ev\x1b[31mil\nFAKE: line.jsonl").write_text("".join([lines[0], "{x\n", *lines[1:]]))
    (folder / "bad\x1b[2J\r.jsonl").write_bytes(_garbage(300))
    for command in (["summary", "esc"], ["export", "esc", "-o", "t.pftrace"]):
        result = runner.invoke(app, command)
        assert result.exit_code == 1, result.output + result.stderr
        assert "\x1b" not in result.stderr and "\r" not in result.stderr
        assert "error: esc/bad\\x1b[2J\\r.jsonl:1: not a JSONL journal" in result.stderr
        assert "  esc/ev\\x1b[31mil\\nFAKE: line.jsonl:2: not JSON" in result.stderr
        assert not any(line.startswith("FAKE") for line in result.stderr.splitlines())


def test_an_output_named_after_such_a_journal_is_said_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(CLAUDE_SMALL, tmp_path / "a\x1b[2Jb.jsonl")
    result = runner.invoke(app, ["export", "a\x1b[2Jb.jsonl"])
    assert result.exit_code == 0, result.output + result.stderr
    assert (tmp_path / "a\x1b[2Jb.pftrace").exists()
    assert "\x1b" not in result.stdout + result.stderr
    assert result.stdout.startswith("wrote a\\x1b[2Jb.pftrace (")
    assert "open it: agent-profiler open 'a\\x1b[2Jb.pftrace'" in result.stderr
