"""The trace's rare packets as bytes: clock snapshots, track descriptors and the trace
attributes. They are few (one per track, one per delta clock), but building them as
protobuf objects meant importing protobuf on every export, which cost more start-up time
than the rest of an export of a small journal (docs/performance.md, start-up). Fields are
written in field-number order, as protobuf's serialiser writes them, so the bytes are the
ones the objects gave (tests/writers/test_wire.py decodes and compares them).

Field numbers are those of perfetto/protos: trace_packet.proto (clock_snapshot 6,
trusted_packet_sequence_id 10, track_descriptor 60, trace_attributes 126),
clock_snapshot.proto, track_descriptor.proto, counter_descriptor.proto."""

from __future__ import annotations

from collections.abc import Iterable

from agent_profiler.layout import Merge, Track, TrackKind
from agent_profiler.writers.wire import VARINT, field_bytes, field_varint, tag

BUILTIN_CLOCK_REALTIME = 1  # builtin_clock.proto: the snapshot's primary clock

_CLOCK_SNAPSHOT = 6
_SEQUENCE_ID = 10
_TRACK_DESCRIPTOR = 60
_TRACE_ATTRIBUTES = 126

# TrackDescriptor enums (track_descriptor.proto)
_EXPLICIT = 3  # ChildTracksOrdering
_MERGE = {Merge.NONE: 2, Merge.BY_NAME: 1}  # SiblingMergeBehavior
_UNIT_UNSPECIFIED = 0  # CounterDescriptor.Unit, said explicitly (as the writer always has)


def clock_snapshot(sequence: int, clocks: Iterable[tuple[int, int, bool]]) -> bytes:
    """A TracePacket holding a ClockSnapshot of `clocks` ((clock id, timestamp, is
    incremental) each), REALTIME its primary clock, on `sequence`."""
    body = b"".join(
        field_bytes(
            1,
            field_varint(1, clock_id)
            + field_varint(2, timestamp)
            + (field_varint(3, 1) if incremental else b""),
        )
        for clock_id, timestamp, incremental in clocks
    )
    snapshot = body + field_varint(2, BUILTIN_CLOCK_REALTIME)
    return field_bytes(_CLOCK_SNAPSHOT, snapshot) + field_varint(_SEQUENCE_ID, sequence)


def track_descriptor(track: Track) -> bytes:
    """A layout track as a TrackDescriptor message; fields the layout leaves unsaid stay
    unset."""
    parts = [field_varint(1, track.uuid), field_bytes(2, track.name.encode())]
    if track.parent is not None:
        parts.append(field_varint(5, track.parent))
    if track.kind is TrackKind.COUNTER:
        counter = field_varint(3, _UNIT_UNSPECIFIED) + field_bytes(6, track.counter_unit.encode())
        if track.share_key:
            counter += field_bytes(7, track.share_key.encode())
        parts.append(field_bytes(8, counter))
    if track.explicit_child_order:
        parts.append(field_varint(11, _EXPLICIT))
    if track.order_rank is not None:
        # an int32: varint() sign-extends a negative rank to ten bytes, as protobuf does
        parts.append(field_varint(12, track.order_rank))
    if track.description:
        parts.append(field_bytes(14, track.description.encode()))
    if track.merge is not None:
        parts.append(tag(15, VARINT) + bytes((_MERGE[track.merge],)))
    return b"".join(parts)


def track_descriptor_packet(sequence: int, track: Track) -> bytes:
    """The TracePacket describing `track`, on `sequence`."""
    return field_varint(_SEQUENCE_ID, sequence) + field_bytes(
        _TRACK_DESCRIPTOR, track_descriptor(track)
    )


def trace_attributes_packet(sequence: int, attributes: dict[str, str]) -> bytes:
    """The TracePacket of the trace attributes (string values), on `sequence`."""
    body = b"".join(
        field_bytes(1, field_bytes(1, key.encode()) + field_bytes(3, value.encode()))
        for key, value in attributes.items()
    )
    return field_varint(_SEQUENCE_ID, sequence) + field_bytes(_TRACE_ATTRIBUTES, body)
