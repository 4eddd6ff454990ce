"""Where an output goes (`outputs.py`): what the twelfth session's mutation sample found no
test checking in-process (the tests of real pipes, `/dev/full` and stdout redirected run the
tool in a subprocess, which mutmut's mutants never reach). The hand-made Claude Code session
and the 2.1.39 session with subagents, of tests/data."""

from __future__ import annotations

import errno
import io
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from test_claude_code import SPOTTER_DIR, SPOTTER_ID
from typer.testing import CliRunner

from agent_profiler import outputs
from agent_profiler.cli import app
from agent_profiler.errors import OutputError, UsageError
from samples import CLAUDE_SMALL

runner = CliRunner()


def test_an_output_named_like_an_option_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`export x.jsonl -o --force`: the output's name was left out, and --force taken for
    it; one error, exit 2, no file written (outputs.refuse_option_name__mutmut_2 read the
    name as `None`, and wrote a trace called `--force`)."""
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["export", str(CLAUDE_SMALL), "-o", "--force"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: -o --force: --force looks like an option, not a file name; name the file "
        "after -o (for a file of that name, give its full path)"
    ]
    assert not Path("--force").exists()


def test_an_output_that_is_this_commands_standard_error_is_refused(tmp_path: Path) -> None:
    """`-o /dev/stderr`: written in place, the messages and the trace would interleave; one
    error says so (outputs.check_target__mutmut_28 raised it without its words). Under
    pytest, descriptor 2 is a file of pytest's, which `/dev/stderr` names."""
    result = runner.invoke(app, ["export", str(CLAUDE_SMALL), "-o", "/dev/stderr"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: /dev/stderr is this command's standard input or error: name a file "
        "(or -o - for stdout)"
    ]


def test_the_file_stdout_is_redirected_to_is_stdout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`… > t.pftrace -o t.pftrace`: the file stdout was opened on is stdout by another name
    (written as `-o -` is, not renamed over); any other file is not
    (outputs.names_stdout__mutmut_3 failed on a real stdout)."""
    redirected, other = tmp_path / "t.pftrace", tmp_path / "other.pftrace"
    other.touch()
    with redirected.open("w") as stream:
        monkeypatch.setattr(sys, "stdout", stream)
        assert outputs.names_stdout(redirected) and outputs.is_stdout(redirected)
        assert not outputs.names_stdout(other) and not outputs.is_stdout(other)


def test_a_subagent_file_read_beside_the_session_is_never_written_over(tmp_path: Path) -> None:
    """The 2.1.39 session named by its main file: its subagents' files are found beside it
    and read. `-o` one of them, even with --force, is refused once they are read, and the
    file is left as it was (outputs.refuse_read_files__mutmut_2 checked only outputs that
    did not exist yet, so wrote the trace over the subagent's journal)."""
    folder = tmp_path / "spotter"
    shutil.copytree(SPOTTER_DIR, folder)
    subagent = folder / SPOTTER_ID / "subagents" / "agent-a881341.jsonl"
    before = subagent.read_bytes()
    main = folder / f"{SPOTTER_ID}.jsonl.gz"
    result = runner.invoke(app, ["export", str(main), "-o", str(subagent), "--force"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"error: {subagent} is a journal this reads: write the output somewhere else"
    )
    assert subagent.read_bytes() == before


def test_a_file_read_and_gone_since_does_not_end_the_check_of_the_others(tmp_path: Path) -> None:
    """Of the files read, one deleted before the output is written (a journal rotated away
    meanwhile) cannot be compared with the output; the files after it still are
    (outputs.refuse_read_files__mutmut_9 stopped at the first that could not)."""
    gone, journal = tmp_path / "gone.jsonl", tmp_path / "x.jsonl"
    journal.write_text("{}\n")
    with pytest.raises(UsageError, match="is a journal this reads"):
        outputs.refuse_read_files(journal, [gone, journal])


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_an_output_file_has_the_modes_the_umask_leaves(
    tmp_path: Path, umask: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trace is written to a private temporary file (0600), then given the mode any
    new file gets, 0666 less the umask: 0644, or 0600 (outputs.write_atomically__mutmut_35
    gave it 07777: world-writable, set-user-id)."""
    monkeypatch.chdir(tmp_path)
    before = os.umask(umask)
    try:
        result = runner.invoke(app, ["export", str(CLAUDE_SMALL), "-o", "t.pftrace"])
    finally:
        os.umask(before)
    assert result.exit_code == 0, result.stderr
    assert Path("t.pftrace").stat().st_mode & 0o7777 == 0o666 & ~umask


class _Full(io.BytesIO):
    """A stdout on a full disk: its write or its flush fails with ENOSPC."""

    def __init__(self, failing: str) -> None:
        super().__init__()
        self.failing = failing

    def write(self, data: Any) -> int:
        if self.failing == "write":
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().write(data)

    def flush(self) -> None:
        if self.failing == "flush":
            raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("failing", ["write", "flush"])
def test_a_stdout_that_cannot_take_the_output_is_named(
    failing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An output to stdout whose write, or last flush, fails (`> /dev/full`, a full disk):
    an OutputError naming stdout and the system's words, as tests/cli/test_full_stdout.py
    sees in a subprocess (outputs._Stdout.write__mutmut_2 and flush__mutmut_1 handed it no
    error, and failed on that instead)."""

    class Stdout:
        buffer = _Full(failing)

        def fileno(self) -> int:
            raise io.UnsupportedOperation("fileno")

    monkeypatch.setattr(sys, "stdout", Stdout())
    with pytest.raises(OutputError) as caught:
        outputs.deliver(None, lambda stream: stream.write(b"trace"), [])
    assert str(caught.value) == "stdout: No space left on device"
