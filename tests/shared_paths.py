"""Where the shared folder (corpus, reference traces, specs) is, for tests that use it.

It sits beside the repository (`<repo>/../shared`) on the team's machines. Runs from a copy
of the tree elsewhere (mutmut's `mutants/`, a CI checkout) set `AGENT_PROFILER_SHARED` to it;
tests that need it skip with `SHARED_REASON` when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]
REPO = _REPO  # the repository's root
TESTS = _REPO / "tests"  # this folder, wherever a test module sits below it


def shared_dir() -> Path:
    """The shared folder: `$AGENT_PROFILER_SHARED`, else `<repo>/../shared`, else `/work/shared`."""
    configured = os.environ.get("AGENT_PROFILER_SHARED")
    if configured:
        return Path(configured)
    beside = _REPO.parent / "shared"
    return beside if beside.is_dir() else Path("/work/shared")


SHARED = shared_dir()
CORPUS = SHARED / "corpus"
SHARED_REASON = f"shared folder not found at {SHARED} (set AGENT_PROFILER_SHARED to it)"
