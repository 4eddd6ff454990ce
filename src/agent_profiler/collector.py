"""The cycle collector while journals are read and their model is used: it runs a hundred
times less often during a read and during a run of groups (`fewer_for_the_run`: the writing
between the reads), a long read ends with what it made frozen out of its way until the
group is used (`let_go`), and a forked worker never collects what it inherited;
in the console script, which leaves without freeing, none runs while a command starts or
while the last group of a run in one process is read and used.
(tests/reading/test_collector.py)"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

from agent_profiler import leaving

# While a journal is read, the cycle collector ran every 700 new objects and went through
# the model made so far again and again: a quarter to a third of reading a long session,
# for cycles reading hardly makes. It still runs, a hundred times less often.
READING_GC_THRESHOLD = 100_000


# A read that ran the collector this often (a journal of 25 MB or more) made a model the
# collector would go through again and again while the writer runs (a 50 MB Codex export's
# writing spent 0.35 s collecting). The read's end moves what exists into the permanent
# generation (`gc.freeze`), where no collection looks: refcounting still frees every
# object, and a read leaves next to no cyclic garbage (0–5 objects on the bench's 50 MB
# journals). A full collection walked the heap instead (0.17–0.25 s on the Pi bench).
READING_COLLECTIONS_BEFORE_FULL = 2
# Or that left this many objects no collection saw (a 100 MB Claude Code read: 78,000, 23 ms).
READING_YOUNG_BEFORE_FREEZE = 10_000


# A console command leaves without freeing (leaving.py). While it starts (its imports, its
# options, the inputs it finds) and while it reads and uses the last journal group of a
# run in one process, what a collection walks is objects that all live on (the bench's
# journals: 0-45 objects freed by each young collection of up to 100,000), and what it
# would free goes with the process. So there the collector is off: a hundred young
# collections of the start's objects, 3.5 ms of a small export's 65; 38 ms of the 50 MB
# Codex export's 2.07 s (two young collections of 13-14 ms in its read), 30 ms of the Pi
# export's, 7 of the 100 MB Claude Code export's. Peak RSS moved by under 1 MB on those
# journals. It holds as long as reading makes no reference cycle per line or record
# (tests/reading/test_collector.py counts them): each would stay to the end.
_QUIET: list[bool] = []  # the command's start: no collection until its groups are read


def quiet_start() -> None:
    """An export's or a summary's start in the console script (entry.py): no collection
    until its journal groups are read (`started`). Nothing where the process will not
    leave without freeing, or where the collector is off already."""
    if leaving.will_leave() and gc.isenabled() and not _QUIET:
        gc.disable()
        _QUIET.append(True)


def started() -> None:
    """The start's quiet over (pipeline.run_groups, a read's `fewer_collections`), before
    any worker is forked: what the start made is frozen (it lives on, and the first young
    collection would walk all of it), the collector back."""
    if _QUIET:
        _QUIET.clear()
        gc.freeze()
        gc.enable()


@contextlib.contextmanager
def none_for_the_last(last: bool) -> Iterator[None]:
    """No collection while the `last` journal group of a run in one process is read and
    used, where the process then leaves without freeing. At its end what exists is frozen
    (the model, never walked: a first young collection would go through all of it) and the
    collector is back for what the command does next (a report made, a trace served)."""
    if not (last and leaving.will_leave() and gc.isenabled()):
        yield  # (a collector off by another's will is left so)
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def _collections() -> int:
    """Collections run so far, of every generation: every tenth of the youngest's runs
    counts as the next generation's instead, so the youngest's own count can miss one."""
    return sum(generation["collections"] for generation in gc.get_stats())


def _raised() -> tuple[int, int, int]:
    """The first threshold raised to READING_GC_THRESHOLD; returns the thresholds before."""
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], READING_GC_THRESHOLD), *old[1:])
    return old


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """The cycle collector's first threshold raised to READING_GC_THRESHOLD meanwhile;
    after a long read (READING_COLLECTIONS_BEFORE_FULL, READING_YOUNG_BEFORE_FREEZE), what
    exists is frozen out of the collector's way until `let_go`."""
    started()
    before = _collections()
    old = _raised()
    try:
        yield
    finally:  # (frozen before the caller's threshold is back: its next object collects all)
        long = _collections() - before >= READING_COLLECTIONS_BEFORE_FULL
        if gc.isenabled() and (long or gc.get_count()[0] >= READING_YOUNG_BEFORE_FREEZE):
            gc.freeze()
            _FROZEN[:] = [True]
        gc.set_threshold(*old)


# Between the reads too, while a run's groups are written and let go (pipeline.run_groups,
# a worker's run): writing leaves no cycles (an encoder ends with `close`, writers/events.py),
# so the young collections at CPython's threshold walked live objects only. A folder of 300
# sessions in one process: 559 young collections, 155 ms, 254 objects freed; and a read's
# end (the caller's threshold back) started one through the model it had just made.
@contextlib.contextmanager
def fewer_for_the_run() -> Iterator[None]:
    """The first threshold at READING_GC_THRESHOLD for a run of groups (the reads' own),
    the caller's again at its end."""
    old = _raised()
    try:
        yield
    finally:
        gc.set_threshold(*old)


def let_go() -> None:
    """What long reads froze (`fewer_collections`) back in the collector's care, once the
    group is used: what is still alive is then old, and what is not was freed already.
    Not in a worker process (`freeze_inherited`): what it inherited stays frozen.
    (Unasked: `gc.unfreeze` joins two lists, where `gc.get_freeze_count` walks every
    frozen object, 4 ms of a 100 MB Claude Code export.)"""
    if not _INHERITED:
        gc.unfreeze()
        _FROZEN.clear()


def frozen() -> bool:
    """Whether what this process froze is frozen still: a long read's, until `let_go`; a
    worker's inheritance, for good. Told by these marks, not by `gc.get_freeze_count()`,
    which CPython 3.12 lets fall to 0 only until its next full collection: each one moves
    its immortal objects (about 400) into the permanent generation."""
    return bool(_FROZEN or _INHERITED)


_FROZEN: list[bool] = []  # a long read's mark: what existed then is frozen (`let_go` ends it)
_INHERITED: list[bool] = []  # a worker's mark: what it inherited is frozen for good


def freeze_inherited() -> None:
    """In a forked worker: what it inherited is the parent's, and its cycle collector never
    walks it. A forked copy of a library's garbage (a DuckDB relation left in a cycle in the
    test process, whose threads the child does not have) crashed in its finalizer when the
    child collected it: the worker died and the parent read its groups again. Pages left
    untouched also stay shared with the parent. What the worker's own reads leave in cycles
    (0–5 objects a read) is then never collected, a cost of nothing."""
    gc.freeze()
    _INHERITED.append(True)
