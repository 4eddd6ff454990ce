"""What the report shows, without HTML (report/data.py): the page's rows, anchors and
nesting, where each snapshot was taken, the estimation sentences, the window's steps and
the idle stretches the Context chart collapses. Unit tests of the functions, on real
journals of tests/data and sessions made by hand (test_report.py, left out of mutation runs
for its renders, checks the same values on the page)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from test_claude_code import SPOTTER_DIR

import samples
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
    Usage,
)
from agent_profiler.report.data import (
    ACTIVE_MIN_NS,
    COVERAGE_WORDS,
    ESTIMATE_CAVEAT,
    GAP_MIN_NS,
    HEAD_WORDS,
    estimation_words,
    idle_gaps,
    latest_composition,
    page,
    session_data,
    snapshot_categories,
    snapshot_place,
)
from agent_profiler.summary import estimate_error, summarise
from samples import CODEX_SMALL

S = 1_000_000_000
HOUR = 3600 * S
T0 = 1_771_875_266 * S  # a real clock: no stretch starts at 0
CODEX_SHORT = CODEX_SMALL


def read(*paths: Path) -> list[Session]:
    return samples.read(*paths)[0]


@pytest.fixture(scope="module")
def spotter() -> list[Session]:
    return read(SPOTTER_DIR)


@pytest.fixture(scope="module")
def codex() -> Session:
    (session,) = read(CODEX_SHORT)
    return session


# --------------------------------------------------------------------------- the page


def test_the_page_nests_subagents_and_keeps_a_parent_cycle() -> None:
    """Rows in summarise_all's order, anchors numbered in it, depth counted along parents on
    the page; sessions in a parent cycle (which summarise_all leaves out) still get rows; a
    subagent whose parent is not on the page is nobody's kid."""

    def session(session_id: str, parent: str | None) -> Session:
        return Session(
            harness=Harness.CODEX,
            session_id=session_id,
            start_ns=0,
            end_ns=S,
            sources=(f"{session_id}.jsonl",),
            parent_session=parent,
        )

    sessions = [
        session("x", "y"),
        session("a", None),
        session("y", "x"),
        session("a/b", "a"),
        session("a/b/c", "a/b"),
        session("orphan", "gone"),
    ]
    shown = page(sessions, None)
    assert [s.session_id for _, s in shown.rows] == ["a", "a/b", "a/b/c", "orphan", "x", "y"]
    assert [row.session for row, _ in shown.rows] == [s.session_id for _, s in shown.rows]
    assert shown.anchors == {
        "a": "session-1",
        "a/b": "session-2",
        "a/b/c": "session-3",
        "orphan": "session-4",
        "x": "session-5",
        "y": "session-6",
    }
    assert shown.depths == {"a": 0, "a/b": 1, "a/b/c": 2, "orphan": 0, "x": 1, "y": 1}
    assert {parent: [k.session_id for k in kids] for parent, kids in shown.kids.items()} == {
        "a": ["a/b"],
        "a/b": ["a/b/c"],
        "x": ["y"],
        "y": ["x"],
    }
    assert shown.subagents == 5
    # The window given applies to every row, those of a parent cycle too.
    assert {row.window_tokens for row, _ in page(sessions, 123_000).rows} == {123_000}
    # Another anchor (`report`'s placeholder) numbers the same way.
    assert page(sessions, None, "tmp-").anchors["a/b"] == "tmp-2"


class _Walked:
    """A session's id and parent, counting each time its parent is asked for."""

    asked = 0

    def __init__(self, session_id: str, parent: str | None) -> None:
        self.session_id, self._parent = session_id, parent

    @property
    def parent_session(self) -> str | None:
        _Walked.asked += 1
        return self._parent


def test_a_pages_depths_walk_each_session_up_once() -> None:
    """A chain of 300 (each the child of the one before), a cycle of three with a session
    hanging from it, one its own parent: each depth is how many ancestors are on the page
    until one is not or comes round again, and each session's parent is asked for once
    or twice, not once per descendant (before: 300 × 299 / 2 asks for the chain)."""
    from agent_profiler.report.data import _depths

    chain = [_Walked(f"c{k}", f"c{k - 1}" if k else None) for k in range(300)]
    loop = [_Walked("p", "r"), _Walked("q", "p"), _Walked("r", "q"), _Walked("t", "p")]
    walked: Any = [*reversed(chain), *loop, _Walked("self", "self"), _Walked("lost", "gone")]
    _Walked.asked = 0
    depths = _depths(walked)
    assert _Walked.asked <= 2 * len(walked)
    assert depths == {f"c{k}": k for k in reversed(range(300))} | {
        "p": 2,
        "q": 2,
        "r": 2,
        "t": 3,
        "self": 0,
        "lost": 0,
    }


# --------------------------------------------------------------------------- snapshots


def test_a_snapshot_is_placed_at_its_request_or_compaction_else_the_session(
    spotter: list[Session],
) -> None:
    main = spotter[0]
    places = snapshot_place(main)
    (compaction,) = main.compactions
    (after,) = [x for x in main.snapshots if x.anchor is AnchorKind.COMPACTION]
    assert after.anchor_id == compaction.id and places[id(after)] == "compaction 1"
    first = min(main.snapshots, key=lambda x: x.time_ns)
    assert places[id(first)] == "request 1"
    last = max(
        (x for x in main.snapshots if x.anchor is AnchorKind.RESPONSE), key=lambda x: x.time_ns
    )
    assert places[id(last)] == f"request {len(main.responses)}"
    # Anchored on a request or a compaction the session does not hold, or on the session.
    lost = dataclasses.replace(first, anchor_id="not-a-response")
    gone = dataclasses.replace(after, anchor_id="not-a-compaction")
    own = dataclasses.replace(first, anchor=AnchorKind.SESSION, anchor_id="")
    odd = dataclasses.replace(main, snapshots=(lost, gone, own, first))
    assert list(snapshot_place(odd).values()) == ["session", "session", "session", "request 1"]


def test_the_latest_composition_is_in_contract_order_as_shares_of_the_estimate(
    spotter: list[Session],
) -> None:
    row = summarise(spotter[0])
    composition = latest_composition(row)
    assert [c for c, _, _ in composition] == [
        Category.ENVIRONMENT,
        Category.PROMPTS,
        Category.ASSISTANT,
        Category.RESULTS,
        Category.SUMMARIES,
        Category.UNATTRIBUTED,
    ]
    total = sum(row.end_categories.values())
    assert [(t, share) for _, t, share in composition] == [
        (row.end_categories[c.value], pytest.approx(row.end_categories[c.value] / total))
        for c, _, _ in composition
    ]
    assert sum(share for _, _, share in composition) == pytest.approx(1)
    bare = dataclasses.replace(spotter[0], snapshots=())
    assert latest_composition(summarise(bare)) == []


def test_the_charts_bands_are_the_categories_any_snapshot_holds(spotter: list[Session]) -> None:
    """In contract order, each once: Overhead is held by snapshots before the last (not in
    the latest composition), the first request held only the prompt and the head."""
    main = spotter[0]
    assert snapshot_categories(main.snapshots) == [
        Category.ENVIRONMENT,
        Category.PROMPTS,
        Category.ASSISTANT,
        Category.RESULTS,
        Category.SUMMARIES,
        Category.OVERHEAD,
        Category.UNATTRIBUTED,
    ]
    assert snapshot_categories(main.snapshots[:1]) == [Category.PROMPTS, Category.UNATTRIBUTED]
    assert snapshot_categories(()) == []


# --------------------------------------------------------------------------- estimation words


def test_the_estimation_words_of_a_real_session_in_full(spotter: list[Session]) -> None:
    main = spotter[0]
    last = max((x for x in main.snapshots if x.reported_tokens), key=lambda x: x.time_ns)
    assert (last.estimated_tokens, last.reported_tokens) == (59_860, 77_334)
    error = estimate_error(main)
    assert error.requests == 151 and error.median is not None and error.worst is not None
    assert estimation_words(main) == [
        "Composition: text estimates, characters ÷ 4 per journal item, rounded up.",
        "These are not tokenizer counts: the final request may differ.",
        "Items are read from the transcript the journal recorded, not the request itself.",
        f"Coverage: {COVERAGE_WORDS[Coverage.PARTIAL]}; {HEAD_WORDS['inferred']}.",
        # the inferred head named for what it is, with the way to make it exact (issue 29),
        # measured again after the session's compaction: what the harness restored too
        "Unattributed here is the system prompt, tools, restored context, inferred "
        "(not in the journal: reported − estimated at the first request and again after "
        "compaction 1, so it also holds what the harness restored then), named so below; one "
        "/context run in the session makes it exact.",
        "At request 152, the last with both, the estimate is 59,860 of 77,334 reported tokens "
        "(77%); the reported Context size is never scaled to match.",
        f"Estimate error over 151 requests after the first: median "
        f"{100 * error.median:.0f}%, worst {100 * error.worst:.0f}% of the reported size.",
    ]
    # The same session with its first snapshot measured natively and from the request:
    # each sentence lists every basis, source and coverage, in the model's order.
    first = dataclasses.replace(
        main.snapshots[0],
        basis=Basis.NATIVE_SUMMARY,
        coverage=Coverage.COMPLETE,
        stage=Stage.REQUEST_INPUT,
        item_stage=None,
    )
    mixed = dataclasses.replace(main, snapshots=(first, *main.snapshots[1:]))
    words = estimation_words(mixed)
    assert words[0] == (
        "Composition: the harness's own per-category counts; "
        "text estimates, characters ÷ 4 per journal item, rounded up."
    )
    assert words[2] == (
        "Items are read from the request as the harness sent it; "
        "the transcript the journal recorded, not the request itself."
    )
    assert words[3] == (
        f"Coverage: {COVERAGE_WORDS[Coverage.COMPLETE]}; {COVERAGE_WORDS[Coverage.PARTIAL]}; "
        f"{HEAD_WORDS['inferred']}."
    )


def test_the_estimation_words_of_a_codex_session_name_what_was_sized_from_a_number(
    codex: Session,
) -> None:
    """Codex's reasoning is sized from the journal's token count; its Unattributed is not
    the inferred head (no head sentence)."""
    assert estimation_words(codex) == [
        "Composition: text estimates, characters ÷ 4 per journal item, rounded up.",
        ESTIMATE_CAVEAT,
        "Items are read from the transcript the journal recorded, not the request itself.",
        f"Coverage: {COVERAGE_WORDS[Coverage.PARTIAL]}; {HEAD_WORDS['inferred']}.",
        "At request 6, the last with both, the estimate is 60,853 of 63,441 reported tokens "
        "(96%); the reported Context size is never scaled to match.",
        "Estimate error over 5 requests after the first: median 2%, worst 4% of the reported size.",
        "Sized from a number the journal reports for the item, not from text: "
        "reasoning-output-tokens (docs/estimates.md).",
    ]
    unmeasured = dataclasses.replace(codex, unmeasured=(("image", 2), ("pdf", 1_200)))
    assert estimation_words(unmeasured)[-1] == "Seen but not estimated: image × 2, pdf × 1,200."


def test_estimation_words_without_a_snapshot_an_estimate_or_claude_code(
    spotter: list[Session],
) -> None:
    main = spotter[0]
    assert estimation_words(dataclasses.replace(main, snapshots=())) == [
        "No context composition was recorded for this session."
    ]
    # The harness's own counts only: no caveat about estimates.
    native = tuple(dataclasses.replace(x, basis=Basis.NATIVE_SUMMARY) for x in main.snapshots)
    words = estimation_words(dataclasses.replace(main, snapshots=native))
    assert words[0] == "Composition: the harness's own per-category counts."
    assert ESTIMATE_CAVEAT not in words
    # The head named, without Claude Code's way to make it exact, for another harness (the
    # subagent's: no compaction, so as the first request measured it).
    other = estimation_words(dataclasses.replace(spotter[1], harness=Harness.CODEX))
    assert (
        "Unattributed here is the system prompt and tool schemas, inferred (not in the "
        "journal: reported − estimated at the first request), named so below." in other
    )


# --------------------------------------------------------------------------- session data


def test_the_window_steps_where_the_journals_window_changes(codex: Session) -> None:
    """The chart's window line steps at each request whose window differs from the one
    before; a request without a window of its own changes nothing."""
    snapshots = list(codex.snapshots)
    requests = sorted(codex.responses, key=lambda r: r.start_ns)
    assert len(requests) == 6 and {x.window_tokens for x in snapshots} == {258_400}
    by_request = {x.anchor_id: i for i, x in enumerate(snapshots)}
    for index, window in ((2, None), (3, 1_000_000), (4, 1_000_000), (5, 258_400)):
        where = by_request[requests[index].id]
        snapshots[where] = dataclasses.replace(snapshots[where], window_tokens=window)
    switched = dataclasses.replace(codex, snapshots=tuple(snapshots))
    data = session_data(summarise(switched), switched)
    assert data.windows == (
        (requests[0].start_ns, 258_400),
        (requests[3].start_ns, 1_000_000),
        (requests[5].start_ns, 258_400),
    )
    assert session_data(summarise(codex), codex).windows == ((requests[0].start_ns, 258_400),)


def test_the_peak_is_the_first_response_at_the_rows_peak(codex: Session) -> None:
    row = summarise(codex)
    data = session_data(row, codex)
    assert data.peak is not None and data.peak.usage.prompt_tokens == row.peak_prompt_tokens
    assert data.peak is next(
        r for r in codex.responses if r.usage.prompt_tokens == row.peak_prompt_tokens
    )
    bare = dataclasses.replace(codex, responses=())
    assert session_data(summarise(bare), bare).peak is None


# --------------------------------------------------------------------------- idle gaps


def worked(*spans: tuple[int, int], end: int | None = None) -> Session:
    """A session of one response over each (start, end) since T0 (ns), with a snapshot at
    its start; it ends at the last response's end unless `end` says otherwise."""
    responses = tuple(
        Response(f"r{i}", T0 + a, T0 + b, "m", Usage(1_000)) for i, (a, b) in enumerate(spans)
    )
    snapshots = tuple(
        ContextSnapshot(
            r.start_ns,
            AnchorKind.RESPONSE,
            r.id,
            Stage.REQUEST_INPUT,
            Basis.CHARS,
            Coverage.COMPLETE,
            i == 0,
            ((Category.RESULTS, 1_000),),
            reported_tokens=1_000,
        )
        for i, r in enumerate(responses)
    )
    return Session(
        harness=Harness.CODEX,
        session_id="idle",
        start_ns=T0,
        end_ns=T0 + (spans[-1][1] if end is None else end),
        sources=("idle.jsonl",),
        responses=responses,
        snapshots=snapshots,
    )


def gaps(session: Session) -> list[tuple[int, int]]:
    return [(a - T0, b - T0) for a, b in idle_gaps(session, (session.start_ns, session.end_ns))]


def test_a_gap_needs_more_than_a_quarter_of_the_active_time() -> None:
    # 2 h of work, 1 h idle, 2 h of work: the hour is exactly a quarter of the 4 h active.
    assert gaps(worked((0, 2 * HOUR), (3 * HOUR, 5 * HOUR))) == []
    assert gaps(worked((0, 2 * HOUR), (3 * HOUR + S, 5 * HOUR + S))) == [(2 * HOUR, 3 * HOUR + S)]


def test_a_gap_needs_more_than_half_an_hour() -> None:
    # 30 min idle exactly after a minute of work: not a gap however short the work; nor
    # in a session no longer than half an hour.
    minute = 60 * S
    assert gaps(worked((0, minute), (minute + GAP_MIN_NS, 2 * minute + GAP_MIN_NS))) == []
    assert gaps(worked((0, minute), end=GAP_MIN_NS)) == []
    assert gaps(worked((0, minute), end=minute + GAP_MIN_NS)) == []
    assert gaps(worked((0, minute), end=minute + GAP_MIN_NS + S)) == [
        (minute, minute + GAP_MIN_NS + S)
    ]


def test_ten_seconds_of_activity_are_enough_to_draw_to_scale() -> None:
    # 10 s of work then 4 h until the session's end: exactly the least left to scale.
    assert gaps(worked((0, ACTIVE_MIN_NS), end=ACTIVE_MIN_NS + 4 * HOUR)) == [
        (ACTIVE_MIN_NS, ACTIVE_MIN_NS + 4 * HOUR)
    ]
    assert gaps(worked((0, ACTIVE_MIN_NS - 1), end=ACTIVE_MIN_NS + 4 * HOUR)) == []
