"""What a one-pass export writes as it goes, for any harness: a group's events kept in
(time, rank, order) order on a small heap until no later request can come before them
(`Events`), slice lanes fitted as the slices come (`OnlineLanes`, planning.first_fit
taken one slice at a time), and the track descriptors, each written once, before the
first event on its track.

The bytes are the writers' own: the events by writers/events.py's EventEncoder (its
interning, delta clock and the direct encoders of direct.py), the descriptors by
writers/packets.py, the compression by writers/chunks.py's PacketSink."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from agent_profiler.layout.types import (
    R_CAPTURE_BEGIN,
    R_CAPTURE_END,
    R_COUNTER,
    R_SLICE_BEGIN,
    R_SLICE_END,
    R_ZERO_END,
    LaidSlice,
    Track,
)
from agent_profiler.stream.log import NotHandled
from agent_profiler.writers.events import EventEncoder
from agent_profiler.writers.packets import track_descriptor_packet
from agent_profiler.writers.perfetto import MAX_EXTRA_COUNTERS
from agent_profiler.writers.wire import record

_BEGIN, _PAIR_BEGIN, _PAIR_END, _END_OF, _COUNTERS = 0, 2, 3, 4, 5


class Events:
    """A group's events on its sequence, written in (ts, rank, order) order: each is held
    on a heap until `flush(before)` says nothing can come before it any more."""

    def __init__(self, encoder: EventEncoder, add: Callable[[bytes], None], activity: str) -> None:
        self.encoder = encoder
        self.add = add
        self.activity = activity
        self.heap: list[tuple[int, int, int, Any, int]] = []
        self.order = 0
        self.declared: set[int] = set()
        self.bound = -(2**63)  # every event before this is written (`flush`)

    def declare(self, track: Track) -> None:
        """A track's descriptor, written now (before any event on it)."""
        if track.uuid in self.declared:
            return
        self.declared.add(track.uuid)
        self.add(record(track_descriptor_packet(self.encoder.clock.sequence, track)))

    def slice(self, rank: int, slice_: LaidSlice, *, end: bool) -> None:
        """A slice's begin (its arguments encoded when it is written) and, with `end` and
        unless it is an instant, its end (without: written apart, `end_of`)."""
        self.order += 1
        heap = self.heap
        start = slice_.start
        heapq.heappush(heap, (start, rank, self.order, slice_, _BEGIN))
        if end and not slice_.instant:
            end_ts = slice_.end
            heapq.heappush(
                heap,
                (
                    end_ts,
                    self._closing(rank, start, end_ts),
                    self.order,
                    slice_.track_uuid,
                    _END_OF,
                ),
            )

    def end_of(self, track_uuid: int, start: int, end: int) -> None:
        """The end of a slice of [start, end] whose begin is written apart."""
        self.order += 1
        closing = self._closing(R_SLICE_BEGIN, start, end)
        heapq.heappush(self.heap, (end, closing, self.order, track_uuid, _END_OF))

    @staticmethod
    def _closing(rank: int, start: int, end: int) -> int:
        """An end's rank (layout.types `end_rank`, told by its begin's)."""
        if rank == R_CAPTURE_BEGIN:
            return R_CAPTURE_END
        return R_ZERO_END if end == start else R_SLICE_END

    def counters(self, ts: int, rank: int, values: dict[int, int]) -> None:
        """Counter values at one (ts, rank)."""
        self.order += 1
        heapq.heappush(self.heap, (ts, rank, self.order, values, _COUNTERS))

    def pair(
        self,
        first: LaidSlice,
        second: LaidSlice,
        values: dict[int, int],
        ended: Callable[[int], dict[int, int]],
    ) -> None:
        """Two slices of one span (a response and its turn) as one event at each end: their
        begins, then the counter `values` at their start (one packet); their ends, then the
        counter values `ended(ts)` makes when they are written. The packets of one time and
        rank are in the order a sweep writes them; counter packets there may come before a
        slice event of a higher rank, which no reader can tell (they are on other tracks)."""
        self.order += 1
        heap, start, end = self.heap, first.start, first.end
        if start < self.bound:
            # (its counter values could not join those of its time written already)
            raise NotHandled("a request starting before what is written")
        heapq.heappush(
            heap, (start, R_SLICE_BEGIN, self.order, (first, second, values), _PAIR_BEGIN)
        )
        closing = R_ZERO_END if end == start else R_SLICE_END
        ends = (first.track_uuid, second.track_uuid, ended)
        heapq.heappush(heap, (end, closing, self.order, ends, _PAIR_END))

    def counters_at(self, ts: int, values: dict[int, int], rank: int = R_COUNTER) -> None:
        """Counter values of no slice (a Codex compaction's sizes), written at `ts` in the
        heap's order: by default after the slice events of that time."""
        self.order += 1
        heapq.heappush(self.heap, (ts, rank, self.order, values, _COUNTERS))

    def flush(self, before: int | None = None) -> None:
        """Write every event held that starts before `before` (None: all)."""
        heap, encoder, add = self.heap, self.encoder, self.add
        pop = heapq.heappop
        self.bound = max(self.bound, 2**63 if before is None else before)
        while heap and (before is None or heap[0][0] < before):
            ts, rank, _, what, part = pop(heap)
            if part == _PAIR_BEGIN:
                first, second, values = what
                add(encoder.begin(ts, first))
                add(encoder.begin(ts, second))
                if values:
                    self.counters_now(ts, values)
            elif part == _PAIR_END:
                first_uuid, second_uuid, ended = what
                add(encoder.end(ts, first_uuid))
                add(encoder.end(ts, second_uuid))
                values = ended(ts)
                if values:
                    self.counters_now(ts, values)
            elif part == _END_OF:
                add(encoder.end(ts, what))
            elif part == _COUNTERS:
                # Counter values held for one time and rank are one packet, the later
                # value of a counter winning, as the model path writes them
                # (writers/perfetto.py `_counter_packets`): a compaction's size before and
                # after, when it starts and ends at one time, is one sample, the after.
                while heap and heap[0][4] == _COUNTERS and heap[0][0] == ts and heap[0][1] == rank:
                    what = {**what, **pop(heap)[3]}
                if rank == R_SLICE_BEGIN and heap and heap[0][0] == ts and self._joined(ts, what):
                    continue
                self.counters_now(ts, what)
            elif part == _BEGIN:
                add(encoder.begin(ts, what))
            else:
                raise AssertionError(part)

    def _joined(self, ts: int, values: dict[int, int]) -> bool:
        """Counter values joined to those of a request starting at their time, held
        still (a compaction's snapshot, then the request's at its time, the context
        changed between): the model path writes one sample of a time, the later's value
        (writers/perfetto.py `_counter_packets`). False: none starts then."""
        for item in self.heap:  # (a compaction's, rarely: the heap is not sorted through)
            if item[0] == ts and item[4] == _PAIR_BEGIN:
                later = item[3][2]
                joined = {**values, **later}
                later.clear()
                later.update(joined)
                return True
        return False

    def counters_now(self, ts: int, values: dict[int, int]) -> None:
        """Counter values written now (before every event held): zeros last, at most
        1 + 8 a packet (writers/perfetto.py `_counter_packets`)."""
        if len(values) <= 1 + MAX_EXTRA_COUNTERS and 0 not in values.values():
            self.add(self.encoder.counters(ts, self.activity, values))
            return
        pairs = sorted(values.items(), key=lambda pair: pair[1] == 0)
        for first in range(0, len(pairs), 1 + MAX_EXTRA_COUNTERS):
            chunk = dict(pairs[first : first + 1 + MAX_EXTRA_COUNTERS])
            self.add(self.encoder.counters(ts, self.activity, chunk))


class OnlineLanes:
    """planning.first_fit, one slice at a time: a slice goes on the lowest-numbered lane
    free at its start, slices taken in (start, -end, position) order. A slice given out
    of that order is not handled (first fit would have placed the two the other way)."""

    __slots__ = ("busy", "count", "free", "last")

    def __init__(self) -> None:
        self.busy: list[tuple[int, int]] = []
        self.free: list[int] = []
        self.count = 0
        self.last: tuple[int, int] = (-(2**63), 0)

    def place(self, start: int, end: int) -> tuple[int, bool]:
        """The slice's lane, and whether it is the lane's first slice."""
        key = (start, -end)
        if key < self.last:
            raise NotHandled("slices that do not come in their lanes' order")
        self.last = key
        busy, free = self.busy, self.free
        until = end if end > start else start + 1
        while busy and busy[0][0] <= start:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane, first = heapq.heappop(free), False
        else:
            lane, first = self.count, True
            self.count += 1
        heapq.heappush(busy, (until, lane))
        return lane, first
