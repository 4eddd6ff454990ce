"""Stdout and stderr that fail under a command (review-outfail D1, D4, D10 and its minor
list): every byte of an output is written or the command fails; a stderr that cannot be
written loses the diagnostics, never the output or the exit code; a line telling of an
output already in place is no failure; a reader that leaves is 141 wherever it reads.

The subprocesses run this checkout's package (PYTHONPATH set to it, whatever the working
folder) with PYTHONUNBUFFERED=1, which this environment and many CI runners set, and
which made stdout a raw stream that drops what a short write did not take."""

from __future__ import annotations

import errno
import fcntl
import io
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

import pytest

import agent_profiler
from agent_profiler import console, outputs
from agent_profiler.errors import OutputError
from samples import CLAUDE_SMALL, PI_LARGE

PACKAGE = str(Path(agent_profiler.__file__).resolve().parents[1])
FULL = Path("/dev/full")
needs_full = pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full")


def _run(
    *args: str, cwd: Path, unbuffered: bool = True, **streams: Any
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": PACKAGE, "HOME": str(cwd)}
    env.pop("PYTHONUNBUFFERED", None)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    streams.setdefault("stdout", subprocess.PIPE)
    streams.setdefault("stderr", subprocess.PIPE)
    return subprocess.run(
        [sys.executable, "-m", "agent_profiler", *args],
        cwd=cwd,
        env=env,
        text=True,
        timeout=120,
        **streams,
    )


# ----------------------------------------------------------------- D1: every byte, or a failure


class _Taking:
    """A raw stream that takes at most `most` bytes a write, then (after `until` bytes)
    fails as a full disk does: what stdout's FileIO does unbuffered."""

    def __init__(self, most: int, until: int | None = None) -> None:
        self.most, self.until, self.data = most, until, bytearray()

    def write(self, data: bytes) -> int:
        if self.until is not None and len(self.data) >= self.until:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        taken = bytes(data[: self.most])
        self.data += taken
        return len(taken)

    def flush(self) -> None:
        pass


def test_stdout_bytes_taken_in_part_are_all_written(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN stdout's bytes a raw stream that takes 1,000 bytes of each write
    raw = _Taking(1000)
    monkeypatch.setattr(sys, "stdout", type("Out", (), {"buffer": raw})())
    data = bytes(range(256)) * 40
    # WHEN an output is delivered to stdout in two writes
    outputs.deliver(None, lambda stream: (stream.write(data), stream.write(data[:10])), [])
    # THEN every byte is there, in order (the rest of each write was dropped, exit 0)
    assert raw.data == data + data[:10]


def test_stdout_that_fills_after_a_short_write_is_one_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = _Taking(1000, until=2500)  # a disk with 2,500 bytes free
    monkeypatch.setattr(sys, "stdout", type("Out", (), {"buffer": raw})())
    monkeypatch.setattr(console, "quiet_stdout", lambda: None)  # (our stdout is pytest's)
    with pytest.raises(OutputError, match=r"^stdout: No space left on device$"):
        outputs.deliver(None, lambda stream: stream.write(b"x" * 10_000), [])


def test_the_text_streams_get_a_buffer_that_writes_whole() -> None:
    # The unbuffered text stream's raw FileIO ignored a short count (summary --json cut
    # short, exit 0); its stand-in writes through a BufferedWriter, which does not.
    with tempfile.TemporaryFile("w+") as backing:
        unbuffered = io.TextIOWrapper(
            io.FileIO(backing.fileno(), "w", closefd=False), write_through=True
        )
        steady = console.whole_writes(unbuffered)
        assert type(steady.buffer) is io.BufferedWriter and steady.line_buffering
        steady.write("a line\n")  # flushed at the line's end, as unbuffered it was
        assert os.pread(backing.fileno(), 100, 0) == b"a line\n"
    buffered = io.TextIOWrapper(io.BytesIO())
    assert console.whole_writes(buffered) is buffered


@pytest.mark.skipif(not hasattr(fcntl, "F_SETPIPE_SZ"), reason="pipe sizes are Linux's")
def test_a_reader_that_leaves_after_10_bytes_is_141_unbuffered(tmp_path: Path) -> None:
    # GIVEN stdout a pipe of one page, whose reader reads 10 bytes of the JSON (written
    # in one write larger than the pipe: the write is under way when it returns) and leaves
    read, write = os.pipe()
    fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, 4096)
    env = {**os.environ, "PYTHONPATH": PACKAGE, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "agent_profiler", "summary", "--json", "--calls"]
    process = subprocess.Popen(  # (130 KB of JSON)
        [*command, str(PI_LARGE)], stdout=write, stderr=subprocess.PIPE, env=env
    )
    os.close(write)
    assert len(os.read(read, 10)) == 10
    os.close(read)
    assert process.stderr is not None
    stderr = process.stderr.read().decode()
    process.stderr.close()
    # THEN the shell's code for a broken pipe, silently (it was 0: the rest of the
    # short write dropped without a word)
    assert (process.wait(timeout=120), stderr) == (141, "")


@pytest.fixture
def small_disk() -> Iterator[Path]:
    """A 16 KB tmpfs: a real full disk (root, where mounts are allowed), else skipped."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a small disk needs root")
    folder = Path(tempfile.mkdtemp(prefix="small-disk-"))
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode:
        folder.rmdir()
        pytest.skip("mounts are not allowed here")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)
        folder.rmdir()


@pytest.mark.parametrize(
    "args",
    [("export", str(PI_LARGE), "-o", "-"), ("summary", "--json", "--calls", str(PI_LARGE))],
    ids=["export", "summary-json"],
)
def test_stdout_on_a_full_disk_fails_unbuffered(
    small_disk: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    # GIVEN an output (a 90 KB trace, 130 KB of JSON) larger than the disk stdout is on
    with open(small_disk / "out", "w") as out:
        done = _run(*args, cwd=tmp_path, stdout=out)
    # THEN it fails in one line (the write crossing the disk's end was short, the rest
    # dropped, and the run said `wrote stdout`, exit 0)
    assert (done.returncode, done.stderr.splitlines()[-1:]) == (
        1,
        ["error: stdout: No space left on device"],
    ), done.stderr


def test_the_trace_on_stdout_is_the_trace_in_a_file(tmp_path: Path) -> None:
    # Unbuffered or not, `-o -` writes the bytes `-o FILE` does.
    for unbuffered in (True, False):
        with open(tmp_path / "piped.pftrace", "wb") as out:
            piped = _run(
                "export", str(CLAUDE_SMALL), "-o", "-",
                cwd=tmp_path, stdout=out, unbuffered=unbuffered,
            )  # fmt: skip
        named = _run(
            "export", str(CLAUDE_SMALL), "-o", "named.pftrace", "--force",
            cwd=tmp_path, unbuffered=unbuffered,
        )  # fmt: skip
        assert (piped.returncode, named.returncode) == (0, 0)
        assert (tmp_path / "piped.pftrace").read_bytes() == (
            tmp_path / "named.pftrace"
        ).read_bytes()


# ------------------------------------------------------ D4: a stderr that cannot be written


@needs_full
@pytest.mark.parametrize("unbuffered", [True, False], ids=["unbuffered", "buffered"])
def test_a_full_stderr_loses_the_lines_not_the_summary(tmp_path: Path, unbuffered: bool) -> None:
    # GIVEN a journal that is missing beside one that reads (an `error:` line to say)
    with FULL.open("w") as full:
        done = _run(
            "summary",
            str(CLAUDE_SMALL),
            "gone.jsonl",
            cwd=tmp_path,
            stderr=full,
            unbuffered=unbuffered,
        )
    # THEN the table is printed and the missing file still makes it exit 1 (it printed
    # nothing: the first stderr line raised, then failure() raised writing its own)
    assert done.returncode == 1
    assert "| session" in done.stdout


@needs_full
def test_a_full_stderr_leaves_an_export_successful(tmp_path: Path) -> None:
    (tmp_path / "t.pftrace").write_bytes(b"previous")
    with FULL.open("w") as full:
        done = _run(
            "export", str(CLAUDE_SMALL), "-o", "t.pftrace", "--force", cwd=tmp_path, stderr=full
        )
    # (its `skipped on purpose` and `open it:` lines: exit 1 after the file was replaced)
    assert done.returncode == 0
    assert (tmp_path / "t.pftrace").read_bytes()[:1] == b"\x0a"


@needs_full
def test_a_usage_error_with_a_full_stderr_is_still_2(tmp_path: Path) -> None:
    with FULL.open("w") as full:
        done = _run("export", str(CLAUDE_SMALL), "--no-such-flag", cwd=tmp_path, stderr=full)
    assert done.returncode == 2  # (Click's message raised: exit 1)


def test_a_stderr_whose_reader_left_loses_the_lines_not_the_summary(tmp_path: Path) -> None:
    read, write = os.pipe()
    os.close(read)
    try:
        done = _run("summary", str(CLAUDE_SMALL), "gone.jsonl", cwd=tmp_path, stderr=write)
    finally:
        os.close(write)
    # (it was 141 with nothing printed: a broken stderr taken for a broken stdout)
    assert done.returncode == 1
    assert "| session" in done.stdout


def test_the_stderr_stand_in_gives_up_once_and_keeps_going(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Failing(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    held: list[int] = []
    monkeypatch.setattr(console.os, "dup2", lambda fd, to: held.append(to))
    stderr = console.Stderr(cast(IO[str], Failing()))
    monkeypatch.setattr(sys, "stderr", stderr)
    console.echo("a warning", err=True)
    assert console.failure(OutputError("out: No space left on device")) == 1
    assert held == [2] and isinstance(stderr.stream, console.Closed)
    assert not stderr.isatty()


# -------------------------------------------- D10: a line telling of an output in place


def _closing(fd: int) -> None:
    os.close(fd)


@pytest.mark.parametrize(
    ("args", "made"),
    [
        (("export", str(CLAUDE_SMALL), "-o", "t.pftrace", "--force"), "t.pftrace"),
        (("report", str(CLAUDE_SMALL), "-o", "r.html", "--force"), "r.html"),
        (("collect", str(CLAUDE_SMALL), "--to", "ds"), "ds"),
    ],
    ids=["export", "report", "collect"],
)
@pytest.mark.parametrize("stdout", ["closed", "full", "pipe-reader-gone"])
def test_an_output_in_place_is_success_whatever_its_closing_line_meets(
    tmp_path: Path, args: tuple[str, ...], made: str, stdout: str
) -> None:
    # GIVEN a previous output (export, report): the run replaces it
    if made != "ds":
        (tmp_path / made).write_bytes(b"previous")
    if stdout == "closed":  # `>&-`
        done = _run(*args, cwd=tmp_path, stdout=None, preexec_fn=lambda: _closing(1))
    elif stdout == "full":
        if not FULL.exists():
            pytest.skip("needs /dev/full")
        with FULL.open("w") as full:
            done = _run(*args, cwd=tmp_path, stdout=full)
    else:
        read, write = os.pipe()
        os.close(read)
        try:
            done = _run(*args, cwd=tmp_path, stdout=write)
        finally:
            os.close(write)
    # THEN it is written and the run says so in its exit code (it was `error: stdout: not
    # open`, exit 1, with the previous file gone; or 141)
    assert (done.returncode, done.stderr.count("error")) == (0, 0), done.stderr
    assert made == "ds" or (tmp_path / made).read_bytes() != b"previous"
    assert made != "ds" or (tmp_path / "ds" / "current").exists()


def test_a_trace_to_a_closed_stdout_is_still_a_failure(tmp_path: Path) -> None:
    done = _run(
        "export", str(CLAUDE_SMALL), "-o", "-", cwd=tmp_path, stdout=None,
        preexec_fn=lambda: _closing(1),
    )  # fmt: skip
    assert (done.returncode, done.stderr.splitlines()[-1]) == (1, "error: stdout: not open")


# ------------------------------------------------------------- minor: one code, one word


@pytest.mark.parametrize("args", [("--help",), ("--version",), ("export", "--help")])
def test_help_and_version_into_a_closed_pipe_are_141(tmp_path: Path, args: tuple[str, ...]) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before a byte is written
    try:
        done = _run(*args, cwd=tmp_path, stdout=write)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")  # (Click's own: exit 1)


@pytest.mark.parametrize("format_name", ["perfetto", "json"])
def test_a_pipe_output_whose_reader_left_is_141_as_stdout_is(
    tmp_path: Path, format_name: str
) -> None:
    read, write = os.pipe()
    os.close(read)
    try:
        done = _run(
            "export", str(CLAUDE_SMALL), "-o", f"/dev/fd/{write}", "--format", format_name,
            cwd=tmp_path, pass_fds=(write,),
        )  # fmt: skip
    finally:
        os.close(write)
    # (it was `error: /dev/fd/N: Broken pipe`, exit 1)
    assert (done.returncode, done.stderr) == (141, "")
