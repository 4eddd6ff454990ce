"""What every child process of an export does for itself, and how it is started: worker
processes (pipeline.py), the second run's helper (writers/runs.py) and the reading's
scan helper (scan.py) each die with their parent and take signals as a worker does; a
worker's failure goes back as something the parent can unpickle."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING

from agent_profiler.errors import JournalError

if TYPE_CHECKING:
    from collections.abc import Callable


def portable(failure: JournalError) -> JournalError:
    """`failure` as the parent can unpickle it. An error class whose pickling loses its
    arguments (JournalError's, before its `__reduce__`) was a TypeError in the parent's
    `recv`: the run ended as an internal error, every other group lost. Such an error goes
    back as a plain JournalError with its words."""
    return (
        failure if unpickles(failure) else JournalError(failure.path, failure.message, failure.line)
    )


def unpickles(error: BaseException) -> bool:
    import pickle  # (a worker's failure only: an export in one process never loads it)

    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        return False
    return True


def start_method() -> str:
    """fork on Linux when this process has no other thread (the command line): a worker
    starts in milliseconds, sharing the imported package. Otherwise spawn, a fresh
    interpreter that imports it (≈ 0.1–0.2 s): forking a process with threads copies
    whatever state they were in, and macOS's system libraries are not fork-safe (Python's
    own default there is spawn)."""
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return "fork"
    return "spawn"


def leave_with(parent: int, inherited: list[int], *, signalled: bool = True) -> None:
    """Die with the parent. A parent killed outright (SIGKILL, the OOM killer) left its
    worker waiting on its pipe forever, holding what it inherited: `collect`'s lock on
    the dataset (every later collect refused) and export's open temporary file. Linux
    kills it on the parent's death (PR_SET_PDEATHSIG); everywhere, the parent's ends of
    the pipes it inherited are closed, so the parent's death is an end of file. `parent`
    0: a worker of another thread than the main one (Linux would kill it when that thread
    ends), which only the end of file ends. Not `signalled`: a helper that its pipes end
    as surely (each message it writes, its wait for an answer), spared the 5 ms of
    loading ctypes at its start."""
    for descriptor in inherited:
        with contextlib.suppress(OSError):
            os.close(descriptor)
    if parent and signalled and sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PDEATHSIG
    if parent and os.getppid() != parent:  # it died before this worker could ask
        os._exit(0)


def worker_signals(ignored: bool) -> None:
    """Ctrl-C reaches every process of the terminal's group: a worker leaves at once and
    without a traceback, and the parent, which gets it too, says it was interrupted
    (unless the parent itself ignores it: then so does the worker)."""
    if not ignored:
        signal.signal(signal.SIGINT, lambda *_: os._exit(130))
    # A forked worker inherits the parent's SIGTERM handler (entry.py); the parent's
    # `terminate()` must end it at once.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def fork_helper(
    work: Callable[[], None],
    inherited: list[int],
    held: set[int | signal.Signals] | None,
    *,
    collect: bool,
    signalled: bool = True,
) -> tuple[int, bool] | None:
    """A helper forked to run `work` and end (exit code 0 once it returned, 1 if it
    raised): it dies with this process and takes signals as a worker does
    (`leave_with`: `inherited` are this process's ends of its pipes, `signalled` whether
    Linux is asked to kill it when this process dies; `worker_signals`),
    then gets the signal mask `held` back (signals_held, writers/runs.py). Its cycle
    collector runs only if `collect` (a helper that makes no cycles would copy pages for
    nothing). Neither process's collector walks the objects both share: what exists is
    frozen here, and stays so until the caller unfreezes it once the helper has ended,
    unless a read had frozen it before (collector.let_go thaws that). Returns the pid and
    whether a read had frozen it; None where the fork failed (nothing frozen then)."""
    import gc

    from agent_profiler.collector import frozen as read_froze

    frozen = read_froze()
    gc.freeze()
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        if not frozen:
            gc.unfreeze()
        return None
    if pid == 0:  # the helper: it ends here, whatever happens
        code = 1
        try:
            if not collect:
                gc.disable()
            leave_with(parent, inherited, signalled=signalled)
            worker_signals(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)
            if held is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
            work()
            code = 0
        finally:
            os._exit(code)
    return pid, frozen
