"""The Perfetto writer's wire rules (writers/perfetto.py) and the choice of writer
(writers/__init__.py), pinned on the packets themselves: what the decoded goldens cannot
see (interning, which wire type a value takes, how counter samples share a packet, the
clock snapshot, the framing) is asserted on the raw protobuf of real exports."""

from __future__ import annotations

import enum
import io
from pathlib import Path
from typing import Any

import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

import agent_profiler.writers as writers
from agent_profiler.errors import UsageError
from agent_profiler.layout import LaidSlice
from agent_profiler.model import Harness
from agent_profiler.views import session_span
from agent_profiler.writers import writer_class
from agent_profiler.writers.chrome_json import ChromeJsonWriter
from agent_profiler.writers.events import EventEncoder
from agent_profiler.writers.perfetto import PerfettoWriter, TraceFacts
from rules_spy import sessions
from samples import DATA
from traceview import inflated, load_trace

# --------------------------------------------------------------------------- writers/__init__


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("trace.pftrace", PerfettoWriter),
        ("trace.perfetto-trace", PerfettoWriter),
        ("trace.pb", PerfettoWriter),
        ("trace.json", ChromeJsonWriter),
        ("TRACE.JSON", ChromeJsonWriter),  # the suffix's case does not matter
        ("Trace.PfTrace", PerfettoWriter),
        ("trace.txt", PerfettoWriter),  # a name that says nothing: Perfetto
    ],
)
def test_the_output_name_picks_the_writer(output: str, expected: type) -> None:
    assert writer_class(None, Path(output)) is expected


def test_without_a_name_or_format_the_writer_is_perfetto() -> None:
    assert writer_class(None, None) is PerfettoWriter


def test_the_format_option_wins_over_the_file_name() -> None:
    assert writer_class("json", Path("trace.pftrace")) is ChromeJsonWriter
    assert writer_class("perfetto", Path("trace.json")) is PerfettoWriter
    assert writer_class("json", None) is ChromeJsonWriter


def test_an_unknown_format_is_a_usage_error_listing_the_known_ones() -> None:
    with pytest.raises(UsageError) as raised:
        writer_class("svg", Path("trace.json"))
    assert str(raised.value) == "unknown format 'svg' (known: perfetto, json)"


def test_the_writers_module_names_its_writers_lazily() -> None:
    assert (PerfettoWriter, ChromeJsonWriter) == writers.WRITERS
    assert writers.PerfettoWriter is PerfettoWriter
    assert writers.ChromeJsonWriter is ChromeJsonWriter
    with pytest.raises(AttributeError) as raised:
        _ = writers.SvgWriter  # type: ignore[attr-defined]
    assert str(raised.value) == "module 'agent_profiler.writers' has no attribute 'SvgWriter'"


# --------------------------------------------------------------------------- the wire

SMALL = DATA / "claude-code" / "handmade" / "small.jsonl"
SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"


def _export(
    *journals: Path, facts: TraceFacts | None = None, compress: bool = True
) -> tuple[bytes, int, list[Any]]:
    """(the file's bytes, the packet count write returned, the sessions written)."""
    found = sessions(*journals)
    stream = io.BytesIO()
    count = PerfettoWriter(facts, compress=compress).write(found, stream)
    return stream.getvalue(), count, found


def _frames(data: bytes) -> list[bytes]:
    """The packets of a Trace as the bytes between the framing (tag 0x0a, varint length)."""
    frames, at = [], 0
    while at < len(data):
        assert data[at] == 0x0A, at
        at += 1
        length = shift = 0
        while True:
            byte = data[at]
            at += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        frames.append(data[at : at + length])
        at += length
    assert at == len(data)
    return frames


def test_a_trace_is_its_packets_framed_back_to_back_and_counted() -> None:
    data, count, _ = _export(SMALL, compress=False)
    frames = _frames(data)
    trace = pb.Trace.FromString(data)
    # write() says how many packets it wrote: the clock snapshot, the trace attributes and
    # the root track, the group's delta clock starting (one session: no other),
    # descriptors, events
    assert count == len(frames) == len(trace.packet) == 107  # + Context fill descriptor, samples
    assert [pb.TracePacket.FromString(f) for f in frames] == list(trace.packet)
    # lengths of one and of two varint bytes both occur (the context dicts are large)
    assert min(map(len, frames)) < 2**7 <= 2**8 < max(map(len, frames))


def test_the_clock_snapshot_relates_realtime_to_boottime_at_the_first_start() -> None:
    # GIVEN two real sessions (a parent and its subagents): the earliest start is the trace's
    data, _, found = _export(SPOTTER)
    first = min(session_span(s)[0] for s in found)
    clock, *rest = inflated(data).packet
    snapshot = clock.clock_snapshot
    assert snapshot.primary_trace_clock == pb.BUILTIN_CLOCK_REALTIME
    assert [(c.clock_id, c.timestamp) for c in snapshot.clocks] == [(1, first), (6, first)]
    # one journal group: one sequence for every packet, non-zero and one byte on the wire
    sequence = clock.trusted_packet_sequence_id
    assert 0 < sequence < 128
    assert {p.trusted_packet_sequence_id for p in rest} == {sequence}
    # and no event is earlier than the snapshot
    assert min(load_trace(data).event_times) == first


def test_the_first_event_clears_the_incremental_state_and_sets_the_clock() -> None:
    data, _, _ = _export(SMALL)
    events = [p for p in inflated(data).packet if p.HasField("track_event")]
    first, *later = events
    cleared = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    needs = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
    assert first.sequence_flags == cleared | needs
    assert first.trace_packet_defaults.timestamp_clock_id == 64
    assert first.timestamp_clock_id == 64
    assert {p.sequence_flags for p in later} == {needs}
    assert not any(p.HasField("trace_packet_defaults") for p in later)
    assert not any(p.HasField("timestamp_clock_id") for p in later)


def _times(packets: list[Any]) -> list[int]:
    """Every track event's time, worked out from the raw packets: a snapshot starts a
    clock at its value, and each event on that clock adds its delta."""
    clocks: dict[int, int] = {}
    clock, times = None, []
    for packet in packets:
        if packet.HasField("clock_snapshot"):
            clocks |= {c.clock_id: c.timestamp for c in packet.clock_snapshot.clocks}
        elif packet.HasField("track_event"):
            clock = packet.timestamp_clock_id if packet.HasField("timestamp_clock_id") else clock
            if clock == 1:
                times.append(packet.timestamp)
            else:
                assert clock is not None
                clocks[clock] += packet.timestamp
                times.append(clocks[clock])
    return times


def _layout_times(found: list[Any]) -> list[int]:
    """The times the writer was given (the layout's events, session by session)."""
    from agent_profiler.layout import iter_layout, ordered_sessions
    from agent_profiler.writers.perfetto import session_events

    return [
        event[0]
        for _, tracks in iter_layout(ordered_sessions(found), TraceFacts())
        for event in session_events(tracks)
    ]


def test_event_times_are_deltas_on_a_clock_the_group_starts_at_its_first_event() -> None:
    data, _, found = _export(SMALL)
    packets = list(inflated(data).packet)
    # THEN the second packet is the clock starting: incremental, tied to REALTIME (and so
    # to BOOTTIME) at the first event's time, on the group's sequence
    start = next(p for p in packets[1:] if p.HasField("clock_snapshot"))
    first_event = next(p for p in packets if p.HasField("track_event"))
    assert packets.index(start) < packets.index(first_event)
    clocks = [(c.clock_id, c.timestamp, c.is_incremental) for c in start.clock_snapshot.clocks]
    t0 = _layout_times(found)[0]
    assert clocks == [(64, t0, True), (1, t0, False), (6, t0, False)]
    assert start.clock_snapshot.primary_trace_clock == pb.BUILTIN_CLOCK_REALTIME
    assert start.trusted_packet_sequence_id == first_event.trusted_packet_sequence_id == 1
    # AND every event's delta adds up to the time the layout gave it
    assert _times(packets) == _layout_times(found)
    assert first_event.timestamp == 0 and first_event.HasField("timestamp")
    # AND an absolute time (10 bytes) is nowhere: every delta is smaller than a day
    assert max(p.timestamp for p in packets if p.HasField("track_event")) < 86_400 * 10**9


def test_a_session_starting_before_the_last_event_starts_the_next_clock() -> None:
    # GIVEN a parent and its subagent in one group: the subagent starts inside its parent
    data, _, found = _export(SPOTTER)
    packets = list(inflated(data).packet)
    starts = [p for p in packets[1:] if p.HasField("clock_snapshot")]
    # THEN each start is a clock of its own (a clock's snapshots must never go back)
    ids = [s.clock_snapshot.clocks[0].clock_id for s in starts]
    assert ids == [64, 65]
    assert all(s.clock_snapshot.clocks[0].is_incremental for s in starts)
    # AND the event after each start names its clock, for itself and as the default
    for start in starts:
        event = packets[packets.index(start) + 1]
        clock_id = start.clock_snapshot.clocks[0].clock_id
        assert (event.timestamp_clock_id, event.trace_packet_defaults.timestamp_clock_id) == (
            clock_id,
            clock_id,
        )
    assert _times(packets) == _layout_times(found)
    # AND the second start goes back in time (before the event written just before it),
    # which is why it is a new clock
    events = [p for p in packets if p.HasField("track_event")]
    after = events.index(packets[packets.index(starts[1]) + 1])
    times = _times(packets)
    assert starts[1].clock_snapshot.clocks[0].timestamp == times[after] < times[after - 1]


def test_a_group_past_its_last_clock_id_writes_absolute_realtime(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import agent_profiler.writers.events as perfetto

    # GIVEN only one clock id for a group whose second session starts earlier
    monkeypatch.setattr(perfetto, "DELTA_CLOCK_IDS", range(64, 65))
    data, _, found = _export(SPOTTER)
    packets = list(inflated(data).packet)
    # THEN one clock starts, and from the event that would have needed another, events
    # carry absolute REALTIME times (said on that event and as the default)
    assert len([p for p in packets if p.HasField("clock_snapshot")]) == 2
    switch = next(p for p in packets if p.HasField("track_event") and p.timestamp_clock_id == 1)
    assert switch.trace_packet_defaults.timestamp_clock_id == 1
    after = packets[packets.index(switch) :]
    assert all(p.timestamp > 10**18 for p in after if p.HasField("track_event"))
    assert _times(packets) == _layout_times(found)


def test_the_real_importer_reads_deltas_and_the_absolute_fallback_as_the_times_meant(
    monkeypatch: pytest.MonkeyPatch, export_trace: Any
) -> None:
    import agent_profiler.writers.events as perfetto

    # export_trace checks the contract and that Trace Processor holds every slice, flow
    # and counter sample at the time the decoded trace says (and import stats are clean)
    deltas = export_trace(SPOTTER, require_addition=False).view
    monkeypatch.setattr(perfetto, "DELTA_CLOCK_IDS", range(64, 65))
    fallback = export_trace(SPOTTER, require_addition=False).view
    assert fallback.event_clock_ids.keys() == {1, 64} and deltas.event_clock_ids.keys() == {
        64,
        65,
    }
    assert [(s.ts, s.dur, s.name) for s in fallback.slices] == [
        (s.ts, s.dur, s.name) for s in deltas.slices
    ]


def _wire(annotation: Any, strings: dict[int, str], names: dict[int, str]) -> Any:
    """A debug annotation as (wire field, value); dicts and arrays decoded recursively."""
    if annotation.dict_entries:
        return {names[e.name_iid]: _wire(e, strings, names) for e in annotation.dict_entries}
    if annotation.array_values:
        return [_wire(item, strings, names) for item in annotation.array_values]
    field = annotation.WhichOneof("value")
    if field is None:
        return None  # a name with no value: an empty dict or array
    if field == "string_value_iid":
        return ("interned", strings[annotation.string_value_iid])
    return (field.removesuffix("_value"), getattr(annotation, field))


def _encoded(args: dict[str, Any], interner: Any = None) -> tuple[dict[str, Any], Any]:
    """Hand-made arguments on one slice, as the writer puts them on the wire: annotation
    name → (wire field, value), and the packet (its interned_data)."""
    interner = interner or EventEncoder(1)
    slice_ = LaidSlice("Tools", "Read", 10, 20, "claude.activity", args)
    # a slice's begin (after the clock snapshot that starts the group's clock, if any)
    (packet,) = [
        p
        for p in pb.Trace.FromString(interner.begin(10, slice_)).packet
        if p.HasField("track_event")
    ]
    # every string interned so far (this packet defines only those new here)
    _, _, annotation_names, string_values = interner.tables
    strings = {iid: text for text, iid in string_values.items()}
    names = {iid: name for name, iid in annotation_names.items()}
    wire = {
        names[a.name_iid]: _wire(a, strings, names) for a in packet.track_event.debug_annotations
    }
    return wire, packet


class _Level(enum.IntEnum):
    HIGH = 3


def test_integers_take_the_wire_type_of_their_sign_and_range() -> None:
    """Hand-made values: no journal has a count beyond 64 bits, but a damaged one could."""
    wire, _ = _encoded(
        {
            "zero": 0,
            "top": 2**64 - 1,
            "beyond": 2**64,
            "minus_one": -1,
            "bottom": -(2**63),
            "below": -(2**63) - 1,
        }
    )
    assert wire == {
        "zero": ("uint", 0),
        "top": ("uint", 2**64 - 1),
        "beyond": ("string", str(2**64)),  # out of the wire's range: its digits
        "minus_one": ("int", -1),
        "bottom": ("int", -(2**63)),
        "below": ("string", str(-(2**63) - 1)),
    }


def test_values_of_other_types_keep_their_meaning_on_the_wire() -> None:
    """Hand-made values of the types a future argument may carry: enum members are their
    value, a tuple is an array, a float a double, anything else its text."""
    wire, _ = _encoded(
        {
            "harness": Harness.CODEX,  # a StrEnum member
            "level": _Level.HIGH,  # an IntEnum member
            "pair": ("a", 2),
            "ratio": 0.25,
            "yes": True,
            "no": False,
            "path": Path("a/b"),
            "empty": [],
            "nested": {"k": [1, {"x": -2}]},
        }
    )
    assert wire == {
        "harness": ("interned", "codex"),
        "level": ("uint", 3),
        "pair": [("interned", "a"), ("uint", 2)],
        "ratio": ("double", 0.25),
        "yes": ("bool", True),
        "no": ("bool", False),
        "path": ("string", "a/b"),
        "empty": None,
        "nested": {"k": [("uint", 1), {"x": ("int", -2)}]},
    }


def test_short_strings_are_interned_once_and_ids_and_long_texts_are_inline() -> None:
    """Hand-made values at the boundary: a string of up to 64 characters is written once
    in interned_data and referred to by iid; longer ones, and values that are ids, inline."""
    interner = EventEncoder(1)
    short, long = "s" * 64, "l" * 65
    args = {"a": short, "b": long, "id": "x", "response_id": "r", "text": "t", "c": short}
    wire, packet = _encoded(args, interner)
    assert wire == {
        "a": ("interned", short),
        "b": ("string", long),
        "id": ("string", "x"),
        "response_id": ("string", "r"),
        "text": ("string", "t"),
        "c": ("interned", short),
    }
    data = packet.interned_data
    assert [(e.iid, e.str) for e in data.debug_annotation_string_values] == [(1, short.encode())]
    assert [(e.iid, e.name) for e in data.debug_annotation_names] == [
        (1, "a"),
        (2, "b"),
        (3, "id"),
        (4, "response_id"),
        (5, "text"),
        (6, "c"),
    ]
    assert [(e.iid, e.name) for e in data.event_names] == [(1, "Read")]
    assert [(e.iid, e.name) for e in data.event_categories] == [(1, "claude.activity")]
    # a second slice reuses every iid and defines nothing again
    again, second = _encoded({"c": short, "a": "new"}, interner)
    assert again == {"c": ("interned", short), "a": ("interned", "new")}
    data = second.interned_data
    assert [(e.iid, e.str) for e in data.debug_annotation_string_values] == [(2, b"new")]
    assert list(data.debug_annotation_names) == list(data.event_names) == []
    assert list(data.event_categories) == []
    event = second.track_event
    assert (event.name_iid, list(event.category_iids)) == (1, [1])
    assert [a.name_iid for a in event.debug_annotations] == [6, 1]


def test_no_sessions_is_a_trace_of_one_clock_snapshot_at_zero() -> None:
    stream = io.BytesIO()
    assert PerfettoWriter().write([], stream) == 1
    (clock,) = pb.Trace.FromString(stream.getvalue()).packet
    assert [(c.clock_id, c.timestamp) for c in clock.clock_snapshot.clocks] == [(1, 0), (6, 0)]
    assert 0 < clock.trusted_packet_sequence_id < 128


def test_counter_events_carry_the_sessions_activity_category() -> None:
    # TRACE_CONTRACT §3: `<harness>.activity` for every slice but profile (1), instant and
    # counter event; the counters' packets are made apart from the slices'
    view = load_trace(_export(SMALL)[0])
    assert view.samples and {s.categories for s in view.samples} == {("claude.activity",)}


def test_events_are_written_in_time_order_slices_and_counters_merged() -> None:
    """Each session's events go out in (time, rank) order, counter packets between the
    slices (Trace Processor sorts anyway; the file is a readable timeline too)."""
    data, _, found = _export(SPOTTER)
    packets = inflated(data).packet
    # descriptors of a session, then its events in time order; sessions one after another
    runs: list[list[Any]] = [[]]
    for packet in packets[1:]:
        if packet.HasField("track_descriptor"):
            if runs[-1]:
                runs.append([])
        elif packet.HasField("track_event"):
            runs[-1].append(packet)
    assert len(runs) == len(found) == 2
    for events in runs:
        # every event's time is a delta from the one before (no clock goes back)
        assert all(p.timestamp >= 0 for p in events)
        types = {p.track_event.type for p in events}
        assert pb.TrackEvent.TYPE_COUNTER in types and pb.TrackEvent.TYPE_SLICE_BEGIN in types
        # equal times by rank: profile (1) begins first and ends last, after the closing
        # zeros of the counters, which share its end time
        first, *_, closing, last = events
        assert first.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN
        assert last.track_event.type == pb.TrackEvent.TYPE_SLICE_END
        assert last.track_event.track_uuid == first.track_event.track_uuid
        assert closing.track_event.type == pb.TrackEvent.TYPE_COUNTER
        assert last.timestamp == 0  # the same time as the closing zero before it
        assert closing.track_event.counter_value == 0


# --------------------------------------------------------------------------- bytes by hand


def _by_setters(annotation: Any, name_iids: dict[str, int], value: Any) -> None:
    """What the writer did before wire.py: a DebugAnnotation filled by protobuf setters."""
    if type(value) is str:
        annotation.string_value = value
    elif type(value) is bool:
        annotation.bool_value = value
    elif type(value) is int:
        if value >= 0:
            annotation.uint_value = value
        else:
            annotation.int_value = value
    elif type(value) is float:
        annotation.double_value = value
    elif type(value) is dict:
        for key, item in value.items():
            entry = annotation.dict_entries.add(name_iid=name_iids[key])
            _by_setters(entry, name_iids, item)
    else:
        for item in value:
            _by_setters(annotation.array_values.add(), name_iids, item)


@pytest.mark.parametrize(
    "value",
    [
        0,
        127,
        128,
        16_383,
        16_384,
        2**21,
        2**64 - 1,
        -1,
        -(2**63),
        0.1,
        float("-inf"),
        True,
        False,
        "x" * 65,  # inline (past the interning length)
        "é" * 200,  # a length of two varint bytes, in UTF-8 bytes
        [],
        {},
        [1, [2, [3]], {"k": -4}],
        {"k": {"k": [True, 2.5, "y" * 70]}, "l": 300},
    ],
)
def test_hand_encoded_annotations_are_the_bytes_protobuf_serialises(value: Any) -> None:
    """wire.py writes fields in field-number order, as protobuf's serialiser does: the same
    bytes as the setters gave (and every corpus export was compared byte for byte once)."""
    from agent_profiler.writers.wire import annotation_encoder, name_iid_field

    names = {"k": 1, "l": 2, "v": 3}
    fields = {name: name_iid_field(iid) for name, iid in names.items()}
    encode, _, _ = annotation_encoder(fields, fields.__getitem__, {}, _no_interning, frozenset())
    expected = pb.DebugAnnotation(name_iid=names["v"])
    _by_setters(expected, names, value)
    assert encode("v", value) == expected.SerializeToString()


def _no_interning(text: str) -> bytes:
    raise AssertionError(f"{text!r} should not be interned")


def test_an_end_packet_is_the_bytes_protobuf_serialises() -> None:
    encoder = EventEncoder(3)
    encoder.begin(5, LaidSlice("Tools", "Read", 5, 9, "c", {}, track_uuid=300))
    expected = pb.TracePacket(timestamp=4, trusted_packet_sequence_id=3, sequence_flags=2)
    expected.track_event.type = pb.TrackEvent.TYPE_SLICE_END
    expected.track_event.track_uuid = 300
    first = encoder.end(9, 300)
    assert first == b"\x0a" + bytes([expected.ByteSize()]) + expected.SerializeToString()
    # the second END of the track comes from the cache: only its time differs
    expected.timestamp = 1
    assert encoder.end(10, 300)[2:] == expected.SerializeToString()


# --------------------------------------------------------------------------- compression


def test_compressed_and_plain_exports_hold_the_same_packets() -> None:
    """Each group's packets deflated (the default) or not: the same packets in the same
    order once inflated; the trace's first packets stay readable as they are."""
    for journals in ((SMALL,), (SPOTTER,), (DATA / "pi", DATA / "codex")):
        plain, count, _ = _export(*journals, compress=False)
        packed, packed_count, _ = _export(*journals)
        assert count == packed_count
        assert list(inflated(packed).packet) == list(pb.Trace.FromString(plain).packet)
        raw = pb.Trace.FromString(packed).packet
        kinds = [p.WhichOneof("data") for p in raw[:3]]
        assert kinds == ["clock_snapshot", "trace_attributes", "track_descriptor"]
        assert all(p.HasField("compressed_packets") for p in raw[3:])
        assert all(p.ListFields()[0][0].name == "compressed_packets" for p in raw[3:])
        assert len(packed) < len(plain) / 2


def test_chunks_hold_whole_packets_of_at_least_the_chunk_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import zlib

    import agent_profiler.writers.chunks as chunks

    monkeypatch.setattr(chunks, "CHUNK", 4096)
    plain, _, _ = _export(SPOTTER, compress=False)
    packed, _, _ = _export(SPOTTER)
    bundles = [p.compressed_packets for p in pb.Trace.FromString(packed).packet[3:]]
    assert len(bundles) > 3
    inflated_bundles = [zlib.decompress(b) for b in bundles]  # zlib headers
    # whole packets (each bundle parses on its own), in order, every bundle but the last
    # at least a chunk; together they are the plain trace's packets after its first three
    assert all(len(b) >= 4096 for b in inflated_bundles[:-1])
    assert b"".join(inflated_bundles) == b"".join(_frames_bytes(plain)[3:])
    for bundle in inflated_bundles:
        assert pb.Trace.FromString(bundle).SerializeToString() == bundle


def _frames_bytes(data: bytes) -> list[bytes]:
    """Each Trace record's bytes, framing included."""
    return [b"\x0a" + _varint(len(frame)) + frame for frame in _frames(data)]


def _varint(value: int) -> bytes:
    from agent_profiler.writers.wire import varint

    return varint(value)


def test_a_failing_stream_is_raised_from_the_writer_thread_and_the_thread_ends() -> None:
    import threading

    from agent_profiler.writers.chunks import PacketSink

    class Full(io.BytesIO):
        def write(self, data: Any) -> int:
            raise OSError(28, "No space left on device")

    sink = PacketSink(Full(), compress=True, chunk=10)
    before = threading.active_count()
    with pytest.raises(OSError, match="No space left"):
        for _ in range(20):
            sink.add(b"\x0a\x02\x08\x01" * 5)
        sink.close()
    sink.stop()
    assert threading.active_count() == before


def test_the_export_command_deflates_unless_told_not_to(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agent_profiler.cli import app
    from agent_profiler.entry import _parse_export

    runner = CliRunner()
    packed, plain = tmp_path / "packed.pftrace", tmp_path / "plain.pftrace"
    assert runner.invoke(app, ["export", str(SPOTTER), "-o", str(packed)]).exit_code == 0
    args = ["export", str(SPOTTER), "-o", str(plain), "--no-compress"]
    assert runner.invoke(app, args).exit_code == 0
    raw = pb.Trace.FromString(packed.read_bytes()).packet
    assert any(p.HasField("compressed_packets") for p in raw)
    assert not any(
        p.HasField("compressed_packets") for p in pb.Trace.FromString(plain.read_bytes()).packet
    )
    assert inflated(packed) == pb.Trace.FromString(plain.read_bytes())
    # the console script's own parser (entry.py) takes the flag too
    assert _parse_export([str(SPOTTER), "--no-compress"])["compress"] is False  # type: ignore[index]


def test_items_kept_whole_keep_their_type() -> None:
    """wire.py keeps a dict item whose value is a short string, a bool or a small int
    framed whole, by (key, value): 1 and True are equal keys in Python, not on the wire."""
    interner = EventEncoder(1)
    for value, expected in [(1, ("uint", 1)), (True, ("bool", True)), (1, ("uint", 1))]:
        wire, _ = _encoded({"x": value, "d": {"x": value}}, interner)
        assert wire == {"x": expected, "d": {"x": expected}}
    wire, _ = _encoded({"x": 0, "d": {"x": False}}, interner)
    assert wire == {"x": ("uint", 0), "d": {"x": ("bool", False)}}
