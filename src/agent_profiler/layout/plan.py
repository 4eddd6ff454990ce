"""One session's plan from the track table (`plan_session`): the session's data
(data.py), every slice's place in layout order and its lane (`planning.first_fit`, one
logical track at a time), the lanes' uuids, the tracks declared in the table's order, the
counters' series, and the blocks that make the slices when a writer reads them (one per
source, its kinds of slice interleaved item by item)."""

from __future__ import annotations

import itertools
import operator
from array import array
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, NamedTuple

from agent_profiler.annotations import TraceFacts
from agent_profiler.layout.counters import series
from agent_profiler.layout.data import LinkIn, LinkOut, SessionData, session_data
from agent_profiler.layout.planning import NO_LANES, PlannedCounter, TrackIds, first_fit, int64s
from agent_profiler.layout.spec import ACTIVITY, METADATA, NO_FLOWS, SOURCES, Flows, Kind, Table
from agent_profiler.layout.types import (
    Block,
    LaidSlice,
    Merge,
    SessionPlan,
    Track,
    TrackKind,
    name_rank,
)
from agent_profiler.model import Session
from agent_profiler.views import session_label

SHARE_KEY = "llm.context.tokens"
_START, _END = operator.itemgetter(0), operator.itemgetter(1)
# A block of at least this many slices made in (start, rank) order is merged as it is made
# (SessionPlan.begins), not sorted with the short ones.
_STREAM = 64


class _Places:
    """One logical track's slices in layout order, for its lanes: (start, end, position
    in the layout, instant), in four arrays."""

    __slots__ = ("ends", "instants", "positions", "starts")

    def __init__(self) -> None:
        self.starts: array[int] = array("q")
        self.ends: array[int] = array("q")
        self.positions: array[int] = array("q")
        self.instants: array[int] = array("b")


class _Run(NamedTuple):
    """One source's slices as placed: its items and kinds, how many slices of each of its
    tracks came before (by slot), how many it makes, and whether in (start, rank) order."""

    source: str
    items: Sequence[Any]
    kinds: tuple[Kind, ...]
    taken: tuple[int, ...]
    size: int  # how many slices
    ordered: bool


def plan_session(
    session: Session,
    parent_uuid: int | None,
    facts: TraceFacts,
    ids: TrackIds,
    table: Table,
    links_out: Sequence[LinkOut] = (),
    links_in: Sequence[LinkIn] = (),
    span: tuple[int, int] | None = None,
) -> SessionPlan:
    """The plan of one session whose group track is `parent_uuid`, its tracks numbered by
    `ids` in a fixed order: the capture, the groups, each lane at its first slice (in
    (start, longest first, layout order)), the counters as they are declared. `span`: the
    session's (views.session_span), when the caller has it already."""
    key = session.session_id
    capture_uuid = ids.get(f"capture:{key}")
    data = session_data(session, facts, capture_uuid, links_out, links_in, span)
    group_uuids = {row.name: ids.get(f"{key}:group:{row.name}") for row in table.groups}
    places, runs = _place_all(data, table)
    lanes, uuids = _lanes(places, key, ids)
    del places
    tracks, counter_uuids = _tracks(data, table, parent_uuid, group_uuids, uuids, ids)
    counters = [*_in_group(data.counters, ""), *_in(data.counters, table)]
    return SessionPlan(
        session,
        data.activity,
        capture_uuid,
        tuple(tracks),
        tuple(
            series(counter, uuid, data.end)
            for counter, uuid in zip(counters, counter_uuids, strict=True)
        ),
        tuple(_block(data, run, lanes, uuids) for run in runs),
        data.end,
    )


def _place_all(data: SessionData, table: Table) -> tuple[dict[str, _Places], list[_Run]]:
    """Every slice's place, in layout order: sources in SOURCES order, each item's kinds
    in row order; each logical track's (start, end, position, instant) arrays."""
    places = {row.name: _Places() for row, _, _ in table.slice_tracks}
    runs: list[_Run] = []
    position = 0
    for source in SOURCES:
        kinds = table.kinds.get(source.name)
        if not kinds:
            continue
        items = source.items(data)
        before = {kind.slot: len(places[kind.track].starts) for kind in kinds}
        taken = tuple(before[slot] for slot in range(len(before)))
        count, ordered = _place(items, kinds, places, position)
        position += count
        if count:
            runs.append(_Run(source.name, items, kinds, taken, count, ordered))
    return places, runs


def _lanes(
    places: dict[str, _Places], key: str, ids: TrackIds
) -> tuple[dict[str, array[int]], dict[str, list[int]]]:
    """Each logical track's lanes (first fit: each slice's lane, in the track's order) and
    their uuids, numbered in the order of their first slices, across tracks."""
    lanes: dict[str, array[int]] = {}
    counts: dict[str, int] = {}
    firsts: list[tuple[tuple[int, int, int], str, int]] = []
    fitted: list[tuple[str, _Places, dict[int, tuple[int, int, int]]]] = []
    for name, track in places.items():
        if not track.starts:
            continue
        for other_name, other, other_firsts in fitted:
            if (
                other.starts == track.starts
                and other.ends == track.ends
                and other.instants == track.instants
            ):
                # The same spans (Turns are the Responses' spans): the same lanes, each
                # lane's first slice the one at the same index of the track.
                lanes[name], counts[name] = lanes[other_name], counts[other_name]
                # (an index per position, not `positions.index` per lane: lanes × slices)
                index = {position: i for i, position in enumerate(other.positions)}
                lane_firsts = {
                    lane: (start, minus_end, track.positions[index[position]])
                    for lane, (start, minus_end, position) in other_firsts.items()
                }
                break
        else:
            lanes[name], lane_firsts, counts[name] = first_fit(
                track.starts, track.ends, track.positions, track.instants
            )
            fitted.append((name, track, lane_firsts))
        firsts += [(first, name, lane) for lane, first in lane_firsts.items()]
    firsts.sort()
    uuids: dict[str, list[int]] = {name: [0] * count for name, count in counts.items()}
    for _, name, lane in firsts:
        uuids[name][lane] = ids.get(f"{key}:{name}:{lane}")
    return lanes, uuids


def _tracks(
    data: SessionData,
    table: Table,
    parent_uuid: int | None,
    group_uuids: dict[str, int],
    uuids: dict[str, list[int]],
    ids: TrackIds,
) -> tuple[list[Track], list[int]]:
    """The session's tracks, in the table's order: its capture, the capture's slice
    tracks (each lane), its counters, then each group with its counters and slice tracks;
    and the counters' uuids, numbered as they are declared."""
    capture_uuid = data.capture_uuid
    tracks = [
        Track(
            capture_uuid,
            "agentprof.capture",
            TrackKind.GROUP,
            parent=parent_uuid,
            order_rank=0,  # first in its session's group, before its subagents
            explicit_child_order=True,
            merge=Merge.NONE,
            description=session_label(data.session),
        )
    ]
    tracks += _slice_tracks(data, table, "", capture_uuid, uuids)
    counter_uuids: list[int] = []
    tracks += _counter_tracks(data, table, "", capture_uuid, ids, counter_uuids)
    for row in table.groups:
        group_uuid = group_uuids[row.name]
        group_tracks = _counter_tracks(data, table, row.name, group_uuid, ids, counter_uuids)
        group_tracks += _slice_tracks(data, table, row.name, group_uuid, uuids)
        if not group_tracks:
            continue
        tracks.append(
            Track(
                group_uuid,
                row.name,
                TrackKind.GROUP,
                parent=capture_uuid,
                order_rank=table.rank[row.name],
                explicit_child_order=True,
                description=row.described(data),
            )
        )
        tracks += group_tracks
    return tracks, counter_uuids


def _block(
    data: SessionData, run: _Run, lanes: dict[str, array[int]], uuids: dict[str, list[int]]
) -> Block:
    """A source's block: it makes its slices, on their lanes, each time it is read."""
    ready = tuple(
        _Made(
            kind.spec.span,
            kind.spec.name,
            not isinstance(kind.spec.name, str),
            kind.spec.args,
            not isinstance(kind.spec.args, dict),
            kind.spec.flows,
            kind.spec.instant,
            _rank(kind),
            kind.track,
            _category(kind.spec.category, data),
            lanes.get(kind.track, NO_LANES),
            uuids.get(kind.track, []),
            kind.slot,
        )
        for kind in run.kinds
    )
    return Block(
        run.source,
        run.size,
        partial(_slices, data, run.items, ready, run.taken),
        # A short block is sorted with the others (cheaper than one more stream to merge);
        # a long one made in order is merged as it is made.
        run.ordered and run.size >= _STREAM,
        partial(_begins, data, run.items, ready, run.taken),
    )


def _place(
    items: Sequence[Any], kinds: tuple[Kind, ...], places: dict[str, _Places], first: int
) -> tuple[int, bool]:
    """Place one source's slices (each item's kinds in turn, from `first` on) on their
    tracks' lists. Returns how many there are, and whether they are made in (start, begin
    rank) order (then merged as they are made, not sorted: SessionPlan.begins)."""
    by_function: dict[object, list[Any]] = {}  # kinds of one span share its list
    spans = [
        by_function.get(kind.spec.span)
        or by_function.setdefault(kind.spec.span, list(map(kind.spec.span, items)))
        for kind in kinds
    ]
    count = len(kinds)
    if len({kind.slot for kind in kinds}) == count and all(None not in s for s in spans):
        # Every item has a slice of every kind, each on a track of its own: whole arrays.
        n = len(items)
        columns: list[list[int]] = []
        for k, kind in enumerate(kinds):
            track = places[kind.track]
            starts = list(map(_START, spans[k]))
            track.starts.extend(int64s(starts))  # (an array: in one copy)
            track.ends.extend(int64s(list(map(_END, spans[k]))))
            track.positions.extend(int64s(range(first + k, first + k + n * count, count)))
            track.instants.frombytes(bytes((kind.spec.instant,)) * n)
            columns.append(starts)
        if len({id(span) for span in spans}) == 1 and len({kind.rank for kind in kinds}) == 1:
            order = columns[0]  # one span and one rank (Responses, Turns): the starts say it
        else:  # (start, rank) as one number, ranks being < 8, item by item
            keys = [
                [start * 8 + kind.rank for start in column]
                for kind, column in zip(kinds, columns, strict=True)
            ]
            order = list(itertools.chain.from_iterable(zip(*keys, strict=True)))
        return n * count, all(map(operator.le, order, itertools.islice(order, 1, None)))
    position, ordered, last = first, True, -(2**66)
    for i in range(len(items)):
        for k, kind in enumerate(kinds):
            span = spans[k][i]
            if span is None:
                continue
            start, end = span
            track = places[kind.track]
            track.starts.append(start)
            track.ends.append(end)
            track.positions.append(position)
            track.instants.append(kind.spec.instant)
            key = start * 8 + kind.rank
            ordered = ordered and last <= key
            last = key
            position += 1
    return position - first, ordered


def _in_group(counters: Sequence[PlannedCounter], group: str) -> list[PlannedCounter]:
    return [counter for counter in counters if counter.group == group]


def _in(counters: Sequence[PlannedCounter], table: Table) -> list[PlannedCounter]:
    """The groups' counters, in the order their groups are declared."""
    return [c for row in table.groups for c in _in_group(counters, row.name)]


def _rank(kind: Kind) -> int:
    """A kind's begin rank, when it is one for all its slices (-1: by each one's name)."""
    name, instant = kind.spec.name, kind.spec.instant
    if isinstance(name, str) or instant:  # every instant's rank is the same
        return name_rank(name if isinstance(name, str) else "", instant)
    return -1


def _category(category: str, data: SessionData) -> str:
    return {ACTIVITY: data.activity, METADATA: data.metadata}.get(category, category)


def _slice_tracks(
    data: SessionData, table: Table, group: str, parent: int, uuids: dict[str, list[int]]
) -> list[Track]:
    """The lanes of the slice tracks in `group` ("": the capture), in row order."""
    return [
        Track(
            uuid,
            row.name,
            TrackKind.SLICE,
            parent=parent,
            order_rank=rank,
            merge=Merge.BY_NAME if row.merge else None,
            description=row.described(data),
        )
        for row, in_group, rank in table.slice_tracks
        if in_group == group
        for uuid in uuids.get(row.name, ())
    ]


def _counter_tracks(
    data: SessionData,
    table: Table,
    group: str,
    parent: int,
    ids: TrackIds,
    numbered: list[int],
) -> list[Track]:
    """The counter tracks of `group` ("": the capture's, placed by their rows; a group's
    after its slice tracks, in their own order), their uuids numbered as they are declared
    (appended to `numbered`)."""
    tracks = []
    for counter in _in_group(data.counters, group):
        uuid = ids.get(f"{data.key}:counter:{counter.name}")
        numbered.append(uuid)
        if group:
            row = next(r for r in table.groups if r.name == group)
            rank = len(row.children) + counter.rank
            description, unit = counter.description, "tokens"
        else:
            found = table.counters.get(counter.name)
            if found is None:
                raise ValueError(f"track table: no row for the counter {counter.name!r}")
            rank, description, unit = table.rank[counter.name], found.described(data), found.unit
        tracks.append(
            Track(
                uuid,
                counter.name,
                TrackKind.COUNTER,
                parent=parent,
                order_rank=rank,
                description=description,
                counter_unit=unit,
                share_key=SHARE_KEY if counter.share else "",
            )
        )
    return tracks


class _Made(NamedTuple):
    """A kind of slice as a block makes it: its spec's parts (whether its name and args
    are functions of the item, told once rather than per slice), its track's name, its
    category, its track's lanes (each slice's, in the track's order) and their uuids, and
    its track's slot among the block's."""

    span: Callable[[Any], tuple[int, int] | None]
    name: Any  # str, or (named) a function of the item
    named: bool
    args: Any  # Args, or (built) a function of (data, index, item)
    built: bool
    flows: Callable[[SessionData, int, Any], Flows] | None
    instant: bool
    rank: int  # its begin rank (types.name_rank), -1: by its name, slice by slice
    track: str
    category: str
    lanes: array[int]
    uuids: list[int]
    slot: int


def _slices(
    data: SessionData, items: Sequence[Any], kinds: tuple[_Made, ...], taken: tuple[int, ...]
) -> Iterator[LaidSlice]:
    """A block's slices in layout order (see `_begins`)."""
    for _, _, _, slice_ in _begins(data, items, kinds, taken, 0):
        yield slice_


def _begins(
    data: SessionData,
    items: Sequence[Any],
    kinds: tuple[_Made, ...],
    taken: tuple[int, ...],
    offset: int,
) -> Iterator[tuple[int, int, int, LaidSlice]]:
    """(start, begin rank, order, slice) of a block's slices in layout order, `order`
    from `offset` + 1: each item's kinds in turn, each slice on its lane (`taken`: how
    many slices of each of its tracks came before this block)."""
    order = offset
    if len(kinds) == 1:
        # One kind (most blocks): the same, without the inner loop and its unpacking of
        # the kind per item: 5 M instructions on the Pi 5 MB bench journal, ~2% of the sweep.
        # tests/layout/test_plan_begins.py holds the two loops to the same slices.
        (
            span_of,
            name,
            named,
            args,
            built,
            flows_of,
            instant,
            rank,
            track,
            category,
            lanes,
            uuids,
            _,
        ) = kinds[0]
        at = taken[0]
        for index, item in enumerate(items):
            span = span_of(item)
            if span is None:
                continue
            flows, outgoing = NO_FLOWS if flows_of is None else flows_of(data, index, item)
            called = name(item) if named else name
            order += 1
            yield (
                span[0],
                rank if rank >= 0 else name_rank(called, instant),
                order,
                LaidSlice(
                    track,
                    called,
                    span[0],
                    span[1],
                    category,
                    args(data, index, item) if built else args,
                    flows,
                    outgoing,
                    instant,
                    uuids[lanes[at]],
                ),
            )
            at += 1
        return
    index_of = list(taken)  # each track's next slice's index in it, by slot
    for index, item in enumerate(items):
        for (
            span_of,
            name,
            named,
            args,
            built,
            flows_of,
            instant,
            rank,
            track,
            category,
            lanes,
            uuids,
            slot,
        ) in kinds:
            span = span_of(item)
            if span is None:
                continue
            at = index_of[slot]
            index_of[slot] = at + 1
            flows, outgoing = NO_FLOWS if flows_of is None else flows_of(data, index, item)
            called = name(item) if named else name
            order += 1
            yield (
                span[0],
                rank if rank >= 0 else name_rank(called, instant),
                order,
                LaidSlice(
                    track,
                    called,
                    span[0],
                    span[1],
                    category,
                    args(data, index, item) if built else args,
                    flows,
                    outgoing,
                    instant,
                    uuids[lanes[at]],
                ),
            )
