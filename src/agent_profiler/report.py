"""`agent-profiler report`: one self-contained HTML page with an Overview and a
Context view per session, for people who would rather look than read.

Built from the same model as the trace (no second parser), and from the same
numbers as `agent-profiler summary` (`summarise_all`), so the page, the summary
and the trace never disagree (the peak is summary's: the largest response prompt;
the trace's `Context size` counter also holds compactions' pre_tokens, which the
chart's line shows):

- Overview: one row per session (subagents indented under their parent) with
  harness, model, responses, peak `Context size`, window, fill, compactions,
  subagents and a horizontal bar of the latest recorded composition.
- Context view: the composition over time as a stacked area chart (categories in
  TRACE_CONTRACT §6 order, one colour and one pattern per category across the
  page), the reported `Context size` as a line on the same axis (exactly the
  trace's counter samples: each response's prompt tokens at its start, compaction
  pre/post), the window as a dashed line (named instead when it is far above the
  data), compactions and model changes marked;
  then the largest additions, the compactions and every snapshot as tables.

Charts are inline SVG generated here rather than a vendored charting library:
the drawing needs only rectangles, step paths and text, and a library would add
JavaScript (and its licence) to a page that must open offline, print, and be
safe to attach to a bug report. The page has no script at all, and its
Content-Security-Policy forbids every fetch, so opening it cannot touch the
network. Drawings are downsampled to at most `MAX_POINTS` points per series;
tables always hold the exact numbers.
"""

from __future__ import annotations

import bisect
import html
import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO

from agent_profiler import __version__
from agent_profiler.model import (
    AnchorKind,
    Basis,
    Category,
    ContextSnapshot,
    Coverage,
    Session,
    Stage,
)
from agent_profiler.summary import SessionSummary, estimate_error, summarise, summarise_all
from agent_profiler.views import (
    basename,
    context_size_series,
    largest_additions,
    model_runs,
    session_label,
    session_span,
)

DEFAULT_TITLE = "Agent Profiler report"
MAX_POINTS = 400  # per drawn series; a 500-response session is drawn from ≤ 400 samples
LARGEST_ADDITIONS = 20

# One colour and one pattern per category, used by every bar, band and legend of
# the page. Patterns keep the categories apart in greyscale print and for readers
# who do not see the colours apart; the hues are Tableau 10 (+2 light ones).
COLOURS: dict[Category, str] = {
    Category.SYSTEM: "#4e79a7",
    Category.RULES: "#9c755f",
    Category.SKILLS: "#edc948",
    Category.TOOLS: "#76b7b2",
    Category.ENVIRONMENT: "#59a14f",
    Category.PROMPTS: "#e15759",
    Category.ASSISTANT: "#b07aa1",
    Category.RESULTS: "#f28e2b",
    Category.SUMMARIES: "#8cd17d",
    Category.OVERHEAD: "#a0cbe8",
    Category.MESSAGES: "#ff9da7",
    Category.UNATTRIBUTED: "#bab0ac",
}
_INK = 'stroke="#000" stroke-opacity=".45"'
_DOT = 'fill="#000" fill-opacity=".45"'
PATTERNS: dict[Category, str] = {
    Category.SYSTEM: "",  # plain
    Category.RULES: f'<path d="M-1,1 l2,-2 M0,8 l8,-8 M7,9 l2,-2" {_INK}/>',
    Category.SKILLS: f'<circle cx="4" cy="4" r="1.3" {_DOT}/>',
    Category.TOOLS: f'<path d="M0,4 h8" {_INK}/>',
    Category.ENVIRONMENT: f'<path d="M4,0 v8" {_INK}/>',
    Category.PROMPTS: f'<path d="M0,4 h8 M4,0 v8" {_INK}/>',
    Category.ASSISTANT: f'<path d="M-1,7 l2,2 M0,0 l8,8 M7,-1 l2,2" {_INK}/>',
    Category.RESULTS: (f'<path d="M0,0 l8,8 M8,0 l-8,8" {_INK} stroke-width=".6"/>'),
    Category.SUMMARIES: f'<circle cx="4" cy="4" r="2.2" {_DOT}/>',
    Category.OVERHEAD: f'<path d="M0,2 h3 M4,6 h3" {_INK}/>',
    Category.MESSAGES: f'<path d="M0,8 l8,-8" {_INK} stroke-width="2"/>',
    Category.UNATTRIBUTED: (
        f'<circle cx="2" cy="2" r=".8" {_DOT}/><circle cx="6" cy="6" r=".8" {_DOT}/>'
    ),
}

BASIS_WORDS = {
    Basis.CHARS: "text estimates, characters ÷ 4 per journal item, rounded up",
    Basis.CALIBRATED: (
        "text estimates, characters per content class ÷ that class's calibrated characters "
        "per token, rounded up per journal item"
    ),
    Basis.NATIVE_BYTES: "the harness's own request bytes ÷ 4 per category",
    Basis.NATIVE_SUMMARY: "the harness's own per-category counts",
}
ESTIMATE_CAVEAT = "These are not tokenizer counts: the final request may differ."
COVERAGE_WORDS = {
    Coverage.PARTIAL: "partial: the journal does not hold everything the model saw (typically "
    "the system prompt and tool definitions); that part is shown as Unattributed, inferred as "
    "reported − estimated at the first request and measured again after a compaction",
    Coverage.COMPLETE: "complete: every item of the request is estimated",
}
STAGE_WORDS = {
    Stage.REQUEST_INPUT: "the request as the harness sent it",
    Stage.CAPTURE_START: "the context at the start of the capture",
    Stage.TRANSCRIPT_OBSERVED: "the transcript the journal recorded, not the request itself",
}

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
td.at { white-space: nowrap; }
td small { display: block; font-size: 12px; }
small.model { overflow-wrap: anywhere; color: var(--muted); }
td.id { overflow-wrap: anywhere; min-width: 17ch; }
table.overview { width: 100%; }
tr.depth-1 td.id { padding-left: 26px; }
tr.depth-2 td.id { padding-left: 44px; }
tr.depth-3 td.id { padding-left: 62px; }
.overview td.bar { width: 270px; min-width: 220px; }
.overview th { vertical-align: bottom; }
.overview td.bar svg { display: block; width: 100%; height: auto; }
.shares { font-size: 12px; color: var(--muted); }
.numbers { display: flex; flex-wrap: wrap; gap: 6px 26px; margin: 8px 0; padding: 0; }
.numbers div { display: flex; flex-direction: column; }
.numbers dt { font-size: 12px; color: var(--muted); }
.numbers dd { margin: 0; font-size: 17px; font-variant-numeric: tabular-nums; }
figure { margin: 10px 0; }
figure svg.chart { display: block; width: 100%; height: auto; }
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


# --------------------------------------------------------------------------- formatting


def _e(text: object) -> str:
    """Escape for text and attributes alike: journals are untrusted input."""
    return html.escape(str(text), quote=True)


def _n(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _window_origin(source: str | None) -> str:
    """Where a session's window came from (its `window_source`), for labels: read from the
    journal, taken from the harness's own per-model table (Gemini CLI's `tokenLimit()`,
    Muse's model list), or assumed (a default, or no source at all)."""
    if source and source.startswith("journal"):
        return "journal"
    if source and not source.startswith("assumed"):
        return "model table"
    return "assumed"


def _window_note(session: Session) -> str:
    origin = _window_origin(session.window_source)
    return "" if origin == "journal" else f" ({origin})"


def _pct(value: float) -> str:
    # A share that rounds to 0% but is not nothing says so.
    return "<1%" if 0 < value < 0.005 else f"{100 * value:.0f}%"


def _short_tokens(value: float) -> str:
    """Axis tick labels: 0, 500, 50k, 1.5M."""
    if value >= 1_000_000:
        return f"{value / 1_000_000:g}M"
    if value >= 1_000:
        return f"{value / 1_000:g}k"
    return f"{value:g}"


def _clock(ns: int) -> str:
    """Elapsed time as h:mm:ss (tables)."""
    seconds = max(0, ns) // 1_000_000_000
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _duration(seconds: float) -> str:
    """Elapsed time in words (axis ticks, headers): 0, 30 s, 5 min, 1 h 30 min."""
    whole = round(seconds)
    if whole == 0:
        return "0"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = []
    if hours:
        parts.append(f"{hours} h")
    if minutes:
        parts.append(f"{minutes} min")
    if secs and not hours:
        parts.append(f"{secs} s")
    return " ".join(parts) or "0"


def _utc(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


# --------------------------------------------------------------------------- the numbers


def ordered_snapshots(session: Session) -> list[ContextSnapshot]:
    return sorted(session.snapshots, key=lambda x: x.time_ns)


def snapshot_place(session: Session) -> dict[int, str]:
    """id(snapshot) → where it was taken, in words ("request 12", "compaction 1")."""
    requests = {r.id: index for index, r in enumerate(session.responses, start=1)}
    compactions = {c.id: index for index, c in enumerate(session.compactions, start=1)}
    places: dict[int, str] = {}
    for snapshot in session.snapshots:
        if snapshot.anchor is AnchorKind.RESPONSE and snapshot.anchor_id in requests:
            places[id(snapshot)] = f"request {requests[snapshot.anchor_id]}"
        elif snapshot.anchor is AnchorKind.COMPACTION and snapshot.anchor_id in compactions:
            places[id(snapshot)] = f"compaction {compactions[snapshot.anchor_id]}"
        else:
            places[id(snapshot)] = "session"
    return places


def latest_composition(row: SessionSummary) -> list[tuple[Category, int, float]]:
    """(category, tokens, share of the measured composition) in contract order; shares of
    the estimate's total, not of the window."""
    total = sum(row.end_categories.values())
    if not total:
        return []
    return [
        (category, row.end_categories[category.value], row.end_categories[category.value] / total)
        for category in Category
        if row.end_categories.get(category.value)
    ]


def estimation_words(session: Session) -> list[str]:
    """The estimation basis and coverage of the session's snapshots, in sentences."""
    snapshots = session.snapshots
    if not snapshots:
        return ["No context composition was recorded for this session."]
    sentences: list[str] = []
    bases = sorted({x.basis for x in snapshots}, key=list(Basis).index)
    sentences.append("Composition: " + "; ".join(BASIS_WORDS[b] for b in bases) + ".")
    if any(b is not Basis.NATIVE_SUMMARY for b in bases):
        sentences.append(ESTIMATE_CAVEAT)
    stages = sorted({x.item_stage or x.stage.value for x in snapshots})
    # Post-compaction snapshots say nothing about the source beyond "after a compaction".
    described = [words for stage, words in STAGE_WORDS.items() if stage.value in stages]
    if described:
        sentences.append("Items are read from " + "; ".join(described) + ".")
    coverages = sorted({x.coverage for x in snapshots}, key=list(Coverage).index)
    sentences.append("Coverage: " + "; ".join(COVERAGE_WORDS[c] for c in coverages) + ".")
    last = next((x for x in reversed(ordered_snapshots(session)) if x.reported_tokens), None)
    if last is not None and last.reported_tokens:
        sentences.append(
            f"At the last request with both, the estimate is {last.estimated_tokens:,} of "
            f"{last.reported_tokens:,} reported tokens "
            f"({_pct(last.estimated_tokens / last.reported_tokens)}); the reported "
            "Context size is never scaled to match."
        )
    error = estimate_error(session)
    if error.median is not None and error.worst is not None:
        sentences.append(
            f"Estimate error over {error.requests:,} requests after the first: median "
            f"{_pct(error.median)}, worst {_pct(error.worst)} of the reported size."
        )
    if session.unmeasured:
        seen = ", ".join(f"{kind} × {count:,}" for kind, count in session.unmeasured)
        sentences.append(f"Seen but not estimated: {seen}.")
    return sentences


# --------------------------------------------------------------------------- drawing helpers


def downsample(values: Sequence[int], limit: int = MAX_POINTS) -> list[int]:
    """Indices of the samples to draw: all of them up to `limit`, else the first, the last
    and the lowest and highest of each of limit/2 − 1 equal runs, so peaks and the drops
    of compactions survive. Only the drawing uses this; tables list every sample."""
    count = len(values)
    if count <= limit:
        return list(range(count))
    buckets = max(1, limit // 2 - 1)
    keep = {0, count - 1}
    for bucket in range(buckets):
        lo = 1 + bucket * (count - 2) // buckets
        hi = 1 + (bucket + 1) * (count - 2) // buckets
        if lo >= hi:
            continue
        run = range(lo, hi)
        keep.add(min(run, key=lambda i: values[i]))
        keep.add(max(run, key=lambda i: values[i]))
    return sorted(keep)


def nice_step(span: float, ticks: int = 5) -> float:
    """A 1/2/2.5/5 × 10^k step giving about `ticks` intervals over `span`."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    magnitude = 10.0 ** int(f"{raw:e}".split("e")[1])
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * magnitude:
            return float(factor * magnitude)
    return 10 * magnitude  # pragma: no cover


_TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600)


def time_step(seconds: float, ticks: int = 8) -> int:
    for step in _TIME_STEPS:
        if seconds / step <= ticks:
            return step
    return 43200 * math.ceil(seconds / 43200 / ticks)


def _f(value: float) -> str:
    """SVG coordinates with one decimal and no trailing zeros (small files)."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def swatch(category: Category, size: int = 14) -> str:
    return (
        f'<svg width="{size}" height="{size}" viewBox="0 0 {size} {size}" aria-hidden="true">'
        f'<rect width="{size}" height="{size}" fill="url(#cat-{category.value})" '
        'stroke="#333" stroke-width=".6"/></svg>'
    )


def pattern_defs() -> str:
    """One hidden SVG holding each category's fill (colour + pattern), referenced by id
    from every chart of the page."""
    patterns = "".join(
        f'<pattern id="cat-{c.value}" width="8" height="8" patternUnits="userSpaceOnUse">'
        f'<rect width="8" height="8" fill="{COLOURS[c]}"/>{PATTERNS[c]}</pattern>'
        for c in Category
    )
    return f'<svg class="defs" aria-hidden="true" focusable="false"><defs>{patterns}</defs></svg>'


def composition_bar(parts: list[tuple[Category, int, float]], width: int = 270) -> str:
    """The Overview's horizontal bar; a segment is labelled inside when there is room."""
    height = 22
    out = [
        f'<svg class="composition" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="latest composition">'
    ]
    x = 0.0
    for category, tokens, share in parts:
        w = share * width
        out.append(
            f'<rect class="segment" data-category="{category.value}" x="{_f(x)}" y="0" '
            f'width="{_f(w)}" height="{height}" fill="url(#cat-{category.value})" '
            f'stroke="#fff" stroke-width=".8"><title>{_e(category.label)}: {tokens:,} tokens '
            f"({_pct(share)})</title></rect>"
        )
        label = f"{category.label} {_pct(share)}"
        if w >= 6.2 * len(label) + 8:
            text = label
        elif w >= 30:
            text = _pct(share)
        else:
            text = ""
        if text:
            out.append(
                f'<text class="halo" x="{_f(x + w / 2)}" y="15" text-anchor="middle">'
                f"{_e(text)}</text>"
            )
        x += w
    out.append("</svg>")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class _Frame:
    """The plot area of a chart and its mappings from (time, tokens) to SVG units."""

    t0: int
    t1: int
    y_max: float
    left: float = 62
    right: float = 1036
    top: float = 26
    bottom: float = 336

    def x(self, ns: int) -> float:
        return self.left + (ns - self.t0) / max(1, self.t1 - self.t0) * (self.right - self.left)

    def y(self, tokens: float) -> float:
        return self.bottom - tokens / self.y_max * (self.bottom - self.top)


def _step_path(points: Sequence[tuple[float, float]], x_end: float) -> str:
    """A step line through (x, y) points, each value held until the next point (as a
    counter holds its value), the last one until x_end."""
    if not points:
        return ""
    parts = [f"M{_f(points[0][0])},{_f(points[0][1])}"]
    for (_, y), (nx, ny) in itertools.pairwise(points):
        parts.append(f"H{_f(nx)}")
        if _f(ny) != _f(y):
            parts.append(f"V{_f(ny)}")
    parts.append(f"H{_f(x_end)}")
    return "".join(parts)


def _band_path(
    xs: Sequence[float], lower: Sequence[float], upper: Sequence[float], x_end: float
) -> str:
    """A stacked step band: the upper edge left to right, the lower edge back."""
    top = _step_path(list(zip(xs, upper, strict=True)), x_end)
    back = [f"V{_f(lower[-1])}"]
    for index in range(len(xs) - 1, -1, -1):
        back.append(f"H{_f(xs[index])}")
        if index and _f(lower[index - 1]) != _f(lower[index]):
            back.append(f"V{_f(lower[index - 1])}")
    return top + "".join(back) + "Z"


# --------------------------------------------------------------------------- the chart


def context_chart(
    session: Session, window: int | None, places: dict[int, str], limit: int = MAX_POINTS
) -> tuple[str, list[Category], bool]:
    """The Context view's SVG, the categories it stacks and whether it draws the window line
    (for its legend)."""
    snapshots = ordered_snapshots(session)
    sizes = context_size_series(session)
    t0, t1 = session_span(session)
    if t1 <= t0:
        t1 = t0 + 1_000_000_000
    stacked = [c for c in Category if any(dict(x.categories).get(c) for x in snapshots)]
    totals = [x.estimated_tokens for x in snapshots]
    compactions = session.compactions
    data_top = max([*totals, *(v for _, v in sizes), 1])
    # A window far above the data (a 1M-token window, a 20k-token session) would flatten
    # the chart into a sliver: it is then named at the top instead of drawn.
    window_drawn = bool(window) and (window or 0) <= 2.5 * data_top
    y_top = max(data_top, window or 0) if window_drawn else data_top
    step = max(1.0, nice_step(y_top * 1.04))
    y_max = step * -(-y_top * 1.04 // step)
    frame = _Frame(t0, t1, y_max)
    width, height = 1100, 380
    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="Context composition over time: {_e(session.session_id)}">'
    ]
    # Grid and y axis.
    for index in range(round(y_max / step) + 1):
        tick = index * step
        y = frame.y(tick)
        out.append(
            f'<line class="grid" x1="{_f(frame.left)}" x2="{_f(frame.right)}" y1="{_f(y)}" '
            f'y2="{_f(y)}" stroke="#e3e3e8"/>'
            f'<text x="{_f(frame.left - 6)}" y="{_f(y + 4)}" text-anchor="end">'
            f"{_short_tokens(tick)}</text>"
        )
    out.append(
        f'<text x="14" y="{_f((frame.top + frame.bottom) / 2)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_f((frame.top + frame.bottom) / 2)})">tokens</text>'
    )
    # X axis: elapsed time since the session start.
    seconds = (t1 - t0) / 1e9
    every = time_step(seconds)
    mark = 0
    while mark <= seconds + 1e-9:
        x = frame.x(t0 + mark * 1_000_000_000)
        out.append(
            f'<line x1="{_f(x)}" x2="{_f(x)}" y1="{_f(frame.bottom)}" '
            f'y2="{_f(frame.bottom + 5)}" stroke="#333"/>'
            f'<text x="{_f(x)}" y="{_f(frame.bottom + 18)}" text-anchor="middle">'
            f"{_duration(mark)}</text>"
        )
        mark += every
    out.append(
        f'<text x="{_f((frame.left + frame.right) / 2)}" y="{height - 8}" '
        f'text-anchor="middle">time since session start ({_e(_utc(t0))})</text>'
    )
    # Stacked composition, drawn from at most `limit` snapshots.
    if snapshots:
        keep = downsample(totals, limit)
        drawn = [snapshots[i] for i in keep]
        xs = [frame.x(x.time_ns) for x in drawn]
        # A last snapshot taken at the session's very end would hold for no time at all:
        # give it a few units of width so it is seen.
        x_end = max(frame.x(t1), xs[-1] + 6)
        base = [0] * len(drawn)
        for category in stacked:
            values = [dict(x.categories).get(category, 0) for x in drawn]
            upper = [b + v for b, v in zip(base, values, strict=True)]
            path = _band_path(xs, [frame.y(b) for b in base], [frame.y(u) for u in upper], x_end)
            out.append(
                f'<path class="band" data-category="{category.value}" d="{path}" '
                f'fill="url(#cat-{category.value})" stroke="#fff" stroke-width=".5">'
                f"<title>{_e(category.label)} (estimated)</title></path>"
            )
            out.append(_band_label(category, xs, x_end, base, upper, frame))
            base = upper
    # Window, Context size, markers on top of the bands.
    label = f"window {window or 0:,}" + (
        _window_note(session) if window == session.window_tokens else ""
    )
    taken: list[tuple[float, float]] = []  # label extents along the top, so none overlap
    if window and window_drawn:
        y = frame.y(window)
        out.append(
            f'<line class="window-line" x1="{_f(frame.left)}" x2="{_f(frame.right)}" '
            f'y1="{_f(y)}" y2="{_f(y)}" stroke="#333" stroke-width="1.5" '
            f'stroke-dasharray="7 5"><title>{_e(label)}</title></line>'
            f'<text class="halo" x="{_f(frame.left + 6)}" y="{_f(y - 5)}">{_e(label)}</text>'
        )
    elif window:
        # Top left, where compaction labels are rarest; they give way to it.
        note = f"↑ {label}: far above this chart"
        taken.append((frame.left, frame.left + 6.6 * len(note)))
        out.append(
            f'<text class="halo window-note" x="{_f(frame.left)}" y="{_f(frame.top - 6)}">'
            f"{_e(note)}</text>"
        )
    for index, compaction in enumerate(compactions, start=1):
        x0, x1 = frame.x(compaction.start_ns), frame.x(compaction.end_ns)
        what = (
            f"compaction {index}: {compaction.kind}"
            + (f", {compaction.trigger}" if compaction.trigger else "")
            + f", {_n(compaction.pre_tokens)} → {_n(compaction.post_tokens)} tokens"
        )
        label = _marker_label(x0, frame.top - 6, (f"▼ compaction {index}", f"▼{index}"), taken)
        out.append(
            f'<g class="marker compaction"><title>{_e(what)}</title>'
            f'<rect x="{_f(x0)}" y="{_f(frame.top)}" width="{_f(max(x1 - x0, 0))}" '
            f'height="{_f(frame.bottom - frame.top)}" fill="#000" fill-opacity=".07"/>'
            f'<line x1="{_f(x0)}" x2="{_f(x0)}" y1="{_f(frame.top)}" y2="{_f(frame.bottom)}" '
            f'stroke="#b00020" stroke-width="1.5" stroke-dasharray="2 3"/>{label}</g>'
        )
    taken = []
    for when, model in model_runs(session)[1:]:  # the first model is not a change
        x = frame.x(when)
        label = _marker_label(x, frame.top + 10, (f"model → {model}", "model →"), taken)
        out.append(
            f'<g class="marker model-change"><title>model → {_e(model)}</title>'
            f'<line x1="{_f(x)}" x2="{_f(x)}" y1="{_f(frame.top)}" y2="{_f(frame.bottom)}" '
            f'stroke="#333" stroke-width="1.5" stroke-dasharray="8 3 2 3"/>{label}</g>'
        )
    if sizes:
        keep = downsample([v for _, v in sizes], limit)
        points = [(frame.x(sizes[i][0]), frame.y(sizes[i][1])) for i in keep]
        out.append(
            f'<path class="size-line" d="{_step_path(points, frame.x(t1))}" fill="none" '
            'stroke="#111" stroke-width="2" stroke-linejoin="round">'
            "<title>Context size (reported request input)</title></path>"
        )
    if session.responses:
        # The peak marked is the Overview's (the largest response prompt), not a compaction's
        # pre_tokens, which the line also shows.
        peak = max(session.responses, key=lambda r: r.usage.prompt_tokens)
        px, py = frame.x(peak.start_ns), frame.y(peak.usage.prompt_tokens)
        anchor = "end" if px > (frame.left + frame.right) / 2 else "start"
        dx = -6 if anchor == "end" else 6
        out.append(
            f'<circle cx="{_f(px)}" cy="{_f(py)}" r="3.5" fill="#111"/>'
            f'<text class="halo peak" x="{_f(px + dx)}" y="{_f(py - 7)}" '
            f'text-anchor="{anchor}">peak Context size {peak.usage.prompt_tokens:,}</text>'
        )
    # Axes last, so bands never hide them.
    out.append(
        f'<path d="M{_f(frame.left)},{_f(frame.top)}V{_f(frame.bottom)}H{_f(frame.right)}" '
        'fill="none" stroke="#333"/>'
    )
    if snapshots:
        out.append(
            _hover_columns(
                snapshots, keep_all=downsample(totals, limit), frame=frame, places=places, t1=t1
            )
        )
    if not snapshots and not sizes:
        out.append(
            f'<text x="{_f((frame.left + frame.right) / 2)}" y="{_f(frame.bottom / 2)}" '
            'text-anchor="middle">nothing recorded to draw</text>'
        )
    out.append("</svg>")
    return "".join(out), stacked, window_drawn


def _marker_label(
    x: float, y: float, texts: tuple[str, ...], taken: list[tuple[float, float]]
) -> str:
    """The first of `texts` (long to short) that fits beside the marker at x without
    overlapping an earlier label, or none (the marker's tooltip still names it)."""
    for text in texts:
        width = 6.6 * len(text)
        # Right of the line, or left of it near the chart's right edge.
        left = x + 3 if x + 3 + width <= 1096 else x - 3 - width
        if all(left + width < start or left > end for start, end in taken):
            taken.append((left, left + width))
            return f'<text class="halo" x="{_f(left)}" y="{_f(y)}">{_e(text)}</text>'
    return ""


def _band_label(
    category: Category,
    xs: Sequence[float],
    x_end: float,
    lower: Sequence[int],
    upper: Sequence[int],
    frame: _Frame,
) -> str:
    """Name a band inside itself where the text fits best, when it fits at all: the chart
    then reads without matching colours to the legend."""
    text_width = 6.4 * len(category.label) + 6
    if x_end - xs[0] < text_width:
        return ""
    ends = [*xs[1:], x_end]
    bottoms = [frame.y(value) for value in lower]
    tops = [frame.y(value) for value in upper]
    best: tuple[float, float, float] | None = None  # room, x, y
    for index in range(len(xs)):
        centre = min(
            max((xs[index] + ends[index]) / 2, xs[0] + text_width / 2),
            min(x_end, frame.right) - text_width / 2,
        )
        left, right = centre - text_width / 2, centre + text_width / 2
        # The steps under the text: xs and ends are sorted, so they are one run.
        under = range(bisect.bisect_right(ends, left), bisect.bisect_left(xs, right))
        if not under:
            continue
        # The room is what every step under the text leaves free inside the band.
        floor = min(bottoms[i] for i in under)
        ceiling = max(tops[i] for i in under)
        room = floor - ceiling
        if best is None or room > best[0] + 0.5:
            best = (room, centre, (floor + ceiling) / 2 + 4)
    if best is None or best[0] < 14:
        return ""
    return (
        f'<text class="halo band-label" x="{_f(best[1])}" y="{_f(best[2])}" '
        f'text-anchor="middle">{_e(category.label)}</text>'
    )


def _hover_columns(
    snapshots: Sequence[ContextSnapshot],
    keep_all: Sequence[int],
    frame: _Frame,
    places: dict[int, str],
    t1: int,
) -> str:
    """Invisible columns over the drawn samples whose tooltips give the exact numbers."""
    out = ['<g class="hover">']
    for position, index in enumerate(keep_all):
        snapshot = snapshots[index]
        x0 = frame.x(snapshot.time_ns)
        nxt = keep_all[position + 1] if position + 1 < len(keep_all) else None
        x1 = frame.x(snapshots[nxt].time_ns) if nxt is not None else frame.x(t1)
        if x1 - x0 < 0.5:
            continue
        lines = [f"{places.get(id(snapshot), '')} · {_clock(snapshot.time_ns - frame.t0)}"]
        if snapshot.reported_tokens is not None:
            lines.append(f"Context size {snapshot.reported_tokens:,} tokens (reported)")
        lines.append(f"estimated {snapshot.estimated_tokens:,} tokens:")
        present = dict(snapshot.categories)
        lines += [f"  {c.label} {present[c]:,}" for c in Category if present.get(c)]
        out.append(
            f'<rect x="{_f(x0)}" y="{_f(frame.top)}" width="{_f(x1 - x0)}" '
            f'height="{_f(frame.bottom - frame.top)}"><title>{_e(chr(10).join(lines))}'
            "</title></rect>"
        )
    out.append("</g>")
    return "".join(out)


def legend(
    categories: Iterable[Category],
    *,
    size: bool = False,
    window: bool = False,
    compaction: bool = False,
    model: bool = False,
) -> str:
    """Swatches of the categories drawn, then the line styles the chart uses (only those)."""
    items = [f"<li>{swatch(c)}<span>{_e(c.label)}</span></li>" for c in categories]
    marks = [
        (
            size,
            '<li><svg width="28" height="14" aria-hidden="true"><path d="M0,7H28" '
            'stroke="#111" stroke-width="2"/></svg><span>Context size (reported)</span></li>',
        ),
        (
            window,
            '<li><svg width="28" height="14" aria-hidden="true"><path d="M0,7H28" '
            'stroke="#333" stroke-width="1.5" stroke-dasharray="7 5"/></svg>'
            "<span>window</span></li>",
        ),
        (
            compaction,
            '<li><svg width="14" height="14" aria-hidden="true"><path d="M7,0V14" '
            'stroke="#b00020" stroke-width="1.5" stroke-dasharray="2 3"/></svg>'
            "<span>compaction</span></li>",
        ),
        (
            model,
            '<li><svg width="14" height="14" aria-hidden="true"><path d="M7,0V14" '
            'stroke="#333" stroke-width="1.5" stroke-dasharray="8 3 2 3"/></svg>'
            "<span>model change</span></li>",
        ),
    ]
    items += [item for wanted, item in marks if wanted]
    return f'<ul class="legend">{"".join(items)}</ul>'


# --------------------------------------------------------------------------- the page


def _depths(sessions: Sequence[Session]) -> dict[str, int]:
    by_id = {s.session_id: s for s in sessions}
    depths: dict[str, int] = {}
    for session in sessions:
        depth, parent, seen = 0, session.parent_session, {session.session_id}
        while parent is not None and parent in by_id and parent not in seen:
            seen.add(parent)
            depth += 1
            parent = by_id[parent].parent_session
        depths[session.session_id] = depth
    return depths


def _rows(sessions: Sequence[Session], window: int | None) -> list[tuple[SessionSummary, Session]]:
    """summarise_all's rows (subagents after their parent) paired with their sessions; a
    session summarise_all leaves out (a parent cycle) still gets its own row."""
    by_id: dict[str, Session] = {}
    for session in sessions:
        by_id.setdefault(session.session_id, session)
    rows = [(row, by_id[row.session]) for row in summarise_all(sessions, window=window)]
    covered = {row.session for row, _ in rows}
    rows += [
        (summarise(s, window=window), s) for s in by_id.values() if s.session_id not in covered
    ]
    return rows


def _overview(
    rows: Sequence[tuple[SessionSummary, Session]],
    anchors: dict[str, str],
    depths: dict[str, int],
    children: dict[str, int],
) -> str:
    out = [
        '<section id="overview"><h2>Overview</h2>',
        '<p class="note">Each bar is the session\'s latest recorded composition by category '
        "(at its last request): <strong>shares of the measured composition, not of the "
        "window</strong>. Peak Context size is the largest reported request input (cached "
        "tokens counted once); fill is peak ÷ window, given only when the journal states the "
        "window (or one was given with --window).</p>",
        '<table class="overview"><thead><tr><th>Session</th><th>Harness and model</th>'
        '<th class="num">Responses</th><th class="num">Peak Context size</th>'
        '<th class="num">Window</th><th class="num">Fill</th><th class="num">Compactions</th>'
        '<th class="num">Subagents</th><th>Latest composition (share of estimate)</th>'
        "</tr></thead><tbody>",
    ]
    for row, session in rows:
        depth = min(depths.get(session.session_id, 0), 3)
        name = session.session_id
        parent = session.parent_session
        if depth and parent and name.startswith(parent + "/"):
            # A child id repeats its parent's; the indent already says whose it is.
            name = "…/" + _short_id(name[len(parent) + 1 :])
        else:
            name = _short_id(name)
        if depth:
            name = f"↳ {name}"
            project = '<small class="muted">subagent</small>'
        elif session.project:
            project = f'<small class="muted">{_e(basename(session.project))}</small>'
        else:
            project = ""
        if row.window_tokens is not None:
            window_cell = _n(row.window_tokens)
        elif session.window_tokens:
            window_cell = (
                f'<span title="{_e(session.window_source or "")}">{session.window_tokens:,}'
                f'<small class="muted">{_window_origin(session.window_source)}</small></span>'
            )
        else:
            window_cell = "unknown"
        fill = (
            _pct(row.peak_fill)
            if row.peak_fill is not None
            else '<span class="muted" title="window not stated in the journal">—</span>'
        )
        parts = latest_composition(row)
        if parts:
            shares = " · ".join(
                f"{c.label} {_pct(s)}" for c, _, s in sorted(parts, key=lambda p: -p[1])[:3]
            )
            bar = f'{composition_bar(parts)}<div class="shares">{_e(shares)}</div>'
        else:
            bar = '<span class="not-recorded">not recorded</span>'
        count = children.get(session.session_id, 0)
        subagents = (
            f'{count}<small class="muted">{row.subagent_calls:,} responses</small>'
            if count
            else "—"
        )
        model = ", ".join(session.models) or "—"
        out.append(
            f'<tr class="depth-{depth}" data-session-id="{_e(session.session_id)}">'
            f'<td class="id"><a href="#{anchors[session.session_id]}" '
            f'title="{_e(session.session_id)}">{_e(name)}</a>{project}</td>'
            f'<td>{_e(session.harness.label)}<small class="model">{_e(model)}</small></td>'
            f'<td class="num" data-key="responses">{row.calls:,}</td>'
            f'<td class="num" data-key="peak">{_n(row.peak_prompt_tokens)}</td>'
            f'<td class="num" data-key="window">{window_cell}</td>'
            f'<td class="num" data-key="fill">{fill}</td>'
            f'<td class="num" data-key="compactions">{row.compactions:,}</td>'
            f'<td class="num" data-key="subagents">{subagents}</td>'
            f'<td class="bar">{bar}</td></tr>'
        )
    out.append("</tbody></table>")
    return "".join(out)


def _listing(names: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit:,} more" if len(names) > limit else "")


def _short_id(session_id: str, limit: int = 16) -> str:
    """A long id (a UUID) shortened like a git hash; the full id stays in the title."""
    return session_id if len(session_id) <= limit else session_id[:8] + "…"


def _number(label: str, value: str, key: str) -> str:
    return f'<div><dt>{_e(label)}</dt><dd data-key="{key}">{value}</dd></div>'


def _context_view(
    row: SessionSummary,
    session: Session,
    anchor: str,
    window: int | None,
    anchors: dict[str, str],
    children: Sequence[Session],
) -> str:
    places = snapshot_place(session)
    t0, t1 = session_span(session)
    label = session_label(session)
    facts = [
        session.harness.label + (f" {session.harness_version}" if session.harness_version else "")
    ]
    facts.append(", ".join(session.models) or "model unknown")
    if session.project:
        facts.append(f"project {basename(session.project)}")
    if session.clock == "synthetic":
        # No times in the journal: a start would be made up, the length comes from durations.
        facts.append("synthetic clock (the journal has no times; laid out from its durations)")
    else:
        facts.append(f"started {_utc(t0)}")
    facts.append(f"lasted {_duration((t1 - t0) / 1e9)}")
    parent = ""
    if session.parent_session:
        target = anchors.get(session.parent_session)
        name = _e(session.parent_session)
        parent = (
            f' · subagent of <a href="#{target}">{name}</a>' if target else f" · subagent of {name}"
        )
    kids = ""
    if children:
        links = ", ".join(
            f'<a href="#{anchors[c.session_id]}">{_e(c.session_id)}</a>' for c in children
        )
        kids = f" · subagents: {links}"
    chart_window = window or session.window_tokens
    window_text = (
        _n(row.window_tokens)
        if row.window_tokens is not None
        else (
            f"{session.window_tokens:,}{_window_note(session)}"
            if session.window_tokens
            else "unknown"
        )
    )
    out = [
        f'<section class="session" id="{anchor}" data-session-id="{_e(session.session_id)}">',
        f'<h2>Context · {_e(label)} <a class="up" href="#overview">↑ Overview</a></h2>',
        f'<p class="muted">{_e(" · ".join(facts))}{parent}{kids}</p>',
        '<dl class="numbers">',
        _number("Responses", f"{row.calls:,}", "responses"),
        _number("Peak Context size (tokens)", _n(row.peak_prompt_tokens), "peak"),
        _number("Final Context size (tokens)", _n(row.final_prompt_tokens), "final"),
        _number("Window (tokens)", _e(window_text), "window"),
        _number("Fill", _pct(row.peak_fill) if row.peak_fill is not None else "—", "fill"),
        _number("Compactions", f"{row.compactions:,}", "compactions"),
        _number("Tool calls", f"{row.tool_calls:,}", "tool-calls"),
        "</dl>",
    ]
    chart, stacked, window_drawn = context_chart(session, chart_window, places)
    changes = model_runs(session)[1:]
    key = legend(
        stacked,
        size=bool(session.responses),
        window=window_drawn,
        compaction=bool(session.compactions),
        model=bool(changes),
    )
    drawn = len(downsample([x.estimated_tokens for x in session.snapshots]))
    sampled = (
        f"; drawn from {drawn} of {len(session.snapshots):,} snapshots (the tables list all)"
        if drawn < len(session.snapshots)
        else ""
    )
    out.append(
        f'<figure>{chart}{key}<figcaption class="note">Bands: the estimated composition at '
        "each snapshot, stacked in the contract's category order (each value holds until the "
        "next snapshot). Line: the reported Context size at each request, as in the trace. "
        f"Hover the chart for the exact numbers of a snapshot{sampled}.</figcaption></figure>"
    )
    out.append('<p class="basis">' + " ".join(_e(s) for s in estimation_words(session)) + "</p>")
    out.append(_additions_table(session, t0, places))
    out.append(_compactions_table(session, t0))
    if changes:
        out.append("<h3>Model changes</h3><ul>")
        out += [f"<li>{_clock(w - t0)}: model → {_e(m)}</li>" for w, m in changes]
        out.append("</ul>")
    out.append(_snapshots_table(session, t0, places))
    out.append("</section>")
    return "".join(out)


def _additions_table(session: Session, t0: int, places: dict[int, str]) -> str:
    additions = largest_additions(session)
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
        tool = (
            f'<span title="{_e(change.source_id)}">{_e(addition.tool.name)}</span>'
            if addition.tool
            else "—"
        )
        out.append(
            f'<tr data-item="{_e(change.id)}"><td class="num">{rank}</td>'
            f'<td class="num" data-key="delta">+{change.delta_tokens:,}</td>'
            f'<td class="num">{_n(change.chars)}</td>'
            f"<td>{swatch(change.category, 10)} {_e(change.category.label)}</td>"
            f"<td>{_e(change.label or change.id)}</td>"
            f'<td data-key="tool">{tool}</td>'
            f'<td class="at">{_e(places[id(addition.snapshot)])}</td>'
            f'<td class="num">{_clock(addition.snapshot.time_ns - t0)}</td></tr>'
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
    for index, c in enumerate(session.compactions, start=1):
        out.append(
            f'<tr><td class="num">{index}</td><td>{_e(c.kind)}</td><td>{_e(c.trigger or "—")}'
            f'</td><td class="num">{_clock(c.start_ns - t0)}</td>'
            f'<td class="num">{_duration((c.end_ns - c.start_ns) / 1e9)}</td>'
            f'<td class="num" data-key="pre">{_n(c.pre_tokens)}</td>'
            f'<td class="num" data-key="post">{_n(c.post_tokens)}</td>'
            f'<td class="num">{c.removed_items:,}</td></tr>'
        )
    out.append("</tbody></table>")
    return "".join(out)


def _snapshots_table(session: Session, t0: int, places: dict[int, str]) -> str:
    snapshots = ordered_snapshots(session)
    if not snapshots:
        return ""
    present = [c for c in Category if any(dict(x.categories).get(c) for x in snapshots)]
    head = "".join(f'<th class="num">{_e(c.label)}</th>' for c in present)
    out = [
        f"<details><summary>Every snapshot ({len(snapshots):,}), in tokens</summary>",
        '<table class="snapshots"><thead><tr><th class="num">Time (h:mm:ss)</th><th>At</th>'
        '<th class="num">Context size (reported)</th><th class="num">Estimated</th>'
        f"{head}</tr></thead><tbody>",
    ]
    for snapshot in snapshots:
        values = dict(snapshot.categories)
        cells = "".join(f'<td class="num">{_n(values.get(c))}</td>' for c in present)
        baseline = " (baseline)" if snapshot.baseline else ""
        out.append(
            f'<tr><td class="num">{_clock(snapshot.time_ns - t0)}</td>'
            f'<td class="at">{_e(places.get(id(snapshot), ""))}{baseline}</td>'
            f'<td class="num">{_n(snapshot.reported_tokens)}</td>'
            f'<td class="num">{snapshot.estimated_tokens:,}</td>{cells}</tr>'
        )
    out.append("</tbody></table></details>")
    return "".join(out)


def render_report(
    sessions: Sequence[Session],
    *,
    title: str = DEFAULT_TITLE,
    window: int | None = None,
    inputs: Sequence[str] = (),
) -> str:
    """The whole HTML document: an Overview of every session, then one Context view each.

    `window` overrides the window for fill and the chart's window line (as `summary
    --window` does); `inputs` are the names shown as the report's sources. Deterministic:
    the same sessions always give the same text.
    """
    rows = _rows(sessions, window)
    anchors = {session.session_id: f"session-{n}" for n, (_, session) in enumerate(rows, 1)}
    depths = _depths([s for _, s in rows])
    ids = set(anchors)
    kids: dict[str, list[Session]] = {}
    for _, session in rows:
        if session.parent_session in ids and session.parent_session is not None:
            kids.setdefault(session.parent_session, []).append(session)
    children = {parent: len(found) for parent, found in kids.items()}
    used = [c for c in Category if any(c.value in row.end_categories for row, _ in rows)] or [
        c for c in Category
    ]
    subagents = sum(1 for _, s in rows if s.is_subagent)
    sources = list(inputs) or sorted({basename(p) for _, s in rows for p in s.sources})
    head = (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        # No fetch of any kind is allowed: the page must open offline and never call home.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="agent-profiler {__version__}">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"
    )
    out = [
        head,
        pattern_defs(),
        f"<header><h1>{_e(title)}</h1>",
        f'<p class="muted">{len(rows):,} session(s) ({subagents} subagent) from '
        f"{_e(_listing(sources)) or 'no input'} · agent-profiler {__version__}. "
        "Sizes are in tokens. Context size is the reported request input (cached tokens "
        "counted once), the same series as the trace's Context size counter; the composition "
        "by category is an estimate (see each session's basis).</p>",
        # The Overview's session links are the table of contents.
        "</header><main>",
        _overview(rows, anchors, depths, children),
        legend(used),
        "</section>",
    ]
    for row, session in rows:
        out.append(
            _context_view(
                row,
                session,
                anchors[session.session_id],
                window,
                anchors,
                kids.get(session.session_id, []),
            )
        )
    if not rows:
        out.append("<p>No sessions.</p>")
    out.append("</main></body></html>\n")
    return "".join(out)


class HtmlReportWriter:
    """`render_report` behind the `Writer` protocol, so the CLI's atomic write serves it."""

    name = "html"
    extension = ".html"
    binary = False

    def __init__(
        self, *, title: str = DEFAULT_TITLE, window: int | None = None, inputs: Sequence[str] = ()
    ) -> None:
        self.title = title
        self.window = window
        self.inputs = tuple(inputs)

    def write(self, sessions: Sequence[Session], stream: IO[bytes]) -> int:
        data = render_report(
            sessions, title=self.title, window=self.window, inputs=self.inputs
        ).encode("utf-8")
        stream.write(data)
        return len(data)
