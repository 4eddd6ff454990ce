"""`agent-profiler report`: one self-contained HTML page, an Overview and a Context view per
session; this package's entry point assembles the page (`render_report`) and writes it.

Its rooms: `data.py` computes what each session shows (rows, compositions, places,
sentences; no HTML), `svg.py` draws the charts (`timeaxis.py`: the Context chart's time
axis, its map and ticks; `fills.py`: each category's colour and pattern, the legends),
`html.py` writes the stylesheet, tables and sections, `text.py` how numbers, times and
untrusted text are written.

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
  pre/post), what the estimate leaves of it hatched between the two (reported −
  estimated, where positive: the estimate is never scaled to meet the line), the
  window as a dashed line (named instead when it is far above the data), compactions
  and model changes marked;
  then the largest additions, the compactions and every snapshot as tables.

The chart's x axis is the time since the session's start. A long idle stretch (nothing
recorded: no request, tool call or compaction in flight, no snapshot, prompt or marker) is
collapsed to a narrow band, as profilers and monitoring charts break an axis: one longer
than 30 min and than a quarter of the session's active time (`data.idle_gaps`; the span
less every stretch over 30 min), at most 10, the longest. The session's own start and end
count as moments, so a long tail after the last record is collapsed like any stretch. The
band is drawn across the plot with a pair of slanted marks cutting the x axis, its length
written up the band ("8 h 32 min idle") and in its tooltip; values hold flat through it.
Time maps piecewise linearly (`timeaxis.Frame.x`, the one map every element uses), ticks are
true elapsed time and never inside a band, and the caption says the axis is broken. A
session without such a stretch is drawn exactly as a linear axis draws it.

Charts are inline SVG drawn by `svg.py` rather than a vendored charting library:
the drawing needs only rectangles, step paths and text, and a library would add
JavaScript (and its licence) to a page that must open offline, print, and be
safe to attach to a bug report. The page has no script at all, and its
Content-Security-Policy forbids every fetch, so opening it cannot touch the
network. Drawings are downsampled to at most `MAX_POINTS` points per series;
tables always hold the exact numbers.
"""

import typing as _typing

from agent_profiler import lazy as _lazy

if _typing.TYPE_CHECKING:
    from agent_profiler.report.data import LARGEST_ADDITIONS
    from agent_profiler.report.page import DEFAULT_TITLE, HtmlReportWriter, render_report
    from agent_profiler.report.svg import MAX_POINTS, downsample

# The names this package offers and the room each lives in, imported when first asked for
# (PEP 562): a module of the package (`report.text`, say, which `fleet` uses) can be
# imported without the whole page.
_HOMES = {
    "DEFAULT_TITLE": "page",
    "LARGEST_ADDITIONS": "data",
    "MAX_POINTS": "svg",
    "HtmlReportWriter": "page",
    "downsample": "svg",
    "render_report": "page",
}

__all__ = [
    "DEFAULT_TITLE",
    "LARGEST_ADDITIONS",
    "MAX_POINTS",
    "HtmlReportWriter",
    "downsample",
    "render_report",
]


__getattr__ = _lazy.module_getattr(__name__, _HOMES)
