"""The console script's own path (entry.py), in-process: a plain `export` or `summary` runs
without Typer and must end as the Typer app does — the same one line on stderr and the same
exit code for each kind of failure — and every other command line must reach Typer."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent_profiler import console, entry, exporting
from agent_profiler.diagnostics import shown_path
from shared_paths import TESTS

SMALL = TESTS / "data" / "journals" / "claude-code" / "handmade" / "small.jsonl"


@pytest.fixture(autouse=True)
def _keep_sigterm() -> Iterator[None]:
    """entry.main installs a SIGTERM handler; the test process gets its own back."""
    before = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, before)


def run_main(monkeypatch: pytest.MonkeyPatch, *argv: str) -> int:
    monkeypatch.setattr(sys, "argv", ["agent-profiler", *argv])
    with pytest.raises(SystemExit) as ended:
        entry.main()
    code = ended.value.code
    assert isinstance(code, int)
    return code


def failing_with(
    monkeypatch: pytest.MonkeyPatch, make: Callable[[], BaseException], command: str = "export"
) -> None:
    def run(**_: object) -> int:
        raise make()

    monkeypatch.setattr(exporting, f"run_{command}", run)


def test_a_plain_export_runs_without_typer_and_writes_the_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_typer() -> None:
        raise AssertionError("a plain export reached Typer")

    monkeypatch.setattr("agent_profiler.cli.main", no_typer)
    out = tmp_path / "t.pftrace"
    assert run_main(monkeypatch, "export", str(SMALL), "-o", str(out)) == 0
    assert out.stat().st_size > 0
    said = capsys.readouterr()
    assert said.out.startswith(f"wrote {out} (") and "error" not in said.err


def test_a_missing_journal_is_named_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.jsonl"
    assert run_main(monkeypatch, "export", str(missing), "-o", str(tmp_path / "t.pftrace")) == 1
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err.splitlines() == [
        f"error: {missing.name}: no such file or directory",
        "error: nothing to export (no readable sessions)",
    ]
    assert not list(tmp_path.iterdir())


def test_an_output_that_cannot_be_written_is_one_line_and_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "missing-folder" / "t.pftrace"
    assert run_main(monkeypatch, "export", str(SMALL), "-o", str(out)) == 1
    said = capsys.readouterr()
    assert said.out == ""
    # shown as an input is (diagnostics.shown_path): no absolute path, with its user name
    said_out = shown_path(str(out))
    assert said.err == f"error: {said_out}: cannot write here (No such file or directory)\n"


def test_an_existing_output_is_a_usage_error_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t.pftrace"
    out.write_bytes(b"keep me")
    assert run_main(monkeypatch, "export", str(SMALL), "-o", str(out)) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: ") and "--force" in line
    assert out.read_bytes() == b"keep me"


def test_a_binary_trace_is_not_written_to_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert run_main(monkeypatch, "export", str(SMALL), "-o", "-") == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert said.err == (
        "error: refusing to write a binary trace to a terminal: use -o FILE, redirect "
        "stdout, or --format json\n"
    )


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_a_binary_trace_is_not_written_to_a_terminal_named_by_its_path(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`-o /dev/tty` (or the terminal's /dev/pts/N) wrote the trace's bytes to the screen,
    while `-o -` and `-o /dev/stdout` on a terminal are refused."""
    leader, follower = os.openpty()
    try:
        terminal = os.ttyname(follower)
        assert run_main(monkeypatch, "export", str(SMALL), "-o", terminal) == 2
        said = capsys.readouterr()
        assert said.err == (
            f"error: refusing to write a binary trace to a terminal ({terminal}): use -o FILE "
            "or --format json\n"
        )
        os.set_blocking(leader, False)
        with pytest.raises(BlockingIOError):
            os.read(leader, 1 << 16)  # nothing reached the terminal
    finally:
        os.close(leader)
        os.close(follower)


@pytest.mark.parametrize(
    ("make", "code", "said"),
    [
        (KeyboardInterrupt, 130, "interrupted"),
        (
            lambda: ValueError("boom"),
            70,
            "internal error: ValueError: boom (please report this with the harness name "
            "and version)",
        ),
    ],
)
@pytest.mark.parametrize("command", ["export", "summary"])
def test_ctrl_c_and_a_bug_end_in_the_same_line_as_on_the_typer_path(
    command: str,
    make: Callable[[], BaseException],
    code: int,
    said: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    failing_with(monkeypatch, make, command)
    monkeypatch.setattr("agent_profiler.cli.main", lambda: pytest.fail("reached Typer"))
    assert run_main(monkeypatch, command, str(SMALL)) == code
    assert capsys.readouterr() == ("", said + "\n")


@pytest.mark.parametrize("command", ["export", "summary"])
def test_a_closed_stdout_ends_quietly_with_141(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    failing_with(monkeypatch, BrokenPipeError, command)
    monkeypatch.setattr("agent_profiler.cli.main", lambda: pytest.fail("reached Typer"))
    assert run_main(monkeypatch, command, str(SMALL), *(["-o", "-"] * (command == "export"))) == 141
    assert capsys.readouterr() == ("", "")


def test_sigterm_unwinds_as_exit_143_saying_terminated(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def terminated(**_: object) -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not stop the export")

    monkeypatch.setattr(exporting, "run_export", terminated)
    assert run_main(monkeypatch, "export", str(SMALL)) == console.EXIT_TERMINATED == 143
    assert entry.EXIT_TERMINATED == console.EXIT_TERMINATED
    # One word, as Ctrl-C's `interrupted` (it ended without a line)
    assert capsys.readouterr().err == "terminated\n"


def test_sigterm_in_a_typer_command_says_terminated_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def terminated(*_: object, **__: object) -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not stop the report")

    monkeypatch.setattr(exporting, "run_report", terminated)
    monkeypatch.setattr("agent_profiler.cli.run_report", terminated)
    assert run_main(monkeypatch, "report", str(SMALL)) == 143
    assert capsys.readouterr().err == "terminated\n"


def test_sigterm_while_a_module_is_half_imported_is_143_not_an_import_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The handler imported console.py for its exit code: a SIGTERM that came while
    console.py itself was being imported ended in "cannot import name … from partially
    initialized module" and a traceback (seen under load by the SIGTERM worker test)."""
    import builtins

    real = builtins.__import__

    def half_imported(name: str, *args: object, **kwargs: object) -> object:
        if name == "agent_profiler.console":
            raise ImportError("cannot import name 'EXIT_TERMINATED' (partially initialized)")
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", half_imported)
    with pytest.raises(SystemExit) as ended:
        entry._terminate(signal.SIGTERM, None)
    assert ended.value.code == 143


def test_sigterm_inside_the_import_system_is_sent_again_not_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A SystemExit raised by the handler while importlib compiled a module was lost: the
    export ran to its end and exited 0 (the SIGTERM worker test, under load). Inside the
    import system the handler does not raise: it sends the signal again a moment later,
    to be handled outside it; anywhere else it raises at once."""
    import time
    from types import SimpleNamespace

    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(entry.os, "kill", lambda pid, signum: sent.append((pid, signum)))
    code = SimpleNamespace(co_filename="<frozen importlib._bootstrap_external>")
    ours = SimpleNamespace(f_code=SimpleNamespace(co_filename=entry.__file__), f_back=None)
    importing = SimpleNamespace(f_code=code, f_back=ours)
    inner = SimpleNamespace(f_code=SimpleNamespace(co_filename="x.py"), f_back=importing)
    entry._terminate(signal.SIGTERM, inner)  # returns: nothing raised
    deadline = time.monotonic() + 5
    while not sent and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sent == [(os.getpid(), signal.SIGTERM)]
    with pytest.raises(SystemExit) as ended:
        entry._terminate(signal.SIGTERM, ours)
    assert ended.value.code == 143 and len(sent) == 1


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="no signal masks here")
def test_orjson_is_set_up_with_ctrl_c_and_sigterm_held_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """orjson's compiled set-up crashed (a segfault, or SystemError) when a signal
    handler raised inside it: both signals wait while it is imported, and only then."""
    import builtins

    real_import = builtins.__import__
    held: list[set[signal.Signals]] = []

    def spying(name: str, *args: object, **kwargs: object) -> object:
        if name == "orjson":
            held.append(signal.pthread_sigmask(signal.SIG_BLOCK, []))
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", spying)
    entry._import_orjson_whole()
    monkeypatch.setattr(builtins, "__import__", real_import)
    after = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    assert len(held) == 1 and {signal.SIGINT, signal.SIGTERM} <= held[0]
    assert not {signal.SIGINT, signal.SIGTERM} & after


def test_summary_runs_its_own_fast_path_even_when_its_arguments_would_parse_as_an_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # an export would write small.pftrace here
    monkeypatch.setattr("agent_profiler.cli.main", lambda: pytest.fail("reached Typer"))
    assert run_main(monkeypatch, "summary", str(SMALL)) == 0
    said = capsys.readouterr()
    assert said.out.startswith("| session ") and "wrote" not in said.err
    assert not list(tmp_path.iterdir())


def test_another_command_goes_to_typer_even_when_its_arguments_would_parse_as_an_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # an export would write small.pftrace here
    reached: list[list[str]] = []
    monkeypatch.setattr("agent_profiler.cli.main", lambda: reached.append(sys.argv[1:]))
    monkeypatch.setattr(sys, "argv", ["agent-profiler", "report", str(SMALL)])
    entry.main()
    assert reached == [["report", str(SMALL)]]
    assert not list(tmp_path.iterdir())


def test_shell_completion_goes_to_typer_even_for_an_export_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a completion variable set (Typer's `_<PROG>_COMPLETE`), Typer answers: the fast
    path must not export. (Typer names the variable after the running program, which is
    pytest here, so the test stands Typer's entry in for it.)"""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("_AGENT_PROFILER_COMPLETE", "complete_bash")
    reached: list[list[str]] = []
    monkeypatch.setattr("agent_profiler.cli.main", lambda: reached.append(sys.argv[1:]))
    monkeypatch.setattr(sys, "argv", ["agent-profiler", "export", str(SMALL)])
    entry.main()
    assert reached == [["export", str(SMALL)]]
    assert not list(tmp_path.iterdir())  # nothing exported
