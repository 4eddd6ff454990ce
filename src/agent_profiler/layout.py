"""The trace layout, format-neutral: model sessions → tracks, lanes, slices with their
arguments and flows, de-duplicated counter series and the order of events (TRACE_CONTRACT).

Both writers encode this and nothing else (writers/perfetto.py as protobuf,
writers/chrome_json.py as JSON), so they show the same slices and the same counter samples.
Track uuids are small numbers, 1, 2, 3 … in the order their keys are first asked for; flow ids
and the pid are `stable_id64` hashes of stable keys. Same sessions, same layout.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from typing import Any

from agent_profiler import estimate
from agent_profiler.annotations import (
    ContentMode,
    TraceFacts,
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
    Session,
)
from agent_profiler.views import (
    context_size_series,
    largest_additions,
    model_runs,
    session_label,
    session_span,
    snapshots_in_time_order,
)

__all__ = [
    "ContentMode",
    "CounterSeries",
    "LaidSlice",
    "Layout",
    "Merge",
    "ProcessTrack",
    "SessionLayout",
    "TraceFacts",
    "Track",
    "TrackKind",
    "build_layout",
    "iter_layout",
    "ordered_sessions",
    "stable_id64",
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
    "Context window": "The model's context window at each request.",
}


# One dict for every turn slice (a long session has thousands); writers only read args.
_TURN_ARGS: dict[str, Any] = {"kind": "turn"}


def stable_id64(text: str) -> int:
    """A stable, non-zero 64-bit id for a key (flows, sequence, pid): the first 8 bytes of
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


@dataclass(frozen=True, slots=True)
class ProcessTrack:
    """One process per top-level session; its subagents' captures are children of it."""

    uuid: int
    pid: int
    name: str
    labels: tuple[str, ...]


Args = dict[str, Any]


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
    one per request), at most one value per (timestamp, rank), the closing 0 last."""

    track_uuid: int
    name: str
    samples: tuple[tuple[int, int, int], ...]


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
        for order, slice_ in enumerate(self.slices, start=1):
            if slice_.instant:
                yield slice_.start, R_INSTANT, order, slice_, False
                continue
            is_profile = slice_.name.startswith("profile (")
            yield (
                slice_.start,
                R_CAPTURE_BEGIN if is_profile else R_SLICE_BEGIN,
                order,
                slice_,
                False,
            )
            if is_profile:
                rank = R_CAPTURE_END
            elif slice_.end == slice_.start:
                rank = R_ZERO_END
            else:
                rank = R_SLICE_END
            yield slice_.end, rank, order, slice_, True


@dataclass(frozen=True, slots=True)
class Layout:
    """Everything a writer encodes: one process track per top-level session, then each
    session's layout, sessions ordered by (start, session id)."""

    processes: tuple[ProcessTrack, ...]
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


@dataclass(slots=True)
class _Counter:
    name: str
    parent: str  # "capture" or "context"
    share: bool
    description: str
    samples: list[tuple[int, int, int]] = field(default_factory=list)  # ts, rank, value
    uuid: int = 0


class _SessionBuilder:
    """Builds one session's slices, counters and tracks; `finish` freezes them."""

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
        self.slices: list[LaidSlice] = []
        self.counters: dict[str, _Counter] = {}
        self.tracks: list[Track] = []
        # The capture spans everything the session holds, so every counter's closing
        # zero comes after its last sample.
        self.start, self.end = session_span(session)
        self.prompt_slices: dict[str, LaidSlice] = {}
        self.input_instants: list[LaidSlice] = []
        self.response_slices: dict[str, LaidSlice] = {}
        self.tool_slices: dict[str, LaidSlice] = {}
        # The call ids of the capture's tool slices (one per tool call): the changes they
        # caused link to them, which lets `context` leave out what the link already says.
        self.call_ids = frozenset(call.call_id for call in session.tool_calls)
        # Each snapshot's predecessor in time (by id: snapshots are frozen and may be equal),
        # against which repeated optional `context` keys are left out; none for a snapshot
        # that shares its time with the one before (a reader could not order the two).
        in_time = snapshots_in_time_order(session)
        self.previous: dict[int, ContextSnapshot] = {
            id(after): before
            for before, after in itertools.pairwise(in_time)
            if before.time_ns < after.time_ns
        }

    # -- helpers ----------------------------------------------------------

    def uuid(self, key: str) -> int:
        return self.ids.get(f"{self.key}:{key}")

    def flow(self, source: LaidSlice, target: LaidSlice, key: str) -> None:
        """A flow arrow from source to target; skipped if it would point back in time."""
        if target.start < source.start:
            return
        flow_id = stable_id64(f"{self.key}:flow:{key}")
        source.flows += (flow_id,)
        source.outgoing += (flow_id,)
        target.flows += (flow_id,)

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
        self._profile()  # first: self.slices[0]
        self._prompts()
        self._responses()
        self._tools()
        self._compactions()
        self._configuration()
        self._failed_requests()
        self._markers()
        self._native_reports()
        latest_context = self._context_counters()
        self._largest_additions()
        # Every counter's last value is 0 at the session's end (TRACE_CONTRACT §6), and it
        # must be the last sample in time too: Trace Processor orders a track's samples by
        # timestamp only, so a closing zero sharing its timestamp with the last sample
        # (cumulative usage at the final response's end, which is usually the session's
        # end) reads as "the last value is N" to anyone ordering by ts. So when a sample
        # sits at the end, the session ends 1 ns later: all counters still drop together,
        # at the end of `profile (1)`, which still spans every sample of its capture
        # (§3), and 1 ns is below anything a journal's clock resolves.
        last_sample = max(
            (ts for counter in self.counters.values() for ts, _, _ in counter.samples),
            default=self.start,
        )
        if latest_context is not None:  # its repeats were dropped, not its time
            last_sample = max(last_sample, latest_context)
        if self.counters and last_sample >= self.end:
            self.end = last_sample + 1
            self.slices[0].end = self.end  # profile (1), built first
        for counter in self.counters.values():
            counter.samples.append((self.end, R_COUNTER_CLOSE, 0))
        del session

    def _profile(self) -> None:
        args = profile_args(
            self.session,
            self.facts,
            self.capture_uuid,
            self.start,
            self.estimation,
            self.previous,
            self.call_ids,
        )
        self.slices.append(
            LaidSlice("Session", "profile (1)", self.start, self.end, self.metadata, args)
        )

    def _prompts(self) -> None:
        previews = self.facts.content is ContentMode.PREVIEWS
        for index, prompt in enumerate(self.session.prompts):
            instant = LaidSlice(
                "Inputs",
                "prompt-input",
                prompt.start_ns,
                prompt.start_ns,
                self.activity,
                {"source": prompt.source, "timing": "journal-record-time"},
                instant=True,
            )
            text = prompt.preview if previews else f"[{prompt.chars} chars; not included]"
            args: dict[str, Any] = {
                "kind": "prompt",
                "text": text,
                "length": prompt.chars,
                "turn_id": prompt.id,
                "source": prompt.source,
            }
            slice_ = LaidSlice(
                "Prompts", "prompt", prompt.start_ns, prompt.end_ns, self.activity, args
            )
            self.slices += [instant, slice_]
            self.input_instants.append(instant)
            self.prompt_slices.setdefault(prompt.id, slice_)
            # Keyed by position: two prompts may share an id in a damaged journal, and
            # a flow id must sit on exactly two events.
            self.flow(instant, slice_, f"input:{index}")

    def _responses(self) -> None:
        s = self.session
        snapshots = {x.anchor_id: x for x in s.snapshots if x.anchor is AnchorKind.RESPONSE}
        size = self.counter("Context size", share=True)
        window = self.counter("Context window", share=True) if s.window_tokens else None
        inputs = self.counter("Input tokens")
        outputs = self.counter("Output tokens")
        for counter in (size, window, inputs, outputs):
            if counter is not None:
                counter.samples.append((self.start, R_COUNTER_OPEN, 0))
        size.samples += [(ts, R_COUNTER, tokens) for ts, tokens in context_size_series(s)]
        # Cumulative usage at each response end, in end order (so it never goes down),
        # compaction requests included: they consume tokens without being a turn.
        finished = sorted(
            [*s.responses, *(c.request for c in s.compactions if c.request is not None)],
            key=lambda r: (r.end_ns, r.start_ns, r.id),
        )
        total_in = total_out = 0
        for finished_response in finished:
            total_in += finished_response.usage.input_tokens
            total_out += finished_response.usage.output_tokens
            inputs.samples.append((finished_response.end_ns, R_COUNTER, total_in))
            outputs.samples.append((finished_response.end_ns, R_COUNTER, total_out))
        # Responses whose usage the journal left at zero are drawn too (usage unknown).
        every = [*s.responses, *s.unmetered_responses]
        for response in sorted(every, key=lambda r: (r.start_ns, r.end_ns, r.id)):
            snapshot = snapshots.get(response.id)
            args = partial(
                response_args,
                s,
                response,
                snapshot,
                self.previous.get(id(snapshot)),
                not self.response_slices,
                self.call_ids,
            )
            slice_ = LaidSlice(
                "Responses", "response", response.start_ns, response.end_ns, self.activity, args
            )
            self.slices.append(slice_)
            self.slices.append(
                LaidSlice(
                    "Turns",
                    "turn",
                    response.start_ns,
                    response.end_ns,
                    self.activity,
                    _TURN_ARGS,
                )
            )
            self.response_slices[response.id] = slice_
            if response.prompt_id in self.prompt_slices:
                self.flow(self.prompt_slices[response.prompt_id], slice_, f"prompt:{response.id}")
            if window is not None and s.window_tokens:
                window.samples.append((response.start_ns, R_COUNTER, s.window_tokens))

    def _tools(self) -> None:
        previews = self.facts.content is ContentMode.PREVIEWS
        for call in sorted(self.session.tool_calls, key=lambda c: (c.start_ns, c.call_id)):
            args = partial(tool_args, call, previews)
            slice_ = LaidSlice("Tools", call.name, call.start_ns, call.end_ns, self.activity, args)
            self.slices.append(slice_)
            self.tool_slices[call.call_id] = slice_
            if call.response_id in self.response_slices:
                self.flow(self.response_slices[call.response_id], slice_, f"tool:{call.call_id}")

    def _compactions(self) -> None:
        snapshots = {
            x.anchor_id: x for x in self.session.snapshots if x.anchor is AnchorKind.COMPACTION
        }
        for compaction in self.session.compactions:
            snapshot = snapshots.get(compaction.id)
            args = partial(
                compaction_args,
                compaction,
                snapshot,
                self.previous.get(id(snapshot)),
                self.call_ids,
            )
            self.slices.append(
                LaidSlice(
                    "Compaction",
                    compaction.kind,
                    compaction.start_ns,
                    compaction.end_ns,
                    self.activity,
                    args,
                )
            )
            request = compaction.request
            if request is not None:
                self.slices.append(
                    LaidSlice(
                        "Compaction responses",
                        "response",
                        request.start_ns,
                        request.end_ns,
                        self.activity,
                        compaction_response_args(request),
                    )
                )

    def _configuration(self) -> None:
        s = self.session
        changes = model_runs(s)
        for index, (start, model) in enumerate(changes):
            end = changes[index + 1][0] if index + 1 < len(changes) else self.end
            args: dict[str, Any] = {
                "harness": s.harness.value,
                "provider": s.provider or "unknown",
                "model": model,
            }
            if s.window_tokens:
                args["context_window_tokens"] = s.window_tokens
            self.slices.append(
                LaidSlice("Configuration", "run-configuration", start, end, self.metadata, args)
            )

    def _failed_requests(self) -> None:
        """Requests that failed before any usage came: spans with no size, so they never
        read as a request of 0 tokens (TRACE_CONTRACT §4: request without completion)."""
        for request in self.session.failed_requests:
            self.slices.append(
                LaidSlice(
                    "Requests",
                    "request",
                    request.start_ns,
                    max(request.end_ns, request.start_ns),
                    self.activity,
                    failed_request_args(request),
                )
            )

    def _native_reports(self) -> None:
        """The harness's own context reports (Claude Code's /context runs), each a
        zero-length slice carrying its native snapshot."""
        for snapshot in self.session.snapshots:
            if snapshot.anchor is not AnchorKind.NATIVE:
                continue
            self.slices.append(
                LaidSlice(
                    "Context command",
                    "/context",
                    snapshot.time_ns,
                    snapshot.time_ns,
                    self.activity,
                    partial(
                        context_command_args,
                        snapshot,
                        self.previous.get(id(snapshot)),
                        self.call_ids,
                    ),
                )
            )

    def _markers(self) -> None:
        for marker in self.session.markers:
            label = marker.kind.replace("_", " ")
            self.slices.append(
                LaidSlice(
                    "Configuration",
                    f"{label}: {marker.value}",
                    marker.time_ns,
                    marker.time_ns,
                    self.activity,
                    {"marker": marker.kind, "value": marker.value},
                    instant=True,
                )
            )

    def _context_counters(self) -> int | None:
        """A sample per category present so far at each snapshot, in time order, except one
        that repeats the counter's previous sample: `_series` would drop it (these are the
        only samples of the Context counters before the closing 0, in its order), and a
        long session's repeats were most of its layout while it was built. Returns the time
        of the last snapshot sampled (None: none was), since the session's end depends on
        it whether or not its samples were kept."""
        counters: dict[Category, _Counter] = {}
        latest: int | None = None
        for snapshot in snapshots_in_time_order(self.session):
            present = dict(snapshot.categories)
            for category in present:
                if category not in counters:
                    counters[category] = self.counter(
                        f"Context: {category.label}", "context", share=True
                    )
            for category, counter in counters.items():
                value = present.get(category, 0)
                samples = counter.samples
                if not samples or samples[-1][2] != value:
                    samples.append((snapshot.time_ns, R_COUNTER, value))
            if counters:
                latest = snapshot.time_ns  # in time order: the latest so far
        return latest

    def _largest_additions(self) -> None:
        # Only additions a tool call caused, at most ten: an instant here exists to carry a
        # flow arrow from its tool call, and ten arrows are what a reader can follow. The
        # report lists every addition, the summary the largest of each request (views.py).
        caused = [a for a in largest_additions(self.session) if a.tool is not None]
        for rank, addition in enumerate(caused[:MAX_ADDITION_INSTANTS], start=1):
            change, snapshot = addition.change, addition.snapshot
            tool = self.tool_slices[change.source_id]
            # No `kind` and no `context` here: Agent Profiler's tables must skip these
            # (TRACE_CONTRACT §9); they exist for ui.perfetto.dev's flow arrows.
            instant = LaidSlice(
                "Largest additions",
                f"+{change.delta_tokens:,} tokens · {tool.name} ({change.label or 'item'})",
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
                    "estimate": self.estimate_note,
                },
                instant=True,
            )
            self.slices.append(instant)
            self.flow(tool, instant, f"addition:{change.id}:{snapshot.time_ns}")

    def link_out(self, call_id: str, child: Session) -> None:
        """The launching tool's end of the flow to a child's first prompt-input (the
        child's builder adds the other end: sessions are laid out one at a time)."""
        tool = self.tool_slices[call_id]
        if _first_input_start(child) < tool.start:
            return
        flow_id = stable_id64(f"{self.key}:flow:child:{call_id}:{child.session_id}")
        tool.flows += (flow_id,)
        tool.outgoing += (flow_id,)

    def link_in(self, parent: Session, call_id: str, tool_start: int) -> None:
        """The child's end of a flow from its launching tool (see link_out): its first
        prompt-input, made at the session's start when it has none."""
        if not self.input_instants:
            instant = LaidSlice(
                "Inputs",
                "prompt-input",
                self.start,
                self.start,
                self.activity,
                {"source": "agent", "timing": "session-start"},
                instant=True,
            )
            self.slices.append(instant)
            self.input_instants.append(instant)
        target = self.input_instants[0]
        if target.start < tool_start:
            return
        target.flows += (stable_id64(f"{parent.session_id}:flow:child:{call_id}:{self.key}"),)

    # -- lanes and tracks ---------------------------------------------------

    def assign_tracks(self) -> None:
        """Give each slice a track: one lane per logical track unless slices overlap,
        then first-fit lanes with the same name (merged by name in the UI)."""
        self.tracks.append(
            Track(
                self.capture_uuid,
                "agentprof.capture",
                TrackKind.GROUP,
                parent=self.parent_uuid,
                explicit_child_order=True,
                merge=Merge.NONE,
                description=session_label(self.session),
            )
        )
        lanes: dict[str, _Lanes] = {}
        order = sorted(
            range(len(self.slices)), key=lambda i: (self.slices[i].start, -self.slices[i].end, i)
        )
        context_group = self.uuid("group:Context")
        for index in order:
            slice_ = self.slices[index]
            if slice_.track == "Session":
                slice_.track_uuid = self.uuid("Session:profile")
                continue
            track_lanes = lanes.setdefault(slice_.track, _Lanes())
            if slice_.instant:
                # Instants never conflict: they all go on the first lane.
                track_lanes.count = max(track_lanes.count, 1)
                lane = 0
            else:
                # A zero-length slice keeps its lane busy until ts + 1 (contract §1).
                busy_until = slice_.end if slice_.end > slice_.start else slice_.start + 1
                lane = track_lanes.take(slice_.start, busy_until)
            slice_.track_uuid = self.uuid(f"{slice_.track}:{lane}")
        # Tracks: profile track first, then the logical tracks in a fixed order.
        self.tracks.append(
            Track(
                self.uuid("Session:profile"),
                "Session",
                TrackKind.SLICE,
                parent=self.capture_uuid,
                order_rank=_DISPLAY_RANK["Session"],
            )
        )
        for name in _SLICE_TRACKS:
            for lane in range(lanes[name].count if name in lanes else 0):
                self.tracks.append(
                    Track(
                        self.uuid(f"{name}:{lane}"),
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
        if context_counters or "Largest additions" in lanes:
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
            if "Largest additions" in lanes:
                self.tracks.append(
                    Track(
                        self.uuid("Largest additions:0"),
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
                counter_unit=COUNTER_UNIT,
                share_key=SHARE_KEY if counter.share else "",
            )
        )

    def finish(self) -> SessionLayout:
        """The session's layout; counter samples become step-function series here."""
        return SessionLayout(
            self.session,
            self.activity,
            self.capture_uuid,
            tuple(self.tracks),
            tuple(self.slices),
            tuple(_series(counter) for counter in self.counters.values()),
        )


def _series(counter: _Counter) -> CounterSeries:
    """A counter's samples ordered by (ts, rank), as a step function: a repeated value adds
    nothing, so it is dropped. Context size keeps every sample, one per request, as the UI
    reads it so, and every counter keeps its closing zero at the end of the recording.
    Several samples of one counter at one (ts, rank): the last one wins, in the place of
    the first. The series is made of the samples' own tuples, and the counter lets go of
    its list: a long session's counters are never held twice."""
    samples, counter.samples = counter.samples, []
    samples.sort(key=_sample_key)  # stable: samples at one (ts, rank) keep their order
    kept: list[tuple[int, int, int]] = []
    previous: int | None = None
    keep_repeats = counter.name == "Context size"
    for sample in samples:
        value = sample[2]
        if value == previous and not keep_repeats and sample[1] != R_COUNTER_CLOSE:
            continue
        previous = value
        if kept and kept[-1][:2] == sample[:2]:
            kept[-1] = sample  # equal keys sit together once sorted
        else:
            kept.append(sample)
    return CounterSeries(counter.uuid, counter.name, tuple(kept))


def _sample_key(sample: tuple[int, int, int]) -> tuple[int, int]:
    return sample[0], sample[1]


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
    """The layout of these sessions, ordered by (start, session id); a subagent whose
    launching tool call is in the set gets a flow from that call to its first input."""
    processes: list[ProcessTrack] = []
    laid: list[SessionLayout] = []
    for process, session_layout in iter_layout(sessions, facts):
        if process is not None:
            processes.append(process)
        laid.append(session_layout)
    return Layout(tuple(processes), tuple(laid))


def ordered_sessions(sessions: Sequence[Session]) -> list[Session]:
    """The order sessions are laid out and written in: by (start, session id)."""
    return sorted(sessions, key=lambda s: (s.start_ns, s.session_id))


def iter_layout(
    sessions: Sequence[Session], facts: TraceFacts, group: int = 0
) -> Iterator[tuple[ProcessTrack | None, SessionLayout]]:
    """build_layout one session at a time, in its order: each session's layout with the
    process track it opens (None when its root's process came before), so a writer can
    encode a session and let it go before the next is laid out. Sessions are independent
    but for the flow from a parent's launching tool to its child's first input, whose two
    ends are worked out from the model alone (the child's first input and the tool's start).
    `group` picks the block of track uuids (UUID_BLOCK) these sessions are numbered in."""
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
    # One process track per top-level session: its subagents' captures are siblings
    # under it. Journals do not record the agent's real pid, so the pid is derived
    # from the session id (stable); the process name is the harness command.
    ids = _TrackIds(group)
    process_tracks: dict[str, int] = {}
    for session in ordered:
        root = _root_of(session, by_id)
        process: ProcessTrack | None = None
        if root.session_id not in process_tracks:
            uuid = ids.get(f"process:{root.session_id}")
            process_tracks[root.session_id] = uuid
            process = ProcessTrack(
                uuid,
                10_000 + stable_id64(f"pid:{root.session_id}") % 4_000_000,
                root.harness.command,
                (root.harness.label, session_label(root)),
            )
        tracks = _SessionBuilder(session, process_tracks[root.session_id], facts, ids)
        tracks.build()
        for call_id, child in links_out.get(session.session_id, ()):
            tracks.link_out(call_id, child)
        for parent, call_id, tool_start in links_in.get(session.session_id, ()):
            tracks.link_in(parent, call_id, tool_start)
        tracks.assign_tracks()
        laid = tracks.finish()
        # The builder's tables (slices by id, raw counter samples) go before the writer
        # encodes the session: the generator holds its locals while suspended.
        del tracks
        yield process, laid
        del laid


def _first_input_start(session: Session) -> int:
    """When a session's first prompt-input is: its first prompt, else its start."""
    return session.prompts[0].start_ns if session.prompts else session_span(session)[0]


def _root_of(session: Session, by_id: dict[str, Session]) -> Session:
    seen = {session.session_id}
    while session.parent_session is not None and session.parent_session not in seen:
        parent = by_id.get(session.parent_session)
        if parent is None:
            break
        session = parent
        seen.add(session.session_id)
    return session
