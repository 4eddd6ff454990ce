"""Muse request lanes: what `model_input_trace_recorded` says one request carried.

Owns the lanes and context blocks of a request (FORMATS-muse §5.2–5.5) and the bytes
per category they add up to; the journal reader turns those into a native snapshot.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from agent_profiler.adapters.common import token_count
from agent_profiler.model import Category, Tokens, frozen

_REDACTED = re.compile(r"^<redacted: .*, (\d+) chars>$", re.DOTALL)

# Context blocks by id (or source), as the block kind says (FORMATS-muse §5.3). Harness
# guidance blocks are the harness's own instructions: system. Unknown kinds: unattributed.
BLOCKS: dict[str, tuple[Category, str]] = {
    "rules_file": (Category.RULES, "Rules file"),
    "memory_snapshot": (Category.RULES, "Memory snapshot"),
    "skills_catalog": (Category.SKILLS, "Skills listing"),
    "skills": (Category.SKILLS, "Skills listing"),
    "agent_definition_catalog": (Category.SKILLS, "Agent definitions catalog"),
    "workspace_identity": (Category.ENVIRONMENT, "Workspace identity"),
    "security_mode": (Category.ENVIRONMENT, "Security mode"),
    "sandbox_policy": (Category.ENVIRONMENT, "Sandbox policy"),
    "session_identity": (Category.ENVIRONMENT, "Session identity"),
    "context_usage": (Category.ENVIRONMENT, "Context usage"),
    "user_shell_command": (Category.ENVIRONMENT, "Shell command"),
    "workflow_choice": (Category.SYSTEM, "Workflow guidance"),
    "workflow_cookbook": (Category.SYSTEM, "Workflow cookbook"),
    "subagent_delegation": (Category.SYSTEM, "Subagent delegation guidance"),
    "meta_context_note": (Category.SYSTEM, "Muse core note"),
    "step_budget": (Category.OVERHEAD, "Step budget"),
    "file_mention": (Category.PROMPTS, "File mention"),
    "user_steer": (Category.PROMPTS, "User steer"),
    "subagent_result": (Category.RESULTS, "Subagent result"),
    "background_task_terminal": (Category.RESULTS, "Background task result"),
    "mcp_resource": (Category.RESULTS, "MCP resource"),
}


@frozen
class Lane:
    lane: str
    source: str
    destination: str
    bytes: int


@frozen
class Trace:
    model_step: int | None
    lanes: tuple[Lane, ...]
    total_bytes: int
    omitted_bytes: int


@frozen
class Block:
    block_id: str
    source: str
    text_bytes: int
    lifecycle: str

    @classmethod
    def diagnosed(cls, block_id: str, event: Mapping[str, Any]) -> Block:
        """A block as its `context_block_diagnostic` measured it."""
        return cls(
            block_id,
            _str(event.get("source")) or "",
            token_count(event.get("text_bytes")),
            _str(event.get("lifecycle")) or "",
        )


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def ceil4(count: int) -> int:
    return (count + 3) // 4 if count > 0 else 0


def block_category(block_id: str, source: str = "") -> tuple[Category, str]:
    """The category of a context block, as its kind (id, else source) says."""
    for key in (block_id, source):
        if key in BLOCKS:
            return BLOCKS[key]
    return Category.UNATTRIBUTED, f"Context block {block_id or source} (kind not known)"


def lane_category(lane: Lane) -> Category:
    """A non-`context` lane's category (FORMATS-muse §5.5)."""
    if lane.lane == "system_base":
        return Category.SYSTEM
    if lane.lane == "tool_specs":
        return Category.TOOLS
    if lane.lane == "tool_result":
        return Category.RESULTS
    if lane.lane == "provider_options":
        return Category.OVERHEAD
    if lane.lane == "history":
        if "summary" in lane.source or "compaction" in lane.source:
            return Category.SUMMARIES
        if lane.destination.endswith("role:user") or lane.source == "current_user":
            return Category.PROMPTS
        if lane.destination.endswith("role:assistant"):
            return Category.ASSISTANT
        return Category.MESSAGES
    return Category.UNATTRIBUTED


def lane_bytes(trace: Trace, blocks: list[Block]) -> tuple[dict[Category, int], bool]:
    """Bytes per category of one request's lanes (FORMATS-muse §5.5), and False when the
    context blocks exceed the `context` lane (that lane is then unattributed).

    The `context` lane is split by block (`text_bytes`); the bytes left over are the
    glue that joins the blocks (overhead). Omitted aggregate bytes are unattributed.
    """
    by: Counter[Category] = Counter()
    fits = True
    for lane in trace.lanes:
        if lane.lane != "context":
            by[lane_category(lane)] += lane.bytes
            continue
        used = [b for b in blocks if b.lifecycle in {"", "session_start"}]
        total = sum(b.text_bytes for b in used)
        if used and total <= lane.bytes:
            for block in used:
                by[block_category(block.block_id, block.source)[0]] += block.text_bytes
            by[Category.OVERHEAD] += lane.bytes - total
        else:
            fits = fits and not used
            by[Category.UNATTRIBUTED] += lane.bytes
    listed = sum(lane.bytes for lane in trace.lanes)
    by[Category.UNATTRIBUTED] += max(trace.omitted_bytes, trace.total_bytes - listed)
    return {category: by[category] for category in Category if by[category] > 0}, fits


def parse_trace(event: dict[str, Any]) -> Trace | None:
    """The lanes of a schema-2 `full_request` trace; None when it lists no aggregate."""
    bounded = _dict(event.get("bounded"))
    aggregates = bounded.get("aggregates")
    lanes = []
    for aggregate in aggregates if isinstance(aggregates, list) else []:
        aggregate = _dict(aggregate)
        lanes.append(
            Lane(
                str(_dict(aggregate.get("logical_lane")).get("value") or ""),
                str(_dict(aggregate.get("source")).get("value") or ""),
                str(_dict(aggregate.get("provider_wire_destination")).get("value") or ""),
                token_count(aggregate.get("byte_count")),
            )
        )
    if not lanes:
        return None
    step = event.get("model_step")
    return Trace(
        step if isinstance(step, int) and not isinstance(step, bool) else None,
        tuple(lanes),
        token_count(bounded.get("total_lane_bytes")),
        token_count(bounded.get("omitted_aggregate_lane_bytes")),
    )


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


@frozen
class NativeSplit:
    """A request's composition from its lanes (bytes / 4 per category). What the lanes do
    not hold of the reported input (`input_tokens − Σ lanes/4`: tool schemas, overhead) is
    its own unattributed amount, never scaled into the lanes."""

    categories: tuple[tuple[Category, Tokens], ...]
    not_in_lanes: Tokens  # 0 when the lanes hold the whole reported input
    fits: bool  # False: the context blocks exceed the context lane (shown unattributed)
    complete: bool  # the lanes account for the whole reported input


def native_split(trace: Trace, blocks: list[Block], prompt: Tokens) -> NativeSplit:
    by_bytes, fits = lane_bytes(trace, blocks)
    tokens = {category: ceil4(count) for category, count in by_bytes.items()}
    not_in_lanes = prompt - sum(tokens.values())
    if not_in_lanes > 0:
        tokens[Category.UNATTRIBUTED] = tokens.get(Category.UNATTRIBUTED, 0) + not_in_lanes
    return NativeSplit(
        tuple((c, tokens[c]) for c in Category if tokens.get(c)),
        max(not_in_lanes, 0),
        fits,
        bool(prompt) and not_in_lanes <= 0,
    )


@frozen
class ContextBlock:
    """One `run_context_messages` entry as a context item, and its measured bytes (for
    splitting the context lane when no `context_block_diagnostic` was written)."""

    item_id: str
    category: Category
    label: str
    size: int | str  # the text when it is what Muse measured, else its length
    measured: Block | None


def context_block(message: Mapping[str, Any], known_blocks: Mapping[str, Block]) -> ContextBlock:
    block_id = _str(message.get("id")) or _str(message.get("source")) or "block"
    category, label = block_category(block_id, _str(message.get("source")) or "")
    text = message.get("text")
    chars = len(text) if isinstance(text, str) else 0
    redacted = _REDACTED.match(text) if isinstance(text, str) else None
    known = known_blocks.get(block_id)
    if redacted:
        chars = int(redacted.group(1))
        label += " (length from a redaction marker)"
    elif known is not None and isinstance(text, str) and utf8_len(text) != known.text_bytes:
        # The text was edited (trimmed) after Muse measured it: trust the diagnostic.
        chars = known.text_bytes
        label += " (length from context_block_diagnostic)"
    # The text when it is what Muse measured (the estimator can see what it is).
    size: int | str = (
        text if isinstance(text, str) and chars == len(text) and not redacted else chars
    )
    measured = None
    if isinstance(text, str):
        length = chars if redacted else utf8_len(text)
        measured = Block(block_id, _str(message.get("source")) or "", length, "")
    return ContextBlock(f"context:{block_id}", category, label, size, measured)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
