"""A journal group's TrackEvent packets as bytes: slice begins, ends and instants, counter
packets, the interning that goes with them and the delta clock their times are on.

Everything constant is encoded once: the sequence id field, the sequence flags, each
interned name's `name_iid` field, each interned string's `string_value_iid` field, a
track's whole END packet after its time. The bytes are those protobuf's serialiser
gave for the same packets (wire.py)."""

from __future__ import annotations

import struct
from functools import partial
from typing import TYPE_CHECKING, Any

from agent_profiler.writers.direct import DirectArgs, Items
from agent_profiler.writers.packets import clock_snapshot
from agent_profiler.writers.wire import (
    NAME_IID_KEY,
    STRING_IID_KEY,
    annotation_encoder,
    record,
    varint,
)

if TYPE_CHECKING:
    from agent_profiler.layout import LaidSlice

CLOCK_REALTIME = 1
CLOCK_BOOTTIME = 6
# Sequence-scoped clock ids (Perfetto: 64–127), on which event timestamps are deltas
# (DeltaClock; TRACE_CONTRACT §1 deviation, docs/traces.md).
DELTA_CLOCK_IDS = range(64, 128)

# TracePacket fields (trace_packet.proto), each key pre-encoded.
_TIMESTAMP = b"\x40"  # 8, varint
_SEQUENCE_ID = b"\x50"  # 10, varint
_TRACK_EVENT = b"\x5a"  # 11, length-delimited
_INTERNED_DATA = b"\x62"  # 12, length-delimited
_CLOCK_ID = b"\xd0\x03"  # 58, varint
_DEFAULTS = b"\xda\x03"  # 59, length-delimited (TracePacketDefaults; its clock id is 58 too)
# sequence_flags (13): SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE on a
# group's first event (its interning starts there), SEQ_NEEDS_INCREMENTAL_STATE after.
_FLAGS_FIRST = b"\x68\x03"
_FLAGS = b"\x68\x02"

# TrackEvent fields (track_event.proto).
_CATEGORY_IID = b"\x18"  # 3, varint (repeated, unpacked)
_ANNOTATION = b"\x22"  # 4, length-delimited
_TYPE_BEGIN = b"\x48\x01"  # 9 = TYPE_SLICE_BEGIN
_TYPE_END = b"\x48\x02"  # TYPE_SLICE_END
_TYPE_INSTANT = b"\x48\x03"  # TYPE_INSTANT
_TYPE_COUNTER = b"\x48\x04"  # TYPE_COUNTER
_NAME_IID = b"\x50"  # 10, varint
_TRACK_UUID = b"\x58"  # 11, varint
_EXTRA_VALUE = b"\x60"  # 12, varint (int64)
_COUNTER_VALUE = b"\xf0\x01"  # 30, varint (int64)
_EXTRA_TRACK = b"\xf8\x01"  # 31, varint
_FLOW_ID = b"\xf9\x02"  # 47, fixed64
_pack_fixed64 = struct.Struct("<Q").pack
_BYTE = [bytes((i,)) for i in range(128)]
_RECORD_BYTE = [b"\x0a" + b for b in _BYTE]  # a Trace.packet record's tag and length
# Sets of counter tracks kept at most (a table starts afresh when full; a session has a
# few dozen at most).
_MAX_FRAMES = 4096

# InternedData fields (interned_data.proto), in field-number order: its entries are
# written grouped by field, in the order they were interned.
_EVENT_CATEGORIES, _EVENT_NAMES, _ANNOTATION_NAMES, _STRING_VALUES = 0, 1, 2, 3
_INTERNED_TAGS = (b"\x0a", b"\x12", b"\x1a", b"\xea\x01")  # 1, 2, 3, 29

# Values that are ids (one per item, response or session) gain nothing from interning. Call
# ids are the exception: a tool call's id is its slice's `call_id` and the `source_id` of the
# changes it caused (its arguments and its result), about three uses each (Codex: 7.7% of
# the trace).
UNIQUE_STRING_KEYS = frozenset(
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


class DeltaClock:
    """Event timestamps as deltas on incremental clocks of the group's sequence: an
    absolute time is 10 bytes on every event, a delta 2–6.

    The group's first event starts clock 64 with a clock snapshot tying it to REALTIME;
    when a session of the group starts before the last event written (a subagent runs
    inside its parent), the next clock id starts there, since a clock's snapshots must not
    go back (Trace Processor then drops the events it cannot place: measured). Past the
    last id the group's events carry absolute REALTIME times, as before deltas."""

    __slots__ = ("absolute", "clock_ids", "last", "sequence", "used")

    def __init__(self, sequence: int, used: int = 0) -> None:
        """`used`: clock ids of the sequence taken before this clock (an encoder that
        goes on after another on the same sequence: writers/runs.py) — a clock id's
        snapshots must not go back, so each run of a sequence starts a clock of its own."""
        self.sequence = sequence
        self.clock_ids = iter(DELTA_CLOCK_IDS[used:])
        self.used = used  # the sequence's clock ids taken, this clock's included
        self.last: int | None = None  # None: no clock started yet
        self.absolute = False

    def restart(self, ts: int) -> tuple[bytes, bytes, bytes]:
        """A packet's time where the clock cannot go on with a delta: (its `timestamp`
        field, the fields after its sequence flags, the clock snapshot record to write
        before it, or b"")."""
        clock_id = next(self.clock_ids, None)
        self.absolute = clock_id is None
        self.used += 1
        # The clock is said on this packet (Trace Processor applies defaults to the
        # packets after it) and as the sequence's default for the packets that follow.
        said = _CLOCK_ID + varint(CLOCK_REALTIME if clock_id is None else clock_id)
        suffix = said + _DEFAULTS + varint(len(said)) + said
        if clock_id is None:
            return _TIMESTAMP + varint(ts), suffix, b""
        self.last = ts
        snapshot = clock_snapshot(
            self.sequence,
            ((clock_id, ts, True), (CLOCK_REALTIME, ts, False), (CLOCK_BOOTTIME, ts, False)),
        )
        # timestamp 0: the snapshot starts the clock at `ts`
        return _TIMESTAMP + b"\x00", suffix, record(snapshot)


class EventEncoder:
    """A group's events as `Trace.packet` records, on the group's sequence.

    Interning (HABIT deviation, TRACE_CONTRACT §1: their writer interns nothing): event
    names, categories, annotation names and repeated short string values are written once
    per journal group in `interned_data` (on the group's own sequence, whose first event
    says the state starts there) and referred to by iid afterwards; Trace Processor
    resolves them on import, so Agent Profiler's SQL sees the same strings. It roughly
    halves the file on long sessions."""

    def __init__(
        self,
        sequence: int,
        direct: bool = True,
        unique: frozenset[str] = UNIQUE_STRING_KEYS,
        *,
        clocks_used: int = 0,
    ) -> None:
        """`clocks_used`: the sequence's clock ids taken by the encoders before this one
        (DeltaClock); a new encoder's first packet clears the sequence's incremental
        state, so it may go on where another stopped (writers/runs.py)."""
        self.sequence = sequence
        self.clock = DeltaClock(sequence, clocks_used)
        self.sequence_field = _SEQUENCE_ID + varint(sequence)
        self.flags = _FLAGS_FIRST
        self.packets = 0  # packets encoded, clock snapshots included
        self.tables: tuple[dict[str, int], ...] = ({}, {}, {}, {})
        # Each interned text's field, as every later use writes it.
        self.category_fields: dict[str, bytes] = {}
        self.name_fields: dict[str, bytes] = {}
        self.annotation_name_fields: dict[str, bytes] = {}
        self.string_fields: dict[str, bytes] = {}
        self.ends: dict[int, bytes] = {}  # track uuid → its END packet after the time
        self.track_fields: dict[int, bytes] = {}  # track uuid → its track_uuid field
        self.last_dict: object = None  # the last arguments given as a dict, and their bytes
        self.last_dict_bytes = b""
        # (category, *track uuids) → a counter packet's fields around its values
        self.counter_frames: dict[tuple[Any, ...], tuple[bytes, bytes]] = {}
        self.sequence_event = self.sequence_field + _TRACK_EVENT
        # The packet being encoded interned something (it goes in its interned_data).
        self.interned = False
        # A packet can be written the usual way (_packet): after the group's first (its
        # flags said), its time a delta on a running clock.
        self.steady = False
        # What the packet being encoded interns, per InternedData field.
        self.pending: tuple[list[bytes], ...] = ([], [], [], [])
        self.annotation, self.entries, self._forget = annotation_encoder(
            self.annotation_name_fields,
            self._annotation_name,
            self.string_fields,
            self._string_value,
            unique,
        )
        # The arguments of responses and tools straight from the model (direct.py): a
        # builder wrapped in a partial (layout/tracks.py) is encoded without its dict.
        # `direct` off: every slice's dict the generic way (the tests' reference).
        self.direct_args = DirectArgs(
            Items(
                self.entries,
                self._name_field,
                self.string_fields,
                self._string_field,
                unique,
            )
        )
        self.direct = self.direct_args.by_builder if direct else {}

    def close(self) -> None:
        """Let the encoder's tables go with it once it is done, by refcounting: its
        annotation functions call each other and call back into it, and `direct_args`
        keeps its own methods, cycles only the cycle collector would free (a folder's
        export left about 460 objects a group, with the group's interned texts, for the
        young collections to walk). Nothing is encoded after this."""
        self._forget()
        self.direct_args.by_builder.clear()
        del self.annotation, self.entries, self.direct_args, self.direct

    # ---------------------------------------------------------------- interning

    def _intern(self, table: int, text: str) -> bytes:
        """Intern `text` in `table` (its entry goes in the packet's interned_data);
        returns its iid as a varint, which the field that refers to it ends with."""
        entries = self.tables[table]
        iid = entries[text] = len(entries) + 1
        data = text.encode()
        size = len(data)
        number = _BYTE[iid] if iid < 0x80 else varint(iid)
        length = _BYTE[size] if size < 0x80 else varint(size)
        # The entry (iid = 1, text = 2) framed with its InternedData field, in one join:
        # a long session interns thousands of call ids.
        entry = len(number) + len(length) + size + 2
        self.pending[table].append(
            b"".join(
                (
                    _INTERNED_TAGS[table],
                    _BYTE[entry] if entry < 0x80 else varint(entry),
                    b"\x08",
                    number,
                    b"\x12",
                    length,
                    data,
                )
            )
        )
        self.interned = True
        return number

    def _annotation_name(self, name: str) -> bytes:
        """A new annotation name's `name_iid` field (interned here)."""
        field = self.annotation_name_fields[name] = NAME_IID_KEY + self._intern(
            _ANNOTATION_NAMES, name
        )
        return field

    def _string_value(self, value: str) -> bytes:
        """A new short string's `string_value_iid` field (interned here)."""
        field = self.string_fields[value] = STRING_IID_KEY + self._intern(_STRING_VALUES, value)
        return field

    def _name_field(self, name: str) -> bytes:
        """An annotation name's `name_iid` field, interned on first use."""
        field = self.annotation_name_fields.get(name)
        return field if field is not None else self._annotation_name(name)

    def _string_field(self, value: str) -> bytes:
        """A short string's `string_value_iid` field, interned on first use."""
        field = self.string_fields.get(value)
        return field if field is not None else self._string_value(value)

    def _category(self, category: str) -> bytes:
        field = self.category_fields.get(category)
        if field is None:
            field = _CATEGORY_IID + self._intern(_EVENT_CATEGORIES, category)
            self.category_fields[category] = field
        return field

    def _name(self, name: str) -> bytes:
        field = self.name_fields.get(name)
        if field is None:
            field = _NAME_IID + self._intern(_EVENT_NAMES, name)
            self.name_fields[name] = field
        return field

    # ---------------------------------------------------------------- packets

    def _packet(self, ts: int, event: bytes) -> bytes:
        """The packet of one TrackEvent (its body `event`) at `ts`, with what it interned,
        as a Trace record (after the clock snapshot that must come first, if any)."""
        clock = self.clock
        if self.steady and ts >= clock.last:  # type: ignore[operator]
            # Most packets: a delta on a running clock, the sequence's flags as before.
            # One join, small lengths from a table: varint() was a tenth of the writer's
            # bytecodes, most of it for one-byte values.
            delta = ts - clock.last  # type: ignore[operator]
            clock.last = ts
            size = len(event)
            packet = b"".join(
                (
                    _TIMESTAMP,
                    _BYTE[delta] if delta < 0x80 else varint(delta),
                    self.sequence_event,
                    _BYTE[size] if size < 0x80 else varint(size),
                    event,
                    self._interned_data() if self.interned else b"",
                    _FLAGS,
                )
            )
            self.packets += 1
            size = len(packet)
            return (_RECORD_BYTE[size] if size < 0x80 else b"\x0a" + varint(size)) + packet
        # Not steady: the group's first packet, a time before the clock's last (a new
        # clock starts there), or every clock id used (absolute times from then on).
        snapshot = b""
        if clock.absolute:
            stamp, suffix = _TIMESTAMP + varint(ts), b""
        else:
            stamp, suffix, snapshot = clock.restart(ts)
        parts = [stamp, self.sequence_field, _TRACK_EVENT, varint(len(event)), event]
        if self.interned:
            parts.append(self._interned_data())
        parts.append(self.flags)
        self.flags = _FLAGS
        self.steady = not clock.absolute
        if suffix:
            parts.append(suffix)
        packet = b"".join(parts)
        self.packets += 2 if snapshot else 1
        return snapshot + b"\x0a" + varint(len(packet)) + packet

    def _interned_data(self) -> bytes:
        """The packet's `interned_data` field: what it interned, grouped by field."""
        pending = self.pending
        interned = b"".join([*pending[0], *pending[1], *pending[2], *pending[3]])
        self.pending = ([], [], [], [])
        self.interned = False
        return _INTERNED_DATA + varint(len(interned)) + interned

    def _track(self, uuid: int) -> bytes:
        """A track's `track_uuid` field (kept: one per track, on most packets)."""
        field = self.track_fields.get(uuid)
        if field is None:
            field = self.track_fields[uuid] = _TRACK_UUID + varint(uuid)
        return field

    def begin(self, ts: int, slice_: LaidSlice) -> bytes:
        """A slice's begin, or an instant: category, arguments, name, track, flows."""
        source = slice_.args_source
        direct = self.direct.get(source.func) if type(source) is partial else None
        if direct is not None:
            args = direct(*source.args, **source.keywords)  # type: ignore[union-attr]
        elif source is self.last_dict:
            args = self.last_dict_bytes
        else:
            args = self.entries(slice_.args, _ANNOTATION)
            if type(source) is dict:
                # A track's constant arguments ({"kind": "turn"} on every turn of a Pi
                # or Codex session) are the same dict each time: encoded once. A layout
                # changes no slice once made, and the reference keeps the dict alive.
                self.last_dict, self.last_dict_bytes = source, args
        # The fields kept per text and track, looked up here rather than through a
        # method each (with write_group's bound methods: Pi 5 MB, 10 M instructions).
        parts = [
            self.category_fields.get(slice_.category) or self._category(slice_.category),
            args,
            _TYPE_INSTANT if slice_.instant else _TYPE_BEGIN,
            self.name_fields.get(slice_.name) or self._name(slice_.name),
            self.track_fields.get(slice_.track_uuid) or self._track(slice_.track_uuid),
        ]
        for flow in slice_.flows:
            parts += (_FLOW_ID, _pack_fixed64(flow))
        return self._packet(ts, b"".join(parts))

    def end(self, ts: int, track_uuid: int) -> bytes:
        """A slice's end: its packet after the time is the same for every slice of the
        track (once the group's first event has been written)."""
        clock = self.clock
        if self.steady and ts >= clock.last:  # type: ignore[operator]
            rest = self.ends.get(track_uuid)
            if rest is None:
                event = _TYPE_END + self._track(track_uuid)
                rest = self.ends[track_uuid] = (
                    self.sequence_event + _BYTE[len(event)] + event + _FLAGS
                )
            delta = ts - clock.last  # type: ignore[operator]
            clock.last = ts
            self.packets += 1
            packet = _TIMESTAMP + (_BYTE[delta] if delta < 0x80 else varint(delta)) + rest
            # at most 1 + 10 + 28 bytes (a ten-byte sequence id, track uuid and delta)
            return _RECORD_BYTE[len(packet)] + packet
        return self._packet(ts, _TYPE_END + self._track(track_uuid))

    def counters(self, ts: int, category: str, values: dict[int, int]) -> bytes:
        """Counter values at one time: the first as the event's own value, the rest as
        extra counter values (≤ 8: the caller splits larger sets). What does not depend
        on the values (the category, the type and the tracks) is kept per set of tracks:
        a session's packets draw on a dozen sets or so (a request's start, its end …)."""
        key = (category, *values)
        frame = self.counter_frames.get(key)
        if frame is None:
            frame = self._counter_frame(key)
        own, *extra = values.values()
        if not extra:
            return self._packet(ts, frame[0] + _COUNTER_VALUE + varint(own))
        parts = [frame[0]]
        for value in extra:
            parts += (_EXTRA_VALUE, varint(value))
        parts += (_COUNTER_VALUE, varint(own), frame[1])
        return self._packet(ts, b"".join(parts))

    def _counter_frame(self, key: tuple[Any, ...]) -> tuple[bytes, bytes]:
        """A counter packet's fields before its values (category, type, its own track)
        and after them (the extra values' tracks), for (category, *track uuids)."""
        if len(self.counter_frames) >= _MAX_FRAMES:
            self.counter_frames.clear()
        category, own, *extra = key
        head = self._category(category) + _TYPE_COUNTER + self._track(own)
        tail = b"".join([_EXTRA_TRACK + varint(uuid) for uuid in extra])
        frame = self.counter_frames[key] = (head, tail)
        return frame
