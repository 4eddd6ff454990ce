"""The comparison summary: one row of numbers per session, computed from the same
model the trace is built from, as JSON (`summary_text.py` draws the terminal table).

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
import statistics
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import field
from typing import Any

from agent_profiler.adapters import adapter_for
from agent_profiler.adapters.claude_context import NATIVE_HEAD
from agent_profiler.attribution import REDACTED_KIND
from agent_profiler.console import counted
from agent_profiler.model import AnchorKind, ContextChange, Session, frozen
from agent_profiler.privacy import private_path
from agent_profiler.records import record
from agent_profiler.views import (
    INFERRED_HEAD_ID,
    Addition,
    api_errors,
    compactions_after,
    head_label,
    head_measured_after,
    inherited_history,
    main_model,
    mid_conversation_why,
    model_requests,
    session_fill,
    session_span,
    starts_mid_conversation,
    tools_by_call_id,
    unattributed_is_head,
    unread_children,
)

# Calls that can change the workspace, per harness: after one, earlier identical
# calls no longer count as repeats (a re-read after an edit is not waste).
LARGEST_RESULTS = 5


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
    # Failed API calls the harness retried (Claude Code's `api_error`: 529 Overloaded …).
    api_errors: int = 0
    # Subagents this session launched whose journals were not read (links.unread_children):
    # their requests are in no number here, `subagent_calls` included.
    subagents_not_read: int = 0
    # The journal starts mid-conversation: its inferred head holds earlier turns too.
    starts_mid_conversation: bool = False
    mid_conversation_why: str = ""  # as the adapter says it (not in --json: the bool is)
    # A fork's copied history (Pi): (entries, the source's requests among them), or None.
    inherited_history: tuple[int, int] | None = None
    # A subagent whose parent cannot be named (no `parent`): marked so in the table.
    orphan_subagent: bool = False
    cost: dict[str, Any] | None = None  # the session's receipt (summary --cost; cost.py)
    # Every model in the order it first served a request: (model, requests, its window).
    models: list[tuple[str, int, int | None]] = field(default_factory=list)
    # The Unattributed category is the inferred head (system prompt and tool schemas, not in
    # the journal: views.unattributed_is_head), named so in the table.
    inferred_head: bool = False
    # The compaction after which that head was last measured again (views.head_measured_after):
    # it also holds what the harness restored then, and is named so. None: the first request's.
    inferred_head_after_compaction: int | None = None
    # Where window_tokens (and so peak_fill) came from: "journal", "given" (--window),
    # "model table" (the harness's own per-model table) or "assumed" (a default).
    window_source: str | None = None

    @property
    def head_name(self) -> str:
        """What the table and the report call Unattributed ("" for its own name)."""
        return head_label(self.inferred_head_after_compaction) if self.inferred_head else ""

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
            "subagents_not_read": self.subagents_not_read,
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
            "api_errors": self.api_errors,
            "starts_mid_conversation": self.starts_mid_conversation,
            "inferred_head": self.inferred_head,
            "inferred_head_after_compaction": self.inferred_head_after_compaction,
        }
        if self.redacted_placeholders:
            data["redacted_placeholders"] = self.redacted_placeholders
        if self.inherited_history is not None:
            data["inherited_entries"], data["inherited_requests"] = self.inherited_history
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


def redacted_words(placeholders: int) -> str:
    """What a journal redacted before publication means for its estimate, in the words the
    summary and the report share (`redacted_placeholders`)."""
    return (
        f"journal redacted before publication ({counted(placeholders, '`REDACTED` placeholder')}"
        "): it holds less text than the model was sent, so the estimate error is not the "
        "estimator's alone"
    )


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
    head = unattributed_is_head(session)
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
        inferred_head=head,
        inferred_head_after_compaction=head_measured_after(session) if head else None,
        native_head=native_head,
        clock=session.clock,
        responses_without_usage=len(session.unmetered_responses),
        api_errors=api_errors(session),
        subagents_not_read=unread_children(session),
        starts_mid_conversation=starts_mid_conversation(session),
        mid_conversation_why=mid_conversation_why(session),
        inherited_history=inherited_history(session),
        orphan_subagent=session.is_subagent and session.parent_session is None,
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
    largest_at = largest_addition_per_snapshot(session)
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
    # Responses ended by each compaction's start: counted in one sorted list of ends, not
    # by a pass over every response per compaction (O(compactions × responses)).
    ends = sorted(r.end_ns for r in session.responses) if session.compactions else []
    summary.compaction_events = [
        {
            "kind": c.kind,
            "trigger": c.trigger,
            "pre_tokens": c.pre_tokens,
            "post_tokens": None if after is None else after.tokens,
            "post_tokens_source": None if after is None else after.source,
            "after_call": bisect_right(ends, c.start_ns),
        }
        for c, after in zip(session.compactions, compactions_after(session), strict=True)
    ]
    return summary


def largest_addition_per_snapshot(session: Session) -> dict[int, Addition]:
    """id(snapshot) → its largest addition: the first of views.largest_additions at that
    snapshot, found without making and sorting every addition of the session (`summary`
    spent 3% of its time there). A snapshot's changes share its time, so the first is
    the one of the largest delta, ties to the smallest item id, the first met of equals."""
    tools = tools_by_call_id(session)
    first: dict[int, Addition] = {}
    for snapshot in session.snapshots:
        if snapshot.baseline or id(snapshot) in first:
            continue
        best: ContextChange | None = None
        for change in snapshot.changes:
            delta = change.delta_tokens
            if (
                delta > 0
                and change.id != INFERRED_HEAD_ID
                and (
                    best is None
                    or delta > best.delta_tokens
                    or (delta == best.delta_tokens and change.id < best.id)
                )
            ):
                best = change
        if best is not None:
            first[id(snapshot)] = Addition(best, snapshot, tools.get(best.source_id))
    return first


def summarise_all(
    sessions: Sequence[Session], *, window: int | None = None, cost: bool = False
) -> list[SessionSummary]:
    """Rows in input order, each subagent right after its parent (or in input order, a
    row of its own, when the parent is not among the inputs). A parent's subagents come in
    start order, as the trace lays them out (layout.ordering: by the start of their span,
    then id), not in the order their files were read."""
    by_parent: dict[str, list[Session]] = {}
    ids = {s.session_id for s in sessions}
    for session in sessions:
        parent = session.parent_session
        if parent in ids:  # (None is in no set of ids)
            by_parent.setdefault(parent, []).append(session)
    rows: list[SessionSummary] = []

    def start(session: Session) -> tuple[int, str]:
        return session_span(session)[0], session.session_id

    for top in sessions:
        if top.parent_session in ids:
            continue
        # Depth first with a stack of its own (a chain of thousands of subagents is no
        # recursion): children pushed last first, so each comes out followed by its own.
        stack = [top]
        while stack:
            session = stack.pop()
            children = sorted(by_parent.get(session.session_id, []), key=start)
            rows.append(summarise(session, window=window, children=children))
            stack += reversed(children)
    if cost:
        from agent_profiler.cost import PriceTable, session_receipt

        table = PriceTable()
        receipts = {id(s): session_receipt(s, table).to_json(table) for s in sessions}
        by_id = {s.session_id: id(s) for s in sessions}
        for row in rows:
            row.cost = receipts[by_id[row.session]]
    return rows
