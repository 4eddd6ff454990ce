"""The comparison summary as a terminal table (`render_table`) and per-call lines
(`render_calls`): the rows `summary.py` computes, drawn with right-aligned numbers and no
colour, safe in pipes."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

from agent_profiler.console import counted
from agent_profiler.model import Category
from agent_profiler.summary import SessionSummary, redacted_words
from agent_profiler.views import (
    HEAD_AFTER_COMPACTION_LABEL,
    HEAD_HINT,
    HEAD_LABEL,
    category_label,
    head_source,
)

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


def _top_categories(categories: dict[str, int], head: str = "") -> str:
    total = sum(categories.values())
    if not total:
        return "-"
    ranked = sorted(categories.items(), key=lambda kv: (-kv[1], kv[0]))[:2]
    return ", ".join(
        f"{category_label(Category(k), head)} {100 * v / total:.0f}%" for k, v in ranked
    )


def _head_legend(heads: Sequence[SessionSummary]) -> str:
    """How the legend names the inferred head: as the first request measured it, and (the
    rows whose head was measured again after a compaction) with what the harness restored."""
    again = {row.inferred_head_after_compaction is not None for row in heads}
    names = []
    if False in again:
        names.append(
            f"{HEAD_LABEL.lower()} ({head_source()}) where a session's Unattributed is only that"
        )
    if True in again:
        names.append(
            f"{HEAD_AFTER_COMPACTION_LABEL.lower()} ({head_source('a compaction')}) where "
            "a session's head was measured again"
        )
    return "; ".join(names)


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


def _cost_cell(row: SessionSummary) -> str:
    """The billed total at list price; `*` when the receipt is incomplete (a model or
    searches without a price: said under it)."""
    if row.cost is None:
        return "-"
    return f"${row.cost['billed']['total_usd']:,.2f}" + ("" if row.cost["complete"] else "*")


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
        used: dict[tuple[str, int], set[str]] = {}
        for r in filled:
            if r.window_source == origin:
                used.setdefault((r.harness, r.window_tokens or 0), set()).add(r.model or "-")
        sizes = Counter(harness for harness, _ in used)  # a harness with several: by model
        listed = ", ".join(
            f"{harness} {size:,}"
            + (f" ({', '.join(sorted(used[harness, size]))})" if sizes[harness] > 1 else "")
            for harness, size in sorted(used)
        )
        if listed:
            notes.append(f"fill {mark}: against {what}: {listed} tokens; --window sets it")
    if over := sum(1 for r in filled if r.peak_fill is not None and r.peak_fill > 1):
        notes.append(
            f"fill over 100% ({counted(over, 'session')}): a request larger than the window "
            "it is measured against (check --window, or the model's window)"
        )
    return notes


def _depths(parents: Mapping[str, str | None], cap: int) -> dict[str, int]:
    """Each session's number of ancestors among the rows (its parent's, and so on up),
    at most `cap`: worked out once per session, remembered along each chain (a row's
    indent was a walk up its chain: sessions × depth). A chain that comes back to itself
    (a damaged journal's cycle) counts to `cap`, as the walk did."""
    depth: dict[str, int] = {}
    for start in parents:
        chain: list[str] = []
        on_chain: set[str] = set()
        node: str | None = start
        while node is not None and node in parents and node not in depth:
            if node in on_chain:  # a cycle: every session on this chain counts to the cap
                for held in chain:
                    depth[held] = cap
                break
            chain.append(node)
            on_chain.add(node)
            node = parents[node]
        else:
            below = -1 if node is None or node not in parents else depth[node]
            for held in reversed(chain):
                below = min(cap, below + 1)
                depth[held] = below
    return depth


def render_table(rows: Sequence[SessionSummary]) -> str:
    """A plain-text table with right-aligned numbers (no colour: safe in pipes); with
    --cost, a `cost` column: each session's bill at list price (its receipt below)."""
    priced = any(row.cost is not None for row in rows)
    columns = (*COLUMNS[:-2], "cost", *COLUMNS[-2:]) if priced else COLUMNS
    body: list[list[str]] = []
    parents = {row.session: row.parent for row in rows}
    depth_of = _depths(parents, len(rows))
    for row in rows:
        name = escape_cell(row.session)
        if row.parent in parents:  # right after its parent (or its siblings): drawn under it
            depth = min(len(rows), 1 + depth_of[row.parent])  # a subagent's subagent: deeper
            name = f"{'  ' * depth}└ {name}"
        elif row.parent is not None or row.orphan_subagent:  # its parent not read, or unknown
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
                *([_cost_cell(row)] if priced else []),
                composition_bar(row.end_categories) if row.end_categories else "(not recorded)",
                _top_categories(row.end_categories, row.head_name),
            ]
        )
    widths = [max(len(c), *(len(r[i]) for r in body)) for i, c in enumerate(columns)]

    def line(cells: Sequence[str]) -> str:
        return (
            "| "
            + " | ".join(
                cell.ljust(widths[i]) if columns[i] in _TEXT else cell.rjust(widths[i])
                for i, cell in enumerate(cells)
            )
            + " |"
        )

    out = [line(columns), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in body]
    legend = " ".join(f"{letter}={c.label}" for c, letter in BAR_LETTERS.items())
    out.append(f"end composition: {legend} (estimated shares of the last request's context)")
    out += _fill_notes(rows)
    bases = sorted({row.estimate_basis for row in rows if row.estimate_basis})
    out.append(
        "est. error: median / worst |estimated − reported| ÷ reported over requests after "
        f"the first (estimate basis: {', '.join(bases) or '-'})"
    )
    if priced:
        out.append(
            "cost: as billed, at list price (each session's receipt is below); *: its receipt "
            "is incomplete (a model or web searches the price table does not price)"
        )
    heads = [row for row in rows if row.inferred_head]
    if heads:
        hint = (
            f"; for Claude Code, {HEAD_HINT}"
            if any(r.harness == "claude-code" for r in heads)
            else ""
        )
        out.append(f"?: {_head_legend(heads)}{hint}")
    for row in rows:
        if row.redacted_placeholders:
            out.append(f"{escape_cell(row.session)}: {redacted_words(row.redacted_placeholders)}")
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
        if row.starts_mid_conversation:
            out.append(
                f"{escape_cell(row.session)}: the journal starts mid-conversation "
                f"({row.mid_conversation_why}): its Unattributed holds the earlier turns as "
                "well as the system prompt and tool schemas"
            )
        if row.inherited_history is not None:
            entries, requests = row.inherited_history
            out.append(
                f"{escape_cell(row.session)}: a fork, it starts with a copy of "
                f"{counted(entries, 'entry', 'entries')} ({counted(requests, 'request')}) of "
                "the session it was forked from: its starting context, not its calls (that "
                "session counts them)"
            )
        if row.subagents_not_read:
            out.append(
                f"{escape_cell(row.session)}: {counted(row.subagents_not_read, 'subagent')} it "
                "launched not read (in no number here): "
                + ("pass its file" if row.subagents_not_read == 1 else "pass their files")
                + " or folder"
            )
        if row.api_errors:
            out.append(
                f"{escape_cell(row.session)}: {counted(row.api_errors, 'API error')} the harness "
                "retried (each an instant on the trace's Events track)"
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
