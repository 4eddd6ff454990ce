"""`python -m agent_profiler` is the same as the `agent-profiler` command."""

import sys

from agent_profiler.entry import console, main


def _top_level() -> bool:
    """Run by the interpreter's own `-m` (runpy's `_run_module_as_main` called this
    module's code), not by another program that goes on after it returns (`-m cProfile`,
    `coverage run -m`, an embedder's `runpy.run_module`): only then may the process leave
    without freeing (leaving.py), as the console script does."""
    frame = getattr(sys, "_getframe", None)  # (CPython's; elsewhere: main, which returns)
    run_code = frame(1).f_back if frame is not None else None  # (runpy called this code)
    caller = run_code.f_back if run_code is not None else None
    return caller is not None and caller.f_code.co_name == "_run_module_as_main"


if __name__ == "__main__":  # not when a worker process imports it (multiprocessing)
    console() if _top_level() else main()
