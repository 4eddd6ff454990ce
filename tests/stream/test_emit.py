"""stream/emit.py on its own: what a one pass writes as it goes. `Events` writes what it is
given in (time, rank, order given) order, and only what starts before the bound it is
flushed to; counter values with a zero put the zeros last, in packets of at most nine
values (Trace Processor zeroes the extra values after a zero, and drops an event of more
than eight). `OnlineLanes` places slices as planning.first_fit places them. Each trace is
decoded with the protobuf schema and checked against the importer's rules."""

from __future__ import annotations

import random
from typing import Any

import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from agent_profiler.layout import LaidSlice, Track, TrackKind
from agent_profiler.layout.planning import first_fit
from agent_profiler.layout.types import R_COUNTER, R_SLICE_BEGIN
from agent_profiler.stream.emit import Events, OnlineLanes
from agent_profiler.stream.log import NotHandled
from agent_profiler.writers.events import EventEncoder
from traceview import TraceView, load_trace

S = 1_000_000_000
T0 = 1_760_000_000 * S
SEQUENCE = 3
COUNTERS = [201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212]
LANE_X, LANE_Y = 120, 110  # slice tracks, the first declared with the larger uuid


def _events() -> tuple[Events, list[bytes]]:
    out: list[bytes] = []
    events = Events(EventEncoder(SEQUENCE), out.append, "agentprof.test")
    for uuid in COUNTERS:
        events.declare(Track(uuid, f"counter {uuid}", TrackKind.COUNTER, counter_unit="tokens"))
    for uuid in (LANE_X, LANE_Y):
        events.declare(Track(uuid, f"lane {uuid}", TrackKind.SLICE))
    return events, out


def _view(out: list[bytes]) -> TraceView:
    view = load_trace(b"".join(out))
    assert not view.decode_problems, view.decode_problems
    assert not view.import_findings, view.import_findings
    return view


def _track_events(out: list[bytes]) -> list[Any]:
    trace = pb.Trace()
    trace.ParseFromString(b"".join(out))
    return [p.track_event for p in trace.packet if p.HasField("track_event")]


def _slice(name: str, start: int, end: int, track: int) -> LaidSlice:
    return LaidSlice("Tools", name, start, end, "agentprof.test", {"kind": name}, track_uuid=track)


def test_a_track_is_declared_once() -> None:
    events, out = _events()
    before = len(out)
    events.declare(Track(COUNTERS[0], "again", TrackKind.COUNTER, counter_unit="tokens"))
    assert len(out) == before
    assert len(_view(out).tracks) == len(COUNTERS) + 2


def test_counter_values_with_zeros_put_the_zeros_last() -> None:
    events, out = _events()
    values = {COUNTERS[0]: 0, COUNTERS[1]: 5, COUNTERS[2]: 0, COUNTERS[3]: 7}
    events.counters_now(T0, values)
    view = _view(out)  # no extra value zeroed by the importer
    for uuid, value in values.items():
        assert view.counters[uuid] == [(T0, value)]
    (event,) = _track_events(out)
    written = [event.counter_value, *event.extra_counter_values]
    assert written == [5, 7, 0, 0]


def test_more_than_nine_counter_values_go_in_packets_of_at_most_nine() -> None:
    events, out = _events()
    values = {uuid: (0 if i % 4 == 0 else 100 + i) for i, uuid in enumerate(COUNTERS)}
    events.counters_now(T0, values)
    view = _view(out)
    for uuid, value in values.items():
        assert view.counters[uuid] == [(T0, value)]
    written = _track_events(out)
    assert len(written) == 2
    assert all(len(e.extra_counter_values) <= 8 for e in written)
    # the zeros after every other value, across the packets
    flat = [v for e in written for v in (e.counter_value, *e.extra_counter_values)]
    assert flat == sorted(flat, key=lambda v: v == 0)


def test_counter_values_at_one_time_and_rank_are_one_sample_the_last_given() -> None:
    # (as writers/perfetto.py `_counter_packets` merges the model path's: a compaction's
    # size before and after, when it starts and ends at one time, is the after)
    events, out = _events()
    events.counters_at(T0, {COUNTERS[0]: 1, COUNTERS[1]: 5})
    events.counters_at(T0, {COUNTERS[0]: 2})
    events.counters_at(T0 - S, {COUNTERS[0]: 3}, R_COUNTER)
    events.counters_at(T0, {COUNTERS[0]: 4}, R_SLICE_BEGIN)  # (another rank: its own)
    events.flush()
    view = _view(out)
    assert view.counters[COUNTERS[0]] == [(T0 - S, 3), (T0, 4), (T0, 2)]
    assert view.counters[COUNTERS[1]] == [(T0, 5)]
    assert len(_track_events(out)) == 3  # (the two at T0 and R_COUNTER in one packet)


def test_counter_values_right_before_a_request_at_their_time_join_its_sample() -> None:
    # (a compaction's snapshot, then a request starting at its time with the context
    # changed between: the model path writes one sample of a time, the later's value)
    events, out = _events()
    events.counters_at(T0, {COUNTERS[0]: 1, COUNTERS[1]: 5}, R_SLICE_BEGIN)
    request = _slice("request", T0, T0 + S, LANE_X)
    turn = _slice("turn", T0, T0 + S, LANE_Y)
    events.pair(request, turn, {COUNTERS[0]: 2, COUNTERS[2]: 7}, lambda ts: {})
    events.flush()
    view = _view(out)
    assert view.counters[COUNTERS[0]] == [(T0, 2)]
    assert view.counters[COUNTERS[1]] == [(T0, 5)]
    assert view.counters[COUNTERS[2]] == [(T0, 7)]
    kinds = [e.type for e in _track_events(out)]
    counter = pb.TrackEvent.TYPE_COUNTER
    assert kinds.count(counter) == 1  # (one packet, after the two begins)
    assert kinds.index(counter) == 2


def test_counter_values_join_a_request_at_their_time_past_a_slice_begun_then() -> None:
    events, out = _events()
    events.counters_at(T0, {COUNTERS[0]: 1}, R_SLICE_BEGIN)
    events.slice(R_SLICE_BEGIN, _slice("call", T0, T0 + S, LANE_X), end=True)
    request, turn = _slice("request", T0, T0 + S, LANE_Y), _slice("turn", T0, T0 + S, LANE_Y)
    events.pair(request, turn, {COUNTERS[0]: 2}, lambda ts: {})
    events.counters_at(T0 + S, {COUNTERS[0]: 3}, R_SLICE_BEGIN)  # (none starts then)
    events.counters_at(T0 + 2 * S, {COUNTERS[1]: 4}, R_SLICE_BEGIN)  # (one starts later)
    events.slice(R_SLICE_BEGIN, _slice("call", T0 + 2 * S, T0 + 4 * S, LANE_X), end=True)
    later = _slice("request", T0 + 3 * S, T0 + 4 * S, LANE_Y)
    events.pair(later, _slice("turn", T0 + 3 * S, T0 + 4 * S, LANE_Y), {}, lambda ts: {})
    events.flush()
    view = _view(out)
    assert view.counters[COUNTERS[0]] == [(T0, 2), (T0 + S, 3)]
    assert view.counters[COUNTERS[1]] == [(T0 + 2 * S, 4)]


def test_a_request_before_what_is_written_is_not_handled() -> None:
    # (its counter values could not join those of its time, written already: the passes
    # flush only before the next request's start, and a request earlier falls back)
    events, out = _events()
    events.counters_at(T0, {COUNTERS[0]: 1}, R_SLICE_BEGIN)
    events.flush(T0 + 1)
    request, turn = _slice("request", T0, T0 + S, LANE_X), _slice("turn", T0, T0 + S, LANE_Y)
    with pytest.raises(NotHandled, match="before what is written"):
        events.pair(request, turn, {COUNTERS[0]: 2}, lambda ts: {})
    events.pair(_slice("later", T0 + 1, T0 + S, LANE_X), turn, {}, lambda ts: {})  # (at it)
    assert _view(out).counters[COUNTERS[0]] == [(T0, 1)]


def test_ends_at_one_time_are_written_in_the_order_given() -> None:
    events, out = _events()
    # (the lane declared first has the larger uuid: an order by uuid would swap them)
    events.slice(R_SLICE_BEGIN, _slice("x", T0, T0 + S, LANE_X), end=False)
    events.slice(R_SLICE_BEGIN, _slice("y", T0 + 1, T0 + S, LANE_Y), end=False)
    events.end_of(LANE_X, T0, T0 + S)
    events.end_of(LANE_Y, T0 + 1, T0 + S)
    events.flush()
    view = _view(out)
    assert [(s.name, s.ts, s.end) for s in view.slices] == [
        ("x", T0, T0 + S),
        ("y", T0 + 1, T0 + S),
    ]
    ends = [e.track_uuid for e in _track_events(out) if e.type == pb.TrackEvent.TYPE_SLICE_END]
    assert ends == [LANE_X, LANE_Y]


def test_a_slice_with_its_end_and_one_without() -> None:
    events, out = _events()
    events.slice(R_SLICE_BEGIN, _slice("whole", T0, T0 + S, LANE_X), end=True)
    events.slice(R_SLICE_BEGIN, _slice("open", T0, T0 + 2 * S, LANE_Y), end=False)
    events.flush()
    kinds = [e.type for e in _track_events(out)]
    assert kinds.count(pb.TrackEvent.TYPE_SLICE_BEGIN) == 2
    assert kinds.count(pb.TrackEvent.TYPE_SLICE_END) == 1
    events.end_of(LANE_Y, T0, T0 + 2 * S)
    events.flush()
    view = _view(out)
    assert sorted((s.name, s.end) for s in view.slices) == [
        ("open", T0 + 2 * S),
        ("whole", T0 + S),
    ]


def test_a_flush_writes_only_what_starts_before_its_bound() -> None:
    events, out = _events()
    written = len(out)
    events.counters_at(T0, {COUNTERS[0]: 4})
    events.flush(T0)
    assert len(out) == written  # (at the bound: a request starting then may come first)
    events.flush(T0 + 1)
    assert _view(out).counters[COUNTERS[0]] == [(T0, 4)]


def _random_slices(rng: random.Random, count: int) -> list[tuple[int, int]]:
    """Slices as a pass gives them (start, then longest first), many of no length and
    many starting where another ends or one nanosecond after."""
    slices = []
    start = 0
    for _ in range(count):
        start += rng.choice((0, 0, 1, 1, 2, 5))
        slices.append((start, start + rng.choice((0, 0, 1, 2, 3, 8))))
    return sorted(slices, key=lambda s: (s[0], -s[1]))


@pytest.mark.parametrize("seed", range(40))
def test_lanes_are_first_fits(seed: int) -> None:
    rng = random.Random(seed)
    slices = _random_slices(rng, rng.randint(1, 60))
    lanes = OnlineLanes()
    placed = [lanes.place(start, end) for start, end in slices]
    starts, ends = [s for s, _ in slices], [e for _, e in slices]
    expected, firsts, count = first_fit(starts, ends, range(len(slices)), [0] * len(slices))
    assert [lane for lane, _ in placed] == list(expected)
    assert lanes.count == count
    # a lane's first slice is the one first fit names first on it
    assert {lane: i for i, (lane, first) in enumerate(placed) if first} == {
        lane: position for lane, (_, _, position) in firsts.items()
    }


def test_a_slice_of_no_length_keeps_its_lane_for_a_nanosecond() -> None:
    lanes = OnlineLanes()
    assert lanes.place(10, 10) == (0, True)
    assert lanes.place(10, 10) == (1, True)  # busy at 10
    assert lanes.place(11, 11) == (0, False)  # free again one nanosecond later


def test_slices_out_of_first_fits_order_are_not_handled() -> None:
    lanes = OnlineLanes()
    lanes.place(10, 20)
    lanes.place(10, 15)  # the same start, shorter: in order
    with pytest.raises(NotHandled):
        lanes.place(10, 18)  # longer than the one before at the same start
    lanes = OnlineLanes()
    lanes.place(10, 20)
    with pytest.raises(NotHandled):
        lanes.place(9, 30)
