"""What a reader of the report sees on real journals (the review of the page read as a
user would, /work/notes/review-report.md): units on every duration, the part of the
reported size the estimate does not explain drawn and named, failures and responses
without usage counted, one name per category, and the sentences true of the session."""

from __future__ import annotations

import dataclasses
import itertools
import re
from pathlib import Path

import pytest
from test_report import Node, parse, read, section

from agent_profiler.model import (
    AnchorKind,
    Basis,
    Category,
    ContextSnapshot,
    Coverage,
    Harness,
    Response,
    Session,
    Stage,
    Usage,
)
from agent_profiler.report import render_report
from agent_profiler.report.data import estimation_words, session_data
from agent_profiler.report.fills import COLOURS, PATTERNS
from agent_profiler.report.svg import context_chart
from agent_profiler.report.text import utc
from agent_profiler.summary import summarise, summarise_all
from agent_profiler.summary_text import render_table
from agent_profiler.views import HEAD_AFTER_COMPACTION_LABEL, category_label, session_span
from shared_paths import TESTS

S = 1_000_000_000

CLAUDE = TESTS / "data" / "journals" / "claude-code"
COMPACT_BOUNDARY = CLAUDE / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"
INIT_ONLY = CLAUDE / "trackgentic-mp9r3tbb_v2.1.143_init-only-no-result.jsonl"


def page_of(*paths: Path, cost: bool = False) -> tuple[list[Session], Node]:
    sessions = read(*paths)
    return sessions, parse(render_report(sessions, cost=cost))


def facts_line(view: Node) -> str:
    """A Context view's line of facts under its heading (harness, model, start, length)."""
    return view.find("p", class_="muted")[0].text()


# --------------------------------------------------------------------------- durations


def test_a_compaction_without_a_recorded_duration_took_an_unknown_time() -> None:
    """Claude Code's compact_boundary is one record: the journal does not say how long the
    compaction took, so the table says "—", not a bare 0."""
    sessions, page = page_of(COMPACT_BOUNDARY)
    (compaction,) = sessions[0].compactions
    assert compaction.end_ns == compaction.start_ns
    table = section(page, sessions[0].session_id).one("table", class_="compactions")
    took = table.find("td")[4].text()
    assert took == "—"


def test_a_session_shorter_than_a_second_lasted_under_a_second() -> None:
    sessions, page = page_of(INIT_ONLY)
    t0, t1 = sessions[0].start_ns, sessions[0].end_ns
    assert t1 - t0 < 1_000_000_000
    assert "lasted <1\u00a0s" in facts_line(section(page, sessions[0].session_id))


# --------------------------------------------------------------------------- reported − estimated

PI_LARGE = TESTS / "data" / "journals" / "pi" / "pi-mono_large-session_v1.jsonl"


def sized(*sizes: tuple[int, int | None]) -> Session:
    """A session of one request a minute, each snapshot estimating `estimated` tokens (all
    system instructions) of the `reported` Context size (None: no size reported)."""
    responses, snapshots = [], []
    for index, (estimated, reported) in enumerate(sizes):
        start = (60 + 60 * index) * S
        if reported is not None:
            responses.append(Response(f"r{index}", start, start + S, "m", Usage(reported)))
        snapshots.append(
            ContextSnapshot(
                start,
                AnchorKind.RESPONSE if reported is not None else AnchorKind.SESSION,
                f"r{index}",
                Stage.REQUEST_INPUT,
                Basis.CHARS,
                Coverage.COMPLETE,
                index == 0,
                ((Category.SYSTEM, estimated),),
                (),
                reported_tokens=reported,
            )
        )
    return Session(
        harness=Harness.CODEX,
        session_id="sized",
        start_ns=60 * S,
        end_ns=(60 + 60 * len(sizes)) * S,
        sources=("sized.jsonl",),
        models=("m",),
        responses=tuple(responses),
        snapshots=tuple(snapshots),
    )


def top_edge(d: str) -> list[tuple[float, float]]:
    """(x where a step starts, its y) along the first edge of a step path or band, left to
    right (a band's edge back along its bottom is not read)."""
    steps: list[tuple[float, float]] = []
    x = y = 0.0
    for command, value in re.findall(r"([MHVZ])([-\d.,]*)", d):
        if command == "M":
            x, y = (float(v) for v in value.split(","))
        elif command == "V":
            y = float(value)
        elif command == "H":
            if float(value) < x:
                break
            steps.append((x, y))
            x = float(value)
    return steps


def at(steps: list[tuple[float, float]], x: float) -> float:
    return [y for start, y in steps if start <= x][-1]


def chart_of(session: Session) -> Node:
    return parse(context_chart(session_data(summarise(session), session), None).svg)


def test_what_the_estimate_leaves_of_the_reported_size_is_drawn_above_the_bands() -> None:
    """Estimated 100, 300, 300, 200 of a reported 150, 200, 400, none: the hatched band runs
    from the bands' top up to the line where the line is higher (the first and third
    requests), has no height where the estimate is the larger (the second: nothing is
    scaled to meet the line) or where no size was reported (the fourth)."""
    chart = chart_of(sized((100, 150), (300, 200), (300, 400), (200, None)))
    band = top_edge(chart.one("path", class_="band").attrs["d"])
    line = top_edge(chart.one("path", class_="size-line").attrs["d"])
    hatched = chart.one("path", class_="unexplained")
    top = top_edge(hatched.attrs["d"])
    assert len(top) == 4
    for x, y in top[:3]:
        assert y == min(at(band, x), at(line, x))  # the higher of the two (SVG y runs down)
    (first, _), (second, _), (third, _), (fourth, _) = top
    assert at(line, first) < at(band, first) and top[0][1] == at(line, first)
    assert top[1][1] == at(band, second) < at(line, second)
    assert top[2][1] == at(line, third) < at(band, third)
    assert top[3][1] == at(band, fourth) > at(line, fourth)  # the line holds, unknown here
    assert "not explain" in hatched.one("title").text()
    assert "never scaled" in hatched.one("title").text()
    # The hover columns say how much, or that the estimate is the larger.
    tips = [r.one("title").text() for r in chart.one("g", class_="hover").find("rect")]
    assert "not explained by the estimate: 50" in tips[0]
    assert "the estimate exceeds the reported size by 100" in tips[1]
    assert "not explained by the estimate: 100" in tips[2]
    assert "not explained" not in tips[3] and "exceeds" not in tips[3]


def test_an_estimate_never_below_the_reported_size_draws_no_hatched_band() -> None:
    session = sized((200, 150), (300, 300))
    assert not chart_of(session).find("path", class_="unexplained")
    page = parse(render_report([session]))
    assert "Not explained by the estimate" not in page.one("figure").text()
    assert "Hatched" not in page.one("figcaption").text()


def test_a_real_sessions_unexplained_part_is_in_its_legend_caption_and_tooltips() -> None:
    """Pi's large session: at its last request the estimate is 121,206 of 177,604 tokens,
    32% of what was sent is explained by nothing on the chart but the hatched band."""
    sessions, page = page_of(PI_LARGE)
    view = section(page, sessions[0].session_id)
    keys = [li.text() for li in view.one("figure").one("ul", class_="legend").find("li")]
    assert "Not explained by the estimate (reported − estimated)" in keys
    caption = view.one("figcaption").text()
    assert "Hatched, between the bands and the line" in caption
    assert "(reported − estimated)" in caption
    tips = [r.one("title").text() for r in view.one("g", class_="hover").find("rect")]
    assert "not explained by the estimate: 56,398" in tips[-1]  # 177,604 − 121,206


def test_the_overview_calls_the_composition_estimated() -> None:
    _, page = page_of(PI_LARGE)
    note = page.one("section", id="overview").one("p", class_="note").text()
    assert "shares of the estimated composition" in note
    assert "measured" not in note


# --------------------------------------------------------------------------- failures, usage

BACKGROUND_TASKS = CLAUDE / "trackgentic-mpa014m2_v2.1.143_bg-tasks-result.jsonl"
SPOTTER_DIR = CLAUDE / "spotter-2.1.39-subagents-compaction"


def test_responses_without_usage_are_counted_beside_the_responses() -> None:
    """A `-p` run on glm-5.1 whose 10 responses record usage {0, 0}: the page said
    "Responses 0" and nothing else, as if the model never answered; summary --json says
    responses_without_usage 10."""
    sessions, page = page_of(BACKGROUND_TASKS)
    (session,) = sessions
    row = summarise(session)
    assert (row.calls, row.responses_without_usage) == (0, 10)
    view = section(page, session.session_id)
    assert view.one("dd", data_key="responses").text() == "0 (+10 without usage)"
    assert "10 responses without usage in the journal" in view.one("p", class_="basis").text()
    cell = page.one("tr", data_session_id=session.session_id).one("td", data_key="responses")
    assert cell.text() == "0 (+10 without usage)"


def test_failed_tool_calls_are_in_each_sessions_numbers() -> None:
    sessions, page = page_of(SPOTTER_DIR)
    failed = {s.session_id: summarise(s).failed_tool_calls for s in sessions}
    assert sorted(failed.values()) == [0, 7]
    for session in sessions:
        view = section(page, session.session_id)
        assert (
            view.one("dd", data_key="failed-tool-calls").text() == f"{failed[session.session_id]}"
        )
        assert view.one("dd", data_key="responses").text() == f"{summarise(session).calls:,}"


# --------------------------------------------------------------------------- one name each


def test_the_inferred_head_has_one_name_across_the_page() -> None:
    """Spotter's Unattributed is only its inferred head: the chart's legend, bands and
    tables named it so, but the Overview's legend and the chart's tooltips said
    "Unattributed" and the receipt "written once, unattributed"."""
    pytest.importorskip("genai_prices")
    sessions, page = page_of(SPOTTER_DIR, cost=True)
    head = category_label(Category.UNATTRIBUTED, HEAD_AFTER_COMPACTION_LABEL)  # its compaction
    overview = page.one("section", id="overview").one("ul", class_="legend").text()
    assert head in overview and "Unattributed" not in overview
    main = section(page, sessions[0].session_id)
    tips = [r.one("title").text() for r in main.one("g", class_="hover").find("rect")]
    assert all(f"  {head} " in tip for tip in tips)
    assert not any("Unattributed" in tip for tip in tips)
    receipt = page.one("section", id=f"{main.attrs['id']}-cost")
    rows = [tr.find("td")[0].text() for tr in receipt.find("tr") if tr.find("td")]
    assert f"written once, unattributed: {head}" in rows
    assert "written once, unattributed" not in rows


# --------------------------------------------------------------------------- a made-up date

GH_AW = CLAUDE / "gh-aw_sample_claude_log_new_format.txt"


@pytest.mark.parametrize("journal", [GH_AW, INIT_ONLY])
def test_a_synthetic_clocks_made_up_date_is_not_on_the_axis(journal: Path) -> None:
    """A stream-json log has no times: it is laid out to end at the file's modification
    time (a clone's, a copy's), which the axis gave as the session's date."""
    (session,), page = page_of(journal)
    assert session.clock == "synthetic"
    chart = section(page, session.session_id).one("svg", class_="chart")
    axis = [t.text() for t in chart.find("text") if t.text().startswith("time since")]
    assert axis == ["time since session start (synthetic clock)"]
    assert utc(session.start_ns)[:10] not in chart.text()


# --------------------------------------------------------------------------- narrow windows


def css_rules(css: str) -> dict[str, str]:
    """selector → declarations of each top-level rule of the page's stylesheet."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    css = re.sub(r"@media[^{]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}", "", css)
    rules: dict[str, str] = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        for selector in selectors.split(","):
            rules[" ".join(selector.split())] = rules.get(" ".join(selector.split()), "") + body
    return rules


def test_a_narrow_window_scrolls_the_overview_and_the_chart_instead_of_cutting_them() -> None:
    """At 760 px the Overview's last column was cut off at the right and the chart scaled
    down to 6 px labels: the table sits in a box that scrolls sideways, and the chart keeps
    a width its text is readable at, scrolling in its figure."""
    _, page = page_of(SPOTTER_DIR)
    table = page.one("table", class_="overview")
    (box,) = [n for n in page.walk() if table in n.children]
    assert box.tag == "div" and "scroll" in box.attrs["class"].split()
    rules = css_rules(page.one("style").text())
    assert "overflow-x: auto" in rules[".scroll"] and "overflow-x: auto" in rules["figure"]
    assert re.search(r"min-width: *7[6-9]\dpx", rules["figure svg.chart"])


# --------------------------------------------------------------------------- no price


def test_a_session_without_a_priced_request_has_no_price_not_zero_dollars() -> None:
    """OpenCode's dhc session on x-preview-f-free (146 requests, none priced) and the
    glm-5.1 run whose responses record no usage cost "$0.00" on the Overview: free, it
    read, which the page does not know."""
    pytest.importorskip("genai_prices")
    sessions, page = page_of(BACKGROUND_TASKS, cost=True)
    (session,) = sessions
    cell = page.one("tr", data_session_id=session.session_id).one("td", data_key="cost")
    assert cell.text() == "no price"
    assert cell.one("a").attrs["href"] == f"#{section(page, session.session_id).attrs['id']}-cost"
    # A session whose requests are priced keeps its dollars.
    sessions, page = page_of(SPOTTER_DIR, cost=True)
    cells = [
        page.one("tr", data_session_id=s.session_id).one("td", data_key="cost") for s in sessions
    ]
    assert all(re.fullmatch(r"\$\d+\.\d\d", c.one("a").text()) for c in cells)


# --------------------------------------------------------------------------- true sentences

CONTEXT_SCREEN = CLAUDE / "context-command" / "simonw-cct-pr51_v2.1.2_44baca89.jsonl"


@pytest.mark.parametrize("journal", [BACKGROUND_TASKS, INIT_ONLY])
def test_a_head_never_inferred_is_not_said_to_be_shown(journal: Path) -> None:
    """No Context size reported, so no Unattributed band: the page said the part the
    journal lacks "is shown as Unattributed, inferred as reported − estimated"."""
    (session,), page = page_of(journal)
    assert not any(x.reported_tokens for x in session.snapshots)
    basis = section(page, session.session_id).one("p", class_="basis").text()
    assert "shown as Unattributed" not in basis
    assert "no Context size was reported to infer that part from" in basis


def test_a_context_screens_snapshot_is_not_called_a_request() -> None:
    """A /context screen and no request: "At the last request with both" was false."""
    (session,), page = page_of(CONTEXT_SCREEN)
    assert session.responses == ()
    basis = section(page, session.session_id).one("p", class_="basis").text()
    assert "request with both" not in basis
    assert (
        "At the last snapshot with both (the session's, not a request's), the estimate is "
        "23,781 of 24,000 reported tokens" in basis
    )


# --------------------------------------------------------------------------- the Overview's rows

JOURNALS = TESTS / "data" / "journals"
CODEX_SHORT = "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
GEMINI_SUBAGENTS = JOURNALS / "gemini-cli" / "expenses-tracker-0.37.1-subagents"
OPENCODE_CHILD = JOURNALS / "opencode" / "ses_2bef25635ffe8EzID0I1Oeymal.export.json"


def test_a_parents_subagents_are_listed_in_start_order() -> None:
    """Gemini CLI's expenses-tracker: subagent ngzcxj (02:31:56) was listed before shcg5o
    (02:26:55), in the order their files were read; the trace (and README) say start order."""
    sessions, page = page_of(GEMINI_SUBAGENTS)
    parent = next(s for s in sessions if not s.is_subagent)
    children = [s for s in sessions if s.parent_session == parent.session_id]
    assert len(children) == 2
    by_start = sorted(children, key=lambda s: (session_span(s)[0], s.session_id))
    assert [s.session_id for s in children] != [s.session_id for s in by_start]  # file order
    rows = [r.attrs["data-session-id"] for r in page.one("table", class_="overview").find("tr")[1:]]
    assert rows == [parent.session_id, *(s.session_id for s in by_start)]
    assert [r.session for r in summarise_all(sessions)] == rows  # summary's order too


def test_a_subagent_whose_parent_was_not_read_is_marked_a_subagent() -> None:
    (session,), page = page_of(OPENCODE_CHILD)
    assert session.is_subagent
    row = page.one("tr", data_session_id=session.session_id)
    assert row.attrs["class"] == "depth-0"
    assert "subagent (its parent is not in this report)" in row.one("td", class_="id").text()


# --------------------------------------------------------------------------- smaller points


def grey(colour: str) -> float:
    """The grey a colour prints as (Rec. 709 luma, as CSS grayscale() and most printers)."""
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def kind(pattern: str) -> tuple[str, ...]:
    """What a pattern's marks are, whatever their size: dots (filled circles), rings
    (hollow ones), or lines of a direction, and how many a tile holds."""
    marks = re.findall(r"<(circle|path)([^>]*)/>", pattern)
    return tuple(
        ("ring" if 'fill="none"' in attrs else "dot")
        if tag == "circle"
        else re.sub(r"[-\d.,]+", "", re.search(r'd="([^"]*)"', attrs)[1])
        for tag, attrs in marks
    )


def test_fills_that_print_as_one_grey_have_marks_of_different_kinds() -> None:
    """In greyscale Skills (#edc948, small dots), Harness overhead (#a0cbe8, dashes) and the
    inferred head (#bab0ac, fine dots) were three light greys, Skills' dots and Compaction
    summaries' differing only in size: fills within 12 grey levels of each other (of 255)
    have marks of a different kind."""
    near = [
        (a, b)
        for a, b in itertools.combinations(Category, 2)
        if abs(grey(COLOURS[a]) - grey(COLOURS[b])) < 12
    ]
    assert (Category.SKILLS, Category.SUMMARIES) in near
    for a, b in near:
        assert kind(PATTERNS[a]) != kind(PATTERNS[b]), (a, b)


def test_an_additions_category_stays_on_one_line() -> None:
    """A long target path squeezed "Tool results" onto two or three lines."""
    sessions, page = page_of(GEMINI_SUBAGENTS)
    table = section(page, sessions[0].session_id).one("table", class_="additions")
    cells = [tr.find("td")[3] for tr in table.find("tr")[1:]]
    assert cells and all(c.attrs.get("class") == "category" for c in cells)
    assert "white-space: nowrap" in css_rules(page.one("style").text())["td.category"]


def test_a_redacted_journal_says_what_that_means_for_the_estimate() -> None:
    """The report listed 'redacted-placeholder × 9' among what was not estimated; summary
    says what it means, and the page now says the same."""
    (codex,) = read(JOURNALS / "codex" / CODEX_SHORT)
    redacted = dataclasses.replace(codex, unmeasured=(("redacted-placeholder", 9),))
    said = [w for w in estimation_words(redacted) if "redacted before publication" in w]
    assert said == [
        "Journal redacted before publication (9 `REDACTED` placeholders): it holds less text "
        "than the model was sent, so the estimate error is not the estimator's alone."
    ]
    assert said[0][1:-1] in render_table([summarise(redacted)])
