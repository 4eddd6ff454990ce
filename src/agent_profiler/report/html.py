"""The report's HTML: its stylesheet, the Overview table and each session's Context view
(facts, numbers, chart and legend, estimation sentences, additions, compactions, snapshots).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent_profiler.model import Session
from agent_profiler.report.data import (
    GAP_MIN_NS,
    LARGEST_ADDITIONS,
    Page,
    SessionData,
    estimation_words,
    latest_composition,
)
from agent_profiler.report.fills import legend, swatch
from agent_profiler.report.svg import composition_bar, context_chart
from agent_profiler.report.text import (
    clock_text,
    duration,
    esc,
    number,
    percent,
    short_id,
    utc,
)
from agent_profiler.summary import SessionSummary
from agent_profiler.targets import shown as shown_target
from agent_profiler.views import (
    POST_FROM_NEXT_REQUEST,
    WINDOW_GIVEN,
    basename,
    category_label,
    compactions_after,
    session_label,
)

CSS = """
:root { color-scheme: light; --ink: #1d1d1f; --muted: #5f6368; --rule: #d9d9de; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1240px; padding: 24px 28px 64px; color: var(--ink);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 40px 0 6px; padding-top: 12px; border-top: 2px solid var(--ink); }
h3 { font-size: 15px; margin: 22px 0 6px; }
p, li { max-width: 80ch; }
.muted, .note { color: var(--muted); }
.note { font-size: 13px; }
a { color: #1a56a8; }
h2 a.up { font-size: 13px; font-weight: normal; margin-left: 10px; }
nav ul { display: flex; flex-wrap: wrap; gap: 4px 18px; padding: 0; list-style: none; }
table { border-collapse: collapse; margin: 6px 0 10px; font-variant-numeric: tabular-nums; }
th, td { padding: 4px 7px; border-bottom: 1px solid var(--rule); text-align: left;
  vertical-align: top; }
th { font-weight: 600; border-bottom: 1.5px solid var(--ink); font-size: 13px; }
td.num, th.num { text-align: right; }
td.num { white-space: nowrap; }
td.at, td.category { white-space: nowrap; }
td small { display: block; font-size: 12px; }
small.model { overflow-wrap: anywhere; color: var(--muted); }
td.id { overflow-wrap: anywhere; min-width: 17ch; }
table.overview { width: 100%; }
tr.depth-1 td.id { padding-left: 26px; }
tr.depth-2 td.id { padding-left: 44px; }
tr.depth-3 td.id { padding-left: 62px; }
.overview td.bar { width: 270px; min-width: 130px; }
.overview td.model { min-width: 13ch; }
.overview th, .overview td { padding: 4px 5px; }
.overview th { vertical-align: bottom; }
.overview td.bar svg { display: block; width: 100%; height: auto; }
.shares { font-size: 12px; color: var(--muted); }
.numbers { display: flex; flex-wrap: wrap; gap: 6px 26px; margin: 8px 0; padding: 0; }
.numbers div { display: flex; flex-direction: column; }
.numbers dt { font-size: 12px; color: var(--muted); }
.numbers dd { margin: 0; font-size: 17px; font-variant-numeric: tabular-nums; }
figure { margin: 10px 0; }
/* A narrow window scrolls a wide table or chart sideways instead of cutting it off or
   shrinking the chart's text to a few pixels. */
.scroll, figure { overflow-x: auto; }
figure svg.chart { display: block; width: 100%; min-width: 760px; height: auto; }
svg text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  font-size: 11px; fill: var(--ink); }
svg text.halo { paint-order: stroke; stroke: #fff; stroke-width: 3px; stroke-linejoin: round; }
svg .hover rect { fill: transparent; }
svg .hover rect:hover { fill: rgba(0, 0, 0, .06); }
.legend { display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 6px 0; padding: 0;
  list-style: none; font-size: 13px; }
.legend li { display: flex; align-items: center; gap: 6px; }
.legend svg { flex: none; }
details summary { cursor: pointer; }
.defs { position: absolute; width: 0; height: 0; overflow: hidden; }
@media print {
  body { max-width: none; padding: 0; font-size: 11px; }
  section.session { break-before: page; }
  a { color: inherit; text-decoration: none; }
}
"""


def overview_table(rows: Sequence[str], cost: bool = False) -> str:
    """The Overview's heading, note and table around its rows (`overview_rows`); `cost`:
    their rows have a Cost cell (report --cost)."""
    return "".join([
        '<section id="overview"><h2>Overview</h2>',
        '<p class="note">Each bar is the session\'s latest recorded composition by category '
        "(at its last request): <strong>shares of the estimated composition, not of the "
        "window</strong>, which may explain less than the reported size (each chart hatches "
        "the rest). Peak Context size is the largest reported request input (cached "
        "tokens counted once); fill is peak ÷ window, the window the trace uses: labelled "
        "<em>assumed</em> (a default) or <em>model table</em> (the harness's own) when the "
        "journal does not state it (--window sets it).</p>",
        '<div class="scroll"><table class="overview"><thead><tr><th>Session</th>'
        "<th>Harness and model</th>"
        '<th class="num">Responses</th><th class="num">Peak Context size</th>'
        '<th class="num">Window</th><th class="num">Fill</th><th class="num">Compactions</th>'
        '<th class="num">Subagents</th>',
        '<th class="num" title="as billed, at list price: the receipt under the session\'s '
        'chart">Cost</th>' if cost else "",
        "<th>Latest composition (share of estimate)</th></tr></thead><tbody>",
        *rows,
        "</tbody></table></div>",
    ])  # fmt: skip


def overview_rows(
    shown: Page, receipts: Mapping[str, Mapping[str, Any]] | None = None
) -> list[str]:
    """The Overview table's row of each session of `shown`, in page order; with
    `receipts` (session id → its receipt: report --cost), a Cost cell linking to it."""
    rows, anchors, depths = shown.rows, shown.anchors, shown.depths
    out = []
    for row, session in rows:
        depth = min(depths.get(session.session_id, 0), 3)
        name = session.session_id
        parent = session.parent_session
        if depth and parent and "/" in name:
            # A child id repeats its session's (a subagent's subagent too: `S/a/b` or
            # `S/b`); the indent already says whose it is.
            name = "…/" + short_id(name.rsplit("/", 1)[1])
        else:
            name = short_id(name)
        if depth:
            name = f"↳ {name}"
            project = '<small class="muted">subagent</small>'
        elif session.is_subagent:  # its parent's journal was not read: a row of its own
            project = (
                f'<small class="muted" title="subagent of {esc(session.parent_session)}">'
                "subagent (its parent is not in this report)</small>"
            )
        elif session.project:
            project = f'<small class="muted">{esc(basename(session.project))}</small>'
        else:
            project = ""
        # The summary's window and fill (views.fill_window), labelled when the journal
        # does not state the window: the same numbers as `summary` and the trace.
        origin = _unstated(row)
        label = f'<small class="muted">{origin}</small>' if origin else ""
        if row.window_tokens is not None:
            window_cell = (
                f'<span title="{esc(session.window_source or "")}">{row.window_tokens:,}'
                f"{label}</span>"
                if origin
                else number(row.window_tokens)
            )
        else:
            window_cell = "unknown"
        fill = (
            esc(percent(row.peak_fill)) + label
            if row.peak_fill is not None
            else '<span class="muted" title="no window known">—</span>'
        )
        parts = latest_composition(row)
        if parts:
            shares = " · ".join(
                f"{category_label(c, row.head_name)} {percent(s)}"
                for c, _, s in sorted(parts, key=lambda p: -p[1])[:3]
            )
            bar = (
                f"{composition_bar(parts, head=row.head_name)}"
                f'<div class="shares">{esc(shares)}</div>'
            )
        else:
            bar = '<span class="not-recorded">not recorded</span>'
        count = len(shown.kids.get(session.session_id, ()))
        subagents = (
            f'{count}<small class="muted">{row.subagent_calls:,} responses</small>'
            if count
            else ("0" if row.subagents_not_read else "—")
        )
        if row.subagents_not_read:  # launched, their journals not given: in no number
            subagents += (
                f'<small class="muted" title="pass their files or folder">'
                f"+{row.subagents_not_read:,} not read</small>"
            )
        # Every model in order with the requests it served (window and fill follow it).
        model = (
            ", ".join(f"{m} ×{n:,}" + (f" (window {w:,})" if w else "") for m, n, w in row.models)
            if len(row.models) > 1
            else ", ".join(session.models) or "—"
        )
        out.append(
            f'<tr class="depth-{depth}" data-session-id="{esc(session.session_id)}">'
            f'<td class="id"><a href="#{anchors[session.session_id]}" '
            f'title="{esc(session.session_id)}">{esc(name)}</a>{project}</td>'
            f'<td class="model">{esc(session.harness.label)}'
            f'<small class="model">{esc(model)}</small></td>'
            f'<td class="num" data-key="responses">{row.calls:,}{_unmetered(row)}</td>'
            f'<td class="num" data-key="peak">{number(row.peak_prompt_tokens)}</td>'
            f'<td class="num" data-key="window">{window_cell}</td>'
            f'<td class="num" data-key="fill">{fill}</td>'
            f'<td class="num" data-key="compactions">{row.compactions:,}</td>'
            f'<td class="num" data-key="subagents">{subagents}</td>'
            + (
                _cost_cell(receipts[session.session_id], anchors[session.session_id])
                if receipts is not None
                else ""
            )
            + f'<td class="bar">{bar}</td></tr>'
        )
    return out


def _cost_cell(receipt: Mapping[str, Any], anchor: str) -> str:
    """A session's billed total at list price, linking to its receipt; marked when the
    receipt is incomplete (a model or searches without a price). When none of its
    requests has a price the page does not know what it cost: "no price", not a "$0.00"
    that reads as free."""
    if not receipt["complete"] and not receipt.get("requests_priced", 1):
        return (
            f'<td class="num" data-key="cost"><a href="#{esc(anchor)}-cost" title="none of '
            'its requests has a price: see the receipt">no price</a></td>'
        )
    total = f"${receipt['billed']['total_usd']:,.2f}"
    mark = (
        ""
        if receipt["complete"]
        else '<small class="muted" title="some requests or web searches have no price: see '
        'the receipt">incomplete</small>'
    )
    return f'<td class="num" data-key="cost"><a href="#{esc(anchor)}-cost">{total}</a>{mark}</td>'


def _unstated(row: SessionSummary) -> str:
    """How a row's window is labelled: "" when the journal states it (or --window gave
    it), else where it came from ("assumed", "model table")."""
    return "" if row.window_source in (None, "journal", WINDOW_GIVEN) else row.window_source


def _unmetered(row: SessionSummary) -> str:
    """Beside a Responses count: the responses whose journal records no usage (summary's
    responses_without_usage), which the count leaves out; a page saying "0" alone read as
    a model that never answered."""
    if not row.responses_without_usage:
        return ""
    return (
        f' <small class="muted" title="every usage field 0 in the journal: not counted">'
        f"(+{row.responses_without_usage:,} without usage)</small>"
    )


def _number(label: str, value: str, key: str) -> str:
    return f'<div><dt>{esc(label)}</dt><dd data-key="{key}">{value}</dd></div>'


def context_view(
    data: SessionData,
    anchor: str,
    window: int | None,
    anchors: dict[str, str],
    children: Sequence[Session],
) -> str:
    """One session's section: its facts and numbers, the chart with its legend and caption,
    the estimation sentences, then the additions, compactions, model changes and snapshots."""
    row, session = data.row, data.session
    t0, t1 = data.span
    label = session_label(session)
    facts = [
        session.harness.label + (f" {session.harness_version}" if session.harness_version else "")
    ]
    facts.append(
        ", ".join(
            f"{m} ({n:,} request{'s' if n != 1 else ''}" + (f", window {w:,})" if w else ")")
            for m, n, w in row.models
        )
        if len(row.models) > 1
        else ", ".join(session.models) or "model unknown"
    )
    if session.project:
        facts.append(f"project {basename(session.project)}")
    # A transcript without any time has no durations either: its length would be made up.
    undated = ("clock_durations", "none") in session.facts
    if undated:
        facts.append(
            "synthetic clock (the journal has no times and no durations: its records are "
            "placed 1 ms apart, so how long it lasted is not known)"
        )
    elif session.clock == "synthetic":
        # No times in the journal: a start would be made up, the length comes from durations.
        facts.append(
            "synthetic clock (the journal has no times; laid out from its durations, ending "
            "at the file's modification time)"
        )
    else:
        facts.append(f"started {utc(t0)}")
    if not undated:
        # "17 min 41 s" kept on one line (it broke before "s" at the end of a line)
        facts.append("lasted " + duration((t1 - t0) / 1e9).replace(" ", "\u00a0"))
    parent = ""
    if session.parent_session:
        target = anchors.get(session.parent_session)
        name = esc(session.parent_session)
        parent = (
            f' · subagent of <a href="#{target}">{name}</a>' if target else f" · subagent of {name}"
        )
    kids = ""
    if children:
        links = ", ".join(
            f'<a href="#{anchors[c.session_id]}">{esc(c.session_id)}</a>' for c in children
        )
        kids = f" · subagents: {links}"
    chart_window = window or session.window_tokens
    origin = _unstated(row)
    note = f" ({origin})" if origin else ""
    window_text = number(row.window_tokens) + note if row.window_tokens is not None else "unknown"
    out = [
        f'<section class="session" id="{anchor}" data-session-id="{esc(session.session_id)}">',
        f'<h2>Context · {esc(label)} <a class="up" href="#overview">↑ Overview</a></h2>',
        f'<p class="muted">{esc(" · ".join(facts))}{parent}{kids}</p>',
        '<dl class="numbers">',
        _number("Responses", f"{row.calls:,}" + _unmetered(row), "responses"),
        _number("Peak Context size (tokens)", number(row.peak_prompt_tokens), "peak"),
        _number("Final Context size (tokens)", number(row.final_prompt_tokens), "final"),
        _number("Window (tokens)", esc(window_text), "window"),
        _number(
            "Fill", esc(percent(row.peak_fill)) + note if row.peak_fill is not None else "—", "fill"
        ),
        _number("Compactions", f"{row.compactions:,}", "compactions"),
        _number("Tool calls", f"{row.tool_calls:,}", "tool-calls"),
        # summary's failed_tool_calls: the calls whose result the journal marks an error
        _number("Failed tool calls", f"{row.failed_tool_calls:,}", "failed-tool-calls"),
        "</dl>",
    ]
    chart = context_chart(data, chart_window)
    changes = data.changes
    key = legend(
        data.categories,
        size=bool(session.responses),
        window=chart.window_drawn,
        compaction=bool(session.compactions),
        model=bool(changes),
        unattributed=data.row.head_name,
        unexplained=chart.unexplained,
    )
    drawn = chart.drawn
    sampled = (
        f"; drawn from {drawn} of {len(session.snapshots):,} snapshots (the tables list all)"
        if drawn < len(session.snapshots)
        else ""
    )
    out.append(
        f'<figure>{chart.svg}{key}<figcaption class="note">Bands: the estimated composition at '
        "each snapshot, stacked in the contract's category order (each value holds until the "
        "next snapshot). Line: the reported Context size at each request, as in the trace. "
        + (_UNEXPLAINED_WORDS if chart.unexplained else "")
        + f"Hover the chart for the exact numbers of a snapshot{sampled}.{_gaps_words(chart.gaps)}"
        "</figcaption></figure>"
    )
    out.append('<p class="basis">' + " ".join(esc(s) for s in estimation_words(session)) + "</p>")
    out.append(_additions_table(data, t0))
    out.append(_compactions_table(session, t0))
    if changes:
        out.append("<h3>Model changes</h3><ul>")
        out += [f"<li>{clock_text(w - t0)}: model → {esc(m)}</li>" for w, m in changes]
        out.append("</ul>")
    out.append(_snapshots_table(data, t0))
    out.append("</section>")
    return "".join(out)


_UNEXPLAINED_WORDS = (
    "Hatched, between the bands and the line: the part of the reported size the estimate "
    "does not explain (reported − estimated); where the estimate is the larger, nothing is "
    "drawn there. The estimate is never scaled to match. "
)


def _gaps_words(gaps: Sequence[tuple[int, int]]) -> str:
    """The caption's sentence on a broken time axis (none when it is not), so nobody reads
    a distance across a collapsed idle stretch as time."""
    if not gaps:
        return ""
    one = len(gaps) == 1
    lengths = ", ".join(duration((end - start) / 1e9) for start, end in gaps)
    return esc(
        f" The time axis is broken: {len(gaps)} idle stretch{'' if one else 'es'} over "
        f"{duration(GAP_MIN_NS / 1e9)} with nothing recorded ({lengths}) "
        f"{'is' if one else 'are'} shortened to a narrow grey band{'' if one else ' each'}, "
        f"so distances across {'it' if one else 'them'} are not time; the tick labels are "
        "the true time since the session's start."
    )


def _additions_table(data: SessionData, t0: int) -> str:
    additions, places = data.additions, data.places
    head = "<h3>Largest additions</h3>"
    if not additions:
        return head + (
            '<p class="note">No additions recorded after the first snapshot (the first '
            "snapshot and those after a model change are baselines, never additions).</p>"
        )
    shown = additions[:LARGEST_ADDITIONS]
    out = [
        head,
        f'<p class="note">The {len(shown)} largest of {len(additions):,} additions: items that '
        "grew the context at a snapshot after the first (baselines excluded), with the tool "
        "call that put each there.</p>",
        '<table class="additions"><thead><tr><th class="num">#</th>'
        '<th class="num">Added (tokens)</th><th class="num">Characters</th><th>Category</th>'
        '<th>Item</th><th>Tool</th><th>At</th><th class="num">Time (h:mm:ss)</th>'
        "</tr></thead><tbody>",
    ]
    for rank, addition in enumerate(shown, start=1):
        change = addition.change  # tool: the call whose id is change.source_id (views.py)
        call = addition.tool
        if call is None:
            tool = "—"
        else:
            # What the call acted on (targets.py), and its arguments only when the page
            # was made with --previews (they are in the model only then).
            _, target = shown_target(call.target)
            tool = f'<span title="{esc(change.source_id)}">{esc(call.name)}</span>' + (
                f' <code class="target">{esc(target)}</code>' if target else ""
            )
            if call.args_preview:
                text = "; ".join(f"{k}: {v}" for k, v in call.args_preview)
                tool += f'<div class="args muted">{esc(text)}</div>'

        out.append(
            f'<tr data-item="{esc(change.id)}"><td class="num">{rank}</td>'
            f'<td class="num" data-key="delta">+{change.delta_tokens:,}</td>'
            f'<td class="num">{number(change.chars)}</td>'
            f'<td class="category">{swatch(change.category, 10)} '
            f"{esc(category_label(change.category, data.row.head_name))}</td>"
            f"<td>{esc(change.label or change.id)}</td>"
            f'<td data-key="tool">{tool}</td>'
            f'<td class="at">{esc(places[id(addition.snapshot)])}</td>'
            f'<td class="num">{clock_text(addition.snapshot.time_ns - t0)}</td></tr>'
        )
    out.append("</tbody></table>")
    return "".join(out)


def _compactions_table(session: Session, t0: int) -> str:
    if not session.compactions:
        return ""
    out = [
        "<h3>Compactions</h3>",
        '<table class="compactions"><thead><tr><th class="num">#</th><th>Kind</th>'
        '<th>Trigger</th><th class="num">Time (h:mm:ss)</th><th class="num">Took</th>'
        '<th class="num">Before (tokens)</th><th class="num">After (tokens)</th>'
        '<th class="num">Items removed</th></tr></thead><tbody>',
    ]
    afters = compactions_after(session)
    for index, c in enumerate(session.compactions, start=1):
        after = afters[index - 1]
        post = "—" if after is None else f"{after.tokens:,}"
        # A compaction recorded at one moment (Claude Code's compact_boundary) has no
        # duration in its journal: unknown, not zero.
        took = "—" if c.end_ns == c.start_ns else duration((c.end_ns - c.start_ns) / 1e9)
        if after is not None and after.source == POST_FROM_NEXT_REQUEST:
            post += ' <span class="note">(first request after)</span>'
        out.append(
            f'<tr><td class="num">{index}</td><td>{esc(c.kind)}</td><td>{esc(c.trigger or "—")}'
            f'</td><td class="num">{clock_text(c.start_ns - t0)}</td>'
            f'<td class="num">{took}</td>'
            f'<td class="num" data-key="pre">{number(c.pre_tokens)}</td>'
            f'<td class="num" data-key="post">{post}</td>'
            f'<td class="num">{c.removed_items:,}</td></tr>'
        )
    out.append("</tbody></table>")
    return "".join(out)


def _snapshots_table(data: SessionData, t0: int) -> str:
    snapshots, places, present = data.snapshots, data.places, data.categories
    if not snapshots:
        return ""
    named = data.row.head_name
    head = "".join(f'<th class="num">{esc(category_label(c, named))}</th>' for c in present)
    out = [
        f"<details><summary>Every snapshot ({len(snapshots):,}), in tokens</summary>",
        '<table class="snapshots"><thead><tr><th class="num">Time (h:mm:ss)</th><th>At</th>'
        '<th class="num">Context size (reported)</th><th class="num">Estimated</th>'
        f"{head}</tr></thead><tbody>",
    ]
    for snapshot in snapshots:
        values = dict(snapshot.categories)
        cells = "".join(f'<td class="num">{number(values.get(c))}</td>' for c in present)
        baseline = " (baseline)" if snapshot.baseline else ""
        out.append(
            f'<tr><td class="num">{clock_text(snapshot.time_ns - t0)}</td>'
            f'<td class="at">{esc(places.get(id(snapshot), ""))}{baseline}</td>'
            f'<td class="num">{number(snapshot.reported_tokens)}</td>'
            f'<td class="num">{snapshot.estimated_tokens:,}</td>{cells}</tr>'
        )
    out.append("</tbody></table></details>")
    return "".join(out)
