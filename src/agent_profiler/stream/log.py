"""The context log of a one-pass export: `attribution.ContextLog` whose entries are
replayed as they come (`attribution_replay.Replayer`, fed one request's entries at a
time) instead of once the journal has been read, so each request's snapshot, with its
diff against the one before, is known when the request is logged.

What a pass keeps of the snapshots: the last one (the next diff is against it) and the
few holding the largest additions a tool call caused so far (`Additions`: the trace's
`Largest additions` are a session-wide top ten, written at the end). Nothing else is
held: the replay's log shrinks to one request's entries, the model's snapshots to none."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Container
from typing import Any

from agent_profiler.attribution import INFERRED_HEAD_ID, ContextLog, Logged, Observation
from agent_profiler.attribution_replay import Replayer
from agent_profiler.layout.counters import MAX_ADDITION_INSTANTS
from agent_profiler.model import ContextChange, ContextSnapshot, Coverage


class NotHandled(Exception):
    """What the one pass does not do (yet) for this group: the caller reads it the usual
    way. Raised before the group's bytes are handed on."""


class ReadAgain(NotHandled):
    """The reading let go of what the journal turned out to need again (a lean reading,
    stream/pi_reading.py): the pass runs again from the start, its reading keeping
    everything (stream/requests.py `export_pass`)."""


class Additions:
    """The `MAX_ADDITION_INSTANTS` largest additions a tool call caused so far, ranked
    as views.largest_tool_additions ranks them over the whole session (-delta, time, item
    id, place in the walk), each with its snapshot: at the end, the snapshots the session's
    instants are made of."""

    def __init__(self, calls: Container[str]) -> None:
        self.calls = calls  # the call ids of the Tools slices so far
        self.kept: list[_Largest] = []
        self.seen = itertools.count()
        self.causes: set[str] = set()  # the calls that caused the additions kept

    def take(self, snapshot: ContextSnapshot) -> None:
        if snapshot.baseline:
            return
        kept, calls = self.kept, self.calls
        # Once ten are kept, a change below the least of them cannot enter; a snapshot's
        # changes come largest |delta| first, so the rest cannot either.
        least = -kept[0].key[0] if len(kept) >= MAX_ADDITION_INSTANTS else 0
        taken = False
        for change in snapshot.changes:
            delta = change.delta_tokens
            if delta <= 0:
                if -delta < least:  # (its |delta| below the least: so are the rest)
                    break
                continue
            if delta < least:
                break
            if change.source_id not in calls or change.id == INFERRED_HEAD_ID:
                continue
            key = (-delta, snapshot.time_ns, change.id, next(self.seen), change, snapshot)
            if len(kept) < MAX_ADDITION_INSTANTS:
                heapq.heappush(kept, _Largest(key))
            elif key < kept[0].key:
                heapq.heapreplace(kept, _Largest(key))
            else:
                continue
            taken = True
            if len(kept) >= MAX_ADDITION_INSTANTS:
                least = -kept[0].key[0]
        if taken:
            self.causes = {entry.key[4].source_id for entry in kept}

    def snapshots(self) -> list[ContextSnapshot]:
        """The snapshots of the additions kept, in the session's order, each once."""
        ordered = sorted(self.kept, key=lambda entry: entry.key[3])
        found: dict[int, ContextSnapshot] = {}
        for entry in ordered:
            found.setdefault(id(entry.key[5]), entry.key[5])
        return list(found.values())


class _Largest:
    """A kept addition in a heap whose top is the one ranked last (the next to leave)."""

    __slots__ = ("key",)

    def __init__(self, key: tuple[int, int, str, int, ContextChange, ContextSnapshot]) -> None:
        self.key = key

    def __lt__(self, other: _Largest) -> bool:
        return self.key[:4] > other.key[:4]


class StreamLog(ContextLog):
    """A ContextLog replayed as it is written: the entries logged since the last call of
    `replayed` are replayed then, and the snapshots they make handed back (their changes
    are the diff against the snapshot before them, as the model's are). The caller calls it
    every few hundred lines (the replay runs as a loop of its own, as today, not once per
    request between the reader's steps)."""

    def __init__(self) -> None:
        super().__init__()
        self.replayer = Replayer(self.estimator.basis, Coverage.PARTIAL, self.estimator.infer_head)
        self.left: list[ContextSnapshot] = []  # what `replay` hands the finished session

    def replayed(self) -> list[ContextSnapshot]:
        """The snapshots of the observations logged since the last call, in order."""
        ops = self._ops
        if not ops:
            return []
        self._ops = []
        return self.snapshots_of(ops)

    def snapshots_of(self, ops: list[Any]) -> list[ContextSnapshot]:
        """The snapshots of `ops` (entries the log holds no more), in order."""
        ops.reverse()
        snapshots = self.replayer.run(ops)
        made = snapshots[1:] if self.made_before else snapshots[:]
        # the replay compares the next categories with the last snapshot's
        del snapshots[:-1]
        self.made_before = bool(snapshots)
        return made

    made_before = False

    def observe(self, observation: Observation) -> Logged:
        if observation.dropped:
            raise NotHandled("an observation that makes no snapshot")
        self._ops.append(observation)
        return Logged(-1)

    def settle(self, logged: Logged, **facts: object) -> Observation:
        raise NotHandled("an observation settled after it was logged")

    def replay(
        self,
        *,
        basis: object = None,
        coverage: Coverage = Coverage.PARTIAL,
        infer_head: bool = True,
    ) -> list[ContextSnapshot]:
        """Every snapshot was handed on as it was made: the session keeps those `left`,
        and those of what is logged at the end (a session without a request observes its
        context at its end)."""
        return [*self.left, *self.replayed()]
