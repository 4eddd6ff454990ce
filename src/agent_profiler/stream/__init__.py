"""The one-pass export (docs/onepass.md): a journal group read line by line and written
as it is read, instead of log → replay → model → layout → sweep. Only where it is known
to write what the model path writes: anything else (an option it does not do, a harness
or a journal feature it does not handle) is read the usual way, decided from the options
before reading, or by the pass raising `NotHandled` before the group's bytes are handed
on. Off unless AGENT_PROFILER_STREAM=1 (`enabled`, read here only)."""

from __future__ import annotations

import os

from agent_profiler.stream.log import NotHandled

SWITCH = "AGENT_PROFILER_STREAM"


def enabled() -> bool:
    """Whether exports go through the one pass where it can (the environment's switch)."""
    return os.environ.get(SWITCH) == "1"


__all__ = ["SWITCH", "NotHandled", "enabled"]
