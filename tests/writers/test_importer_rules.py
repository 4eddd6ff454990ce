"""importer_rules.py: each of Perfetto's importer rules fires on a small hand-made trace
that breaks it (and stays quiet on its well-formed twin), and real exports break none.

Where trace_processor_shell is available, the broken traces also go through the real
importer, which must record the same stats (test_the_real_importer_records_the_same_stats);
without it that test skips with realtp's reason and the rest still run."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from typer.testing import CliRunner

from agent_profiler.cli import app
from importer_rules import STATS, check_import_rules, problems, replay, summary
from realtp import BINARY, SKIP_REASON, run_query
from shared_paths import CORPUS, SHARED_REASON, TESTS

pytestmark = pytest.mark.importer_broken  # the traces below break the rules on purpose

DATA = TESTS / "data" / "journals"
REALTIME, BOOTTIME = 1, 6
SEQ = 7
T0 = 1_700_000_000_000_000_000


class Trace:
    """A small TrackEvent trace on one sequence, built packet by packet."""

    def __init__(self, *, snapshot: bool = True, cleared: bool = True) -> None:
        self.trace = pb.Trace()
        self.cleared = not cleared  # True once a packet has cleared the sequence's state
        if snapshot:
            packet = self.trace.packet.add(trusted_packet_sequence_id=SEQ)
            packet.clock_snapshot.primary_trace_clock = REALTIME
            packet.clock_snapshot.clocks.add(clock_id=REALTIME, timestamp=T0)
            packet.clock_snapshot.clocks.add(clock_id=BOOTTIME, timestamp=T0)

    def packet(self, **fields: Any) -> Any:
        packet = self.trace.packet.add(trusted_packet_sequence_id=SEQ, **fields)
        if not self.cleared:
            packet.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
            self.cleared = True
        return packet

    def track(self, uuid: int, name: str, parent: int = 0, **fields: Any) -> Any:
        descriptor = self.packet().track_descriptor
        descriptor.uuid = uuid
        descriptor.name = name
        if parent:
            descriptor.parent_uuid = parent
        for key, value in fields.items():
            setattr(descriptor, key, value)
        return descriptor

    def counter_track(self, uuid: int, name: str, parent: int = 0) -> None:
        self.track(uuid, name, parent).counter.unit_name = "tokens"

    def event(self, ts: int, kind: int, track: int, name: str = "", **fields: Any) -> Any:
        packet = self.packet(timestamp=T0 + ts, timestamp_clock_id=REALTIME)
        event = packet.track_event
        event.type = kind
        event.track_uuid = track
        if name:
            event.name = name
        for key, value in fields.items():
            getattr(event, key).extend(value) if isinstance(value, list) else setattr(
                event, key, value
            )
        return packet

    def begin(self, ts: int, track: int, name: str = "s", **fields: Any) -> Any:
        return self.event(ts, pb.TrackEvent.TYPE_SLICE_BEGIN, track, name, **fields)

    def end(self, ts: int, track: int, **fields: Any) -> Any:
        return self.event(ts, pb.TrackEvent.TYPE_SLICE_END, track, **fields)

    def counter(self, ts: int, track: int, value: int, extra: Iterable[tuple[int, int]] = ()):  # type: ignore[no-untyped-def]
        packet = self.event(ts, pb.TrackEvent.TYPE_COUNTER, track, counter_value=value)
        for uuid, extra_value in extra:
            packet.track_event.extra_counter_track_uuids.append(uuid)
            packet.track_event.extra_counter_values.append(extra_value)
        return packet

    def bytes(self) -> bytes:
        return self.trace.SerializeToString()


def names(trace: Trace | bytes) -> dict[str, int]:
    return summary(check_import_rules(trace.bytes() if isinstance(trace, Trace) else trace))


def with_counters(count: int) -> Trace:
    trace = Trace()
    trace.track(1, "capture")
    for uuid in range(10, 10 + count):
        trace.counter_track(uuid, f"c{uuid}", 1)
    return trace


# ---------------------------------------------------------------------------------------------
# counters and their extra values
# ---------------------------------------------------------------------------------------------


def test_eight_extra_counter_values_import_and_nine_drop_the_whole_event() -> None:
    eight = with_counters(9)
    eight.counter(0, 10, 5, [(uuid, 1) for uuid in range(11, 19)])
    assert names(eight) == {}
    nine = with_counters(10)
    nine.counter(0, 10, 5, [(uuid, 1) for uuid in range(11, 20)])
    assert names(nine) == {"track_event_extra_counter_exceeds_max": 1}
    # the dropped event takes its own counter value with it
    assert replay(nine.bytes()).events == []


def test_a_zero_among_extra_counter_values_zeroes_every_one_after_it() -> None:
    # Perfetto keeps extra values up to the first 0 in the sorter and reads the rest as 0.
    trace = with_counters(4)
    trace.counter(0, 10, 5, [(11, 1), (12, 0), (13, 7)])
    found = check_import_rules(trace.bytes())
    assert [f.name for f in found] == ["extra_counter_value_zeroed"]
    assert "[1.0, 0.0, 7.0] import as [1.0, 0.0, 0]" in found[0].detail
    zeros_last = with_counters(4)
    zeros_last.counter(0, 10, 5, [(11, 1), (13, 7), (12, 0)])
    assert names(zeros_last) == {}
    # the event's own value is not an extra value: a 0 there loses nothing
    own_zero = with_counters(4)
    own_zero.counter(0, 10, 0, [(11, 1), (13, 7)])
    assert names(own_zero) == {}


def test_extra_values_need_as_many_counter_track_uuids() -> None:
    fewer = with_counters(3)
    packet = fewer.counter(0, 10, 5, [(11, 1)])
    packet.track_event.extra_counter_values.append(2)
    assert names(fewer) == {"track_event_extra_counter_track_uuid_mismatch": 1}
    none = with_counters(2)
    none.counter(0, 10, 5).track_event.extra_counter_values.append(2)
    assert names(none) == {"track_event_extra_counter_missing_track_uuids": 1}
    # ... which may come from the sequence's defaults
    defaults = with_counters(2)
    packet = defaults.counter(0, 10, 5)
    packet.trace_packet_defaults.track_event_defaults.extra_counter_track_uuids.append(11)
    packet.track_event.extra_counter_values.append(2)
    assert names(defaults) == {}


def test_an_extra_value_on_a_slice_track_drops_the_event() -> None:
    trace = with_counters(1)
    trace.track(2, "slices", 1)
    trace.counter(0, 10, 5, [(2, 1)])
    assert names(trace) == {"track_event_extra_counter_invalid_track": 1}


def test_counter_samples_need_their_descriptor_first() -> None:
    late = Trace()
    late.track(1, "capture")
    late.counter(0, 10, 5)
    late.counter_track(10, "c", 1)
    assert names(late) == {"track_event_counter_invalid_track_uuid": 1}
    on_time = Trace()
    on_time.track(1, "capture")
    on_time.counter_track(10, "c", 1)
    on_time.counter(0, 10, 5)
    assert names(on_time) == {}
    no_value = Trace()
    no_value.counter_track(10, "c")
    no_value.event(0, pb.TrackEvent.TYPE_COUNTER, 10)
    assert names(no_value) == {"track_event_counter_missing_value": 1}


# ---------------------------------------------------------------------------------------------
# tracks
# ---------------------------------------------------------------------------------------------


def test_a_uuid_declared_twice_as_different_tracks_keeps_the_first() -> None:
    trace = Trace()
    trace.track(1, "capture")
    trace.track(2, "other")
    trace.track(3, "Tools", 1)
    trace.track(3, "Tools", 2)  # same uuid, another parent: another track
    assert names(trace) == {"track_descriptor_conflicting_reservation": 1}
    renamed = Trace()
    renamed.track(1, "capture")
    renamed.track(3, "Tools", 1)
    renamed.track(3, "Responses", 1)  # same track, another name: the first name stays
    found = check_import_rules(renamed.bytes())
    assert [f.name for f in found] == ["track_uuid_redeclared"]
    assert "the track is named 'Tools'" in found[0].detail


def test_same_named_siblings_merge_unless_they_opt_out() -> None:
    trace = Trace()
    trace.track(1, "capture")
    trace.track(2, "Tools", 1)
    trace.track(3, "Tools", 1)
    found = check_import_rules(trace.bytes())
    assert [(f.name, f.severity) for f in found] == [("sibling_tracks_merged", "note")]
    assert "2 by default" in found[0].detail
    assert problems(trace.bytes()) == []  # a merge loses nothing: a note, not a problem
    apart = Trace()
    apart.track(1, "capture")
    none = pb.TrackDescriptor.SIBLING_MERGE_BEHAVIOR_NONE
    apart.track(2, "agentprof.capture", 1, sibling_merge_behavior=none)
    apart.track(3, "agentprof.capture", 1, sibling_merge_behavior=none)
    apart.counter_track(4, "Context size", 1)  # counters never merge
    apart.counter_track(5, "Context size", 1)
    assert names(apart) == {}


def test_track_ancestors_must_be_declared_and_not_loop() -> None:
    orphan = Trace()
    orphan.track(2, "Tools", 99)
    assert names(orphan) == {"track_hierarchy_missing_uuid": 1}
    loop = Trace()
    loop.track(2, "a", 3)
    loop.track(3, "b", 2)
    assert names(loop) == {"track_event_track_hierarchy_loop": 2}
    missing = Trace()
    missing.packet().track_descriptor.name = "no uuid"
    assert names(missing) == {"track_descriptor_missing_uuid": 1}


# ---------------------------------------------------------------------------------------------
# slices and flows
# ---------------------------------------------------------------------------------------------


def test_slices_nest_per_track_by_begin_and_end() -> None:
    trace = Trace()
    trace.track(2, "Tools")
    trace.begin(0, 2, "outer")
    trace.begin(1, 2, "inner")
    trace.end(2, 2)
    trace.end(3, 2)
    assert names(trace) == {}
    stray = Trace()
    stray.track(2, "Tools")
    stray.end(1, 2)  # an END with nothing open: ignored, with no stat
    stray.begin(2, 2, "open")  # a BEGIN never ended: "Did not end"
    assert names(stray) == {"slice_end_without_begin": 1, "slice_never_ended": 1}
    deep = Trace()
    deep.track(2, "Tools")
    for depth in range(513):
        deep.begin(depth, 2, f"d{depth}")
    for depth in range(513):
        deep.end(1000 + depth, 2)
    found = names(deep)
    assert found["slice_max_depth_exceeded"] == 1
    assert found["slice_end_without_begin"] == 1  # the deepest END finds nothing open


def test_an_end_named_otherwise_closes_nothing() -> None:
    # An END matches the innermost open slice of its name; set even to "", a name counts.
    trace = Trace()
    trace.track(2, "Tools")
    trace.begin(0, 2, "tool")
    trace.end(1, 2).track_event.name = ""
    assert names(trace) == {"slice_end_without_begin": 1, "slice_never_ended": 1}


def test_an_end_closes_the_innermost_open_slice_in_time_order() -> None:
    # Written out of order in the file, sorted by time by the importer: still nested.
    trace = Trace()
    trace.track(2, "Tools")
    trace.end(3, 2)
    trace.begin(0, 2, "outer")
    trace.end(2, 2)
    trace.begin(1, 2, "inner")
    assert names(trace) == {}


def test_flow_ids_pair_two_slices_and_terminating_ids_need_an_open_flow() -> None:
    paired = Trace()
    paired.track(2, "Prompts")
    paired.track(3, "Responses")
    paired.begin(0, 2, "prompt", flow_ids=[42])
    paired.end(1, 2)
    paired.begin(2, 3, "response", terminating_flow_ids=[42])
    paired.end(3, 3)
    assert names(paired) == {}
    alone = Trace()
    alone.track(2, "Prompts")
    alone.begin(0, 2, "prompt", flow_ids=[42])
    alone.end(1, 2)
    assert names(alone) == {"flow_unpaired": 1}
    backwards = Trace()  # the terminating side comes first in time: the flow never begins
    backwards.track(2, "Prompts")
    backwards.begin(0, 2, "response", terminating_flow_ids=[42])
    backwards.end(1, 2)
    backwards.begin(2, 2, "prompt", flow_ids=[42])
    backwards.end(3, 2)
    assert names(backwards) == {"flow_terminating_id_inactive": 1, "flow_unpaired": 1}


# ---------------------------------------------------------------------------------------------
# sequences, interning, defaults
# ---------------------------------------------------------------------------------------------


def interned_slice(trace: Trace, ts: int, *, flags: int, name_iid: int = 1) -> Any:
    packet = trace.begin(ts, 2, "")
    packet.sequence_flags |= flags
    packet.track_event.name_iid = name_iid
    return packet


def test_interned_data_needs_a_cleared_sequence() -> None:
    needs = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
    cleared = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    never_cleared = Trace(cleared=False)
    never_cleared.track(2, "Tools")
    packet = interned_slice(never_cleared, 0, flags=needs)
    packet.interned_data.event_names.add(iid=1, name="tool")
    assert names(never_cleared) == {
        "interned_data_skipped_incremental_state_invalid": 1,
        "packet_skipped_seq_needs_incremental_state_invalid": 1,
    }
    good = Trace(cleared=False)
    good.track(2, "Tools")
    packet = interned_slice(good, 0, flags=cleared | needs)
    packet.interned_data.event_names.add(iid=1, name="tool")
    good.end(1, 2).sequence_flags = needs
    assert names(good) == {}
    assert [e.name for e in replay(good.bytes()).events] == ["tool", None]


def test_clearing_the_state_forgets_interned_names_and_defaults() -> None:
    needs = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
    cleared = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    trace = Trace(cleared=False)
    trace.track(2, "Tools")
    packet = interned_slice(trace, 0, flags=cleared | needs)
    packet.interned_data.event_names.add(iid=1, name="tool")
    trace.end(1, 2).sequence_flags = needs
    interned_slice(trace, 2, flags=cleared | needs)  # iid 1 is gone with the old state
    trace.end(3, 2).sequence_flags = needs
    assert names(trace) == {"interned_event_name_missing": 1}


def test_unknown_interned_categories_and_annotation_names() -> None:
    trace = Trace()
    trace.track(2, "Tools")
    packet = trace.begin(0, 2, "tool")
    packet.track_event.category_iids.append(9)
    packet.track_event.debug_annotations.add(name_iid=5, uint_value=1)
    packet.track_event.debug_annotations.add(string_value="no name")
    packet.track_event.debug_annotations.add(name="key.with.dots", string_value_iid=4)
    trace.end(1, 2)
    assert names(trace) == {
        "interned_category_missing": 1,
        "track_event_parser_errors": 3,  # name_iid 5, no name, string_value_iid 4
        "annotation_name_renamed": 1,
    }


def test_track_events_need_a_sequence() -> None:
    trace = Trace()
    trace.track(2, "Tools")
    packet = trace.begin(0, 2)
    packet.ClearField("trusted_packet_sequence_id")
    assert names(trace) == {"track_event_missing_sequence_id": 1}


# ---------------------------------------------------------------------------------------------
# clocks
# ---------------------------------------------------------------------------------------------


def delta_trace(*, snapshot_first: bool = True) -> Trace:
    trace = Trace()
    trace.track(2, "Tools")

    def snapshot() -> None:
        clocks = trace.packet().clock_snapshot
        clocks.primary_trace_clock = REALTIME
        clocks.clocks.add(clock_id=64, timestamp=T0 + 100, is_incremental=True)
        clocks.clocks.add(clock_id=REALTIME, timestamp=T0 + 100)
        clocks.clocks.add(clock_id=BOOTTIME, timestamp=T0 + 100)

    if snapshot_first:
        snapshot()
    for delta, kind in ((0, pb.TrackEvent.TYPE_SLICE_BEGIN), (25, pb.TrackEvent.TYPE_SLICE_END)):
        packet = trace.packet(timestamp=delta, timestamp_clock_id=64)
        packet.track_event.type = kind
        packet.track_event.track_uuid = 2
        if delta == 0:
            packet.track_event.name = "tool"
    return trace


def test_delta_timestamps_on_a_sequence_clock_add_up_from_its_snapshot() -> None:
    trace = delta_trace()
    assert names(trace) == {}
    assert [e.ts for e in replay(trace.bytes()).events] == [T0 + 100, T0 + 125]


def test_a_sequence_clock_without_a_snapshot_loses_its_events() -> None:
    found = names(delta_trace(snapshot_first=False))
    assert found["clock_sync_failure_unknown_source_clock"] == 2
    assert found["clock_sync_failure_undeferrable_packet_loss"] == 2


def test_realtime_events_need_a_snapshot_relating_realtime() -> None:
    trace = Trace(snapshot=False)
    packet = trace.packet().clock_snapshot  # a snapshot of BOOTTIME alone
    packet.clocks.add(clock_id=BOOTTIME, timestamp=T0)
    trace.track(2, "Tools")
    trace.begin(0, 2)
    trace.end(1, 2)
    assert names(trace)["clock_sync_unrelatable_clock_domains"] == 2


def test_invalid_clock_snapshots() -> None:
    global_incremental = Trace()
    clocks = global_incremental.packet().clock_snapshot
    clocks.clocks.add(clock_id=REALTIME, timestamp=T0, is_incremental=True)
    clocks.clocks.add(clock_id=BOOTTIME, timestamp=T0)
    assert names(global_incremental) == {"invalid_clock_snapshots": 1}
    backwards = Trace()
    clocks = backwards.packet().clock_snapshot
    clocks.primary_trace_clock = REALTIME
    clocks.clocks.add(clock_id=REALTIME, timestamp=T0 - 5)  # the trace clock goes back
    clocks.clocks.add(clock_id=BOOTTIME, timestamp=T0 - 5)
    assert names(backwards) == {"invalid_clock_snapshots": 1}


def test_a_sequence_clock_that_goes_back_is_no_longer_a_source() -> None:
    trace = delta_trace()
    clocks = trace.packet().clock_snapshot  # clock 64 again, earlier: non-monotonic
    clocks.primary_trace_clock = REALTIME
    clocks.clocks.add(clock_id=64, timestamp=T0 + 50, is_incremental=True)
    clocks.clocks.add(clock_id=REALTIME, timestamp=T0 + 150)
    clocks.clocks.add(clock_id=BOOTTIME, timestamp=T0 + 150)
    packet = trace.packet(timestamp=10, timestamp_clock_id=64)
    packet.track_event.type = pb.TrackEvent.TYPE_INSTANT
    packet.track_event.track_uuid = 2
    assert names(trace)["clock_sync_failure_no_path"] == 1


# ---------------------------------------------------------------------------------------------
# compressed packets
# ---------------------------------------------------------------------------------------------


def compressed(trace: Trace) -> pb.Trace:
    bundle = pb.Trace()
    bundle.packet.add(compressed_packets=gzip.compress(trace.bytes()))
    return bundle


def test_compressed_packets_are_read_as_the_packets_they_hold() -> None:
    broken = with_counters(4)
    broken.counter(0, 10, 5, [(11, 0), (12, 3)])
    assert names(compressed(broken).SerializeToString()) == names(broken)
    assert names(compressed(delta_trace()).SerializeToString()) == {}
    corrupt = pb.Trace()
    corrupt.packet.add(compressed_packets=b"not gzip")
    assert names(corrupt.SerializeToString()) == {"import_error": 1}
    mixed = compressed(delta_trace())
    mixed.packet.add(zstd_compressed_packets=b"\x28\xb5\x2f\xfd")
    assert names(mixed.SerializeToString()) == {"import_error": 1}


def _bundle(*chunks: bytes, **fields: Any) -> bytes:
    """A trace of compressed_packets packets, one per chunk (zlib, as our writer makes)."""
    bundle = pb.Trace()
    for chunk in chunks:
        bundle.packet.add(compressed_packets=zlib.compress(chunk), **fields)
    return bundle.SerializeToString()


def test_a_bundle_holds_whole_packet_records() -> None:
    raw = delta_trace().bytes()
    assert names(_bundle(raw)) == {}
    # a packet cut at the bundle's end (the rest in the next bundle) fails the import
    assert names(_bundle(raw[:-3], raw[-3:])) == {"import_error": 1}
    # so does a record that is not a Trace.packet, which protobuf alone would keep as an
    # unknown field of the Trace
    other = raw + b"\x12\x01x"
    assert len(pb.Trace.FromString(other).packet) == len(pb.Trace.FromString(raw).packet)
    assert names(_bundle(other)) == {"import_error": 1}


def test_a_zlib_stream_cut_short_fails_the_import() -> None:
    deflated = zlib.compress(delta_trace().bytes())
    cut = pb.Trace()
    cut.packet.add(compressed_packets=deflated[:-4])  # without its checksum
    assert names(cut.SerializeToString()) == {"import_error": 1}


def test_fields_beside_compressed_packets_are_not_read() -> None:
    raw = delta_trace().bytes()
    found = names(_bundle(raw, trusted_packet_sequence_id=SEQ))
    assert found == {"compressed_packets_fields_ignored": 1}


def test_incremental_state_and_clocks_run_on_across_bundles() -> None:
    # GIVEN a trace whose clock snapshot and first events are in one bundle, the rest in
    # the next (a sequence's state, interning and delta clock, spans both)
    trace = delta_trace()
    frames = [p.SerializeToString() for p in trace.trace.packet]
    records = [b"\x0a" + _varint(len(f)) + f for f in frames]
    half = len(records) // 2
    split = _bundle(b"".join(records[:half]), b"".join(records[half:]))
    # THEN it imports as the plain trace does: no finding, the same events
    assert names(split) == {}
    assert replay(trace.bytes()).events
    assert replay(split).events == replay(trace.bytes()).events


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def test_bytes_that_are_not_a_trace() -> None:
    found = check_import_rules(b"\x0a\xff\xff")
    assert [(f.name, f.severity) for f in found] == [("import_error", "fatal")]


# ---------------------------------------------------------------------------------------------
# the real importer agrees, where it is available
# ---------------------------------------------------------------------------------------------


def _zeroed_extra() -> Trace:
    trace = with_counters(4)
    trace.counter(0, 10, 5, [(11, 1), (12, 0), (13, 7)])
    trace.counter(10, 10, 0, [(11, 0), (12, 0), (13, 0)])
    return trace


def _nine_extra() -> Trace:
    trace = with_counters(10)
    trace.counter(0, 10, 5, [(uuid, 1) for uuid in range(11, 20)])
    return trace


def _late_descriptor() -> Trace:
    trace = Trace()
    trace.counter(0, 10, 5)
    trace.counter_track(10, "c")
    return trace


def _conflicting() -> Trace:
    trace = Trace()
    trace.track(1, "a")
    trace.track(2, "b")
    trace.track(3, "Tools", 1)
    trace.track(3, "Tools", 2)
    return trace


BROKEN: dict[str, Callable[[], Trace]] = {
    "nine extra counters": _nine_extra,
    "a counter before its descriptor": _late_descriptor,
    "one uuid, two tracks": _conflicting,
    "a sequence clock without a snapshot": lambda: delta_trace(snapshot_first=False),
}


@pytest.mark.skipif(BINARY is None, reason=SKIP_REASON)
@pytest.mark.parametrize("case", list(BROKEN))
def test_the_real_importer_records_the_same_stats(case: str, tmp_path: Path) -> None:
    trace = tmp_path / "broken.pftrace"
    trace.write_bytes(BROKEN[case]().bytes())
    predicted = {name for name in names(trace.read_bytes()) if name in STATS}
    rows = run_query(trace, "SELECT name FROM stats WHERE value > 0")
    recorded = {row["name"] for row in rows}
    assert predicted and predicted <= recorded


@pytest.mark.skipif(BINARY is None, reason=SKIP_REASON)
def test_the_real_importer_zeroes_extra_values_after_a_zero(tmp_path: Path) -> None:
    trace = tmp_path / "zeroed.pftrace"
    trace.write_bytes(_zeroed_extra().bytes())
    rows = run_query(
        trace,
        "SELECT CAST(EXTRACT_ARG(t.source_arg_set_id, 'trace_id') AS INT) AS uuid, c.value "
        "FROM counter c JOIN track t ON t.id = c.track_id WHERE c.ts = "
        f"{T0} ORDER BY uuid",
    )
    assert {int(r["uuid"]): float(r["value"]) for r in rows} == {10: 5, 11: 1, 12: 0, 13: 0}


# ---------------------------------------------------------------------------------------------
# real exports break no rule
# ---------------------------------------------------------------------------------------------


def _export(tmp_path: Path, *journals: Path) -> bytes:
    out = tmp_path / "trace.pftrace"
    result = CliRunner().invoke(app, ["export", *map(str, journals), "-o", str(out), "--force"])
    assert result.exit_code == 0, result.output
    return out.read_bytes()


@pytest.mark.slow  # exports every bundled journal
@pytest.mark.parametrize("harness", sorted(p.name for p in DATA.iterdir() if p.is_dir()), ids=str)
def test_every_bundled_journal_of_a_harness_imports_cleanly(harness: str, tmp_path: Path) -> None:
    data = _export(tmp_path, DATA / harness)
    found = check_import_rules(data)
    assert [f for f in found if f.severity != "note"] == []
    # our lanes merge by name on purpose (layout.assign_tracks), never by default
    assert all("by default" not in f.detail for f in found if f.name == "sibling_tracks_merged")


@pytest.mark.slow
@pytest.mark.skipif(not CORPUS.is_dir(), reason=SHARED_REASON)
def test_the_whole_corpus_in_one_trace_imports_cleanly(tmp_path: Path) -> None:
    data = _export(tmp_path, CORPUS)
    imported = replay(data)
    assert problems(data) == []
    # the trace has counter events with extra values, and the rules saw them all
    assert len(imported.events) > 1000


def test_a_writer_that_packs_too_many_extra_values_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the writer's cap on extra counter values lifted (the regression this guards)
    from agent_profiler.writers import perfetto

    monkeypatch.setattr(perfetto, "MAX_EXTRA_COUNTERS", 64)
    # WHEN a journal with many counters at one time is exported
    data = _export(tmp_path, DATA / "claude-code")
    # THEN the importer check says Perfetto would drop those counter events
    assert names(data).get("track_event_extra_counter_exceeds_max", 0) > 0


def test_every_decoded_trace_is_checked_and_its_problems_reported() -> None:
    # GIVEN a trace Perfetto would drop a counter event of
    from contract import check_contract
    from traceview import IMPORT_PROBLEMS, load_trace

    trace = with_counters(10)
    trace.counter(0, 10, 5, [(uuid, 1) for uuid in range(11, 20)])
    IMPORT_PROBLEMS.clear()
    # WHEN any test decodes it
    view = load_trace(trace.bytes())
    # THEN conftest's fixture will see it (this module is marked importer_broken) and the
    # contract checklist lists it too
    (_, found), *_ = IMPORT_PROBLEMS
    assert any("track_event_extra_counter_exceeds_max" in line for line in found)
    assert any(line.startswith("importer: ") for line in check_contract(view))
    IMPORT_PROBLEMS.clear()
