"""A run killed outright (SIGKILL, the OOM killer) while it held a folder of ours in the
temporary folder (a piped journal's copy, `open`'s trace) left it there for good: a copy of
a journal, bodies and all, in /tmp. The next run that makes such a folder removes those of
processes gone (scratch.py: each holds a lock its process keeps while it lives), and
never one of a process still running, nor a folder it cannot judge."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_profiler import scratch
from samples import CLAUDE_SMALL

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="flock, /proc")


def _summary_of_stdin(temporary: Path, stderr: int = subprocess.PIPE) -> subprocess.Popen[bytes]:
    environment = {**os.environ, "TMPDIR": str(temporary)}
    return subprocess.Popen(
        [sys.executable, "-m", "agent_profiler", "summary", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        env=environment,
    )


def _copying(temporary: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """A run reading a journal from a pipe that is not closed yet: its copy half made, in
    its folder of ours."""
    before = set(temporary.glob(f"{scratch.PREFIX}*/*/stdin"))
    process = _summary_of_stdin(temporary, subprocess.DEVNULL)
    assert process.stdin is not None
    process.stdin.write(CLAUDE_SMALL.read_bytes()[:2000])
    process.stdin.flush()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if copies := set(temporary.glob(f"{scratch.PREFIX}*/*/stdin")) - before:
            return process, copies.pop().parent.parent
        time.sleep(0.01)
    process.kill()
    raise AssertionError("the run never made its copy")


def _run_to_its_end(temporary: Path) -> None:
    finished = _summary_of_stdin(temporary)
    _, stderr = finished.communicate(CLAUDE_SMALL.read_bytes(), timeout=60)
    assert finished.returncode == 0, stderr.decode()


def test_a_killed_runs_copy_is_removed_by_the_next_run_and_a_running_ones_is_not(
    tmp_path: Path,
) -> None:
    # GIVEN one run copying a piped journal, still running, and one killed while it did
    running, kept = _copying(tmp_path)
    killed, left = _copying(tmp_path)
    killed.kill()
    killed.wait()
    assert killed.stdin is not None
    killed.stdin.close()
    assert (left / scratch.LOCK).is_file()
    # AND a folder of that name the tool cannot judge (no lock: another version's)
    other = tmp_path / f"{scratch.PREFIX}older"
    other.mkdir()
    # WHEN another run reads a piped journal to its end
    _run_to_its_end(tmp_path)
    # THEN the killed run's copy is gone, the running one's is not, and the other is left
    assert not left.exists()
    assert kept.is_dir()
    assert other.is_dir()
    # AND the running one ends as ever, its folder with it
    assert running.stdin is not None
    running.stdin.close()
    running.wait(timeout=60)
    assert not kept.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [other.name]


def test_a_folder_is_locked_before_its_lock_has_its_name(tmp_path: Path) -> None:
    """What a sweep looks for, `.lock`, is locked already when it gets its name: a sweep
    between the two would take a live folder for one left behind."""
    renamed: list[bool] = []
    real_rename = os.rename

    def rename(source: str | Path, target: str | Path) -> None:
        handle = os.open(source, os.O_RDONLY)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            renamed.append(False)  # could be taken: not held
        except OSError:
            renamed.append(True)
        finally:
            os.close(handle)
        real_rename(source, target)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "rename", rename)
        patch.setenv("TMPDIR", str(tmp_path))
        patch.setattr("tempfile.tempdir", None)
        with scratch.folder() as made:
            assert renamed == [True]
            assert scratch.sweep(tmp_path) == 0  # its own process lives
            assert made.is_dir()
    assert not made.exists()


def test_a_killed_open_leaves_its_folder_to_the_next_run(tmp_path: Path) -> None:
    """`open` holds its trace in a folder of ours while it serves it; killed, the next run
    that makes one removes it."""
    environment = {**os.environ, "TMPDIR": str(tmp_path), "BROWSER": "true"}
    said = tmp_path / "stderr.txt"
    with said.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "agent_profiler", "open", str(CLAUDE_SMALL)],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=environment,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 30
        while not list(tmp_path.glob(f"{scratch.PREFIX}*/*.pftrace")):
            assert time.monotonic() < deadline, "open never wrote its trace"
            if process.poll() is not None:
                text = said.read_text()
                if "is busy" in text:  # (ui.perfetto.dev's one port: another `open` serves)
                    pytest.skip(f"open could not serve: {text.strip()}")
                pytest.fail(f"open ended before it was killed: {text}")
            time.sleep(0.01)
    finally:
        with contextlib.suppress(ProcessLookupError):  # (it may have ended on its own)
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    (left,) = tmp_path.glob(f"{scratch.PREFIX}*")
    # A process `open` forked (the browser's launch) shares the lock's descriptor until it
    # closes it or ends, which on a loaded machine can be a moment after `open` was reaped.
    deadline = time.monotonic() + 10
    while (swept := scratch.sweep(tmp_path)) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert swept == 1
    assert not left.exists()


def test_a_temporary_folder_without_locks_still_holds_a_folder(tmp_path: Path) -> None:
    """Where the temporary folder takes no lock (NFS without its lock daemon: ENOLCK), a
    pipe's copy and `open`'s trace still get their folder, as before there were locks:
    unlocked, never swept, removed by its process (the command failed as a bug)."""

    def flock(handle: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fcntl, "flock", flock)
        patch.setenv("TMPDIR", str(tmp_path))
        patch.setattr("tempfile.tempdir", None)
        with scratch.folder() as made:
            assert made.is_dir()
            assert list(made.iterdir()) == []  # (no `.lock-pending` left in it)
    assert list(tmp_path.iterdir()) == []


def test_a_temporary_folder_refusing_a_folder_is_one_line(tmp_path: Path) -> None:
    """`summary -` where the temporary folder takes no new folder: one line naming it,
    not an internal error."""
    from typer.testing import CliRunner

    from agent_profiler.cli import app

    def mkdtemp(*args: object, **kwargs: object) -> str:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("tempfile.mkdtemp", mkdtemp)
        patch.setattr("agent_profiler.inputs._copies_folder", None)  # (none made yet)
        patch.setenv("TMPDIR", str(tmp_path))
        patch.setattr("tempfile.tempdir", None)
        result = CliRunner().invoke(app, ["summary", "-"], input=CLAUDE_SMALL.read_bytes())
    assert result.exit_code == 1, result.stderr
    assert result.stderr.startswith("error: the temporary folder (")
    assert "Permission denied" in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_a_folder_left_on_nfs_is_swept(tmp_path: Path) -> None:
    """NFS takes an exclusive flock as a write lock, refused (EBADF) on a descriptor not
    open for writing: a sweep that opened `.lock` to read took every folder there for a
    live one, and never removed one."""
    real_flock = fcntl.flock

    def nfs_flock(handle: int, operation: int) -> None:
        writable = fcntl.fcntl(handle, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY
        if operation & fcntl.LOCK_EX and not writable:
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        real_flock(handle, operation)

    left = tmp_path / f"{scratch.PREFIX}left"
    left.mkdir()
    (left / scratch.LOCK).write_bytes(b"")  # its process gone: no one holds it
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fcntl, "flock", nfs_flock)
        assert scratch.sweep(tmp_path) == 1
    assert not left.exists()
