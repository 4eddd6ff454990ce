"""The writer's cut-down Perfetto schema (scripts/trace_schema.py) stays in step with the
full one: the committed module is what the script writes, and a packet the writer builds
serialises to the bytes the full schema's class gives for the same fields."""

from __future__ import annotations

import subprocess
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as full

from agent_profiler.writers import _trace_pb2 as cut
from shared_paths import REPO

ROOT = REPO


def test_the_module_is_what_the_script_writes() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "trace_schema.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_a_packet_has_the_full_schema_s_bytes_both_ways() -> None:
    packet = cut.TracePacket(timestamp=1_700_000_000_000_000_000, trusted_packet_sequence_id=7)
    packet.sequence_flags = cut.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
    event = packet.track_event
    event.type = cut.TrackEvent.TYPE_SLICE_BEGIN
    event.track_uuid = 3
    event.name_iid = 2
    event.category_iids.append(1)
    event.flow_ids.append(2**63 + 5)
    note = event.debug_annotations.add(name_iid=4)
    entry = note.dict_entries.add(name_iid=5, int_value=-3)
    entry = note.dict_entries.add(name_iid=6)
    entry.array_values.add(string_value_iid=1)
    entry.array_values.add(double_value=0.5)
    packet.interned_data.debug_annotation_string_values.add(iid=1, str=b"x")
    packet.interned_data.event_names.add(iid=2, name="response")
    data = packet.SerializeToString()
    assert full.TracePacket.FromString(data).SerializeToString() == data
    descriptor = full.TracePacket(trusted_packet_sequence_id=7)
    track = descriptor.track_descriptor
    track.uuid, track.name, track.parent_uuid = 9, "Context size", 2
    track.sibling_merge_behavior = full.TrackDescriptor.SIBLING_MERGE_BEHAVIOR_BY_TRACK_NAME
    track.counter.unit = full.CounterDescriptor.UNIT_UNSPECIFIED
    track.counter.unit_name = "tokens"
    data = descriptor.SerializeToString()
    assert cut.TracePacket.FromString(data).SerializeToString() == data
