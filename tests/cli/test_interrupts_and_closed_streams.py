"""Ctrl-C in every part of a run says `interrupted` and ends in 130 (while orjson loads,
before `main`'s guard covered it: a traceback and death by SIGINT; while Typer parses the
line: Typer's own silent exit 130), and a standard stream the shell closed (`<&-`, `>&-`)
is one line naming it (each was `internal error: AttributeError`, exit 70)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import typer.core

from agent_profiler import cli, console, entry
from samples import CLAUDE_SMALL


@pytest.fixture(autouse=True)
def _keep_sigterm() -> Iterator[None]:
    """entry.main installs a SIGTERM handler; the test process gets its own back."""
    before = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, before)


def _interrupt(*_: object, **__: object) -> None:
    raise KeyboardInterrupt


def _exit_code(main: Callable[[], None]) -> object:
    """How `main` ends: its SystemExit's code (a KeyboardInterrupt left out of it would end
    the test session, so it fails the test instead)."""
    try:
        main()
    except SystemExit as ended:
        return ended.code
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C escaped: a traceback and death by SIGINT")
    pytest.fail("main returned")


def test_ctrl_c_while_orjson_loads_says_interrupted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The mask held the signal until orjson was set up, then raised it outside the guard.
    monkeypatch.setattr(entry, "_import_orjson_whole", _interrupt)
    monkeypatch.setattr(sys, "argv", ["agent-profiler", "summary", str(CLAUDE_SMALL)])
    assert _exit_code(entry.main) == 130
    assert capsys.readouterr().err == "interrupted\n"


@pytest.mark.parametrize("command", ["report", "fleet"])
def test_ctrl_c_while_typer_parses_says_interrupted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    monkeypatch.setattr(typer.core.TyperCommand, "parse_args", _interrupt)
    monkeypatch.setattr(sys, "argv", ["agent-profiler", command, str(CLAUDE_SMALL)])
    assert _exit_code(cli.main) == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_duckdb_interrupted_by_ctrl_c_says_interrupted(capsys: pytest.CaptureFixture[str]) -> None:
    # (fleet and collect: DuckDB turns the KeyboardInterrupt into a RuntimeError)
    assert console.failure(RuntimeError("Query interrupted")) == 130
    assert capsys.readouterr().err == "interrupted\n"
    assert console.failure(RuntimeError("something else")) == 70


def _closing(fd: int) -> None:
    os.close(fd)


def _run(close: int, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command run with descriptor `close` closed, as the shell's `<&-` / `>&-` do."""
    return subprocess.run(
        [sys.executable, "-m", "agent_profiler", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL if close != 0 else None,
        stdout=subprocess.PIPE if close != 1 else None,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        preexec_fn=lambda: _closing(close),
    )


@pytest.mark.parametrize(
    "args",
    [
        ["export", "-", "-o", "t.pftrace"],
        ["summary", "-"],
        ["report", "-", "-o", "r.html"],
        ["open", "--no-browser", "-"],
    ],
    ids=["export", "summary", "report", "open"],
)
def test_a_closed_stdin_is_one_line(tmp_path: Path, args: list[str]) -> None:
    done = _run(0, tmp_path, *args)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[0] == "error: <stdin>: cannot read: standard input is closed"
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["summary", str(CLAUDE_SMALL)],
        ["export", str(CLAUDE_SMALL), "-o", "-"],
        ["report", str(CLAUDE_SMALL), "-o", "-"],
        ["--help"],
    ],
    ids=["summary", "export-stdout", "report-stdout", "help"],
)
def test_a_closed_stdout_is_one_line(tmp_path: Path, args: list[str]) -> None:
    done = _run(1, tmp_path, *args)
    assert done.returncode == 1, done.stderr
    assert "error: stdout: not open" in done.stderr.splitlines()
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr


def test_a_closed_stdout_loses_only_the_closing_line_of_a_file_written(tmp_path: Path) -> None:
    # The `wrote t.pftrace …` line goes to stdout: the trace is in place, exit 0 (it was
    # `error: stdout: not open`, exit 1; test_failing_standard_streams.py has the rest).
    done = _run(1, tmp_path, "export", str(CLAUDE_SMALL), "-o", "t.pftrace")
    assert (done.returncode, "error" in done.stderr) == (0, False), done.stderr
    assert (tmp_path / "t.pftrace").stat().st_size > 0


def test_a_closed_stderr_does_not_end_the_run(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent_profiler", "summary", str(CLAUDE_SMALL), "x.jsonl"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: _closing(2),
    )
    assert done.returncode == 1  # the missing file, said nowhere
    assert "| session" in done.stdout
