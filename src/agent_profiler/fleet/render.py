"""The fleet's figures as a terminal page and as one self-contained HTML page with plots
(inline SVG, no scripts, no network), drawn with the report's category fills."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from agent_profiler.console import counted
from agent_profiler.cost import WRITER_OF
from agent_profiler.cost_text import render_receipt
from agent_profiler.model import Category
from agent_profiler.report.text import esc, percent

WRITER_COLOURS = {
    "tool results": "#f28e2b",
    "the model": "#b07aa1",
    "the user": "#e15759",
    "code + disk": "#4e79a7",
    "unattributed": "#bab0ac",
}


def _k(value: float | None) -> str:
    if value is None:
        return "-"
    # 40651.3K was hard to read: millions as M, and 2339.2M as 2.3B.
    if value >= 999_950_000:
        return f"{value / 1_000_000_000:.1f}B"
    if value >= 999_950:
        return f"{value / 1_000_000:.1f}M"
    return f"{value / 1000:.1f}K" if value >= 1000 else f"{value:.0f}"


def _mtime_note(sessions: Mapping[str, Any]) -> str:
    """Said after the dates when some of them are not the journals' own."""
    count = sessions.get("dated_by_file_mtime") or 0
    if not count:
        return ""
    return (
        f" ({counted(count, 'session')} without times in the journal, dated by its file's "
        "modification time: not in these dates)"
    )


def _made_requests(sessions: Mapping[str, Any]) -> str:
    """Said after the session count when some sessions made no request."""
    made = sessions.get("with_requests")
    return (
        f", {made:,} of them made a request"
        if made is not None and made < sessions["count"]
        else ""
    )


def _subagent_requests(requests: Mapping[str, Any]) -> str:
    """The subagents' requests, apart: the count is the main sessions' (as the sessions')."""
    more = requests["with_subagents"] - requests["count"]
    return f" (+{more:,} in subagents)" if more > 0 else ""


NONE = "  (none)"  # under a heading with nothing to show, as the HTML page says it
UNATTRIBUTED = (
    "unattributed: what no journal item explains; mostly the head a journal lacks, the "
    "system prompt and tool schemas, inferred as reported − estimated at the first request "
    "(and again after a compaction, when it also holds what the harness restored)"
)
# How each basis of estimate is said (sessions.estimate_basis, model.Basis values).
_BASES = {
    "chars/4": "characters / 4 per journal item",
    "chars/calibrated-v3": "calibrated characters per token, by kind of text",
    "native-bytes/4": "the harness's own lanes, bytes / 4",
    "native-summary": "the harness's own /context counts",
}


def _estimated(figure: Mapping[str, Any]) -> str:
    """ "estimated: characters / 4 per journal item, not tokenizer counts", naming each basis
    with its sessions when they differ (a figure's `estimate_bases`: who wrote's own)."""
    bases = figure.get("estimate_bases") or {}
    said = [_BASES.get(basis, basis) for basis in bases]
    if len(bases) > 1:
        said = [
            f"{text} ({counted(n, 'session')})"
            for text, n in zip(said, bases.values(), strict=True)
        ]
    return f"estimated: {'; '.join(said)}, not tokenizer counts" if said else "estimated"


def render_text(data: Mapping[str, Any], title: str = "fleet") -> str:
    s, r = data["sessions"], data["requests"]
    if not s["count"] + s["subagents"]:
        # Not a page of empty headings (a --split side, filters that match nothing).
        return f"{title}: no sessions"
    out = [
        f"{title}: {counted(s['count'], 'session')} (+{counted(s['subagents'], 'subagent')})"
        f"{_made_requests(s)}, "
        f"{counted(r['count'], 'request')}{_subagent_requests(r)}, "
        f"{s['first_start'] or '-'} … {s['last_start'] or '-'}" + _mtime_note(s),
        "  by harness: " + ", ".join(f"{k} {v}" for k, v in s["by_harness"].items()),
    ]
    who = data["who_wrote"]
    out.append(
        f"\nwho wrote the end-of-session context (mean over {counted(who['sessions'], 'session')} "
        f"with ≥ {who['min_turns']} requests; {_estimated(who)}):"
    )
    for writer, share in who["by_writer"].items():
        out.append(f"  {writer:<14} {100 * share:5.1f}%")
    if who["by_writer"].get("unattributed"):
        out.append(f"  ({UNATTRIBUTED})")
    if who["by_category"]:
        out.append(
            "  by category: "
            + ", ".join(
                f"{Category(k).label} {100 * v:.1f}%" for k, v in who["by_category"].items()
            )
        )
    else:  # a page of empty headings otherwise (no session that long)
        out.append(NONE)
    out.append("\ncontext by turn (reported input, tokens):")
    out.append("  turn        p50        p90   sessions alive" if data["context_by_turn"] else NONE)
    for row in data["context_by_turn"]:
        out.append(
            f"  {row['turn']:>4} {_k(row['p50']):>10} {_k(row['p90']):>10} "
            f"{row['sessions_alive']:>16,}"
        )
    out += _fill_lines(data["peak_fill"])
    comp = data["compactions"]
    out.append(
        f"\ncompactions: {comp['total']:,} in {comp['sessions_with']:,} of "
        f"{counted(comp['sessions'], 'session')} that made a request; per session: "
        + ", ".join(f"{n}: {count}" for n, count in comp["per_session"].items())
    )
    tools = data["tool_results"]
    out.append(
        f"\ntool results by tool ({tools['calls']:,} calls, {tools['chars']:,} chars, "
        f"{tools['tokens']:,} tokens {tools['tokens_basis']}):"
    )
    # Shares of the fleet's result characters and tokens (the totals are in the heading).
    out.append(
        f"  {'tool':<40} {'calls':>7} {'% chars':>8} {'% tokens':>8}" if tools["by_tool"] else NONE
    )
    for row in tools["by_tool"]:
        out.append(
            f"  {row['tool'][:40]:<40} {row['calls']:>7,} {_share(row['share_chars']):>8} "
            f"{_share(row['share_tokens']):>8}"
        )
    sources = data["sources"]
    out.append(f"\nlargest recurring sources, weighed by {sources['weight']}:")
    for key, label in (
        ("mcp_servers", "MCP servers"),
        ("skills", "skills"),
        ("rule_files", "rule files"),
        ("tools", "tool calls (arguments and results)"),
    ):
        entries = sources[key][:5]
        if entries:
            out.append(f"  {label}: " + "; ".join(_source(e) for e in entries))
    if not out[-1].startswith("  "):  # nothing under the heading
        out.append(NONE)
    if data.get("cost"):
        out.append("\n" + render_receipt("the fleet", data["cost"]))
        for dimension, rows in data["cost"].get("by", {}).items():
            if rows:  # (a dataset whose every request is unpriced has none)
                out.append(f"  the bill as billed, by {dimension}:")
                out += [
                    f"    {row['name'][:40]:<40} {row['requests']:>9,} req  "
                    f"${row['usd']:>10.4f} {_share(row['share']):>7}"
                    for row in rows
                ]
    return "\n".join(out)


# How each window's origin is said beside its sessions' fill.
_WINDOW_WORDS = {
    "journal": "the window the journal states",
    "model table": "the harness's model table",
    "assumed": "an assumed window (a default; the journal does not state it)",
}


def _fill_lines(fill: Mapping[str, Any]) -> list[str]:
    out = ["\npeak fill of the window (each session's largest request ÷ the window in use):"]
    for row in fill["by_window"]:
        out.append(
            f"  against {_WINDOW_WORDS.get(row['window'], row['window'])}: "
            f"{counted(row['sessions'], 'session')}, p50 {percent(row['p50'])}, "
            f"p90 {percent(row['p90'])}, ≥ 90%: {row['over_90']:,}, max {percent(row['max'])}"
        )
    if fill["unknown"]:
        out.append(
            f"  {counted(fill['unknown'], 'session')} without a window known (or collected by "
            "an older version and not read again since)"
        )
    if len(out) == 1:
        out.append(NONE)
    return out


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _source(entry: Mapping[str, Any]) -> str:
    weight = entry["token_requests"]
    return f"{entry['name']} ({counted(entry['sessions'], 'session')}, {_k(weight)})"


# --------------------------------------------------------------------------- HTML

CSS = """
body { margin: 0 auto; max-width: 1100px; padding: 24px; color: #1d1d1f;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
h1 { font-size: 24px; } h2 { font-size: 18px; margin-top: 36px;
  border-top: 2px solid #1d1d1f; padding-top: 10px; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: left; }
td.num, th.num { text-align: right; }
.note { color: #5f6368; font-size: 13px; max-width: 80ch; }
svg text { font: 12px system-ui, sans-serif; }
pre { background: #f6f6f8; padding: 10px; white-space: pre-wrap; overflow-wrap: anywhere; }
svg.defs { position: absolute; width: 0; height: 0; }
"""


def render_html(data: Mapping[str, Any], title: str, split: Mapping[str, Any] | None) -> str:
    from agent_profiler.report.fills import pattern_defs

    parts = [
        "<!doctype html><html lang=en><meta charset=utf-8>",
        # No fetch of any kind: the page opens offline and never calls home (as the report).
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">",
        f"<title>{esc(title)}</title><style>{CSS}</style>{pattern_defs()}<h1>{esc(title)}</h1>",
    ]
    parts += _sections(data)
    if split is not None:
        for side, said in (("before", "Before"), ("after", "From")):
            parts.append(f"<h2>{said} {esc(split['date'])}</h2>")
            parts += _sections(split[side], level=3)
    return "\n".join(parts) + "\n</html>\n"


def _sections(data: Mapping[str, Any], level: int = 2) -> list[str]:
    s, h = data["sessions"], f"h{level}"
    out = [
        f"<p>{counted(s['count'], 'session')} and {counted(s['subagents'], 'subagent')}"
        f"{esc(_made_requests(s))}, "
        f"{counted(data['requests']['count'], 'request')}{_subagent_requests(data['requests'])}, "
        f"{esc(s['first_start'] or '-')} to "
        f"{esc(s['last_start'] or '-')}{esc(_mtime_note(s))}.</p>"
    ]
    who = data["who_wrote"]
    out.append(f"<{h}>Who wrote the end-of-session context</{h}>")
    out.append(_hbar(list(who["by_writer"].items()), WRITER_COLOURS))
    out.append(
        _hbar(
            [(Category(k).label, v) for k, v in who["by_category"].items()],
            # the report's fill of each category (its colour and pattern: fills.pattern_defs)
            {Category(k).label: f"url(#cat-{k})" for k in who["by_category"]},
        )
    )
    unattributed = (
        f" {UNATTRIBUTED[:1].upper()}{UNATTRIBUTED[1:]}."
        if who["by_writer"].get("unattributed")
        else ""
    )
    out.append(
        f"<p class=note>Mean share of the last request's context over "
        f"{counted(who['sessions'], 'session')} with at least {who['min_turns']} requests "
        f"({esc(_estimated(who))}).{esc(unattributed)}</p>"
    )
    out.append(f"<{h}>Context by turn</{h}>")
    out.append(_columns(data["context_by_turn"]))
    out.append(
        "<p class=note>Bars: median reported input at that request, in tokens (K: thousands, "
        "M: millions); tick: p90; under each bar the sessions still alive.</p>"
    )
    fill = data["peak_fill"]
    out.append(f"<{h}>Peak fill of the window</{h}>")
    out.append(
        _table(
            ("window", "sessions", "p50", "p90", "≥ 90%", "max"),
            [
                (
                    _WINDOW_WORDS.get(r["window"], r["window"]),
                    r["sessions"],
                    percent(r["p50"]),
                    percent(r["p90"]),
                    r["over_90"],
                    percent(r["max"]),
                )
                for r in fill["by_window"]
            ],
        )
    )
    out.append(
        "<p class=note>Each session's largest request (reported input) ÷ the window in use "
        "at it; an assumed window is a guess."
        + (
            f" {counted(fill['unknown'], 'session')} without a window known (or collected by "
            "an older version and not read again since)."
            if fill["unknown"]
            else ""
        )
        + "</p>"
    )
    comp = data["compactions"]
    out.append(f"<{h}>Compactions</{h}>")
    out.append(
        f"<p>{counted(comp['total'], 'compaction')} in {comp['sessions_with']:,} of "
        f"{counted(comp['sessions'], 'session')} that made a request.</p>"
    )
    # Counts of sessions, not shares (drawn as 4700% and 30,000 pixels wide).
    per_session = [(f"{n} per session", v) for n, v in comp["per_session"].items()]
    out.append(_hbar(per_session, {}, absolute=True, unit="session"))
    tools = data["tool_results"]
    out.append(f"<{h}>Tool results by tool</{h}>")
    out.append(
        _table(
            ("tool", "calls", "sessions", "chars", "share of chars", "tokens", "share of tokens"),
            [
                (
                    r["tool"],
                    r["calls"],
                    r["sessions"],
                    r["chars"],
                    _share(r["share_chars"]),
                    r["tokens"],
                    _share(r["share_tokens"]),
                )
                for r in tools["by_tool"]
            ],
        )
    )
    sources = data["sources"]
    out.append(f"<{h}>Largest recurring sources</{h}>")
    out.append(f"<p class=note>Weight: {esc(sources['weight'])}.</p>")
    for key, label in (
        ("mcp_servers", "MCP servers"),
        ("skills", "Skills"),
        ("rule_files", "Rule files"),
        ("tools", "Tool calls (arguments and results)"),
    ):
        if sources[key]:
            out.append(f"<h4>{label}</h4>")
            out.append(_hbar([(e["name"], _weight(e)) for e in sources[key][:10]], {}, True))
    if data.get("cost"):
        out.append(f"<{h}>What the context cost</{h}>")
        out.append(f"<pre>{esc(render_receipt('the fleet', data['cost']))}</pre>")
        for dimension, rows in data["cost"].get("by", {}).items():
            if rows:
                out.append(f"<h4>The bill as billed, by {dimension}</h4>")
                out.append(
                    _table(
                        (dimension, "requests", "USD", "share of the priced total"),
                        [
                            (r["name"], r["requests"], f"${r['usd']:,.2f}", _share(r["share"]))
                            for r in rows
                        ],
                    )
                )
    return out


def _weight(entry: Mapping[str, Any]) -> float:
    return float(entry["token_requests"] or 0)


# A bar chart's room: labels left of LABEL_ROOM, bars up to BAR_ROOM long, and after the
# longest bar room for its value ("2,339.2M", "12,345 sessions": at most 8 px a character).
LABEL_ROOM, BAR_ROOM, VALUE_ROOM, LABEL_CHARS = 250, 560, 140, 34


def _hbar(
    items: Sequence[tuple[str, float]],
    colours: Mapping[str, str],
    absolute: bool = False,
    unit: str | None = None,
) -> str:
    """One horizontal bar per item (shares, or absolute values scaled to the largest:
    tokens, or counts of `unit`). A label longer than LABEL_CHARS is cut with "…", the
    whole of it in the label's tooltip."""
    if not items:
        return "<p class=note>(none)</p>"
    top = max(v for _, v in items) or 1
    row = 20
    svg = [
        f'<svg width="{LABEL_ROOM + BAR_ROOM + VALUE_ROOM}" height="{row * len(items) + 4}" '
        'role="img">'
    ]
    for index, (label, value) in enumerate(items):
        y = index * row + 2
        w = (value / top if absolute else value) * BAR_ROOM
        text = (counted(int(value), unit) if unit else _k(value)) if absolute else percent(value)
        name = str(label)
        shown = name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"
        svg.append(
            f'<text x="0" y="{y + 14}"><title>{esc(name)}</title>{esc(shown)}</text>'
            f'<rect x="{LABEL_ROOM}" y="{y + 2}" width="{w:.1f}" height="{row - 5}" '
            f'fill="{colours.get(label, "#76b7b2")}">'
            f"<title>{esc(label)}: {esc(text)}</title></rect>"
            f'<text x="{LABEL_ROOM + w + 4:.1f}" y="{y + 14}">{esc(text)}</text>'
        )
    svg.append("</svg>")
    return "".join(svg)


def _columns(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return "<p class=note>(no requests)</p>"
    top = max(r["p90"] for r in rows) or 1
    # `base`: the bars' foot; above the tallest tick, room for a value drawn over it.
    height, col, base = 220, 80, 236
    svg = [f'<svg width="{col * len(rows) + 20}" height="{base + 50}" role="img">']
    for index, r in enumerate(rows):
        x = 10 + index * col
        h50 = r["p50"] / top * height
        h90 = r["p90"] / top * height
        # The median's value above its bar, or above the p90 tick when that is close
        # enough to the bar for the two to overlap.
        label = base - (h50 if h90 - h50 >= 14 else h90) - 4
        svg.append(
            f'<rect x="{x}" y="{base - h50:.1f}" width="{col - 20}" height="{h50:.1f}" '
            f'fill="#4e79a7"><title>turn {r["turn"]}: p50 {r["p50"]:,}, p90 {r["p90"]:,}'
            "</title></rect>"
            f'<line x1="{x}" x2="{x + col - 20}" y1="{base - h90:.1f}" y2="{base - h90:.1f}" '
            'stroke="#1d1d1f" stroke-dasharray="3 2"/>'
            f'<text x="{x}" y="{label:.1f}">{_k(r["p50"])}</text>'
            f'<text x="{x}" y="{base + 16}">turn {r["turn"]}</text>'
            f'<text x="{x}" y="{base + 32}">{r["sessions_alive"]:,} alive</text>'
        )
    svg.append("</svg>")
    return "".join(svg)


# A cell that is a number written out: `$12.34`, `42.1%`, `<0.1%`, `-`.
_NUMBER = re.compile(r"\$[\d,]+\.\d+|<?[\d.]+%|-")


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A table whose counts, dollars and shares are right-aligned, so their digits line up."""
    cells = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td class=num>{v:,}</td>"
            if isinstance(v, int)
            else f"<td class=num>{esc(v)}</td>"
            if _NUMBER.fullmatch(str(v))
            else f"<td>{esc(v)}</td>"
            for v in row
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><tr>{cells}</tr>{body}</table>"


__all__ = ["WRITER_OF", "render_html", "render_text"]
