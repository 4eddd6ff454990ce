"""Claude Code's `/context` breakdowns (see `claude_context`): the two grammars, the ANSI
terminal screen and the markdown report, each read into rows (`claude_context_rows`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent_profiler.adapters.claude_context_rows import (
    TOKEN,
    ContextParseError,
    NativeSnapshot,
    Parsed,
    RawItem,
    Row,
    SectionKind,
    build_snapshot,
    half_step,
    parse_tokens,
)

# --------------------------------------------------------------------------- terminal screen

_SYNC_BEGIN = "\x1b[?2026h"
_CSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_OSC = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# Grid cells, each followed by one space, up to the two-space gap before the right column.
# The lookahead keeps the `⛁ ` bullet of a category line printed below the grid.
_GRID = re.compile(r"^(?:[⛁⛀⛶⛝] )+(?=  |$)")
_TITLE = "Context Usage"
_HEADER_INLINE = re.compile(rf"^(\S+) [•·] ({TOKEN})/({TOKEN}) tokens \((\d+)%\)$")
_HEADER_TOTALS = re.compile(rf"^({TOKEN})/({TOKEN}) tokens \((\d+)%\)$")
_BULLET = re.compile(r"^[⛁⛀⛶⛝] ")
_CATEGORY_LINE = re.compile(
    rf"^[⛁⛀⛶⛝] (?P<name>[A-Z][A-Za-z ()]*?): (?P<tok>{TOKEN})(?: tokens)? "
    rf"\((?P<pct>\d+(?:\.\d+)?)%\)$"
)
_TREE = ("└", "├")
_ITEM_LINE = re.compile(rf"^[└├] (?P<name>.+): (?P<tok>{TOKEN}) tokens$")
# Group lines inside a section (2.1.19+; `Available` for 2.1.69's on-demand MCP tools).
_GROUPS = {"User", "Project", "Plugin", "Local", "Managed", "Built-in", "Available"}
_SCREEN_SECTIONS: dict[str, SectionKind] = {
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
    parsed = Parsed()
    position = 0
    while position < len(lines) and not lines[position]:
        position += 1
    if position == len(lines) or lines[position] != _TITLE:
        raise ContextParseError("the screen does not start with its title")
    position = _read_screen_header(lines, position + 1, parsed)
    position = _read_screen_rows(lines, position, parsed)
    _read_screen_sections(lines[position:], parsed)
    return build_snapshot(
        parsed,
        grammar="screen",
        version=version,
        timestamp=timestamp,
        line=line,
        text_line=text_line,
    )


def _read_screen_header(lines: Sequence[str], position: int, parsed: Parsed) -> int:
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
        parsed.used_slack = half_step(used)
        parsed.window = parse_tokens(window)
        parsed.header_pct = int(pct)
        return index + 1
    raise ContextParseError("no header line")


def _read_screen_rows(lines: Sequence[str], position: int, parsed: Parsed) -> int:
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
                Row(
                    match["name"],
                    parse_tokens(match["tok"]),
                    float(match["pct"]),
                    half_step(match["tok"]),
                )
            )
        # Any other line (the `Estimated usage by category` heading, an `Auto-compact
        # window: 200k tokens` note quoted from some 2.1.x build) carries no row; it is ignored.
    return index + 1


def _read_screen_sections(lines: Sequence[str], parsed: Parsed) -> None:
    """Per-item detail sections: `Title · hint` headings, optional group lines, tree items.

    Only `name: N tokens` items are read; the 2.1.207+ summaries (`└ 52 tools · 0 tokens`) and
    2.1.69's bare on-demand tool names do not match. A ≤ 2.0.x item wrapped mid-path does not
    match either, and the lines that continue it are skipped. Any other line ends the section:
    items under a heading we do not know must not be counted as the previous section's.
    """
    kind: SectionKind | None = None
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


def _screen_item(kind: SectionKind, name: str, tokens: str, group: str | None) -> RawItem:
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
    return RawItem(kind, name, parse_tokens(tokens), group)


# --------------------------------------------------------------------------- markdown

MARKDOWN_TITLE = "## Context Usage"
_MD_MODEL = re.compile(r"^\*\*Model:\*\* (\S+)\s*$")
_MD_TOKENS = re.compile(rf"^\*\*Tokens:\*\* ({TOKEN}) / ({TOKEN}) \((\d+)%\)\s*$")
_MD_CATEGORY_SECTIONS = {"Estimated usage by category", "Categories"}  # "Categories": 2.1.4
_MD_CATEGORY_HEADER = ["Category", "Tokens", "Percentage"]
_MD_TOK = re.compile(rf"^(?P<tok>{TOKEN})$")
_MD_PCT = re.compile(r"^(?P<pct>\d+(?:\.\d+)?)%$")
_MD_ITEM_TOKENS = re.compile(rf"^(?:~|<\s*)?({TOKEN})$")  # `~100`, `< 20` (2.1.207+ skills)
# Section → (kind, name column, source column).
_MD_SECTIONS: dict[str, tuple[SectionKind, str, str]] = {
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
    if not lines or lines[0] != MARKDOWN_TITLE:
        raise ContextParseError("the report does not start with `## Context Usage`")
    parsed = Parsed()
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
            parsed.used, parsed.used_slack = parse_tokens(used), half_step(used)
            parsed.window, parsed.header_pct = parse_tokens(window), int(pct)
        elif row.startswith(("**Tokens:**", "| ")) or (section is None and row.startswith("#")):
            raise ContextParseError(f"unknown line {row!r}")
    return build_snapshot(
        parsed,
        grammar="markdown",
        version=version,
        timestamp=timestamp,
        line=line,
        text_line=text_line,
    )


def _markdown_row(columns: list[str], cells: list[str]) -> Row:
    if columns != _MD_CATEGORY_HEADER or len(cells) != 3:
        raise ContextParseError(f"unknown category table {columns!r}")
    name, tok, pct = cells
    tok_match, pct_match = _MD_TOK.match(tok), _MD_PCT.match(pct)
    if not name or tok_match is None or pct_match is None:
        raise ContextParseError(f"unknown category row {cells!r}")
    return Row(name, parse_tokens(tok), float(pct_match["pct"]), half_step(tok))


def _markdown_item(
    spec: tuple[SectionKind, str, str], columns: list[str], cells: list[str]
) -> RawItem | None:
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
    return RawItem(kind, name, parse_tokens(tokens[1]), record.get(source_column) or None)
