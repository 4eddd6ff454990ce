"""What the track table's specs read of one session (`SessionData`), worked out once from
the model before any slice is made: its items in layout order (responses, tool calls,
model runs, native reports), the relations its flows draw (`planning.Links`), each
snapshot's predecessor in time and which snapshot each response and compaction carries,
the flows from a parent's tool call to a child's first input, its counters and largest
additions (counters.py) and the session's span. `session_data` makes it; nothing in it
changes afterwards: the specs only read it."""

from __future__ import annotations

import itertools
import operator
from array import array
from collections.abc import Iterable, Sequence

from agent_profiler import estimate
from agent_profiler.annotations import ContentMode, TraceFacts
from agent_profiler.layout.counters import AdditionInstant, largest_additions, session_counters
from agent_profiler.layout.planning import Links, PlannedCounter, int64s, linked
from agent_profiler.layout.types import stable_id64, stable_ids64
from agent_profiler.model import (
    AnchorKind,
    ContextSnapshot,
    Response,
    Session,
    ToolCall,
    frozen,
)
from agent_profiler.sorting import by_first
from agent_profiler.views import (
    AfterCompaction,
    compactions_after,
    model_runs,
    response_windows,
    run_windows,
    session_span,
)

# A child session's links from its parent: (parent session, launching call id, that
# tool slice's start). A parent's links to its children: (call id, child session).
LinkIn = tuple[Session, str, int]
LinkOut = tuple[str, Session]
# Sort keys in C (no Python frame per response or call).
_RESPONSE_ORDER = operator.attrgetter("start_ns", "end_ns", "id")
_CALL_ORDER = operator.attrgetter("start_ns", "call_id")
_START = operator.attrgetter("start_ns")
# (a class's attribute is looked up the generic way each time in CPython 3.11: once here)
_NATIVE = AnchorKind.NATIVE


@frozen
class SessionData:
    """One session as the specs read it. Items are in the order their slices are laid
    out; arrays run beside them (`-1`: none)."""

    session: Session
    facts: TraceFacts
    key: str  # the session id: track keys and flow ids are made with it
    activity: str  # the category of its activity slices and counters
    metadata: str  # the category of the capture and the configuration runs
    previews: bool  # prompt previews and tool arguments shown (--content previews)
    capture_uuid: int
    calibrated: bool  # a calibrated export says so wherever it describes its estimates
    estimate_note: str
    # The capture spans everything the session holds; `end` is moved 1 ns past a counter
    # sample that would share its time with the closing zeros (see `session_data`).
    start: int
    end: int
    call_ids: frozenset[str]  # the call ids of the Tools slices
    before: array[int]  # each snapshot's predecessor in time (position in snapshots)
    responses: list[Response]  # metered and unmetered, by (start, end, id)
    response_snapshot: array[int]  # each response's (last) snapshot
    calls: list[ToolCall]  # by (start, call id)
    compaction_snapshot: array[int]  # each compaction's (last) snapshot
    after: list[AfterCompaction | None]  # each compaction's size after it
    runs: list[tuple[int, int, str]]  # (start, end, model) of each model run
    run_windows: list[int]  # the window at each run's first request (0: none)
    # The window each response states (`context_window_tokens`): the first response's, then
    # only where it changes (0: the same as the response before, or none).
    stated_windows: array[int]
    natives: list[tuple[int, ContextSnapshot]]  # (position, snapshot) of native reports
    prompt_links: Links  # prompt → its responses
    call_links: Links  # response → its tool calls
    # The flow ids of those links, each worked out once for its two ends: each prompt's
    # from its input, each response's from its prompt's input, each call's from its response
    # (0: none; stable_id64 is never 0).
    input_flows: array[int]
    response_flows: array[int]
    call_flows_in: array[int]
    call_flows_out: dict[int, tuple[int, ...]]  # call index → flows starting at its slice
    child_flows: tuple[int, ...]  # flows from a parent's tool call to the first input
    session_input: tuple[int, ...]  # (start,) when the first input is made at the start
    additions: list[AdditionInstant]
    counters: list[PlannedCounter]

    def previous(self, position: int) -> ContextSnapshot | None:
        """The snapshot before the one at `position` in time (-1: no snapshot)."""
        found = self.before[position] if position >= 0 else -1
        return self.session.snapshots[found] if found >= 0 else None

    def snapshot(self, position: int) -> ContextSnapshot | None:
        return self.session.snapshots[position] if position >= 0 else None


def session_data(
    session: Session,
    facts: TraceFacts,
    capture_uuid: int,
    links_out: Sequence[LinkOut] = (),
    links_in: Sequence[LinkIn] = (),
    span: tuple[int, int] | None = None,
) -> SessionData:
    """What the specs read of `session`; `links_out` and `links_in` are its flows to its
    children and from its parent (sessions are laid out one at a time, so each end of
    such a flow is worked out from the model alone, by the session it sits in). `span`:
    views.session_span's, when the caller has it already."""
    key = session.session_id
    prefix = session.harness.category_prefix
    snapshots = session.snapshots
    calibrated = estimate.is_calibrated(x.basis for x in snapshots)
    note = estimate.CALIBRATED_NOTE if calibrated else estimate.CHARS4_NOTE
    start, end = session_span(session) if span is None else span
    # Against its predecessor a snapshot's repeated optional `context` keys are left
    # out; none for a snapshot that shares its time with the one before (a reader could
    # not order the two). Stable: as views.snapshots_in_time_order.
    in_time = sorted(range(len(snapshots)), key=[x.time_ns for x in snapshots].__getitem__)
    before = array("q", (-1,)) * len(snapshots)
    for earlier, later in itertools.pairwise(in_time):
        if snapshots[earlier].time_ns < snapshots[later].time_ns:
            before[later] = earlier
    del in_time
    responses = by_first(
        [*session.responses, *session.unmetered_responses], _START, _RESPONSE_ORDER
    )
    calls = by_first(session.tool_calls, _START, _CALL_ORDER)
    # A prompt id names its first prompt; a response id its last response, and a call id
    # its last tool call (the slice a later one replaced).
    first_prompt: dict[str, int] = {}
    for index, prompt in enumerate(session.prompts):
        first_prompt.setdefault(prompt.id, index)
    prompt_links = Links.of(
        len(session.prompts),
        (linked(first_prompt, r.prompt_id, r.start_ns, session.prompts) for r in responses),
    )
    last_response = {response.id: index for index, response in enumerate(responses)}
    call_links = Links.of(
        len(responses), (linked(last_response, c.response_id, c.start_ns, responses) for c in calls)
    )
    # A model run lasts until the next one starts, the last one to the session's end
    # (before a counter's last sample may move it).
    runs = model_runs(session)
    run_ends = [s for s, _ in runs[1:]] + [end] if runs else []
    windows = response_windows(session, responses)
    counters, last_sample = session_counters(session, start, responses, note, windows)
    additions, addition_flows = largest_additions(key, session, calls, facts.redact, note)
    # Every counter's last value is 0 at the session's end (TRACE_CONTRACT §6), and it
    # must be the last sample in time too: Trace Processor orders a track's samples by
    # timestamp only, so a closing zero sharing its timestamp with the last sample
    # (cumulative usage at the final response's end, which is usually the session's end)
    # reads as "the last value is N" to anyone ordering by ts. So when a sample sits at
    # the end, the session ends 1 ns later: all counters still drop together, at the end
    # of `profile (1)`, which still spans every sample of its capture (§3), and 1 ns is
    # below anything a journal's clock resolves.
    if counters and last_sample >= end:
        end = last_sample + 1
    child_out = _flows_out(key, calls, links_out)
    call_flows_out = {
        index: addition_flows.get(index, ()) + child_out.get(index, ())
        for index in sorted({*addition_flows, *child_out})
    }
    return SessionData(
        session=session,
        facts=facts,
        key=key,
        activity=f"{prefix}.activity",
        metadata=f"{prefix}.metadata",
        previews=facts.content is ContentMode.PREVIEWS,
        capture_uuid=capture_uuid,
        calibrated=calibrated,
        estimate_note=note,
        start=start,
        end=end,
        call_ids=frozenset(call.call_id for call in session.tool_calls),
        before=before,
        responses=responses,
        response_snapshot=_positions(snapshots, AnchorKind.RESPONSE, (r.id for r in responses)),
        calls=calls,
        compaction_snapshot=_positions(
            snapshots, AnchorKind.COMPACTION, (c.id for c in session.compactions)
        ),
        after=compactions_after(session) if session.compactions else [],
        runs=[(s, e, model) for (s, model), e in zip(runs, run_ends, strict=True)],
        run_windows=run_windows(session, [s for s, _ in runs]),
        stated_windows=int64s(
            [w if i == 0 or w != windows[i - 1] else 0 for i, w in enumerate(windows)],
        ),
        natives=[(i, x) for i, x in enumerate(snapshots) if x.anchor is _NATIVE],
        prompt_links=prompt_links,
        call_links=call_links,
        # Keyed by position: two prompts may share an id in a damaged journal, and a flow
        # id must sit on exactly two events.
        input_flows=array(
            "Q", map(stable_ids64(f"{key}:flow:input:"), map(str, range(len(session.prompts))))
        ),
        response_flows=_linked_flows(key, "prompt", prompt_links, (r.id for r in responses)),
        call_flows_in=_linked_flows(key, "tool", call_links, (c.call_id for c in calls)),
        call_flows_out=call_flows_out,
        child_flows=_flows_in(session, links_in),
        # No prompt: a child's first input, where its parent's flow ends, is made at its
        # start (whether or not the flow can be drawn).
        session_input=(start,) if links_in and not session.prompts else (),
        additions=additions,
        counters=counters,
    )


def _linked_flows(key: str, kind: str, links: Links, ids: Iterable[str]) -> array[int]:
    """The flow id into each target of `links` that has a source (0: none)."""
    flow = stable_ids64(f"{key}:flow:{kind}:")
    return array(
        "Q",
        (
            flow(target_id) if source >= 0 else 0
            for source, target_id in zip(links.source_of, ids, strict=True)
        ),
    )


def _positions(
    snapshots: Sequence[ContextSnapshot], anchor: AnchorKind, ids: Iterable[str]
) -> array[int]:
    """The position of the (last) snapshot of this anchor kind with each id (-1: none)."""
    found = {x.anchor_id: i for i, x in enumerate(snapshots) if x.anchor is anchor}
    return int64s([found.get(anchor_id, -1) for anchor_id in ids])


def _first_input_start(session: Session) -> int:
    """When a session's first prompt-input is: its first prompt, else its start."""
    return session.prompts[0].start_ns if session.prompts else session_span(session)[0]


def _flows_out(
    key: str, calls: Sequence[ToolCall], links: Sequence[LinkOut]
) -> dict[int, tuple[int, ...]]:
    """The launching tools' ends of the flows to their children's first prompt-input,
    by call index (a flow never points back in time)."""
    wanted = {call_id for call_id, _ in links}
    last_call = {call.call_id: i for i, call in enumerate(calls) if call.call_id in wanted}
    flows: dict[int, tuple[int, ...]] = {}
    for call_id, child in links:
        index = last_call[call_id]
        if _first_input_start(child) < calls[index].start_ns:
            continue
        flow_id = stable_id64(f"{key}:flow:child:{call_id}:{child.session_id}")
        flows[index] = (*flows.get(index, ()), flow_id)
    return flows


def _flows_in(session: Session, links: Sequence[LinkIn]) -> tuple[int, ...]:
    """The child's ends of the flows from its launching tools (see `_flows_out`)."""
    first = _first_input_start(session)
    return tuple(
        stable_id64(f"{parent.session_id}:flow:child:{call_id}:{session.session_id}")
        for parent, call_id, tool_start in links
        if first >= tool_start
    )
