"""The trace layout, format-neutral: model sessions → tracks, lanes, slices with their
arguments and flows, de-duplicated counter series and the order of events (TRACE_CONTRACT).

Both writers encode this and nothing else (writers/perfetto.py as protobuf,
writers/chrome_json.py as JSON), so they show the same slices and the same counter samples.
Track uuids are small numbers, 1, 2, 3 … in the order their keys are first asked for; flow ids
are `stable_id64` hashes of stable keys, the trace root's uuid too. Same sessions, same layout.

A session is planned, not laid out whole (`SessionPlan`): its lanes, uuids, counters and
the model relations its flows draw are worked out first, and its slices are made by blocks
(one per kind, in layout order) when a writer reads them. The Perfetto writer sweeps them
as they are made, holding a slice from its begin to its end; build_layout keeps them.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from typing import Any

from agent_profiler import estimate
from agent_profiler.annotations import (
    ContentMode,
    TraceFacts,
    TraceHeader,
    compaction_args,
    compaction_response_args,
    context_command_args,
    failed_request_args,
    profile_args,
    response_args,
    tool_args,
)
from agent_profiler.model import (
    AnchorKind,
    Category,
    ContextSnapshot,
    Prompt,
    Response,
    Session,
)
from agent_profiler.targets import shown
from agent_profiler.views import (
    compactions_after,
    iter_context_size,
    largest_tool_additions,
    model_runs,
    session_label,
    session_span,
    session_title,
    snapshots_in_time_order,
)

__all__ = [
    "TRACE_ROOT_UUID",
    "ContentMode",
    "CounterSeries",
    "LaidSlice",
    "Layout",
    "Merge",
    "SessionLayout",
    "SessionPlan",
    "TraceFacts",
    "TraceHeader",
    "Track",
    "TrackKind",
    "begin_events",
    "build_layout",
    "iter_layout",
    "ordered_sessions",
    "stable_id64",
    "start_rank",
    "trace_root",
]

CATEGORY_ESTIMATE_NOTE = estimate.CHARS4_NOTE
MAX_ADDITION_INSTANTS = 10
SHARE_KEY = "llm.context.tokens"
COUNTER_UNIT = "tokens"

# Same-timestamp order (TRACE_CONTRACT §1): lowest rank first.
R_CAPTURE_BEGIN, R_COUNTER_OPEN, R_SLICE_END, R_INSTANT, R_SLICE_BEGIN = 0, 1, 2, 3, 4
R_ZERO_END, R_COUNTER, R_COUNTER_CLOSE, R_CAPTURE_END = 5, 6, 7, 8

_COUNTER_DESCRIPTIONS = {
    "Input tokens": "Cumulative input tokens as the journal reports them (usage.input_tokens).",
    "Output tokens": "Cumulative output tokens as the journal reports them.",
    "Context size": "Reported request input (cached tokens counted once) at each model request; "
    "pre/post tokens around compactions.",
    "Context window": "The model's context window at each request (an axis of its own, so a "
    "small context on a large window is not flattened).",
    "Context fill": "Context size as a percentage of the window at each request (rounded up, "
    "so any context reads at least 1%).",
}
# Counters that are not token counts (TRACE_CONTRACT §6 asks `tokens` only of the
# capture's Input/Output/Context size and the `Context: *` categories).
_COUNTER_UNITS = {"Context fill": "%"}


# One dict for every turn slice (a long session has thousands); writers only read args.
_TURN_ARGS: dict[str, Any] = {"kind": "turn"}


def stable_id64(text: str) -> int:
    """A stable, non-zero 64-bit id for a key (flows, the trace root): the first 8 bytes of
    its BLAKE2b digest, little-endian. Any stable hash serves; BLAKE2b runs in C, which
    matters for the tens of thousands of flows of a long session."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") or 1


# --------------------------------------------------------------------------- public layout


class TrackKind(StrEnum):
    GROUP = "group"  # holds other tracks: a session's capture, the Context group
    SLICE = "slice"
    COUNTER = "counter"


class Merge(StrEnum):
    """How the UI merges sibling tracks (TrackDescriptor.sibling_merge_behavior)."""

    NONE = "none"  # a capture stays on its own, even beside one of the same name
    BY_NAME = "by-name"  # the lanes of one logical track show as one track


@dataclass(frozen=True, slots=True)
class Track:
    """One track descriptor. None or "" means "not said" (the encoder writes no field):
    an order rank of 0 is a rank, None is none."""

    uuid: int
    name: str
    kind: TrackKind
    parent: int | None = None
    order_rank: int | None = None  # place among its siblings (sibling_order_rank)
    explicit_child_order: bool = False  # children sorted by their order_rank
    merge: Merge | None = None
    description: str = ""
    counter_unit: str = ""  # counters only
    share_key: str = ""  # counters sharing one y axis


# The trace's one root track (docs/traces.md, "Sessions in the track tree"): every
# top-level session's group is its child. Written once per trace by the trace-level writer
# (TraceHeader), beside the clock snapshot; a hash, so that it meets no group's uuid block.
TRACE_ROOT_UUID = stable_id64("agent-profiler:trace-root")
# sibling_order_rank is an int32: a top-level session's rank is its real start in seconds
# from this epoch (2020-01-01 UTC), which every journal group works out alone.
_RANK_EPOCH_S = 1_577_836_800


def start_rank(start_ns: int) -> int:
    """A top-level session's place among the trace root's children: its real start, in
    seconds from 2020 (clamped to an int32), so groups laid out apart still agree."""
    seconds = start_ns // 1_000_000_000 - _RANK_EPOCH_S
    return max(-(2**31), min(2**31 - 1, seconds))


def trace_root(header: TraceHeader) -> Track:
    """The trace's root track: what the trace holds, in order of the sessions' real start."""
    return Track(
        TRACE_ROOT_UUID,
        header.root_name(),
        TrackKind.GROUP,
        explicit_child_order=True,
        merge=Merge.NONE,
        description=(
            "Sessions in order of their real start, each followed by its subagents. "
            + (
                "Clock aligned (--align start): every session starts at the same "
                "origin; its real start is on its profile (1) slice (real_start)."
                if header.aligned
                else "Times are the journals' wall-clock times."
            )
        ),
    )


Args = dict[str, Any]
Sample = tuple[int, int, int]  # a counter's (timestamp, rank, value)
Place = tuple[int, int, int, bool]  # a slice's (start, end, position, instant), for its lane


@dataclass(slots=True)
class LaidSlice:
    """A slice or (instant=True) an instant. build_layout fills it in; once it returns, no
    field changes. `track` is the logical track name; lanes of one name have their own
    `track_uuid`. A flow id sits on exactly two slices; `outgoing` holds those starting here.

    `args_source` is the arguments or a function of the (frozen) model that builds them:
    responses and tools carry the heavy ones (the `context` dict), which are built when a
    writer reads `args` and dropped once encoded, so a layout holds ≈ 1/4 of the memory."""

    track: str
    name: str
    start: int
    end: int
    category: str
    args_source: Args | Callable[[], Args]
    # Tuples, not a list and a set: most slices have none, and an empty set is 216 bytes
    # (a tenth of a long session's layout); a slice has at most a few flows.
    flows: tuple[int, ...] = ()
    outgoing: tuple[int, ...] = ()
    instant: bool = False
    track_uuid: int = 0

    @property
    def args(self) -> Args:
        """The slice's arguments (built anew on each read when they are lazy)."""
        source = self.args_source
        return source if isinstance(source, dict) else source()


@dataclass(frozen=True, slots=True)
class CounterSeries:
    """The samples of one counter track as (timestamp, rank, value), ordered by (timestamp,
    rank): a step function with repeated values dropped (Context size keeps every sample,
    one per request), at most one value per (timestamp, rank), the closing 0 last. A
    plan's series make their samples each time they are read; a SessionLayout's are a
    tuple."""

    track_uuid: int
    name: str
    samples: Iterable[Sample]


class _Remade:
    """An iterable made afresh by each reading (a plan's counter samples)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Iterator[Sample]]) -> None:
        self.make = make

    def __iter__(self) -> Iterator[Sample]:
        return self.make()


@dataclass(frozen=True, slots=True)
class SessionLayout:
    """One session's tracks (in declaration order), slices and counter series."""

    session: Session
    activity: str  # the category of its activity slices and counters
    capture_uuid: int
    tracks: tuple[Track, ...]
    slices: tuple[LaidSlice, ...]
    counters: tuple[CounterSeries, ...]

    def slice_events(self) -> Iterator[tuple[int, int, int, LaidSlice, bool]]:
        """(timestamp, rank, order, slice, is_end) for every slice begin, instant and
        slice end; `order` is the slice's position, which breaks ties of (ts, rank)."""
        for ts, rank, order, slice_ in begin_events(self.slices):
            yield ts, rank, order, slice_, False
            if rank != R_INSTANT:
                yield slice_.end, end_rank(slice_), order, slice_, True


@dataclass(frozen=True, slots=True)
class SessionPlan:
    """One session's tracks and counter series, and its slices as blocks that make them
    when read: `slices()` in layout order, `begins()` in the order a writer sweeps them.
    A long session's slices are made one at a time, so neither is held whole."""

    session: Session
    activity: str  # the category of its activity slices and counters
    capture_uuid: int
    tracks: tuple[Track, ...]
    counters: tuple[CounterSeries, ...]
    blocks: tuple[_Block, ...]

    @property
    def slice_count(self) -> int:
        return sum(block.count for block in self.blocks)

    def slices(self) -> Iterator[LaidSlice]:
        """Every slice, in layout order (a SessionLayout's `slices`)."""
        for block in self.blocks:
            yield from block.make()

    def begins(self) -> Iterator[tuple[int, int, int, LaidSlice]]:
        """(start, begin rank, order, slice) of every slice, ordered so; `order` is the
        slice's position in `slices()` from 1. Blocks made in that order already (the
        long ones: prompts, responses, tools) are merged as they are made; the others,
        short, are sorted."""
        streams: list[Iterator[tuple[int, int, int, LaidSlice]]] = []
        loose: list[tuple[int, int, int, LaidSlice]] = []
        offset = 0
        for block in self.blocks:
            if block.ordered:
                streams.append(begin_events(block.make(), offset))
            else:
                loose += begin_events(block.make(), offset)
            offset += block.count
        loose.sort()  # (start, rank, order) are unique: no two slices are compared
        streams.append(iter(loose))
        return heapq.merge(*streams)

    def laid_out(self) -> SessionLayout:
        """The plan with its slices made and kept."""
        return SessionLayout(
            self.session,
            self.activity,
            self.capture_uuid,
            self.tracks,
            tuple(self.slices()),
            tuple(CounterSeries(c.track_uuid, c.name, tuple(c.samples)) for c in self.counters),
        )


def begin_rank(slice_: LaidSlice) -> int:
    """Where a slice's begin (or instant) goes among events of the same time (§1)."""
    if slice_.instant:
        return R_INSTANT
    return R_CAPTURE_BEGIN if slice_.name.startswith("profile (") else R_SLICE_BEGIN


def end_rank(slice_: LaidSlice) -> int:
    """Where a slice's end goes among events of the same time (§1)."""
    if slice_.name.startswith("profile ("):
        return R_CAPTURE_END
    return R_ZERO_END if slice_.end == slice_.start else R_SLICE_END


def begin_events(
    slices: Iterable[LaidSlice], offset: int = 0
) -> Iterator[tuple[int, int, int, LaidSlice]]:
    """(start, begin rank, order, slice) of `slices`, in their order; order counts from
    `offset` + 1."""
    for order, slice_ in enumerate(slices, start=offset + 1):
        yield slice_.start, begin_rank(slice_), order, slice_


@dataclass(frozen=True, slots=True)
class Layout:
    """Everything a writer encodes: each session's group track (named for the session),
    then each session's layout, in ordered_sessions' order."""

    groups: tuple[Track, ...]
    sessions: tuple[SessionLayout, ...]


# --------------------------------------------------------------------------- building


# Track uuids of the journal group numbered `group` start at `group * UUID_BLOCK + 1`, so
# groups can be laid out apart (in worker processes) and their uuids never meet. A single
# group (one journal, one session tree) keeps the small uuids 1, 2, 3 …
UUID_BLOCK = 1 << 20


class _TrackIds:
    """Track uuids numbered base + 1, base + 2 … in the (deterministic) order their keys
    are first asked for, rather than hashed: a uuid is written on every event, and a small
    one is 1–3 bytes instead of 10."""

    def __init__(self, group: int = 0) -> None:
        self.ids: dict[str, int] = {}
        self.base = group * UUID_BLOCK

    def get(self, key: str) -> int:
        uuid = self.ids.get(key)
        if uuid is None:
            if len(self.ids) + 1 >= UUID_BLOCK:
                raise OverflowError(f"more than {UUID_BLOCK - 1} tracks in one journal group")
            uuid = self.ids[key] = self.base + len(self.ids) + 1
        return uuid


class _Lanes:
    """First-fit lanes of one logical track: a slice goes on the lowest-numbered lane
    that is free at its start. Heaps keep this O(log n) per slice; a scan of every lane
    was quadratic when thousands of requests overlap."""

    def __init__(self) -> None:
        self.count = 0
        self.busy: list[tuple[int, int]] = []  # (busy until, lane)
        self.free: list[int] = []

    def take(self, start: int, busy_until: int) -> int:
        while self.busy and self.busy[0][0] <= start:
            heapq.heappush(self.free, heapq.heappop(self.busy)[1])
        if self.free:
            lane = heapq.heappop(self.free)
        else:
            lane = self.count
            self.count += 1
        heapq.heappush(self.busy, (busy_until, lane))
        return lane


def _no_samples() -> Iterator[Sample]:
    return iter(())


@dataclass(slots=True)
class _Counter:
    name: str
    parent: str  # "capture" or "context"
    share: bool
    description: str
    # Its samples before the closing zero, in (ts, rank) order, made when read: from the
    # model, or from the few values kept (a Context counter's changes, in two arrays).
    made: Callable[[], Iterator[Sample]] = _no_samples
    uuid: int = 0


@dataclass(frozen=True, slots=True)
class _Links:
    """Which items of one list (sources) link to which of another (targets), in arrays:
    each target's source (-1: none) and each source's targets, in their order."""

    source_of: array[int]
    starts: array[int]  # source i's targets are targets[starts[i]:starts[i + 1]]
    targets: array[int]

    @classmethod
    def of(cls, sources: int, source_of: Iterable[int]) -> _Links:
        of = array("q", source_of)
        counts = array("q", bytes(8 * (sources + 1)))
        for source in of:
            if source >= 0:
                counts[source + 1] += 1
        starts = array("q", itertools.accumulate(counts))
        targets = array("q", bytes(8 * starts[-1]))
        filled = starts[:-1]
        for target, source in enumerate(of):
            if source >= 0:
                targets[filled[source]] = target
                filled[source] += 1
        return cls(of, starts, targets)

    def targets_of(self, source: int) -> array[int]:
        return self.targets[self.starts[source] : self.starts[source + 1]]


def _linked(
    index: dict[str, int], key: str | None, start: int, sources: Sequence[Response | Prompt]
) -> int:
    """The source a flow to an item starting at `start` comes from (-1: none): the one
    `key` names, unless it starts later (a flow never points back in time)."""
    found = index.get(key, -1) if key else -1
    return -1 if found < 0 or start < sources[found].start_ns else found


@dataclass(frozen=True, slots=True)
class _Block:
    """A run of one session's slices in their layout order, made afresh by each reading
    (`make`): the Perfetto writer sweeps them as they are made, so a long session's slices
    are never all held (SessionPlan.begins); build_layout keeps them (SessionLayout)."""

    kind: str  # which slices: their place in the layout is found by it (`_places`)
    count: int
    make: Callable[[], Iterator[LaidSlice]]
    ordered: bool = False  # made in (start, begin rank) order already


class _SessionBuilder:
    """Plans one session's slices, counters and tracks (`build`, the links, then
    `assign_tracks`); `finish` hands over the plan, whose blocks make the slices."""

    def __init__(
        self, session: Session, parent_uuid: int | None, facts: TraceFacts, ids: _TrackIds
    ) -> None:
        self.session = session
        self.key = session.session_id
        self.ids = ids
        self.prefix = session.harness.category_prefix
        self.activity = f"{self.prefix}.activity"
        self.metadata = f"{self.prefix}.metadata"
        self.capture_uuid = ids.get(f"capture:{self.key}")
        self.parent_uuid = parent_uuid
        self.facts = facts
        # A calibrated export says so wherever the trace describes its estimates.
        calibrated = estimate.is_calibrated(x.basis for x in session.snapshots)
        self.estimate_note = estimate.CALIBRATED_NOTE if calibrated else CATEGORY_ESTIMATE_NOTE
        self.estimation = (
            estimate.CALIBRATED_ESTIMATION if calibrated else estimate.CHARS4_ESTIMATION
        )
        self.blocks: list[_Block] = []
        self.counters: dict[str, _Counter] = {}
        self.tracks: list[Track] = []
        # The capture spans everything the session holds, so every counter's closing
        # zero comes after its last sample.
        self.start, self.end = session_span(session)
        # The last model run ends where the session's span does, before `build` may move
        # the end 1 ns past a counter's last sample.
        self.runs_end = self.end
        # The call ids of the capture's tool slices (one per tool call): the changes they
        # caused link to them, which lets `context` leave out what the link already says.
        self.call_ids = frozenset(call.call_id for call in session.tool_calls)
        # Each snapshot's predecessor in time, by position in `session.snapshots` (-1:
        # none; snapshots are frozen and may be equal), against which repeated optional
        # `context` keys are left out; none for a snapshot that shares its time with the
        # one before (a reader could not order the two). Stable: as snapshots_in_time_order.
        snapshots = session.snapshots
        in_time = sorted(range(len(snapshots)), key=lambda i: snapshots[i].time_ns)
        self.before = array("q", itertools.repeat(-1, len(snapshots)))
        for before, after in itertools.pairwise(in_time):
            if snapshots[before].time_ns < snapshots[after].time_ns:
                self.before[after] = before
        del in_time
        # The model's items in the order their slices are laid out.
        self.responses = sorted(
            [*session.responses, *session.unmetered_responses],
            key=lambda r: (r.start_ns, r.end_ns, r.id),
        )
        self.calls = sorted(session.tool_calls, key=lambda c: (c.start_ns, c.call_id))
        self.runs = model_runs(session)
        self.natives = [i for i, x in enumerate(snapshots) if x.anchor is AnchorKind.NATIVE]
        # Flows, as the relations of the model that they draw: worked out here, their ids
        # made with the slices. A prompt id names its first prompt; a response id its last
        # response, and a call id its last tool call (the slice a later one replaced).
        first_prompt: dict[str, int] = {}
        for index, prompt in enumerate(session.prompts):
            first_prompt.setdefault(prompt.id, index)
        self.prompt_links = _Links.of(  # prompt → its responses
            len(session.prompts),
            (
                _linked(first_prompt, r.prompt_id, r.start_ns, session.prompts)
                for r in self.responses
            ),
        )
        last_response = {response.id: index for index, response in enumerate(self.responses)}
        self.call_links = _Links.of(  # response → its tool calls
            len(self.responses),
            (_linked(last_response, c.response_id, c.start_ns, self.responses) for c in self.calls),
        )
        self.call_flows: dict[int, tuple[int, ...]] = {}  # call index → flows starting there
        self.additions: list[LaidSlice] = []
        self.child_flows: tuple[int, ...] = ()  # flows from a parent's tool to the first input
        self.session_input = False  # no prompt: the first input is made at the start
        # Filled by assign_tracks: each slice's lane, per track and per block item.
        self.lanes: dict[str, array[int]] = {}
        self.lane_uuids: dict[str, list[int]] = {}

    # -- helpers ----------------------------------------------------------

    def uuid(self, key: str) -> int:
        return self.ids.get(f"{self.key}:{key}")

    def previous(self, position: int | None) -> ContextSnapshot | None:
        """The snapshot before the one at `position` in time (see `before`)."""
        found = -1 if position is None else self.before[position]
        return self.session.snapshots[found] if found >= 0 else None

    def anchored(self, anchor: AnchorKind) -> dict[str, int]:
        """anchor id → the position of its (last) snapshot of that anchor kind."""
        return {x.anchor_id: i for i, x in enumerate(self.session.snapshots) if x.anchor is anchor}

    def flow_id(self, key: str) -> int:
        return stable_id64(f"{self.key}:flow:{key}")

    def _last_calls(self, call_ids: set[str]) -> dict[str, int]:
        """call id → the index of its (last) tool slice, for these ids."""
        return {call.call_id: i for i, call in enumerate(self.calls) if call.call_id in call_ids}

    def counter(self, name: str, parent: str = "capture", share: bool = False) -> _Counter:
        if name not in self.counters:
            description = _COUNTER_DESCRIPTIONS.get(name, "")
            if parent == "context":
                description = (
                    f"Tokens of this context category at each observed snapshot ("
                    f"{self.estimate_note}; native counts where the journal has them)."
                )
            self.counters[name] = _Counter(name, parent, share, description)
        return self.counters[name]

    # -- building ---------------------------------------------------------

    def build(self) -> None:
        session = self.session
        prompts = session.prompts
        requests = sum(1 for c in session.compactions if c.request is not None)
        self.blocks += [
            _Block("capture", 1, self._profile, ordered=True),
            _Block(
                "prompts",
                2 * len(prompts),
                self._prompts,
                # (instant, prompt) pairs are in (start, rank) order when starts increase
                ordered=all(a.start_ns < b.start_ns for a, b in itertools.pairwise(prompts)),
            ),
            _Block("responses", 2 * len(self.responses), self._responses, ordered=True),
            _Block("tools", len(self.calls), self._tools, ordered=True),
            _Block("compactions", len(session.compactions) + requests, self._compactions),
            _Block("runs", len(self.runs), self._configuration, _rising(s for s, _ in self.runs)),
            _Block(
                "failed",
                len(session.failed_requests),
                self._failed_requests,
                _rising(r.start_ns for r in session.failed_requests),
            ),
            _Block(
                "markers",
                len(session.markers),
                self._markers,
                _rising(m.time_ns for m in session.markers),
            ),
            _Block(
                "natives",
                len(self.natives),
                self._native_reports,
                _rising(self.session.snapshots[i].time_ns for i in self.natives),
            ),
        ]
        last_sample = self._response_counters()
        latest_context = self._context_counters()
        self._largest_additions()
        self.blocks.append(_Block("additions", len(self.additions), lambda: iter(self.additions)))
        # Every counter's last value is 0 at the session's end (TRACE_CONTRACT §6), and it
        # must be the last sample in time too: Trace Processor orders a track's samples by
        # timestamp only, so a closing zero sharing its timestamp with the last sample
        # (cumulative usage at the final response's end, which is usually the session's
        # end) reads as "the last value is N" to anyone ordering by ts. So when a sample
        # sits at the end, the session ends 1 ns later: all counters still drop together,
        # at the end of `profile (1)`, which still spans every sample of its capture
        # (§3), and 1 ns is below anything a journal's clock resolves.
        if latest_context is not None:  # its repeats were dropped, not its time
            last_sample = max(last_sample, latest_context)
        if self.counters and last_sample >= self.end:
            self.end = last_sample + 1  # profile (1) and the closing zeros are made with it

    def _profile(self) -> Iterator[LaidSlice]:
        args = profile_args(
            self.session,
            self.facts,
            self.capture_uuid,
            self.start,
            self.estimation,
            {
                id(snapshot): previous
                for i, snapshot in enumerate(self.session.snapshots)
                if snapshot.anchor is AnchorKind.SESSION
                and (previous := self.previous(i)) is not None
            },
            self.call_ids,
        )
        yield LaidSlice(
            "Session",
            "profile (1)",
            self.start,
            self.end,
            self.metadata,
            args,
            track_uuid=self.lane_uuids["Session"][0],
        )

    def _prompts(self) -> Iterator[LaidSlice]:
        previews = self.facts.content is ContentMode.PREVIEWS
        inputs = self._lanes_of("Inputs")[1]  # instants: all on the first lane
        lanes, uuids = self._lanes_of("Prompts")
        for index, prompt in enumerate(self.session.prompts):
            # Keyed by position: two prompts may share an id in a damaged journal, and
            # a flow id must sit on exactly two events.
            arrival = self.flow_id(f"input:{index}")
            yield LaidSlice(
                "Inputs",
                "prompt-input",
                prompt.start_ns,
                prompt.start_ns,
                self.activity,
                {"source": prompt.source, "timing": "journal-record-time"},
                flows=(arrival, *self.child_flows) if index == 0 else (arrival,),
                outgoing=(arrival,),
                instant=True,
                track_uuid=inputs[0],
            )
            text = prompt.preview if previews else f"[{prompt.chars} chars; not included]"
            args: dict[str, Any] = {
                "kind": "prompt",
                "text": text,
                "length": prompt.chars,
                "turn_id": prompt.id,
                "source": prompt.source,
            }
            out = tuple(
                self.flow_id(f"prompt:{self.responses[j].id}")
                for j in self.prompt_links.targets_of(index)
            )
            yield LaidSlice(
                "Prompts",
                "prompt",
                prompt.start_ns,
                prompt.end_ns,
                self.activity,
                args,
                flows=(arrival, *out),
                outgoing=out,
                track_uuid=uuids[lanes[index]],
            )

    def _response_counters(self) -> int:
        """The counters of the requests, made from the model when read. Returns the time
        of their last sample (the session's start when there is none)."""
        s = self.session
        self.counter("Context size", share=True).made = self._size_samples
        if s.window_tokens:
            # Its own y axis (no share key): on a 1M-token window a 40k-token context
            # drawn on the window's scale is one pixel tall (issue 29).
            self.counter("Context window").made = self._window_samples
            self.counter("Context fill").made = self._fill_samples
        self.counter("Input tokens").made = partial(self._usage_samples, output=False)
        self.counter("Output tokens").made = partial(self._usage_samples, output=True)
        # Cumulative usage at each response end, in end order (so it never goes down),
        # compaction requests included: they consume tokens without being a turn.
        self.finished = sorted(
            [*s.responses, *(c.request for c in s.compactions if c.request is not None)],
            key=lambda r: (r.end_ns, r.start_ns, r.id),
        )
        last = self.start  # each opens with a 0 there
        for ts, _ in iter_context_size(s):
            last = max(last, ts)
        if s.window_tokens and self.responses:
            last = max(last, self.responses[-1].start_ns)
        if self.finished:
            last = max(last, self.finished[-1].end_ns)
        return last

    def _size_samples(self) -> Iterator[Sample]:
        yield self.start, R_COUNTER_OPEN, 0
        for ts, tokens in iter_context_size(self.session):
            yield ts, R_COUNTER, tokens

    def _fill_samples(self) -> Iterator[Sample]:
        yield self.start, R_COUNTER_OPEN, 0
        window = self.session.window_tokens or 1
        for ts, tokens in iter_context_size(self.session):
            yield ts, R_COUNTER, -(-tokens * 100 // window)  # rounded up

    def _window_samples(self) -> Iterator[Sample]:
        # Responses whose usage the journal left at zero are drawn too (usage unknown).
        yield self.start, R_COUNTER_OPEN, 0
        window = self.session.window_tokens or 0
        for response in self.responses:
            yield response.start_ns, R_COUNTER, window

    def _usage_samples(self, output: bool) -> Iterator[Sample]:
        yield self.start, R_COUNTER_OPEN, 0
        total = 0
        for response in self.finished:
            total += response.usage.output_tokens if output else response.usage.input_tokens
            yield response.end_ns, R_COUNTER, total

    def _responses(self) -> Iterator[LaidSlice]:
        s = self.session
        snapshots = self.anchored(AnchorKind.RESPONSE)
        lanes, responses = self._lanes_of("Responses")
        turn_lanes, turns = self._lanes_of("Turns")
        for index, response in enumerate(self.responses):
            position = snapshots.get(response.id)
            args = partial(
                response_args,
                s,
                response,
                None if position is None else s.snapshots[position],
                self.previous(position),
                index == 0,
                self.call_ids,
            )
            arrival = (
                (self.flow_id(f"prompt:{response.id}"),)
                if self.prompt_links.source_of[index] >= 0
                else ()
            )
            out = tuple(
                self.flow_id(f"tool:{self.calls[k].call_id}")
                for k in self.call_links.targets_of(index)
            )
            lane = lanes[index]
            yield LaidSlice(
                "Responses",
                "response",
                response.start_ns,
                response.end_ns,
                self.activity,
                args,
                flows=arrival + out,
                outgoing=out,
                track_uuid=responses[lane],
            )
            yield LaidSlice(
                "Turns",
                "turn",
                response.start_ns,
                response.end_ns,
                self.activity,
                _TURN_ARGS,
                track_uuid=turns[turn_lanes[index]],
            )

    def _tools(self) -> Iterator[LaidSlice]:
        previews = self.facts.content is ContentMode.PREVIEWS
        lanes, uuids = self._lanes_of("Tools")
        for index, call in enumerate(self.calls):
            linked = self.call_links.source_of[index] >= 0
            arrival = (self.flow_id(f"tool:{call.call_id}"),) if linked else ()
            out = self.call_flows.get(index, ())
            yield LaidSlice(
                "Tools",
                call.name,
                call.start_ns,
                call.end_ns,
                self.activity,
                partial(tool_args, call, previews, not self.facts.redact),
                flows=arrival + out,
                outgoing=out,
                track_uuid=uuids[lanes[index]],
            )

    def _compactions(self) -> Iterator[LaidSlice]:
        snapshots = self.anchored(AnchorKind.COMPACTION)
        lanes, uuids = self._lanes_of("Compaction")
        request_lanes, request_uuids = self._lanes_of("Compaction responses")
        requests = 0
        after = compactions_after(self.session)
        for index, compaction in enumerate(self.session.compactions):
            position = snapshots.get(compaction.id)
            args = partial(
                compaction_args,
                compaction,
                None if position is None else self.session.snapshots[position],
                self.previous(position),
                self.call_ids,
                after[index],
            )
            yield LaidSlice(
                "Compaction",
                compaction.kind,
                compaction.start_ns,
                compaction.end_ns,
                self.activity,
                args,
                track_uuid=uuids[lanes[index]],
            )
            request = compaction.request
            if request is not None:
                yield LaidSlice(
                    "Compaction responses",
                    "response",
                    request.start_ns,
                    request.end_ns,
                    self.activity,
                    compaction_response_args(request),
                    track_uuid=request_uuids[request_lanes[requests]],
                )
                requests += 1

    def _configuration(self) -> Iterator[LaidSlice]:
        s = self.session
        lanes, uuids = self._lanes_of("Configuration")
        for index, (start, model) in enumerate(self.runs):
            end = self._run_end(index)
            args: dict[str, Any] = {
                "harness": s.harness.value,
                "provider": s.provider or "unknown",
                "model": model,
            }
            if s.window_tokens:
                args["context_window_tokens"] = s.window_tokens
            yield LaidSlice(
                "Configuration",
                "run-configuration",
                start,
                end,
                self.metadata,
                args,
                track_uuid=uuids[lanes[index]],
            )

    def _run_end(self, index: int) -> int:
        """A model run lasts until the next one starts, the last one to the span's end."""
        return self.runs[index + 1][0] if index + 1 < len(self.runs) else self.runs_end

    def _failed_requests(self) -> Iterator[LaidSlice]:
        """Requests that failed before any usage came: spans with no size, so they never
        read as a request of 0 tokens (TRACE_CONTRACT §4: request without completion)."""
        lanes, uuids = self._lanes_of("Requests")
        for index, request in enumerate(self.session.failed_requests):
            yield LaidSlice(
                "Requests",
                "request",
                request.start_ns,
                max(request.end_ns, request.start_ns),
                self.activity,
                failed_request_args(request),
                track_uuid=uuids[lanes[index]],
            )

    def _native_reports(self) -> Iterator[LaidSlice]:
        """The harness's own context reports (Claude Code's /context runs), each a
        zero-length slice carrying its native snapshot."""
        lanes, uuids = self._lanes_of("Context command")
        for index, position in enumerate(self.natives):
            snapshot = self.session.snapshots[position]
            yield LaidSlice(
                "Context command",
                "/context",
                snapshot.time_ns,
                snapshot.time_ns,
                self.activity,
                partial(
                    context_command_args,
                    snapshot,
                    self.previous(position),
                    self.call_ids,
                ),
                track_uuid=uuids[lanes[index]],
            )

    def _markers(self) -> Iterator[LaidSlice]:
        uuids = self._lanes_of("Configuration")[1]  # instants: all on the first lane
        for marker in self.session.markers:
            label = marker.kind.replace("_", " ")
            yield LaidSlice(
                "Configuration",
                f"{label}: {marker.value}",
                marker.time_ns,
                marker.time_ns,
                self.activity,
                {"marker": marker.kind, "value": marker.value},
                instant=True,
                track_uuid=uuids[0],
            )

    def _context_counters(self) -> int | None:
        """A sample per category present so far at each snapshot, in time order, except one
        that repeats the counter's previous sample (a step function would drop it): only
        the changes are kept, as a time and a value in two arrays, and the samples are
        made from them when read. Returns the time of the last snapshot sampled (None:
        none was), since the session's end depends on it whether or not its samples were
        kept."""
        kept: dict[Category, tuple[array[int], array[int]]] = {}
        latest: int | None = None
        for snapshot in snapshots_in_time_order(self.session):
            present = dict(snapshot.categories)
            for category in present:
                if category not in kept:
                    counter = self.counter(f"Context: {category.label}", "context", share=True)
                    times, values = array("q"), array("q")
                    counter.made = partial(_kept_samples, times, values)
                    kept[category] = times, values
            for category, (times, values) in kept.items():
                value = present.get(category, 0)
                if not values or values[-1] != value:
                    times.append(snapshot.time_ns)
                    values.append(value)
            if kept:
                latest = snapshot.time_ns  # in time order: the latest so far
        return latest

    def _largest_additions(self) -> None:
        # Only additions a tool call caused, at most ten: an instant here exists to carry a
        # flow arrow from its tool call, and ten arrows are what a reader can follow. The
        # report lists every addition, the summary the largest of each request (views.py).
        caused = largest_tool_additions(self.session, MAX_ADDITION_INSTANTS)
        last_call = self._last_calls({a.change.source_id for a in caused})
        for rank, addition in enumerate(caused, start=1):
            change, snapshot = addition.change, addition.snapshot
            index = last_call[change.source_id]
            tool = self.calls[index]
            # No `kind` and no `context` here: Agent Profiler's tables must skip these
            # (TRACE_CONTRACT §9); they exist for ui.perfetto.dev's flow arrows. The tool's
            # target says what caused the addition (not with --redact).
            _, target = shown(tool.target) if not self.facts.redact else ("", "")
            what = f"{tool.name} {target}" if target else tool.name
            extra = {"target": target} if target else {}
            instant = LaidSlice(
                "Largest additions",
                f"+{change.delta_tokens:,} tokens · {what} ({change.label or 'item'})",
                snapshot.time_ns,
                snapshot.time_ns,
                "agentprof-additions",
                {
                    "rank": rank,
                    "delta_tokens": change.delta_tokens,
                    "tokens": change.tokens,
                    "category": change.category.value,
                    "item_id": change.id,
                    "tool_call_id": change.source_id,
                    "tool": tool.name,
                    **extra,
                    "estimate": self.estimate_note,
                },
                instant=True,
            )
            if instant.start >= tool.start_ns:  # a flow never points back in time
                flow_id = self.flow_id(f"addition:{change.id}:{snapshot.time_ns}")
                self.call_flows[index] = (*self.call_flows.get(index, ()), flow_id)
                instant.flows = (flow_id,)
            self.additions.append(instant)

    def link_out(self, links: Sequence[tuple[str, Session]]) -> None:
        """The launching tools' ends of the flows to their children's first prompt-input
        (each child's builder adds the other end: sessions are laid out one at a time)."""
        last_call = self._last_calls({call_id for call_id, _ in links})
        for call_id, child in links:
            index = last_call[call_id]
            if _first_input_start(child) < self.calls[index].start_ns:
                continue
            flow_id = stable_id64(f"{self.key}:flow:child:{call_id}:{child.session_id}")
            self.call_flows[index] = (*self.call_flows.get(index, ()), flow_id)

    def link_in(self, parent: Session, call_id: str, tool_start: int) -> None:
        """The child's end of a flow from its launching tool (see link_out): its first
        prompt-input, made at the session's start when it has none."""
        if not self.session.prompts and not self.session_input:
            self.session_input = True
            self.blocks.append(_Block("session input", 1, self._session_input))
        start = self.session.prompts[0].start_ns if self.session.prompts else self.start
        if start < tool_start:
            return
        self.child_flows += (stable_id64(f"{parent.session_id}:flow:child:{call_id}:{self.key}"),)

    def _session_input(self) -> Iterator[LaidSlice]:
        yield LaidSlice(
            "Inputs",
            "prompt-input",
            self.start,
            self.start,
            self.activity,
            {"source": "agent", "timing": "session-start"},
            flows=self.child_flows,
            instant=True,
            track_uuid=self._lanes_of("Inputs")[1][0],
        )

    # -- lanes and tracks ---------------------------------------------------

    def _places(self) -> Iterator[tuple[str, list[Place]]]:
        """Every slice but the capture's, one track at a time: (start, end, position,
        instant) in the order its blocks make them (position: its place in the layout,
        from 0). One track's list is made at a time: a long session's are not all held."""
        at: dict[str, int] = {}  # block kind → its first slice's place in the layout
        offset = 0
        for block in self.blocks:
            at[block.kind] = offset
            offset += block.count
        session = self.session
        inputs: list[Place] = [
            (p.start_ns, p.start_ns, at["prompts"] + 2 * i, True)
            for i, p in enumerate(session.prompts)
        ]
        if self.session_input:
            inputs.append((self.start, self.start, at["session input"], True))
        yield "Inputs", inputs
        yield (
            "Prompts",
            [
                (p.start_ns, p.end_ns, at["prompts"] + 2 * i + 1, False)
                for i, p in enumerate(session.prompts)
            ],
        )
        for track, first in (("Responses", at["responses"]), ("Turns", at["responses"] + 1)):
            yield (
                track,
                [
                    (r.start_ns, r.end_ns, first + 2 * i, False)
                    for i, r in enumerate(self.responses)
                ],
            )
        yield (
            "Tools",
            [(c.start_ns, c.end_ns, at["tools"] + i, False) for i, c in enumerate(self.calls)],
        )
        compactions: list[Place] = []
        requests: list[Place] = []
        position = at["compactions"]
        for compaction in session.compactions:
            compactions.append((compaction.start_ns, compaction.end_ns, position, False))
            position += 1
            if compaction.request is not None:
                request = compaction.request
                requests.append((request.start_ns, request.end_ns, position, False))
                position += 1
        yield "Compaction", compactions
        yield "Compaction responses", requests
        yield (
            "Configuration",
            [
                *(
                    (start, self._run_end(i), at["runs"] + i, False)
                    for i, (start, _) in enumerate(self.runs)
                ),
                *(
                    (m.time_ns, m.time_ns, at["markers"] + i, True)
                    for i, m in enumerate(session.markers)
                ),
            ],
        )
        yield (
            "Requests",
            [
                (r.start_ns, max(r.end_ns, r.start_ns), at["failed"] + i, False)
                for i, r in enumerate(session.failed_requests)
            ],
        )
        yield (
            "Context command",
            [
                (
                    session.snapshots[p].time_ns,
                    session.snapshots[p].time_ns,
                    at["natives"] + i,
                    False,
                )
                for i, p in enumerate(self.natives)
            ],
        )
        yield (
            "Largest additions",
            [(a.start, a.start, at["additions"] + i, True) for i, a in enumerate(self.additions)],
        )

    def _lanes_of(self, track: str) -> tuple[array[int], list[int]]:
        """The lane of each slice of `track` (in its block's order) and each lane's uuid."""
        return self.lanes.get(track, _NO_LANES), self.lane_uuids.get(track, [])

    def assign_tracks(self) -> None:
        """Give each slice a track: one lane per logical track unless slices overlap,
        then first-fit lanes with the same name (merged by name in the UI). Slices take
        their lanes in (start, longest first, layout order), and a lane's track uuid is
        numbered at the first slice that takes it."""
        self.tracks.append(
            Track(
                self.capture_uuid,
                "agentprof.capture",
                TrackKind.GROUP,
                parent=self.parent_uuid,
                order_rank=0,  # first in its session's group, before its subagents
                explicit_child_order=True,
                merge=Merge.NONE,
                description=session_label(self.session),
            )
        )
        context_group = self.uuid("group:Context")
        first = [((self.start, -self.end, 0), "Session", 0)]
        counts: dict[str, int] = {}
        for track, places in self._places():
            if not places:
                continue
            lanes, firsts, counts[track] = _first_fit(places)
            self.lanes[track] = lanes
            first += [(key, track, lane) for lane, key in firsts.items()]
        first.sort()
        for _, track, lane in first:
            key = "Session:profile" if track == "Session" else f"{track}:{lane}"
            uuids = self.lane_uuids.setdefault(track, [0] * counts.get(track, 1))
            uuids[lane] = self.uuid(key)
        # Tracks: profile track first, then the logical tracks in a fixed order.
        self.tracks.append(
            Track(
                self.lane_uuids["Session"][0],
                "Session",
                TrackKind.SLICE,
                parent=self.capture_uuid,
                order_rank=_DISPLAY_RANK["Session"],
            )
        )
        for name in _SLICE_TRACKS:
            for lane in range(counts.get(name, 0)):
                self.tracks.append(
                    Track(
                        self.lane_uuids[name][lane],
                        name,
                        TrackKind.SLICE,
                        parent=self.capture_uuid,
                        order_rank=_DISPLAY_RANK[name],
                        merge=Merge.BY_NAME,
                    )
                )
        for counter in self.counters.values():
            if counter.parent == "capture":
                self._counter_track(counter, self.capture_uuid)
        context_counters = [c for c in self.counters.values() if c.parent == "context"]
        if context_counters or self.additions:
            self.tracks.append(
                Track(
                    context_group,
                    "Context",
                    TrackKind.GROUP,
                    parent=self.capture_uuid,
                    order_rank=_DISPLAY_RANK["Context"],
                    explicit_child_order=True,
                    description="Context composition by category (" + self.estimate_note + "). "
                    "'Context size' beside it is the reported request input.",
                )
            )
            for counter in context_counters:
                self._counter_track(counter, context_group)
            if self.additions:
                self.tracks.append(
                    Track(
                        self.lane_uuids["Largest additions"][0],
                        "Largest additions",
                        TrackKind.SLICE,
                        parent=context_group,
                        # First in the group: right below the Tools lanes' neighbours, so
                        # the arrows from the tool calls cross as few counters as possible.
                        order_rank=0,
                        description="The largest non-baseline additions to the context; "
                        "each has a flow arrow from the tool call that caused it.",
                    )
                )
        for instant in self.additions:
            instant.track_uuid = self.lane_uuids["Largest additions"][0]

    def _counter_track(self, counter: _Counter, parent: int) -> None:
        counter.uuid = self.uuid(f"counter:{counter.name}")
        if counter.parent == "context":
            # Categories in the contract's fixed order (the head of a request first, then
            # the conversation, Unattributed last), the same in every session; they are
            # still declared in order of first appearance (TRACE_CONTRACT §6).
            label = counter.name.removeprefix("Context: ")
            rank = 1 + _CATEGORY_RANK.get(label, len(_CATEGORY_RANK))
        else:
            rank = _DISPLAY_RANK[counter.name]
        self.tracks.append(
            Track(
                counter.uuid,
                counter.name,
                TrackKind.COUNTER,
                parent=parent,
                order_rank=rank,
                description=counter.description,
                counter_unit=_COUNTER_UNITS.get(counter.name, COUNTER_UNIT),
                share_key=SHARE_KEY if counter.share else "",
            )
        )

    def _series(self, counter: _Counter) -> CounterSeries:
        """A counter's series: its samples and the closing zero at the session's end, as
        a step function (`_steps`), made when read."""
        keep_repeats = counter.name == "Context size"
        closing = ((self.end, R_COUNTER_CLOSE, 0),)

        def samples() -> Iterator[Sample]:
            return _steps(itertools.chain(counter.made(), closing), keep_repeats)

        return CounterSeries(counter.uuid, counter.name, _Remade(samples))

    def finish(self) -> SessionPlan:
        """The session's plan; counters become step-function series here. The plan's
        blocks and samples are the builder's methods: the builder lets go of them, so the
        two are not a cycle that only the garbage collector frees."""
        blocks, self.blocks = tuple(self.blocks), []
        counters, self.counters = self.counters, {}  # their samples are its methods too
        return SessionPlan(
            self.session,
            self.activity,
            self.capture_uuid,
            tuple(self.tracks),
            tuple(self._series(counter) for counter in counters.values()),
            blocks,
        )


_NO_LANES: array[int] = array("I")


def _first_fit(places: list[Place]) -> tuple[array[int], dict[int, tuple[int, int, int]], int]:
    """First-fit lanes of one logical track's slices, taken in (start, -end, position)
    order: each slice's lane (in `places`' order), each lane's first (start, -end,
    position), and the number of lanes. Instants never conflict: they all go on the
    first lane, which they make exist."""
    lanes = _Lanes()
    lane_of = array("I", bytes(4 * len(places)))
    firsts: dict[int, tuple[int, int, int]] = {}
    for i in sorted(range(len(places)), key=lambda i: _lane_key(places[i])):
        start, end, position, instant = places[i]
        if instant:
            lanes.count = max(lanes.count, 1)
            lane = 0
        else:
            # A zero-length slice keeps its lane busy until ts + 1 (contract §1).
            lane = lanes.take(start, end if end > start else start + 1)
        lane_of[i] = lane
        if lane not in firsts:
            firsts[lane] = (start, -end, position)
    return lane_of, firsts, lanes.count


def _rising(times: Iterable[int]) -> bool:
    """Times never going back: a block of slices of one begin rank made in this order is
    in (start, rank, order) order already."""
    previous = None
    for ts in times:
        if previous is not None and ts < previous:
            return False
        previous = ts
    return True


def _lane_key(place: Place) -> tuple[int, int, int]:
    return place[0], -place[1], place[2]


def _steps(samples: Iterable[Sample], keep_repeats: bool) -> Iterator[Sample]:
    """A counter's samples, given in (ts, rank) order, as a step function: a repeated
    value adds nothing, so it is dropped. Context size keeps every sample
    (`keep_repeats`), one per request, as the UI reads it so, and every counter keeps its
    closing zero at the end of the recording. Several samples of one counter at one (ts,
    rank): the last one wins, in the place of the first."""
    pending: Sample | None = None  # the last sample kept, given out once the next comes
    previous: int | None = None
    last_ts = last_rank = -1
    for sample in samples:
        ts, rank, value = sample
        if ts < last_ts or (ts == last_ts and rank < last_rank):
            raise ValueError(f"counter samples out of (ts, rank) order at {ts}")
        last_ts, last_rank = ts, rank
        if value == previous and not keep_repeats and rank != R_COUNTER_CLOSE:
            continue
        previous = value
        if pending is not None and pending[0] == ts and pending[1] == rank:
            pending = sample
            continue
        if pending is not None:
            yield pending
        pending = sample
    if pending is not None:
        yield pending


def _kept_samples(times: array[int], values: array[int]) -> Iterator[Sample]:
    return zip(times, itertools.repeat(R_COUNTER), values, strict=False)


# What ui.perfetto.dev shows inside a capture, top to bottom (TrackDescriptor
# `child_ordering = EXPLICIT` on the capture, `sibling_order_rank` on each child; the v58
# UI sorts siblings by rank, and by name without it). It reads like the session: the span,
# what came in, the model's work, the tools it ran, compactions; then the context it
# cost (the reported size and its window, the composition group), then cumulative usage,
# and the configuration lane, which rarely changes, last.
_DISPLAY_ORDER = (
    "Session",
    "Inputs",
    "Prompts",
    "Responses",
    "Requests",
    "Turns",
    "Tools",
    "Compaction",
    "Compaction responses",
    "Context command",
    "Context size",
    "Context fill",
    "Context window",
    "Context",
    "Input tokens",
    "Output tokens",
    "Configuration",
)
_DISPLAY_RANK = {name: rank for rank, name in enumerate(_DISPLAY_ORDER)}
# The capture's slice tracks, declared in display order (Session and Largest additions, which
# sits in the Context group, are declared on their own).
_SLICE_TRACKS = tuple(
    name
    for name in _DISPLAY_ORDER
    if name not in {"Session", "Context", *_COUNTER_DESCRIPTIONS}  # the capture's counters
)
_CATEGORY_RANK = {category.label: rank for rank, category in enumerate(Category)}


def build_layout(sessions: Sequence[Session], facts: TraceFacts) -> Layout:
    """The layout of these sessions, in ordered_sessions' order; a subagent whose
    launching tool call is in the set gets a flow from that call to its first input."""
    groups: list[Track] = []
    laid: list[SessionLayout] = []
    for group, plan in iter_layout(sessions, facts):
        groups.append(group)
        laid.append(plan.laid_out())
    return Layout(tuple(groups), tuple(laid))


def ordered_sessions(sessions: Sequence[Session]) -> list[Session]:
    """The order sessions are laid out and written in: top-level sessions by (start,
    session id), each followed by its subagents in the same order (theirs after each).
    A start is the session's span's (views.session_span: its capture's start)."""
    by_id = {s.session_id: s for s in sessions}
    children: dict[str, list[Session]] = {}
    roots: list[Session] = []
    for session in sessions:
        parent = session.parent_session
        if parent is not None and parent in by_id and parent != session.session_id:
            children.setdefault(parent, []).append(session)
        else:
            roots.append(session)
    order: list[Session] = []
    seen: set[int] = set()

    def visit(session: Session) -> None:
        if id(session) in seen:  # a damaged journal's cycle of parents
            return
        seen.add(id(session))
        order.append(session)
        for child in sorted(children.get(session.session_id, ()), key=_start_key):
            visit(child)

    for root in sorted(roots, key=_start_key):
        visit(root)
    # Sessions only reachable through a cycle of parents: by (start, id) at the end.
    order += sorted((s for s in sessions if id(s) not in seen), key=_start_key)
    return order


def _start_key(session: Session) -> tuple[int, str]:
    """Where a session starts as the trace shows it (its capture's start), then its id."""
    return session_span(session)[0], session.session_id


def iter_layout(
    sessions: Sequence[Session], facts: TraceFacts, group: int = 0
) -> Iterator[tuple[Track, SessionPlan]]:
    """The sessions' plans one at a time, in their order: each session's plan with its
    group track (declared before the plan's tracks), so a writer can encode a session and
    let it go before the next is planned (build_layout keeps each plan's slices). Sessions
    are independent but for the flow from a parent's launching tool to its child's first
    input, whose two ends are worked out from the model alone (the child's first input and
    the tool's start). `group` picks the block of track uuids (UUID_BLOCK) these sessions
    are numbered in."""
    ordered = ordered_sessions(sessions)
    by_id = {s.session_id: s for s in ordered}
    # Parent → child links in the order a whole-trace pass would make them.
    links_out: dict[str, list[tuple[str, Session]]] = {}
    links_in: dict[str, list[tuple[Session, str, int]]] = {}
    for session in ordered:
        starts: dict[str, int] | None = None
        for call in session.tool_calls:
            child = by_id.get(call.child_session) if call.child_session else None
            if child is None:
                continue
            if starts is None:
                # The tool slice a call id names: the last of that id in start order.
                starts = {
                    c.call_id: c.start_ns
                    for c in sorted(session.tool_calls, key=lambda c: (c.start_ns, c.call_id))
                }
            links_out.setdefault(session.session_id, []).append((call.call_id, child))
            links_in.setdefault(child.session_id, []).append(
                (session, call.call_id, starts[call.call_id])
            )
    # No process track: journals do not record the agent's pid, and the UI names a process
    # `<name> <pid>` (docs/traces.md). Each session has a group track named for it: a
    # top-level one under the trace's root (ranked by its real start), a subagent's under
    # its parent's group (after the parent's capture, in start order).
    ids = _TrackIds(group)
    child_rank: dict[str, int] = {}
    for session in ordered:
        parent = by_id.get(session.parent_session) if session.parent_session else None
        if parent is session:
            parent = None
        if parent is None:
            real_start = session_span(session)[0] - session.shifted_ns  # profile (1)'s start
            parent_uuid, rank = TRACE_ROOT_UUID, start_rank(real_start)
        else:
            parent_uuid = ids.get(f"session:{parent.session_id}")
            rank = child_rank[parent.session_id] = child_rank.get(parent.session_id, 0) + 1
        title = session_title(session, parent)
        group_track = Track(
            ids.get(f"session:{session.session_id}"),
            title,
            TrackKind.GROUP,
            parent=parent_uuid,
            order_rank=rank,
            explicit_child_order=True,
            merge=Merge.NONE,
            description=f"{session_label(session)}: its capture (agentprof.capture), then "
            "its subagents in start order.",
        )
        tracks = _SessionBuilder(session, group_track.uuid, facts, ids)
        tracks.build()
        tracks.link_out(links_out.get(session.session_id, []))
        for parent_session, call_id, tool_start in links_in.get(session.session_id, ()):
            tracks.link_in(parent_session, call_id, tool_start)
        tracks.assign_tracks()
        plan = tracks.finish()
        # The plan's blocks hold the builder (they are its methods) while it is read; the
        # generator holds its locals while suspended, so neither outlives its session.
        del tracks
        yield group_track, plan
        del plan


def _first_input_start(session: Session) -> int:
    """When a session's first prompt-input is: its first prompt, else its start."""
    return session.prompts[0].start_ns if session.prompts else session_span(session)[0]
