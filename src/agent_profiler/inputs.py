"""What a path named on the command line, or found in a folder walk, is before it is read
as a journal: a pipe or a device (read once, through a copy), a symlink that leads
nowhere, a folder that cannot be opened, a dataset `collect` wrote. Each is one line
naming it (loader.expand), never an internal error."""

from __future__ import annotations

import atexit
import errno
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from agent_profiler.errors import JournalError

STDIN = "-"  # the input name that reads standard input


def is_dataset(path: Path) -> bool:
    """A folder `collect` wrote (Parquet files, no journal)."""
    try:
        return (path / "current" / "manifest.json").is_file()
    except OSError:  # a folder that cannot be opened: the walk says so
        return False


def dead_link(path: Path) -> str | None:
    """Why a symlink cannot be opened (it loops, or points nowhere); None when it can, or
    when `path` is no symlink. Resolving a loop raised RuntimeError: an internal error, or,
    named, "no such file or directory"."""
    if not os.path.islink(path):
        return None
    try:
        os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "symlink loop"
        return "broken symlink (nothing at its target)"
    return None


def os_reason(error: OSError) -> str:
    """`permission denied`: the system's words for an error, as a message goes on."""
    text = error.strerror or type(error).__name__
    return text[:1].lower() + text[1:]


def unopenable(path: Path) -> str | None:
    """Why `path` cannot even be looked at (`cannot open: permission denied`: it lies in a
    folder without search permission), or None: it is there, or it is not (which the
    caller says its own way). Python 3.11's `is_dir` and `exists` raise PermissionError
    there, and a journal in such a folder ended every command in an internal error."""
    try:
        os.stat(path)
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
            return None
        return f"cannot open: {os_reason(error)}"
    except ValueError:  # a NUL in the name: no file has it
        return None
    return None


def is_folder(path: Path) -> bool:
    """`path.is_dir()`, False where it cannot be looked at (`unopenable`)."""
    try:
        return path.is_dir()
    except OSError:
        return False


def is_stream(path: Path) -> bool:
    """A path that exists and is neither a folder nor a regular file: a pipe, a device
    (`/dev/stdin`, `/dev/null`), a socket. Read or written once, in order, in place."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False  # missing or unreadable: the reader says which
    return not stat.S_ISDIR(mode) and not stat.S_ISREG(mode)


_copies_folder: Path | None = None


def _remove_copies(folder: Path, owner: int, rmtree: Callable[..., object]) -> None:
    if os.getpid() == owner:  # not in a forked child that exits the normal way
        rmtree(folder, ignore_errors=True)


def copy_of(path: Path) -> Path:
    """A regular file holding what `path` gives once (`-`: standard input). A named input
    that is no regular file — a pipe (`<(zcat x.jsonl.gz)`, `/dev/stdin`), a character
    device — yields its bytes once, and a journal is opened more than once (sniffed, then
    read), so it was read as empty. The copy lives in a temporary folder removed when the
    process ends (or by a later run, when it is killed: scratch.py), and keeps the input's
    name (a journal's format is told by its content); what is said about it names the
    input (exporting._tell_reading)."""
    import shutil  # here, not at the top: only a pipe's copy needs them (start-up)
    import tempfile

    global _copies_folder
    if _copies_folder is None:
        from agent_profiler import scratch

        _copies_folder = scratch.make()  # (swept by a later run if this one is killed)
        atexit.register(_remove_copies, _copies_folder, os.getpid(), shutil.rmtree)
    stdin = str(path) == STDIN
    # A folder per copy: names repeat (every `-` is `stdin`), a process may load twice.
    folder = Path(tempfile.mkdtemp(dir=_copies_folder))
    copy = folder / ("stdin" if stdin else path.name or "input")
    writing = False  # which side failed: the input, or the copy (a full temporary folder)
    try:
        with sys.stdin.buffer if stdin else path.open("rb") as source:
            writing = True
            with copy.open("wb") as target:
                writing = False
                while chunk := source.read(1 << 20):
                    writing = True
                    target.write(chunk)
                    writing = False
                writing = True  # (the close writes what is buffered)
    except OSError as error:
        given = "<stdin>" if stdin else str(path)  # as every other line names it
        if writing:
            from agent_profiler.output_errors import temporary_failed

            raise JournalError(given, f"cannot be copied to {temporary_failed(error)}") from error
        raise JournalError(given, f"cannot read: {error.strerror or error}") from error
    return copy
