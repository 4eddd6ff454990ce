"""The Context chart's time axis: the map from time to x, piecewise linear where idle
stretches are collapsed (`data.idle_gaps`), and its ticks of true elapsed time."""

from __future__ import annotations

import math

from agent_profiler.model import frozen
from agent_profiler.report.text import duration

TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600)


def time_step(seconds: float, ticks: int = 8) -> int:
    for step in TIME_STEPS:
        if seconds / step <= ticks:
            return step
    return 43200 * math.ceil(seconds / 43200 / ticks)


GAP_WIDTH = 22.0  # SVG units a collapsed idle stretch takes on the time axis, whatever its length


@frozen
class Frame:
    """The plot area of a chart and its mappings from (time, tokens) to SVG units.

    Time maps linearly, except across `gaps` (data.idle_gaps): each collapsed idle stretch
    takes GAP_WIDTH units whatever its length, and the rest of the width is shared to scale
    by the time outside them. The map stays continuous and increasing (inside a gap, time
    moves linearly across its narrow band), so a value held across a gap is drawn flat
    through it, and every element of the chart goes through `x`."""

    t0: int
    t1: int
    y_max: float
    left: float = 62
    right: float = 1036
    top: float = 26
    bottom: float = 336
    gaps: tuple[tuple[int, int], ...] = ()

    def x(self, ns: int) -> float:
        if not self.gaps:
            return self.left + (ns - self.t0) / max(1, self.t1 - self.t0) * (self.right - self.left)
        scale = self.scale
        x, before = self.left, self.t0  # where the shown stretch that `ns` may be in starts
        for start, end in self.gaps:
            if ns <= start:
                break
            if ns < end:  # inside the gap: across its band in proportion
                return x + (start - before) * scale + (ns - start) / (end - start) * GAP_WIDTH
            x += (start - before) * scale + GAP_WIDTH
            before = end
        return x + (ns - before) * scale

    @property
    def scale(self) -> float:
        """Units per nanosecond outside the gaps."""
        shown = self.t1 - self.t0 - sum(end - start for start, end in self.gaps)
        return (self.right - self.left - GAP_WIDTH * len(self.gaps)) / max(1, shown)

    def shown(self) -> list[tuple[int, int]]:
        """The stretches of time drawn to scale, between the gaps (one may be a single
        moment: a gap at the very start or end)."""
        bounds = [self.t0, *(t for gap in self.gaps for t in gap), self.t1]
        return list(zip(bounds[::2], bounds[1::2], strict=True))

    def y(self, tokens: float) -> float:
        return self.bottom - tokens / self.y_max * (self.bottom - self.top)


def time_ticks(frame: Frame) -> list[tuple[float, str]]:
    """(x, label) of the time axis's ticks: true elapsed time since the session's start.

    Without gaps, every `time_step` from 0 to the end. With gaps, the step suits the time
    drawn to scale, and each stretch between gaps gets the multiples of it inside it, or a
    tick at its own start when none falls inside (a short stretch, the moment after a gap at
    the very end): no tick is ever inside a gap, and each side of one is labelled. A label
    that would overlap the one before it is left out, unless it is a stretch's only tick
    and the one before is a round tick of a stretch that keeps another."""
    t0, t1 = frame.t0, frame.t1
    if not frame.gaps:
        seconds = (t1 - t0) / 1e9
        every = time_step(seconds)
        ticks, mark = [], 0
        while mark <= seconds + 1e-9:
            ticks.append((frame.x(t0 + mark * 1_000_000_000), _tick_text(mark)))
            mark += every
        return ticks
    stretches = [((a - t0) / 1e9, (b - t0) / 1e9) for a, b in frame.shown()]
    step = time_step(sum(b - a for a, b in stretches))
    kept: list[tuple[float, str, int, bool]] = []  # x, label, stretch, a stretch's only tick

    def clear(x: float, text: str) -> bool:
        """The label at x does not overlap the last one kept."""
        if not kept:
            return True
        last_x, last_text = kept[-1][:2]
        return x - (3.3 * len(text) + 4) > last_x + 3.3 * len(last_text) + 4

    for index, (start, stop) in enumerate(stretches):
        first = math.ceil(start / step - 1e-9)
        marks = [float(k * step) for k in range(first, int(stop / step) + 1)]
        for at in marks or [start]:
            x = frame.x(t0 + round(at * 1_000_000_000))
            text = _tick_text(at)
            while not clear(x, text) and not marks:
                _, _, other, only = kept[-1]
                if only or sum(k[2] == other for k in kept) < 2:
                    break
                kept.pop()
            if clear(x, text):
                kept.append((x, text, index, not marks))
    return [(x, text) for x, text, _, _ in kept]


def _tick_text(seconds: float) -> str:
    """A tick's elapsed time in words, to the second (`duration` drops the seconds after
    the hours: a few seconds of work three hours in would read "3 h 1 min" twice, a tick at
    a stretch's start would be up to a minute off)."""
    whole = round(seconds)
    if not whole:
        return "0"  # the axis's origin
    if whole < 3600 or not whole % 60:
        return duration(whole)
    return f"{duration(whole - whole % 60)} {whole % 60} s"
