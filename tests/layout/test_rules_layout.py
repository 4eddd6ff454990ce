"""The trace layout's rules (layout/), pinned on real journals: one process per top-level
session, the arrow from a launching tool call to its subagent's first input (and when there
is none), flows with exactly one source and one target, and the event order both writers
follow. Edited real records where the corpus lacks the case (said in each docstring)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
from collections import defaultdict
from pathlib import Path

from agent_profiler.layout import (
    R_CAPTURE_BEGIN,
    R_CAPTURE_END,
    R_INSTANT,
    R_SLICE_BEGIN,
    R_SLICE_END,
    R_ZERO_END,
    TRACE_ROOT_UUID,
    LaidSlice,
    Layout,
    SessionLayout,
    TraceFacts,
    TrackKind,
    begin_events,
    build_layout,
    iter_layout,
    ordered_sessions,
    start_rank,
)
from agent_profiler.model import Session
from agent_profiler.writers.perfetto import END, _slice_sweep
from rules_spy import raw_lines, sessions
from samples import CLAUDE_SMALL, DATA, PI_LARGE

SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
SPOTTER_ID = "258c7280-ae70-4798-800f-63464d01a85d"
CHILD_ID = f"{SPOTTER_ID}/a881341"
TASK_CALL = "toolu_01VmaERAwhb19LGUwu9GenaK"
TASK_START = 1_770_845_059_360_000_000  # 2026-02-11T21:24:19.360Z, the Task call's record
GEMINI_SUBAGENTS = DATA / "gemini-cli" / "expenses-tracker-0.37.1-subagents"


def _layout(*journals: Path) -> Layout:
    return build_layout(sessions(*journals), TraceFacts())


def _session(layout: Layout, session_id: str) -> SessionLayout:
    (found,) = [t for t in layout.sessions if t.session.session_id == session_id]
    return found


def _spotter_with_child(tmp_path: Path, lines: list[str]) -> Layout:
    """The spotter journal with its subagent agent-a881341.jsonl replaced by `lines`."""
    copy = tmp_path / "spotter"
    shutil.copytree(SPOTTER, copy)
    agent = copy / SPOTTER_ID / "subagents" / "agent-a881341.jsonl"
    agent.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return _layout(copy)


def _child_lines() -> list[str]:
    agent = SPOTTER / SPOTTER_ID / "subagents" / "agent-a881341.jsonl"
    return [line for line in raw_lines(agent) if line]


def _at(line: str, timestamp: str) -> str:
    record = json.loads(line)
    record["timestamp"] = timestamp
    return json.dumps(record)


def _task_and_inputs(layout: Layout) -> tuple[LaidSlice, list[LaidSlice]]:
    parent, child = _session(layout, SPOTTER_ID), _session(layout, CHILD_ID)
    (task,) = [s for s in parent.slices if s.track == "Tools" and s.name == "Task"]
    inputs = [s for s in child.slices if s.track == "Inputs"]
    return task, inputs


def _flow_ends(layout: Layout) -> dict[int, list[tuple[LaidSlice, bool]]]:
    """flow id → every (slice, starts here) that carries it, over all sessions."""
    ends: dict[int, list[tuple[LaidSlice, bool]]] = defaultdict(list)
    for laid in layout.sessions:
        for slice_ in laid.slices:
            for flow in slice_.flows:
                ends[flow].append((slice_, flow in slice_.outgoing))
            assert set(slice_.outgoing) <= set(slice_.flows)
    return ends


# --------------------------------------------------------------------------- processes


def test_each_session_has_a_group_named_for_it_and_its_subagents_hang_from_the_parents() -> None:
    """No process (a made-up pid would be its name in the UI): the session's group track is
    named harness, short id, project and model; the subagent's says whose it is and through
    which call, and sits in its parent's group after the parent's capture."""
    layout = _layout(SPOTTER)
    assert len(layout.sessions) == 2
    parent, child = layout.groups
    assert parent.name == "Claude Code 258c7280 · spotter-gqc · claude-opus-4-6"
    assert (parent.parent, parent.kind, parent.explicit_child_order) == (
        TRACE_ROOT_UUID,
        TrackKind.GROUP,
        True,
    )
    assert parent.order_rank == start_rank(layout.sessions[0].session.start_ns)
    call = next(c for c in layout.sessions[0].session.tool_calls if c.child_session)
    assert child.name == (
        f"Subagent a881341 of 258c7280 via {call.name} …{call.call_id[-6:]}"
        " · claude-sonnet-4-5-20250929"
    )
    assert (child.parent, child.order_rank) == (parent.uuid, 1)
    for group, laid in zip(layout.groups, layout.sessions, strict=True):
        (capture,) = [t for t in laid.tracks if t.uuid == laid.capture_uuid]
        assert (capture.name, capture.kind, capture.parent, capture.order_rank) == (
            "agentprof.capture",
            TrackKind.GROUP,
            group.uuid,
            0,
        )


def test_sessions_are_laid_out_by_start_each_parent_followed_by_its_subagents() -> None:
    """Two trees given in the wrong order, a subagent of the later one starting before the
    earlier one ends: the order is earlier root, later root, its subagent."""
    parent, child = sessions(SPOTTER)
    (small,) = sessions(CLAUDE_SMALL)
    later = dataclasses.replace(small, start_ns=parent.start_ns - 10**9, end_ns=parent.start_ns - 1)
    order = ordered_sessions([child, parent, later])
    assert [s.session_id for s in order] == [
        later.session_id,
        parent.session_id,
        child.session_id,
    ]
    layout = build_layout([child, parent, later], TraceFacts())
    ranks = [g.order_rank for g in layout.groups if g.parent == TRACE_ROOT_UUID]
    assert ranks == sorted(ranks) and len(ranks) == 2
    # Another top-level session starting after the parent and before its subagent: the
    # subagent still follows its parent (by start alone, the other came between them).
    from agent_profiler.align import shifted
    from agent_profiler.views import session_span

    between = (session_span(parent)[0] + session_span(child)[0]) // 2
    other = dataclasses.replace(shifted(small, between - session_span(small)[0]), shifted_ns=0)
    order = ordered_sessions([other, child, parent])
    assert [s.session_id for s in order] == [
        parent.session_id,
        child.session_id,
        other.session_id,
    ]


def test_sessions_starting_in_the_same_second_share_a_rank_and_are_laid_out_by_start() -> None:
    """Real sessions (the Codex and the Claude Code small journals) moved to start in one
    second, the Claude one 400 ms after the Codex one, then 200 ms before it: a rank is a
    start in seconds, so both get the same one (the UI, sorting by rank alone, may show
    them in either order: docs/traces.md), and the file lays them out by start."""
    from agent_profiler.align import shifted
    from agent_profiler.views import session_span
    from samples import CODEX_SMALL

    def starting_at(session: Session, at: int) -> Session:
        moved = shifted(session, at - session_span(session)[0])
        return dataclasses.replace(moved, shifted_ns=0)  # as if it really started there

    second = 1_780_000_000 * 10**9
    (codex,) = sessions(CODEX_SMALL)
    (claude,) = sessions(CLAUDE_SMALL)
    codex = starting_at(codex, second + 300_000_000)
    for at, first in ((700_000_000, "codex"), (100_000_000, "claude-code")):
        layout = build_layout([codex, starting_at(claude, second + at)], TraceFacts())
        ranks = [g.order_rank for g in layout.groups if g.parent == TRACE_ROOT_UUID]
        assert ranks == [start_rank(second)] * 2
        assert layout.sessions[0].session.harness.value == first


# --------------------------------------------------------------------------- subagent arrows


def test_the_task_call_points_at_its_subagents_first_prompt() -> None:
    task, inputs = _task_and_inputs(_layout(SPOTTER))
    (prompt_input,) = inputs
    (child_flow,) = task.outgoing
    assert child_flow in prompt_input.flows and child_flow not in prompt_input.outgoing
    assert prompt_input.args == {"source": "agent", "timing": "journal-record-time"}


def test_a_subagent_without_a_prompt_gets_an_input_at_its_start_for_the_arrow(
    tmp_path: Path,
) -> None:
    """Edited real records: the spotter subagent without its first line (the task prompt)."""
    layout = _spotter_with_child(tmp_path, _child_lines()[1:])
    child = _session(layout, CHILD_ID)
    assert child.session.prompts == ()
    task, inputs = _task_and_inputs(layout)
    # one input, made at the session's start (its first record, 21:24:21.302) for the arrow
    (made,) = inputs
    start = 1_770_845_061_302_000_000
    assert (made.name, made.start, made.end, made.instant) == ("prompt-input", start, start, True)
    assert made.category == "claude.activity"
    assert made.args == {"source": "agent", "timing": "session-start"}
    assert made in child.slices
    (child_flow,) = task.outgoing
    assert made.flows == (child_flow,) and made.outgoing == ()
    # on the child's Inputs lane, declared under its capture
    (lane,) = [t for t in child.tracks if t.uuid == made.track_uuid]
    assert (lane.name, lane.kind, lane.parent) == ("Inputs", TrackKind.SLICE, child.capture_uuid)


def test_a_subagent_whose_prompt_is_at_the_instant_of_its_task_still_gets_the_arrow(
    tmp_path: Path,
) -> None:
    """Edited real record: the subagent's task prompt stamped at the Task call's own time
    (it is 6 ms later in the journal); an arrow of zero length points forward, not back."""
    lines = _child_lines()
    layout = _spotter_with_child(tmp_path, [_at(lines[0], "2026-02-11T21:24:19.360Z"), *lines[1:]])
    task, (prompt_input,) = _task_and_inputs(layout)
    assert prompt_input.start == task.start == TASK_START
    (child_flow,) = task.outgoing
    assert child_flow in prompt_input.flows


def test_no_arrow_points_back_to_a_task_that_started_after_its_subagent(tmp_path: Path) -> None:
    """Edited real records: the subagent without its prompt and its first record stamped
    before the Task call (a skewed clock): neither end of the arrow is drawn."""
    lines = _child_lines()
    layout = _spotter_with_child(tmp_path, [_at(lines[1], "2026-02-11T21:24:19.000Z"), *lines[2:]])
    task, (made,) = _task_and_inputs(layout)
    assert made.start < task.start
    assert task.outgoing == () and made.flows == ()
    assert all(len(ends) == 2 for ends in _flow_ends(layout).values())


def test_the_arrow_starts_from_the_first_prompt_not_from_an_earlier_record(
    tmp_path: Path,
) -> None:
    """Edited real record: the subagent's first response stamped before the Task call
    while its prompt stays after it: the session starts early, its first input does not,
    so the arrow is drawn, at both ends."""
    lines = _child_lines()
    layout = _spotter_with_child(
        tmp_path, [lines[0], _at(lines[1], "2026-02-11T21:24:19.000Z"), *lines[2:]]
    )
    child = _session(layout, CHILD_ID)
    task, (prompt_input,) = _task_and_inputs(layout)
    assert child.session.start_ns < task.start < prompt_input.start
    (child_flow,) = task.outgoing
    assert child_flow in prompt_input.flows


# --------------------------------------------------------------------------- flows


def test_every_flow_has_one_source_and_one_later_target() -> None:
    """Real journals whose launching tools also caused the largest additions (Gemini's
    cli_help subagents): a tool keeps every arrow it starts."""
    for journals in ((GEMINI_SUBAGENTS,), (SPOTTER,), (CLAUDE_SMALL,)):
        layout = _layout(*journals)
        ends = _flow_ends(layout)
        assert ends
        for flow, carried in ends.items():
            assert len(carried) == 2, (journals, flow)
            (source,) = [s for s, starts in carried if starts]
            (target,) = [s for s, starts in carried if not starts]
            assert source.start <= target.start
    # the Gemini launching tools: the arrow to the child beside those to their additions
    layout = _layout(GEMINI_SUBAGENTS)
    parent = layout.sessions[0]
    children = {t.session.session_id for t in layout.sessions[1:]}
    assert len(children) == 2
    launching = [
        s for s in parent.slices if s.track == "Tools" and s.args.get("child_session") in children
    ]
    assert [len(s.outgoing) for s in launching] == [1, 2]


def test_slice_events_are_the_order_the_perfetto_writer_sweeps() -> None:
    """`SessionLayout.slice_events` (begins, instants, ends with their ranks) sorted by
    (time, rank, order) is exactly the event stream the Perfetto writer writes."""
    for journals in ((CLAUDE_SMALL,), (SPOTTER,)):
        for laid in _layout(*journals).sessions:
            events = sorted(laid.slice_events(), key=lambda e: e[:3])
            swept = [
                (ts, rank, order, what, part == END)
                for ts, rank, order, what, part in _slice_sweep(
                    sorted(begin_events(laid.slices), key=lambda e: e[:3])
                )
            ]
            assert events == swept
            instants = sum(s.instant for s in laid.slices)
            assert len(events) == 2 * len(laid.slices) - instants
            ranks = {(e[1], e[4]) for e in events}
            assert (R_CAPTURE_BEGIN, False) in ranks and (R_CAPTURE_END, True) in ranks
            assert (R_SLICE_BEGIN, False) in ranks and (R_SLICE_END, True) in ranks
            assert (R_INSTANT, False) in ranks
    # zero-length slices end at their own rank (Small's /compact is 0 ns long)
    small = _layout(CLAUDE_SMALL).sessions[0]
    zero = [s for s in small.slices if not s.instant and s.start == s.end]
    assert zero
    assert {(e[1], e[4]) for e in small.slice_events() if e[3] in zero} == {
        (R_SLICE_BEGIN, False),
        (R_ZERO_END, True),
    }


def test_a_subagent_read_without_its_parent_is_a_top_level_session() -> None:
    """The spotter subagent's file alone: its parent is not in the set, so its group hangs
    from the trace's root, still named a subagent of its parent."""
    agent = SPOTTER / SPOTTER_ID / "subagents" / "agent-a881341.jsonl"
    layout = _layout(agent)
    (laid,) = layout.sessions
    assert laid.session.parent_session == SPOTTER_ID
    (group,) = layout.groups
    assert group.parent == TRACE_ROOT_UUID
    assert group.name.startswith("Subagent a881341 of 258c7280")
    (capture,) = [t for t in laid.tracks if t.uuid == laid.capture_uuid]
    assert capture.parent == group.uuid


def test_sessions_naming_each_other_as_parent_still_lay_out() -> None:
    """Edited real sessions (a damaged journal): spotter's session made the child of its own
    subagent. The loop has no root: both are still laid out, each in a group of its own."""
    parent, child = sessions(SPOTTER)
    looped = dataclasses.replace(parent, parent_session=child.session_id)
    layout = build_layout([looped, child], TraceFacts())
    assert len(layout.sessions) == len(layout.groups) == 2
    groups = {g.uuid for g in layout.groups}
    assert {laid.tracks[0].parent for laid in layout.sessions} == groups


def test_a_plan_makes_the_slices_it_lays_out_and_sweeps_them_in_order() -> None:
    """The Perfetto writer sweeps `SessionPlan.begins()` as the slices are made; the JSON
    writer and build_layout keep `slices()`. Both are the same slices: the begins are
    the kept slices' begins in (time, rank, order) order, `order` their place in the
    layout, and `slice_count` says how many there are before any is made."""
    for journals in ((CLAUDE_SMALL,), (SPOTTER,), (GEMINI_SUBAGENTS,)):
        found = sessions(*journals)
        for (_, plan), laid in zip(
            iter_layout(ordered_sessions(found), TraceFacts()),
            _layout(*journals).sessions,
            strict=True,
        ):
            kept = list(plan.slices())
            assert len(kept) == plan.slice_count == len(laid.slices) > 1
            swept = [(ts, rank, order, _shape(s)) for ts, rank, order, s in plan.begins()]
            assert swept == sorted(
                ((ts, rank, order, _shape(s)) for ts, rank, order, s in begin_events(kept)),
                key=lambda e: e[:3],
            )
            assert [_shape(s) for s in kept] == [_shape(s) for s in laid.slices]


def _shape(slice_: LaidSlice) -> tuple[object, ...]:
    """A slice as plain values (slices are made afresh by each reading of a plan)."""
    return (
        slice_.track,
        slice_.name,
        slice_.start,
        slice_.end,
        slice_.track_uuid,
        slice_.flows,
        slice_.outgoing,
        slice_.instant,
        json.dumps(slice_.args, sort_keys=True, default=str),
    )


def test_a_context_repeats_nothing_its_predecessor_in_time_said() -> None:
    """A response's `context` leaves out the optional keys its predecessor already said,
    the predecessor being the snapshot before it in time, not in the journal: Pi's large
    session writes the request of line 466 after the later one of line 465. Its one model
    is named once, by the first request in time."""
    (laid,) = _layout(PI_LARGE).sessions
    snapshots = laid.session.snapshots
    assert any(b.time_ns < a.time_ns for a, b in itertools.pairwise(snapshots))
    contexts = sorted((s.start, s.args["context"]) for s in laid.slices if s.track == "Responses")
    assert len(contexts) == len(laid.session.responses) > 400
    assert [start for start, c in contexts if "model" in c] == [contexts[0][0]]
    assert contexts[0][1]["model"] == "claude-sonnet-4-5"


def _each_flow_joins_two_slices(layout: Layout) -> None:
    for flow, carried in _flow_ends(layout).items():
        assert len(carried) == 2, flow
        (source,) = [s for s, starts in carried if starts]
        (target,) = [s for s, starts in carried if not starts]
        assert source.start <= target.start


def test_an_addition_takes_an_arrow_from_its_tool_call_unless_the_call_starts_after_it() -> None:
    """The spotter's Largest additions each take an arrow from their tool call. Edited:
    the first one's call moved to start at the addition's very time (an arrow still: it
    does not point back), then 1 ns after it (no arrow, and no flow left with one end)."""
    found = sessions(SPOTTER)
    layout = build_layout(found, TraceFacts())
    main = _session(layout, SPOTTER_ID)
    additions = [s for s in main.slices if s.track == "Largest additions"]
    assert additions and all(s.flows for s in additions)
    first = additions[0]
    call_id = first.args["tool_call_id"]
    (parent,) = [s for s in found if s.session_id == SPOTTER_ID]
    for shift, arrow in ((0, True), (1, False)):
        start = first.start + shift
        calls = tuple(
            dataclasses.replace(c, start_ns=start, end_ns=max(c.end_ns, start))
            if c.call_id == call_id
            else c
            for c in parent.tool_calls
        )
        edited = dataclasses.replace(parent, tool_calls=calls)
        layout = build_layout([edited, *(s for s in found if s is not parent)], TraceFacts())
        (moved,) = [
            s
            for s in _session(layout, SPOTTER_ID).slices
            if s.track == "Largest additions" and s.name == first.name
        ]
        assert bool(moved.flows) is arrow
        _each_flow_joins_two_slices(layout)


def test_a_response_or_a_call_naming_what_is_not_there_has_no_arrow_into_it() -> None:
    """CLAUDE_SMALL edited (a damaged journal): its first response names a prompt the
    session does not hold, its first tool call a response it does not hold. Both are laid
    out, without the arrow into them; their arrows out stay."""
    (session,) = sessions(CLAUDE_SMALL)
    response, *responses = sorted(session.responses, key=lambda r: r.start_ns)
    call, *calls = sorted(session.tool_calls, key=lambda c: c.start_ns)
    edited = dataclasses.replace(
        session,
        responses=(dataclasses.replace(response, prompt_id="gone"), *responses),
        tool_calls=(dataclasses.replace(call, response_id="gone"), *calls),
    )
    layout = build_layout([edited], TraceFacts())
    (laid,) = layout.sessions
    (lone_response,) = [
        s for s in laid.slices if s.track == "Responses" and s.start == response.start_ns
    ]
    (lone_call,) = [s for s in laid.slices if s.track == "Tools" and s.start == call.start_ns]
    for lone in (lone_response, lone_call):
        assert set(lone.flows) == set(lone.outgoing)
    assert lone_response.outgoing  # its tool calls' arrows
    _each_flow_joins_two_slices(layout)
