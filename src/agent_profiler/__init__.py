"""agent-profiler: coding-agent journals → Perfetto traces of context-window composition.

The public surface is `__all__`, guarded by tests/test_public_api.py; everything else may
change between versions. Reading and writing, in the order a program uses them:

    result = load([Path("session.jsonl")], Diagnostics())      # adapters → model Sessions
    with open("out.pftrace", "wb") as stream:
        PerfettoWriter().write(result.sessions, stream)         # model → bytes

- `load` / `LoadResult`: journal files or folders → `Session`s (the harness is detected
  from each file's content; `Harness` names the six that are known);
- `use_estimator(named("calibrated"))`: measure journal text with another estimator;
- `PerfettoWriter`, `ChromeJsonWriter`, `writer_class` (the writer a file name implies);
- `Diagnostics`: the warnings one read collected (a damaged record costs only itself);
- the errors of `errors.py`, rooted at `AgentProfilerError` (its docstring draws the tree).
"""

import typing as _typing

from agent_profiler import lazy as _lazy
from agent_profiler.version import __version__

if _typing.TYPE_CHECKING:
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.errors import (
        AgentProfilerError,
        DamagedJournalError,
        JournalError,
        OutputError,
        ServeError,
        UsageError,
    )
    from agent_profiler.estimate import named, use_estimator
    from agent_profiler.loader import LoadResult, load
    from agent_profiler.model import Harness, Session
    from agent_profiler.writers import ChromeJsonWriter, PerfettoWriter, writer_class

# Each public name and the module it lives in. They are imported when first asked for
# (PEP 562), so a command that needs few of them (`fleet`, a plain `export`) does not pay
# for all: importing any submodule initialises this package first.
_HOMES = {
    "AgentProfilerError": "errors",
    "ChromeJsonWriter": "writers",
    "DamagedJournalError": "errors",
    "Diagnostics": "diagnostics",
    "Harness": "model",
    "JournalError": "errors",
    "LoadResult": "loader",
    "OutputError": "errors",
    "PerfettoWriter": "writers",
    "ServeError": "errors",
    "Session": "model",
    "UsageError": "errors",
    "load": "loader",
    "named": "estimate",
    "use_estimator": "estimate",
    "writer_class": "writers",
}

__all__ = [
    "AgentProfilerError",
    "ChromeJsonWriter",
    "DamagedJournalError",
    "Diagnostics",
    "Harness",
    "JournalError",
    "LoadResult",
    "OutputError",
    "PerfettoWriter",
    "ServeError",
    "Session",
    "UsageError",
    "__version__",
    "load",
    "named",
    "use_estimator",
    "writer_class",
]


__getattr__ = _lazy.module_getattr(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
