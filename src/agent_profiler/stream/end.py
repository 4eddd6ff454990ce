"""The end of a one-pass Pi export (stream/pi.py): the session's tracks that only the end
knows, laid out by the track table's own rows (layout/plan.py `plan_session`) from what the
reading kept (a `Session` without snapshots but those of its largest additions and of its
compactions, and, without a compaction, only the largest additions' calls): the capture
and its facts, Inputs, Prompts, Requests, Compaction, Events, Configuration and every
descriptor but the pass's own go into the head, on a sequence of its own that is
written before the pass's packets (a prompt's input starts the flows to its responses, and
a flow's source comes first in the file); the largest additions and the counters' closing
zeros go after the requests, on the pass's sequence."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agent_profiler.annotations import TraceFacts
from agent_profiler.estimate import CHARS4_NOTE
from agent_profiler.layout import tracks as table_module
from agent_profiler.layout.counters import CONTEXT_GROUP
from agent_profiler.layout.plan import plan_session
from agent_profiler.layout.spec import Table, TrackSpec
from agent_profiler.layout.types import (
    R_COUNTER_CLOSE,
    TRACE_ROOT_UUID,
    CounterSeries,
    Merge,
    Track,
    TrackKind,
    start_rank,
)
from agent_profiler.model import Session
from agent_profiler.stream.log import NotHandled
from agent_profiler.views import session_label, session_span, session_title
from agent_profiler.writers.chunks import PacketSink
from agent_profiler.writers.events import EventEncoder
from agent_profiler.writers.packets import track_descriptor_packet
from agent_profiler.writers.perfetto import encode_plan, sequence_of
from agent_profiler.writers.wire import record

if TYPE_CHECKING:
    from agent_profiler.stream.claude import ClaudePass
    from agent_profiler.stream.codex import CodexPass
    from agent_profiler.stream.pi import PiPass

# The sources whose slices are written after the requests (the others before them).
AFTER_REQUESTS = frozenset({"additions"})
# A group's head is on a sequence of its own, from here on (groups' are 1, 2, 3 …).
HEAD_SEQUENCES = 1 << 20
# The rows this pass writes as it reads; the others are laid out at the end.
STREAMED_ROWS = frozenset({"Responses", "Turns", "Tools"})


def _rows() -> dict[str, TrackSpec]:
    found: dict[str, TrackSpec] = {}
    for row in table_module.TRACKS:
        found[row.name] = row
        for child in row.children:
            found[child.name] = child
    return found


ROWS = _rows()
# The table's one dict for every turn (the encoder encodes it once while it repeats).
TURN_ARGS: dict[str, Any] = ROWS["Turns"].slices[0].args  # type: ignore[assignment]
TAIL = Table(
    tuple(
        replace(row, slices=()) if row.name in STREAMED_ROWS else row for row in table_module.TRACKS
    )
)
RANK = TAIL.rank
CONTEXT_ROW = ROWS[CONTEXT_GROUP]


def head_sequence(group: int) -> int:
    """The sequence of a group's head: apart from every group's own."""
    return HEAD_SEQUENCES + sequence_of(group)


def _group_track(uuid: int, session: Session, span: tuple[int, int]) -> Track:
    """A session's group track (layout/ordering.py `iter_layout`, for a top-level one)."""
    return Track(
        uuid,
        session_title(session, None, None),
        TrackKind.GROUP,
        parent=TRACE_ROOT_UUID,
        order_rank=start_rank(span[0] - session.shifted_ns),
        explicit_child_order=True,
        merge=Merge.NONE,
        description=f"{session_label(session)}: its capture (agentprof.capture), then "
        "its subagents in start order.",
    )


def _whole(
    one: PiPass | CodexPass | ClaudePass, session: Session, facts: TraceFacts, head: PacketSink
) -> None:
    """A session the pass wrote nothing of (no request): all of it in the head, by the
    table's rows, as the model path lays it out."""
    span = session_span(session)
    group_track = _group_track(one.ids.get(f"session:{session.session_id}"), session, span)
    plan = plan_session(session, group_track.uuid, facts, one.ids, TAIL, (), (), span)
    before = EventEncoder(head_sequence(one.group))
    for track in (group_track, *plan.tracks):
        head.add(record(track_descriptor_packet(before.clock.sequence, track)))
    encode_plan(before, head.add, plan)
    before.close()


def _check_ties(one: PiPass | CodexPass | ClaudePass, session: Session) -> None:
    """An addition's instant at the very time its call starts: the model path writes the
    instant first (TRACE_CONTRACT §1: an instant before a slice's begin at one time), so
    the flow between them reads from the addition to the call; the pass writes the call
    among the requests and the additions after them, the other way round."""
    starts = {call.call_id: call.start_ns for call in session.tool_calls}
    for entry in one.additions.kept:
        time, change = entry.key[1], entry.key[4]
        if starts.get(change.source_id) == time:
            raise NotHandled("an addition at the time its call starts")


class _Note:
    estimate_note = CHARS4_NOTE


def write_end(
    one: PiPass | CodexPass | ClaudePass, session: Session, facts: TraceFacts, head: PacketSink
) -> None:
    """The session's other tracks, laid out by the table's rows from what was kept:
    the tool calls, the largest additions and the closing zeros of the context
    categories after the requests (on the pass's sequence); the rest into `head`, on
    a sequence of its own, which goes before the pass's packets: a prompt's input is
    where the flows to its responses start, and a flow's source comes first."""
    if one.written == 0:
        _whole(one, session, facts, head)
        return
    key = one.key
    guessed = one.session_facts
    if (
        session.session_id != key
        or guessed is None
        or guessed.provider != session.provider
        or guessed.window_tokens != session.window_tokens
    ):
        raise NotHandled("a fact guessed at the first request that the end does not confirm")
    _check_ties(one, session)
    span = session_span(session)
    group_track = _group_track(one.session_uuid, session, span)
    # The plan reads the calls for the largest additions only (their Tools slices and
    # the prompts' ends, which the calls extend, are made already).
    # (a compaction's `context` reads every call id: then every call is kept)
    causes = one.additions.causes
    if not session.compactions:
        session = replace(
            session, tool_calls=tuple(c for c in session.tool_calls if c.call_id in causes)
        )
    plan = plan_session(session, group_track.uuid, facts, one.ids, TAIL, (), (), span)
    declared = one.events.declared
    tracks = [group_track, *(t for t in plan.tracks if t.uuid not in declared)]
    if one.context_uuids and one.context_uuid not in {t.uuid for t in tracks}:
        tracks.append(
            Track(
                one.context_uuid,
                CONTEXT_GROUP,
                TrackKind.GROUP,
                parent=one.capture_uuid,
                order_rank=RANK[CONTEXT_GROUP],
                explicit_child_order=True,
                description=CONTEXT_ROW.described(_Note()),  # type: ignore[arg-type]
            )
        )
    end = plan.end
    # The counters' samples that only the end knows, on the pass's sequence (a track's
    # events are on one): the request counters' opening zeros at the session's start
    # and their closing zeros (the plan's series but for the samples the pass wrote),
    # the context categories' closing zeros.
    if span[0] != one.opened_at:
        raise NotHandled("a time read after the first request before the session's start")
    closing_zero = (end, R_COUNTER_CLOSE, 0)
    counters = tuple(
        CounterSeries(c.track_uuid, c.name, (closing_zero,))
        for c in plan.counters
        if not c.name.startswith("Context: ")
    )
    closing = tuple(
        CounterSeries(uuid, f"Context: {category.label}", (closing_zero,))
        for category, uuid in one.context_uuids.items()
    )
    # The tail, on the pass's sequence: its clock starts again at the session's start.
    later = tuple(b for b in plan.blocks if b.kind in AFTER_REQUESTS)
    tail = replace(plan, counters=counters + closing, blocks=later)
    encode_plan(one.encoder, one.events.add, tail)
    one.encoder.close()  # (the pass's last packets)
    # The head: every descriptor of the plan (a counter's before its samples).
    before = EventEncoder(head_sequence(one.group))
    for track in tracks:
        head.add(record(track_descriptor_packet(before.clock.sequence, track)))
    earlier = tuple(b for b in plan.blocks if b.kind not in AFTER_REQUESTS)
    encode_plan(before, head.add, replace(plan, counters=(), blocks=earlier))
    before.close()
