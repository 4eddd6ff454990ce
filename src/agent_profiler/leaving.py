"""A command's end without freeing what it built: the console script's process leaves
through `os._exit` once its work is done and said.

A Python process frees every object on its way out: those of each function it leaves,
then the modules'. After an export that is the whole model of the last journal group and
the plan of its last session, object by object, a few hundred thousand of them: 35–40 ms
of the 100 MB Claude Code bench journal's 0.8 s, 40–60 ms of the 50 MB Codex session's
2.5 s (measured: the same exports, alternating, with and without). The system frees a
process's memory at once. So the console script (`entry.console`; `python -m
agent_profiler` too when the interpreter runs it, not `-m cProfile`, `coverage run -m` or
an embedder's runpy, which go on after it; not `entry.main`, which returns) keeps those
objects (`keep`) instead of freeing them as it returns, and ends with `os._exit` after
doing what the interpreter's own exit would have done that anyone could see:

- stdout and stderr flushed (a summary piped to `head`, the last warning);
- the functions registered with `atexit` run (the standard library's own: logging,
  multiprocessing, `weakref.finalize`);
- only when this is the process's only thread (the interpreter's exit waits for the
  others: a thread still writing would be cut off).

Where any of it fails or does not hold, or the interpreter is to go on to its prompt
afterwards (`python -i`, PYTHONINSPECT), the process ends the usual way, freeing as ever.
Files the command wrote are closed before it returns (a trace is renamed into place only
once it is whole), and temporary files are files with no name or removed in `finally`
blocks, so nothing the usual end would finish is left to it.

`keep` holds one object of each kind, the last one given: a folder's groups are read one
after another, and each group's model is let go when the next one starts (`release`,
before the one pass or the reading), and a group's plan is kept once its last session is
written, so the peak is what it was."""

from __future__ import annotations

import os
import sys
import threading

_kept: dict[str, object] = {}
_keeping: list[bool] = [False]


def keep(kind: str, value: object) -> None:
    """Hold `value` until the process ends, in place of the last one of its `kind`
    (which is freed now), where the process leaves without freeing; else nothing."""
    if _keeping[0]:
        _kept[kind] = value


def will_leave() -> bool:
    """Whether this process means to leave without freeing once its command is done
    (`start`, and no prompt to go on to; `leave` may still find a reason not to)."""
    return _keeping[0] and not _inspecting()


def _inspecting() -> bool:
    """`python -i` (or PYTHONINSPECT): the interpreter goes on to its prompt."""
    return bool(sys.flags.inspect or os.environ.get("PYTHONINSPECT"))


def release() -> None:
    """Free what is held (before the next group is read: one group's model at a time)."""
    _kept.clear()


def start() -> None:
    """The console script's: what `keep` is given is held to the end."""
    _keeping[0] = True


def leave(code: object) -> None:
    """End the process now with `code` (SystemExit's: None, an int) without freeing its
    objects, if that is safe; else return, and the caller ends it the usual way."""
    if not _keeping[0]:
        return
    if code is None:
        code = 0
    if type(code) is not int or threading.active_count() != 1:
        return  # (a message to print, or a thread the usual exit would wait for)
    if _inspecting():
        return  # (`python -i`: the interpreter goes on to its prompt)
    import atexit

    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_functions is None:  # (not CPython)
        return
    try:
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return  # (a broken pipe, a full disk: the usual end says so, as ever)
    run_exit_functions()
    if threading.active_count() != 1:
        return  # (an exit function started a thread: the usual end waits for it)
    os._exit(code)
