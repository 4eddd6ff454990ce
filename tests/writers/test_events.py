"""The TrackEvent packets of one journal group as writers/events.py encodes them by hand:
decoded with the protobuf schema (tests/traceview.py, as Trace Processor reads them), each
slice, instant and counter comes back at its own absolute time, with its name, category,
typed arguments, flows and counter values; interning, the sequence flags and the delta
clocks are the ones the trace contract says (TRACE_CONTRACT §1)."""

from __future__ import annotations

from typing import Any

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from agent_profiler.layout import LaidSlice, Track, TrackKind
from agent_profiler.writers.events import DELTA_CLOCK_IDS, EventEncoder
from agent_profiler.writers.packets import track_descriptor_packet
from agent_profiler.writers.wire import record
from traceview import TraceView, load_trace

S = 1_000_000_000
T0 = 1_760_000_000 * S  # a realistic REALTIME start
SEQUENCE = 7
SLICES, OTHER, COUNTS, CACHED = 101, 102, 103, 104


def _tracks() -> bytes:
    tracks = [
        Track(SLICES, "Turns", TrackKind.SLICE),
        Track(OTHER, "Tools", TrackKind.SLICE),
        Track(COUNTS, "Context", TrackKind.COUNTER, counter_unit="tokens"),
        Track(CACHED, "Cached", TrackKind.COUNTER, counter_unit="tokens"),
    ]
    return b"".join(record(track_descriptor_packet(SEQUENCE, t)) for t in tracks)


def _slice(name: str, start: int, end: int, args: Any, **fields: Any) -> LaidSlice:
    fields.setdefault("track_uuid", SLICES)
    return LaidSlice("Turns", name, start, end, "agentprof.turn", args, **fields)


def _packets(data: bytes) -> list[Any]:
    trace = pb.Trace()
    trace.ParseFromString(data)
    return list(trace.packet)


def _view(data: bytes) -> TraceView:
    view = load_trace(_tracks() + data)
    assert not view.decode_problems, view.decode_problems
    assert not view.import_findings, view.import_findings
    return view


def test_a_group_decodes_to_its_slices_and_counters_at_their_own_times() -> None:
    encoder = EventEncoder(SEQUENCE)
    first = _slice("turn 1", T0, T0 + 5 * S, {"kind": "turn", "tokens": 300, "ok": True})
    # starts before the last event written: a subagent inside its parent
    inner = _slice("turn 2", T0 + 2 * S, T0 + 3 * S, {"kind": "turn", "tokens": -4})
    data = b"".join(
        (
            encoder.begin(T0, first),
            encoder.counters(T0 + 1, "agentprof.context", {COUNTS: 1_000, CACHED: 20}),
            encoder.end(T0 + 5 * S, SLICES),
            encoder.begin(T0 + 2 * S, inner),
            encoder.end(T0 + 3 * S, SLICES),
        )
    )
    view = _view(data)
    turns = sorted(view.slices_on(SLICES), key=lambda s: s.ts)
    assert [(s.name, s.ts, s.dur) for s in turns] == [
        ("turn 1", T0, 5 * S),
        ("turn 2", T0 + 2 * S, S),
    ]
    assert turns[0].args == {"kind": "turn", "tokens": 300, "ok": True}
    assert turns[0].arg_types == {"kind": "string", "tokens": "uint", "ok": "bool"}
    assert turns[1].arg_types["tokens"] == "int" and turns[1].args["tokens"] == -4
    assert {s.category for s in turns} == {"agentprof.turn"}
    assert view.counters[COUNTS] == [(T0 + 1, 1_000)]
    assert view.counters[CACHED] == [(T0 + 1, 20)]
    # two delta clocks, the second started where the clock would have gone back
    snapshots = view.clock_snapshots
    assert [sorted(s.incremental) for s in snapshots] == [[64], [65]]
    assert [s.clocks[65 if i else 64] for i, s in enumerate(snapshots)] == [T0, T0 + 2 * S]
    assert encoder.packets == len(_packets(data)) == 7


def test_past_the_last_delta_clock_the_events_carry_absolute_times() -> None:
    """Every event that starts before the last one written starts the next delta clock;
    once the 64 sequence-scoped ids are used up, the group's events are on REALTIME."""
    encoder = EventEncoder(SEQUENCE)
    count = len(DELTA_CLOCK_IDS) + 3
    starts = [T0 + (count - i) * S for i in range(count)]  # each before the one written last
    data = b"".join(
        encoder.begin(start, _slice(f"turn {i}", start, start + S // 2, {"i": i}))
        + encoder.end(start + S // 2, SLICES)
        for i, start in enumerate(starts)
    )
    later = starts[0] + 10 * S  # after the last id: absolute, forward or not
    data += encoder.begin(later, _slice("late", later, later + 3, {}))
    data += encoder.counters(later + 1, "agentprof.context", {COUNTS: 5})
    data += encoder.end(later + 3, SLICES)
    view = _view(data)
    turns = sorted(view.slices_on(SLICES), key=lambda s: s.ts)
    expected = sorted([(f"turn {i}", start, S // 2) for i, start in enumerate(starts)])
    expected.append(("late", later, 3))
    assert sorted((s.name, s.ts, s.dur) for s in turns) == sorted(expected)
    assert view.counters[COUNTS] == [(later + 1, 5)]
    assert len(view.clock_snapshots) == len(DELTA_CLOCK_IDS)
    by_name = {s.name: s.clock_id for s in turns}
    assert [by_name[f"turn {i}"] for i in range(len(DELTA_CLOCK_IDS))] == list(DELTA_CLOCK_IDS)
    assert {by_name["turn 64"], by_name["turn 65"], by_name["turn 66"], by_name["late"]} == {1}
    assert encoder.packets == len(_packets(data))


def test_lengths_at_the_one_byte_edge_decode_to_what_was_given() -> None:
    """Names, strings and arguments whose entries, events and packets are about 128 bytes
    long, one byte longer each time: each length that fits one byte, and the first that
    takes two."""
    encoder = EventEncoder(SEQUENCE)
    given = []
    data = b""
    variants = [
        lambda size: {"id": "u" * size},  # a unique key's text, written inline
        lambda size: {"list": ["l" * size]},  # an array's value
        lambda size: {"d": {"id": "v" * size}},  # a dict's entry
    ]
    for i, (size, args) in enumerate(
        (size, variant(size)) for variant in variants for size in range(90, 150)
    ):
        start = T0 + i * S
        slice_ = _slice("n" * size, start, start + 1, args)
        given.append((slice_.name, start, args))
        data += encoder.begin(start, slice_) + encoder.end(start + 1, SLICES)
    view = _view(data)
    assert [(s.name, s.ts, s.args) for s in view.slices_on(SLICES)] == given
    assert encoder.packets == len(_packets(data))


def test_an_end_at_the_largest_ids_and_delta_decodes() -> None:
    """A slice's end on the steady path at the widest varints: the largest sequence id
    (uint32), track uuid (uint64) and a delta of about 36 years."""
    sequence, track, far = 2**32 - 1, 2**64 - 1, 2**60
    encoder = EventEncoder(sequence)
    slice_ = LaidSlice("Turns", "long", T0, T0 + far, "agentprof.turn", {}, track_uuid=track)
    data = encoder.begin(T0, slice_) + encoder.end(T0 + far, track)
    packets = _packets(data)
    assert [p.trusted_packet_sequence_id for p in packets] == [sequence] * 3
    end = packets[-1]
    assert end.track_event.type == pb.TrackEvent.TYPE_SLICE_END
    assert end.track_event.track_uuid == track
    assert end.timestamp == far  # a delta on the group's first clock


def test_texts_are_interned_once_and_only_the_first_event_clears_the_state() -> None:
    """Later slices of the same name, category and arguments intern nothing, across a
    clock restart too; only the group's first event says its incremental state starts
    there (a restart saying it again would drop the interned texts); flows are kept."""
    encoder = EventEncoder(SEQUENCE)
    args = {"kind": "turn", "label": "short text"}
    starts = [T0, T0 + S, T0 - S]  # the third before the last: a new delta clock
    flows = [(9,), (9, 10), (10,)]  # each flow on two slices
    data = b"".join(
        encoder.begin(start, _slice("turn", start, start + 1, args, flows=flows[i]))
        + encoder.end(start + 1, SLICES)
        for i, start in enumerate(starts)
    )
    events = [p for p in _packets(data) if p.HasField("track_event")]
    assert [p.sequence_flags for p in events] == [3, 2, 2, 2, 2, 2]
    first = events[0].interned_data
    assert [e.name for e in first.event_names] == ["turn"]
    assert [e.name for e in first.event_categories] == ["agentprof.turn"]
    assert [e.name for e in first.debug_annotation_names] == ["kind", "label"]
    assert [e.str.decode() for e in first.debug_annotation_string_values] == ["turn", "short text"]
    assert not any(p.HasField("interned_data") for p in events[1:])
    assert [tuple(p.track_event.flow_ids) for p in events[::2]] == flows
    view = _view(data)
    assert [(s.name, s.ts, s.args) for s in view.slices_on(SLICES)] == [
        ("turn", start, args) for start in sorted(starts)
    ]


def test_long_interned_texts_decode_to_what_was_given() -> None:
    """Names, categories and annotation texts interned with entries past two varint bytes'
    worth of length: each entry's length is worked out from its parts' (the iid's and the
    text's varints, their two tags), not measured, so lengths of every size are checked:
    about 200, 300 and 20,000 bytes (a three-byte length)."""
    encoder = EventEncoder(SEQUENCE)
    given = []
    data = b""
    for i, size in enumerate((199, 200, 201, 202, 300, 20_000)):
        start = T0 + i * S
        name = f"{i}" + "n" * size
        slice_ = LaidSlice(
            "Turns", name, start, start + 1, "c" * size, {"k" * size: "s"}, track_uuid=SLICES
        )
        given.append((name, "c" * size, start, {"k" * size: "s"}))
        data += encoder.begin(start, slice_) + encoder.end(start + 1, SLICES)
    view = _view(data)
    got = [(s.name, s.category, s.ts, s.args) for s in view.slices_on(SLICES)]
    assert got == given


def test_an_encoder_done_with_is_freed_without_the_cycle_collector() -> None:
    """Its annotation functions call each other and call back into it, and its direct
    encoders keep their own methods: cycles that held each group's encoder and interned
    texts until a collection (a folder's export: about 460 objects a group). `close`
    ends them, so refcounting frees it; it still says how many packets it wrote."""
    import gc
    import weakref

    encoder = EventEncoder(SEQUENCE)
    nested = {"kind": "turn", "items": [{"name": "Read", "sizes": [1, 2]}, "text"], "n": 300}
    encoder.begin(T0, _slice("turn 1", T0, T0 + S, nested))
    encoder.end(T0 + S, SLICES)
    gone = weakref.ref(encoder)
    packets = encoder.packets
    enabled = gc.isenabled()
    gc.disable()
    try:
        encoder.close()
        assert encoder.packets == packets > 0
        del encoder
        assert gone() is None
    finally:
        if enabled:
            gc.enable()
