"""An output that cannot be written, said in one line that names the right place (review
outfail D2, D3, D5, D6, D7, D8): a full disk while the packets wait beside the output, a
full temporary folder, `open` keeping a trace in the current folder, an output's name of
up to 255 bytes, a dataset's folder named over 255, and output paths shown as inputs are
(no absolute path with the user's name in it)."""

from __future__ import annotations

import errno
import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

import pytest
from typer.testing import CliRunner

from agent_profiler import output_errors, outputs, spools
from agent_profiler.cli import app
from agent_profiler.errors import OutputError
from agent_profiler.serve import keep_unserved
from samples import CLAUDE_SMALL, PI_LARGE

runner = CliRunner()
FULL = "No space left on device"


class _FullDisk(io.FileIO):
    """A file on a full disk: every write the system is asked for fails (ENOSPC)."""

    def write(self, data: Any) -> int:
        raise OSError(errno.ENOSPC, FULL)


def _full(handle: int) -> IO[bytes]:
    """A buffered file over `handle` on a full disk: a write that fills its buffer fails,
    and so does the flush of what it still holds when it is closed."""
    return io.BufferedRandom(_FullDisk(handle, "r+"))


def _spool_beside_is_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """The spool beside the output (the one file opened `w+b`) on a full disk."""
    real = os.fdopen

    def fdopen(handle: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if mode == "w+b":
            return _full(handle)
        return real(handle, mode, *args, **kwargs)

    monkeypatch.setattr(os, "fdopen", fdopen)


def _temporary_folder_is_full(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """The temporary folder is `folder`, and it is full: a file made there takes no byte."""
    folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))

    def temporary_file(*args: Any, **kwargs: Any) -> IO[bytes]:
        handle, name = tempfile.mkstemp(dir=folder)
        os.unlink(name)
        return _full(handle)

    monkeypatch.setattr(tempfile, "TemporaryFile", temporary_file)


def _env() -> dict[str, str]:
    """This checkout's package in a child process (PYTHONPATH may be relative)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def _last_line(result: Any) -> str:
    lines = result.stderr.splitlines()
    assert lines, result.output
    return str(lines[-1])


# D2 ------------------------------------------------------------------------------------


def test_a_full_disk_while_the_packets_wait_beside_the_output_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spool's close flushed what its buffer still held, failed again, and that bare
    OSError took the place of the line naming the output: `internal error`, exit 70."""
    out = tmp_path / "t.pftrace"
    out.write_bytes(b"PREVIOUS")
    monkeypatch.chdir(tmp_path)
    _spool_beside_is_full(monkeypatch)
    result = runner.invoke(app, ["export", str(CLAUDE_SMALL), "-o", "t.pftrace", "--force"])
    assert (result.exit_code, _last_line(result)) == (1, f"error: t.pftrace: {FULL}")
    assert "internal error" not in result.stderr
    assert out.read_bytes() == b"PREVIOUS" and os.listdir(tmp_path) == ["t.pftrace"]


def test_the_spool_keeps_the_error_the_command_failed_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _spool_beside_is_full(monkeypatch)
    with (
        pytest.raises(OutputError, match=r"^the first$"),
        spools.spool(tmp_path / "t.pftrace") as packets,
    ):
        packets.write(b"held in the buffer")
        raise OutputError("the first")


# D3 ------------------------------------------------------------------------------------


def test_a_full_temporary_folder_is_named_by_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report's sections wait in the temporary folder: a full one was `internal error`."""
    out = tmp_path / "r.html"
    out.write_text("PREVIOUS")
    _temporary_folder_is_full(monkeypatch, Path("/tmp") if Path("/tmp").is_dir() else tmp_path)
    result = runner.invoke(app, ["report", str(CLAUDE_SMALL), "-o", str(out), "--force"])
    assert result.exit_code == 1, result.output + result.stderr
    folder = output_errors.temporary_folder()
    assert _last_line(result) == (
        f"error: the temporary folder ({folder}): {FULL} (set TMPDIR to a folder with room)"
    )
    assert out.read_text() == "PREVIOUS" and os.listdir(tmp_path) == ["r.html"]


@pytest.mark.parametrize("target", ["-", "/dev/null"], ids=["stdout", "a-device"])
def test_a_full_temporary_folder_is_not_said_to_be_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    """The packets of a trace to stdout or a pipe wait in the temporary folder: its being
    full was said as `stdout: No space left on device` (or the FIFO's name), which had room."""
    if target != "-" and not Path(target).exists():
        pytest.skip(f"no {target}")
    home = tmp_path / "home-alice"
    monkeypatch.setenv("HOME", str(home))
    _temporary_folder_is_full(monkeypatch, home / "tmp")
    result = runner.invoke(app, ["export", str(CLAUDE_SMALL), "-o", target])
    assert result.exit_code == 1, result.stderr
    assert _last_line(result) == (
        f"error: the temporary folder (~/tmp): {FULL} (set TMPDIR to a folder with room)"
    )


def test_the_temporary_folder_is_shown_without_the_user_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "alice"))
    monkeypatch.setenv("USER", "alice")
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    for folder, said in [
        ("/tmp", "/tmp"),  # no user name in it: as it is
        ("/var/tmp", "/var/tmp"),
        (str(tmp_path / "alice" / "tmp"), "~/tmp"),
        (str(tmp_path / "cwd" / "scratch"), "scratch"),  # below the current folder
        ("/scratch/alice/tmp", "tmp"),  # the user's name in it
    ]:
        monkeypatch.setattr(tempfile, "tempdir", folder)
        assert output_errors.temporary_folder() == said


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="tmpfs")
def test_a_real_full_temporary_folder_is_one_line(tmp_path: Path) -> None:
    """A tmpfs of 16 KiB as TMPDIR (a mount namespace of our own, skipped where mounts are
    not permitted): report's sections do not fit."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    small = tmp_path / "small"
    small.mkdir()
    probe = subprocess.run(
        ["unshare", "-m", "-r", "sh", "-c", f"mount -t tmpfs -o size=16k none {small}"],
        capture_output=True,
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {probe.stderr.decode().strip()}")
    command = f"{sys.executable} -m agent_profiler report {PI_LARGE} -o r.html"
    script = f"mount -t tmpfs -o size=16k none {small} && TMPDIR={small} {command}; echo $?"
    done = subprocess.run(
        ["unshare", "-m", "-r", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=_env(),
    )
    assert done.stdout.split() == ["1"], done.stdout + done.stderr
    assert done.stderr.endswith(
        f"error: the temporary folder (small): {FULL} (set TMPDIR to a folder with room)\n"
    ), done.stderr
    assert os.listdir(tmp_path) == ["small"]


# D5 ------------------------------------------------------------------------------------


class _Interrupted:
    """A file being written that Ctrl-C interrupts after half of the first write."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, data: bytes) -> int:
        self.stream.write(data[: len(data) // 2])
        self.stream.flush()
        raise KeyboardInterrupt

    def __enter__(self) -> _Interrupted:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stream.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def test_open_keeping_a_trace_interrupted_leaves_no_half_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`open`'s copy of a trace not fetched, into the current folder: Ctrl-C during it
    left part of the trace under its name, and the next `open` said it exists."""
    trace = tmp_path / "tmp" / "t.pftrace"
    trace.parent.mkdir()
    trace.write_bytes(b"\x0a" * 100_000)
    real_open, real_fdopen = io.open, os.fdopen

    def writing(opened: Any) -> Any:
        def wrapped(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            stream = opened(file, mode, *args, **kwargs)
            return _Interrupted(stream) if "w" in mode else stream

        return wrapped

    monkeypatch.setattr(io, "open", writing(real_open))
    monkeypatch.setattr(os, "fdopen", writing(real_fdopen))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        keep_unserved(trace, Path("t.pftrace"))
    assert sorted(os.listdir(tmp_path)) == ["tmp"]


def test_open_not_keeping_a_trace_says_why_in_one_line(tmp_path: Path) -> None:
    """A copy that fails where the removal of what it wrote fails too (a read-only
    folder: EROFS; here a file in place of the folder: ENOTDIR) was an internal error."""
    trace = tmp_path / "t.pftrace"
    trace.write_bytes(b"\x0a\x00")
    (tmp_path / "a-file").write_text("")
    said = keep_unserved(trace, tmp_path / "a-file" / "t.pftrace")
    assert said.startswith("the trace is not kept: ") and "Not a directory" in said
    assert said.endswith("(export it with -o FILE, then drag FILE into the UI)")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mounts")
def test_open_in_a_read_only_folder_says_the_trace_is_not_kept(tmp_path: Path) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    folder = tmp_path / "ro"
    folder.mkdir()
    trace = tmp_path / "t.pftrace"
    trace.write_bytes(b"\x0a\x00")
    mount = f"mount -t tmpfs -o size=64k,ro none {folder}"
    probe = subprocess.run(["unshare", "-m", "-r", "sh", "-c", mount], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {probe.stderr.decode().strip()}")
    keep = (
        "from pathlib import Path; from agent_profiler.serve import keep_unserved; "
        f"print(keep_unserved(Path({str(trace)!r}), Path('t.pftrace')))"
    )
    script = f'{mount} && cd {folder} && {sys.executable} -c "{keep}"'
    done = subprocess.run(
        ["unshare", "-m", "-r", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "the trace is not kept: t.pftrace: cannot write here (Read-only file system) "
        "(export it with -o FILE, then drag FILE into the UI)\n"
    )


# D6 ------------------------------------------------------------------------------------


def _refuse_unnamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A filesystem without O_TMPFILE: the output goes through a named temporary file."""
    real_open = os.open
    unnamed = getattr(os, "O_TMPFILE", 0)

    def open_(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
        if unnamed and flags & unnamed == unnamed:
            raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP), str(path))
        return real_open(path, flags, mode, **kw)

    monkeypatch.setattr(os, "open", open_)


@pytest.mark.parametrize("how", ["over-an-old-one", "named-fallback"])
def test_an_output_named_with_255_bytes_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A valid name of 255 bytes was refused `File name too long`: the temporary name
    beside it held the whole name and 30 bytes more."""
    name = "b" * (255 - len(".pftrace")) + ".pftrace"
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["export", str(CLAUDE_SMALL), "-o", "short.pftrace"]).exit_code == 0
    if how == "over-an-old-one":
        Path(name).write_bytes(b"old")
    else:
        _refuse_unnamed(monkeypatch)
    result = runner.invoke(app, ["export", str(CLAUDE_SMALL), "-o", name, "--force"])
    assert result.exit_code == 0, result.stderr
    assert Path(name).read_bytes() == Path("short.pftrace").read_bytes()  # the same bytes
    assert sorted(os.listdir(tmp_path)) == sorted([name, "short.pftrace"])  # nothing left


def test_a_temporary_name_is_short_and_ours() -> None:
    for kind in ("", "packets-"):
        name = outputs.temporary_name(kind)
        assert name.startswith(".agent-profiler-") and name.endswith(".tmp")
        assert len(name.encode()) < 64


# D7 ------------------------------------------------------------------------------------


def test_a_dataset_folder_named_over_255_bytes_is_one_line(tmp_path: Path) -> None:
    """`Path.exists` raises ENAMETOOLONG (3.11 ignores ENOENT and a few others only):
    collect and fleet ended in `internal error`, exit 70."""
    folder = tmp_path / ("c" * 300)
    collected = runner.invoke(app, ["collect", str(CLAUDE_SMALL), "--to", str(folder)])
    assert collected.exit_code == 1, collected.stderr
    assert collected.stderr.splitlines() == [
        f"error: {'c' * 300}: cannot write here (file name too long)"
    ]
    for command in (["fleet", str(folder)], ["fleet", str(folder), "--no-cost"]):
        shown = runner.invoke(app, command)
        assert shown.exit_code == 1, shown.stderr
        assert shown.stderr.splitlines() == [f"error: {folder}: cannot open: file name too long"]


# D8 ------------------------------------------------------------------------------------


def test_an_output_path_is_shown_as_an_input_path_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`error: /home/alice/nodir/x.pftrace: …` beside `error: ~/nope.jsonl: …`: the
    output's path was absolute, with the user's name."""
    home = tmp_path / "home-alice"
    (home / "a-file").parent.mkdir()
    (home / "a-file").write_text("")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir("/")
    written = runner.invoke(app, ["export", str(CLAUDE_SMALL), "-o", f"{home}/nodir/x.pftrace"])
    assert written.exit_code == 1
    assert written.stderr.splitlines() == [
        "error: ~/nodir/x.pftrace: cannot write here (No such file or directory)"
    ]
    collected = runner.invoke(app, ["collect", str(CLAUDE_SMALL), "--to", f"{home}/a-file/ds"])
    assert collected.exit_code == 1
    assert collected.stderr.splitlines()[-1].startswith("error: ~/a-file/ds: ")
    assert str(tmp_path) not in written.stderr + collected.stderr


def test_open_names_the_temporary_folder_not_its_trace_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`open` exports to a folder of its own in the temporary folder: its being full was
    said with that path, `/home/alice/tmp/agent-profiler-voedcaz5/many.pftrace`."""
    home = tmp_path / "home-alice"
    (home / "tmp").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(tempfile, "tempdir", str(home / "tmp"))
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")  # (not above the home: shown from here, then)
    _spool_beside_is_full(monkeypatch)
    result = runner.invoke(app, ["open", "--no-browser", "--timeout", "1", str(CLAUDE_SMALL)])
    assert result.exit_code == 1, result.stderr
    assert _last_line(result) == (
        f"error: the temporary folder (~/tmp): {FULL} (set TMPDIR to a folder with room)"
    )
    assert os.listdir(home / "tmp") == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE, SIGXFSZ")
def test_a_piped_journal_that_the_temporary_folder_cannot_hold_says_so(tmp_path: Path) -> None:
    """A journal read from a pipe is copied into the temporary folder first; a copy that
    the folder cannot hold (full, or here a file size limit) said `<stdin>: cannot read:
    File too large`, blaming the input, which was readable."""
    import resource
    import signal

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # (the write fails with EFBIG instead)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    done = subprocess.run(
        [sys.executable, "-m", "agent_profiler", "summary", "-"],
        input=CLAUDE_SMALL.read_bytes(),
        capture_output=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        preexec_fn=limited,
        timeout=60,
    )
    assert len(CLAUDE_SMALL.read_bytes()) > 4096
    assert done.returncode == 1, done.stderr.decode()
    assert done.stderr.decode().splitlines()[0] == (
        f"error: <stdin>: cannot be copied to the temporary folder ({tmp_path}): File too "
        "large (set TMPDIR to a folder that can be written)"
    )
