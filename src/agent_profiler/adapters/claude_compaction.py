"""A Claude Code compaction as it is read: the `compact_boundary` record (the whole
context cleared; its summary, the next user record, observed after it) and the
`microcompact_boundary` record (old tool results removed by id; `results_cleared`, which
2.1.3xx's `tool_results_cut` shares), as functions of the
session being read (`claude_session.SessionBuilder`), and the compaction draft that keeps
its observation.

Separate from `claude_session.py` because a compaction changes the context log as a
whole rather than adding an item, and it is met in both transcripts (`claude_code.py`)
and stream-json runs (`claude_stream.py`), which call these directly."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_profiler.adapters.common import MS, token_count
from agent_profiler.adapters.drafts import CompactionDraft
from agent_profiler.attribution import Logged, Observation
from agent_profiler.records import record

if TYPE_CHECKING:
    from agent_profiler.adapters.claude_session import SessionBuilder


@record
class ObservedCompaction(CompactionDraft):
    observation: Logged | None = None


def on_compact_boundary(builder: SessionBuilder, record: dict[str, Any], ts: int) -> None:
    builder.flush_post_compaction()
    meta = record.get("compactMetadata") or record.get("compact_metadata") or {}
    meta = meta if isinstance(meta, dict) else {}
    pre = meta.get("preTokens", meta.get("pre_tokens"))
    post = meta.get("postTokens", meta.get("post_tokens"))
    duration = meta.get("durationMs", meta.get("duration_ms"))
    # The boundary record is written when the compaction is done; its start is known
    # only from durationMs (newer builds) or the summarisation request's own file.
    # Without either the slice is zero-length rather than a guessed span.
    start = ts - token_count(duration) * MS
    timing = "compactMetadata.durationMs" if token_count(duration) else "boundary record only"
    compaction_id = str(record.get("uuid") or f"compaction@{ts}")
    removed = builder.log.clear()
    observation = Observation.after_compaction(
        ts,
        compaction_id,
        reported_tokens=token_count(post) or None,
    )
    trigger = meta.get("trigger")
    draft = ObservedCompaction(
        compaction_id,
        start,
        ts,
        trigger=trigger if isinstance(trigger, str) else None,
        pre_tokens=token_count(pre) or None,
        post_tokens=token_count(post) or None,
        removed_items=removed,
        timing=timing,
    )
    builder.compactions.append(draft)
    # The summary record usually follows: observe after it (see on_user).
    builder.pending_post = (draft, observation)
    builder.trigger_ns = ts


def on_microcompact(builder: SessionBuilder, record: dict[str, Any], ts: int) -> None:
    builder.flush_post_compaction()
    meta = record.get("microcompactMetadata") or record.get("microcompact_metadata") or {}
    meta = meta if isinstance(meta, dict) else {}
    ids = meta.get("compactedToolIds") or meta.get("compacted_tool_ids") or []
    ids = ids if isinstance(ids, list) else []
    removed = 0
    for call_id in ids:
        if isinstance(call_id, str) and builder.log.remove(f"result:{call_id}"):
            removed += 1
            for item_id in builder.result_media.pop(call_id, ()):
                builder.log.remove(item_id)
    pre = token_count(meta.get("preTokens", meta.get("pre_tokens"))) or None
    saved = token_count(meta.get("tokensSaved", meta.get("tokens_saved")))
    post = pre - saved if pre is not None and saved and saved <= pre else None
    compaction_id = str(record.get("uuid") or f"microcompaction@{ts}")
    trigger = meta.get("trigger")
    trigger = trigger if isinstance(trigger, str) else None
    results_cleared(builder, compaction_id, ts, removed, trigger, pre, post)


def results_cleared(
    builder: SessionBuilder,
    compaction_id: str,
    ts: int,
    removed: int,
    trigger: str | None,
    pre: int | None = None,
    post: int | None = None,
) -> None:
    """Old tool results cleared (a `microcompact_boundary`; 2.1.3xx's `tool_results_cut`,
    claude_attachments.py): a microcompaction at `ts`, observed after them, and the next
    request's start."""
    observation = builder.log.observe(
        Observation.after_compaction(
            ts,
            compaction_id,
            reported_tokens=post,
        )
    )
    builder.compactions.append(
        ObservedCompaction(
            compaction_id,
            ts,
            ts,
            "microcompaction",
            trigger,
            pre,
            post,
            removed,
            timing="boundary record only",
            observation=observation,
        )
    )
    # Claude Code microcompacts right before it sends a request (old results cleared from
    # what it sends), so the boundary is written after the record that triggered that
    # request: the request starts at the boundary, as after a compaction (the boundary's
    # snapshot is before the request's in the log; before this its time was after it, and
    # the context counters went back to the boundary's values after the request began).
    # Never earlier than that record (a boundary stamped before it).
    if builder.trigger_ns is None or ts > builder.trigger_ns:
        builder.trigger_ns = ts
