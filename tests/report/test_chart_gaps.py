"""The Context chart's time axis: a session without a long idle stretch is drawn exactly as
before the axis could break (goldens), one with long idle stretches has them collapsed to a
narrow labelled band with true elapsed-time ticks on each side."""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_claude_code import SPOTTER_DIR, SPOTTER_ID
from test_report import CODEX, CODEX_LONG, long_session, read

from agent_profiler.model import (
    AnchorKind,
    Basis,
    Category,
    Compaction,
    ContextSnapshot,
    Coverage,
    Harness,
    Marker,
    Prompt,
    Response,
    Session,
    Stage,
    ToolCall,
    Usage,
)
from agent_profiler.report import render_report
from agent_profiler.report.data import SessionData, session_data
from agent_profiler.report.svg import context_chart
from agent_profiler.report.text import duration
from agent_profiler.report.timeaxis import GAP_WIDTH, Frame
from agent_profiler.summary import summarise
from conftest import GOLDEN

CODEX_SHORT = CODEX / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"


def chart_of(session: Session, window: int | None = None) -> str:
    return context_chart(session_data(summarise(session), session), window).svg


# --------------------------------------------------------------------------- no gap: unchanged


def _spotter_main() -> Session:
    return next(s for s in read(SPOTTER_DIR) if s.session_id == SPOTTER_ID and not s.is_subagent)


NO_GAP = {
    "chart-handmade-40.svg.txt": lambda: long_session(40),
    "chart-codex-20-34-25.svg.txt": lambda: read(CODEX_SHORT)[0],
    "chart-claude-code-spotter.svg.txt": _spotter_main,
}


@pytest.mark.parametrize("golden", sorted(NO_GAP))
def test_a_chart_without_a_long_gap_is_drawn_as_before(
    request: pytest.FixtureRequest, golden: str
) -> None:
    """The goldens were written by the chart before gaps were collapsed: a session with no
    idle stretch long enough must keep every coordinate. Stored one tag per line (`><`
    never occurs inside a text: `<` and `>` are escaped) so a change reads as a diff."""
    session = NO_GAP[golden]()
    svg = chart_of(session, session.window_tokens)
    path: Path = GOLDEN / golden
    if request.config.getoption("--update-golden"):
        path.write_text(svg.replace("><", ">\n<") + "\n", encoding="utf-8")
    assert path.exists(), f"missing {path}: run `make golden`"
    assert svg == path.read_text(encoding="utf-8").removesuffix("\n").replace(">\n<", "><")


# --------------------------------------------------------------------------- hand-made sessions

S = 1_000_000_000
MIN = 60 * S
HOUR = 60 * MIN
CORPUS = Path("/work/shared/corpus")
MODEL_SWITCH = (
    CORPUS / "codex" / "agentv-0.140-0.141" / "agentv-3c162d1d8a-1_v0.141.0_model-switch.jsonl"
)


def worked(starts: list[int], start_ns: int | None = None, end_ns: int | None = None) -> Session:
    """A response of 20 s at each of `starts` (ns since 0), each with a snapshot at its start
    and a context that grows by 1,000 tokens a request; the session's own start and end
    default to its first and last record."""
    responses, snapshots = [], []
    for index, start in enumerate(starts):
        tokens = 10_000 + 1_000 * index
        responses.append(Response(f"r{index}", start, start + 20 * S, "m", Usage(tokens)))
        snapshots.append(
            ContextSnapshot(
                start,
                AnchorKind.RESPONSE,
                f"r{index}",
                Stage.REQUEST_INPUT,
                Basis.CHARS,
                Coverage.COMPLETE,
                index == 0,
                ((Category.SYSTEM, 6_000), (Category.RESULTS, tokens - 6_000)),
                reported_tokens=tokens,
            )
        )
    return Session(
        harness=Harness.CODEX,
        session_id="gappy",
        start_ns=starts[0] if start_ns is None else start_ns,
        end_ns=starts[-1] + 20 * S if end_ns is None else end_ns,
        sources=("gappy.jsonl",),
        models=("m",),
        window_tokens=40_000,
        window_source="journal",
        responses=tuple(responses),
        snapshots=tuple(snapshots),
    )


def every(start: int, stop: int, step: int = MIN) -> list[int]:
    return list(range(start, stop, step))


def seconds_of(label: str) -> int:
    """A tick label ("9 h 30 min", "3 h 1 min 40 s", "0") back to seconds."""
    if label == "0":
        return 0
    words = label.split()
    units = {"h": 3600, "min": 60, "s": 1}
    return sum(int(n) * units[u] for n, u in zip(words[::2], words[1::2], strict=True))


@dataclass
class Drawn:
    """What a chart draws, read back from its SVG."""

    data: SessionData
    root: ET.Element
    frame: Frame

    @property
    def gaps(self) -> list[ET.Element]:
        return [g for g in self.root.iter(f"{SVG}g") if g.get("class") == "gap"]

    def gap_x(self, gap: ET.Element) -> tuple[float, float]:
        band = gap.find(f"{SVG}rect")
        assert band is not None
        x = float(band.get("x", "nan"))
        return x, x + float(band.get("width", "nan"))

    @property
    def ticks(self) -> list[tuple[float, str]]:
        """(x, label) of the time axis's ticks, left to right (their y is under the plot)."""
        return [
            (float(t.get("x", "nan")), t.text or "")
            for t in self.root.iter(f"{SVG}text")
            if t.get("y") == "354"
        ]

    @property
    def hover_x(self) -> list[float]:
        (hover,) = [g for g in self.root.iter(f"{SVG}g") if g.get("class") == "hover"]
        return [float(r.get("x", "nan")) for r in hover]

    def path(self, name: str) -> str:
        (found,) = [p for p in self.root.iter(f"{SVG}path") if p.get("class") == name]
        return found.get("d", "")


SVG = ""  # the chart's SVG has no namespace declared: its tags are bare


def drawn(session: Session) -> Drawn:
    data = session_data(summarise(session), session)
    root = ET.fromstring(context_chart(data, session.window_tokens).svg)  # well-formed XML
    t0, t1 = data.span
    return Drawn(data, root, Frame(t0, t1, 1.0, gaps=data.gaps))


def flat_runs(path: str) -> list[tuple[float, float, float]]:
    """(x from, x to, y) of every horizontal run of a step path (M, H and V commands)."""
    runs, x, y = [], 0.0, 0.0
    for command, value in re.findall(r"([MHV])([-\d.,]+)", path):
        if command == "M":
            x, y = map(float, value.split(","))
        elif command == "H":
            runs.append((x, float(value), y))
            x = float(value)
        else:
            y = float(value)
    return runs


def check_ticks(chart: Drawn) -> None:
    """Each tick is at its label's true elapsed time (to the second its label rounds to)
    and outside every gap's band."""
    t0 = chart.data.span[0]
    spans = [chart.gap_x(g) for g in chart.gaps]
    assert chart.ticks
    for x, label in chart.ticks:
        at = t0 + seconds_of(label) * S
        low, high = chart.frame.x(at - S // 2), chart.frame.x(at + S // 2)
        assert low - 0.05 <= x <= high + 0.05, (label, x, low, high)
        assert not any(a + 0.05 < x < b - 0.05 for a, b in spans), (label, x, spans)
    assert [x for x, _ in chart.ticks] == sorted(x for x, _ in chart.ticks)


def test_one_long_gap_is_collapsed_to_a_narrow_labelled_band() -> None:
    # 20 min of work, 3 h with nothing recorded, 20 min of work.
    before, after = every(0, 20 * MIN), every(3 * HOUR + 20 * MIN, 3 * HOUR + 40 * MIN)
    session = worked(before + after)
    chart = drawn(session)
    gap = (before[-1] + 20 * S, after[0])  # the last response's end, the next one's start
    assert chart.data.gaps == (gap,)
    (mark,) = chart.gaps
    x0, x1 = chart.gap_x(mark)
    assert (x0, x1) == pytest.approx((chart.frame.x(gap[0]), chart.frame.x(gap[1])), abs=0.05)
    assert x1 - x0 == pytest.approx(GAP_WIDTH, abs=0.1)
    # The rest of the width is time to scale, the same scale on both sides of the gap.
    xs = chart.hover_x
    assert xs == sorted(xs) and len(xs) == len(before) + len(after)
    assert all(x < x0 for x in xs[: len(before)]) and all(x >= x1 for x in xs[len(before) :])
    minute_before = xs[1] - xs[0]
    minute_after = xs[len(before) + 1] - xs[len(before)]
    assert minute_before == pytest.approx(minute_after, abs=0.15)
    plot = chart.frame.right - chart.frame.left
    shown = (session.end_ns - session.start_ns - (gap[1] - gap[0])) / MIN
    assert minute_before == pytest.approx((plot - GAP_WIDTH) / shown, abs=0.15)
    # Labelled with the idle time, in the band and in its tooltip.
    texts = [t.text for t in mark.iter("text")]
    assert texts == ["3 h idle"]  # 3 h 0 min 40 s: seconds are not written after hours
    title = mark.findtext("title") or ""
    assert title.startswith("3 h idle: nothing recorded from 0:19:20 to 3:20:00")
    # True elapsed time on the axis, none inside the gap, both sides labelled.
    check_ticks(chart)
    labels = [label for _, label in chart.ticks]
    assert "0" in labels and "3 h 30 min" in labels
    assert any(x < x0 for x, _ in chart.ticks) and any(x > x1 for x, _ in chart.ticks)
    # The Context size held across the gap: one flat run of the line spans the band.
    runs = flat_runs(chart.path("size-line"))
    assert any(a <= x0 and b >= x1 for a, b, _ in runs)
    # The page says the axis is broken.
    page = render_report([session])
    assert (
        "The time axis is broken: 1 idle stretch over 30 min with nothing recorded (3 h) "
        "is shortened to a narrow grey band" in page
    )


def test_the_rule_needs_half_an_hour_and_a_quarter_of_the_active_time() -> None:
    def gaps(idle: int, work: int, repeat: int = 1) -> tuple[tuple[int, int], ...]:
        """`repeat` + 1 runs of `work` (a request a minute), each `idle` after the last
        request's end before it."""
        starts = every(0, work)
        for _ in range(repeat):
            first = starts[-1] + 20 * S + idle
            starts += every(first, first + work)
        return drawn(worked(starts)).data.gaps

    assert gaps(29 * MIN, 10 * MIN) == ()  # most of the session, but under 30 min
    assert len(gaps(31 * MIN, 10 * MIN)) == 1  # over 30 min, and 3 × the work
    # Two runs of 2 h: the active time is 2 × 119 min 20 s (a run's last request ends 40 s
    # before the run's 2 h are up), a quarter of it 59 min 40 s.
    assert gaps(59 * MIN + 30 * S, 2 * HOUR) == ()  # over 30 min, under a quarter
    assert len(gaps(59 * MIN + 50 * S, 2 * HOUR)) == 1  # just over a quarter
    # Four 2-hour breaks in 100 min of work: each is under a quarter of the whole span (10 h),
    # all are over a quarter of the work: all four are shortened.
    assert len(gaps(2 * 60 * MIN, 20 * MIN, repeat=4)) == 4
    # Under the rule, the chart is the one a linear axis draws: no band, no caption words.
    session = worked(every(0, 2 * HOUR) + every(2 * HOUR + 40 * MIN, 4 * HOUR + 40 * MIN))
    chart = drawn(session)
    assert chart.data.gaps == () and not chart.gaps
    assert "time axis is broken" not in render_report([session])


def test_several_gaps_each_collapsed() -> None:
    # work 20 min · 5 h idle · work 20 min · 2 h idle · work 20 min · 3 h to the session's
    # end: all three shortened, each to the same width, in time order.
    a = every(0, 20 * MIN)
    b = every(a[-1] + 5 * HOUR, a[-1] + 5 * HOUR + 20 * MIN)
    c = every(b[-1] + 2 * HOUR, b[-1] + 2 * HOUR + 20 * MIN)
    session = worked(a + b + c, end_ns=c[-1] + 20 * S + 3 * HOUR)  # and 3 h before the end
    chart = drawn(session)
    lengths = [end - start for start, end in chart.data.gaps]
    assert lengths == [5 * HOUR - 20 * S, 2 * HOUR - 20 * S, 3 * HOUR]
    spans = [chart.gap_x(g) for g in chart.gaps]
    assert [x1 - x0 for x0, x1 in spans] == pytest.approx([GAP_WIDTH] * 3, abs=0.1)
    assert [[t.text for t in g.iter("text")] for g in chart.gaps] == [
        ["4 h 59 min idle"],
        ["1 h 59 min idle"],
        ["3 h idle"],
    ]
    xs = chart.hover_x
    assert xs == sorted(xs)
    assert all(not (x0 <= x < x1) for x in xs for x0, x1 in spans)
    # A band's name is never written across a gap's band (it would be faded there).
    names = [t for t in chart.root.iter("text") if t.get("class") == "halo band-label"]
    assert names
    for name in names:
        half = (6.4 * len(name.text or "") + 6) / 2
        left, right = float(name.get("x", "nan")) - half, float(name.get("x", "nan")) + half
        assert not any(left < x1 and right > x0 for x0, x1 in spans), name.text
    check_ticks(chart)
    # Every stretch drawn to scale has a tick, the middle one included.
    (left, _), (_, right), _ = spans
    assert any(left < x < right for x, _ in chart.ticks)
    assert (
        "3 idle stretches over 30 min with nothing recorded (4 h 59 min, 1 h 59 min, 3 h) are "
        "shortened to a narrow grey band each, so distances across them are not time"
        in render_report([session])
    )


def test_at_most_ten_gaps_the_longest() -> None:
    starts: list[int] = []
    idles = [HOUR + k * MIN for k in range(12)]  # 60 to 71 min, 5 min of work between
    for idle in [*idles, 0]:
        first = starts[-1] + 20 * S + idle if starts else 0
        starts += every(first, first + 5 * MIN)
    chart = drawn(worked(starts))
    assert sorted(end - start for start, end in chart.data.gaps) == idles[2:]
    assert len(chart.gaps) == 10
    check_ticks(chart)


@pytest.mark.parametrize("where", ["end", "start"])
def test_a_long_tail_before_the_session_ends_or_after_it_starts_is_a_gap(where: str) -> None:
    """The session's own start and end count as moments: a journal whose session ends 5 h
    after its last record (a window left open) gets that tail collapsed like any stretch,
    and the axis's last tick, at the right edge, then says the whole length."""
    work = every(5 * HOUR, 5 * HOUR + 31 * MIN) if where == "start" else every(0, 31 * MIN)
    session = (
        worked(work, start_ns=0)
        if where == "start"
        else worked(work, end_ns=work[-1] + 20 * S + 5 * HOUR)
    )
    chart = drawn(session)
    t0, t1 = chart.data.span
    ((start, end),) = chart.data.gaps
    assert end - start == 5 * HOUR
    assert (start, end) == ((t0, work[0]) if where == "start" else (work[-1] + 20 * S, t1))
    (mark,) = chart.gaps
    x0, x1 = chart.gap_x(mark)
    assert x1 - x0 == pytest.approx(GAP_WIDTH, abs=0.1)
    check_ticks(chart)
    if where == "end":
        assert x1 == pytest.approx(chart.frame.right, abs=0.05)
        # The stretch after the gap is the single moment of the end, ticked to the second;
        # its label takes the place of the round "30 min" just before the gap, which its
        # own stretch can spare.
        assert chart.ticks[-1] == (pytest.approx(chart.frame.right, abs=0.05), "5 h 30 min 20 s")
        assert [label for _, label in chart.ticks[-3:-1]] == ["20 min", "25 min"]
        # the last value holds to the end, through the band
        assert max(b for _, b, _ in flat_runs(chart.path("size-line"))) == pytest.approx(
            chart.frame.right, abs=0.05
        )
    else:
        assert x0 == pytest.approx(chart.frame.left, abs=0.05)
        assert chart.ticks[0] == (pytest.approx(chart.frame.left, abs=0.05), "0")
        assert any(label == "5 h" for _, label in chart.ticks)


def test_work_in_flight_is_not_idle_but_a_turn_waiting_is() -> None:
    """A tool call (a 3 h build) or a compaction running through the quiet is work; a
    prompt's turn spanning it is not (its ends count, its middle does not)."""
    before, after = every(0, 20 * MIN), every(3 * HOUR + 20 * MIN, 3 * HOUR + 40 * MIN)
    quiet_from, quiet_to = before[-1] + 20 * S, after[0]
    session = worked(before + after)
    assert drawn(session).data.gaps == ((quiet_from, quiet_to),)
    build = ToolCall("c1", "Bash", quiet_from - S, quiet_to - HOUR)
    ((start, end),) = drawn(dataclasses.replace(session, tool_calls=(build,))).data.gaps
    assert (start, end) == (build.end_ns, quiet_to)  # the hour after the build is idle
    build = dataclasses.replace(build, end_ns=quiet_to)
    assert drawn(dataclasses.replace(session, tool_calls=(build,))).data.gaps == ()
    compacting = Compaction("k1", quiet_from, quiet_to - 2 * MIN, "compaction")
    assert drawn(dataclasses.replace(session, compactions=(compacting,))).data.gaps == ()
    turn = Prompt("p1", quiet_from - MIN, quiet_to + MIN, 10)
    assert drawn(dataclasses.replace(session, prompts=(turn,))).data.gaps == (
        (quiet_from, quiet_to),
    )
    # A snapshot or a marker in the middle is a moment: two stretches of 1 h 30 min remain.
    marker = Marker(quiet_from + 90 * MIN, "model_change", "m2")
    split = drawn(dataclasses.replace(session, markers=(marker,))).data.gaps
    assert split == ((quiet_from, marker.time_ns), (marker.time_ns, quiet_to))


def test_a_session_that_is_one_idle_stretch_is_left_alone() -> None:
    # Two snapshots four hours apart and nothing else: collapsing would leave nothing to draw.
    session = dataclasses.replace(worked([0, 4 * HOUR], end_ns=4 * HOUR), responses=())
    assert drawn(session).data.gaps == ()


def test_a_moment_of_activity_is_not_drawn_across_the_whole_width() -> None:
    # Two /context reports 4 h apart, the session's start 1 ms before the first (the corpus's
    # Claude Code 2.1.222 context-command session): that millisecond, with nothing in it,
    # took the whole width and the first composition was squeezed to the right edge.
    moment = S // 1000
    session = dataclasses.replace(
        worked([moment, 4 * HOUR], start_ns=0, end_ns=4 * HOUR), responses=()
    )
    assert drawn(session).data.gaps == ()
    # Ten seconds before the same night are drawn to scale, the night collapsed.
    session = dataclasses.replace(
        worked([10 * S, 4 * HOUR], start_ns=0, end_ns=4 * HOUR), responses=()
    )
    assert [(a, b) for a, b in drawn(session).data.gaps] == [(10 * S, 4 * HOUR)]


def test_seconds_of_work_hours_in_are_ticked_to_the_second() -> None:
    # 40 s of work, 3 h idle, 40 s of work: a 10 s step three hours in needs its seconds.
    session = worked([0, 20 * S, 3 * HOUR, 3 * HOUR + 20 * S])
    chart = drawn(session)
    labels = [label for _, label in chart.ticks]
    assert len(labels) == len(set(labels)) > 2
    assert any(label.startswith("3 h") and label.endswith(" s") for label in labels)
    check_ticks(chart)


# --------------------------------------------------------------------------- real journals


def test_two_gaps_of_a_real_codex_day() -> None:
    # A 24 h Codex rollout (tests/data): work, 3 h 52 min idle, work, 11 h 41 min idle, work.
    (session,) = read(CODEX_LONG)
    chart = drawn(session)
    assert [duration((b - a) / S) for a, b in chart.data.gaps] == ["3 h 52 min", "11 h 41 min"]
    check_ticks(chart)
    for (start, end), mark in zip(chart.data.gaps, chart.gaps, strict=True):
        quiet(session, start, end)
        x0, x1 = chart.gap_x(mark)
        assert x1 - x0 == pytest.approx(GAP_WIDTH, abs=0.1)


def quiet(session: Session, start: int, end: int) -> None:
    """Nothing of the session happens strictly inside (start, end), and something happens at
    each end (or the end is the session's own)."""
    spans = [
        (x.start_ns, x.end_ns)
        for x in (*session.responses, *session.tool_calls, *session.compactions)
    ]
    spans += [(p.start_ns, p.start_ns) for p in session.prompts]
    spans += [(p.end_ns, p.end_ns) for p in session.prompts]
    spans += [(x.time_ns, x.time_ns) for x in (*session.snapshots, *session.markers)]
    assert not any(a < end and b > start for a, b in spans)
    t0, t1 = drawn(session).data.span
    assert start == t0 or any(b == start for _, b in spans)
    assert end == t1 or any(a == end for a, _ in spans)


@pytest.mark.skipif(not MODEL_SWITCH.exists(), reason="the corpus (/work/shared) is not here")
def test_the_codex_model_switch_journal_is_drawn_with_its_idle_night_collapsed() -> None:
    """8 h 32 min with nothing recorded between 48 min and 9 h 21 min of a 10 h 39 min
    session took 80% of the chart; collapsed, the work on both sides gets the width."""
    (session,) = read(MODEL_SWITCH)
    chart = drawn(session)
    ((start, end),) = chart.data.gaps
    quiet(session, start, end)
    t0, t1 = chart.data.span
    assert (end - start) / (t1 - t0) > 0.75
    (mark,) = chart.gaps
    x0, x1 = chart.gap_x(mark)
    assert x1 - x0 == pytest.approx(GAP_WIDTH, abs=0.1)
    idle = duration((end - start) / S)
    assert idle == "8 h 32 min" and [t.text for t in mark.iter("text")] == [f"{idle} idle"]
    check_ticks(chart)
    assert sum(x < x0 for x, _ in chart.ticks) >= 2 and sum(x > x1 for x, _ in chart.ticks) >= 2
    # The work after the gap (1 h 18 min) now has most of the width, not a tenth of it.
    assert (chart.frame.right - x1) / (chart.frame.right - chart.frame.left) > 0.55
    # Every element went through the same map: the model change, the peak and the window's
    # step stay at their times.
    (change,) = chart.data.changes
    (line,) = [g for g in chart.root.iter("g") if g.get("class") == "marker model-change"]
    assert float(line.find("line").get("x1")) == pytest.approx(chart.frame.x(change[0]), abs=0.05)
    page = render_report([session])
    assert "1 idle stretch over 30 min with nothing recorded (8 h 32 min)" in page
    for picture in re.findall(r"<svg\b.*?</svg>", page, re.S):
        ET.fromstring(picture)


def test_the_peak_is_drawn_over_a_gap_its_label_reaches_across() -> None:
    """planetfall-68's peak label ran across its "4 h 40 min idle" band, drawn after it at
    .8 opacity: "peak Context size 1[▒]209". The peak is drawn after every gap now."""
    # 20 min of work, 3 h idle, and the peak one minute after the gap, its label (anchored
    # at its end, the peak being right of the middle) reaching back across the band.
    before = every(0, 20 * MIN)
    session = worked([*before, 3 * HOUR + 20 * MIN, 3 * HOUR + 21 * MIN])
    svg = chart_of(session)
    root = ET.fromstring(svg)
    order = list(root.iter())
    (gap,) = [g for g in order if g.get("class") == "gap"]
    (peak,) = [t for t in order if t.get("class") == "halo peak"]
    x0 = float(next(r for r in gap.iter() if r.tag.endswith("rect")).get("x") or 0)
    end = float(peak.get("x") or 0)
    assert peak.get("text-anchor") == "end" and end - 6.6 * len(peak.text or "") < x0 < end
    assert order.index(peak) > max(order.index(e) for e in gap.iter())


def test_the_peaks_label_goes_to_the_side_without_a_gap() -> None:
    """The peak just after a gap, right of the chart's middle: its label would go left,
    across the gap's band and idle label; it goes right, where there is room."""
    before, after = every(0, 20 * MIN), every(3 * HOUR + 20 * MIN, 3 * HOUR + 40 * MIN)
    session = worked(before + after)
    top = session.responses[len(before)]
    peak = dataclasses.replace(top, usage=Usage(90_000))
    responses = list(session.responses)
    responses[len(before)] = peak
    session = dataclasses.replace(session, responses=tuple(responses))
    root = ET.fromstring(chart_of(session))
    (gap,) = [g for g in root.iter() if g.get("class") == "gap"]
    band = next(r for r in gap.iter() if r.tag.endswith("rect"))
    x1 = float(band.get("x") or 0) + float(band.get("width") or 0)
    (label,) = [t for t in root.iter() if t.get("class") == "halo peak"]
    x = float(label.get("x") or 0)
    assert x > (62 + 1036) / 2  # right of the middle, where the label would go left
    assert label.get("text-anchor") == "start" and x > x1
