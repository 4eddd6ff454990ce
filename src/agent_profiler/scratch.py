"""Folders of ours in the temporary folder (`<tmp>/agent-profiler-*`: a pipe's copies,
`open`'s trace): removed by their process when it ends, and, when it could not (killed by
SIGKILL or the OOM killer, a journal's copy left in /tmp), by the next run that makes one.

Each folder holds `.lock`, locked (flock) by its process for as long as it lives. The
kernel lets go of a lock when the last process holding it dies (a forked worker holds it
with its parent), in whatever pid namespace it ran, and a pid can be reused where a lock
cannot: a `.lock` another run can lock is a folder left behind. The file gets its name only
once locked, so a sweep never takes a folder being made. A folder without `.lock` (another
version's, one made where no lock can be taken, or not readable by us: another user's) is
not ours to judge and is left. A temporary folder that takes no new folder is one line."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

PREFIX = "agent-profiler-"  # (diagnostics.is_folder_of_ours tells copies by it)
LOCK = ".lock"


def make() -> Path:
    """A new private folder of ours, locked while this process (or a fork) lives; the
    folders of processes gone are removed first."""
    import tempfile

    from agent_profiler.errors import OutputError
    from agent_profiler.output_errors import NO_TEMPORARY_FOLDER, temporary_dir, temporary_failed

    temporary = temporary_dir()
    if temporary is None:  # (tempfile finds no folder it can write in)
        raise OutputError(NO_TEMPORARY_FOLDER)
    sweep(Path(temporary))
    try:
        folder = Path(tempfile.mkdtemp(prefix=PREFIX))
    except OSError as error:  # (a full or read-only temporary folder: one line, not a bug)
        raise temporary_failed(error) from error
    _hold(folder)
    return folder


@contextmanager
def folder() -> Iterator[Path]:
    """`make`'s folder, removed on the way out."""
    import shutil

    made = make()
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


_held: list[int] = []  # the locks' descriptors, open for the process's life


def _hold(made: Path) -> None:
    try:
        import fcntl
    except ImportError:  # (Windows: no flock; such a folder is never swept)
        return
    pending = made / ".lock-pending"
    try:
        handle = os.open(pending, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        return  # (no lock: never swept, as another version's folder)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        os.rename(pending, made / LOCK)  # named once held
    except OSError:
        # A filesystem without locks (NFS without its lock daemon: ENOLCK): the folder
        # is used unlocked, never swept, removed by its process at its end as before.
        os.close(handle)
        with suppress(OSError):
            os.unlink(pending)
        return
    _held.append(handle)


def sweep(temporary: Path) -> int:
    """Remove the folders of ours in `temporary` whose process is gone; how many."""
    try:
        import fcntl
    except ImportError:
        return 0
    import shutil

    try:
        names = [n for n in os.listdir(temporary) if n.startswith(PREFIX)]
    except OSError:
        return 0
    removed = 0
    for name in names:
        try:
            # (for writing: NFS takes an exclusive flock as a write lock, EBADF otherwise)
            handle = os.open(temporary / name / LOCK, os.O_RDWR)
        except OSError:
            continue  # no lock: not ours to judge
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(handle)
            continue  # its process lives
        try:
            shutil.rmtree(temporary / name, ignore_errors=True)
            removed += 1
        finally:
            os.close(handle)
    return removed
