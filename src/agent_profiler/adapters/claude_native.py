"""A Claude Code `/context` run entering a session: Claude Code's own breakdown of the
prompt (claude_context.py reads it from the transcript) becomes the head of the session's
context log and a snapshot of its own, as a function of the session being read
(`claude_session.SessionBuilder`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_profiler.adapters.claude_context import NATIVE_HEAD, NativeSnapshot
from agent_profiler.adapters.common import private_path, timestamp_ns
from agent_profiler.attribution import Observation
from agent_profiler.model import AnchorKind, Basis, Category, Coverage, Stage

if TYPE_CHECKING:
    from agent_profiler.adapters.claude_session import SessionBuilder

NATIVE_ITEM_STAGE = (
    "head (system, tools, rules, skills) from the last /context run; conversation from "
    "transcript items"
)


def on_native_context(builder: SessionBuilder, run: NativeSnapshot, fallback_ns: int) -> None:
    """A `/context` run: Claude Code's own breakdown. It is a snapshot of its own
    (basis native-summary, coverage complete, a new baseline), and from here on its
    head categories replace the inferred head in the transcript-observed snapshots."""
    builder.flush_post_compaction()
    ts = timestamp_ns(run.timestamp) or fallback_ns
    builder.touch(ts)
    totals = dict(run.categories)
    head: list[tuple[str, Category, int, str]] = []
    for category in NATIVE_HEAD:
        rows = [item for item in run.items if item.category is category]
        for item in rows:
            item_id, label = _private_item(builder.project, item.id, item.label)
            head.append((item_id, category, item.tokens, label))
        rest = totals.get(category, 0) - sum(item.tokens for item in rows)
        if rest > 0:
            head.append(
                (
                    f"native:{category.value}",
                    category,
                    rest,
                    f"{category.label} (from /context)",
                )
            )
    builder.log.native_head(head)
    builder.log.observe(
        Observation(
            time_ns=ts,
            anchor=AnchorKind.NATIVE,
            anchor_id=f"context-command@{run.line}",
            stage=Stage.TRANSCRIPT_OBSERVED,
            reported_tokens=run.used_tokens,
            window_tokens=run.window_tokens,
            effective_window_tokens=run.effective_window_tokens,
            native_categories=run.categories,
            basis=Basis.NATIVE_SUMMARY,
            coverage=Coverage.COMPLETE,
            item_stage="native-summary",
            force_baseline=True,
            model=run.model,
        )
    )
    builder.native_runs += 1
    if builder.window is None and run.window_tokens:
        builder.window, builder.window_source = run.window_tokens, "journal (/context)"
    if run.model and not builder.models:
        # A session holding only /context output has no assistant record to name its
        # model; the /context header does.
        builder.models.append(run.model)
    builder.item_stage = NATIVE_ITEM_STAGE


def _private_item(project: str | None, item_id: str, label: str) -> tuple[str, str]:
    """`/context` names memory files by absolute path (`/home/<user>/.claude/CLAUDE.md`):
    shorten it in the id and the label, so no user name or cwd reaches the trace."""
    kind, _, name = item_id.partition(":")
    short = private_path(name, project)
    if short == name:
        return item_id, label
    return f"{kind}:{short}", label.replace(name, short, 1)
