"""The comparison summary: one row of numbers per session, computed from the same
model the trace is built from, and rendered as a terminal table or JSON.

Definitions (seed 001's final commit, the peer command whose key names we keep):
- a call is one model request (one message id, usage merged per field with max;
  all-zero usage is not a call) — exactly the model's `Session.responses`;
- first / peak / final are prompt sizes (reported request input); growth is
  peak − first; fill is peak / window, the window the trace and the report use: the
  journal's, one given with --window, the harness's model table's, or an assumed default
  (Claude Code's 200,000), each named in `window_source` and marked in the table;
- a repeat is a call identical to an earlier one (same thread, tool and full
  input) whose earlier twin did not fail; the record of earlier calls is cleared
  after a call that can change the workspace;
- result chars are the characters of tool results as the model sees them;
- subagents are their own rows, never added to their parent's numbers;
- the estimate error of a session is |estimated − reported| / reported over its
  request snapshots that have a reported size, after the first (where the inferred
  head makes the two agree by construction): its median and its worst case.
"""

from __future__ import annotations

import os
import re
import statistics
from collections.abc import Sequence
from dataclasses import field
from typing import Any

from agent_profiler.adapters import adapter_for
from agent_profiler.adapters.claude_context import NATIVE_HEAD
from agent_profiler.attribution import REDACTED_KIND
from agent_profiler.console import counted
from agent_profiler.model import AnchorKind, Category, Session, frozen
from agent_profiler.privacy import private_path
from agent_profiler.records import record
from agent_profiler.views import (
    HEAD_HINT,
    HEAD_LABEL,
    category_label,
    compactions_after,
    largest_addition_per_snapshot,
    largest_additions,
    main_model,
    model_requests,
    session_fill,
    unattributed_is_head,
)

# Calls that can change the workspace, per harness: after one, earlier identical
# calls no longer count as repeats (a re-read after an edit is not waste).
LARGEST_RESULTS = 5
BAR_WIDTH = 12
# One letter per category for the composition bar (legend printed under the table).
BAR_LETTERS = {
    Category.SYSTEM: "S",
    Category.RULES: "R",
    Category.SKILLS: "K",
    Category.TOOLS: "T",
    Category.ENVIRONMENT: "E",
    Category.PROMPTS: "P",
    Category.ASSISTANT: "A",
    Category.RESULTS: "X",
    Category.SUMMARIES: "C",
    Category.OVERHEAD: "O",
    Category.MESSAGES: "M",
    Category.UNATTRIBUTED: "?",
}


@frozen
class CallRow:
    index: int
    response_id: str
    prompt_tokens: int
    new_tokens: int  # prompt − cache read: what the provider had not cached
    output_tokens: int
    largest_addition_tokens: int | None
    largest_addition_tool: str | None  # the tool call that added it (None: no tool did)
    largest_addition_label: str | None = None  # the item's own label ("Assistant text")


@record
class SessionSummary:
    session: str
    harness: str
    model: str | None
    source: str
    parent: str | None
    calls: int
    subagent_calls: int
    first_prompt_tokens: int | None
    peak_prompt_tokens: int | None
    final_prompt_tokens: int | None
    growth_tokens: int | None
    window_tokens: int | None
    peak_fill: float | None
    compactions: int
    tool_calls: int
    failed_tool_calls: int
    repeated_tool_calls: int
    tool_result_chars: int
    largest_tool_results: list[dict[str, Any]]
    end_categories: dict[str, int]
    native_head: dict[str, int] | None = None  # from the last /context run, when there is one
    estimate_basis: str | None = None  # the basis of the request snapshots ("chars/4", ...)
    estimate_error_requests: int = 0  # requests the error is measured over
    estimate_error_median: float | None = None
    estimate_error_worst: float | None = None
    # Bare `REDACTED` placeholders in what the journal carried to the model: it holds less
    # text than was sent, so no estimator can agree with the reported size (0: none).
    redacted_placeholders: int = 0
    per_call: list[CallRow] = field(default_factory=list)
    compaction_events: list[dict[str, Any]] = field(default_factory=list)
    clock: str = "journal"  # or "synthetic": no times in the journal (Session.clock)
    # Responses whose usage was all zero: requests, but not in `calls` (peer-compatible).
    responses_without_usage: int = 0
    cost: dict[str, Any] | None = None  # the session's receipt (summary --cost; cost.py)
    # Every model in the order it first served a request: (model, requests, its window).
    models: list[tuple[str, int, int | None]] = field(default_factory=list)
    # The Unattributed category is the inferred head (system prompt and tool schemas, not in
    # the journal: views.unattributed_is_head), named so in the table.
    inferred_head: bool = False
    # Where window_tokens (and so peak_fill) came from: "journal", "given" (--window),
    # "model table" (the harness's own per-model table) or "assumed" (a default).
    window_source: str | None = None

    def to_json(self, with_calls: bool) -> dict[str, Any]:
        data: dict[str, Any] = {
            "session": self.session,
            "harness": self.harness,
            "model": self.model,
            "models": [
                {"model": model, "requests": requests, "window_tokens": window}
                for model, requests, window in self.models
            ],
            "source": self.source,
            "calls": self.calls,
            "subagent_calls": self.subagent_calls,
            "first_prompt_tokens": self.first_prompt_tokens,
            "peak_prompt_tokens": self.peak_prompt_tokens,
            "final_prompt_tokens": self.final_prompt_tokens,
            "growth_tokens": self.growth_tokens,
            "window_tokens": self.window_tokens,
            "window_source": self.window_source,
            "peak_fill": self.peak_fill,
            "compactions": self.compactions,
            "tool_calls": self.tool_calls,
            "failed_tool_calls": self.failed_tool_calls,
            "repeated_tool_calls": self.repeated_tool_calls,
            "tool_result_chars": self.tool_result_chars,
            "largest_tool_results": self.largest_tool_results,
            "end_categories": self.end_categories,
            "native_head": self.native_head,
            "estimate_basis": self.estimate_basis,
            "estimate_error_requests": self.estimate_error_requests,
            "estimate_error_median": self.estimate_error_median,
            "estimate_error_worst": self.estimate_error_worst,
            "clock": self.clock,
            "responses_without_usage": self.responses_without_usage,
            "inferred_head": self.inferred_head,
        }
        if self.redacted_placeholders:
            data["redacted_placeholders"] = self.redacted_placeholders
        if self.cost is not None:
            data["cost"] = self.cost
        if self.parent is not None:
            data["parent"] = self.parent
        if with_calls:
            data["per_call"] = [
                {
                    "call": c.index,
                    "response_id": c.response_id,
                    "prompt_tokens": c.prompt_tokens,
                    "new_tokens": c.new_tokens,
                    "output_tokens": c.output_tokens,
                    "largest_addition_tokens": c.largest_addition_tokens,
                    "largest_addition_tool": c.largest_addition_tool,
                    "largest_addition_label": c.largest_addition_label,
                }
                for c in self.per_call
            ]
            data["compaction_events"] = self.compaction_events
        return data


def repeated_calls(session: Session) -> int:
    """Identical (tool, full input) calls whose earlier twin did not fail, forgetting
    earlier calls after one that can change the workspace."""
    adapter = adapter_for(session.harness)
    mutating = adapter.mutating_tools if adapter is not None else frozenset()
    earlier_failed: dict[tuple[str, str], bool] = {}
    repeats = 0
    for call in sorted(
        (c for c in session.tool_calls if c.by_model), key=lambda c: (c.start_ns, c.call_id)
    ):
        key = (call.name, call.args_digest or repr(call.args_preview))
        if key in earlier_failed and not earlier_failed[key]:
            repeats += 1
        earlier_failed[key] = call.is_error
        if call.name in mutating:
            earlier_failed.clear()
    return repeats


@frozen
class EstimateFidelity:
    basis: str | None
    requests: int
    median: float | None
    worst: float | None


def estimate_error(session: Session) -> EstimateFidelity:
    """How far the estimate is from the reported request input (see the module's
    definitions); ratios rounded to 4 places so that JSON output is stable."""
    measured = [
        s
        for s in session.snapshots
        if s.anchor is AnchorKind.RESPONSE and s.reported_tokens and s.categories
    ]
    bases = sorted({s.basis.value for s in measured})
    errors = [
        abs(s.estimated_tokens - s.reported_tokens) / s.reported_tokens
        for s in measured[1:]
        if s.reported_tokens
    ]
    return EstimateFidelity(
        ", ".join(bases) or None,
        len(errors),
        round(statistics.median(errors), 4) if errors else None,
        round(max(errors), 4) if errors else None,
    )


def summarise(
    session: Session, *, window: int | None = None, children: Sequence[Session] = ()
) -> SessionSummary:
    prompts = [r.usage.prompt_tokens for r in session.responses]
    models = model_requests(session)
    # The window the trace and the report draw, where it came from (an assumed one is used,
    # and said to be assumed: views.fill_window), and the fill, which follows the model in
    # use: each request against the window reported with it.
    known_window, window_source, peak_fill = session_fill(session, window)
    peak = max(prompts) if prompts else None
    # Tool calls the model made; harness-started children (Muse reminders) are not calls.
    calls = [c for c in session.tool_calls if c.by_model]
    per_tool: dict[str, list[int]] = {}
    for call in calls:
        per_tool.setdefault(call.name, []).append(call.result_chars)
    ranked_tools = sorted(
        ((name, sizes) for name, sizes in per_tool.items() if sum(sizes)),
        key=lambda item: (-sum(item[1]), item[0]),
    )[:LARGEST_RESULTS]
    largest = [
        {"tool": name, "calls": len(sizes), "chars": sum(sizes), "max_chars": max(sizes)}
        for name, sizes in ranked_tools
    ]
    request_snapshots = [s for s in session.snapshots if s.anchor is AnchorKind.RESPONSE]
    last = (
        request_snapshots[-1]
        if request_snapshots
        else (session.snapshots[-1] if session.snapshots else None)
    )
    end_categories = {c.value: t for c, t in last.categories} if last else {}
    native = [s for s in session.snapshots if s.anchor is AnchorKind.NATIVE]
    native_head = (
        {c.value: t for c, t in native[-1].categories if c in NATIVE_HEAD} if native else None
    )
    summary = SessionSummary(
        session=session.session_id,
        harness=session.harness.value,
        model=main_model(session),  # the one that served most: the trace's, the dataset's
        models=models,
        # The path as the user may share it: relative to here, `~/…`, else the file name
        # (a journal under ~/.claude/projects/ spells the user name twice).
        source=", ".join(private_path(os.path.abspath(p), os.getcwd()) for p in session.sources),
        parent=session.parent_session,
        calls=len(session.responses),
        subagent_calls=sum(len(child.responses) for child in children),
        first_prompt_tokens=prompts[0] if prompts else None,
        peak_prompt_tokens=peak,
        final_prompt_tokens=prompts[-1] if prompts else None,
        growth_tokens=(peak - prompts[0]) if peak is not None else None,
        window_tokens=known_window,
        window_source=window_source,
        peak_fill=peak_fill,
        compactions=len(session.compactions),
        tool_calls=len(calls),
        failed_tool_calls=sum(1 for c in calls if c.is_error),
        repeated_tool_calls=repeated_calls(session),
        tool_result_chars=sum(c.result_chars for c in calls),
        largest_tool_results=largest,
        end_categories=end_categories,
        inferred_head=unattributed_is_head(session),
        native_head=native_head,
        clock=session.clock,
        responses_without_usage=len(session.unmetered_responses),
    )
    error = estimate_error(session)
    summary.estimate_basis = error.basis
    summary.estimate_error_requests = error.requests
    summary.estimate_error_median = error.median
    summary.estimate_error_worst = error.worst
    summary.redacted_placeholders = dict(session.unmeasured).get(REDACTED_KIND, 0)
    snapshots = {s.anchor_id: s for s in request_snapshots}
    # A request's largest addition is the first of views.largest_additions at its
    # snapshot: equal deltas are broken by item id, as in the trace and the report.
    largest_at = largest_addition_per_snapshot(largest_additions(session))
    for index, response in enumerate(session.responses, start=1):
        snapshot = snapshots.get(response.id)
        addition = largest_at.get(id(snapshot)) if snapshot is not None else None
        biggest = addition.change if addition else None
        summary.per_call.append(
            CallRow(
                index=index,
                response_id=response.id,
                prompt_tokens=response.usage.prompt_tokens,
                new_tokens=max(0, response.usage.prompt_tokens - response.usage.cache_read_tokens),
                output_tokens=response.usage.output_tokens,
                largest_addition_tokens=biggest.delta_tokens if biggest else None,
                largest_addition_tool=addition.tool.name if addition and addition.tool else None,
                largest_addition_label=biggest.label or None if biggest else None,
            )
        )
    summary.compaction_events = [
        {
            "kind": c.kind,
            "trigger": c.trigger,
            "pre_tokens": c.pre_tokens,
            "post_tokens": None if after is None else after.tokens,
            "post_tokens_source": None if after is None else after.source,
            "after_call": sum(1 for r in session.responses if r.end_ns <= c.start_ns),
        }
        for c, after in zip(session.compactions, compactions_after(session), strict=True)
    ]
    return summary


def summarise_all(
    sessions: Sequence[Session], *, window: int | None = None, cost: bool = False
) -> list[SessionSummary]:
    """Rows in input order, each subagent right after its parent (or in input order, a
    row of its own, when the parent is not among the inputs)."""
    by_parent: dict[str, list[Session]] = {}
    ids = {s.session_id for s in sessions}
    for session in sessions:
        parent = session.parent_session
        if parent in ids:  # (None is in no set of ids)
            by_parent.setdefault(parent, []).append(session)
    rows: list[SessionSummary] = []

    def visit(session: Session) -> None:
        children = by_parent.get(session.session_id, [])
        rows.append(summarise(session, window=window, children=children))
        for child in children:
            visit(child)

    for session in sessions:
        if session.parent_session not in ids:
            visit(session)
    if cost:
        from agent_profiler.cost import PriceTable, session_receipt

        table = PriceTable()
        receipts = {id(s): session_receipt(s, table).to_json(table) for s in sessions}
        by_id = {s.session_id: id(s) for s in sessions}
        for row in rows:
            row.cost = receipts[by_id[row.session]]
    return rows


# --------------------------------------------------------------------------- rendering

_TABLE_BREAKING = re.compile(r"[|\r\n\t\x00-\x1f\x7f]")


def escape_cell(text: str) -> str:
    """A name that would break the table (`|`, newlines, control characters) is escaped."""
    return _TABLE_BREAKING.sub(
        lambda m: "\\|" if m.group() == "|" else f"\\x{ord(m.group()):02x}", text
    )


def _number(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def composition_bar(categories: dict[str, int], width: int = BAR_WIDTH) -> str:
    """A fixed-width bar of letters, one per category, in proportion to its share."""
    total = sum(categories.values())
    if not total:
        return "(none)"
    ranked = sorted(categories.items(), key=lambda kv: (-kv[1], kv[0]))
    # Largest remainders (whole cells, then those left to the largest fractions), each
    # category's cells together in rank order: no leftover cell at the bar's end.
    exact = [width * tokens / total for _, tokens in ranked]
    cells = [int(share) for share in exact]
    by_remainder = sorted(range(len(ranked)), key=lambda i: (cells[i] - exact[i], i))
    for index in by_remainder[: width - sum(cells)]:
        cells[index] += 1
    return "".join(BAR_LETTERS[Category(k)] * n for (k, _), n in zip(ranked, cells, strict=True))


def _top_categories(categories: dict[str, int], head: bool = False) -> str:
    total = sum(categories.values())
    if not total:
        return "-"
    ranked = sorted(categories.items(), key=lambda kv: (-kv[1], kv[0]))[:2]
    return ", ".join(
        f"{category_label(Category(k), head)} {100 * v / total:.0f}%" for k, v in ranked
    )


COLUMNS = (
    "session",
    "harness",
    "model",
    "calls",
    "first",
    "peak",
    "final",
    "growth",
    "fill",
    "compact",
    "tools",
    "failed",
    "repeat",
    "result chars",
    "est. error",
    "end composition",
    "top categories",
)
# Left-aligned; every other column is a number, right-aligned (one list, not two to keep
# in step when a column is added).
_TEXT = frozenset({"session", "harness", "model", "end composition", "top categories"})


def _error_cell(row: SessionSummary) -> str:
    if row.estimate_error_median is None or row.estimate_error_worst is None:
        return "-"
    return f"{100 * row.estimate_error_median:.1f}% / {100 * row.estimate_error_worst:.1f}%"


# A fill measured against a window the journal does not state is marked in the table.
_NOT_STATED = {
    "assumed": ("*", "an assumed window (a default; the journal does not state it)"),
    "model table": ("+", "the harness's own window for the model (the journal does not state it)"),
}


def _fill_cell(row: SessionSummary) -> str:
    if row.peak_fill is None:
        return "-"
    return f"{100 * row.peak_fill:.0f}%" + _NOT_STATED.get(row.window_source or "", ("",))[0]


def _fill_notes(rows: Sequence[SessionSummary]) -> list[str]:
    """One line per mark used: the windows it stands for (harness and size)."""
    notes = []
    filled = [r for r in rows if r.peak_fill is not None]  # the rows that show a mark
    for origin, (mark, what) in _NOT_STATED.items():
        used = {(r.harness, r.window_tokens or 0) for r in filled if r.window_source == origin}
        if listed := ", ".join(f"{harness} {size:,}" for harness, size in sorted(used)):
            notes.append(f"fill {mark}: against {what}: {listed} tokens; --window sets it")
    if over := sum(1 for r in filled if r.peak_fill is not None and r.peak_fill > 1):
        notes.append(
            f"fill over 100% ({counted(over, 'session')}): a request larger than the window "
            "it is measured against (check --window, or the model's window)"
        )
    return notes


def render_table(rows: Sequence[SessionSummary]) -> str:
    """A plain-text table with right-aligned numbers (no colour: safe in pipes)."""
    body: list[list[str]] = []
    shown = {row.session for row in rows}
    for row in rows:
        name = escape_cell(row.session)
        if row.parent in shown:  # right after its parent (or its siblings): drawn under it
            name = f"  └ {name}"
        elif row.parent is not None:  # its parent not read: drawn under the row before it
            name = f"{name} (subagent)"
        body.append(
            [
                name,
                row.harness,
                escape_cell(row.model or "-"),
                _number(row.calls),
                _number(row.first_prompt_tokens),
                _number(row.peak_prompt_tokens),
                _number(row.final_prompt_tokens),
                _number(row.growth_tokens),
                _fill_cell(row),
                _number(row.compactions),
                _number(row.tool_calls),
                _number(row.failed_tool_calls),
                _number(row.repeated_tool_calls),
                _number(row.tool_result_chars),
                _error_cell(row),
                composition_bar(row.end_categories) if row.end_categories else "(not recorded)",
                _top_categories(row.end_categories, row.inferred_head),
            ]
        )
    widths = [max(len(c), *(len(r[i]) for r in body)) for i, c in enumerate(COLUMNS)]

    def line(cells: Sequence[str]) -> str:
        return (
            "| "
            + " | ".join(
                cell.ljust(widths[i]) if COLUMNS[i] in _TEXT else cell.rjust(widths[i])
                for i, cell in enumerate(cells)
            )
            + " |"
        )

    out = [line(COLUMNS), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in body]
    legend = " ".join(f"{letter}={c.label}" for c, letter in BAR_LETTERS.items())
    out.append(f"end composition: {legend} (estimated shares of the last request's context)")
    out += _fill_notes(rows)
    bases = sorted({row.estimate_basis for row in rows if row.estimate_basis})
    out.append(
        "est. error: median / worst |estimated − reported| ÷ reported over requests after "
        f"the first (estimate basis: {', '.join(bases) or '-'})"
    )
    heads = [row for row in rows if row.inferred_head]
    if heads:
        hint = (
            f"; for Claude Code, {HEAD_HINT}"
            if any(r.harness == "claude-code" for r in heads)
            else ""
        )
        out.append(
            f"?: {HEAD_LABEL.lower()} (not in the journal: reported − estimated at the first "
            f"request) where a session's Unattributed is only that{hint}"
        )
    for row in rows:
        if row.redacted_placeholders:
            out.append(
                f"{escape_cell(row.session)}: journal redacted before publication "
                f"({counted(row.redacted_placeholders, '`REDACTED` placeholder')}): it holds "
                "less text than the model was sent, so the estimate error is not the "
                "estimator's alone"
            )
        if row.native_head:
            split = ", ".join(f"{Category(k).label} {v:,}" for k, v in row.native_head.items())
            out.append(f"{escape_cell(row.session)}: head measured by /context: {split} tokens")
    for row in rows:
        if len(row.models) > 1:
            served = ", ".join(
                f"{escape_cell(m)} {n:,} request{'s' if n != 1 else ''}"
                + (f" (window {w:,})" if w else "")
                for m, n, w in row.models
            )
            out.append(f"{escape_cell(row.session)}: models in order: {served}")
        if row.responses_without_usage:
            out.append(
                f"{escape_cell(row.session)}: "
                f"{counted(row.responses_without_usage, 'response')} without "
                "usage (every usage field 0), not counted in calls"
            )
        if row.clock == "synthetic":
            out.append(
                f"{escape_cell(row.session)}: synthetic clock (the journal has no times; laid "
                "out from its durations, or 1 ms a record, ending at the file's modification time)"
            )
    return "\n".join(out)


def render_calls(rows: Sequence[SessionSummary]) -> str:
    out: list[str] = []
    for row in rows:
        out.append(f"\n{escape_cell(row.session)}: per call")
        out.append("| call | prompt | new | output | largest addition |")
        out.append("|---:|---:|---:|---:|---|")
        for call in row.per_call:
            addition = (
                f"+{call.largest_addition_tokens:,} "
                + escape_cell(call.largest_addition_tool or call.largest_addition_label or "")
                if call.largest_addition_tokens
                else "-"
            )
            out.append(
                f"| {call.index} | {call.prompt_tokens:,} | {call.new_tokens:,} | "
                f"{call.output_tokens:,} | {addition} |"
            )
        for event in row.compaction_events:
            out.append(
                f"compaction after call {event['after_call']}: {event['kind']}, trigger "
                f"{event['trigger'] or '-'}, {_number(event['pre_tokens'])} → "
                f"{_number(event['post_tokens'])} tokens"
                + (
                    " (after: first request after it)"
                    if event.get("post_tokens_source") == "next-request"
                    else ""
                )
            )
    return "\n".join(out)
