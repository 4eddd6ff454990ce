"""Where a command's one output goes: the target's checks (a folder, a journal being read,
an existing file without --force), atomic writing (a file beside it with no name until it is
whole, then named in place), pipes and devices written in place, and stdout (the spool a
trace's packets wait in until the last group is read: spools.py). Every command that
writes a file (export, report, and the others) goes through `deliver`.

A run killed outright (SIGKILL, the OOM killer, a power cut) leaves no file of ours beside
the target: on Linux the output is written to an unnamed file (O_TMPFILE) and only linked
into place once whole, and the spool never has a name (O_TMPFILE, else unlinked as soon as
it is made). Where the system cannot (another OS, a filesystem without O_TMPFILE, no
/proc), the output goes through a named temporary file as before, removed on any error."""

from __future__ import annotations

import errno
import os
import signal
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, cast

from agent_profiler.console import stdout_failed
from agent_profiler.errors import OutputError, UsageError
from agent_profiler.inputs import unopenable
from agent_profiler.loader import STDIN, is_stream, reads
from agent_profiler.output_errors import (
    cannot_write,
    in_our_temporary_folder,
    shown,
)

TO_STDOUT = "-"


def names_stdout(target: Path) -> bool:
    """`target` is this process's standard output under another name (`/dev/stdout`,
    `/dev/fd/1`, or the very file stdout is redirected to). It is written as `-` is: renamed
    over, `/dev/stdout` itself was replaced by a regular file (as root) while the file the
    shell opened stayed empty, and the closing line printed on stdout landed in the output."""
    try:
        return _names_fd(target, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real stdout (a test runner)
        return False


def _names_fd(target: Path, fd: int) -> bool:
    try:
        ours = os.fstat(fd)
        named = target.stat()
    except OSError:
        return False
    return (named.st_dev, named.st_ino) == (ours.st_dev, ours.st_ino)


def _is_null_device(target: Path) -> bool:
    """`/dev/null` by any name: written in place, harmless even when it is also stdin or
    stderr (`… -o /dev/null < /dev/null`, as scripts and cron run commands)."""
    try:
        named, null = target.stat(), os.stat(os.devnull)
    except OSError:
        return False
    return (named.st_dev, named.st_ino) == (null.st_dev, null.st_ino)


def is_terminal(target: Path) -> bool:
    """`target` is a terminal (`/dev/tty`, `/dev/pts/3`): a character device that says it is
    one when opened (without waiting, and without becoming our controlling terminal)."""
    try:
        if not stat.S_ISCHR(target.stat().st_mode):
            return False
        fd = os.open(target, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return os.isatty(fd)
    finally:
        os.close(fd)


def is_stdout(output: Path | None) -> bool:
    """The output goes to stdout: `-o -`, or stdout by another name (`names_stdout`)."""
    return output is not None and (str(output) == TO_STDOUT or names_stdout(output))


def default_output(journals: list[Path], extension: str = ".pftrace") -> Path:
    """`<first journal's name>.<extension>` in the current folder (`stdin…` for `-`;
    `<name>.trace.json` for a `.json` journal as Chrome JSON, not its own name). A
    Claude Code project folder is named without the home it spells (`privacy.input_name`),
    and a name never starts with `-`: `open -home-me-app.pftrace`, the command printed
    afterwards, read as options."""
    from agent_profiler.privacy import input_name

    first = journals[0]
    stem = "stdin" if str(first) == STDIN else input_name(first.name)
    for suffix in (".gz", ".zst", ".jsonl", ".json", ".txt"):
        stem = stem.removesuffix(suffix)
    stem = stem.lstrip("-").replace("…", "")
    name = f"{stem or 'trace'}{extension}"
    if name == first.name:  # a Gemini CLI or OpenCode `.json` journal as Chrome JSON
        name = f"{stem}.trace{extension}"
    return Path(name)


TEMPORARY = ".agent-profiler-"  # our temporary files' names start so, whatever the output's


def temporary_name(kind: str = "") -> str:
    """A temporary file's name beside an output: `.agent-profiler-<kind><pid>-<random>.tmp`,
    under 50 bytes whatever the output's name (one of 255 bytes is a valid name; with it in
    the temporary one, that one was too long), and ours at a glance."""
    return f"{TEMPORARY}{kind}{os.getpid()}-{os.urandom(6).hex()}.tmp"


def _mkstemp(directory: Path, kind: str) -> tuple[int, str]:
    """tempfile.mkstemp(dir=directory) without importing tempfile (with shutil and random,
    ≈ 8 ms of start-up): a new file, private (0600), opened exclusively, under a name no
    other process picks (`temporary_name`)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        name = os.path.join(directory, temporary_name(kind))
        try:
            return os.open(name, flags, 0o600), name
        except FileExistsError:
            continue
    # With its errno, so that strerror (what beside reports) is this sentence.
    raise FileExistsError(errno.EEXIST, "no free temporary name in its folder")


def _folder(path: Path) -> Path:
    return path.parent if str(path.parent) else Path(".")


def beside(path: Path, kind: str) -> tuple[int, str]:
    """A new private temporary file in `path`'s folder (`temporary_name(kind)`)."""
    try:
        return _mkstemp(_folder(path), kind)
    except OSError as error:
        raise cannot_write(path, error, here=True) from error


def unnamed(path: Path, flags: int) -> int | None:
    """A new private file in `path`'s folder that has no name (Linux's O_TMPFILE): a kill
    leaves nothing behind, the system frees it when its last descriptor closes. None where
    there is no such file: another OS, a filesystem without it (EOPNOTSUPP; EISDIR from a
    kernel that predates it), or any other refusal, which the named file's attempt then
    says in its own words."""
    tmpfile = getattr(os, "O_TMPFILE", 0)
    if not tmpfile:
        return None
    try:
        return os.open(_folder(path), tmpfile | flags, 0o600)
    except OSError:
        return None


def _umask_mode() -> int:
    """The mode a new file gets: 0666 less the umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _link_into_place(handle: int, path: Path) -> None:
    """Give the unnamed file `handle` the name `path`: linked to it (through /proc, as
    linkat(2) says), or, when `path` is there (--force), linked to a temporary name and
    renamed over it, since no call links over a name. (os.link without a dir_fd calls
    link(2), which does not follow /proc's link: EXDEV, so the folder is given as one.)"""
    source = f"/proc/self/fd/{handle}"
    folder = os.open(_folder(path), os.O_PATH | os.O_DIRECTORY)
    try:
        try:
            os.link(source, path.name, dst_dir_fd=folder, follow_symlinks=True)
            return
        except FileExistsError:
            pass
        for _ in range(100):
            name = temporary_name()
            # Ctrl-C and SIGTERM (exceptions here: entry.py) held back from the link to the
            # rename: one raised between the two left the named file beside the output.
            with _signals_held():
                try:
                    os.link(source, name, dst_dir_fd=folder, follow_symlinks=True)
                except FileExistsError:
                    continue
                except BaseException:
                    # (a signal another thread took, which the mask does not hold back: its
                    # handler runs here, as the link returns)
                    with suppress(OSError):
                        os.unlink(name, dir_fd=folder)
                    raise
                try:
                    os.replace(name, path.name, src_dir_fd=folder, dst_dir_fd=folder)
                except BaseException:
                    with suppress(OSError):
                        os.unlink(name, dir_fd=folder)
                    raise
            return
        raise FileExistsError(errno.EEXIST, f"no free temporary name in {_folder(path)}")
    finally:
        os.close(folder)


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM blocked in this thread (the main one) until the block ends; one
    that came meanwhile is handled right after, as any other. (Not on Windows.)"""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def refuse_option_name(target: Path, option: str) -> None:
    """Refuse an output named like an option (`-o --force`, `--html -o page.html`): the
    output's name was left out, and the next word was taken for it. A file of such a name
    is written when given by its full path (`./--force` is the same word to Path)."""
    name = str(target)
    if name.startswith("-") and name != "-":
        raise UsageError(
            f"{option} {name}: {name} looks like an option, not a file name; name the file "
            f"after {option} (for a file of that name, give its full path)"
        )


def check_target(
    target: Path, force: bool, journals: list[Path], extension: str, option: str = "-o"
) -> None:
    """Refuse an output named like an option (given by `option`), a folder, a journal
    being read (even with --force: a journal cannot be made again), or a file, without
    --force. A pipe or a device (`/dev/null`) is written in place, with or without --force."""
    refuse_option_name(target, option)
    if reason := unopenable(target):  # in a folder without search permission
        reason = reason.removeprefix("cannot open: ")
        raise OutputError(f"{shown(target)}: cannot write here ({reason})")
    if target.is_dir():
        suggested = target / default_output(journals, extension)
        raise UsageError(f"{target} is a folder: name the file to write, e.g. -o {suggested}")
    if not _is_null_device(target) and (_names_fd(target, 2) or _names_fd(target, 0)):
        # `-o /dev/stderr` with stderr in a file: renamed over, /dev/stderr itself was
        # replaced (as root); in place, the messages and the output would interleave.
        raise UsageError(
            f"{target} is this command's standard input or error: name a file (or -o - for stdout)"
        )
    if not target.exists() or is_stream(target):
        return
    if reads(journals, target):
        raise _journal_as_output(target)
    if not force:
        raise UsageError(f"{target} exists; pass --force to overwrite it")


def refuse_read_files(target: Path, files: list[Path]) -> None:
    """Refuse, after reading, to write over a file that was read: check_target knows the
    inputs as named, and this also the files an adapter found beside them (a Claude Code
    session's subagent files)."""
    if not target.exists() or is_stream(target):
        return
    for read in files:
        try:
            if os.path.samefile(target, read):
                raise _journal_as_output(target)
        except OSError:
            continue


def _journal_as_output(target: Path) -> UsageError:
    return UsageError(f"{target} is a journal this reads: write the output somewhere else")


class _Counted:
    """A stream that counts the bytes written through it (a pipe or a device has no size
    to ask for afterwards)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self.size = 0

    def write(self, data: bytes) -> int:
        self.size += len(data)
        return self.stream.write(data)

    def __getattr__(self, name: str) -> object:
        return getattr(self.stream, name)


class _Stdout:
    """Stdout's bytes: a write or flush that fails (a full disk) is an OutputError naming
    stdout, told from the other errors of the `fill` that writes it (reading its spool).
    Every byte is written: unbuffered (PYTHONUNBUFFERED=1, `python -u`), stdout's bytes
    are a raw stream, which may take part of a write (a disk filling up, a reader leaving)
    and say so only in its count: the rest is written, and its error raised."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream

    def write(self, data: bytes) -> int:
        view = memoryview(data).cast("B")
        try:
            done = 0
            while done < len(view):
                taken = self.stream.write(view[done:])
                if not taken:  # None: a non-blocking stdout is full; 0: it took nothing
                    code = errno.EAGAIN if taken is None else errno.EIO
                    raise OSError(code, os.strerror(code))
                done += taken
            return done
        except BrokenPipeError:
            raise
        except OSError as error:
            raise stdout_failed(error) from error

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError as error:
            raise stdout_failed(error) from error

    def __getattr__(self, name: str) -> object:
        return getattr(self.stream, name)


def write_atomically(
    path: Path, fill: Callable[[IO[bytes]], object], *, durable: bool = True
) -> int:
    """Write the output beside the target (`fill(stream)`) and put it in place whole, so an
    interrupted command never leaves a partial output or clobbers a good one, and a killed
    one (SIGKILL, the OOM killer) no file at all: the output has no name until it is whole
    (`unnamed`), else it is a named temporary file renamed into place. `durable`: its bytes
    on disk (fsync) before it is named, and its folder after, so that a crash or a power cut
    soon after leaves the old file or the new one, never an empty one under the name (a
    few ms: docs/reliability.md). A target that is a pipe or a device (`-o /dev/null`,
    `-o >(gzip > t.gz)`) is written in place: renaming a file over it would replace the
    device itself. Returns the size."""
    if is_stream(path):
        try:
            with path.open("wb") as stream:
                counted = _Counted(stream)
                fill(cast(IO[bytes], counted))
        except OSError as error:
            raise cannot_write(path, error) from error
        return counted.size
    handle = unnamed(path, os.O_RDWR)
    if handle is not None and not os.path.exists(f"/proc/self/fd/{handle}"):
        os.close(handle)  # no /proc to name it through
        handle = None
    if handle is None:
        return _write_named(path, fill, durable)
    try:
        with os.fdopen(handle, "wb", closefd=False) as stream:
            fill(stream)
        if durable:
            os.fsync(handle)  # (a network filesystem may say only now that it is full)
        os.fchmod(handle, _umask_mode())  # made private (0600); now the usual mode
        try:
            _link_into_place(handle, path)
        except OSError:
            # Not linked (a system refusing links through /proc): the bytes copied to a
            # named file instead, whose errors are said.
            os.lseek(handle, 0, os.SEEK_SET)
            return _write_named(path, lambda stream: _copy(handle, stream), durable)
        if durable:
            sync_folder(_folder(path))
    except OSError as error:
        raise cannot_write(path, error) from error
    finally:
        os.close(handle)  # unnamed, its bytes go with it
    return path.stat().st_size


def sync_folder(folder: Path) -> None:
    """`folder`'s names on disk (fsync): one just linked, renamed or made in it is still
    there after a crash. Best effort: a folder that cannot be opened so (Windows) or synced
    (a filesystem that refuses: EINVAL) is left to the system."""
    try:
        handle = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def sync_tree(folder: Path) -> None:
    """Every file below `folder` on disk, and every folder's names (a dataset's new version,
    before it is renamed into place: DuckDB does not fsync the Parquet files it writes). A
    file linked from elsewhere (the previous version's) is on disk already. The calls run
    side by side: the filesystem commits them together (one by one, 112 of them took 0.1 to
    0.5 s of a 1 s collect). A file's failure (EIO) is raised: its bytes may be lost."""
    from concurrent.futures import ThreadPoolExecutor

    files: list[str] = []
    folders: list[Path] = []
    for root, _, names in os.walk(folder):
        folders.append(Path(root))
        files += [os.path.join(root, name) for name in names]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(_sync_file, files))  # (list: a failure is raised here)
        list(pool.map(sync_folder, folders))


def _sync_file(path: str) -> None:
    handle = os.open(path, os.O_RDONLY)
    try:
        if os.fstat(handle).st_nlink < 2:
            os.fsync(handle)
    finally:
        os.close(handle)


def _copy(handle: int, stream: IO[bytes]) -> None:
    while chunk := os.read(handle, 1 << 20):
        stream.write(chunk)


def _write_named(path: Path, fill: Callable[[IO[bytes]], object], durable: bool) -> int:
    """`write_atomically` through a named temporary file beside the target, renamed over
    it, and removed on any error (a kill leaves it)."""
    handle, temporary = beside(path, "")
    try:
        with os.fdopen(handle, "wb") as stream:
            fill(stream)
            if durable:
                stream.flush()
                os.fsync(handle)
        # mkstemp creates the file private (0600); give it the usual umask-based mode.
        os.chmod(temporary, _umask_mode())
        os.replace(temporary, path)
        if durable:
            sync_folder(_folder(path))
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise cannot_write(path, error) from error
        raise
    return path.stat().st_size


def deliver(
    target: Path | None, fill: Callable[[IO[bytes]], object], read_files: list[Path]
) -> int:
    """Write one output: to stdout when `target` is None (size 0: not measured), else
    atomically to `target`, after refusing a target that is one of the files read."""
    if target is None:
        stdout = _Stdout(sys.stdout.buffer)
        fill(cast(IO[bytes], stdout))
        stdout.flush()
        return 0
    refuse_read_files(target, read_files)
    # `open`'s trace in a temporary folder, removed when it is served: no fsync for it.
    return write_atomically(target, fill, durable=not in_our_temporary_folder(target))
