"""What the profile says about a Pi session (`Session.facts`, `profile (1)` on the trace):
its version, name, the file it was forked from and what it copied from there, providers,
model and thinking-level changes, requests without usage, tool calls that never ran, and the
entries the user left on other branches.

Separate from `pi.py`, which reads the session: these are read from its builder once the
whole journal is in (`SessionBuilder.finish`), before its entry tree is let go."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from agent_profiler.adapters.pi_records import CURRENT_VERSION
from agent_profiler.model import INHERITED_ENTRIES, INHERITED_REQUESTS

if TYPE_CHECKING:
    from agent_profiler.adapters.pi import SessionBuilder
    from agent_profiler.model import Fact

_MAX_LISTED_MODEL_CHANGES = 10


def session_facts(builder: SessionBuilder, not_run: int) -> list[Fact]:
    version = builder.version or 1
    facts: list[Fact] = [
        (
            "session_version",
            str(version) if version >= CURRENT_VERSION else f"{version} (migrated in memory)",
        )
    ]
    if builder.name:
        facts.append(("session_name", builder.name))
    if builder.forked_from:
        facts.append(("forked_from", builder.forked_from))
    if builder.inherited_entries:
        # Its first entries are its source's (`SessionBuilder._inherited`): its own
        # history starts after them; their requests are counted in the source, not here.
        facts.append((INHERITED_ENTRIES, builder.inherited_entries))
        facts.append((INHERITED_REQUESTS, builder.inherited_requests))
    if len(builder.providers) > 1:
        facts.append(("providers", ", ".join(builder.providers)))
    changes = [m.value for m in builder.markers if m.kind == "model_change"]
    if changes:
        listed = " → ".join(changes[:_MAX_LISTED_MODEL_CHANGES])
        more = len(changes) - _MAX_LISTED_MODEL_CHANGES
        facts.append(("model_changes", listed + (f" (+{more} more)" if more > 0 else "")))
    if builder.header_thinking_level:
        facts.append(("thinking_level", builder.header_thinking_level))
    levels = sum(1 for m in builder.markers if m.kind == "thinking_level_change")
    if levels:
        facts.append(("thinking_level_changes", levels))
    if builder.requests_by_level:
        facts.append(
            (
                "requests_by_thinking_level",
                ", ".join(f"{k}: {n}" for k, n in builder.requests_by_level.most_common()),
            )
        )
    if builder.unmeasured_requests:
        stops = Counter(r.stop_reason or "none" for r in builder.unmeasured_requests)
        detail = ", ".join(f"{k}: {n}" for k, n in stops.most_common())
        facts.append(("requests_without_usage", f"{len(builder.unmeasured_requests)} ({detail})"))
    if not_run:
        facts.append(("tool_calls_not_run", not_run))
    off_branch = len(builder.entries) - _final_branch(builder)
    if off_branch:
        facts.append(("entries_off_final_branch", off_branch))
    return facts


def _final_branch(builder: SessionBuilder) -> int:
    """How many entries the path from the last entry (Pi's leaf on load) to the root
    holds: counted, not collected (a tree has no node twice on a path)."""
    entries = builder.entries
    count = 0
    node = builder.last_entry
    while node is not None:
        entry = entries[node]
        if entry is None:
            # Let go by a lean reading of a chain (stream/pi_reading.py): the entries on
            # the active path before the last, all on the way to the root.
            return count + builder.branch.path.index(node) + 1
        count += 1
        node = entry.parent
    return count
