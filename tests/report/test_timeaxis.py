"""The Context chart's time axis (report/timeaxis.py) on frames made by hand: the map from
time to x (linear, or piecewise across collapsed idle stretches), the map from tokens to y,
the tick step, and which ticks of true elapsed time are kept. The charts of real and
hand-made sessions are in test_chart_gaps.py; these pin the numbers."""

from __future__ import annotations

import itertools

import pytest
from test_chart_gaps import seconds_of  # a tick label back to seconds

from agent_profiler.report.timeaxis import (
    GAP_WIDTH,
    TIME_STEPS,
    Frame,
    _tick_text,
    time_step,
    time_ticks,
)

S = 1_000_000_000
T0 = 1_000 * S  # a session's start is never 0 on the clock
LEFT, RIGHT = 62.0, 1036.0  # the plot's default edges


def frame(end: int, *gaps: tuple[int, int]) -> Frame:
    """A frame of `end` seconds from T0, `gaps` in seconds since T0."""
    return Frame(T0, T0 + end * S, 1.0, gaps=tuple((T0 + a * S, T0 + b * S) for a, b in gaps))


def labels(chart: Frame) -> list[str]:
    return [label for _, label in time_ticks(chart)]


# --------------------------------------------------------------------------- x and y


def test_without_gaps_time_maps_linearly_across_the_plot() -> None:
    chart = frame(100)
    assert chart.x(T0) == LEFT and chart.x(T0 + 100 * S) == RIGHT
    assert chart.x(T0 + 25 * S) == pytest.approx(LEFT + (RIGHT - LEFT) / 4)
    # A session of one moment: everything at the left edge, no division by zero.
    assert Frame(T0, T0, 1.0).x(T0) == LEFT


def test_tokens_map_from_the_bottom_up_to_the_top_at_y_max() -> None:
    chart = Frame(T0, T0 + S, 1_000.0)
    assert (chart.y(0), chart.y(1_000), chart.y(500)) == (336, 26, pytest.approx(181))


def test_each_gap_takes_its_fixed_width_and_the_rest_is_time_to_scale() -> None:
    # 100 s: gaps of 30 s (from 40 s) and 10 s (from 80 s); 60 s drawn to scale over the
    # 974 units less two gaps' 22: 15.5 units a second, on every stretch.
    chart = frame(100, (40, 70), (80, 90))
    assert chart.scale == pytest.approx(15.5 / S)
    expected = {
        0: LEFT,
        10: LEFT + 155,  # before the first gap
        40: LEFT + 620,  # the first gap's start
        55: LEFT + 620 + GAP_WIDTH / 2,  # half way through it
        70: LEFT + 620 + GAP_WIDTH,  # its end
        75: LEFT + 620 + GAP_WIDTH + 77.5,
        80: LEFT + 775 + GAP_WIDTH,
        85: LEFT + 775 + 1.5 * GAP_WIDTH,
        90: LEFT + 775 + 2 * GAP_WIDTH,
        100: RIGHT,
    }
    assert {t: chart.x(T0 + t * S) for t in expected} == pytest.approx(expected)
    # continuous and increasing, a second at a time
    xs = [chart.x(T0 + t * S // 4) for t in range(401)]
    assert xs == sorted(xs) and len(set(xs)) == len(xs)


def test_the_stretches_shown_lie_between_the_gaps() -> None:
    assert frame(100, (40, 70), (80, 90)).shown() == [
        (T0, T0 + 40 * S),
        (T0 + 70 * S, T0 + 80 * S),
        (T0 + 90 * S, T0 + 100 * S),
    ]
    assert frame(100).shown() == [(T0, T0 + 100 * S)]
    # A gap at the very start leaves a single moment before it.
    first = frame(100, (0, 50))
    assert first.shown() == [(T0, T0), (T0 + 50 * S, T0 + 100 * S)]
    assert (first.x(T0), first.x(T0 + 50 * S)) == (LEFT, pytest.approx(LEFT + GAP_WIDTH))


# --------------------------------------------------------------------------- the step


def test_the_step_is_the_first_of_the_table_with_at_most_eight_ticks() -> None:
    assert [time_step(8 * step) for step in TIME_STEPS] == list(TIME_STEPS)
    assert [time_step(8 * step + 1) for step in TIME_STEPS[:-1]] == list(TIME_STEPS[1:])
    assert time_step(100, ticks=4) == 30
    # Past the table (six hours a tick), whole half days.
    half_day = 43_200
    assert time_step(8 * 21_600 + 1) == half_day
    assert time_step(8 * 3 * half_day) == 3 * half_day
    assert time_step(8 * 3 * half_day + 1) == 4 * half_day


# --------------------------------------------------------------------------- ticks


def test_without_gaps_every_step_is_ticked_to_the_end() -> None:
    # Two minutes: 15 s a step, the last tick at the right edge.
    chart = frame(120)
    ticks = time_ticks(chart)
    assert [label for _, label in ticks] == [_tick_text(15 * k) for k in range(9)]
    assert [label for _, label in ticks][:5] == ["0", "15 s", "30 s", "45 s", "1 min"]
    assert [x for x, _ in ticks] == [chart.x(T0 + 15 * k * S) for k in range(9)]
    assert ticks[-1][0] == RIGHT


def check(chart: Frame) -> None:
    """Every tick is at its label's true time (a round tick exactly, a stretch's own
    start to the second) and outside every gap; left to right; no two labels overlap."""
    ticks = time_ticks(chart)
    bands = [(chart.x(a), chart.x(b)) for a, b in chart.gaps]
    for x, label in ticks:
        at = T0 + seconds_of(label) * S
        if label.endswith(" s") and "h" in label:  # a stretch's start, to the second
            assert chart.x(at - S // 2) <= x <= chart.x(at + S // 2), label
        else:
            assert x == chart.x(at), label
        assert not any(a + 1e-6 < x < b - 1e-6 for a, b in bands), label
    xs = [x for x, _ in ticks]
    assert xs == sorted(xs)
    for (x0, a), (x1, b) in itertools.pairwise(ticks):
        assert x1 - (3.3 * len(b) + 4) > x0 + 3.3 * len(a) + 4, (a, b)


def test_each_stretch_gets_the_multiples_of_the_step_inside_it() -> None:
    # 20 min, 3 h idle, 20 min: 40 min to scale, a tick every 5 min. The tick at the gap's
    # end ("3 h 20 min") is 22 units from the one at its start and would overlap it.
    chart = frame(13_200, (1_200, 12_000))
    check(chart)
    assert labels(chart) == [
        "0",
        "5 min",
        "10 min",
        "15 min",
        "20 min",
        "3 h 25 min",
        "3 h 30 min",
        "3 h 35 min",
        "3 h 40 min",
    ]
    # The last round tick 108 s before the gap: the gap's end is clear of it.
    chart = frame(13_092, (1_308, 12_000))
    check(chart)
    assert labels(chart)[4:6] == ["20 min", "3 h 20 min"]


def test_a_gap_at_the_start_keeps_the_first_moment_ticked() -> None:
    chart = frame(10_000, (0, 9_000))
    check(chart)
    assert labels(chart) == ["0", "2 h 35 min", "2 h 40 min", "2 h 45 min"]


def test_a_stretch_without_a_multiple_is_ticked_at_its_start() -> None:
    """A stretch too short to hold a multiple of the step gets a tick at its own start, to
    the second; when it would overlap the round tick before it, that tick gives way if its
    own stretch keeps another."""
    # 40 min drawn; the session ends 5 h after its last record: the end's moment is ticked
    # and takes the place of "40 min" (the first stretch keeps eight more).
    chart = frame(20_000, (2_400, 20_000))
    check(chart)
    assert labels(chart)[-3:] == ["30 min", "35 min", "5 h 33 min 20 s"]
    # The same after a middle stretch of several ticks: it gives its last.
    chart = frame(30_010, (1_200, 12_000), (13_200, 30_010))
    check(chart)
    assert labels(chart)[-3:] == ["3 h 30 min", "3 h 35 min", "8 h 20 min 10 s"]
    # A stretch's only tick does not give way: the end's is left out.
    chart = frame(30_010, (1_100, 12_007), (12_010, 30_010))
    check(chart)
    assert labels(chart)[-2:] == ["15 min", "3 h 20 min 7 s"]
    # Nor does a round tick alone in its stretch.
    chart = frame(30_010, (1_100, 12_000), (12_010, 30_010))
    check(chart)
    assert labels(chart)[-2:] == ["15 min", "3 h 20 min"]


def test_a_tick_says_its_time_to_the_second() -> None:
    """Under an hour and on whole minutes, as `duration` says it; past an hour, the
    seconds `duration` would drop are written."""
    assert [_tick_text(s) for s in (0, 30, 90, 3_540, 3_600, 11_100)] == [
        "0",
        "30 s",
        "1 min 30 s",
        "59 min",
        "1 h",
        "3 h 5 min",
    ]
    assert _tick_text(10_900.4) == "3 h 1 min 40 s"
    assert _tick_text(3_659) == "1 h 59 s"
