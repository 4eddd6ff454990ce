"""What a long session holds while it is read and laid out (issue 17, memory): each rule
here keeps one copy of something a 50 MB journal held twice. The traces they make are the
same bytes as before (the goldens and the bench's byte checks say so); these tests pin
the sharing and the letting go themselves, which no output shows."""

from __future__ import annotations

import gc
import io

import pytest

from agent_profiler.attribution import ContextLog, Observation
from agent_profiler.layout import (
    R_COUNTER,
    R_COUNTER_CLOSE,
    R_COUNTER_OPEN,
    LaidSlice,
    TraceFacts,
    build_layout,
    iter_layout,
)
from agent_profiler.layout.counters import session_counters
from agent_profiler.layout.data import SessionData
from agent_profiler.layout.planning import steps
from agent_profiler.model import (
    AnchorKind,
    Basis,
    Category,
    ContextSnapshot,
    Coverage,
    Harness,
    Response,
    Session,
    Stage,
    ToolCall,
    Usage,
)
from agent_profiler.writers.perfetto import PerfettoWriter, session_events
from rules_spy import sessions
from samples import DATA

S = 1_000_000_000
T0 = 1_770_000_000 * S


def _request(log: ContextLog, at: int, request_id: str) -> None:
    log.observe(Observation.request(at, request_id, model="m", reported_tokens=None))


def test_a_log_is_replayed_once_and_hands_its_entries_over() -> None:
    log = ContextLog()
    log.add("p1", Category.PROMPTS, "a prompt of some length")
    _request(log, T0, "r1")
    (snapshot,) = log.replay()
    assert dict(snapshot.categories)[Category.PROMPTS] > 0
    # a second replay would see an empty log and say nothing: it is refused instead
    with pytest.raises(RuntimeError, match="replayed once"):
        log.replay()


def test_totals_that_did_not_move_are_the_previous_snapshots_objects() -> None:
    log = ContextLog()
    log.add("p1", Category.PROMPTS, "a prompt " * 20)
    _request(log, T0, "r1")
    _request(log, T0 + S, "r2")  # nothing changed
    log.add("t1", Category.RESULTS, "a tool result " * 30)
    _request(log, T0 + 2 * S, "r3")  # only the results moved
    first, same, grown = log.replay()
    assert same.categories is first.categories
    (prompts,) = [p for p in grown.categories if p[0] is Category.PROMPTS]
    assert prompts is first.categories[0]
    # the values are what they would be unshared
    assert dict(grown.categories) == {
        Category.PROMPTS: dict(first.categories)[Category.PROMPTS],
        Category.RESULTS: (len("a tool result " * 30) + 3) // 4,
    }


def test_a_series_is_a_step_function_of_samples_given_in_order() -> None:
    samples = [
        (1 * S, R_COUNTER_OPEN, 0),
        (2 * S, R_COUNTER, 3),
        (3 * S, R_COUNTER, 3),  # a repeat: dropped
        (4 * S, R_COUNTER, 4),
        (4 * S, R_COUNTER, 9),  # same (ts, rank): the last wins, in the place of the first
        (5 * S, R_COUNTER, 7),
        (6 * S, R_COUNTER, 0),
        (7 * S, R_COUNTER_CLOSE, 0),  # the closing zero stays even when it repeats
    ]
    assert list(steps(samples, keep_repeats=False)) == [
        (1 * S, R_COUNTER_OPEN, 0),
        (2 * S, R_COUNTER, 3),
        (4 * S, R_COUNTER, 9),
        (5 * S, R_COUNTER, 7),
        (6 * S, R_COUNTER, 0),
        (7 * S, R_COUNTER_CLOSE, 0),
    ]
    # Context size keeps its repeats (one sample per request, as the UI reads it)
    assert len(list(steps([(1, R_COUNTER, 5), (2, R_COUNTER, 5)], keep_repeats=True))) == 2
    # samples are made as the series is read, never sorted: out of order is a bug, said
    with pytest.raises(ValueError, match="out of"):
        list(steps([(2, R_COUNTER, 5), (1, R_COUNTER, 6)], keep_repeats=True))
    with pytest.raises(ValueError, match="out of"):
        list(steps([(2, R_COUNTER_CLOSE, 0), (2, R_COUNTER, 6)], keep_repeats=True))


def _snapshot(at: int, tokens: int) -> ContextSnapshot:
    return ContextSnapshot(
        at,
        AnchorKind.SESSION,
        "",
        Stage.TRANSCRIPT_OBSERVED,
        Basis.CHARS,
        Coverage.PARTIAL,
        at == T0,
        ((Category.PROMPTS, tokens),),
    )


def _session_ending_on_a_repeat() -> Session:
    end = T0 + 10 * S
    return Session(
        harness=Harness.PI,
        session_id="repeat",
        start_ns=T0,
        end_ns=end,
        sources=("x.jsonl",),
        snapshots=(_snapshot(T0, 40), _snapshot(T0 + 5 * S, 40), _snapshot(end, 40)),
    )


def test_context_counters_drop_repeats_as_they_are_built() -> None:
    session = _session_ending_on_a_repeat()
    counters, _ = session_counters(session, T0, [], "an estimate")
    counter = {c.name: c for c in counters}["Context: User prompts"]
    # the first sample only (the closing zero is added as the series is read): the two
    # repeats were never held
    assert list(counter.made()) == [(T0, R_COUNTER, 40)]
    ((_, plan),) = iter_layout([session], TraceFacts())
    series = {c.name: c for c in plan.counters}["Context: User prompts"]
    assert list(series.samples) == [(T0, R_COUNTER, 40), (session.end_ns + 1, R_COUNTER_CLOSE, 0)]


def test_a_dropped_repeat_at_the_session_end_still_moves_the_end_past_it() -> None:
    # GIVEN a snapshot at the session's last instant that repeats the one before
    session = _session_ending_on_a_repeat()
    (laid,) = build_layout([session], TraceFacts()).sessions
    profile = laid.slices[0]
    # THEN the capture ends 1 ns later, as when the repeat was held until the series
    # dropped it: the session's span does not depend on when a repeat is dropped
    assert profile.name == "profile (1)" and profile.end == session.end_ns + 1
    (prompts,) = [c for c in laid.counters if c.name == "Context: User prompts"]
    assert prompts.samples == ((T0, R_COUNTER, 40), (session.end_ns + 1, R_COUNTER_CLOSE, 0))


def test_repeated_names_are_one_object() -> None:
    # JSON gives every record's copy of a string an object of its own
    model, name, stop = (
        "".join(["gpt-", "5"]),
        "".join(["re", "ad"]),
        "".join(["end_", "turn"]),
    )
    again = ("".join(["gpt", "-5"]), "".join(["rea", "d"]), "".join(["end", "_turn"]))
    assert model is not again[0]
    first = Response("r1", T0, T0 + S, model, Usage(10), stop_reason=stop)
    second = Response("r2", T0, T0 + S, again[0], Usage(10), stop_reason=again[2])
    assert first.model is second.model and first.stop_reason is second.stop_reason
    calls = [ToolCall(f"c{i}", text, T0, T0 + S) for i, text in enumerate((name, again[1]))]
    assert calls[0].name is calls[1].name == "read"


def test_the_labels_of_items_sized_from_evidence_are_one_object_each() -> None:
    # GIVEN a Codex rollout whose requests each hold hidden reasoning, sized from the
    # reported reasoning tokens: an item per request, each labelled with its method
    rollout = (
        DATA / "codex" / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl.gz"
    )
    labels = [
        change.label
        for session in sessions(rollout)
        for snapshot in session.snapshots
        for change in snapshot.changes
        if "(estimate: " in change.label
    ]
    # THEN each label is one string, not one per item (held, and sent to a helper)
    assert len(labels) > 1
    assert len({id(label) for label in labels}) == len(set(labels))


def test_a_snapshot_without_categories_at_the_end_does_not_move_it() -> None:
    # GIVEN a session whose only snapshot, at its last instant, holds nothing: no Context
    # counter gets a sample, so nothing sits at the end but the closing zeros
    end = T0 + 10 * S
    empty = ContextSnapshot(
        end,
        AnchorKind.SESSION,
        "",
        Stage.TRANSCRIPT_OBSERVED,
        Basis.CHARS,
        Coverage.PARTIAL,
        True,
        (),
    )
    session = Session(
        harness=Harness.PI,
        session_id="empty",
        start_ns=T0,
        end_ns=end,
        sources=("x.jsonl",),
        snapshots=(empty,),
    )
    (laid,) = build_layout([session], TraceFacts()).sessions
    assert laid.slices[0].end == end


def _long_session(requests: int) -> Session:
    """`requests` responses one after another, each with one tool call inside it."""
    responses = tuple(
        Response(f"r{i}", T0 + 10 * i * S, T0 + (10 * i + 9) * S, "m", Usage(100 + i))
        for i in range(requests)
    )
    calls = tuple(
        ToolCall(f"c{i}", "read", T0 + (10 * i + 2) * S, T0 + (10 * i + 5) * S, response_id=f"r{i}")
        for i in range(requests)
    )
    return Session(
        harness=Harness.PI,
        session_id="long",
        start_ns=T0,
        end_ns=T0 + 10 * requests * S,
        sources=("x.jsonl",),
        responses=responses,
        tool_calls=calls,
    )


def _live_slices() -> int:
    gc.collect()
    return sum(1 for thing in gc.get_objects() if type(thing) is LaidSlice)


def test_the_writer_holds_a_slice_from_its_begin_to_its_end_only() -> None:
    # GIVEN a session of 2,000 requests (6,002 slices: a response, its turn and its tool
    # call each, the capture and the model's run)
    session = _long_session(2_000)
    ((_, plan),) = iter_layout([session], TraceFacts())
    assert plan.slice_count == 3 * 2_000 + 2
    before = _live_slices()
    # WHEN the Perfetto writer has swept half of the session's events
    events = session_events(plan)
    for _ in range(plan.slice_count):
        next(events)
    # THEN it holds the few slices still open (the capture, the run, a response and its
    # turn), not
    # the thousands before them, nor those to come: they are made as the sweep reaches them
    assert _live_slices() - before <= 8
    rest = sum(1 for _ in events)
    assert rest > plan.slice_count  # the sweep was in its middle


def test_a_laid_out_session_keeps_every_slice() -> None:
    # The JSON writer and build_layout keep the slices: the same plan, made and kept.
    before = _live_slices()
    (laid,) = build_layout([_long_session(500)], TraceFacts()).sessions
    assert _live_slices() - before == len(laid.slices) == 3 * 500 + 2


def test_a_written_session_leaves_nothing_for_the_garbage_collector() -> None:
    # A plan's blocks and counter samples read the session's data: were that data to
    # keep them too, every session would stay in memory until a collection found the cycle.
    gc.collect()
    gc.disable()
    try:
        PerfettoWriter().write([_long_session(50)], io.BytesIO())
        left = [thing for thing in gc.get_objects() if type(thing) in (SessionData, LaidSlice)]
    finally:
        gc.enable()
    assert left == []


def test_a_pi_session_holds_one_string_per_call_id_and_model() -> None:
    # JSON gives the call's id and its result's toolCallId an object each, and every
    # request's model too: the result's context item and the snapshot share the call's
    # and the response's objects
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.loader import load
    from samples import PI_LARGE

    (session,) = load([PI_LARGE], Diagnostics()).sessions
    calls = {call.call_id: call.call_id for call in session.tool_calls}
    results = [
        change
        for snapshot in session.snapshots
        for change in snapshot.changes
        if change.id.endswith(":result") and change.source_id in calls
    ]
    assert len(results) > 100
    assert all(change.source_id is calls[change.source_id] for change in results)
    models = {response.model for response in session.responses}
    assert len(models) == 1 and len(session.snapshots) > 100
    (model,) = models
    assert all(s.model is model for s in session.snapshots if s.model is not None)


def test_an_observation_holds_the_one_object_of_its_model_name() -> None:
    model, again = "".join(["claude-", "opus"]), "".join(["claude", "-opus"])
    assert model is not again
    first = Observation.request(T0, "r1", model=model)
    second = Observation.request(T0, "r2", model=again)
    assert first.model is second.model == "claude-opus"
    log = ContextLog()
    settled = log.settle(log.observe(second), window_tokens=10)  # a settled copy keeps it
    assert settled.model is first.model
    assert Observation.request(T0, "r3").model is None


def test_a_redacted_codex_rollout_holds_one_copy_of_each_marker_label() -> None:
    # A scrubbed rollout has an item measured from its redaction marker per redacted
    # record; each used to carry a label string of its own
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.loader import load
    from samples import DATA

    rollout = (
        DATA / "codex" / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
    )
    (session,) = load([rollout], Diagnostics()).sessions
    labels: dict[str, list[str]] = {}
    for snapshot in session.snapshots:
        for change in snapshot.changes:
            if change.label.endswith("(length from a redaction marker)"):
                labels.setdefault(change.label, []).append(change.label)
    copies = [label for same in labels.values() for label in same]
    assert len(copies) > len(labels) >= 1
    assert all(label is labels[label][0] for label in copies)


def test_drafts_are_handed_over_once_in_order_and_let_go_as_they_are_taken() -> None:
    import weakref

    from agent_profiler.adapters.drafts import handed_over

    class Draft:
        pass

    drafts = {name: Draft() for name in "abc"}
    order = [drafts["b"], drafts["c"]]
    first = weakref.ref(drafts["a"])
    taken = handed_over(drafts)
    assert next(taken) is first()
    assert drafts == {}  # the adapter's table holds none of them any more
    rest = [next(taken)]
    gc.collect()
    assert first() is None  # the draft before went once the next was taken
    rest += taken
    assert rest == order
    listed = [Draft(), Draft()]
    kept = list(listed)
    assert list(handed_over(listed)) == kept  # a list of drafts: the same, in order
    assert listed == []
