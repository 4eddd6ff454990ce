"""What a writer reads of the layout, and the order of its events: track descriptors
(`Track`), slices (`LaidSlice`), counter series, one session's plan (`SessionPlan`, whose
`Block`s make its slices when read) and layout (`SessionLayout`), the whole `Layout`; the
same-timestamp event ranks (R_*, TRACE_CONTRACT §1) and the ranks of a slice's begin and
end; the trace's root track and the stable hash its uuid and every flow id are made
with."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from enum import StrEnum
from typing import Any

from agent_profiler.annotations import TraceHeader
from agent_profiler.digest import blake2b
from agent_profiler.model import Session, frozen
from agent_profiler.records import record

# Same-timestamp order (TRACE_CONTRACT §1): lowest rank first.
R_CAPTURE_BEGIN, R_COUNTER_OPEN, R_SLICE_END, R_INSTANT, R_SLICE_BEGIN = 0, 1, 2, 3, 4
R_ZERO_END, R_COUNTER, R_COUNTER_CLOSE, R_CAPTURE_END = 5, 6, 7, 8


def stable_id64(text: str) -> int:
    """A stable, non-zero 64-bit id for a key (flows, the trace root): the first 8 bytes of
    its BLAKE2b digest, little-endian. Any stable hash serves; BLAKE2b runs in C, which
    matters for the tens of thousands of flows of a long session."""
    return int.from_bytes(blake2b(text.encode(), digest_size=8).digest(), "little") or 1


def stable_ids64(prefix: str) -> Callable[[str], int]:
    """`suffix → stable_id64(prefix + suffix)`, the prefix hashed once: each id is a copy
    of that hasher fed its suffix (BLAKE2b is a stream, UTF-8 a concatenation), half the
    cost of a stable_id64 call (measured), for the thousands of flows of a long session."""
    start = blake2b(digest_size=8)
    start.update(prefix.encode())
    from_bytes = int.from_bytes

    def of(suffix: str) -> int:
        hasher = start.copy()
        hasher.update(suffix.encode())
        return from_bytes(hasher.digest(), "little") or 1

    return of


# --------------------------------------------------------------------------- public layout


class TrackKind(StrEnum):
    GROUP = "group"  # holds other tracks: a session's capture, the Context group
    SLICE = "slice"
    COUNTER = "counter"


class Merge(StrEnum):
    """How the UI merges sibling tracks (TrackDescriptor.sibling_merge_behavior)."""

    NONE = "none"  # a capture stays on its own, even beside one of the same name
    BY_NAME = "by-name"  # the lanes of one logical track show as one track


@frozen
class Track:
    """One track descriptor. None or "" means "not said" (the encoder writes no field):
    an order rank of 0 is a rank, None is none."""

    uuid: int
    name: str
    kind: TrackKind
    parent: int | None = None
    order_rank: int | None = None  # place among its siblings (sibling_order_rank)
    explicit_child_order: bool = False  # children sorted by their order_rank
    merge: Merge | None = None
    description: str = ""
    counter_unit: str = ""  # counters only
    share_key: str = ""  # counters sharing one y axis


# The trace's one root track (docs/traces.md, "Sessions in the track tree"): every
# top-level session's group is its child. Written once per trace by the trace-level writer
# (TraceHeader), beside the clock snapshot; a hash, so that it meets no group's uuid block.
TRACE_ROOT_UUID = stable_id64("agent-profiler:trace-root")
# sibling_order_rank is an int32: a top-level session's rank is its real start in seconds
# from this epoch (2020-01-01 UTC), which every journal group works out alone.
_RANK_EPOCH_S = 1_577_836_800


def start_rank(start_ns: int) -> int:
    """A top-level session's place among the trace root's children: its real start, in
    seconds from 2020 (clamped to an int32), so groups laid out apart still agree."""
    seconds = start_ns // 1_000_000_000 - _RANK_EPOCH_S
    return max(-(2**31), min(2**31 - 1, seconds))


def trace_root(header: TraceHeader) -> Track:
    """The trace's root track: what the trace holds, in order of the sessions' real start."""
    return Track(
        TRACE_ROOT_UUID,
        header.root_name(),
        TrackKind.GROUP,
        explicit_child_order=True,
        merge=Merge.NONE,
        description=(
            "Sessions in order of their real start, each followed by its subagents. "
            + (
                "Clock aligned (--align start): every session starts at the same "
                "origin; its real start is on its profile (1) slice (real_start)."
                if header.aligned
                else "Times are the journals' wall-clock times."
            )
        ),
    )


Args = dict[str, Any]
Sample = tuple[int, int, int]  # a counter's (timestamp, rank, value)
Place = tuple[int, int, int, bool]  # a slice's (start, end, position, instant), for its lane


@record
class LaidSlice:
    """A slice or (instant=True) an instant. build_layout fills it in; once it returns, no
    field changes. `track` is the logical track name; lanes of one name have their own
    `track_uuid`. A flow id sits on exactly two slices; `outgoing` holds those starting here.

    `args_source` is the arguments or a function of the (frozen) model that builds them:
    responses and tools carry the heavy ones (the `context` dict), which are built when a
    writer reads `args` and dropped once encoded, so a layout holds ≈ 1/4 of the memory."""

    track: str
    name: str
    start: int
    end: int
    category: str
    args_source: Args | Callable[[], Args]
    # Tuples, not a list and a set: most slices have none, and an empty set is 216 bytes
    # (a tenth of a long session's layout); a slice has at most a few flows.
    flows: tuple[int, ...] = ()
    outgoing: tuple[int, ...] = ()
    instant: bool = False
    track_uuid: int = 0

    @property
    def args(self) -> Args:
        """The slice's arguments (built anew on each read when they are lazy)."""
        source = self.args_source
        return source if isinstance(source, dict) else source()


@frozen
class CounterSeries:
    """The samples of one counter track as (timestamp, rank, value), ordered by (timestamp,
    rank): a step function with repeated values dropped (Context size keeps every sample,
    one per request), at most one value per (timestamp, rank), the closing 0 last. A
    plan's series make their samples each time they are read; a SessionLayout's are a
    tuple."""

    track_uuid: int
    name: str
    samples: Iterable[Sample]


class Remade:
    """An iterable made afresh by each reading (a plan's counter samples)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Iterator[Sample]]) -> None:
        self.make = make

    def __iter__(self) -> Iterator[Sample]:
        return self.make()


@frozen
class SessionLayout:
    """One session's tracks (in declaration order), slices and counter series."""

    session: Session
    activity: str  # the category of its activity slices and counters
    capture_uuid: int
    tracks: tuple[Track, ...]
    slices: tuple[LaidSlice, ...]
    counters: tuple[CounterSeries, ...]

    def slice_events(self) -> Iterator[tuple[int, int, int, LaidSlice, bool]]:
        """(timestamp, rank, order, slice, is_end) for every slice begin, instant and
        slice end; `order` is the slice's position, which breaks ties of (ts, rank)."""
        for ts, rank, order, slice_ in begin_events(self.slices):
            yield ts, rank, order, slice_, False
            if rank != R_INSTANT:
                yield slice_.end, end_rank(slice_), order, slice_, True


@frozen
class SessionPlan:
    """One session's tracks and counter series, and its slices as blocks that make them
    when read: `slices()` in layout order, `begins()` in the order a writer sweeps them.
    A long session's slices are made one at a time, so neither is held whole."""

    session: Session
    activity: str  # the category of its activity slices and counters
    capture_uuid: int
    tracks: tuple[Track, ...]
    counters: tuple[CounterSeries, ...]
    blocks: tuple[Block, ...]
    end: int = 0  # the capture's end, where every counter closes (data.SessionData.end)

    @property
    def slice_count(self) -> int:
        return sum(block.count for block in self.blocks)

    def slices(self) -> Iterator[LaidSlice]:
        """Every slice, in layout order (a SessionLayout's `slices`)."""
        for block in self.blocks:
            yield from block.make()

    def begins(self) -> Iterator[tuple[int, int, int, LaidSlice]]:
        """(start, begin rank, order, slice) of every slice, ordered so; `order` is the
        slice's position in `slices()` from 1. Blocks made in that order already (the
        long ones: prompts, responses, tools) are merged as they are made; the others,
        short, are sorted."""
        streams: list[Iterator[tuple[int, int, int, LaidSlice]]] = []
        loose: list[tuple[int, int, int, LaidSlice]] = []
        offset = 0
        for block in self.blocks:
            made = (
                begin_events(block.make(), offset) if block.begins is None else block.begins(offset)
            )
            if block.ordered:
                streams.append(made)
            else:
                loose += made
            offset += block.count
        loose.sort()  # (start, rank, order) are unique: no two slices are compared
        streams.append(iter(loose))
        return merged_begins(streams)

    def laid_out(self) -> SessionLayout:
        """The plan with its slices made and kept."""
        return SessionLayout(
            self.session,
            self.activity,
            self.capture_uuid,
            self.tracks,
            tuple(self.slices()),
            tuple(CounterSeries(c.track_uuid, c.name, tuple(c.samples)) for c in self.counters),
        )


def merged_begins(
    streams: list[Iterator[tuple[int, int, int, LaidSlice]]],
) -> Iterator[tuple[int, int, int, LaidSlice]]:
    """heapq.merge(*streams) of begins, by hand: the heap holds each stream's head as
    [start, rank, order, begin, stream], updated in place, so ordering two heads compares
    two ints (their starts, as a rule) where heapq.merge compared [begin, index, next]
    lists of tuples, about twice the work, several times per begin. Orders are unique, so
    no slice is ever compared, and the result is heapq.merge's whatever the streams."""
    heads: list[list[Any]] = []
    for stream in streams:
        for begin in stream:
            heads.append([begin[0], begin[1], begin[2], begin, stream])
            break
    heapq.heapify(heads)
    replace = heapq.heapreplace
    while len(heads) > 1:
        head = heads[0]
        yield head[3]
        following = next(head[4], None)
        if following is None:
            heapq.heappop(heads)
        else:
            head[0], head[1], head[2], _ = head[3] = following
            replace(heads, head)
    if heads:
        yield heads[0][3]
        yield from heads[0][4]


def begin_rank(slice_: LaidSlice) -> int:
    """Where a slice's begin (or instant) goes among events of the same time (§1)."""
    return name_rank(slice_.name, slice_.instant)


def name_rank(name: str, instant: bool) -> int:
    """The begin rank of a slice of this name (begin_rank)."""
    if instant:
        return R_INSTANT
    return R_CAPTURE_BEGIN if name.startswith("profile (") else R_SLICE_BEGIN


def end_rank(slice_: LaidSlice) -> int:
    """Where a slice's end goes among events of the same time (§1)."""
    if slice_.name.startswith("profile ("):
        return R_CAPTURE_END
    return R_ZERO_END if slice_.end == slice_.start else R_SLICE_END


def begin_events(
    slices: Iterable[LaidSlice], offset: int = 0
) -> Iterator[tuple[int, int, int, LaidSlice]]:
    """(start, begin rank, order, slice) of `slices`, in their order; order counts from
    `offset` + 1."""
    for order, slice_ in enumerate(slices, start=offset + 1):
        yield slice_.start, begin_rank(slice_), order, slice_


@frozen
class Layout:
    """Everything a writer encodes: each session's group track (named for the session),
    then each session's layout, in ordered_sessions' order."""

    groups: tuple[Track, ...]
    sessions: tuple[SessionLayout, ...]


@frozen
class Block:
    """A run of one session's slices in their layout order, made afresh by each reading
    (`make`): the Perfetto writer sweeps them as they are made, so a long session's slices
    are never all held (SessionPlan.begins); build_layout keeps them (SessionLayout)."""

    kind: str  # which slices: the name of their source (spec.SOURCES)
    count: int
    make: Callable[[], Iterator[LaidSlice]]
    ordered: bool = False  # made in (start, begin rank) order already
    # (start, begin rank, order, slice) of each, order from `offset` + 1, when the block
    # can make them so (begin_events of `make`, without a second pass over each slice).
    begins: Callable[[int], Iterator[tuple[int, int, int, LaidSlice]]] | None = None
