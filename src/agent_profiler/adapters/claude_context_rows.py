"""Claude Code's `/context` breakdowns (see `claude_context`): what a run's parse gives
(`NativeSnapshot`, `ContextCommandFailure`), token numbers as the screens print them, and
the rows of either grammar turned into one snapshot."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import field
from typing import Literal

from agent_profiler.adapters.common import version_tuple
from agent_profiler.model import Category, frozen
from agent_profiler.records import record

NATIVE_HEAD = (Category.SYSTEM, Category.TOOLS, Category.RULES, Category.SKILLS)


Grammar = Literal["screen", "markdown"]


# --------------------------------------------------------------------------- results


@frozen
class NativeItem:
    """One per-item row of a detail section (an MCP tool, an agent, a memory file, a skill)."""

    id: str  # `mcp:<tool>`, `agent:<name>`, `rule:<path>`, `skill:<name>`
    category: Category
    tokens: int
    label: str


@frozen
class NativeSnapshot:
    """One `/context` run, as Claude Code printed it.

    `used_tokens` is the header's total (for 2.0.x without the reserve that header included);
    it is its own number and may differ from `estimated_tokens`, the sum of the rows.
    """

    timestamp: str | None  # the output record's `timestamp`, as found
    line: int  # the output record's line
    used_tokens: int
    window_tokens: int
    effective_window_tokens: int | None  # window − buffers; None when no buffer row is shown
    categories: tuple[tuple[Category, int], ...]  # context categories only, in Category order
    items: tuple[NativeItem, ...] = ()
    model: str | None = None
    reserve_tokens: int = 0  # Autocompact/Compact buffer rows
    deferred_tokens: int = 0  # `(deferred)` rows: available on demand, not in the prompt
    free_tokens: int | None = None  # the Free space row, when printed
    rows: tuple[tuple[str, int], ...] = ()  # every category row as printed, in order
    grammar: Grammar = "screen"
    text_line: int = 0  # the record whose text was parsed (the meta markdown, or `line`)

    @property
    def estimated_tokens(self) -> int:
        return sum(tokens for _, tokens in self.categories)


@frozen
class ContextCommandFailure:
    """A `/context` run that gives no snapshot: report it as one warning."""

    line: int  # the output record's line (the command's, when no output was found)
    reason: str


ContextRunResult = NativeSnapshot | ContextCommandFailure


class ContextParseError(ValueError):
    """The text is not in a `/context` layout this module knows."""


# --------------------------------------------------------------------------- numbers

TOKEN = r"\d+(?:\.\d+)?[km]?"
_TOK_RE = re.compile(r"(\d+)(?:\.(\d+))?([km]?)")
_UNIT = {"": 1, "k": 1_000, "m": 1_000_000}


def parse_tokens(text: str) -> int:
    """`8` → 8, `45.0k` → 45000, `122.6k` → 122600, `1m` → 1000000."""
    match = _TOK_RE.fullmatch(text)
    if match is None:
        raise ContextParseError(f"not a token count: {text!r}")
    whole, decimals, unit = match.groups()
    # In integers, not float: 122.6 × 1000 must be exactly 122600 (what Decimal gave,
    # truncated; decimal's import was a sixth of reading a short transcript's start-up).
    fraction = decimals or "0"
    scale: int = 10 ** len(fraction)
    return (int(whole) * scale + int(fraction)) * _UNIT[unit] // scale


def half_step(text: str) -> float:
    """Half of the last printed digit's value: how far the printed number may be from the
    true one (`64k` → 500, `45.0k` → 50, `929` → 0.5)."""
    match = _TOK_RE.fullmatch(text)
    assert match is not None  # only called on text that parse_tokens accepted
    _, decimals, unit = match.groups()
    return float(0.5 * _UNIT[unit] / 10 ** len(decimals or ""))


# --------------------------------------------------------------------------- rows → snapshot

_CATEGORY_OF = {
    "System prompt": Category.SYSTEM,
    "System tools": Category.TOOLS,
    "MCP tools": Category.TOOLS,
    # The agent catalogue is text inside the Agent/Task tool's description.
    "Custom agents": Category.TOOLS,
    "Memory files": Category.RULES,
    "Skills": Category.SKILLS,
    # /context cannot split the conversation into prompts, answers and tool results.
    "Messages": Category.MESSAGES,
}
_RESERVES = {"Autocompact buffer", "Compact buffer"}
_FREE = "Free space"
_DEFERRED_SUFFIX = " (deferred)"
# Rows every known layout prints; a breakdown without them is not one we understand.
_REQUIRED_ROWS = ("System prompt", "Messages")

SectionKind = Literal["mcp", "agent", "rule", "skill"]
# Which category row a detail section belongs to; its items count only when that row exists.
_SECTION_ROW: dict[SectionKind, str] = {
    "mcp": "MCP tools",
    "agent": "Custom agents",
    "rule": "Memory files",
    "skill": "Skills",
}


@frozen
class Row:
    name: str
    tokens: int
    pct: float
    slack: float  # how far tokens may be from the true value, from the printed digits


@frozen
class RawItem:
    kind: SectionKind
    name: str
    tokens: int
    source: str | None


@record
class Parsed:
    """What either grammar reads, before the shared rules turn it into a snapshot."""

    model: str | None = None
    used: int | None = None
    used_slack: float = 0.0
    window: int | None = None
    header_pct: int | None = None
    rows: list[Row] = field(default_factory=list)
    items: list[RawItem] = field(default_factory=list)


def build_snapshot(
    parsed: Parsed,
    *,
    grammar: Grammar,
    version: str | None,
    timestamp: str | None,
    line: int,
    text_line: int | None,
) -> NativeSnapshot:
    if parsed.used is None or parsed.window is None or parsed.header_pct is None:
        raise ContextParseError("no `used/window tokens (N%)` header")
    window = parsed.window
    if window <= 0:
        raise ContextParseError("window of 0 tokens")
    if abs(100 * parsed.used / window - parsed.header_pct) > 1 + 100 * parsed.used_slack / window:
        raise ContextParseError(
            f"header says {parsed.header_pct}% but {parsed.used}/{window} is not that"
        )
    names = [row.name for row in parsed.rows]
    if len(set(names)) != len(names):
        raise ContextParseError("a category row appears twice")
    for required in _REQUIRED_ROWS:
        if required not in names:
            raise ContextParseError(f"no {required!r} row")

    totals: dict[Category, int] = {}
    reserve = deferred = 0
    free: int | None = None
    for row in parsed.rows:
        # Percentages are of the full window: a mismatch means we misread a unit or the
        # meaning of a row changed, and a wrong snapshot is worse than none.
        if abs(100 * row.tokens / window - row.pct) > 0.05 + 100 * row.slack / window + 1e-6:
            raise ContextParseError(f"row {row.name!r}: {row.tokens} is not {row.pct}% of {window}")
        category = _CATEGORY_OF.get(row.name)
        if category is not None:
            totals[category] = totals.get(category, 0) + row.tokens
        elif row.name in _RESERVES:
            reserve += row.tokens
        elif row.name == _FREE:
            free = row.tokens
        elif row.name.endswith(_DEFERRED_SUFFIX):
            deferred += row.tokens
        else:
            # A new row might be context or a new kind of reserve: we cannot tell which.
            raise ContextParseError(f"unknown category row {row.name!r}")

    used = parsed.used
    release = version_tuple(version)
    if release is not None and release < (2, 1):
        used -= reserve  # 2.0.x counted the Autocompact buffer as used
    if used < 0:
        raise ContextParseError("header total smaller than its reserve")

    present = {row.name for row in parsed.rows if row.name in _CATEGORY_OF}
    items = _merge_items(
        item for item in parsed.items if _SECTION_ROW[item.kind] in present and item.tokens > 0
    )
    return NativeSnapshot(
        timestamp=timestamp,
        line=line,
        used_tokens=used,
        window_tokens=window,
        effective_window_tokens=window - reserve if reserve else None,
        categories=tuple((c, totals[c]) for c in Category if c in totals),
        items=items,
        model=parsed.model,
        reserve_tokens=reserve,
        deferred_tokens=deferred,
        free_tokens=free,
        rows=tuple((row.name, row.tokens) for row in parsed.rows),
        grammar=grammar,
        text_line=line if text_line is None else text_line,
    )


_ITEM_CATEGORY: dict[SectionKind, Category] = {
    kind: _CATEGORY_OF[row] for kind, row in _SECTION_ROW.items()
}


def _merge_items(raw: Iterable[RawItem]) -> tuple[NativeItem, ...]:
    """One item per id; repeated names (a plugin installed twice, a skill in both User and
    Project) are summed, so ids stay unique and the total stays what was printed."""
    merged: dict[str, tuple[RawItem, int, list[str]]] = {}
    for item in raw:
        key = f"{item.kind}:{item.name}"
        first, tokens, sources = merged.get(key, (item, 0, []))
        merged[key] = (first, tokens + item.tokens, [*sources, item.source or ""])
    result = []
    for key, (first, tokens, sources) in merged.items():
        distinct = list(dict.fromkeys(s for s in sources if s))
        label = first.name
        if distinct:
            label += f" ({', '.join(distinct)})"
        if len(sources) > len(distinct) and len(sources) > 1:
            label += f" ×{len(sources)}"
        result.append(NativeItem(key, _ITEM_CATEGORY[first.kind], tokens, label))
    return tuple(result)
