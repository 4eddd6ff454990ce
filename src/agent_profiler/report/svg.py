"""The report's inline SVG: the Overview's composition bar and the Context view's chart
(bands, lines, markers, tooltips); the fills they use and the legends are fills.py's.

Drawings are downsampled to at most `MAX_POINTS` points per series; tables (html.py) always
hold the exact numbers.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence

from agent_profiler.model import Category, ContextSnapshot, frozen
from agent_profiler.report.data import SessionData
from agent_profiler.report.fills import UNEXPLAINED
from agent_profiler.report.text import (
    clock_text,
    duration,
    esc,
    number,
    percent,
    short_tokens,
    utc,
    window_note,
)
from agent_profiler.report.timeaxis import Frame, time_ticks
from agent_profiler.views import category_label, compactions_after

MAX_POINTS = 400  # per drawn series; a 500-response session is drawn from ≤ 400 samples


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


def _f(value: float) -> str:
    """SVG coordinates with one decimal and no trailing zeros (small files)."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def composition_bar(
    parts: list[tuple[Category, int, float]], width: int = 270, head: str = ""
) -> str:
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
            f'stroke="#fff" stroke-width=".8"><title>{esc(category_label(category, head))}: '
            f"{tokens:,} tokens ({esc(percent(share))})</title></rect>"
        )
        label = f"{category_label(category, head)} {percent(share)}"
        if w >= 6.2 * len(label) + 8:
            text = label
        elif w >= 30:
            text = percent(share)
        else:
            text = ""
        if text:
            out.append(
                f'<text class="halo" x="{_f(x + w / 2)}" y="15" text-anchor="middle">'
                f"{esc(text)}</text>"
            )
        x += w
    out.append("</svg>")
    return "".join(out)


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


@frozen
class Chart:
    """A Context view's chart: its SVG, whether it draws the window line (for the legend)
    and how many snapshots it draws (for the caption)."""

    svg: str
    window_drawn: bool
    drawn: int
    gaps: tuple[tuple[int, int], ...] = ()  # the idle stretches its time axis collapses
    unexplained: bool = False  # it draws reported − estimated above the bands somewhere


def context_chart(data: SessionData, window: int | None, limit: int = MAX_POINTS) -> Chart:
    """The Context view's SVG: `data.categories` stacked as bands, the Context size line,
    the window, compactions, model changes and the peak marked, tooltips over the samples."""
    session, snapshots, sizes, places = data.session, data.snapshots, data.sizes, data.places
    t0, t1 = data.span
    if t1 <= t0:
        t1 = t0 + 1_000_000_000
    stacked = data.categories
    totals = [x.estimated_tokens for x in snapshots]
    compactions = session.compactions
    afters = compactions_after(session)
    data_top = max([*totals, *(v for _, v in sizes), 1])
    # A window far above the data (a 1M-token window, a 20k-token session) would flatten
    # the chart into a sliver: it is then named at the top instead of drawn.
    # The window follows the model in use: a step at each change (unless --window is given).
    steps = data.windows if len(data.windows) > 1 and window == session.window_tokens else ()
    if steps:
        window = max(w for _, w in steps)
    window_drawn = bool(window) and (window or 0) <= 2.5 * data_top
    y_top = max(data_top, window or 0) if window_drawn else data_top
    step = max(1.0, nice_step(y_top * 1.04))
    y_max = step * -(-y_top * 1.04 // step)
    frame = Frame(t0, t1, y_max, gaps=data.gaps)
    width, height = 1100, 380
    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="Context composition over time: {esc(session.session_id)}">'
    ]
    # Grid and y axis.
    for index in range(round(y_max / step) + 1):
        tick = index * step
        y = frame.y(tick)
        out.append(
            f'<line class="grid" x1="{_f(frame.left)}" x2="{_f(frame.right)}" y1="{_f(y)}" '
            f'y2="{_f(y)}" stroke="#e3e3e8"/>'
            f'<text x="{_f(frame.left - 6)}" y="{_f(y + 4)}" text-anchor="end">'
            f"{short_tokens(tick)}</text>"
        )
    out.append(
        f'<text x="14" y="{_f((frame.top + frame.bottom) / 2)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_f((frame.top + frame.bottom) / 2)})">tokens</text>'
    )
    # X axis: elapsed time since the session start. A synthetic clock's start is made up
    # (the file's modification time less the durations): no date is given for it.
    origin = "synthetic clock" if session.clock == "synthetic" else utc(t0)
    for x, text in time_ticks(frame):
        out.append(
            f'<line x1="{_f(x)}" x2="{_f(x)}" y1="{_f(frame.bottom)}" '
            f'y2="{_f(frame.bottom + 5)}" stroke="#333"/>'
            f'<text x="{_f(x)}" y="{_f(frame.bottom + 18)}" text-anchor="middle">'
            f"{text}</text>"
        )
    out.append(
        f'<text x="{_f((frame.left + frame.right) / 2)}" y="{height - 8}" '
        f'text-anchor="middle">time since session start ({esc(origin)})</text>'
    )
    # Stacked composition, drawn from at most `limit` snapshots.
    unexplained = ""
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
                f"<title>{esc(category_label(category, data.row.head_name))} (estimated)"
                "</title></path>"
            )
            out.append(
                _band_label(
                    category,
                    xs,
                    x_end,
                    base,
                    upper,
                    frame,
                    category_label(category, data.row.head_name),
                )
            )
            base = upper
        unexplained = _unexplained_band(drawn, xs, base, x_end, frame)
        out.append(unexplained)
    # Window, Context size, markers on top of the bands.
    label = f"window {window or 0:,}" + (
        window_note(session) if window == session.window_tokens else ""
    )
    taken: list[tuple[float, float]] = []  # label extents along the top, so none overlap
    if steps and window_drawn:
        ends = [*(frame.x(t) for t, _ in steps[1:]), frame.right]
        path = f"M{_f(frame.left)},{_f(frame.y(steps[0][1]))}"
        for x_end, following in zip(ends, [*steps[1:], None], strict=True):
            path += f" H{_f(x_end)}" + (f" V{_f(frame.y(following[1]))}" if following else "")
        title = ", then ".join(f"window {w:,}" for _, w in steps)
        out.append(
            f'<path class="window-line" d="{path}" fill="none" stroke="#333" stroke-width="1.5" '
            f'stroke-dasharray="7 5"><title>{esc(title)}</title></path>'
        )
        for (t, w), x_end in zip(steps, ends, strict=True):
            x = frame.left if t == steps[0][0] else frame.x(t)
            if x_end - x > 90:  # room for the label on its own segment
                out.append(
                    f'<text class="halo" x="{_f(x + 6)}" y="{_f(frame.y(w) - 5)}">'
                    f"{esc(f'window {w:,}')}</text>"
                )
    elif window and window_drawn:
        y = frame.y(window)
        out.append(
            f'<line class="window-line" x1="{_f(frame.left)}" x2="{_f(frame.right)}" '
            f'y1="{_f(y)}" y2="{_f(y)}" stroke="#333" stroke-width="1.5" '
            f'stroke-dasharray="7 5"><title>{esc(label)}</title></line>'
            f'<text class="halo" x="{_f(frame.left + 6)}" y="{_f(y - 5)}">{esc(label)}</text>'
        )
    elif window:
        # Top left, where compaction labels are rarest; they give way to it.
        note = f"↑ {label}: far above this chart"
        taken.append((frame.left, frame.left + 6.6 * len(note)))
        out.append(
            f'<text class="halo window-note" x="{_f(frame.left)}" y="{_f(frame.top - 6)}">'
            f"{esc(note)}</text>"
        )
    for index, compaction in enumerate(compactions, start=1):
        x0, x1 = frame.x(compaction.start_ns), frame.x(compaction.end_ns)
        after = afters[index - 1]
        post = compaction.post_tokens if after is None else after.tokens
        what = (
            f"compaction {index}: {compaction.kind}"
            + (f", {compaction.trigger}" if compaction.trigger else "")
            + f", {number(compaction.pre_tokens)} → {number(post)} tokens"
            + (
                " (after: the first request after it)"
                if after and after.source != "harness"
                else ""
            )
        )
        label = _marker_label(x0, frame.top - 6, (f"▼ compaction {index}", f"▼{index}"), taken)
        out.append(
            f'<g class="marker compaction"><title>{esc(what)}</title>'
            f'<rect x="{_f(x0)}" y="{_f(frame.top)}" width="{_f(max(x1 - x0, 0))}" '
            f'height="{_f(frame.bottom - frame.top)}" fill="#000" fill-opacity=".07"/>'
            f'<line x1="{_f(x0)}" x2="{_f(x0)}" y1="{_f(frame.top)}" y2="{_f(frame.bottom)}" '
            f'stroke="#b00020" stroke-width="1.5" stroke-dasharray="2 3"/>{label}</g>'
        )
    taken = []
    for when, model in data.changes:
        x = frame.x(when)
        label = _marker_label(x, frame.top + 10, (f"model → {model}", "model →"), taken)
        out.append(
            f'<g class="marker model-change"><title>model → {esc(model)}</title>'
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
    # Axes last, so bands never hide them.
    out.append(
        f'<path d="M{_f(frame.left)},{_f(frame.top)}V{_f(frame.bottom)}H{_f(frame.right)}" '
        'fill="none" stroke="#333"/>'
    )
    samples = downsample(totals, limit) if snapshots else []
    if snapshots:
        out.append(_hover_columns(snapshots, samples, frame, places, t1, head=data.row.head_name))
    # The breaks last: over the bands (faded through their band) and over the hover columns,
    # so hovering one names the idle stretch rather than the snapshot held across it.
    out += [_gap_mark(frame, start, end) for start, end in frame.gaps]
    # The peak after them: a gap's band is drawn over everything before it, and the
    # peak's label, which may reach across a gap, was read through it ("1[▒]209").
    peak = data.peak
    if peak is not None:
        # The peak marked is the Overview's (the largest response prompt), not a compaction's
        # pre_tokens, which the line also shows.
        px, py = frame.x(peak.start_ns), frame.y(peak.usage.prompt_tokens)
        text = f"peak Context size {peak.usage.prompt_tokens:,}"
        anchor = _peak_anchor(px, 6.6 * len(text), frame)
        dx = -6 if anchor == "end" else 6
        out.append(
            f'<circle cx="{_f(px)}" cy="{_f(py)}" r="3.5" fill="#111"/>'
            f'<text class="halo peak" x="{_f(px + dx)}" y="{_f(py - 7)}" '
            f'text-anchor="{anchor}">{text}</text>'
        )
    if not snapshots and not sizes:
        out.append(
            f'<text x="{_f((frame.left + frame.right) / 2)}" y="{_f(frame.bottom / 2)}" '
            'text-anchor="middle">nothing recorded to draw</text>'
        )
    out.append("</svg>")
    return Chart("".join(out), window_drawn, len(samples), frame.gaps, bool(unexplained))


def _peak_anchor(x: float, width: float, frame: Frame) -> str:
    """Which side of the peak its label goes: away from the nearer edge of the chart, unless
    that side crosses a collapsed gap (its band and its idle label) and the other does not."""
    sides = ("end", "start") if x > (frame.left + frame.right) / 2 else ("start", "end")

    def clear(side: str) -> bool:
        left, right = (x - 6 - width, x - 6) if side == "end" else (x + 6, x + 6 + width)
        inside = frame.left <= left and right <= frame.right + 60  # the margin takes a bit
        return inside and not any(left < frame.x(b) and right > frame.x(a) for a, b in frame.gaps)

    return next((side for side in sides if clear(side)), sides[0])


def _unexplained_band(
    drawn: Sequence[ContextSnapshot],
    xs: Sequence[float],
    estimated: Sequence[int],
    x_end: float,
    frame: Frame,
) -> str:
    """From the top of the stacked bands up to the reported Context size, where that is
    higher: what the estimate leaves unexplained. None where the estimate is the larger or
    no size was reported (the estimate is not scaled, nor is anything drawn in its place)."""
    upper = [max(e, x.reported_tokens or 0) for e, x in zip(estimated, drawn, strict=True)]
    if all(u == e for u, e in zip(upper, estimated, strict=True)):
        return ""
    path = _band_path(xs, [frame.y(e) for e in estimated], [frame.y(u) for u in upper], x_end)
    what = (
        f"{UNEXPLAINED}: the part of the reported Context size "
        "the estimated composition does not explain; the estimate is never scaled to match"
    )
    return (
        f'<path class="unexplained" d="{path}" fill="url(#unexplained)" stroke="#8a8a96" '
        f'stroke-width=".8" stroke-dasharray="3 2"><title>{esc(what)}</title></path>'
        + _band_label(
            Category.UNATTRIBUTED, xs, x_end, estimated, upper, frame, "reported − estimated"
        )
    )


def _gap_mark(frame: Frame, start: int, end: int) -> str:
    """A collapsed idle stretch: a light band across the plot, the x axis cut by a pair of
    slanted marks, its length written up the band and in its tooltip."""
    x0, x1 = frame.x(start), frame.x(end)
    mid = (x0 + x1) / 2
    idle = f"{duration((end - start) / 1e9)} idle"
    what = (
        f"{idle}: nothing recorded from {clock_text(start - frame.t0)} to "
        f"{clock_text(end - frame.t0)} (time since session start); this stretch is shortened "
        "on the time axis"
    )
    y = frame.bottom
    cuts = "".join(f"M{_f(x - 3)},{_f(y + 5)}L{_f(x + 3)},{_f(y - 5)}" for x in (x0 + 4, x1 - 4))
    return (
        f'<g class="gap"><title>{esc(what)}</title>'
        f'<rect x="{_f(x0)}" y="{_f(frame.top)}" width="{_f(x1 - x0)}" '
        f'height="{_f(frame.bottom - frame.top)}" fill="#eeeef2" fill-opacity=".8" '
        'stroke="#9a9aa6" stroke-width=".6" stroke-dasharray="3 2"/>'
        f'<rect x="{_f(x0 + 2)}" y="{_f(y - 2)}" width="{_f(x1 - x0 - 4)}" height="4" '
        'fill="#fff"/>'
        f'<path d="{cuts}" stroke="#333" stroke-width="1.2" fill="none"/>'
        f'<text class="halo gap-label" x="{_f(mid + 4)}" y="{_f(frame.top + 6)}" '
        f'text-anchor="end" transform="rotate(-90 {_f(mid + 4)} {_f(frame.top + 6)})">'
        f"{esc(idle)}</text></g>"
    )


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
            return f'<text class="halo" x="{_f(left)}" y="{_f(y)}">{esc(text)}</text>'
    return ""


def _band_label(
    category: Category,
    xs: Sequence[float],
    x_end: float,
    lower: Sequence[int],
    upper: Sequence[int],
    frame: Frame,
    name: str = "",
) -> str:
    """Name a band inside itself where the text fits best, when it fits at all (and not
    across a collapsed gap): the chart then reads without matching colours to the legend."""
    avoid = [(frame.x(start), frame.x(end)) for start, end in frame.gaps]
    name = name or category.label
    text_width = 6.4 * len(name) + 6
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
        if any(left < x1 and right > x0 for x0, x1 in avoid):
            continue  # across a collapsed gap's band, which would fade it
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
        f'text-anchor="middle">{esc(name)}</text>'
    )


def _hover_columns(
    snapshots: Sequence[ContextSnapshot],
    keep_all: Sequence[int],
    frame: Frame,
    places: dict[int, str],
    t1: int,
    head: str = "",
) -> str:
    """Invisible columns over the drawn samples whose tooltips give the exact numbers, each
    category named as the legend names it (`head`: views.category_label)."""
    out = ['<g class="hover">']
    for position, index in enumerate(keep_all):
        snapshot = snapshots[index]
        x0 = frame.x(snapshot.time_ns)
        nxt = keep_all[position + 1] if position + 1 < len(keep_all) else None
        x1 = frame.x(snapshots[nxt].time_ns) if nxt is not None else frame.x(t1)
        if x1 - x0 < 0.5:
            continue
        lines = [f"{places.get(id(snapshot), '')} · {clock_text(snapshot.time_ns - frame.t0)}"]
        reported, estimated = snapshot.reported_tokens, snapshot.estimated_tokens
        if reported is not None:
            lines.append(f"Context size {reported:,} tokens (reported)")
        lines.append(f"estimated {estimated:,} tokens:")
        present = dict(snapshot.categories)
        lines += [f"  {category_label(c, head)} {present[c]:,}" for c in Category if present.get(c)]
        if reported is not None and reported > estimated:
            lines.append(f"not explained by the estimate: {reported - estimated:,}")
        elif reported is not None and estimated > reported:
            lines.append(
                f"the estimate exceeds the reported size by {estimated - reported:,}: "
                "nothing drawn above the bands (never scaled)"
            )
        out.append(
            f'<rect x="{_f(x0)}" y="{_f(frame.top)}" width="{_f(x1 - x0)}" '
            f'height="{_f(frame.bottom - frame.top)}"><title>{esc(chr(10).join(lines))}'
            "</title></rect>"
        )
    out.append("</g>")
    return "".join(out)
