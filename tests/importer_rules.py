"""Perfetto's importer rules, simulated: what `trace_processor` would record for a trace,
without the binary.

`check_import_rules(trace) -> list[Finding]` decodes a trace (bytes or a path) with the full
Perfetto schema (the `perfetto` package's `perfetto_trace_pb2`, of which the writer's
`_trace_pb2` is a cut: the full one also sees fields the writer never sets, such as
`compressed_packets`), replays the importer's bookkeeping (sequences and their incremental
state, interning, packet defaults, clock snapshots and delta clocks, track reservations,
counters and their extra values, slice stacks, flows) and returns what it would record.

Each `Finding` is named by the Perfetto stat the importer would increment
(`src/trace_processor/storage/stats.h`), with that stat's severity; a rule the importer applies
without recording anything (a value silently zeroed, two tracks silently merged, an END that
closes nothing) gets a name of ours and severity `silent`; a trace the importer refuses to
load gets `fatal`; a harmless silent change (an annotation key renamed) is a `note`.
`problems(trace)` is every finding but the notes, as one line each: what the suite asserts
empty for every trace it exports (tests/conftest.py).

Written from Perfetto's source at tag v58.2 (commit add693d8b338ba9599dbcbc3e300b1ab8c000897,
the `trace_processor_shell` the project measures against; the rules cited are unchanged at
commit ec5d16b14b743ba6063d720956d6d6af6610fd72, August 2026). Paths below are relative to
`src/trace_processor/` in that tree; "L123" is a line. No Perfetto code is copied: these are
the rules, restated. docs/importer-rules.md lists them with the same citations.
"""

from __future__ import annotations

import re
import zlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf.message import DecodeError
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

# Severities, from each stat's F(...) line in storage/stats.h (v58.2).
STATS: dict[str, tuple[str, int]] = {
    # name: (severity, line in storage/stats.h)
    "invalid_clock_snapshots": ("error", 155),
    "flow_duplicate_id": ("error", 225),
    "flow_no_enclosing_slice": ("error", 226),
    "flow_step_without_start": ("info", 227),
    "flow_end_without_start": ("info", 228),
    "track_event_parser_errors": ("info", 340),
    "track_hierarchy_missing_uuid": ("info", 348),
    "clock_sync_failure_unknown_source_clock": ("error", 367),
    "clock_sync_failure_no_path": ("error", 379),
    "clock_sync_unrelatable_clock_domains": ("error", 385),
    "clock_sync_failure_undeferrable_packet_loss": ("data_loss", 399),
    "misplaced_end_event": ("data_loss", 481),
    "slice_max_depth_exceeded": ("error", 794),
    "track_descriptor_missing_uuid": ("error", 800),
    "track_event_missing_sequence_id": ("error", 821),
    "track_event_missing_timestamp": ("error", 828),
    "track_event_invalid_timestamp": ("error", 836),
    "incremental_state_cleared_missing_sequence_id": ("error", 853),
    "trace_packet_defaults_missing_sequence_id": ("error", 867),
    "interned_data_missing_sequence_id": ("error", 873),
    "track_event_track_hierarchy_loop": ("error", 880),
    "track_descriptor_conflicting_reservation": ("error", 898),
    "track_event_counter_missing_track_uuid": ("error", 911),
    "track_event_counter_missing_value": ("error", 916),
    "track_event_counter_invalid_track_uuid": ("error", 921),
    "track_event_extra_counter_missing_track_uuids": ("error", 925),
    "track_event_extra_counter_track_uuid_mismatch": ("error", 934),
    "track_event_extra_counter_exceeds_max": ("error", 938),
    "track_event_extra_counter_invalid_track": ("error", 942),
    "packet_skipped_seq_needs_incremental_state_invalid": ("notice", 974),
    "interned_data_skipped_incremental_state_invalid": ("notice", 981),
}

# Rules the importer applies without a stat: our names (docs/importer-rules.md).
SILENT = {
    "extra_counter_value_zeroed",
    "track_uuid_redeclared",
    "slice_end_without_begin",
    "slice_never_ended",
    "flow_unpaired",
    "flow_terminating_id_inactive",
    "interned_event_name_missing",
    "interned_category_missing",
    "compressed_packets_fields_ignored",
}
NOTES = {"annotation_name_renamed", "sibling_tracks_merged"}
FATAL = "import_error"

# common/parser_types.h L172: TrackEventData holds at most 8 extra counter values.
MAX_EXTRA_COUNTERS = 8
# common/slice_tracker.h L43: a track's slice stack is at most 512 deep.
MAX_SLICE_DEPTH = 512
# ClockId::IsSequenceClock: ids 64..127 are scoped to their packet sequence
# (importers/proto/proto_trace_reader.cc L727, L521).
SEQUENCE_CLOCKS = range(64, 128)
CLOCK_BOOTTIME = 6
_RENAMED = re.compile(r"[.\[\]]")

_CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
_NEEDS = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
_BY_NAME = {
    pb.TrackDescriptor.SIBLING_MERGE_BEHAVIOR_UNSPECIFIED,
    pb.TrackDescriptor.SIBLING_MERGE_BEHAVIOR_BY_TRACK_NAME,
}


@dataclass(frozen=True)
class Finding:
    """One thing the importer would record (or do silently), with where it happened."""

    name: str
    severity: str
    detail: str

    def __str__(self) -> str:
        return f"importer {self.severity} {self.name}: {self.detail}"


def problems(trace: bytes | Path | Any) -> list[str]:
    """Every finding that changes or drops data (all but notes), one line each."""
    return [str(f) for f in check_import_rules(trace) if f.severity != "note"]


def check_import_rules(trace: bytes | Path | Any) -> list[Finding]:
    """What the importer would record for `trace`: raw bytes, a path, or an already parsed
    `perfetto_trace_pb2.Trace` (traceview.load_trace hands over the one it decoded)."""
    return replay(trace).findings


def replay(trace: bytes | Path | Any) -> _Importer:
    """The replayed import itself: its findings, and the track events it kept (`events`,
    with their trace times) for tests of the bookkeeping."""
    importer = _Importer()
    if isinstance(trace, pb.Trace):
        importer.run_parsed(trace)
    else:
        importer.run(trace.read_bytes() if isinstance(trace, Path) else trace)
    return importer


# ---------------------------------------------------------------------------------------------
# state
# ---------------------------------------------------------------------------------------------


@dataclass
class _Sequence:
    """One packet sequence's incremental state (importers/proto/packet_sequence_state_*)."""

    # packet_sequence_state_builder.h L71-74: a sequence starts with its incremental state
    # invalid ("we assume that we missed some packets"), until a packet clears it.
    valid: bool = False
    interned: dict[str, dict[int, str]] = field(default_factory=lambda: defaultdict(dict))
    defaults: Any = None  # the latest TracePacketDefaults, or None
    counter_totals: dict[int, float] = field(default_factory=dict)  # incremental counters

    def clear(self) -> None:
        # packet_sequence_state_generation.cc L86-98 (OnIncrementalStateCleared): interned
        # data, custom state and the packet defaults all start afresh, and the state is valid.
        self.valid = True
        self.interned = defaultdict(dict)
        self.defaults = None
        self.counter_totals = {}


@dataclass
class _Reservation:
    """A track descriptor as the importer reserves it (track_event_tracker.h L60-121)."""

    uuid: int
    parent: int
    pid: int | None
    tid: int | None
    is_counter: bool
    merge: int
    merge_key: str
    counter: tuple[Any, ...] | None  # category, unit_multiplier, is_incremental, share key
    name: str | None
    packet: int

    def same_track(self, other: _Reservation) -> bool:
        # track_event_tracker.h L108-121 (IsForSameTrack): the name is not compared.
        return (
            self.parent,
            self.pid,
            self.tid,
            self.is_counter,
            self.merge_kind,
            self.merge_key,
            self.counter,
        ) == (
            other.parent,
            other.pid,
            other.tid,
            other.is_counter,
            other.merge_kind,
            other.merge_key,
            other.counter,
        )

    @property
    def merge_kind(self) -> str:
        # importers/proto/track_event_tokenizer.cc L200-224: UNSPECIFIED and BY_TRACK_NAME
        # both mean "by name"; track_event_tracker.h L103: a descriptor that does not say
        # is "by name" too.
        if self.merge in _BY_NAME:
            return "name"
        if self.merge == pb.TrackDescriptor.SIBLING_MERGE_BEHAVIOR_NONE:
            return "none"
        return "key"


@dataclass
class _Event:
    """A track event after tokenizing: resolved strings, absolute time, file position."""

    ts: int
    packet: int
    sequence: int
    type: int
    track: int
    name: str | None
    category: str | None
    flow_ids: tuple[int, ...]
    terminating: tuple[int, ...]


@dataclass
class _Clock:
    """A clock domain (util/clock_synchronizer.h L380-400)."""

    incremental: bool
    unit: int
    last_ns: int = 0
    snapshots: dict[tuple[Any, ...], list[tuple[int, int]]] = field(default_factory=dict)


class _Importer:
    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.sequences: dict[int, _Sequence] = defaultdict(_Sequence)
        self.tracks: dict[int, _Reservation] = {}
        self.events: list[_Event] = []
        self.clocks: dict[Any, _Clock] = {}
        self.edges: set[tuple[Any, Any, tuple[Any, ...]]] = set()
        self.non_monotonic: set[Any] = set()
        self.trace_clock: Any = None  # set by a snapshot's primary_trace_clock
        self.snapshot_count = 0
        self.deferred: list[tuple[int, Any]] = []
        self.latest_ts = 0
        self.paths: dict[tuple[Any, Any], list[tuple[Any, Any, Any]] | None] = {}
        self.names_seen: set[str] = set()

    def report(self, name: str, detail: str) -> None:
        if name in STATS:
            severity = STATS[name][0]
        elif name in SILENT:
            severity = "silent"
        elif name in NOTES:
            severity = "note"
        else:
            severity = "fatal"
        self.findings.append(Finding(name, severity, detail))

    # -----------------------------------------------------------------------------------------
    # reading: importers/proto/proto_trace_tokenizer.h L180-235
    # -----------------------------------------------------------------------------------------

    def run(self, data: bytes) -> list[Finding]:
        trace = pb.Trace()
        try:
            trace.ParseFromString(data)
        except DecodeError as error:
            self.report(FATAL, f"the trace does not decode as perfetto.protos.Trace: {error}")
            return self.findings
        return self.run_parsed(trace)

    def run_parsed(self, trace: Any) -> list[Finding]:
        packets = self._packets(trace)
        if packets is None:
            return self.findings
        for index, packet in enumerate(packets):
            self._packet(index, packet)
        # proto_trace_reader.cc L427-451: a packet whose clock could not be converted before
        # the end of the trace is retried once at the end, then dropped.
        deferred, self.deferred = self.deferred, []
        for index, packet in deferred:
            self._packet(index, packet, final=True)
        self._check_tracks()
        self._parse()
        return self.findings

    def _packets(self, trace: Any) -> list[Any] | None:
        packets: list[Any] = []
        codec: str | None = None
        for packet in trace.packet:
            # proto_trace_tokenizer.h L196-230: a packet with compressed_packets (gzip) or
            # zstd_compressed_packets is replaced by the packets it holds; one frame per
            # bundle, and a trace must not mix the two codecs (proto_trace_tokenizer.cc
            # L30-62: either is a load error).
            for kind in ("compressed_packets", "zstd_compressed_packets"):
                if not packet.HasField(kind):
                    continue
                if codec not in (None, kind):
                    self.report(FATAL, "compressed_packets and zstd_compressed_packets are mixed")
                    return None
                codec = kind
                # proto_trace_reader.cc ParseCompressedPackets: the bundle is expanded and
                # each packet parsed in its place (its own sequence, flags, interning and
                # clocks: incremental state runs on across bundles); nothing else in the
                # enclosing packet is read.
                others = [f.name for f, _ in packet.ListFields() if f.name != kind]
                if others:
                    self.report(
                        "compressed_packets_fields_ignored",
                        f"a packet with {kind} also sets {', '.join(others)}: not read",
                    )
                inner = self._decompress(kind, getattr(packet, kind))
                if inner is None:
                    return None
                packets.extend(inner)
                break
            else:
                packets.append(packet)
        return packets

    def _decompress(self, kind: str, blob: bytes) -> list[Any] | None:
        try:
            if kind == "compressed_packets":
                # 32 + MAX_WBITS: gzip or zlib header, as Perfetto's gzip reader accepts.
                # a whole stream: one cut short fails to inflate (gzip_utils.cc)
                raw = zlib.decompress(blob, 32 + zlib.MAX_WBITS)
            else:
                try:
                    from compression import zstd  # type: ignore[import-not-found]
                except ImportError:
                    self.report(FATAL, "zstd_compressed_packets: no zstd here to check them")
                    return None
                raw = zstd.decompress(blob)
            # The inflated bytes are whole Trace.packet records: field 1, length-delimited,
            # each inside the bundle (proto_trace_tokenizer.cc: "Expected TracePacket tag",
            # "Invalid packet size"; protobuf alone would keep another field as unknown).
            problem = _not_whole_packets(raw)
            if problem is not None:
                self.report(FATAL, f"{kind}: {problem}")
                return None
            inner = pb.Trace()
            inner.ParseFromString(raw)
        except (zlib.error, DecodeError, ValueError) as error:
            self.report(FATAL, f"failed to decompress {kind}: {error}")
            return None
        return list(inner.packet)

    # -----------------------------------------------------------------------------------------
    # tokenizing, in file order: importers/proto/proto_trace_reader.cc ParsePacket L270-424
    # -----------------------------------------------------------------------------------------

    def _packet(self, index: int, packet: Any, final: bool = False) -> None:
        has_sequence = packet.HasField("trusted_packet_sequence_id")
        seq_id = packet.trusted_packet_sequence_id
        state = self.sequences[seq_id]
        at = f"packet {index} (sequence {seq_id})"
        if not final:
            # L339-347: incremental_state_cleared or SEQ_INCREMENTAL_STATE_CLEARED resets the
            # sequence (HandleIncrementalStateCleared, L580-592); previous_packet_dropped
            # otherwise marks it invalid until the next clear (L624-635).
            if packet.incremental_state_cleared or packet.sequence_flags & _CLEARED:
                if not has_sequence:
                    self.report("incremental_state_cleared_missing_sequence_id", at)
                else:
                    state.clear()
            elif packet.previous_packet_dropped:
                state.valid = False
            # L349-359: defaults first (they apply to this very packet), then interned data.
            if packet.HasField("trace_packet_defaults"):
                if not has_sequence:
                    self.report("trace_packet_defaults_missing_sequence_id", at)
                else:
                    state.defaults = packet.trace_packet_defaults
            if packet.HasField("interned_data"):
                self._intern(packet, state, has_sequence, at)
            # L361-363: a clock snapshot packet is that and nothing else.
            if packet.HasField("clock_snapshot"):
                self._clock_snapshot(packet.clock_snapshot, seq_id, at)
                return
            # L384-413: a packet that needs incremental state is skipped while the sequence's
            # state is invalid (before its first clear, or after a loss).
            if packet.sequence_flags & _NEEDS:
                if not seq_id:
                    self.report(FATAL, f"{at}: SEQ_NEEDS_INCREMENTAL_STATE on sequence 0")
                    return
                if not state.valid:
                    self.report("packet_skipped_seq_needs_incremental_state_invalid", at)
                    return
        ts = self._timestamp(index, packet, state, seq_id, at, final)
        if ts is None:
            return
        if packet.HasField("track_descriptor"):
            self._track_descriptor(index, packet.track_descriptor, at)
        elif packet.HasField("track_event"):
            self._track_event(index, packet, state, has_sequence, ts, at)

    def _intern(self, packet: Any, state: _Sequence, has_sequence: bool, at: str) -> None:
        # proto_trace_reader.cc L675-708 (ParseInternedData): kept only while the sequence's
        # incremental state is valid.
        if not has_sequence:
            self.report("interned_data_missing_sequence_id", at)
            return
        if not state.valid:
            self.report("interned_data_skipped_incremental_state_invalid", at)
            return
        interned = packet.interned_data
        for kind, text in (
            ("event_names", "name"),
            ("event_categories", "name"),
            ("debug_annotation_names", "name"),
        ):
            for entry in getattr(interned, kind):
                state.interned[kind][entry.iid] = getattr(entry, text)
        for entry in interned.debug_annotation_string_values:
            state.interned["debug_annotation_string_values"][entry.iid] = entry.str.decode(
                "utf-8", "replace"
            )

    # -----------------------------------------------------------------------------------------
    # clocks: proto_trace_reader.cc L455-545 and L710-770, util/clock_synchronizer.cc
    # -----------------------------------------------------------------------------------------

    def _clock_key(self, clock_id: int, seq_id: int) -> Any:
        return ("seq", seq_id, clock_id) if clock_id in SEQUENCE_CLOCKS else clock_id

    def _clock_snapshot(self, snapshot: Any, seq_id: int, at: str) -> None:
        entries = []
        for clock in snapshot.clocks:
            if clock.clock_id in SEQUENCE_CLOCKS and not seq_id:
                self.report(FATAL, f"{at}: sequence clock {clock.clock_id} on sequence 0")
                return
            unit = clock.unit_multiplier_ns or 1
            key = self._clock_key(clock.clock_id, seq_id)
            entries.append((key, clock.timestamp * unit, unit, clock.is_incremental))
        # L747-765: primary_trace_clock names the trace's clock and the default clock of
        # packets that name none; without it, a snapshot with BOOTTIME makes BOOTTIME both.
        if snapshot.primary_trace_clock:
            self.trace_clock = snapshot.primary_trace_clock
        elif any(key == CLOCK_BOOTTIME for key, *_ in entries):
            self.trace_clock = CLOCK_BOOTTIME
        snapshot_hash = tuple(key for key, *_ in entries)
        self.snapshot_count += 1
        self.paths.clear()
        if len(set(snapshot_hash)) != len(snapshot_hash):
            self.report("invalid_clock_snapshots", f"{at}: a clock appears twice in one snapshot")
            return
        for key, ts_ns, unit, incremental in entries:
            domain = self.clocks.get(key)
            if domain is None:
                # util/clock_synchronizer.cc L81-91: only sequence-scoped clocks may be
                # incremental.
                if incremental and not isinstance(key, tuple):
                    self.report(
                        "invalid_clock_snapshots", f"{at}: global clock {key} is incremental"
                    )
                    return
                domain = self.clocks[key] = _Clock(incremental, unit)
            elif (domain.unit, domain.incremental) != (unit, incremental):
                # L93-106: a clock keeps its unit and incremental flag.
                self.report("invalid_clock_snapshots", f"{at}: clock {key} changed unit or mode")
                return
            # L116-117: a snapshot restarts an incremental clock at its value.
            domain.last_ns = ts_ns
            series = domain.snapshots.setdefault(snapshot_hash, [])
            if series and ts_ns < series[-1][1]:
                # L137-164: a clock going back among snapshots of the same clocks: the trace
                # clock rejects the snapshot; any other clock is no longer a source.
                if key == self.trace_clock:
                    self.report("invalid_clock_snapshots", f"{at}: the trace clock {key} goes back")
                    return
                self.non_monotonic.add(key)
                self.edges = {e for e in self.edges if e[0] != key}
            series.append((self.snapshot_count, ts_ns))
        keys = [key for key, *_ in entries]
        for first in keys:
            for second in keys:
                if first != second and first not in self.non_monotonic:
                    self.edges.add((first, second, snapshot_hash))

    def _timestamp(
        self, index: int, packet: Any, state: _Sequence, seq_id: int, at: str, final: bool
    ) -> int | None:
        """The packet's trace time (TimestampTokenizeAndPushToSorter, L455-545), or None when
        it is deferred or dropped."""
        if not packet.HasField("timestamp"):
            # L527-530: a packet without a timestamp takes the latest one seen.
            return self.latest_ts
        ts = packet.timestamp
        clock_id = packet.timestamp_clock_id
        if not clock_id and state.defaults is not None:
            clock_id = state.defaults.timestamp_clock_id
        if not clock_id and self.trace_clock is not None:
            clock_id = self.trace_clock
        if clock_id:
            converted = self._convert(self._clock_key(clock_id, seq_id), ts, at, final)
            if converted is None:
                if not final:
                    self.deferred.append((index, packet))
                return None
            ts = converted
        self.latest_ts = max(self.latest_ts, ts)
        return ts

    def _convert(self, source: Any, ts: int, at: str, final: bool) -> int | None:
        target = self.trace_clock if self.trace_clock is not None else CLOCK_BOOTTIME
        domain = self.clocks.get(source)
        if domain is None:
            if source == target:
                return ts
            if final:
                if isinstance(source, tuple):
                    self.report(
                        "clock_sync_failure_unknown_source_clock",
                        f"{at}: sequence clock {source[2]} has no snapshot on its sequence",
                    )
                else:
                    # importers/common/clock_tracker.cc L300-330: a builtin clock never in a
                    # snapshot is not assumed equal to a different trace clock.
                    self.report(
                        "clock_sync_unrelatable_clock_domains",
                        f"{at}: clock {source} is never related to the trace clock {target}",
                    )
                self.report("clock_sync_failure_undeferrable_packet_loss", at)
            return None
        # util/clock_synchronizer.h L392-400 (ToNs): on an incremental clock a timestamp is a
        # delta from the last one (or from the clock's latest snapshot).
        if domain.incremental:
            domain.last_ns += ts * domain.unit
            ts_ns = domain.last_ns
        else:
            ts_ns = ts * domain.unit
        if source == target:
            return ts_ns
        path = self._path(source, target)
        if path is None:
            if final:
                self.report(
                    "clock_sync_failure_no_path",
                    f"{at}: no snapshot path from clock {source} to {target}",
                )
                self.report("clock_sync_failure_undeferrable_packet_loss", at)
            return None
        for first, second, snapshot_hash in path:
            series = self.clocks[first].snapshots[snapshot_hash]
            others = self.clocks[second].snapshots[snapshot_hash]
            position = max((i for i, (_, value) in enumerate(series) if value <= ts_ns), default=0)
            ts_ns = others[position][1] + (ts_ns - series[position][1])
        return ts_ns

    def _path(self, source: Any, target: Any) -> list[tuple[Any, Any, Any]] | None:
        if (source, target) not in self.paths:
            self.paths[source, target] = self._search(source, target)
        return self.paths[source, target]

    def _search(self, source: Any, target: Any) -> list[tuple[Any, Any, Any]] | None:
        frontier: list[tuple[Any, list[tuple[Any, Any, Any]]]] = [(source, [])]
        seen = {source}
        while frontier:
            node, path = frontier.pop(0)
            for edge in self.edges:
                if edge[0] != node or edge[1] in seen:
                    continue
                if edge[1] == target:
                    return [*path, edge]
                seen.add(edge[1])
                frontier.append((edge[1], [*path, edge]))
        return None

    # -----------------------------------------------------------------------------------------
    # tracks: importers/proto/track_event_tokenizer.cc L127-380, track_event_tracker.cc
    # -----------------------------------------------------------------------------------------

    def _track_descriptor(self, index: int, track: Any, at: str) -> None:
        if not track.HasField("uuid"):
            self.report("track_descriptor_missing_uuid", at)  # tokenizer L134-139
            return
        counter = None
        if track.HasField("counter"):
            c = track.counter
            counter = (
                ",".join(c.categories),
                c.unit_multiplier,
                c.is_incremental,
                c.y_axis_share_key,
            )
        name = track.name if track.HasField("name") else None
        if name is None and track.HasField("static_name"):
            name = track.static_name
        merge_key = ""
        if track.HasField("sibling_merge_key"):
            merge_key = track.sibling_merge_key
        elif track.HasField("sibling_merge_key_int"):
            merge_key = f"sibling_merge_key_int:{track.sibling_merge_key_int}"
        reservation = _Reservation(
            uuid=track.uuid,
            parent=track.parent_uuid,
            pid=track.process.pid if track.HasField("process") else None,
            tid=track.thread.tid if track.HasField("thread") else None,
            is_counter=counter is not None,
            merge=track.sibling_merge_behavior,
            merge_key=merge_key,
            counter=counter,
            name=name,
            packet=index,
        )
        # track_event_tracker.cc L176-220 (ReserveDescriptorTrack): a uuid is reserved once;
        # a second descriptor must describe the same track, and even then only fills in a
        # missing name (or renames a track that is never merged).
        earlier = self.tracks.get(track.uuid)
        if earlier is None:
            self.tracks[track.uuid] = reservation
            return
        if not earlier.same_track(reservation):
            self.report(
                "track_descriptor_conflicting_reservation",
                f"{at}: uuid {track.uuid} ({name!r}) was declared at packet {earlier.packet} "
                f"as another track ({earlier.name!r}); this descriptor is ignored",
            )
            return
        if name is not None and name != earlier.name:
            kept = name if earlier.name is None or reservation.merge_kind == "none" else None
            self.report(
                "track_uuid_redeclared",
                f"{at}: uuid {track.uuid} declared again as {name!r} (first {earlier.name!r}"
                f" at packet {earlier.packet}); the track is named "
                f"{kept if kept is not None else earlier.name!r}",
            )
            if kept is not None:
                earlier.name = kept

    def _check_tracks(self) -> None:
        # track_event_tracker.cc L710-735 (IsTrackHierarchyValid): every ancestor is declared
        # and there is no loop.
        for uuid in self.tracks:
            seen: list[int] = []
            current = uuid
            while current:
                if current in seen:
                    self.report(
                        "track_event_track_hierarchy_loop", f"track {uuid} is its own ancestor"
                    )
                    break
                reservation = self.tracks.get(current)
                if reservation is None:
                    self.report(
                        "track_hierarchy_missing_uuid",
                        f"track {uuid} has undeclared ancestor {current}",
                    )
                    break
                seen.append(current)
                current = reservation.parent
        # track_event_tracker.cc L132-146 and L495-616: a non-counter track that does not
        # opt out (SIBLING_MERGE_BEHAVIOR_NONE) is merged with its same-named siblings (same
        # parent) into one UI track, whose slices the track compressor then lays out in as
        # many rows as their overlaps need. Nothing is lost, so it is a note; that it happens
        # is what the contract's capture rule and our lanes rely on.
        siblings: dict[tuple[int, str, str | None], list[_Reservation]] = defaultdict(list)
        for reservation in self.tracks.values():
            if reservation.is_counter or reservation.pid is not None:
                continue  # counters never merge; process/thread tracks are roots of a scope
            kind = reservation.merge_kind
            if kind != "none":
                key = reservation.merge_key if kind == "key" else reservation.name
                siblings[(reservation.parent, kind, key)].append(reservation)
        for (parent, kind, key), group in siblings.items():
            if len(group) > 1:
                implicit = sum(1 for r in group if not r.merge)
                default = f"; {implicit} by default (field unset)" if implicit else ""
                self.report(
                    "sibling_tracks_merged",
                    f"{len(group)} tracks with {kind} {key!r} under {parent} merge into one "
                    f"(uuids {', '.join(str(r.uuid) for r in group)}{default})",
                )

    # -----------------------------------------------------------------------------------------
    # events: importers/proto/track_event_tokenizer.cc TokenizeTrackEventPacket L428-612
    # -----------------------------------------------------------------------------------------

    def _track_event(
        self, index: int, packet: Any, state: _Sequence, has_sequence: bool, ts: int, at: str
    ) -> None:
        if not has_sequence:
            self.report("track_event_missing_sequence_id", at)  # L430-434
            return
        event = packet.track_event
        defaults = state.defaults.track_event_defaults if state.defaults is not None else None
        if event.HasField("timestamp_delta_us") or event.HasField("timestamp_absolute_us"):
            return  # legacy thread-descriptor timestamps: never written by us, not modelled
        if not packet.HasField("timestamp"):
            self.report("track_event_missing_timestamp", at)  # L469-474
            return
        if ts < 0:
            self.report("track_event_invalid_timestamp", at)  # L476-483
            return
        if event.HasField("track_uuid"):
            track = event.track_uuid
        elif defaults is not None and defaults.HasField("track_uuid"):
            track = defaults.track_uuid
        else:
            track = None
        if event.type == pb.TrackEvent.TYPE_COUNTER:
            # L541-582: a counter event needs a track, a value, and a counter track declared
            # before it in the file (the reservation is looked up while tokenizing).
            if track is None:
                self.report("track_event_counter_missing_track_uuid", at)
                return
            if not (event.HasField("counter_value") or event.HasField("double_counter_value")):
                self.report("track_event_counter_missing_value", f"{at}: track {track}")
                return
            value = (
                event.counter_value
                if event.HasField("counter_value")
                else event.double_counter_value
            )
            if self._absolute(state, track, value) is None:
                self.report(
                    "track_event_counter_invalid_track_uuid",
                    f"{at}: track {track} is not a counter track declared before this event",
                )
                return
        if not self._extra_counters(state, event, defaults, at):
            return
        self.events.append(
            _Event(
                ts=ts,
                packet=index,
                sequence=packet.trusted_packet_sequence_id,
                type=event.type,
                track=track if track is not None else 0,
                name=self._name(event, state, at),
                category=self._category(event, state, at),
                flow_ids=tuple(event.flow_ids) or tuple(event.flow_ids_old),
                terminating=tuple(event.terminating_flow_ids)
                or tuple(event.terminating_flow_ids_old),
            )
        )
        for annotation in event.debug_annotations:
            self._annotation(annotation, state, at, named=True)

    def _absolute(self, state: _Sequence, uuid: int, value: float) -> float | None:
        # track_event_tracker.cc L618-650 (ConvertToAbsoluteCounterValue): the track must be
        # reserved and a counter; unit_multiplier scales, is_incremental accumulates.
        reservation = self.tracks.get(uuid)
        if reservation is None or not reservation.is_counter:
            return None
        assert reservation.counter is not None
        _, multiplier, incremental, _ = reservation.counter
        if multiplier > 0:
            value *= multiplier
        if incremental:
            value = state.counter_totals[uuid] = state.counter_totals.get(uuid, 0) + value
        return float(value)

    def _extra_counters(self, state: _Sequence, event: Any, defaults: Any, at: str) -> bool:
        """track_event_tokenizer.cc L590-665 (AddExtraCounterValues): False when the importer
        drops the whole event."""
        values: list[float] = []
        for values_field, uuids_field in (
            ("extra_counter_values", "extra_counter_track_uuids"),
            ("extra_double_counter_values", "extra_double_counter_track_uuids"),
        ):
            raw_values = list(getattr(event, values_field))
            if not raw_values:
                continue
            uuids = list(getattr(event, uuids_field))
            if not uuids and defaults is not None:
                uuids = list(getattr(defaults, uuids_field))
            if not uuids:
                self.report("track_event_extra_counter_missing_track_uuids", at)
                return False
            # Integer and double extra values share one index: at most 8 in all.
            for position, raw in enumerate(raw_values):
                uuid = uuids[position] if position < len(uuids) else 0
                if not uuid:
                    self.report(
                        "track_event_extra_counter_track_uuid_mismatch",
                        f"{at}: {len(raw_values)} {values_field} for {len(uuids)} track uuids",
                    )
                    return False
                if len(values) >= MAX_EXTRA_COUNTERS:
                    self.report(
                        "track_event_extra_counter_exceeds_max",
                        f"{at}: more than {MAX_EXTRA_COUNTERS} extra counter values; the whole "
                        "event (its own counter value too) is dropped",
                    )
                    return False
                absolute = self._absolute(state, uuid, raw)
                if absolute is None:
                    self.report(
                        "track_event_extra_counter_invalid_track",
                        f"{at}: extra counter track {uuid} is not a counter track declared "
                        "before this event",
                    )
                    return False
                values.append(absolute)
        # common/parser_types.h L174-180 (CountExtraCounterValues) with
        # sorter/trace_token_buffer.cc L194, L209-210, L276-277: the sorter keeps the extra
        # values up to the first 0 and reads the rest back as 0.
        if 0 in values:
            first_zero = values.index(0)
            lost = [v for v in values[first_zero + 1 :] if v != 0]
            if lost:
                self.report(
                    "extra_counter_value_zeroed",
                    f"{at}: extra counter values {values} import as "
                    f"{values[: first_zero + 1] + [0] * (len(values) - first_zero - 1)}",
                )
        return True

    def _name(self, event: Any, state: _Sequence, at: str) -> str | None:
        # track_event_event_importer.h L314-327: an unknown name_iid leaves the slice unnamed.
        if event.name_iid:
            name = state.interned["event_names"].get(event.name_iid)
            if name is None and event.type != pb.TrackEvent.TYPE_SLICE_END:
                self.report(
                    "interned_event_name_missing", f"{at}: name_iid {event.name_iid} unknown"
                )
            return name
        # A name that is set, even to "", is a name: containers/string_pool.h L206-220 gives
        # the null id only to a string without data, so an END named "" closes only a slice
        # named "" (common/slice_tracker.cc L284-290).
        return event.name if event.HasField("name") else None

    def _category(self, event: Any, state: _Sequence, at: str) -> str | None:
        # track_event_event_importer.h L259-310: one unknown category iid becomes the
        # category "unknown(<iid>)"; among several, unknown ones are left out.
        names = []
        for iid in event.category_iids:
            name = state.interned["event_categories"].get(iid)
            if name is None:
                self.report("interned_category_missing", f"{at}: category iid {iid} unknown")
                name = f"unknown({iid})" if len(event.category_iids) == 1 else None
            if name is not None:
                names.append(name)
        names += list(event.categories)
        return ",".join(names) if names else None

    def _annotation(self, annotation: Any, state: _Sequence, at: str, *, named: bool) -> None:
        # util/proto_to_args_parser.cc L851-868 (ParseDebugAnnotationName) and L959-964: an
        # unknown name or string iid, or no name, is a parse error that loses the argument
        # (counted as track_event_parser_errors, track_event_event_importer.h L1392-1398);
        # '.', '[' and ']' in a name become '_' (noted once per name). Array items have no
        # names. This runs for every argument of every event: kept lean.
        if named:
            iid = annotation.name_iid
            if iid:
                name = state.interned["debug_annotation_names"].get(iid)
                if name is None:
                    detail = f"{at}: debug annotation name_iid {iid} unknown"
                    self.report("track_event_parser_errors", detail)
                    return
            elif annotation.HasField("name"):
                name = annotation.name
            else:
                self.report("track_event_parser_errors", f"{at}: debug annotation without name")
                return
            if name not in self.names_seen:
                self.names_seen.add(name)
                if _RENAMED.search(name):
                    self.report("annotation_name_renamed", f"{at}: annotation {name!r}")
        iid = annotation.string_value_iid
        if iid and iid not in state.interned["debug_annotation_string_values"]:
            self.report(
                "track_event_parser_errors",
                f"{at}: debug annotation string_value_iid {iid} unknown",
            )
        for entry in annotation.dict_entries:
            self._annotation(entry, state, at, named=True)
        for item in annotation.array_values:
            self._annotation(item, state, at, named=False)

    # -----------------------------------------------------------------------------------------
    # parsing, in timestamp order: slices and flows
    # -----------------------------------------------------------------------------------------

    def _parse(self) -> None:
        # The sorter hands events to the parser by timestamp; for equal timestamps, in the
        # order they were read.
        stacks: dict[int, list[_Event]] = defaultdict(list)
        ended: set[int] = set()
        active: dict[int, int] = {}  # flow id → how many slices it joined so far
        for event in sorted(self.events, key=lambda e: (e.ts, e.packet)):
            at = f"packet {event.packet} (ts {event.ts}, track {event.track})"
            reservation = self.tracks.get(event.track)
            if reservation is not None and not self._hierarchy_ok(event.track):
                continue  # the event's track cannot be resolved: dropped (already reported)
            if event.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
                stack = stacks[event.track]
                if len(stack) >= MAX_SLICE_DEPTH:
                    # common/slice_tracker.cc L136-140: deeper slices are dropped.
                    self.report("slice_max_depth_exceeded", f"{at}: {event.name!r}")
                    continue
                stack.append(event)
                self._flows(event, event, active, at)
            elif event.type == pb.TrackEvent.TYPE_INSTANT:
                self._flows(event, event, active, at)
            elif event.type == pb.TrackEvent.TYPE_SLICE_END:
                closed = self._end(stacks[event.track], ended, event)
                if closed is None:
                    # common/slice_tracker.cc L160-190 (CompleteSliceBegin): an END with no
                    # open slice to close on its track is ignored, with no stat.
                    self.report("slice_end_without_begin", at)
                    continue
                # track_event_event_importer.h L1111-1114: an END's flows join its slice.
                self._flows(event, closed, active, at)
        for track, stack in stacks.items():
            for open_slice in stack:
                if id(open_slice) in ended:
                    continue
                self.report(
                    "slice_never_ended",
                    f"packet {open_slice.packet}: {open_slice.name!r} on track {track} begins at "
                    f"{open_slice.ts} and never ends (imported with dur -1: 'Did not end')",
                )
        for flow_id, count in active.items():
            if count == 1:
                self.report(
                    "flow_unpaired",
                    f"flow id {flow_id} is on one slice only: no arrow is drawn",
                )

    def _hierarchy_ok(self, uuid: int) -> bool:
        seen: set[int] = set()
        while uuid:
            reservation = self.tracks.get(uuid)
            if reservation is None or uuid in seen:
                return False
            seen.add(uuid)
            uuid = reservation.parent
        return True

    @staticmethod
    def _end(stack: list[_Event], ended: set[int], end: _Event) -> _Event | None:
        # common/slice_tracker.cc L271-297 (MatchingIncompleteSliceIndex): the innermost
        # still-open slice whose name and category match the END's (an END without them
        # matches any). CompleteSliceFinalize (L234-246) pops it only when it is on top; a
        # slice ended below others stays on the stack until they end.
        for position in range(len(stack) - 1, -1, -1):
            candidate = stack[position]
            if id(candidate) in ended:
                continue
            if end.category is not None and candidate.category != end.category:
                continue
            if end.name is not None and candidate.name not in (None, end.name):
                continue
            ended.add(id(candidate))
            while stack and id(stack[-1]) in ended:
                stack.pop()
            return candidate
        return None

    def _flows(self, event: _Event, slice_: _Event, active: dict[int, int], at: str) -> None:
        # track_event_event_importer.h L943-977 (MaybeParseTrackEventFlows) with
        # common/flow_tracker.cc L57-118: the first slice with a flow id begins it, each
        # later one draws an arrow from the previous one and carries it on; a terminating id
        # draws its arrow and ends the flow, and is ignored when the flow is not active.
        for flow_id in event.flow_ids:
            active[flow_id] = active.get(flow_id, 0) + 1
        for flow_id in event.terminating:
            if flow_id not in active:
                self.report(
                    "flow_terminating_id_inactive",
                    f"{at}: terminating flow id {flow_id} was never begun; ignored",
                )
                continue
            del active[flow_id]


def summary(findings: Iterable[Finding]) -> dict[str, int]:
    """How many findings of each name (for messages and tests)."""
    counts: dict[str, int] = defaultdict(int)
    for finding in findings:
        counts[finding.name] += 1
    return dict(counts)


def _not_whole_packets(raw: bytes) -> str | None:
    """What is wrong with inflated compressed_packets bytes as a run of whole
    `Trace.packet` records (tag 0x0a, a varint length, that many bytes), or None."""
    at = 0
    while at < len(raw):
        if raw[at] != 0x0A:
            return f"byte {at}: expected a TracePacket tag (0x0a), found {raw[at]:#04x}"
        length, shift = 0, 0
        at += 1
        while True:
            if at >= len(raw) or shift > 63:
                return "a packet's length is cut off"
            byte = raw[at]
            at += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        if at + length > len(raw):
            return f"a packet of {length} bytes runs past the end of its bundle"
        at += length
    return None
