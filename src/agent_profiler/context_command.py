"""Claude Code's own `/context` breakdowns, read back from a transcript.

When the user types `/context`, Claude Code writes its answer into the transcript: a native,
complete split of the prompt (system prompt, tool schemas, memory files, skills, messages).
This module finds those runs in a stream of transcript records and turns each into a
`NativeSnapshot`, or into a `ContextCommandFailure` when the run failed or its text is in a
layout we do not know. It is pure: no I/O, no printing, no clock. The grammar and every rule
below are documented, with the sessions they were checked on, in FORMATS-context-command.md.

Surprises of the format (why the code looks the way it does):

- A run is 2 or 3 records chained by `parentUuid`: the command record, its output record, and
  from CLI 2.1.207 an `isMeta` user record with the same breakdown as markdown. The record
  types changed over time (`user`/`user`; VS Code `user`/`system`; CLI ≥ 2.1.207
  `system`/`system`/`user`; typed while busy `user`/`system`), so runs are found by the
  command record and the chain, never by the words "Context Usage": a command's own
  `<command-args>` can hold a whole pasted `/context` screen (VS Code 2.1.123).
- The meta markdown record can carry an earlier timestamp than the output record it follows.
- Two grammars: an ANSI terminal screen (a glyph grid on the left, text on the right) and a
  markdown report. The markdown is preferred when present: it lists every row including the
  deferred ones, and full per-item tables where the 2.1.207+ screen prints only counts.
- The screen is wrapped in DEC synchronized-update frames; 2.1.19 prints the whole screen twice
  in one output, so only the last frame is read.
- Three header forms: `model • 430k/1000k tokens (43%)` (1.0.x), `model · 92k/200k tokens
  (46%)` (2.0–2.1.69), and from 2.1.114 three lines: display name, model id, `122.6k/1m tokens
  (12%)`. The model id may end in `[1m]` (the 1M-context variant), which is dropped.
- Numbers: `k`/`m` units, `.0` kept up to 2.1.27 (`45.0k`) and dropped later (`33k`), plain
  integers under 1,000 (`8 tokens`), and Free space without the word "tokens". Markdown item
  tables also write `~100` and `< 20`.
- In 2.0.x the header's "used" includes the Autocompact buffer (92k = 47k of rows + 45k);
  from 2.1.1 it does not. "Compact buffer" (2.1.1–2.1.19) has a used-cell bullet yet is a
  reserve too. Neither is context: they only shrink the effective window.
- `(deferred)` rows (2.1.86+ markdown) are tool schemas reachable through tool search, not in
  the prompt; Free space is window − used − reserves. None of them is context.
- Header and rows can disagree (2.1.19: 142k vs 134.9k; VS Code 2.1.81: 143.2k vs 3.4k). Both
  are kept as printed; rows are never scaled to the header. A breakdown without a System
  prompt or Messages row is refused, though: one 2.1.207 run right after `/remote-control`
  printed only Skills and Messages (hannibal8856/claude_backup, session fdcca453, line 129),
  and reading it would claim a prompt with no system prompt and no tools.
- Per-item sections can exist without their category row (2.0.76 skills, 2.1.81 MCP tools at 0
  tokens, 2.1.207 MCP tools that are all deferred): such items are not in the prompt and are
  dropped. Names can repeat (a plugin installed twice, a skill both in User and Project): the
  copies are summed into one item so ids stay unique.
- 1.0.x/2.0.x screens wrap long detail lines mid-path and lose a character at the break; such
  items cannot be read back faithfully and are skipped (their category row is still exact).

Anything that does not fit the known grammar (a new header form, an unknown category row, a
percentage that does not match the numbers) is a failure, never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

from agent_profiler.model import Category

# The head a `/context` run measures and transcripts lack: the one definition (the Claude
# Code adapter puts these in the native head; the summary reports them from the last run).
NATIVE_HEAD = (Category.SYSTEM, Category.TOOLS, Category.RULES, Category.SKILLS)

__all__ = [
    "ContextCommandFailure",
    "ContextCommandTracker",
    "ContextParseError",
    "ContextRunResult",
    "NativeItem",
    "NativeSnapshot",
    "parse_context_output",
    "parse_markdown",
    "parse_screen",
    "parse_tokens",
]

Grammar = Literal["screen", "markdown"]


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class NativeItem:
    """One per-item row of a detail section (an MCP tool, an agent, a memory file, a skill)."""

    id: str  # `mcp:<tool>`, `agent:<name>`, `rule:<path>`, `skill:<name>`
    category: Category
    tokens: int
    label: str


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class ContextCommandFailure:
    """A `/context` run that gives no snapshot: report it as one warning."""

    line: int  # the output record's line (the command's, when no output was found)
    reason: str


ContextRunResult = NativeSnapshot | ContextCommandFailure


class ContextParseError(ValueError):
    """The text is not in a `/context` layout this module knows."""


# --------------------------------------------------------------------------- numbers

_TOK = r"\d+(?:\.\d+)?[km]?"
_TOK_RE = re.compile(r"(\d+)(?:\.(\d+))?([km]?)")
_UNIT = {"": 1, "k": 1_000, "m": 1_000_000}


def parse_tokens(text: str) -> int:
    """`8` → 8, `45.0k` → 45000, `122.6k` → 122600, `1m` → 1000000."""
    match = _TOK_RE.fullmatch(text)
    if match is None:
        raise ContextParseError(f"not a token count: {text!r}")
    whole, decimals, unit = match.groups()
    # Decimal, not float: 122.6 × 1000 must be exactly 122600.
    return int(Decimal(f"{whole}.{decimals or 0}") * _UNIT[unit])


def _half_step(text: str) -> float:
    """Half of the last printed digit's value: how far the printed number may be from the
    true one (`64k` → 500, `45.0k` → 50, `929` → 0.5)."""
    match = _TOK_RE.fullmatch(text)
    assert match is not None  # only called on text that parse_tokens accepted
    _, decimals, unit = match.groups()
    return float(0.5 * _UNIT[unit] / 10 ** len(decimals or ""))


def _version_tuple(version: str | None) -> tuple[int, ...] | None:
    if version is None:
        return None
    parts = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", version)
    return tuple(int(p) for p in parts.groups() if p is not None) if parts else None


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

_SectionKind = Literal["mcp", "agent", "rule", "skill"]
# Which category row a detail section belongs to; its items count only when that row exists.
_SECTION_ROW: dict[_SectionKind, str] = {
    "mcp": "MCP tools",
    "agent": "Custom agents",
    "rule": "Memory files",
    "skill": "Skills",
}


@dataclass(frozen=True, slots=True)
class _Row:
    name: str
    tokens: int
    pct: float
    slack: float  # how far tokens may be from the true value, from the printed digits


@dataclass(frozen=True, slots=True)
class _RawItem:
    kind: _SectionKind
    name: str
    tokens: int
    source: str | None


@dataclass(slots=True)
class _Parsed:
    """What either grammar reads, before the shared rules turn it into a snapshot."""

    model: str | None = None
    used: int | None = None
    used_slack: float = 0.0
    window: int | None = None
    header_pct: int | None = None
    rows: list[_Row] = field(default_factory=list)
    items: list[_RawItem] = field(default_factory=list)


def _build(
    parsed: _Parsed,
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
    release = _version_tuple(version)
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


_ITEM_CATEGORY: dict[_SectionKind, Category] = {
    kind: _CATEGORY_OF[row] for kind, row in _SECTION_ROW.items()
}


def _merge_items(raw: Iterable[_RawItem]) -> tuple[NativeItem, ...]:
    """One item per id; repeated names (a plugin installed twice, a skill in both User and
    Project) are summed, so ids stay unique and the total stays what was printed."""
    merged: dict[str, tuple[_RawItem, int, list[str]]] = {}
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


# --------------------------------------------------------------------------- terminal screen

_SYNC_BEGIN = "\x1b[?2026h"
_CSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_OSC = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# Grid cells, each followed by one space, up to the two-space gap before the right column.
# The lookahead keeps the `⛁ ` bullet of a category line printed below the grid.
_GRID = re.compile(r"^(?:[⛁⛀⛶⛝] )+(?=  |$)")
_TITLE = "Context Usage"
_HEADER_INLINE = re.compile(rf"^(\S+) [•·] ({_TOK})/({_TOK}) tokens \((\d+)%\)$")
_HEADER_TOTALS = re.compile(rf"^({_TOK})/({_TOK}) tokens \((\d+)%\)$")
_ESTIMATED = "Estimated usage by category"
_BULLET = re.compile(r"^[⛁⛀⛶⛝] ")
_CATEGORY_LINE = re.compile(
    rf"^[⛁⛀⛶⛝] (?P<name>[A-Z][A-Za-z ()]*?): (?P<tok>{_TOK})(?: tokens)? "
    rf"\((?P<pct>\d+(?:\.\d+)?)%\)$"
)
_TREE = ("└", "├")
_ITEM_LINE = re.compile(rf"^[└├] (?P<name>.+): (?P<tok>{_TOK}) tokens$")
# Group lines inside a section (2.1.19+; `Available` for 2.1.69's on-demand MCP tools).
_GROUPS = {"User", "Project", "Plugin", "Local", "Managed", "Built-in", "Available"}
_SCREEN_SECTIONS: dict[str, _SectionKind] = {
    "MCP tools": "mcp",
    "Custom agents": "agent",
    "Memory files": "rule",
    "Skills and slash commands": "skill",  # 2.0.76 – 2.1.2
    "Skills": "skill",
}
_TRAILING_SOURCE = re.compile(r"^(?P<name>.+) \((?P<source>[A-Z][A-Za-z-]*)\)$")
_MEMORY_WITH_TYPE = re.compile(r"^(?P<source>[A-Z][A-Za-z]*) \((?P<name>.+)\)$")
_MCP_WITH_SERVER = re.compile(r"^(?P<name>\S+) \((?P<source>[^()]+)\)$")


def _screen_lines(text: str) -> list[str]:
    """The right-hand text of the last frame, one stripped line per screen row."""
    frames = [frame for frame in text.split(_SYNC_BEGIN) if _TITLE in frame]
    if not frames:
        raise ContextParseError("no title")
    plain = _OSC.sub("", _CSI.sub("", frames[-1])).replace("\r\n", "\n")
    if _CONTROL.search(plain):  # also an ESC that is not part of a CSI or OSC sequence
        raise ContextParseError("unknown control sequence")
    return [_GRID.sub("", line).strip() for line in plain.split("\n")]


def parse_screen(
    text: str,
    *,
    version: str | None = None,
    timestamp: str | None = None,
    line: int = 0,
    text_line: int | None = None,
) -> NativeSnapshot:
    """Parse the terminal screen (inside `<local-command-stdout>`, tags already removed).

    `version` is the record's Claude Code version: 2.0.x headers include the reserve.
    Raises `ContextParseError` on any layout this module does not know.
    """
    lines = _screen_lines(text)
    parsed = _Parsed()
    position = 0
    while position < len(lines) and not lines[position]:
        position += 1
    if position == len(lines) or lines[position] != _TITLE:
        raise ContextParseError("the screen does not start with its title")
    position = _read_screen_header(lines, position + 1, parsed)
    position = _read_screen_rows(lines, position, parsed)
    _read_screen_sections(lines[position:], parsed)
    return _build(
        parsed,
        grammar="screen",
        version=version,
        timestamp=timestamp,
        line=line,
        text_line=text_line,
    )


def _read_screen_header(lines: Sequence[str], position: int, parsed: _Parsed) -> int:
    """Fill model/used/window from one of the three header forms; return the next line."""
    before: list[str] = []  # 2.1.114+: display name and model id above the totals
    for index in range(position, len(lines)):
        text = lines[index]
        if not text:
            continue
        inline = _HEADER_INLINE.match(text)
        totals = None if inline else _HEADER_TOTALS.match(text)
        if inline and not before:
            model, used, window, pct = inline.groups()
        elif totals and 1 <= len(before) <= 2 and re.fullmatch(r"\S+", before[-1]):
            model = before[-1]
            used, window, pct = totals.groups()
        elif inline or totals or _BULLET.match(text) or len(before) == 2:
            raise ContextParseError(f"unknown header near {text!r}")
        else:
            before.append(text)
            continue
        parsed.model = model.removesuffix("[1m]")
        parsed.used = parse_tokens(used)
        parsed.used_slack = _half_step(used)
        parsed.window = parse_tokens(window)
        parsed.header_pct = int(pct)
        return index + 1
    raise ContextParseError("no header line")


def _read_screen_rows(lines: Sequence[str], position: int, parsed: _Parsed) -> int:
    """Read category lines up to the blank line that ends them; return the next line."""
    index = position
    for index in range(position, len(lines)):
        text = lines[index]
        if not text:
            if parsed.rows:
                return index
            continue
        if _BULLET.match(text):
            match = _CATEGORY_LINE.match(text)
            if match is None:
                raise ContextParseError(f"unknown category line {text!r}")
            parsed.rows.append(
                _Row(
                    match["name"],
                    parse_tokens(match["tok"]),
                    float(match["pct"]),
                    _half_step(match["tok"]),
                )
            )
        elif text == _ESTIMATED and not parsed.rows:
            continue
        # Any other line (e.g. an `Auto-compact window: 200k tokens` note quoted from some
        # 2.1.x build) carries no row; it is ignored.
    return index + 1


def _read_screen_sections(lines: Sequence[str], parsed: _Parsed) -> None:
    """Per-item detail sections: `Title · hint` headings, optional group lines, tree items.

    Only `name: N tokens` items are read; the 2.1.207+ summaries (`└ 52 tools · 0 tokens`) and
    2.1.69's bare on-demand tool names do not match. A ≤ 2.0.x item wrapped mid-path does not
    match either, and the lines that continue it are skipped. Any other line ends the section:
    items under a heading we do not know must not be counted as the previous section's.
    """
    kind: _SectionKind | None = None
    group: str | None = None
    wrapped = False  # the last tree line did not parse: what follows may continue it
    for text in lines:
        if not text:
            wrapped = False
        elif text.startswith(_TREE):
            match = _ITEM_LINE.match(text)
            wrapped = match is None
            if kind is not None and match is not None:
                parsed.items.append(_screen_item(kind, match["name"], match["tok"], group))
        elif wrapped:
            continue
        elif " · " in text:
            kind = _SCREEN_SECTIONS.get(text.split(" · ", 1)[0])
            group = None
        elif text in _GROUPS:
            group = text
        else:
            kind = None


def _screen_item(kind: _SectionKind, name: str, tokens: str, group: str | None) -> _RawItem:
    # ≤ 2.0.x put the origin after the name: `tool (server)`, `agent (User)`, `User (/path)`.
    pattern = {
        "mcp": _MCP_WITH_SERVER,
        "agent": _TRAILING_SOURCE,
        "rule": _MEMORY_WITH_TYPE,
        "skill": None,
    }[kind]
    match = pattern.match(name) if pattern is not None else None
    if match is not None:
        name, group = match["name"], match["source"]
    return _RawItem(kind, name, parse_tokens(tokens), group)


# --------------------------------------------------------------------------- markdown

_MD_TITLE = "## Context Usage"
_MD_MODEL = re.compile(r"^\*\*Model:\*\* (\S+)\s*$")
_MD_TOKENS = re.compile(rf"^\*\*Tokens:\*\* ({_TOK}) / ({_TOK}) \((\d+)%\)\s*$")
_MD_CATEGORY_SECTIONS = {"Estimated usage by category", "Categories"}  # "Categories": 2.1.4
_MD_CATEGORY_HEADER = ["Category", "Tokens", "Percentage"]
_MD_TOK = re.compile(rf"^(?P<tok>{_TOK})$")
_MD_PCT = re.compile(r"^(?P<pct>\d+(?:\.\d+)?)%$")
_MD_ITEM_TOKENS = re.compile(rf"^(?:~|<\s*)?({_TOK})$")  # `~100`, `< 20` (2.1.207+ skills)
# Section → (kind, name column, source column).
_MD_SECTIONS: dict[str, tuple[_SectionKind, str, str]] = {
    "MCP Tools": ("mcp", "Tool", "Server"),
    "Custom Agents": ("agent", "Agent Type", "Source"),
    "Memory Files": ("rule", "Path", "Type"),
    "Skills": ("skill", "Skill", "Source"),
}
_MD_SEPARATOR = re.compile(r"^\|(?:\s*:?-+:?\s*\|)+$")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip()[1:-1].split("|")]


def parse_markdown(
    text: str,
    *,
    version: str | None = None,
    timestamp: str | None = None,
    line: int = 0,
    text_line: int | None = None,
) -> NativeSnapshot:
    """Parse the markdown report (`## Context Usage` …). Raises `ContextParseError`."""
    lines = [row.rstrip() for row in text.strip().split("\n")]
    if not lines or lines[0] != _MD_TITLE:
        raise ContextParseError("the report does not start with `## Context Usage`")
    parsed = _Parsed()
    section: str | None = None
    columns: list[str] | None = None
    for row in lines[1:]:
        if row.startswith("### "):
            section, columns = row[4:].strip(), None
        elif row.startswith("|") and row.endswith("|") and section is not None:
            if _MD_SEPARATOR.match(row):
                continue
            cells = _cells(row)
            if columns is None:
                columns = cells
            elif section in _MD_CATEGORY_SECTIONS:
                parsed.rows.append(_markdown_row(columns, cells))
            elif section in _MD_SECTIONS:
                item = _markdown_item(_MD_SECTIONS[section], columns, cells)
                if item is not None:
                    parsed.items.append(item)
        elif (model := _MD_MODEL.match(row)) is not None:
            parsed.model = model[1].removesuffix("[1m]")
        elif (tokens := _MD_TOKENS.match(row)) is not None:
            used, window, pct = tokens.groups()
            parsed.used, parsed.used_slack = parse_tokens(used), _half_step(used)
            parsed.window, parsed.header_pct = parse_tokens(window), int(pct)
        elif row.startswith(("**Tokens:**", "| ")) or (section is None and row.startswith("#")):
            raise ContextParseError(f"unknown line {row!r}")
    return _build(
        parsed,
        grammar="markdown",
        version=version,
        timestamp=timestamp,
        line=line,
        text_line=text_line,
    )


def _markdown_row(columns: list[str], cells: list[str]) -> _Row:
    if columns != _MD_CATEGORY_HEADER or len(cells) != 3:
        raise ContextParseError(f"unknown category table {columns!r}")
    name, tok, pct = cells
    tok_match, pct_match = _MD_TOK.match(tok), _MD_PCT.match(pct)
    if not name or tok_match is None or pct_match is None:
        raise ContextParseError(f"unknown category row {cells!r}")
    return _Row(name, parse_tokens(tok), float(pct_match["pct"]), _half_step(tok))


def _markdown_item(
    spec: tuple[_SectionKind, str, str], columns: list[str], cells: list[str]
) -> _RawItem | None:
    """An item row, or None when the table is not laid out as expected: items are detail,
    the category rows carry the totals, so an odd table only loses detail."""
    kind, name_column, source_column = spec
    if len(cells) != len(columns) or name_column not in columns or "Tokens" not in columns:
        return None
    record = dict(zip(columns, cells, strict=True))
    tokens = _MD_ITEM_TOKENS.match(record["Tokens"])
    name = record[name_column]
    if tokens is None or not name:
        return None
    return _RawItem(kind, name, parse_tokens(tokens[1]), record.get(source_column) or None)


# --------------------------------------------------------------------------- output text

_STDOUT = re.compile(r"<local-command-stdout>(.*?)(?:</local-command-stdout>|\Z)", re.DOTALL)
_STDERR = re.compile(r"<local-command-stderr>(.*?)(?:</local-command-stderr>|\Z)", re.DOTALL)


def _is_markdown(text: str) -> bool:
    return text.lstrip().startswith(_MD_TITLE)


def parse_context_output(
    text: str,
    *,
    version: str | None = None,
    timestamp: str | None = None,
    line: int = 0,
    text_line: int | None = None,
) -> NativeSnapshot:
    """Parse a `/context` output in either grammar (stdout tags optional)."""
    stdout = _STDOUT.search(text)
    body = stdout[1] if stdout else text
    parse = parse_markdown if _is_markdown(body) else parse_screen
    return parse(body, version=version, timestamp=timestamp, line=line, text_line=text_line)


# --------------------------------------------------------------------------- records


def _payload(record: Mapping[str, object]) -> str | None:
    """The text of a record: top-level `content` for `system`, `message.content` otherwise."""
    if record.get("type") == "system":
        content = record.get("content")
    else:
        message = record.get("message")
        content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, str):
        return content
    # Not seen for these records, but harmless: a list made only of text blocks. Every
    # record passes here, most with a tool_use or tool_result block early in a long list:
    # the first block that is not text ends it (this was 15% of reading a Claude journal).
    if isinstance(content, list) and content:
        texts: list[str] = []
        for block in content:
            text = block.get("text") if isinstance(block, Mapping) else None
            if not isinstance(text, str):
                return None
            texts.append(text)
        return "".join(texts)
    return None


_COMMAND_NAME = re.compile(r"<command-name>\s*/context\s*</command-name>")


def _is_context_command(payload: str) -> bool:
    head = payload.lstrip()
    if not head.startswith(("<command-name>", "<command-message>")):
        return False
    # Only the tags before the arguments: the arguments are free text typed by the user.
    return _COMMAND_NAME.search(head.split("<command-args>", 1)[0]) is not None


def _meta_markdown(record: Mapping[str, object]) -> str | None:
    """The markdown of a 2.1.207+ `isMeta` record that follows a screen, or None."""
    payload = _payload(record)
    if record.get("isMeta") is not True or payload is None:
        return None
    stdout = _STDOUT.search(payload)
    body = stdout[1] if stdout else payload
    return body if _is_markdown(body) else None


def _text(record: Mapping[str, object], key: str) -> str | None:
    value = record.get(key)
    return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class _Output:
    line: int
    timestamp: str | None
    version: str | None
    text: str


def _conclude(output: _Output, text: str, text_line: int) -> ContextRunResult:
    grammar = "markdown" if _is_markdown(text) else "screen"
    try:
        return parse_context_output(
            text,
            version=output.version,
            timestamp=output.timestamp,
            line=output.line,
            text_line=text_line,
        )
    except ContextParseError as error:
        return ContextCommandFailure(
            output.line, f"/context output in an unknown {grammar} layout: {error}"
        )


class ContextCommandTracker:
    """Finds `/context` runs in a transcript fed record by record, in file order.

    `feed` returns the runs that ended with that record (usually none, at most two); `finish`
    returns the runs still open at the end of the file. A screen output is held until the
    next record on its chain shows whether a markdown copy follows (2.1.207+), so a run's
    result can come one record late; its `line` and `timestamp` are the output record's.
    """

    def __init__(self) -> None:
        self._commands: dict[str, int] = {}  # command uuid → line, awaiting the output
        self._screens: dict[str, _Output] = {}  # output uuid → screen, awaiting a markdown copy

    def feed(self, record: Mapping[str, object], line: int) -> list[ContextRunResult]:
        results: list[ContextRunResult] = []
        parent = record.get("parentUuid")
        if isinstance(parent, str):
            screen = self._screens.pop(parent, None)
            if screen is not None:
                markdown = _meta_markdown(record)
                if markdown is not None:
                    results.append(_conclude(screen, markdown, line))
                    return results
                results.append(_conclude(screen, screen.text, screen.line))
            command_line = self._commands.pop(parent, None)
            if command_line is not None:
                output = self._on_output(record, line)
                if output is not None:
                    results.extend(output)
                    return results
                results.append(
                    ContextCommandFailure(command_line, "/context gave no output record")
                )
        payload = _payload(record)
        if payload is not None and _is_context_command(payload):
            uuid = record.get("uuid")
            if isinstance(uuid, str):
                self._commands[uuid] = line
            else:
                results.append(ContextCommandFailure(line, "/context command without a uuid"))
        return results

    def finish(self) -> list[ContextRunResult]:
        """Conclude what is still open at the end of the transcript."""
        results: list[ContextRunResult] = [
            _conclude(screen, screen.text, screen.line) for screen in self._screens.values()
        ]
        results += [
            ContextCommandFailure(line, "/context gave no output record")
            for line in self._commands.values()
        ]
        self._screens.clear()
        self._commands.clear()
        return sorted(results, key=lambda result: result.line)

    def _on_output(self, record: Mapping[str, object], line: int) -> list[ContextRunResult] | None:
        """The record that answers a command: a result (or a held screen), None if it is
        not an output at all."""
        payload = _payload(record)
        if payload is None:
            return None
        head = payload.lstrip()
        if not head.startswith(("<local-command-stdout>", "<local-command-stderr>")):
            return None
        stderr = _STDERR.search(payload)
        if stderr is not None and stderr[1].strip():
            message = " ".join(stderr[1].split())
            cut = f"{message[:200]}…" if len(message) > 200 else message
            return [ContextCommandFailure(line, f"/context failed: {cut}")]
        stdout = _STDOUT.search(payload)
        if stdout is None or not stdout[1].strip():
            return [ContextCommandFailure(line, "/context printed nothing")]
        output = _Output(line, _text(record, "timestamp"), _text(record, "version"), stdout[1])
        uuid = _text(record, "uuid")
        if _is_markdown(output.text) or uuid is None:
            return [_conclude(output, output.text, line)]
        self._screens[uuid] = output  # a markdown copy may follow (CLI 2.1.207+)
        return []
