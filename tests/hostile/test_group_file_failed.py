"""A file the user gave that cannot be read, beside others of its journal group that can
(`Diagnostics.failed`): its own `error:` line, exit 1, as a file given alone, and the rest
of its group still read. It was a `read-error` or `unreadable` warning, because an adapter
could only fail its whole group. Cases: a Codex rollout given among its thread's, an
OpenCode database beside its folder's export, a Claude Code subagent file and a Muse
subagent log given with their session (their folder walked). A file only found beside the
one given stays a warning (test_vanished_after_planning). The races are made as there:
the file is changed right after `loader.plan`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_vanished_after_planning import _after_planning, _tree
from typer.testing import CliRunner

from agent_profiler.cli import app
from samples import CLAUDE_SMALL
from shared_paths import TESTS

DATA = TESTS / "data" / "journals"
SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
SUBAGENT = "258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-a881341.jsonl"
MUSE = DATA / "muse" / "synthetic" / "sessions" / "2026" / "10" / "05"
MUSE_SESSION = "01a20000-0000-7000-8000-00000000a001"
MUSE_CHILD = "subagent/01a20000-0000-7000-8000-00000000c001/session.jsonl"
EXPORT = DATA / "opencode" / "ses_fd4c895f0ffe6gKgxHiEgiQCcd.export.json"
GONE = "cannot open: no such file or directory"
COMMANDS = {"summary": ["--json"], "export": ["-o", "t.pftrace"]}


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _run(command: str, *inputs: str, jobs: str = "1") -> tuple[int, list[str]]:
    done = CliRunner().invoke(app, [command, *inputs, *COMMANDS[command], "-j", jobs])
    assert "Traceback" not in done.output + done.stderr
    assert "internal error" not in done.stderr
    return done.exit_code, done.stderr.splitlines()


def _said_once(lines: list[str], path: Path, message: str) -> None:
    """The file's one line is its `error:` line: no warning names it, nor says the group
    held nothing."""
    assert [line for line in lines if str(path) in line] == [f"error: {path}: {message}"]
    assert not any("no session records" in line for line in lines)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_codex_rollout_given_that_cannot_be_read_is_its_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    parent, child = _tree(tmp_path)
    _after_planning(monkeypatch, child.unlink)
    code, lines = _run(command, str(parent), str(child))
    assert code == 1
    _said_once(lines, child, GONE)
    assert not any("warning" in line for line in lines)
    if command == "export":
        assert Path("t.pftrace").stat().st_size > 0  # the parent's trace, written


def test_a_failure_read_in_a_worker_process_comes_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two groups, two worker processes: the rollout's failure travels back with its
    group's outcome (`GroupOutcome.failures`) and is the same `error:` line."""
    parent, child = _tree(tmp_path)
    _after_planning(monkeypatch, child.unlink)
    done = CliRunner().invoke(
        app, ["summary", str(parent), str(child), str(CLAUDE_SMALL), "--json", "-j", "2"]
    )
    assert done.exit_code == 1
    _said_once(done.stderr.splitlines(), child, GONE)
    assert "thread-p" in done.stdout  # the rest of its group, read in a worker


@pytest.mark.parametrize("command", COMMANDS)
def test_an_opencode_database_beside_its_export_is_its_error_line(command: str) -> None:
    folder = Path("mix")
    folder.mkdir()
    shutil.copy(EXPORT, folder)
    (folder / "opencode.db").write_bytes(b"not a database at all" * 100)
    code, lines = _run(command, str(folder))
    assert code == 1
    database = folder / "opencode.db"
    _said_once(lines, database, "not a SQLite database, or corrupt (file is not a database)")
    assert not any("read-error" in line for line in lines)
    if command == "summary":
        assert not any(line.startswith("error:") and "export" in line for line in lines)


def test_opencode_files_none_readable_are_each_an_error_line() -> None:
    for name, junk in (("opencode.db", b"not a database"), ("opencode-2.db", b"nor is this")):
        Path(name).write_bytes(junk * 100)
    code, lines = _run("summary", "opencode.db", "opencode-2.db")
    assert code == 1
    for name in ("opencode.db", "opencode-2.db"):
        _said_once(lines, Path(name), "not a SQLite database, or corrupt (file is not a database)")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_claude_subagent_file_given_that_cannot_be_read_is_its_error_line(
    monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    shutil.copytree(SPOTTER, "sp")
    subagent = Path("sp") / SUBAGENT
    _after_planning(monkeypatch, subagent.unlink)
    code, lines = _run(command, "sp")
    assert code == 1
    _said_once(lines, subagent, GONE)
    assert not any("unreadable" in line for line in lines)


def test_a_claude_subagent_file_only_found_beside_stays_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shutil.copytree(SPOTTER, "sp")
    subagent = Path("sp") / SUBAGENT
    main = next(Path("sp").glob("*.jsonl*"))
    _after_planning(monkeypatch, subagent.unlink)
    code, lines = _run("summary", str(main))
    assert code == 0  # a warning: the user did not ask for that file
    assert not any(line.startswith("error:") for line in lines)
    assert any("unreadable: 1" in line for line in lines), lines


@pytest.mark.parametrize("command", COMMANDS)
def test_a_muse_subagent_log_given_that_cannot_be_read_is_its_error_line(
    monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    shutil.copytree(MUSE / MUSE_SESSION, MUSE_SESSION)
    shutil.rmtree(Path(MUSE_SESSION) / "approval-review", ignore_errors=True)
    child = Path(MUSE_SESSION) / MUSE_CHILD
    _after_planning(monkeypatch, child.unlink)
    code, lines = _run(command, MUSE_SESSION)
    assert code == 1
    _said_once(lines, child, GONE)
    assert not any("unreadable" in line for line in lines)


def test_a_muse_subagent_log_only_found_beside_stays_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shutil.copytree(MUSE / MUSE_SESSION, MUSE_SESSION)
    child = Path(MUSE_SESSION) / MUSE_CHILD
    _after_planning(monkeypatch, child.unlink)
    code, lines = _run("summary", str(Path(MUSE_SESSION) / "session.jsonl"))
    assert code == 0  # a warning: the user did not ask for that file
    assert not any(line.startswith("error:") for line in lines)
    assert any("unreadable: 1" in line for line in lines), lines
