"""What the report shows, from the model, `summary` and `views`, without HTML: the page's
rows and nesting (`Page`), each Context view's facts (`SessionData`) and sentences.

The page's sessions come in `summarise_all`'s order (subagents after their parent), so the
report lists and numbers them as `agent-profiler summary` does. svg.py and html.py format
these values; they do not re-derive them.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_profiler.attribution import REDACTED_KIND
from agent_profiler.console import counted
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
    frozen,
)
from agent_profiler.report.text import percent
from agent_profiler.summary import (
    SessionSummary,
    estimate_error,
    redacted_words,
    summarise,
    summarise_all,
)
from agent_profiler.views import (
    HEAD_HINT,
    INFERRED_HEAD_ID,
    Addition,
    api_errors,
    context_size_series,
    head_label,
    head_measured_after,
    head_source,
    inherited_history,
    largest_additions,
    mid_conversation_why,
    model_runs,
    request_windows,
    session_span,
    snapshots_in_time_order,
    unattributed_is_head,
)

ANCHOR = "session-"  # a Context view's id: this and its place on the page (`page`)
LARGEST_ADDITIONS = 20  # rows of a session's Largest additions table

# The Context chart collapses a long idle stretch of its time axis (`idle_gaps`): one longer
# than GAP_MIN_NS, because a pause of a few minutes (reading, thinking, a coffee) is part of
# the work and worth seeing to scale; and longer than GAP_SHARE of the session's active time
# (its span less every idle stretch over GAP_MIN_NS), because a stretch that is short next
# to the work costs less width than a broken axis costs the reader: a 40-minute lunch in a
# 6-hour working day is drawn to scale, the same 40 minutes in a 1-hour session is not.
# Measured against the active time, not the span, so that four 2-hour breaks are shortened
# like one 8-hour night (each alone is under a quarter of the span). At most MAX_GAPS, the
# longest: each still takes a few units of width.
# Nor when what is left to draw to scale is under ACTIVE_MIN_NS: two /context snapshots hours
# apart and a millisecond between the session's start and the first would give that
# millisecond, empty, the whole width (a linear axis holds the first snapshot across).
GAP_MIN_NS = 30 * 60 * 1_000_000_000
GAP_SHARE = 0.25
MAX_GAPS = 10
ACTIVE_MIN_NS = 10 * 1_000_000_000

BASIS_WORDS = {
    Basis.CHARS: "text estimates, characters ÷ 4 per journal item, rounded up",
    Basis.CALIBRATED: (
        "text estimates, characters per content class ÷ that class's calibrated characters "
        "per token, rounded up per journal item"
    ),
    Basis.NATIVE_BYTES: "the harness's own request bytes ÷ 4 per category",
    Basis.NATIVE_SUMMARY: "the harness's own per-category counts",
}
ESTIMATE_CAVEAT = "These are not tokenizer counts: the final request may differ."
COVERAGE_WORDS = {
    Coverage.PARTIAL: "partial: the journal does not hold everything the model saw (typically "
    "the system prompt and tool definitions)",
    Coverage.COMPLETE: "complete: every item of the request is estimated",
}
# What became of the part a partial journal lacks (said only of a session it is true of).
HEAD_WORDS = {
    "inferred": "that part is shown as Unattributed, inferred as reported − estimated at the "
    "first request and measured again after a compaction",
    "no size": "no Context size was reported to infer that part from, so the composition "
    "leaves it out",
    "not below": "the estimate was not below the reported size, so none of it was inferred "
    "and the composition leaves it out",
}
STAGE_WORDS = {
    Stage.REQUEST_INPUT: "the request as the harness sent it",
    Stage.CAPTURE_START: "the context at the start of the capture",
    Stage.TRANSCRIPT_OBSERVED: "the transcript the journal recorded, not the request itself",
}


def snapshot_place(session: Session) -> dict[int, str]:
    """id(snapshot) → where it was taken, in words ("request 12", "compaction 1")."""
    requests = {r.id: index for index, r in enumerate(session.responses, start=1)}
    compactions = {c.id: index for index, c in enumerate(session.compactions, start=1)}
    places: dict[int, str] = {}
    for snapshot in session.snapshots:
        if snapshot.anchor is AnchorKind.RESPONSE and snapshot.anchor_id in requests:
            places[id(snapshot)] = f"request {requests[snapshot.anchor_id]}"
        elif snapshot.anchor is AnchorKind.COMPACTION and snapshot.anchor_id in compactions:
            places[id(snapshot)] = f"compaction {compactions[snapshot.anchor_id]}"
        else:
            places[id(snapshot)] = "session"
    return places


def latest_composition(row: SessionSummary) -> list[tuple[Category, int, float]]:
    """(category, tokens, share of the estimated composition) in contract order; shares of
    the estimate's total, not of the reported size nor of the window."""
    total = sum(row.end_categories.values())
    if not total:
        return []
    return [
        (category, row.end_categories[category.value], row.end_categories[category.value] / total)
        for category in Category
        if row.end_categories.get(category.value)
    ]


def estimation_words(session: Session) -> list[str]:
    """The estimation basis and coverage of the session's snapshots, in sentences."""
    snapshots = session.snapshots
    if not snapshots:
        return ["No context composition was recorded for this session.", *_unmetered_words(session)]
    sentences: list[str] = []
    bases = sorted({x.basis for x in snapshots}, key=list(Basis).index)
    sentences.append("Composition: " + "; ".join(BASIS_WORDS[b] for b in bases) + ".")
    if any(b is not Basis.NATIVE_SUMMARY for b in bases):
        sentences.append(ESTIMATE_CAVEAT)
    stages = sorted({x.item_stage or x.stage.value for x in snapshots})
    # Post-compaction snapshots say nothing about the source beyond "after a compaction".
    described = [words for stage, words in STAGE_WORDS.items() if stage.value in stages]
    if described:
        sentences.append("Items are read from " + "; ".join(described) + ".")
    coverages = sorted({x.coverage for x in snapshots}, key=list(Coverage).index)
    covered = [COVERAGE_WORDS[c] for c in coverages]
    if Coverage.PARTIAL in coverages:
        if any(c.id == INFERRED_HEAD_ID for x in snapshots for c in x.changes):
            covered.append(HEAD_WORDS["inferred"])
        else:
            reported = any(x.reported_tokens for x in snapshots)
            covered.append(HEAD_WORDS["not below" if reported else "no size"])
    sentences.append("Coverage: " + "; ".join(covered) + ".")
    if unattributed_is_head(session):
        hint = f"; {HEAD_HINT}" if session.harness is Harness.CLAUDE_CODE else ""
        after = head_measured_after(session)  # the chart's "▼ compaction N"
        source = head_source(f"compaction {after}" if after else "")
        sentences.append(
            f"Unattributed here is the {head_label(after).lower()} ({source}), named so "
            f"below{hint}."
        )
    last = next((x for x in reversed(snapshots_in_time_order(session)) if x.reported_tokens), None)
    if last is not None and last.reported_tokens:
        # Where it was taken: a /context screen's snapshot is the session's, not a request's.
        place = snapshot_place(session)[id(last)]
        where = (
            f"At {place}, the last with both"
            if place != "session"
            else "At the last snapshot with both (the session's, not a request's)"
        )
        sentences.append(
            f"{where}, the estimate is {last.estimated_tokens:,} of "
            f"{last.reported_tokens:,} reported tokens "
            f"({percent(last.estimated_tokens / last.reported_tokens)}); the reported "
            "Context size is never scaled to match."
        )
    error = estimate_error(session)
    if error.median is not None and error.worst is not None:
        sentences.append(
            f"Estimate error over {error.requests:,} requests after the first: median "
            f"{percent(error.median)}, worst {percent(error.worst)} of the reported size."
        )
    if session.estimate_methods:
        sentences.append(
            "Sized from a number the journal reports for the item, not from text: "
            + "; ".join(session.estimate_methods)
            + " (docs/estimates.md)."
        )
    if redacted := dict(session.unmeasured).get(REDACTED_KIND, 0):
        words = redacted_words(redacted)
        sentences.append(f"{words[:1].upper()}{words[1:]}.")
    sentences += _unmetered_words(session)
    if why := mid_conversation_why(session):
        sentences.append(
            f"The journal starts mid-conversation ({why}): its Unattributed holds the "
            "earlier turns as well as the system prompt and tool schemas."
        )
    if (inherited := inherited_history(session)) is not None:
        sentences.append(
            f"A fork: it starts with a copy of {counted(inherited[0], 'entry', 'entries')} "
            f"({counted(inherited[1], 'request')}) of the session it was forked from, its "
            "starting context, not its calls (that session counts them)."
        )
    if errors := api_errors(session):
        sentences.append(
            f"{counted(errors, 'failed API call')} the harness retried (a 529 Overloaded and "
            "the like), each an instant on the trace's Events track."
        )
    if session.unmeasured:
        seen = ", ".join(f"{kind} × {count:,}" for kind, count in session.unmeasured)
        sentences.append(f"Seen but not estimated: {seen}.")
    return sentences


def _unmetered_words(session: Session) -> list[str]:
    """What the page lacks for responses whose journal records no usage (summary's
    responses_without_usage)."""
    count = len(session.unmetered_responses)
    if not count:
        return []
    them = "it" if count == 1 else "them"
    return [
        f"{counted(count, 'response')} without usage in the journal (every usage field 0): "
        f"not counted in Responses, and no Context size is drawn for {them}."
    ]


def _depths(sessions: Sequence[Session]) -> dict[str, int]:
    """Each session's depth: how many of its ancestors are on the page, up its chain of
    parents until one is not, or comes round again (a damaged journal's cycle). Each
    session is walked up once: a chain's depths come from the first already known, so a
    chain of thousands costs its length, not its length squared."""
    by_id = {s.session_id: s for s in sessions}
    known: dict[str, int] = {}
    for start in by_id:
        path: list[str] = []  # the sessions walked up from `start`, none known yet
        on_path: dict[str, int] = {}
        node: str | None = start
        while node is not None and node in by_id and node not in known and node not in on_path:
            on_path[node] = len(path)
            path.append(node)
            node = by_id[node].parent_session
        if node is not None and node in on_path:  # a cycle: each of it sees the others
            cycle = on_path[node]
            for member in path[cycle:]:
                known[member] = len(path) - cycle - 1
            del path[cycle:]
        depth = known[node] if node is not None and node in known else -1
        for member in reversed(path):
            depth += 1
            known[member] = depth
    return {s.session_id: known[s.session_id] for s in sessions}


def _rows(sessions: Sequence[Session], window: int | None) -> list[tuple[SessionSummary, Session]]:
    """summarise_all's rows (subagents after their parent) paired with their sessions; a
    session summarise_all leaves out (a parent cycle) still gets its own row."""
    by_id: dict[str, Session] = {}
    for session in sessions:
        by_id.setdefault(session.session_id, session)
    rows = [(row, by_id[row.session]) for row in summarise_all(sessions, window=window)]
    covered = {row.session for row, _ in rows}
    rows += [
        (summarise(s, window=window), s) for s in by_id.values() if s.session_id not in covered
    ]
    return rows


@frozen
class Page:
    """The sessions of one report and how they relate: rows in page order, each session's
    anchor (`session-<n>`) and nesting depth, the children found among them."""

    rows: list[tuple[SessionSummary, Session]]
    anchors: dict[str, str]  # session id → its Context view's id
    depths: dict[str, int]  # session id → how many of its ancestors are on the page
    kids: dict[str, list[Session]]  # parent id → its subagents on the page, in page order

    @property
    def subagents(self) -> int:
        return sum(1 for _, s in self.rows if s.is_subagent)


def page(
    sessions: Sequence[Session],
    window: int | None,
    anchor: str = ANCHOR,
) -> Page:
    """The page of `sessions`; each session's anchor is `anchor` and its place (1, 2, …)."""
    rows = _rows(sessions, window)
    anchors = {session.session_id: f"{anchor}{n}" for n, (_, session) in enumerate(rows, 1)}
    depths = _depths([s for _, s in rows])
    ids = set(anchors)
    kids: dict[str, list[Session]] = {}
    for _, session in rows:
        if session.parent_session in ids and session.parent_session is not None:
            kids.setdefault(session.parent_session, []).append(session)
    return Page(rows, anchors, depths, kids)


def snapshot_categories(snapshots: Sequence[ContextSnapshot]) -> list[Category]:
    """The categories any of `snapshots` holds, in contract order: the chart's bands and the
    snapshot table's columns."""
    return [c for c in Category if any(dict(x.categories).get(c) for x in snapshots)]


@frozen
class SessionData:
    """What one session's Context view shows, each fact taken once from the model, its
    summary row and `views` (the chart and the tables read these, they do not re-derive)."""

    row: SessionSummary
    session: Session
    span: tuple[int, int]  # views.session_span
    snapshots: list[ContextSnapshot]  # in time order
    places: dict[int, str]  # snapshot_place
    categories: list[Category]  # snapshot_categories of `snapshots`
    sizes: list[tuple[int, int]]  # views.context_size_series
    changes: list[tuple[int, str]]  # model changes: every views.model_runs run but the first
    additions: list[Addition]  # views.largest_additions, all of them
    peak: Response | None  # the first response whose prompt is the row's peak
    # (time, window) where the journal's window changed (a model switch): the chart steps
    windows: tuple[tuple[int, int], ...] = ()
    # (start, end) of each idle stretch the chart's time axis collapses (idle_gaps), in order
    gaps: tuple[tuple[int, int], ...] = ()


def session_data(row: SessionSummary, session: Session) -> SessionData:
    snapshots = snapshots_in_time_order(session)
    span = session_span(session)
    return SessionData(
        row=row,
        session=session,
        span=span,
        snapshots=snapshots,
        places=snapshot_place(session),
        categories=snapshot_categories(snapshots),
        sizes=context_size_series(session),
        changes=model_runs(session)[1:],
        additions=largest_additions(session),
        peak=next(
            (r for r in session.responses if r.usage.prompt_tokens == row.peak_prompt_tokens),
            None,
        ),
        windows=_window_steps(session),
        gaps=idle_gaps(session, span),
    )


def _window_steps(session: Session) -> tuple[tuple[int, int], ...]:
    """(request start, window) at each request whose window differs from the one before."""
    windows = request_windows(session)
    steps: list[tuple[int, int]] = []
    for response in sorted(session.responses, key=lambda r: r.start_ns):
        window = windows.get(response.id)
        if window and (not steps or steps[-1][1] != window):
            steps.append((response.start_ns, window))
    return tuple(steps)


def idle_stretches(session: Session, span: tuple[int, int]) -> list[tuple[int, int]]:
    """(start, end) of every stretch of `span` in which nothing was recorded, in time order.

    Something happens at a snapshot, a prompt's arrival and end, a marker and the span's two
    ends, and all along a response, a failed or unmetered request, a tool call and a
    compaction (work in flight is not idle, however long a build or a request ran). A
    prompt's span is a turn, not work: its ends count, its middle does not. The span's ends
    count too, so a session that ends (or starts) long after (or before) its last (or
    first) record has that tail found as a stretch like any other."""
    t0, t1 = span
    busy = [
        (item.start_ns, item.end_ns)
        for items in (
            session.responses,
            session.failed_requests,
            session.unmetered_responses,
            session.tool_calls,
            session.compactions,
        )
        for item in items
    ]
    moments = [t0, t1, *(x.time_ns for x in session.snapshots)]
    moments += [x.time_ns for x in session.markers]
    moments += [t for p in session.prompts for t in (p.start_ns, p.end_ns)]
    busy += [(t, t) for t in moments]
    busy.sort()
    stretches: list[tuple[int, int]] = []
    reach = t0
    for start, end in busy:
        if start > reach:
            stretches.append((reach, min(start, t1)))
        reach = max(reach, end)
    return [(a, b) for a, b in stretches if b > a]


def idle_gaps(session: Session, span: tuple[int, int]) -> tuple[tuple[int, int], ...]:
    """The idle stretches the Context chart collapses, in time order: those longer than
    GAP_MIN_NS and than GAP_SHARE of the active time (the span less all of those longer
    than GAP_MIN_NS), the MAX_GAPS longest. None when less than ACTIVE_MIN_NS would remain
    (two snapshots hours apart and nothing else): there would be nothing to draw to scale."""
    t0, t1 = span
    if t1 - t0 <= GAP_MIN_NS:
        return ()
    long = [(a, b) for a, b in idle_stretches(session, span) if b - a > GAP_MIN_NS]
    active = t1 - t0 - sum(b - a for a, b in long)
    if active < ACTIVE_MIN_NS:
        return ()
    chosen = [(a, b) for a, b in long if b - a > GAP_SHARE * active]
    chosen.sort(key=lambda g: (g[0] - g[1], g[0]))  # longest first, then earliest
    return tuple(sorted(chosen[:MAX_GAPS]))
