"""A run killed outright (SIGKILL, the OOM killer, a power cut) leaves no file of ours
beside the user's output. The output was filled in a named temporary file
(`.<name>.<pid>-<random>.tmp`, now `.agent-profiler-<pid>-<random>.tmp`) and the trace's
packets waited in another (`.agent-profiler-packets-<pid>-<random>.tmp`): each removed
by a `finally` that a kill never runs, so the user found junk dot-files next to their
trace. Now the output has no name until it is whole (O_TMPFILE, linked into place at the
end), and the spool never has one (O_TMPFILE, else unlinked as soon as it is made); where
the system cannot, the named temporary file of before is the fallback, removed on any
error."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import pytest

from agent_profiler.errors import OutputError
from agent_profiler.outputs import write_atomically
from agent_profiler.spools import spool

JOURNALS = Path(__file__).resolve().parents[1] / "data" / "journals"
PI = JOURNALS / "pi" / "pi-mono_large-session_v1.jsonl"

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="O_TMPFILE, /proc")


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o7777


def _umask_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _refuse_unnamed(monkeypatch: pytest.MonkeyPatch, code: int) -> list[int]:
    """os.open refusing O_TMPFILE as a filesystem without it does (`code`); the flags of
    every refusal, to show the unnamed file was asked for first."""
    real_open = os.open
    refused: list[int] = []
    unnamed = getattr(os, "O_TMPFILE", 0)

    def open_(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
        if unnamed and flags & unnamed == unnamed:
            refused.append(flags)
            raise OSError(code, os.strerror(code), str(path))
        return real_open(path, flags, mode, **kw)

    monkeypatch.setattr(os, "open", open_)
    return refused


@linux
@pytest.mark.parametrize("there", [False, True], ids=["new", "over-an-old-one"])
def test_the_output_has_no_name_until_it_is_whole(tmp_path: Path, there: bool) -> None:
    # GIVEN a folder with a file of the user's, and (with --force) an old output
    (tmp_path / "notes.txt").write_text("mine")
    target = tmp_path / "t.pftrace"
    if there:
        target.write_bytes(b"old")
    before = sorted(os.listdir(tmp_path))
    seen: list[list[str]] = []

    def fill(stream: IO[bytes]) -> None:
        stream.write(b"x" * 100_000)
        stream.flush()
        seen.append(sorted(os.listdir(tmp_path)))  # as a kill would find it
        stream.write(b"y")

    # WHEN it is written
    size = write_atomically(target, fill)
    # THEN while it was filled, the folder held no new name (a kill leaves nothing); after,
    # exactly the target, whole, with the mode the umask leaves
    assert seen == [before]
    assert sorted(os.listdir(tmp_path)) == sorted({*before, "t.pftrace"})
    assert target.read_bytes() == b"x" * 100_000 + b"y" and size == 100_001
    assert _mode(target) == _umask_mode()


class _Terminated(SystemExit):
    """What entry.py's SIGTERM handler raises, wherever the main thread is."""


@linux
def test_a_sigterm_between_the_link_and_the_rename_leaves_no_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over an old output (--force) the whole file is linked to a temporary name, then
    renamed over the target: a SIGTERM (an exception here, as entry.py makes it) coming
    right after the link left `.agent-profiler-….tmp` beside the output for good."""
    target = tmp_path / "t.pftrace"
    target.write_bytes(b"old")
    real_link = os.link

    def link(*args: Any, **kwargs: Any) -> None:
        real_link(*args, **kwargs)
        if args[1] != target.name:  # the temporary name: the signal comes now
            os.kill(os.getpid(), signal.SIGTERM)

    def terminate(signum: int, frame: Any) -> None:
        raise _Terminated(143)

    monkeypatch.setattr(os, "link", link)
    before = signal.signal(signal.SIGTERM, terminate)
    try:
        # WHEN the signal comes between the link and the rename
        with pytest.raises(_Terminated):
            write_atomically(target, lambda stream: stream.write(b"new"))
    finally:
        signal.signal(signal.SIGTERM, before)
    # THEN it is handled once the rename is done: the new output whole, nothing beside it
    assert os.listdir(tmp_path) == ["t.pftrace"]
    assert target.read_bytes() == b"new"


@linux
def test_a_signal_another_thread_took_at_the_link_leaves_no_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mask holds back only what comes to the main thread: a SIGTERM the kernel gives
    another thread (a library's pool) runs its handler in the main thread as soon as the
    link returns, before the rename, and left `.agent-profiler-….tmp` beside the output."""
    target = tmp_path / "t.pftrace"
    target.write_bytes(b"old")
    real_link = os.link

    def link(*args: Any, **kwargs: Any) -> None:
        real_link(*args, **kwargs)
        if args[1] != target.name:  # the handler, run as the link returns
            raise _Terminated(143)

    monkeypatch.setattr(os, "link", link)
    with pytest.raises(_Terminated):
        write_atomically(target, lambda stream: stream.write(b"new"))
    assert os.listdir(tmp_path) == ["t.pftrace"]
    assert target.read_bytes() == b"old"


@linux
def test_an_output_that_fails_while_unnamed_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "t.pftrace"
    target.write_bytes(b"old")
    seen: list[list[str]] = []

    def fill(stream: IO[bytes]) -> None:
        stream.write(b"x" * 1000)
        seen.append(os.listdir(tmp_path))
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OutputError) as caught:
        write_atomically(target, fill)
    assert str(caught.value) == "t.pftrace: No space left on device"  # (shown as inputs are)
    assert seen == [["t.pftrace"]]
    assert os.listdir(tmp_path) == ["t.pftrace"] and target.read_bytes() == b"old"


def _hide_proc(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A system without /proc (a chroot): the unnamed file cannot be named at the end."""
    real_exists = os.path.exists
    asked: list[str] = []

    def exists(path: Any) -> bool:
        if str(path).startswith("/proc/"):
            asked.append(str(path))
            return False
        return real_exists(path)

    monkeypatch.setattr(os.path, "exists", exists)
    return asked


@pytest.mark.parametrize("why", ["EOPNOTSUPP", "EISDIR", "EINVAL", "no /proc"])
def test_without_o_tmpfile_the_named_temporary_file_still_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, why: str
) -> None:
    """A filesystem without O_TMPFILE (EOPNOTSUPP), a kernel that predates it (EISDIR), no
    /proc to name the file through: the output goes through a named temporary file,
    renamed into place, removed on an error; the spool is unlinked as soon as it is made,
    so it has no name either."""
    if not hasattr(os, "O_TMPFILE"):
        pytest.skip("no O_TMPFILE: the fallback is the only path (tested everywhere else)")
    if why == "no /proc":
        refused: list[Any] = _hide_proc(monkeypatch)
    else:
        refused = _refuse_unnamed(monkeypatch, getattr(errno, why))
    target = tmp_path / "t.pftrace"
    seen: list[list[str]] = []

    def fill(stream: IO[bytes]) -> None:
        stream.write(b"bytes")
        seen.append(os.listdir(tmp_path))

    assert write_atomically(target, fill) == 5
    assert refused  # the unnamed file was tried first
    (temporary,) = seen[0]  # the fallback's name, while it was filled
    assert temporary.startswith(".agent-profiler-") and temporary.endswith(".tmp")
    assert os.listdir(tmp_path) == ["t.pftrace"] and target.read_bytes() == b"bytes"
    assert _mode(target) == _umask_mode()

    def failing(stream: IO[bytes]) -> None:
        stream.write(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomically(target, failing)
    assert os.listdir(tmp_path) == ["t.pftrace"] and target.read_bytes() == b"bytes"

    with spool(target) as packets:
        packets.write(b"packets")
        assert os.listdir(tmp_path) == ["t.pftrace"]  # unlinked once made
        packets.seek(0)
        assert packets.read() == b"packets"
    assert os.listdir(tmp_path) == ["t.pftrace"]


@linux
def test_an_output_that_cannot_be_linked_through_proc_is_copied_into_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A system that refuses the link through /proc at the end (a sandbox): the bytes are
    copied into a named temporary file and renamed into place, not lost."""
    real_link = os.link
    asked: list[str] = []

    def link(source: Any, *args: Any, **kw: Any) -> None:
        if str(source).startswith("/proc/self/fd/"):
            asked.append(str(source))
            raise PermissionError(errno.EPERM, "Operation not permitted")
        real_link(source, *args, **kw)

    monkeypatch.setattr(os, "link", link)
    target = tmp_path / "t.pftrace"
    assert write_atomically(target, lambda stream: stream.write(b"z" * 3_000_000)) == 3_000_000
    assert asked
    assert os.listdir(tmp_path) == ["t.pftrace"] and target.read_bytes() == b"z" * 3_000_000
    assert _mode(target) == _umask_mode()


@linux
def test_the_spool_never_has_a_name(tmp_path: Path) -> None:
    target = tmp_path / "t.pftrace"
    with spool(target) as packets:
        packets.write(b"p" * 10_000)
        assert os.listdir(tmp_path) == []
        packets.seek(0)
        assert packets.read() == b"p" * 10_000
    assert os.listdir(tmp_path) == []


def test_a_spool_that_cannot_be_unlinked_while_open_is_removed_at_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows cannot unlink an open file: the spool keeps its name until the end, as
    before, and is removed then; its unlink was tried as soon as it was made."""
    if hasattr(os, "O_TMPFILE"):
        _refuse_unnamed(monkeypatch, errno.EOPNOTSUPP)
    real_unlink = os.unlink
    tried: list[list[str]] = []

    def unlink(path: Any, *args: Any, **kw: Any) -> None:
        if not tried:  # the first: while it is open
            tried.append(os.listdir(tmp_path))
            raise PermissionError(errno.EACCES, "Permission denied")
        real_unlink(path, *args, **kw)

    monkeypatch.setattr(os, "unlink", unlink)
    target = tmp_path / "t.pftrace"
    with spool(target) as packets:
        assert tried, "the spool's name was not unlinked once made"
        (name,) = os.listdir(tmp_path)
        assert name.startswith(".agent-profiler-packets-")
        packets.write(b"p")
    assert os.listdir(tmp_path) == []


KILLED_MID_FILL = """
import os, signal, sys
from pathlib import Path
from agent_profiler.outputs import write_atomically

def fill(stream):
    stream.write(b"x" * 1_000_000)
    stream.flush()
    print(" ".join(sorted(os.listdir(sys.argv[2]))), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would, mid-write

write_atomically(Path(sys.argv[1]), fill)
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


@linux
def test_an_output_killed_while_it_is_written_leaves_the_folder_as_it_was(
    tmp_path: Path,
) -> None:
    """The real thing: a process SIGKILLed in the middle of filling its output."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "t.pftrace").write_bytes(b"the good old trace")  # --force over it
    (out / "notes.txt").write_text("mine")
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_MID_FILL, str(out / "t.pftrace"), str(out)],
        capture_output=True,
        env=_env(),
        timeout=60,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert killed.stdout.split() == [b"notes.txt", b"t.pftrace"]  # seen mid-fill
    assert sorted(os.listdir(out)) == ["notes.txt", "t.pftrace"]
    assert (out / "t.pftrace").read_bytes() == b"the good old trace"


def _holds_file_in(pid: int, folder: Path) -> bool:
    """Whether the process has a file of `folder` open (named or not)."""
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd).startswith(f"{folder.resolve()}/"):
                return True
        except OSError:
            continue
    return False


@linux
def test_an_export_killed_while_its_packets_wait_leaves_nothing_beside_the_output(
    tmp_path: Path,
) -> None:
    """`export` from a pipe held open: the spool beside the output is made before the
    input is read, so the export waits, spool open, until it is SIGKILLed. Nothing is left
    next to the output (the copy of the piped input is in $TMPDIR: another matter)."""
    out, inputs, temporary = tmp_path / "out", tmp_path / "in", tmp_path / "tmp"
    for folder in (out, inputs, temporary):
        folder.mkdir()
    (out / "notes.txt").write_text("mine")
    fifo = inputs / "session.jsonl"
    os.mkfifo(fifo)
    target = out / "x.pftrace"
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_profiler", "export", str(fifo), "-o", str(target)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**_env(), "TMPDIR": str(temporary)},
    )
    assert process.stderr is not None
    try:
        # The pipe's writer opens once the export opens it to read: by then its spool is made.
        writer = None
        while writer is None:
            try:
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as error:
                assert error.errno == errno.ENXIO  # no reader yet
                if process.poll() is not None:
                    raise AssertionError(process.stderr.read().decode()) from None
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=0.005)
        try:
            os.set_blocking(writer, True)
            data = PI.read_bytes()
            os.write(writer, data[: len(data) // 4])  # half-way through a real journal
            assert _holds_file_in(process.pid, out)  # its spool, beside the output
            process.send_signal(signal.SIGKILL)
            assert process.wait(timeout=60) == -signal.SIGKILL
        finally:
            os.close(writer)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stderr.close()
    assert os.listdir(out) == ["notes.txt"]
