"""One session's rows for the dataset's tables, made from the model (no journal text).

Privacy as in a default trace: counts, ids, names and the labels a trace shows (a rule
file as `CLAUDE.md` or `~/…`, a tool's name); never a body, a preview, an argument or a
source path. The session's project is its folder name (model.Session keeps nothing else).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agent_profiler.cost import RequestTokens, compaction_tokens, end_shares, request_tokens
from agent_profiler.model import AnchorKind, Category, ChangeKind, Session, SourceKind
from agent_profiler.views import (
    compactions_after,
    main_model,
    session_fill,
    session_span,
    snapshots_in_time_order,
    tools_by_call_id,
)

Row = dict[str, Any]


def month_of(ns: int) -> str:
    """The `month=` partition of a session: its start's UTC year and month."""
    return datetime.fromtimestamp(max(ns, 0) / 1e9, UTC).strftime("%Y-%m")


def mcp_server(tool: str) -> str | None:
    """`mcp__<server>__<tool>` (Claude Code, Codex's `mcp__…` too) → the server's name."""
    if tool.startswith("mcp__"):
        server = tool[5:].split("__", 1)[0]
        return server or None
    return None


def session_rows(session: Session, group_id: str) -> dict[str, list[Row]]:
    """Every table's rows of one session."""
    start, end = session_span(session)
    key: Row = {
        "group_id": group_id,
        "session_id": session.session_id,
        "harness": session.harness.value,
        "month": month_of(start),
    }
    tokens = request_tokens(session)
    ordered = sorted(session.responses, key=lambda r: (r.start_ns, r.end_ns, r.id))
    turn_of = {response.id: index for index, response in enumerate(ordered, start=1)}
    snapshots = snapshots_in_time_order(session)
    by_response = {s.anchor_id: s for s in snapshots if s.anchor is AnchorKind.RESPONSE}
    requests: list[Row] = []
    categories: list[Row] = []
    last_turn = len(ordered)
    for index, (response, split) in enumerate(zip(ordered, tokens, strict=True), start=1):
        snapshot = by_response.get(response.id)
        requests.append(
            key
            | {
                "turn": index,
                "response_id": response.id,
                "model": response.model or None,
                "start_ns": response.start_ns,
                "duration_ns": max(0, response.end_ns - response.start_ns),
                "prompt_tokens": response.usage.prompt_tokens,
                "input_tokens": split.input,
                "cache_read_tokens": split.cache_read,
                "cache_write_5m_tokens": split.cache_write_5m,
                "cache_write_1h_tokens": split.cache_write_1h,
                "output_tokens": response.usage.output_tokens,
                "reasoning_tokens": response.usage.reasoning_tokens,
                "output_tokens_reliable": response.output_tokens_reliable,
                "price_context": response.price_context or None,
                "web_searches": response.web_searches,
                "recorded_usd": response.recorded_usd,
                "hit_written_tokens": split.hit_written,
                "hit_reread_tokens": split.hit_reread,
                "estimated_tokens": snapshot.estimated_tokens if snapshot else None,
                "omitted_changes": snapshot.omitted_changes if snapshot else 0,
                "is_error": response.is_error,
                "stop_reason": response.stop_reason,
            }
        )
        if snapshot is not None:
            for category, count in snapshot.categories:
                categories.append(
                    key
                    | {
                        "turn": index,
                        "category": category.value,
                        "tokens": count,
                        "is_last": index == last_turn,
                    }
                )
    tools = tools_by_call_id(session)
    items, result_tokens = _items(session, key, snapshots, turn_of, tools)
    calls = [c for c in session.tool_calls if c.by_model]
    tool_rows = [
        key
        | {
            "call_id": call.call_id,
            "tool": call.name,
            "mcp_server": mcp_server(call.name),
            "turn": turn_of.get(call.response_id or ""),
            "start_ns": call.start_ns,
            "duration_ns": max(0, call.end_ns - call.start_ns),
            "is_error": call.is_error,
            "incomplete": call.incomplete,
            "arg_bytes": call.arg_bytes,
            "result_chars": call.result_chars,
            "result_tokens": result_tokens.get(call.call_id),
            "child_session": call.child_session,
        }
        for call in sorted(calls, key=lambda c: (c.start_ns, c.call_id))
    ]
    # The size after each, as summary says it: the harness's figure, else the next request's.
    after = dict(zip((c.id for c in session.compactions), compactions_after(session), strict=True))
    called = compaction_tokens(session)  # the summarisation requests recorded, billed
    compactions = [
        key
        | {
            "compaction_id": c.id,
            "kind": c.kind,
            "trigger": c.trigger,
            "start_ns": c.start_ns,
            "pre_tokens": c.pre_tokens,
            "post_tokens": post.tokens if (post := after[c.id]) else None,
            "post_tokens_source": post.source if post else None,
            "removed_items": c.removed_items,
            "after_turn": sum(1 for r in ordered if r.end_ns <= c.start_ns),
            **_usage_columns(called.get(c.id)),
        }
        for c in sorted(session.compactions, key=lambda c: (c.start_ns, c.id))
    ]
    prompts = [t.prompt for t in tokens]
    shares = end_shares(session)
    _, window_source, fill = session_fill(session)
    sessions = [
        key
        | {
            "parent_session": session.parent_session,
            "project": session.project,
            "model": main_model(session),  # the model that served most, as summary's
            "provider": session.provider,
            "harness_version": session.harness_version,
            "start_ns": start,
            "end_ns": end,
            "requests": len(ordered),
            "responses_without_usage": len(session.unmetered_responses),
            "prompts": sum(1 for p in session.prompts if p.source == "user"),
            "tool_calls": len(calls),
            "compactions": len(session.compactions),
            "first_prompt_tokens": prompts[0] if prompts else None,
            "peak_prompt_tokens": max(prompts) if prompts else None,
            "final_prompt_tokens": prompts[-1] if prompts else None,
            "window_tokens": session.window_tokens if session.window_from_journal else None,
            # The largest share of the window any request filled, as `summary` says it, and
            # the window's origin: journal, model table or assumed (views.session_fill).
            "peak_fill": fill,
            "window_source": window_source if fill is not None else None,
            "input_tokens": sum(t.input for t in tokens),
            "cache_read_tokens": sum(t.cache_read for t in tokens),
            "cache_write_5m_tokens": sum(t.cache_write_5m for t in tokens),
            "cache_write_1h_tokens": sum(t.cache_write_1h for t in tokens),
            "output_tokens": sum(t.output for t in tokens),
            "end_estimated_tokens": (
                by_response[ordered[-1].id].estimated_tokens
                if ordered and ordered[-1].id in by_response
                else None
            ),
            "end_results_share": round(shares.get("results", 0.0), 6) if shares else None,
            "estimate_basis": next(iter(by_response.values())).basis.value if by_response else None,
            "clock": session.clock,
            "incomplete": session.incomplete,
            "recorded_total_usd": session.recorded_total_usd,
        }
    ]
    return {
        "sessions": sessions,
        "requests": requests,
        "request_categories": categories,
        "context_items": items,
        "tool_calls": tool_rows,
        "compactions": compactions,
    }


_USAGE_COLUMNS = (
    "model",
    "prompt_tokens",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_5m_tokens",
    "cache_write_1h_tokens",
    "output_tokens",
    "recorded_usd",
)


def _usage_columns(split: RequestTokens | None) -> Row:
    """A summarisation request's usage, or NULLs where none was recorded."""
    if split is None:
        return dict.fromkeys(_USAGE_COLUMNS)
    billed = (split.input, split.cache_read, split.cache_write_5m, split.cache_write_1h)
    values = (split.model or None, split.prompt, *billed, split.output, split.recorded_usd)
    return dict(zip(_USAGE_COLUMNS, values, strict=True))


def _items(
    session: Session,
    key: Row,
    snapshots: list[Any],
    turn_of: dict[str, int],
    tools: dict[str, Any],
) -> tuple[list[Row], dict[str, int]]:
    """Context items as the snapshots name them, each with the requests it stayed
    resident for (first_turn … last_turn). A snapshot names its 64 largest changes
    (attribution.MAX_CHANGES); when it left some out after an item came, that item may
    have gone unseen: its `end_known` is false."""
    turn = 0
    open_items: dict[str, Row] = {}
    done: list[Row] = []
    result_tokens: dict[str, int] = {}
    omitted_since: set[str] = set()
    for snapshot in snapshots:
        if snapshot.anchor is AnchorKind.RESPONSE:
            turn = turn_of.get(snapshot.anchor_id, turn)
        at = turn + (0 if snapshot.anchor is AnchorKind.RESPONSE else 1)
        for change in snapshot.changes:
            row = open_items.get(change.id)
            if change.change is ChangeKind.REMOVED:
                if row is not None:
                    row["last_turn"] = max(row["first_turn"], at - 1)
                    row["removed"] = True
                    done.append(open_items.pop(change.id))
                continue
            if row is None:
                tool = tools.get(change.source_id)
                row = key | {
                    "item_id": change.id,
                    "category": change.category.value,
                    "label": change.label or None,
                    "source_kind": change.source_kind.value or None,
                    "tool": tool.name if tool is not None else None,
                    "call_id": change.source_id or None,
                    "tokens": change.tokens,
                    "chars": change.chars,
                    "first_turn": max(at, 1),
                    "last_turn": None,
                    "removed": False,
                    "end_known": True,
                    "baseline": change.change is ChangeKind.BASELINE,
                }
                open_items[change.id] = row
                # What the tool returned: not the call's arguments (the model wrote those,
                # as Assistant history), which the tool's row weighs as a result otherwise.
                if (
                    change.source_kind is SourceKind.TOOL
                    and change.source_id
                    and change.category is not Category.ASSISTANT
                ):
                    result_tokens[change.source_id] = (
                        result_tokens.get(change.source_id, 0) + change.tokens
                    )
            else:
                row["tokens"] = max(row["tokens"], change.tokens)
                row["category"] = change.category.value
        if snapshot.omitted_changes:
            omitted_since.update(open_items)
    for item_id, row in open_items.items():
        row["last_turn"] = max(row["first_turn"], turn)
        row["end_known"] = item_id not in omitted_since
        done.append(row)
    for row in done:  # last_turn is never before first_turn (both max()es above)
        row["requests_resident"] = row["last_turn"] - row["first_turn"] + 1
    return done, result_tokens
