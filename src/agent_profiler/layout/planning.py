"""The rooms a session is planned in, before any slice is made, each a function of data
(or a small class holding data): track uuids numbered per journal group (`TrackIds`);
first-fit lanes of one logical track (`first_fit`); which items the flows link (`Links`,
the prompt → response → tool call relations, in arrays); and counters, whose samples are
made when read and given out as a step function (`PlannedCounter`, `steps`)."""

from __future__ import annotations

import heapq
import itertools
import struct
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence

from agent_profiler.layout.types import R_COUNTER, R_COUNTER_CLOSE, Sample
from agent_profiler.model import Prompt, Response, frozen
from agent_profiler.sorting import by_first

# ------------------------------------------------------------------ track ids


# Track uuids of the journal group numbered `group` start at `group * UUID_BLOCK + 1`, so
# groups can be laid out apart (in worker processes) and their uuids never meet. A single
# group (one journal, one session tree) keeps the small uuids 1, 2, 3 …
UUID_BLOCK = 1 << 20


class TrackIds:
    """Track uuids numbered base + 1, base + 2 … in the (deterministic) order their keys
    are first asked for, rather than hashed: a uuid is written on every event, and a small
    one is 1–3 bytes instead of 10."""

    def __init__(self, group: int = 0) -> None:
        self.ids: dict[str, int] = {}
        self.base = group * UUID_BLOCK

    def get(self, key: str) -> int:
        uuid = self.ids.get(key)
        if uuid is None:
            if len(self.ids) + 1 >= UUID_BLOCK:
                raise OverflowError(f"more than {UUID_BLOCK - 1} tracks in one journal group")
            uuid = self.ids[key] = self.base + len(self.ids) + 1
        return uuid


# ---------------------------------------------------------------------- lanes


NO_LANES: array[int] = array("I")


def first_fit(
    starts: Sequence[int], ends: Sequence[int], positions: Sequence[int], instants: Sequence[int]
) -> tuple[array[int], dict[int, tuple[int, int, int]], int]:
    """First-fit lanes of one logical track's slices (given in layout order: `positions`
    rise), taken in (start, -end, position) order: each slice's lane (in the given
    order), each lane's first (start, -end, position), and the number of lanes. Instants
    never conflict: they all go on the first lane, which they make exist. A slice goes on
    the lowest-numbered lane free at its start; heaps of the busy lanes (busy until, lane)
    and of the free ones keep this O(log n) per slice (a scan of every lane was quadratic
    when thousands of requests overlap)."""
    count = 0
    busy: list[tuple[int, int]] = []
    free: list[int] = []
    push, pop, replace = heapq.heappush, heapq.heappop, heapq.heapreplace
    lane_of = array("I", bytes(4 * len(starts)))
    firsts: dict[int, tuple[int, int, int]] = {}
    # (start, -end), then layout order: positions rise with i (sorting.py: a tuple per
    # slice only where two start together).
    if len(ends) != len(starts):
        raise ValueError("a start or an end without the other")
    for i in by_first(range(len(starts)), starts.__getitem__, _later_end(ends)):
        start, end = starts[i], ends[i]
        if instants[i]:
            count = max(count, 1)
            lane = 0
        else:
            # A zero-length slice keeps its lane busy until ts + 1 (contract §1).
            until = end if end > start else start + 1
            if (
                not free
                and busy
                and busy[0][0] <= start
                and (len(busy) < 2 or busy[1][0] > start)
                and (len(busy) < 3 or busy[2][0] > start)
            ):
                # Exactly one lane frees up (the heap's least; both its children are
                # still busy) and none was free: it is the lane to take, in one heap
                # operation instead of four (a track whose slices follow one another).
                lane = busy[0][1]
                replace(busy, (until, lane))
                lane_of[i] = lane
                continue  # not a lane's first slice: the lane was taken before
            while busy and busy[0][0] <= start:
                push(free, pop(busy)[1])
            if free:
                lane = pop(free)
            else:
                lane = count
                count += 1
            push(busy, (until, lane))
        lane_of[i] = lane
        if lane not in firsts:
            firsts[lane] = (start, -end, positions[i])
    return lane_of, firsts, count


def _later_end(ends: Sequence[int]) -> Callable[[int], int]:
    """A slice's place among those that start with it: the one that ends later first."""
    return lambda i: -ends[i]


def int64s(values: Iterable[int]) -> array[int]:
    """`array("q", values)`, packed by struct from a list: array converts each int through
    PyArg_Parse (≈ 270 instructions an item in CPython 3.11; struct's loop is a fifth of
    that), and grows an item at a time when fed an iterator. The layout's arrays of one
    int per request (a 5 MB Pi session: about 100,000 items) are made this way."""
    items = values if type(values) is list else list(values)
    made = array("q")
    made.frombytes(_pack(f"{len(items)}q", *items))
    return made


_pack = struct.pack


# ---------------------------------------------------------------------- links


@frozen
class Links:
    """Which items of one list (sources) link to which of another (targets), in arrays:
    each target's source (-1: none) and each source's targets, in their order."""

    source_of: array[int]
    starts: array[int]  # source i's targets are targets[starts[i]:starts[i + 1]]
    targets: array[int]

    @classmethod
    def of(cls, sources: int, source_of: Iterable[int]) -> Links:
        of = int64s(source_of)
        counts = array("q", bytes(8 * (sources + 1)))
        for source in of:
            if source >= 0:
                counts[source + 1] += 1
        starts = int64s(itertools.accumulate(counts))
        targets = array("q", bytes(8 * starts[-1]))
        filled = starts[:-1]
        for target, source in enumerate(of):
            if source >= 0:
                targets[filled[source]] = target
                filled[source] += 1
        return cls(of, starts, targets)

    def values_of(self, source: int, values: array[int]) -> tuple[int, ...]:
        """`values` at each target of `source`, in order: a slice's flows to its targets,
        read once per slice, so without a slice of the array (one target or none, as a
        rule)."""
        first, last = self.starts[source], self.starts[source + 1]
        if last - first == 1:
            return (values[self.targets[first]],)
        if first == last:
            return ()
        return tuple([values[target] for target in self.targets[first:last]])


def linked(
    index: dict[str, int], key: str | None, start: int, sources: Sequence[Response | Prompt]
) -> int:
    """The source a flow to an item starting at `start` comes from (-1: none): the one
    `key` names, unless it starts later (a flow never points back in time)."""
    found = index.get(key, -1) if key else -1
    return -1 if found < 0 or start < sources[found].start_ns else found


# ------------------------------------------------------------------- counters


@frozen
class PlannedCounter:
    """One counter as it is planned: the group its track sits in ("": the capture, else
    a group row of the table, "Context"), whether it shares the tokens axis, and how its
    samples before the closing zero are made, in (ts, rank) order, when read: from the
    model, or from the few values kept (a Context counter's changes, in two arrays). A
    counter of the capture is described by its row in the table (`description` "")."""

    name: str
    made: Callable[[], Iterator[Sample]]
    group: str = ""
    share: bool = False
    keep_repeats: bool = False  # every sample kept (Context size: one per request)
    description: str = ""
    rank: int = 0  # a group's counter: its place among the group's counters


def steps(samples: Iterable[Sample], keep_repeats: bool) -> Iterator[Sample]:
    """A counter's samples, given in (ts, rank) order, as a step function: a repeated
    value adds nothing, so it is dropped. Context size keeps every sample
    (`keep_repeats`), one per request, as the UI reads it so, and every counter keeps its
    closing zero at the end of the recording. Several samples of one counter at one (ts,
    rank): the last one wins, in the place of the first."""
    pending: Sample | None = None  # the last sample kept, given out once the next comes
    previous: int | None = None
    last_ts = last_rank = -1
    for sample in samples:
        ts, rank, value = sample
        if ts < last_ts or (ts == last_ts and rank < last_rank):
            raise ValueError(f"counter samples out of (ts, rank) order at {ts}")
        last_ts, last_rank = ts, rank
        if value == previous and not keep_repeats and rank != R_COUNTER_CLOSE:
            continue
        previous = value
        if pending is not None and pending[0] == ts and pending[1] == rank:
            pending = sample
            continue
        if pending is not None:
            yield pending
        pending = sample
    if pending is not None:
        yield pending


def kept_samples(times: array[int], values: array[int]) -> Iterator[Sample]:
    return zip(times, itertools.repeat(R_COUNTER), values, strict=False)
