"""Perfetto writer: the layout (layout/) encoded as a protobuf TrackEvent trace. It owns
the wire: descriptors, the clock snapshots, delta timestamps, interning, typed annotations,
counter packets.

It streams: sessions are planned and written one at a time (each session's descriptors,
then its events), and a session's events are swept in (time, rank, order) order: begins
as the plan makes its slices (layout.SessionPlan.begins), ends from a heap of the open
slices, so a slice is held from its begin to its end and no session's slices are all
held at once. Track descriptors must come first: Trace Processor drops a counter's
samples written before its descriptor (measured). Trace Processor sorts events by
time on import, so the sessions need not interleave in the file. Counter samples at one
(time, rank) share a packet, which is a Perfetto rule (≤ 8 extra counter values, zeros
last), so it lives here.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Sequence
from itertools import groupby
from typing import IO, TYPE_CHECKING, Any

from agent_profiler.layout import (
    R_INSTANT,
    ContentMode,
    CounterSeries,
    LaidSlice,
    Merge,
    SessionPlan,
    TraceFacts,
    TraceHeader,
    Track,
    TrackKind,
    build_layout,
    end_rank,
    iter_layout,
    ordered_sessions,
    trace_root,
)
from agent_profiler.model import Session
from agent_profiler.views import session_span

if TYPE_CHECKING:  # the full schema's types, of which _trace_pb2 holds the part we set
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
else:  # ≈ 1 ms to load instead of ≈ 25 (scripts/trace_schema.py)
    from agent_profiler.writers import _trace_pb2 as pb

__all__ = ["ContentMode", "PerfettoWriter", "TraceFacts", "build_layout"]

# Trace Processor (v58) accepts at most 8 `extra_counter_values` on one TrackEvent.
MAX_EXTRA_COUNTERS = 8

CLOCK_REALTIME = 1
CLOCK_BOOTTIME = 6
# Sequence-scoped clock ids (Perfetto: 64–127), on which event timestamps are deltas
# (_DeltaClock; TRACE_CONTRACT §1 deviation, docs/traces.md).
DELTA_CLOCK_IDS = range(64, 128)


class _Samples:
    """Counter values (track uuid → value) at one time, sent in one TrackEvent."""

    __slots__ = ("category", "values")

    def __init__(self, category: str, values: dict[int, int]) -> None:
        self.category = category
        self.values = values


_BEGIN, _END, _COUNTER = 0, 1, 2
_Event = tuple[int, int, int, LaidSlice | _Samples, int]


def _session_events(plan: SessionPlan) -> Iterator[_Event]:
    """(timestamp, rank, order, what, part) of one session in (timestamp, rank, order)
    order: the plan's slice events merged with its counter packets. Slice and counter
    ranks differ (TRACE_CONTRACT §1), so the two streams never tie."""
    return heapq.merge(
        _slice_sweep(plan.begins()),
        _counter_packets(plan.counters, plan.activity, plan.slice_count),
        key=lambda event: (event[0], event[1]),
    )


def _slice_sweep(begins: Iterable[tuple[int, int, int, LaidSlice]]) -> Iterator[_Event]:
    """Every slice begin, instant and slice end, ordered by (ts, rank, order), from the
    begins in that order (SessionPlan.begins, layout.begin_events). An end always sorts
    after its own begin (a later time, or the same time and a higher rank), so ends wait
    on a heap of the open slices until the next begin passes them: a slice is held from
    its begin to its end, no longer."""
    open_ends: list[tuple[int, int, int, LaidSlice]] = []
    for begin in begins:
        while open_ends and open_ends[0] < begin:
            ts, rank, order, ended = heapq.heappop(open_ends)
            yield ts, rank, order, ended, _END
        ts, rank, order, slice_ = begin
        yield ts, rank, order, slice_, _BEGIN
        if rank != R_INSTANT:
            heapq.heappush(open_ends, (slice_.end, end_rank(slice_), order, slice_))
    while open_ends:
        ts, rank, order, ended = heapq.heappop(open_ends)
        yield ts, rank, order, ended, _END


def _tagged(index: int, counter: CounterSeries) -> Iterator[tuple[int, int, int, int, int]]:
    for ts, rank, value in counter.samples:
        yield ts, rank, index, counter.track_uuid, value


def _counter_packets(
    counters: Sequence[CounterSeries], category: str, seq: int
) -> Iterator[_Event]:
    """Counter samples at the same time and rank travel in one packet: one counter as the
    event's own value, the others as extra counter values (this cuts the counters' share
    of the file by about 4x on a long session). Each series is ordered by (ts, rank), so
    they are merged rather than grouped in a table; within a packet, counters keep their
    declaration order."""
    merged = heapq.merge(*(_tagged(index, counter) for index, counter in enumerate(counters)))
    for (ts, rank), group in groupby(merged, key=lambda sample: (sample[0], sample[1])):
        values = [(uuid, value) for _, _, _, uuid, value in group]
        # Zeros last: Trace Processor v58.2 reads every extra counter value after an
        # extra value of 0 as 0 too (values [1, 5, 0, 7] import as 1, 5, 0, 0), which
        # wiped a category's first sample when another category was absent (0) at the
        # same snapshot. Zeros after zeros lose nothing.
        values.sort(key=lambda uuid_value: uuid_value[1] == 0)
        # Trace Processor drops a whole TrackEvent carrying more than 8 extra counter
        # values (stat track_event_extra_counter_exceeds_max): at most 1 + 8 counters
        # per packet, further packets at the same timestamp and rank.
        for first in range(0, len(values), 1 + MAX_EXTRA_COUNTERS):
            seq += 1
            chunk = dict(values[first : first + 1 + MAX_EXTRA_COUNTERS])
            yield ts, rank, seq, _Samples(category, chunk), _COUNTER


_MERGE = {
    Merge.NONE: pb.TrackDescriptor.SIBLING_MERGE_BEHAVIOR_NONE,
    Merge.BY_NAME: pb.TrackDescriptor.SIBLING_MERGE_BEHAVIOR_BY_TRACK_NAME,
}


def _track_descriptor(track: Track) -> pb.TrackDescriptor:
    """A layout track as a TrackDescriptor; fields the layout leaves unsaid stay unset."""
    descriptor = pb.TrackDescriptor(uuid=track.uuid, name=track.name)
    if track.parent is not None:
        descriptor.parent_uuid = track.parent
    if track.merge is not None:
        descriptor.sibling_merge_behavior = _MERGE[track.merge]
    if track.description:
        descriptor.description = track.description
    if track.explicit_child_order:
        descriptor.child_ordering = pb.TrackDescriptor.EXPLICIT
    if track.order_rank is not None:
        descriptor.sibling_order_rank = track.order_rank
    if track.kind is TrackKind.COUNTER:
        descriptor.counter.unit = pb.CounterDescriptor.UNIT_UNSPECIFIED
        descriptor.counter.unit_name = track.counter_unit
        if track.share_key:
            descriptor.counter.y_axis_share_key = track.share_key
    return descriptor


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def sequence_of(group: int) -> int:
    """The packet sequence of journal group `group` (TRACE_CONTRACT §1 deviation: one per
    group, docs/traces.md). A group's interning and its delta clocks live on its sequence,
    so its packets depend on the group alone; under 127 groups, one byte on every packet."""
    return group + 1


def trace_start(sessions: Sequence[Session]) -> int | None:
    """Where the clock snapshot is taken: nothing in a session comes before its span's
    start (the capture starts there). None for no sessions."""
    return min((session_span(s)[0] for s in sessions), default=None)


class _DeltaClock:
    """Event timestamps as deltas on incremental clocks of the group's sequence: an
    absolute time is 10 bytes on every event, a delta 2–6.

    The group's first event starts clock 64 with a clock snapshot tying it to REALTIME;
    when a session of the group starts before the last event written (a subagent runs
    inside its parent), the next clock id starts there, since a clock's snapshots must not
    go back (Trace Processor then drops the events it cannot place: measured). Past the
    last id the group's events carry absolute REALTIME times, as before deltas."""

    def __init__(self, sequence: int) -> None:
        self.sequence = sequence
        self.clock_ids = iter(DELTA_CLOCK_IDS)
        self.last: int | None = None  # None: no clock started yet
        self.absolute = False

    def stamp(self, packet: pb.TracePacket, ts: int) -> pb.TracePacket | None:
        """Set the packet's time; returns the clock snapshot to write before it, if any."""
        if self.absolute:
            packet.timestamp = ts
            return None
        if self.last is not None and ts >= self.last:
            packet.timestamp = ts - self.last
            self.last = ts
            return None
        clock_id = next(self.clock_ids, None)
        self.absolute = clock_id is None
        # The clock is said on this packet (Trace Processor applies defaults to the
        # packets after it) and as the sequence's default for the packets that follow.
        packet.timestamp_clock_id = CLOCK_REALTIME if clock_id is None else clock_id
        packet.trace_packet_defaults.timestamp_clock_id = packet.timestamp_clock_id
        if clock_id is None:
            packet.timestamp = ts
            return None
        self.last = ts
        packet.timestamp = 0  # the snapshot below starts the clock at `ts`
        snapshot = pb.TracePacket(trusted_packet_sequence_id=self.sequence)
        clocks = snapshot.clock_snapshot
        clocks.primary_trace_clock = pb.BUILTIN_CLOCK_REALTIME
        clocks.clocks.add(clock_id=clock_id, timestamp=ts, is_incremental=True)
        clocks.clocks.add(clock_id=CLOCK_REALTIME, timestamp=ts)
        clocks.clocks.add(clock_id=CLOCK_BOOTTIME, timestamp=ts)
        return snapshot


def write_clock(stream: IO[bytes], first: int, header: TraceHeader | None = None) -> int:
    """The trace's first packets: one snapshot relating REALTIME to BOOTTIME (same value),
    then the trace-level facts (`write_header`). Journals carry wall-clock time only; the
    pair keeps Trace Processor free of clock-sync errors (TRACE_CONTRACT §1)."""
    clock = pb.TracePacket()
    clock.clock_snapshot.primary_trace_clock = pb.BUILTIN_CLOCK_REALTIME
    for clock_id in (CLOCK_REALTIME, CLOCK_BOOTTIME):
        entry = clock.clock_snapshot.clocks.add()
        entry.clock_id = clock_id
        entry.timestamp = first
    clock.trusted_packet_sequence_id = sequence_of(0)
    packets = _emit(stream, clock)
    if header is not None and header.sessions:
        packets += write_header(stream, header)
    return packets


def write_header(stream: IO[bytes], header: TraceHeader) -> int:
    """Once per trace: the trace attributes, which Trace Processor (v58+) puts in its
    `metadata` table as `trace_attribute.<key>` (ProtoTraceReader::HandleTraceAttributes),
    and the root track every top-level session's group hangs from."""
    attributes = pb.TracePacket(trusted_packet_sequence_id=sequence_of(0))
    for key, value in header.attributes().items():
        attributes.trace_attributes.attribute.add(key=key, string_value=value)
    root = pb.TracePacket(trusted_packet_sequence_id=sequence_of(0))
    root.track_descriptor.CopyFrom(_track_descriptor(trace_root(header)))
    return _emit(stream, attributes) + _emit(stream, root)


class PerfettoWriter:
    """Writes sessions as one Perfetto trace (binary protobuf).

    A trace is the clock snapshot, then one block of packets per journal group (a session
    tree read together) on a sequence of its own: its track descriptors and events, uuids
    in the group's block (layout.UUID_BLOCK), interning and delta clocks begun afresh. So a
    group's packets depend on that group alone, and groups encoded in worker processes join
    into the bytes one process writes."""

    name = "perfetto"
    extension = ".pftrace"
    binary = True
    # Encodes each journal group on its own (pipeline.EncodeTrace), so an export can read
    # groups in worker processes and never hold every session at once.
    by_group = True

    def __init__(self, facts: TraceFacts | None = None) -> None:
        self.facts = facts or TraceFacts()

    def write(self, sessions: Sequence[Session], stream: IO[bytes]) -> int:
        """Write the trace of these sessions as one group; returns the number of packets."""
        first = trace_start(sessions)
        packets = write_clock(stream, 0 if first is None else first, TraceHeader.of(sessions))
        return packets + self.write_group(sessions, stream, 0)

    def write_group(self, sessions: Sequence[Session], stream: IO[bytes], group: int) -> int:
        """One group's packets (everything but the clock snapshot); returns their number."""
        packets = 0
        sequence = sequence_of(group)
        interner = _Interner()
        clock = _DeltaClock(sequence)
        for session_group, tracks in iter_layout(ordered_sessions(sessions), self.facts, group):
            descriptors = [_track_descriptor(track) for track in (session_group, *tracks.tracks)]
            for descriptor in descriptors:
                packet = pb.TracePacket(trusted_packet_sequence_id=sequence)
                packet.track_descriptor.CopyFrom(descriptor)
                packets += _emit(stream, packet)
            for ts, _, _, what, part in _session_events(tracks):
                packet = interner.packet(what, part)
                packet.trusted_packet_sequence_id = sequence
                snapshot = clock.stamp(packet, ts)
                if snapshot is not None:
                    packets += _emit(stream, snapshot)
                packets += _emit(stream, packet)
        return packets


class _Interner:
    """Interning (HABIT deviation, TRACE_CONTRACT §1: their writer interns nothing).
    Event names, categories, annotation names and repeated short string values are
    written once per journal group in `interned_data` (on the group's own sequence, whose
    first event says the state starts there) and referred to by iid afterwards;
    Trace Processor resolves them on import, so Agent Profiler's SQL sees the same
    strings. It roughly halves the file on long sessions."""

    def __init__(self) -> None:
        self.names: dict[str, int] = {}
        self.categories: dict[str, int] = {}
        self.annotation_names: dict[str, int] = {}
        self.strings: dict[str, int] = {}
        self.first = True

    def packet(self, what: LaidSlice | _Samples, part: int) -> pb.TracePacket:
        """The event's packet, without its time (_DeltaClock.stamp sets it)."""
        packet = pb.TracePacket()
        if self.first:
            packet.sequence_flags = (
                pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
                | pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
            )
            self.first = False
        else:
            packet.sequence_flags = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
        event = packet.track_event
        if isinstance(what, _Samples):
            event.type = pb.TrackEvent.TYPE_COUNTER
            (own, value), *extra = what.values.items()
            event.track_uuid = own
            event.counter_value = value
            event.category_iids.append(self._iid(packet, self.categories, what.category))
            for uuid, extra_value in extra:
                event.extra_counter_track_uuids.append(uuid)
                event.extra_counter_values.append(extra_value)
            return packet
        event.track_uuid = what.track_uuid
        if part == _END:
            event.type = pb.TrackEvent.TYPE_SLICE_END
            return packet
        event.type = pb.TrackEvent.TYPE_INSTANT if what.instant else pb.TrackEvent.TYPE_SLICE_BEGIN
        event.category_iids.append(self._iid(packet, self.categories, what.category))
        event.name_iid = self._iid(packet, self.names, what.name)
        for key, value in what.args.items():
            self._annotate(packet, event.debug_annotations.add(), key, value)
        event.flow_ids.extend(what.flows)
        return packet

    def _iid(self, packet: pb.TracePacket, table: dict[str, int], text: str) -> int:
        iid = table.get(text)
        if iid is None:
            iid = table[text] = len(table) + 1
            interned = packet.interned_data
            if table is self.names:
                interned.event_names.add(iid=iid, name=text)
            elif table is self.categories:
                interned.event_categories.add(iid=iid, name=text)
            elif table is self.annotation_names:
                interned.debug_annotation_names.add(iid=iid, name=text)
            else:
                interned.debug_annotation_string_values.add(iid=iid, str=text.encode())
        return iid

    def _annotate(
        self, packet: pb.TracePacket, annotation: pb.DebugAnnotation, name: str | None, value: Any
    ) -> None:
        """Typed debug annotation (TRACE_CONTRACT §4): uint for non-negative integers,
        int for negative ones, double, bool, string, arrays and dicts.

        This runs about 70 times per request (the `context` dict), so it dispatches on
        the exact type and looks interned names up directly (the Codex 51 MB export went
        from 5.9 s to 5.7 s with that alone)."""
        if name is not None:
            iid = self.annotation_names.get(name)
            annotation.name_iid = (
                iid if iid is not None else self._iid(packet, self.annotation_names, name)
            )
        kind = type(value)
        if kind is str:
            if name in _UNIQUE_STRING_KEYS or len(value) > 64:
                annotation.string_value = value
            else:
                iid = self.strings.get(value)
                annotation.string_value_iid = (
                    iid if iid is not None else self._iid(packet, self.strings, value)
                )
        elif kind is int:
            if 0 <= value < 2**64:
                annotation.uint_value = value
            elif -(2**63) <= value < 0:
                annotation.int_value = value
            else:
                annotation.string_value = str(value)  # out of the wire's range
        elif kind is dict:
            entries = annotation.dict_entries
            for key, item in value.items():
                self._annotate(packet, entries.add(), str(key), item)
        elif kind is bool:
            annotation.bool_value = value
        elif kind is list or kind is tuple:
            # An empty list leaves the annotation with a name and no value (an empty array).
            items = annotation.array_values
            for item in value:
                self._annotate(packet, items.add(), None, item)
        elif kind is float:
            annotation.double_value = value
        elif isinstance(value, str):  # str subclasses (StrEnum members)
            self._annotate(packet, annotation, None, str(value))
        elif isinstance(value, int):  # int subclasses (IntEnum)
            self._annotate(packet, annotation, None, int(value))
        else:
            annotation.string_value = str(value)


# Values that are ids (one per item, response or session) gain nothing from interning. Call
# ids are the exception: a tool call's id is its slice's `call_id` and the `source_id` of the
# changes it caused (its arguments and its result), about three uses each (Codex: 7.7% of
# the trace).
_UNIQUE_STRING_KEYS = frozenset(
    {
        "id",
        "response_id",
        "turn_id",
        "item_id",
        "session_id",
        "capture_id",
        "child_session",
        "parent_session",
        "text",
    }
)


def _emit(stream: IO[bytes], packet: pb.TracePacket) -> int:
    data = packet.SerializeToString()
    # Field 1 (Trace.packet), wire type 2: a Trace is just its packets back to back.
    stream.write(b"\x0a" + _varint(len(data)) + data)
    return 1
