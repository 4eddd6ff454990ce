"""Perfetto writer: the layout (layout/) encoded as a protobuf TrackEvent trace. It owns
the wire: descriptors, the clock snapshots, delta timestamps, interning, typed annotations,
counter packets. Every packet is encoded straight to bytes (events.py and wire.py the
events, packets.py the descriptors and clock snapshots), so no protobuf module is loaded
on the way. Each group's
packets are deflated into compressed_packets by a writer thread (chunks.py), unless
`compress` is off.

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
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

from agent_profiler.layout import (
    R_CAPTURE_BEGIN,
    R_CAPTURE_END,
    R_INSTANT,
    R_SLICE_END,
    R_ZERO_END,
    ContentMode,
    CounterSeries,
    LaidSlice,
    SessionPlan,
    TraceFacts,
    TraceHeader,
    build_layout,
    iter_layout,
    ordered_sessions,
    trace_root,
)
from agent_profiler.leaving import keep
from agent_profiler.model import Session
from agent_profiler.views import session_span
from agent_profiler.writers.chunks import PacketSink
from agent_profiler.writers.events import CLOCK_BOOTTIME, CLOCK_REALTIME, EventEncoder
from agent_profiler.writers.packets import (
    clock_snapshot,
    trace_attributes_packet,
    track_descriptor_packet,
)
from agent_profiler.writers.wire import record

__all__ = ["ContentMode", "PerfettoWriter", "TraceFacts", "build_layout"]

# Trace Processor (v58) accepts at most 8 `extra_counter_values` on one TrackEvent.
MAX_EXTRA_COUNTERS = 8


BEGIN, END, COUNTER = 0, 1, 2
# (timestamp, rank, order, what, part): `what` is the slice (begin, end) or the counter
# values at that time (track uuid → value, in the order they are encoded).
Event = tuple[int, int, int, LaidSlice | dict[int, int], int]


def session_events(plan: SessionPlan) -> Iterator[Event]:
    """(timestamp, rank, order, what, part) of one session in (timestamp, rank, order)
    order: the plan's slice events with its counter packets let in before the first slice
    event they precede (`_slice_sweep`)."""
    counters = _counter_packets(plan.counters, plan.slice_count)
    return _slice_sweep(plan.begins(), counters)


# After the last counter packet: compares greater than every event (an int timestamp).
_NEVER: tuple[Any, ...] = (math.inf,)


def _slice_sweep(
    begins: Iterable[tuple[int, int, int, LaidSlice]], counters: Iterator[Event] | None = None
) -> Iterator[Event]:
    """Every slice begin, instant and slice end, ordered by (ts, rank, order), from the
    begins in that order (SessionPlan.begins, layout.begin_events), with `counters`' packets
    (in that order too) let in before the first slice event they precede. An end always
    sorts after its own begin (a later time, or the same time and a higher rank), so ends
    wait on a heap of the open slices until the next begin passes them: a slice is held
    from its begin to its end, no longer; the heap holds each end as the event it yields.
    Slice and counter ranks differ (TRACE_CONTRACT §1), so a slice event and a packet never
    tie and a plain tuple comparison orders them (a tie would put the slice first, as a
    stable merge does). One generator for the three streams, by hand: heapq.merge with a
    key cost a Python call per event, and each generator layer a resume per event."""
    following = iter(()) if counters is None else counters
    counter: tuple[Any, ...] = next(following, _NEVER)
    open_ends: list[Event] = []
    push, pop = heapq.heappush, heapq.heappop
    for ts, rank, order, slice_ in begins:
        begin = (ts, rank, order, slice_, BEGIN)
        while open_ends and open_ends[0] < begin:
            end = pop(open_ends)
            while counter < end:
                yield counter
                counter = next(following, _NEVER)
            yield end
        while counter < begin:
            yield counter
            counter = next(following, _NEVER)
        yield begin
        if rank != R_INSTANT:
            finish = slice_.end
            # end_rank(slice_), told by its begin rank (a capture begins at R_CAPTURE_BEGIN,
            # and ts is its start) without a call per slice; the layout's tests hold the
            # swept ends to SessionLayout.slice_events, which asks end_rank.
            if rank == R_CAPTURE_BEGIN:
                closing = R_CAPTURE_END
            else:
                closing = R_ZERO_END if finish == ts else R_SLICE_END
            push(open_ends, (finish, closing, order, slice_, END))
    while open_ends:
        end = pop(open_ends)
        while counter < end:
            yield counter
            counter = next(following, _NEVER)
        yield end
    if counter is not _NEVER:
        yield counter
        yield from following


def _counter_packets(counters: Sequence[CounterSeries], seq: int) -> Iterator[Event]:
    """Counter samples at the same time and rank travel in one packet: one counter as the
    event's own value, the others as extra counter values (this cuts the counters' share
    of the file by about 4x on a long session). Each series is ordered by (ts, rank), so
    they are merged rather than grouped in a table (a heap of each series' next sample,
    [ts, rank, declaration index, uuid, value, next], each head a list updated in place);
    within a packet, counters keep their declaration order."""
    heads: list[list[Any]] = []
    for index, counter in enumerate(counters):
        samples = iter(counter.samples)
        for ts, rank, value in samples:
            heads.append([ts, rank, index, counter.track_uuid, value, samples.__next__])
            break
    heapq.heapify(heads)
    replace, pop = heapq.heapreplace, heapq.heappop
    while heads:
        head = heads[0]
        ts, rank = head[0], head[1]
        # Zeros last: Trace Processor v58.2 reads every extra counter value after an
        # extra value of 0 as 0 too (values [1, 5, 0, 7] import as 1, 5, 0, 0), which
        # wiped a category's first sample when another category was absent (0) at the
        # same snapshot. Zeros after zeros lose nothing.
        values: dict[int, int] = {}
        zeros: dict[int, int] | None = None
        while True:
            if head[4]:
                values[head[3]] = head[4]
            elif zeros is None:
                zeros = {head[3]: 0}
            else:
                zeros[head[3]] = 0
            try:
                head[0], head[1], head[4] = head[5]()
            except StopIteration:
                pop(heads)
            else:
                replace(heads, head)
            if not heads:
                break
            head = heads[0]
            if head[0] != ts or head[1] != rank:
                break
        if zeros is not None:
            values.update(zeros)
        if len(values) <= 1 + MAX_EXTRA_COUNTERS:
            seq += 1
            yield ts, rank, seq, values, COUNTER
            continue
        # Trace Processor drops a whole TrackEvent carrying more than 8 extra counter
        # values (stat track_event_extra_counter_exceeds_max): at most 1 + 8 counters
        # per packet, further packets at the same timestamp and rank.
        pairs = list(values.items())
        for first in range(0, len(pairs), 1 + MAX_EXTRA_COUNTERS):
            seq += 1
            chunk = dict(pairs[first : first + 1 + MAX_EXTRA_COUNTERS])
            yield ts, rank, seq, chunk, COUNTER


def sequence_of(group: int) -> int:
    """The packet sequence of journal group `group` (TRACE_CONTRACT §1 deviation: one per
    group, docs/traces.md). A group's interning and its delta clocks live on its sequence,
    so its packets depend on the group alone; under 127 groups, one byte on every packet."""
    return group + 1


def trace_start(sessions: Sequence[Session]) -> int | None:
    """Where the clock snapshot is taken: nothing in a session comes before its span's
    start (the capture starts there). None for no sessions."""
    return min((session_span(s)[0] for s in sessions), default=None)


def write_clock(stream: IO[bytes], first: int, header: TraceHeader | None = None) -> int:
    """The trace's first packets: one snapshot relating REALTIME to BOOTTIME (same value),
    then the trace-level facts (`write_header`). Journals carry wall-clock time only; the
    pair keeps Trace Processor free of clock-sync errors (TRACE_CONTRACT §1)."""
    clocks = ((CLOCK_REALTIME, first, False), (CLOCK_BOOTTIME, first, False))
    stream.write(record(clock_snapshot(sequence_of(0), clocks)))
    packets = 1
    if header is not None and header.sessions:
        packets += write_header(stream, header)
    return packets


def write_header(stream: IO[bytes], header: TraceHeader) -> int:
    """Once per trace: the trace attributes, which Trace Processor (v58+) puts in its
    `metadata` table as `trace_attribute.<key>` (ProtoTraceReader::HandleTraceAttributes),
    and the root track every top-level session's group hangs from."""
    sequence = sequence_of(0)
    stream.write(record(trace_attributes_packet(sequence, header.attributes())))
    stream.write(record(track_descriptor_packet(sequence, trace_root(header))))
    return 2


def encode_plan(encoder: EventEncoder, add: Callable[[bytes], None], plan: SessionPlan) -> None:
    """A session's events, swept in (time, rank, order) order, as packets handed to `add`
    (its track descriptors written before)."""
    encode_events(encoder, add, plan.activity, session_events(plan))


def encode_events(
    encoder: EventEncoder, add: Callable[[bytes], None], activity: str, events: Iterator[Event]
) -> None:
    """Swept events (`session_events`) as packets handed to `add`; `activity` is the
    category of the session's counter packets."""
    end, begin, counters = encoder.end, encoder.begin, encoder.counters
    for ts, _, _, what, part in events:
        if part == END:
            add(end(ts, what.track_uuid))  # type: ignore[union-attr]
        elif part == BEGIN:
            add(begin(ts, what))  # type: ignore[arg-type]
        else:
            add(counters(ts, activity, what))  # type: ignore[arg-type]


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

    def __init__(
        self,
        facts: TraceFacts | None = None,
        *,
        compress: bool = True,
        helper: bool = False,
        threaded: bool = True,
    ) -> None:
        self.facts = facts or TraceFacts()
        # Each group's packets deflated into compressed_packets (writers/chunks.py); the
        # trace's first packets (clock snapshot, attributes, root track) stay as they are.
        self.compress = compress
        # A long session's second run of events encoded by a helper process on another
        # core where one can run (writers/runs.py); the same bytes either way.
        self.helper = helper
        # The deflating on a thread of its own once a group is long (chunks.PacketSink):
        # not where every core is busy already (a folder's workers).
        self.threaded = threaded

    def write(self, sessions: Sequence[Session], stream: IO[bytes]) -> int:
        """Write the trace of these sessions as one group; returns the number of packets."""
        first = trace_start(sessions)
        packets = write_clock(stream, 0 if first is None else first, TraceHeader.of(sessions))
        return packets + self.write_group(sessions, stream, 0)

    def write_group(self, sessions: Sequence[Session], stream: IO[bytes], group: int) -> int:
        """One group's packets (everything but the clock snapshot); returns their number."""
        from agent_profiler.writers.runs import second_run_at, write_in_two_runs  # (imports us)

        sequence = sequence_of(group)
        encoder = EventEncoder(sequence)
        sink = PacketSink(stream, compress=self.compress, threaded=self.threaded)
        add = sink.add
        packets = 0  # descriptors, and the events of encoders done with
        tracks: SessionPlan | None = None
        try:
            for session_group, tracks in iter_layout(ordered_sessions(sessions), self.facts, group):
                for track in (session_group, *tracks.tracks):
                    add(record(track_descriptor_packet(sequence, track)))
                    packets += 1
                at = second_run_at(tracks)
                if at is None:
                    encode_plan(encoder, add, tracks)
                else:  # a long session: in two runs, the second maybe on another core
                    encoder, done = write_in_two_runs(
                        encoder, sink, stream, tracks, at, helper=self.helper
                    )
                    packets += done
            # The last session's plan, not freed object by object (leaving.py); each plan
            # before it was let go as the next one was made, as ever.
            keep("plan", tracks)
            sink.close()
        finally:
            sink.stop()
            encoder.close()
        return packets + encoder.packets
