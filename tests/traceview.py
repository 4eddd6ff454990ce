"""Decode a Perfetto TrackEvent trace into plain Python data for tests.

`load_trace(path_or_bytes)` returns a `TraceView`: track descriptors, slices (BEGIN/END pairs
matched per track as a stack, instants as zero-length slices), counter samples, flows, clock
snapshots and sequence ids, with debug annotations decoded into Python values *and* their wire
types (`Typed`), so tests can tell `uint_value` from `int_value`.

The decoder follows Trace Processor where it matters for tests: events are ordered by timestamp
(stable for equal timestamps, i.e. file order breaks ties) before BEGIN/END matching, interned
names (`name_iid`, `category_iids`, debug annotation `name_iid` / `string_value_iid`) are resolved
per `trusted_packet_sequence_id` and reset when incremental state is cleared, and
`trace_packet_defaults` supply a missing `track_uuid` / clock id, and a timestamp on a clock a
snapshot declared incremental is a delta from the sequence's last one on that clock, made
absolute through the REALTIME value of that snapshot. Anything it cannot make sense of goes to
`TraceView.decode_problems` instead of raising.

`TraceView.to_text()` renders a deterministic dump for golden files: tracks as a tree with short
ids (`t0`, `t1`, … in declaration order), then every event in order with its arguments (sorted
keys, typed values), timestamps relative to the first event, flow ids renumbered `f1`, `f2`, ….
"""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from importer_rules import Finding, check_import_rules

CAPTURE_TRACK_NAME = "agentprof.capture"
PROFILE_NAME_RE = re.compile(r"^profile \([0-9]*\)$")

# Wire types of a decoded debug annotation value. "empty" is an annotation that carries only a
# name: protobuf cannot tell an empty `array_values` / `dict_entries` from "no value", so e.g.
# Claude's capture-start snapshot `changes: []` decodes as "empty" with plain value None.
ValueType = str
SCALAR_FIELDS: tuple[tuple[str, ValueType], ...] = (
    ("bool_value", "bool"),
    ("uint_value", "uint"),
    ("int_value", "int"),
    ("double_value", "double"),
    ("string_value", "string"),
    ("pointer_value", "pointer"),
    ("legacy_json_value", "json"),
)
SEQ_INCREMENTAL_STATE_CLEARED = 1
DEFAULT_CLOCK_ID = 6  # BUILTIN_CLOCK_BOOTTIME: Trace Processor's default for track events.
CLOCK_NAMES = {
    value.number: value.name.removeprefix("BUILTIN_CLOCK_")
    for value in pb.BuiltinClock.DESCRIPTOR.values
}


@dataclass(frozen=True, slots=True)
class Typed:
    """A debug annotation value with its wire type.

    `value` is a Python scalar for scalar types, `dict[str, Typed]` for "dict",
    `list[Typed]` for "array" and None for "empty".
    """

    type: ValueType
    value: Any

    def plain(self) -> Any:
        """The value as plain Python data (dict / list / scalar / None)."""
        if self.type == "dict":
            return {key: item.plain() for key, item in self.value.items()}
        if self.type == "array":
            return [item.plain() for item in self.value]
        return self.value

    def at(self, *path: str | int) -> Typed | None:
        """Walk dict keys (str) and array indexes (int); None when a step is missing."""
        node: Typed | None = self
        for step in path:
            if node is None:
                return None
            if isinstance(step, str) and node.type == "dict":
                node = node.value.get(step)
            elif isinstance(step, int) and node.type == "array":
                node = node.value[step] if -len(node.value) <= step < len(node.value) else None
            else:
                return None
        return node


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    """`TrackDescriptor.process`."""

    pid: int
    name: str
    labels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ThreadInfo:
    """`TrackDescriptor.thread`."""

    pid: int
    tid: int
    name: str


@dataclass(frozen=True, slots=True)
class Track:
    """One track descriptor. `order` is its declaration index (Trace Processor's track id order)."""

    uuid: int
    name: str
    parent_uuid: int | None
    is_counter: bool
    unit: str
    unit_name: str
    y_axis_share_key: str
    sibling_merge_behavior: str
    description: str
    process: ProcessInfo | None
    thread: ThreadInfo | None
    order: int
    packet_index: int
    # Display order in ui.perfetto.dev: `child_ordering` of this track's children
    # ("" when unset) and this track's `sibling_order_rank` (None when unset).
    child_ordering: str = ""
    sibling_order_rank: int | None = None

    @property
    def is_process(self) -> bool:
        return self.process is not None or self.thread is not None


@dataclass(eq=False, slots=True)
class Slice:
    """A slice (BEGIN…END) or an instant (`instant=True`, dur 0) on one track.

    `args` are the plain values of BEGIN's debug annotations (END's annotations are merged in
    when a name is new, as Trace Processor does); `arg_types` maps each top-level name to its
    wire type; `typed_args` keeps the full typed tree. `flow_ids` / `terminating_flow_ids`
    collect both the BEGIN and the END event's ids. `complete` is False for a BEGIN never closed
    (its dur is then 0). `order` is the index of the slice's first event in time order.
    """

    ts: int
    dur: int
    track_uuid: int
    name: str
    categories: tuple[str, ...]
    args: dict[str, Any]
    arg_types: dict[str, ValueType]
    typed_args: dict[str, Typed]
    flow_ids: list[int]
    terminating_flow_ids: list[int]
    legacy_flow_ids: list[int]
    instant: bool
    complete: bool
    order: int
    packet_index: int
    clock_id: int

    @property
    def end(self) -> int:
        return self.ts + self.dur

    @property
    def category(self) -> str:
        """Categories joined with "," (one category in every trace we write)."""
        return ",".join(self.categories)

    @property
    def kind(self) -> str | None:
        kind = self.args.get("kind")
        return kind if isinstance(kind, str) else None

    def typed(self, name: str, *path: str | int) -> Typed | None:
        """Typed value of annotation `name`, then dict keys / array indexes along `path`."""
        top = self.typed_args.get(name)
        return None if top is None else top.at(*path)

    def type_at(self, name: str, *path: str | int) -> ValueType | None:
        """Wire type at `name`/`path` ('uint', 'int', 'dict', …), None when missing."""
        node = self.typed(name, *path)
        return None if node is None else node.type


@dataclass(frozen=True, slots=True)
class CounterSample:
    """One counter value (TYPE_COUNTER event or an `extra_*counter_values` entry)."""

    ts: int
    track_uuid: int
    value: float
    is_double: bool
    categories: tuple[str, ...]
    order: int
    packet_index: int
    clock_id: int


@dataclass(frozen=True, slots=True)
class ClockSnapshot:
    """`clock_snapshot` packet: clock id → timestamp, primary clock as enum name."""

    clocks: dict[int, int]
    primary_trace_clock: str
    packet_index: int
    incremental: frozenset[int] = frozenset()  # clocks whose packet timestamps are deltas


@dataclass(slots=True)
class TraceView:
    """A decoded trace. Build it with `load_trace`."""

    packets: int = 0
    packet_kinds: list[str] = field(default_factory=list)
    sequence_ids: set[int] = field(default_factory=set)
    clock_snapshots: list[ClockSnapshot] = field(default_factory=list)
    # Trace attributes (TracePacket.trace_attributes): Trace Processor's `metadata` rows
    # `trace_attribute.<key>`; one packet of them per trace is ours.
    attributes: dict[str, str | int] = field(default_factory=dict)
    tracks: dict[int, Track] = field(default_factory=dict)
    slices: list[Slice] = field(default_factory=list)
    samples: list[CounterSample] = field(default_factory=list)
    counters: dict[int, list[tuple[int, float]]] = field(default_factory=dict)
    flows: dict[int, list[Slice]] = field(default_factory=dict)
    event_clock_ids: dict[int, int] = field(default_factory=dict)
    # Incremental clocks some snapshot ties to REALTIME (an event on one is on REALTIME).
    realtime_delta_clocks: set[int] = field(default_factory=set)
    track_sequences: dict[int, set[int]] = field(default_factory=dict)  # uuid → its events
    event_times: list[int] = field(default_factory=list)  # every track event's, resolved
    uses_interning: bool = False
    decode_problems: list[str] = field(default_factory=list)
    # What Perfetto's importer would record for these bytes (importer_rules.py): every
    # decoded trace is checked, whoever decodes it (conftest's importer_rules fixture).
    import_findings: list[Finding] = field(default_factory=list)

    # -- tracks ---------------------------------------------------------------------------

    def tracks_named(self, name: str) -> list[Track]:
        """Tracks with exactly this name, in declaration order."""
        return [track for track in self.tracks.values() if track.name == name]

    def children_of(self, uuid: int) -> list[Track]:
        return [track for track in self.tracks.values() if track.parent_uuid == uuid]

    def ancestors(self, uuid: int) -> list[Track]:
        """The track itself, then its parents up to the root (stops on unknown ids or cycles)."""
        chain: list[Track] = []
        seen: set[int] = set()
        current: int | None = uuid
        while current is not None and current not in seen and current in self.tracks:
            seen.add(current)
            track = self.tracks[current]
            chain.append(track)
            current = track.parent_uuid
        return chain

    def captures(self) -> list[Track]:
        return self.tracks_named(CAPTURE_TRACK_NAME)

    def capture_of(self, track_uuid: int) -> int | None:
        """uuid of the capture owning `track_uuid` (itself if it is a capture), or None.

        Agent Profiler's SQL takes the *highest track id* among `agentprof.capture` ancestors;
        Trace Processor numbers tracks in declaration order, so this is the nearest capture
        whenever nested captures are declared after their parent (TRACE_CONTRACT §7).
        """
        captures = [t for t in self.ancestors(track_uuid) if t.name == CAPTURE_TRACK_NAME]
        return max(captures, key=lambda t: t.order).uuid if captures else None

    # -- events ---------------------------------------------------------------------------

    def slices_on(self, track_uuid: int) -> list[Slice]:
        return [s for s in self.slices if s.track_uuid == track_uuid]

    def slices_in_capture(self, capture_uuid: int) -> list[Slice]:
        return [s for s in self.slices if self.capture_of(s.track_uuid) == capture_uuid]

    def slices_named(self, name: str) -> list[Slice]:
        return [s for s in self.slices if s.name == name]

    def slices_of_kind(self, kind: str, capture_uuid: int | None = None) -> list[Slice]:
        pool = self.slices if capture_uuid is None else self.slices_in_capture(capture_uuid)
        return [s for s in pool if s.kind == kind]

    def profile_of(self, capture_uuid: int) -> Slice | None:
        """The capture's `profile (N)` slice (first one if several)."""
        for slice_ in self.slices_in_capture(capture_uuid):
            if PROFILE_NAME_RE.match(slice_.name):
                return slice_
        return None

    def snapshots(self, capture_uuid: int | None = None) -> list[Slice]:
        """Slices carrying a `context` dict annotation with `version` 1."""
        pool = self.slices if capture_uuid is None else self.slices_in_capture(capture_uuid)
        result = []
        for slice_ in pool:
            version = slice_.typed("context", "version")
            if version is not None and version.value == 1:
                result.append(slice_)
        return result

    def counter_tracks(self, capture_uuid: int | None = None) -> list[Track]:
        return [
            track
            for track in self.tracks.values()
            if track.is_counter
            and (capture_uuid is None or self.capture_of(track.uuid) == capture_uuid)
        ]

    def counters_named(self, capture_uuid: int, name: str) -> list[Track]:
        return [t for t in self.counter_tracks(capture_uuid) if t.name == name]

    def counter_by_name(self, capture_uuid: int, name: str) -> Track | None:
        """The counter track `name` under the capture (first declared), or None."""
        found = self.counters_named(capture_uuid, name)
        return found[0] if found else None

    def counter_samples(self, capture_uuid: int, name: str) -> list[tuple[int, float]]:
        """Samples `(ts, value)` of counter `name` under the capture ([] when absent)."""
        track = self.counter_by_name(capture_uuid, name)
        return [] if track is None else list(self.counters.get(track.uuid, []))

    # -- text -----------------------------------------------------------------------------

    def to_text(self, *, uuids: bool = False, absolute_ts: bool = False) -> str:
        """Deterministic human-readable dump (tracks tree, then events with typed args).

        Track uuids, flow ids and absolute timestamps are replaced by stable short forms unless
        asked for, so the dump only changes when the trace's content or structure does.
        """
        return "\n".join(_render(self, uuids=uuids, absolute_ts=absolute_ts)) + "\n"


# ---------------------------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _SequenceState:
    """Incremental state of one packet sequence (interning tables and packet defaults)."""

    event_names: dict[int, str] = field(default_factory=dict)
    categories: dict[int, str] = field(default_factory=dict)
    annotation_names: dict[int, str] = field(default_factory=dict)
    annotation_strings: dict[int, str] = field(default_factory=dict)
    default_track_uuid: int | None = None
    default_extra_counters: tuple[int, ...] = ()
    default_extra_double_counters: tuple[int, ...] = ()
    default_clock_id: int | None = None


@dataclass(slots=True)
class _Event:
    """A track event resolved against its sequence's state, before time ordering."""

    ts: int
    packet_index: int
    clock_id: int
    sequence: int
    event: Any  # pb.TrackEvent
    track_uuid: int | None
    name: str
    categories: tuple[str, ...]
    typed_args: dict[str, Typed]
    extra_counters: list[tuple[int, float, bool]]


def inflated(source: str | Path | bytes | Any) -> Any:
    """A trace (a path, raw bytes or a parsed `Trace`) with every `compressed_packets`
    packet replaced by the packets it holds, in its place, as Perfetto reads it (the
    writer deflates a group's packets by default: writers/chunks.py). The importer rules
    (importer_rules.py) check the bundles themselves; every other reading of a trace in the
    tests goes through this."""
    if isinstance(source, pb.Trace):
        trace = source
    else:
        data = source if isinstance(source, bytes) else Path(source).read_bytes()
        trace = pb.Trace.FromString(data)
    if not any(packet.HasField("compressed_packets") for packet in trace.packet):
        return trace
    whole = pb.Trace()
    for packet in trace.packet:
        if packet.HasField("compressed_packets"):
            inner = zlib.decompress(packet.compressed_packets, 32 + zlib.MAX_WBITS)
            whole.packet.extend(pb.Trace.FromString(inner).packet)
        else:
            whole.packet.append(packet)
    return whole


def plain_bytes(source: str | Path | bytes) -> bytes:
    """A trace's bytes with its compressed packets inflated in place: what a scan of the
    raw bytes for text (the privacy checks) must read, since deflated text is not there."""
    return bytes(inflated(source).SerializeToString())


def load_trace(source: str | Path | bytes | Any) -> TraceView:
    """Decode a trace from a path, raw bytes or an already parsed `perfetto_trace_pb2.Trace`
    (its compressed packets inflated; the importer rules see them as written)."""
    data = None
    if isinstance(source, pb.Trace):
        trace = source
    else:
        data = source if isinstance(source, bytes) else Path(source).read_bytes()
        trace = pb.Trace()
        trace.ParseFromString(data)
    view = _decode(inflated(trace))
    view.import_findings = _import_findings(trace, data)
    problems = [str(f) for f in view.import_findings if f.severity != "note"]
    if problems:
        IMPORT_PROBLEMS.append((_describe(source), problems))
    return view


# Traces decoded with importer problems, since conftest's autouse fixture last cleared it:
# (what was decoded, its problems). A test that decodes broken traces on purpose is marked
# `importer_broken` and the fixture lets them be.
IMPORT_PROBLEMS: list[tuple[str, list[str]]] = []


# The suite decodes the same bytes many times (the bundled journals, exported by many tests):
# the importer rules' verdict on them is kept, by digest, for the test session.
_FINDINGS_BY_DIGEST: dict[bytes, list[Finding]] = {}


def _import_findings(trace: Any, data: bytes | None) -> list[Finding]:
    if data is None:
        return check_import_rules(trace)
    digest = hashlib.blake2b(data, digest_size=16).digest()
    found = _FINDINGS_BY_DIGEST.get(digest)
    if found is None:
        found = _FINDINGS_BY_DIGEST[digest] = check_import_rules(trace)
    return list(found)


def _describe(source: Any) -> str:
    if isinstance(source, (str, Path)):
        return str(source)
    if isinstance(source, bytes):
        return f"{len(source)} bytes"
    return "a parsed trace"


def _decode(trace: Any) -> TraceView:
    view = TraceView(packets=len(trace.packet))
    states: dict[int, _SequenceState] = defaultdict(_SequenceState)
    # (sequence, incremental clock) → [its last value, REALTIME minus its value]
    deltas: dict[tuple[int, int], list[int]] = {}
    events: list[_Event] = []
    for index, packet in enumerate(trace.packet):
        data_field = packet.WhichOneof("data")
        view.packet_kinds.append(data_field or "")
        seq_id = packet.trusted_packet_sequence_id
        view.sequence_ids.add(seq_id)
        state = _update_sequence_state(states, packet, seq_id, view)
        if data_field == "trace_attributes":
            for attribute in packet.trace_attributes.attribute:
                value = attribute.WhichOneof("value")
                view.attributes[attribute.key] = getattr(attribute, value) if value else ""
        if data_field == "clock_snapshot":
            snap = packet.clock_snapshot
            view.clock_snapshots.append(
                ClockSnapshot(
                    clocks={clock.clock_id: clock.timestamp for clock in snap.clocks},
                    primary_trace_clock=pb.BuiltinClock.Name(snap.primary_trace_clock)
                    if snap.HasField("primary_trace_clock")
                    else "",
                    packet_index=index,
                    incremental=frozenset(c.clock_id for c in snap.clocks if c.is_incremental),
                )
            )
            realtime = next((c.timestamp for c in snap.clocks if c.clock_id == 1), None)
            for clock in snap.clocks:
                if clock.is_incremental:
                    offset = 0 if realtime is None else realtime - clock.timestamp
                    deltas[(seq_id, clock.clock_id)] = [clock.timestamp, offset]
                    if realtime is not None:
                        view.realtime_delta_clocks.add(clock.clock_id)
        elif data_field == "track_descriptor":
            _add_track(view, packet.track_descriptor, index)
        elif data_field == "track_event":
            events.append(_resolve_event(view, packet, index, state, deltas))
    _build_events(view, events)
    return view


def _update_sequence_state(
    states: dict[int, _SequenceState], packet: Any, seq_id: int, view: TraceView
) -> _SequenceState:
    cleared = packet.incremental_state_cleared or (
        packet.sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED
    )
    if cleared:
        states[seq_id] = _SequenceState()
    state = states[seq_id]
    if packet.HasField("trace_packet_defaults"):
        defaults = packet.trace_packet_defaults
        if defaults.HasField("timestamp_clock_id"):
            state.default_clock_id = defaults.timestamp_clock_id
        if defaults.HasField("track_event_defaults"):
            te_defaults = defaults.track_event_defaults
            if te_defaults.HasField("track_uuid"):
                state.default_track_uuid = te_defaults.track_uuid
            state.default_extra_counters = tuple(te_defaults.extra_counter_track_uuids)
            state.default_extra_double_counters = tuple(
                te_defaults.extra_double_counter_track_uuids
            )
    if packet.HasField("interned_data"):
        view.uses_interning = True
        interned = packet.interned_data
        for entry in interned.event_names:
            state.event_names[entry.iid] = entry.name
        for entry in interned.event_categories:
            state.categories[entry.iid] = entry.name
        for entry in interned.debug_annotation_names:
            state.annotation_names[entry.iid] = entry.name
        for entry in interned.debug_annotation_string_values:
            state.annotation_strings[entry.iid] = entry.str.decode("utf-8", "replace")
    return state


def _add_track(view: TraceView, desc: Any, index: int) -> None:
    process = None
    if desc.HasField("process"):
        proc = desc.process
        process = ProcessInfo(proc.pid, proc.process_name, tuple(proc.process_labels))
    thread = None
    if desc.HasField("thread"):
        thr = desc.thread
        thread = ThreadInfo(thr.pid, thr.tid, thr.thread_name)
    counter = desc.counter if desc.HasField("counter") else None
    track = Track(
        uuid=desc.uuid,
        name=desc.name or desc.static_name or desc.atrace_name,
        parent_uuid=desc.parent_uuid if desc.HasField("parent_uuid") else None,
        is_counter=counter is not None,
        unit=pb.CounterDescriptor.Unit.Name(counter.unit) if counter is not None else "",
        unit_name=counter.unit_name if counter is not None else "",
        y_axis_share_key=counter.y_axis_share_key if counter is not None else "",
        sibling_merge_behavior=pb.TrackDescriptor.SiblingMergeBehavior.Name(
            desc.sibling_merge_behavior
        ),
        description=desc.description,
        process=process,
        thread=thread,
        order=len(view.tracks),
        packet_index=index,
        child_ordering=(
            pb.TrackDescriptor.ChildTracksOrdering.Name(desc.child_ordering)
            if desc.HasField("child_ordering")
            else ""
        ),
        sibling_order_rank=(
            desc.sibling_order_rank if desc.HasField("sibling_order_rank") else None
        ),
    )
    previous = view.tracks.get(desc.uuid)
    if previous is None:
        view.tracks[desc.uuid] = track
        return
    # Re-emitting a descriptor is legal; re-emitting a *different* one is a writer bug.
    same = (previous.name, previous.parent_uuid, previous.is_counter) == (
        track.name,
        track.parent_uuid,
        track.is_counter,
    )
    if not same:
        view.decode_problems.append(
            f"track {desc.uuid} described twice with different name/parent/type "
            f"(packets {previous.packet_index} and {index})"
        )


def _resolve_event(
    view: TraceView,
    packet: Any,
    index: int,
    state: _SequenceState,
    deltas: dict[tuple[int, int], list[int]],
) -> _Event:
    event = packet.track_event
    if packet.HasField("timestamp_clock_id"):
        clock_id = packet.timestamp_clock_id
    elif state.default_clock_id is not None:
        clock_id = state.default_clock_id
    else:
        clock_id = DEFAULT_CLOCK_ID
    ts = packet.timestamp
    delta = deltas.get((packet.trusted_packet_sequence_id, clock_id))
    if delta is not None:
        delta[0] += ts
        ts = delta[0] + delta[1]
    elif 64 <= clock_id < 128:
        view.decode_problems.append(
            f"packet {index}: clock {clock_id} is sequence-scoped, and no snapshot on the "
            "sequence defined it"
        )
    if event.HasField("track_uuid"):
        track_uuid: int | None = event.track_uuid
    else:
        track_uuid = state.default_track_uuid
    if event.HasField("name_iid"):
        name = state.event_names.get(event.name_iid, "")
        if event.name_iid not in state.event_names:
            view.decode_problems.append(f"packet {index}: unknown name_iid {event.name_iid}")
    else:
        name = event.name
    categories = list(event.categories)
    for iid in event.category_iids:
        if iid in state.categories:
            categories.append(state.categories[iid])
        else:
            view.decode_problems.append(f"packet {index}: unknown category iid {iid}")
    typed_args: dict[str, Typed] = {}
    for annotation in event.debug_annotations:
        key = _annotation_name(annotation, state, view, index)
        if key in typed_args:
            view.decode_problems.append(f"packet {index}: annotation {key!r} repeated")
        typed_args[key] = _decode_value(annotation, state, view, index)
    extra: list[tuple[int, float, bool]] = []
    counter_uuids = list(event.extra_counter_track_uuids) or list(state.default_extra_counters)
    double_uuids = list(event.extra_double_counter_track_uuids) or list(
        state.default_extra_double_counters
    )
    if len(counter_uuids) < len(event.extra_counter_values) or len(double_uuids) < len(
        event.extra_double_counter_values
    ):
        view.decode_problems.append(f"packet {index}: more extra counter values than tracks")
    extra += [
        (u, v, False) for u, v in zip(counter_uuids, event.extra_counter_values, strict=False)
    ]
    extra += [
        (u, v, True) for u, v in zip(double_uuids, event.extra_double_counter_values, strict=False)
    ]
    if not packet.HasField("timestamp"):
        view.decode_problems.append(f"packet {index}: track event without timestamp")
    return _Event(
        ts=ts,
        packet_index=index,
        clock_id=clock_id,
        sequence=packet.trusted_packet_sequence_id,
        event=event,
        track_uuid=track_uuid,
        name=name,
        categories=tuple(categories),
        typed_args=typed_args,
        extra_counters=extra,
    )


def _annotation_name(annotation: Any, state: _SequenceState, view: TraceView, index: int) -> str:
    if annotation.HasField("name_iid"):
        if annotation.name_iid not in state.annotation_names:
            view.decode_problems.append(
                f"packet {index}: unknown debug annotation name_iid {annotation.name_iid}"
            )
        return state.annotation_names.get(annotation.name_iid, f"<iid {annotation.name_iid}>")
    return str(annotation.name)


def _decode_value(annotation: Any, state: _SequenceState, view: TraceView, index: int) -> Typed:
    """Recursively decode one DebugAnnotation (or nested entry) into a `Typed`."""
    if annotation.dict_entries:
        entries: dict[str, Typed] = {}
        for entry in annotation.dict_entries:
            key = _annotation_name(entry, state, view, index)
            if key in entries:
                view.decode_problems.append(f"packet {index}: dict key {key!r} repeated")
            entries[key] = _decode_value(entry, state, view, index)
        return Typed("dict", entries)
    if annotation.array_values:
        items = [_decode_value(item, state, view, index) for item in annotation.array_values]
        return Typed("array", items)
    for field_name, value_type in SCALAR_FIELDS:
        if annotation.HasField(field_name):
            return Typed(value_type, getattr(annotation, field_name))
    if annotation.HasField("string_value_iid"):
        iid = annotation.string_value_iid
        if iid not in state.annotation_strings:
            view.decode_problems.append(f"packet {index}: unknown string_value_iid {iid}")
        return Typed("string", state.annotation_strings.get(iid, ""))
    if annotation.HasField("nested_value"):
        view.decode_problems.append(f"packet {index}: legacy nested_value annotation")
        return Typed("nested", None)
    if annotation.HasField("proto_value"):
        return Typed("proto", bytes(annotation.proto_value))
    return Typed("empty", None)


def _build_events(view: TraceView, events: list[_Event]) -> None:
    """Order events by time like Trace Processor, then match BEGIN/END and collect counters."""
    events.sort(key=lambda e: (e.ts, e.packet_index))
    stacks: dict[int, list[Slice]] = defaultdict(list)
    flow_events: list[tuple[int, int, Slice]] = []  # (packet index, flow id, slice)
    counters: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for order, record in enumerate(events):
        event = record.event
        view.event_clock_ids[record.clock_id] = view.event_clock_ids.get(record.clock_id, 0) + 1
        view.event_times.append(record.ts)
        if record.track_uuid is not None:
            view.track_sequences.setdefault(record.track_uuid, set()).add(record.sequence)
        where = f"packet {record.packet_index}"
        if record.track_uuid is None:
            view.decode_problems.append(f"{where}: track event without track_uuid")
            continue
        if record.track_uuid not in view.tracks:
            view.decode_problems.append(f"{where}: event on undeclared track {record.track_uuid}")
        for uuid, value, is_double in record.extra_counters:
            _add_sample(view, counters, record, order, uuid, value, is_double)
        kind = event.type
        if kind == pb.TrackEvent.TYPE_COUNTER:
            if event.HasField("double_counter_value"):
                value, is_double = event.double_counter_value, True
            else:
                value, is_double = event.counter_value, False
            _add_sample(view, counters, record, order, record.track_uuid, value, is_double)
        elif kind in (pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_INSTANT):
            slice_ = Slice(
                ts=record.ts,
                dur=0,
                track_uuid=record.track_uuid,
                name=record.name,
                categories=record.categories,
                args={key: value.plain() for key, value in record.typed_args.items()},
                arg_types={key: value.type for key, value in record.typed_args.items()},
                typed_args=dict(record.typed_args),
                flow_ids=list(event.flow_ids),
                terminating_flow_ids=list(event.terminating_flow_ids),
                legacy_flow_ids=list(event.flow_ids_old) + list(event.terminating_flow_ids_old),
                instant=kind == pb.TrackEvent.TYPE_INSTANT,
                complete=kind == pb.TrackEvent.TYPE_INSTANT,
                order=order,
                packet_index=record.packet_index,
                clock_id=record.clock_id,
            )
            view.slices.append(slice_)
            if kind == pb.TrackEvent.TYPE_SLICE_BEGIN:
                stacks[record.track_uuid].append(slice_)
            for flow_id in [*event.flow_ids, *event.terminating_flow_ids]:
                flow_events.append((record.packet_index, flow_id, slice_))
        elif kind == pb.TrackEvent.TYPE_SLICE_END:
            stack = stacks[record.track_uuid]
            if not stack:
                view.decode_problems.append(
                    f"{where}: SLICE_END without open slice on track {record.track_uuid}"
                )
                continue
            open_slice = stack.pop()
            open_slice.dur = record.ts - open_slice.ts
            open_slice.complete = True
            for key, end_arg in record.typed_args.items():
                if key not in open_slice.typed_args:
                    open_slice.typed_args[key] = end_arg
                    open_slice.args[key] = end_arg.plain()
                    open_slice.arg_types[key] = end_arg.type
            open_slice.flow_ids += list(event.flow_ids)
            open_slice.terminating_flow_ids += list(event.terminating_flow_ids)
            for flow_id in [*event.flow_ids, *event.terminating_flow_ids]:
                flow_events.append((record.packet_index, flow_id, open_slice))
        else:
            view.decode_problems.append(f"{where}: unsupported track event type {kind}")
    for track_uuid, stack in stacks.items():
        for open_slice in stack:
            view.decode_problems.append(
                f"slice {open_slice.name!r} at ts={open_slice.ts} on track {track_uuid} never ended"
            )
    view.counters = dict(counters)
    # Flow endpoints in file order: the writer's intended source comes first.
    for _, flow_id, slice_ in sorted(flow_events, key=lambda item: item[0]):
        view.flows.setdefault(flow_id, []).append(slice_)


def _add_sample(
    view: TraceView,
    counters: dict[int, list[tuple[int, float]]],
    record: _Event,
    order: int,
    uuid: int,
    value: float,
    is_double: bool,
) -> None:
    counters[uuid].append((record.ts, value))
    view.samples.append(
        CounterSample(
            ts=record.ts,
            track_uuid=uuid,
            value=value,
            is_double=is_double,
            categories=record.categories,
            order=order,
            packet_index=record.packet_index,
            clock_id=record.clock_id,
        )
    )


# ---------------------------------------------------------------------------------------------
# Text rendering
# ---------------------------------------------------------------------------------------------


def format_typed(value: Typed) -> str:
    """One-line typed rendering: `u:12`, `i:-3`, `s:"text"`, `b:true`, `{a: u:1}`, `[s:"x"]`."""
    if value.type == "dict":
        inner = ", ".join(f"{key}: {format_typed(value.value[key])}" for key in sorted(value.value))
        return "{" + inner + "}"
    if value.type == "array":
        return "[" + ", ".join(format_typed(item) for item in value.value) + "]"
    return _format_scalar(value)


def _format_scalar(value: Typed) -> str:
    if value.type == "string":
        return "s:" + json.dumps(value.value, ensure_ascii=False)
    if value.type == "bool":
        return "b:" + ("true" if value.value else "false")
    if value.type == "double":
        return "d:" + repr(float(value.value))
    if value.type == "empty":
        return "empty"
    if value.type in ("proto", "nested"):
        return value.type
    prefix = {"uint": "u", "int": "i", "pointer": "p", "json": "json"}.get(value.type, value.type)
    return f"{prefix}:{value.value}"


def _render_args(args: dict[str, Typed], indent: str) -> Iterator[str]:
    """Multi-line rendering of an annotation tree: one line per scalar, sorted dict keys."""
    for key in sorted(args):
        yield from _render_value(key, args[key], indent)


def _render_value(label: str, value: Typed, indent: str) -> Iterator[str]:
    if value.type == "dict" and value.value:
        yield f"{indent}{label} = {{"
        yield from _render_args(value.value, indent + "  ")
        yield f"{indent}}}"
    elif value.type == "array" and value.value:
        if all(item.type not in ("dict", "array") for item in value.value):
            yield f"{indent}{label} = {format_typed(value)}"
            return
        yield f"{indent}{label} = ["
        for position, item in enumerate(value.value):
            yield from _render_value(f"[{position}]", item, indent + "  ")
        yield f"{indent}]"
    else:
        yield f"{indent}{label} = {format_typed(value)}"


def _render(view: TraceView, *, uuids: bool, absolute_ts: bool) -> Iterator[str]:
    short = {uuid: f"t{track.order}" for uuid, track in view.tracks.items()}
    flow_names: dict[int, str] = {}
    for slice_ in view.slices:
        for flow_id in [*slice_.flow_ids, *slice_.terminating_flow_ids]:
            flow_names.setdefault(flow_id, f"f{len(flow_names) + 1}")
    event_times = [s.ts for s in view.slices] + [s.ts for s in view.samples]
    base = 0 if absolute_ts or not event_times else min(event_times)

    def when(ts: int) -> str:
        return str(ts) if absolute_ts else f"+{ts - base}"

    def track_ref(uuid: int) -> str:
        track = view.tracks.get(uuid)
        ident = short.get(uuid, f"?{uuid}" if uuids else "?")
        label = f"{ident} {track.name!r}" if track is not None else ident
        return f"[{label}{f' uuid={uuid}' if uuids else ''}]"

    yield f"packets: {view.packets}"
    yield "sequences: " + ", ".join(str(s) for s in sorted(view.sequence_ids))
    yield f"interning: {'yes' if view.uses_interning else 'no'}"
    for snap in view.clock_snapshots:
        clocks = " ".join(
            f"{CLOCK_NAMES.get(cid, str(cid))}{'(incremental)' if cid in snap.incremental else ''}"
            f"={ts}"
            for cid, ts in sorted(snap.clocks.items())
        )
        yield f"clock_snapshot primary={snap.primary_trace_clock or '-'} {clocks}"
    for key, value in view.attributes.items():
        yield f"trace_attribute.{key} = {value!r}"
    yield "tracks:"
    roots = [t for t in view.tracks.values() if t.parent_uuid not in view.tracks]
    seen: set[int] = set()

    def tree(track: Track, depth: int) -> Iterator[str]:
        if track.uuid in seen:
            return
        seen.add(track.uuid)
        yield "  " * (depth + 1) + _describe_track(track, short[track.uuid], uuids)
        for child in view.children_of(track.uuid):
            yield from tree(child, depth + 1)

    for root in roots:
        yield from tree(root, 0)
    for track in view.tracks.values():  # cycles: never reached from a root
        if track.uuid not in seen:
            yield from tree(track, 0)
    yield "events:"
    timeline: list[tuple[int, int, str, Slice | CounterSample]] = [
        (s.ts, s.order, "slice", s) for s in view.slices
    ] + [(s.ts, s.order, "sample", s) for s in view.samples]
    timeline.sort(key=lambda item: (item[0], item[1]))
    for ts, _, what, item in timeline:
        if isinstance(item, CounterSample):
            value = repr(float(item.value)) if item.is_double else str(item.value)
            yield f"  {when(ts)} C {track_ref(item.track_uuid)} = {value}"
            continue
        assert what == "slice"
        head = "I" if item.instant else "S"
        parts = [f"  {when(ts)} {head} {item.name!r} {track_ref(item.track_uuid)}"]
        parts.append(f"cat={item.category or '-'}")
        if not item.instant:
            parts.append(f"dur={item.dur}" if item.complete else "dur=UNTERMINATED")
        if item.flow_ids:
            parts.append("flows=" + ",".join(flow_names[f] for f in item.flow_ids))
        if item.terminating_flow_ids:
            parts.append("ends=" + ",".join(flow_names[f] for f in item.terminating_flow_ids))
        yield " ".join(parts)
        yield from _render_args(item.typed_args, "      ")
    if view.decode_problems:
        yield "decode problems:"
        for problem in view.decode_problems:
            yield f"  {problem}"


def _describe_track(track: Track, ident: str, uuids: bool) -> str:
    parts = [ident]
    if track.process is not None:
        labels = ",".join(track.process.labels)
        parts.append(f"process pid={track.process.pid} name={track.process.name!r}")
        if labels:
            parts.append(f"labels=[{labels}]")
    if track.thread is not None:
        parts.append(f"thread tid={track.thread.tid} name={track.thread.name!r}")
    if track.name:
        parts.append(repr(track.name))
    if track.is_counter:
        parts.append(f"counter unit={track.unit}")
        if track.unit_name:
            parts.append(f"unit_name={track.unit_name}")
        if track.y_axis_share_key:
            parts.append(f"share={track.y_axis_share_key}")
    if track.sibling_merge_behavior != "SIBLING_MERGE_BEHAVIOR_UNSPECIFIED":
        merge = track.sibling_merge_behavior.removeprefix("SIBLING_MERGE_BEHAVIOR_")
        parts.append(f"merge={merge}")
    if track.child_ordering:
        parts.append(f"children={track.child_ordering}")
    if track.sibling_order_rank is not None:
        parts.append(f"rank={track.sibling_order_rank}")
    if track.description:
        parts.append(f"description={json.dumps(track.description, ensure_ascii=False)}")
    if uuids:
        parts.append(f"uuid={track.uuid}")
    return " ".join(parts)
