"""The one-pass export (docs/onepass.md): a journal group read line by line and written
as it is read, instead of log → replay → model → layout → sweep. Only where it is known
to write what the model path writes: anything else (an option it does not do, a harness
or a journal feature it does not handle) is read the usual way, decided from the options
before reading, or by the pass raising `NotHandled` before the group's bytes are handed
on. On by default for the harnesses of `BY_DEFAULT`; AGENT_PROFILER_STREAM=1 takes it
wherever it can, =0 nowhere (`enabled`, read here only)."""

from __future__ import annotations

import os

from agent_profiler.model import Harness
from agent_profiler.stream.log import NotHandled

SWITCH = "AGENT_PROFILER_STREAM"

# Where the pass is the default: it writes what the model path writes (tests/stream, every
# journal of tests/data and the corpus) in less time and memory (Pi 50 MB: 14.4-14.9 times
# the floor against 16.4, 83 MB against 89; docs/onepass.md); its reading runs on a second
# core from 8 MB up to stream.pi.FORK_UNTIL. Claude Code and Codex stay
# on the model path where the pass would read and write on one core: there it keeps the
# peak flat but takes more time (Claude Code 25% more wall time at 100 MB, where the model
# path writes on two cores; Codex 11% more CPU).
BY_DEFAULT = frozenset({Harness.PI})
# Where the pass is the default when its reading runs on a second core (stream/forked.py):
# a long Codex rollout exported on its own (50 MB: a sixth to a quarter less wall time
# than the model path in alternating runs, a third more CPU), a long Claude Code
# transcript (100 MB: a flat peak, 29 MB for the larger process against the model path's
# 40 MB, no more wall time); the same bytes as the pass in one process (docs/onepass.md).
SPLIT_BY_DEFAULT = frozenset({Harness.CODEX, Harness.CLAUDE_CODE})


def enabled(harness: Harness, split: bool = False) -> bool:
    """Whether an export of this harness's group goes through the one pass where it can:
    the environment's switch when it is 1 (every harness the pass handles) or 0 (none),
    else `BY_DEFAULT`, and `SPLIT_BY_DEFAULT` where its reading would run on a second core
    (`split`: stream.forked.may_fork)."""
    switch = os.environ.get(SWITCH)
    if switch == "1":
        return True
    if switch == "0":
        return False
    return harness in BY_DEFAULT or (split and harness in SPLIT_BY_DEFAULT)


__all__ = ["BY_DEFAULT", "SPLIT_BY_DEFAULT", "SWITCH", "NotHandled", "enabled"]
