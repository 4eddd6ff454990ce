"""The rare packets the writer encodes by hand (writers/packets.py: clock snapshots, track
descriptors, trace attributes) are the bytes protobuf's own serialiser gives for the same
fields, in every combination of the fields a track may leave unsaid."""

from __future__ import annotations

import itertools

import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from agent_profiler.layout import Merge, Track, TrackKind
from agent_profiler.writers.packets import (
    clock_snapshot,
    trace_attributes_packet,
    track_descriptor_packet,
)

_MERGE = {
    Merge.NONE: pb.TrackDescriptor.SIBLING_MERGE_BEHAVIOR_NONE,
    Merge.BY_NAME: pb.TrackDescriptor.SIBLING_MERGE_BEHAVIOR_BY_TRACK_NAME,
}


def _expected(track: Track, sequence: int) -> bytes:
    packet = pb.TracePacket(trusted_packet_sequence_id=sequence)
    descriptor = packet.track_descriptor
    descriptor.uuid, descriptor.name = track.uuid, track.name
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
    return packet.SerializeToString()


_TRACKS = [
    Track(
        uuid=uuid,
        name=name,
        kind=kind,
        parent=parent,
        order_rank=rank,
        explicit_child_order=explicit,
        merge=merge,
        description=description,
        counter_unit="tokens" if kind is TrackKind.COUNTER else "",
        share_key=share if kind is TrackKind.COUNTER else "",
    )
    for (uuid, name, kind, parent, rank, explicit, merge, description, share) in itertools.product(
        (1, 2**63 + 5),
        ("Context size", "Prompts · é ✓"),
        tuple(TrackKind),
        (None, 0, 3_000_000),
        (None, 0, 7, -2),
        (False, True),
        (None, *Merge),
        ("", "what it measures"),
        ("", "llm.context.tokens"),
    )
]


@pytest.mark.parametrize("sequence", [1, 300])
def test_a_track_descriptor_packet_is_protobuf_s_bytes(sequence: int) -> None:
    mismatched = [
        track
        for track in _TRACKS
        if track_descriptor_packet(sequence, track) != _expected(track, sequence)
    ]
    assert not mismatched, mismatched[:3]


@pytest.mark.parametrize("timestamp", [0, 1, 1_767_225_600_000_000_000])
def test_a_clock_snapshot_is_protobuf_s_bytes(timestamp: int) -> None:
    clocks = ((64, timestamp, True), (1, timestamp, False), (6, timestamp, False))
    packet = pb.TracePacket(trusted_packet_sequence_id=2)
    snapshot = packet.clock_snapshot
    snapshot.primary_trace_clock = pb.BUILTIN_CLOCK_REALTIME
    snapshot.clocks.add(clock_id=64, timestamp=timestamp, is_incremental=True)
    snapshot.clocks.add(clock_id=1, timestamp=timestamp)
    snapshot.clocks.add(clock_id=6, timestamp=timestamp)
    assert clock_snapshot(2, clocks) == packet.SerializeToString()


def test_the_trace_attributes_are_protobuf_s_bytes() -> None:
    attributes = {"tool": "agent-profiler", "sessions": "3", "empty": "", "naïve": "✓"}
    packet = pb.TracePacket(trusted_packet_sequence_id=1)
    for key, value in attributes.items():
        packet.trace_attributes.attribute.add(key=key, string_value=value)
    assert trace_attributes_packet(1, attributes) == packet.SerializeToString()


def test_an_export_does_not_import_protobuf(tmp_path: object) -> None:
    """Start-up: the writer needs no protobuf module, so a small export does not load it."""
    import subprocess
    import sys

    from shared_paths import REPO

    journal = REPO / "tests/data/journals/claude-code"
    sample = next(p for p in sorted(journal.rglob("*.jsonl")) if p.stat().st_size < 200_000)
    code = (
        "import sys\n"
        "sys.argv = ['agent-profiler', 'export', sys.argv[1], '-o', sys.argv[2], '--force']\n"
        "from agent_profiler.entry import main\n"  # (it returns; the console script leaves)
        "try:\n    main()\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('google.protobuf')))"
    )
    out = str(tmp_path) + "/t.pftrace"  # type: ignore[operator]
    done = subprocess.run(
        [sys.executable, "-c", code, str(sample), out], capture_output=True, text=True, check=False
    )
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout + done.stderr
