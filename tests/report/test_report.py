"""`agent_profiler.report`: the HTML report's numbers equal the model's and the trace's
(the Perfetto writer run on the same sessions), the page is self-contained, large sessions
are drawn downsampled while their tables keep every number, and headless Chromium renders
it without a console message (skipped when `chromium` is not installed)."""

from __future__ import annotations

import dataclasses
import io
import itertools
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest
from test_claude_code import SMALL, SPOTTER_DIR, SPOTTER_ID
from test_trace import capture_for

from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.model import (
    AnchorKind,
    Basis,
    Category,
    ChangeKind,
    Compaction,
    ContextChange,
    ContextSnapshot,
    Coverage,
    Harness,
    Response,
    Session,
    SourceKind,
    Stage,
    ToolCall,
    Usage,
)
from agent_profiler.report import (
    LARGEST_ADDITIONS,
    MAX_POINTS,
    HtmlReportWriter,
    downsample,
    render_report,
)
from agent_profiler.report.data import session_data
from agent_profiler.report.svg import context_chart
from agent_profiler.report.text import clock_text
from agent_profiler.summary import summarise, summarise_all
from agent_profiler.views import (
    HEAD_AFTER_COMPACTION_LABEL,
    HEAD_LABEL,
    INFERRED_HEAD_ID,
    context_size_series,
)
from agent_profiler.writers import PerfettoWriter
from shared_paths import TESTS
from traceview import TraceView, load_trace

CODEX = TESTS / "data" / "journals" / "codex"
CODEX_LONG = CODEX / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl.gz"
S = 1_000_000_000


# --------------------------------------------------------------------------- a tiny DOM


@dataclass(eq=False)
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(self.texts) + "".join(c.text() for c in self.children)

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            yield from child.walk()

    def find(self, tag: str | None = None, **attrs: str) -> list[Node]:
        """Descendants (and self) with this tag and attribute values (`class_` for class,
        matching one of the classes; `data_key` for data-key)."""
        wanted = {k.rstrip("_").replace("_", "-"): v for k, v in attrs.items()}
        found = []
        for node in self.walk():
            if tag is not None and node.tag != tag:
                continue
            ok = True
            for key, value in wanted.items():
                have = node.attrs.get(key)
                if key == "class":
                    ok = ok and have is not None and value in have.split()
                else:
                    ok = ok and have == value
            if ok:
                found.append(node)
        return found

    def one(self, tag: str | None = None, **attrs: str) -> Node:
        (node,) = self.find(tag, **attrs)
        return node


_VOID = {"meta", "br", "img", "input", "link", "hr", "col"}
_SVG_LEAVES = {"rect", "path", "line", "circle", "stop"}


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].texts.append(data)


def parse(text: str) -> Node:
    builder = _Builder()
    builder.feed(text)
    builder.close()
    return builder.root


def number(text: str) -> int | None:
    """'+166,759' → 166759; '—' → None."""
    digits = re.sub(r"[^\d]", "", text.split("(")[0])
    return int(digits) if digits else None


# --------------------------------------------------------------------------- fixtures


def read(*paths: Path) -> list[Session]:
    result = load(list(paths), Diagnostics())
    assert result.failures == []
    return result.sessions


@pytest.fixture(scope="module")
def spotter() -> list[Session]:
    return read(SPOTTER_DIR)


@pytest.fixture(scope="module")
def spotter_page(spotter: list[Session]) -> Node:
    return parse(render_report(spotter))


@pytest.fixture(scope="module")
def spotter_trace(spotter: list[Session]) -> TraceView:
    stream = io.BytesIO()
    PerfettoWriter().write(spotter, stream)
    return load_trace(stream.getvalue())


def overview_row(page: Node, session_id: str) -> Node:
    return page.one("tr", data_session_id=session_id)


def section(page: Node, session_id: str) -> Node:
    return page.one("section", data_session_id=session_id)


# --------------------------------------------------------------------------- overview numbers


def test_overview_numbers_equal_the_model_and_summary(
    spotter: list[Session], spotter_page: Node
) -> None:
    rows = {row.session: row for row in summarise_all(spotter)}
    main, child = spotter
    assert child.parent_session == main.session_id
    for session in spotter:
        row = overview_row(spotter_page, session.session_id)
        cell = {td.attrs["data-key"]: td.text() for td in row.find("td") if "data-key" in td.attrs}
        assert number(cell["responses"]) == len(session.responses)
        peak = max(r.usage.prompt_tokens for r in session.responses)
        assert number(cell["peak"]) == peak == rows[session.session_id].peak_prompt_tokens
        assert number(cell["compactions"]) == len(session.compactions)
        # Claude Code journals do not state the window: the assumed 200,000 the trace
        # draws, and the fill against it, both labelled assumed (as in `summary`)
        assert number(cell["window"]) == 200_000 and "assumed" in cell["window"]
        fill = rows[session.session_id].peak_fill
        assert fill is not None and cell["fill"] == f"{100 * fill:.0f}%assumed"
        assert rows[session.session_id].window_source == "assumed"
        assert session.harness.label in row.text() and (session.model or "") in row.text()
    subagents = overview_row(spotter_page, main.session_id).one(data_key="subagents")
    assert subagents.texts == ["1"] and subagents.one("small").text() == "3 responses"
    # the subagent is listed right after its parent, indented
    ids = [
        tr.attrs["data-session-id"]
        for tr in spotter_page.one("table", class_="overview").find("tr")[1:]
    ]
    assert ids == [main.session_id, child.session_id]
    assert "depth-1" in overview_row(spotter_page, child.session_id).attrs["class"]
    assert (main.session_id, 166_759) == (SPOTTER_ID, rows[SPOTTER_ID].peak_prompt_tokens)


def test_overview_bar_is_the_latest_composition(spotter: list[Session], spotter_page: Node) -> None:
    note = spotter_page.one("section", id="overview").find("p")[0].text()
    assert "not of the window" in note
    for session in spotter:
        last = [x for x in session.snapshots if x.anchor is AnchorKind.RESPONSE][-1]
        segments = overview_row(spotter_page, session.session_id).find("rect", class_="segment")
        shown = [(s.attrs["data-category"], s.one("title").text()) for s in segments]
        expected = [(c, t) for c in Category for c2, t in last.categories if c2 is c]
        assert [key for key, _ in shown] == [c.value for c, _ in expected]  # contract order
        for (_, title), (category, tokens) in zip(shown, expected, strict=True):
            # Unattributed is the inferred head in these Claude Code sessions: named so (with
            # what the harness restored in the one whose head was measured after a compaction)
            head = HEAD_AFTER_COMPACTION_LABEL if session.compactions else HEAD_LABEL
            name = head if category is Category.UNATTRIBUTED else category.label
            assert title.startswith(f"{name}: {tokens:,} tokens (")
        widths = sum(float(s.attrs["width"]) for s in segments)
        assert widths == pytest.approx(270, abs=0.5)  # shares of the composition, not window


def test_session_without_a_breakdown_is_not_recorded() -> None:
    bare = Session(
        harness=Harness.CODEX,
        session_id="bare",
        start_ns=10 * S,
        end_ns=20 * S,
        sources=("bare.jsonl",),
        responses=(Response("r1", 11 * S, 12 * S, "m", Usage(prompt_tokens=1234)),),
    )
    page = parse(render_report([bare]))
    row = overview_row(page, "bare")
    assert row.one("td", class_="bar").text() == "not recorded"
    assert number(row.one(data_key="peak").text()) == 1234
    assert section(page, "bare").find("path", class_="size-line")
    assert not section(page, "bare").find("path", class_="band")


# --------------------------------------------------------------------------- context view


def test_chart_series_are_the_traces_counters(
    spotter: list[Session], spotter_page: Node, spotter_trace: TraceView
) -> None:
    main = spotter[0]
    capture = capture_for(spotter_trace, SPOTTER_ID)
    # The line is the trace's Context size counter minus its opening and closing zeros.
    counter = spotter_trace.counter_samples(capture, "Context size")[1:-1]
    assert [(t, int(v)) for t, v in counter] == context_size_series(main)
    # ... whose maximum includes the compaction's pre_tokens (167,094), while the Overview's
    # peak is the largest response prompt, as `summary` reports it.
    assert max(v for _, v in counter) == 167_094
    responses = spotter_trace.slices_of_kind("assistant-message", capture)
    peak = max(r.args["context_tokens"] for r in responses)
    view = section(spotter_page, SPOTTER_ID)
    assert number(view.one("dd", data_key="peak").text()) == peak == 166_759
    assert f"peak Context size {peak:,}" in view.one("text", class_="peak").text()
    # One band per category the trace has a `Context: <Label>` counter for, in contract order.
    bands = [p.attrs["data-category"] for p in view.find("path", class_="band")]
    labels = {t.name for t in spotter_trace.counter_tracks(capture)}
    assert bands == [c.value for c in Category if f"Context: {c.label}" in labels]
    assert view.find("line", class_="window-line")
    (marker,) = view.find("g", class_="compaction")
    assert (
        "167,094 → 33,960 tokens (after: the first request after it)" in marker.one("title").text()
    )
    assert not view.find("g", class_="model-change")


def test_largest_additions_equal_the_snapshot_changes(
    spotter: list[Session], spotter_page: Node, spotter_trace: TraceView
) -> None:
    main = spotter[0]
    # The tool column names the call and what it acted on (issue 29: targets.py).
    tools = {c.call_id: f"{c.name} {c.target.partition(':')[2]}".strip() for c in main.tool_calls}
    grown = [
        (change.delta_tokens, tools.get(change.source_id), change.id)
        for snapshot in main.snapshots
        if not snapshot.baseline
        for change in snapshot.changes
        if change.delta_tokens > 0
    ]
    # The inferred head measured again after the compaction (+4,454 at request 103) would be
    # seventh: a re-fit of the estimate, not an addition anyone made (views.largest_additions).
    assert (4_454, None, INFERRED_HEAD_ID) in grown
    # Nor is it request 103's largest addition in the summary (it grew nothing else).
    assert summarise(main).per_call[102].largest_addition_tokens is None
    expected = sorted((g for g in grown if g[2] != INFERRED_HEAD_ID), key=lambda e: -e[0])
    table = section(spotter_page, SPOTTER_ID).one("table", class_="additions")
    rows = table.find("tr")[1:]
    assert len(rows) == LARGEST_ADDITIONS

    def tool_of(row: Node) -> str | None:
        cell = row.one(data_key="tool")
        if cell.text() == "—":
            return None
        names = [n.text() for n in cell.find("span")] + [n.text() for n in cell.find("code")]
        return " ".join(names)

    shown = [
        (number(r.one(data_key="delta").text()), tool_of(r), r.attrs["data-item"]) for r in rows
    ]
    assert [s[0] for s in shown] == [e[0] for e in expected[:LARGEST_ADDITIONS]]
    assert set(shown) <= set(expected)
    assert shown[0] == (
        6_417,
        "Write lib/spotter_web/live/session_live.ex",
        "result:toolu_01J3LpNDRpSNxjChpcebSS5m",
    )
    assert f"of {len(expected):,} additions" in section(spotter_page, SPOTTER_ID).text()
    # The trace's "Largest additions" instants are the tool-linked ones, in the same order.
    capture = capture_for(spotter_trace, SPOTTER_ID)
    instants = sorted(
        (
            s
            for s in spotter_trace.slices_in_capture(capture)
            if spotter_trace.tracks[s.track_uuid].name == "Largest additions"
        ),
        key=lambda s: s.args["rank"],
    )
    linked = [(d, t) for d, t, _ in shown if t is not None]
    named = [
        (i.args["delta_tokens"], " ".join(filter(None, (i.args["tool"], i.args.get("target")))))
        for i in instants
    ]
    assert named[: len(linked)] == linked[: len(instants)]


def test_compactions_table_and_estimation_words(spotter: list[Session], spotter_page: Node) -> None:
    (compaction,) = spotter[0].compactions
    view = section(spotter_page, SPOTTER_ID)
    row = view.one("table", class_="compactions").find("tr")[1]
    assert number(row.one(data_key="pre").text()) == compaction.pre_tokens == 167_094
    # not recorded by Claude Code: the first request after it, labelled so
    assert row.one(data_key="post").text() == "33,960 (first request after)"
    basis = view.one("p", class_="basis").text()
    assert "characters ÷ 4" in basis and "the final request may differ" in basis
    assert "Coverage: partial" in basis
    last = spotter[0].snapshots[-1]
    assert f"{last.estimated_tokens:,} of {last.reported_tokens:,} reported" in basis


def test_every_snapshot_row_is_listed(spotter: list[Session], spotter_page: Node) -> None:
    main = spotter[0]
    table = section(spotter_page, SPOTTER_ID).one("table", class_="snapshots")
    rows = table.find("tr")[1:]
    assert len(rows) == len(main.snapshots) == 153
    for tr, snapshot in zip(rows, sorted(main.snapshots, key=lambda x: x.time_ns), strict=True):
        cells = tr.find("td")
        assert number(cells[2].text()) == snapshot.reported_tokens
        assert number(cells[3].text()) == snapshot.estimated_tokens


def test_crowded_markers_and_a_window_far_above_the_data() -> None:
    """Five compactions close together keep their labels apart; a 1M window over a 20k
    session is named instead of drawn, so the chart is not a sliver."""
    session = dataclasses.replace(
        long_session(40),
        window_tokens=1_000_000,
        compactions=tuple(
            Compaction(f"k{i}", (500 + 5 * i) * S, (501 + 5 * i) * S, "microcompaction")
            for i in range(5)
        ),
    )
    view = section(parse(render_report([session])), "long")
    assert not view.find("line", class_="window-line")
    assert "window 1,000,000" in view.one("text", class_="window-note").text()
    labels = [g.find("text") for g in view.find("g", class_="compaction")]
    assert len(labels) == 5 and labels[0][0].text() == "▼ compaction 1"
    spans = sorted(
        (float(t.attrs["x"]), float(t.attrs["x"]) + 6.6 * len(t.text()))
        for found in labels
        for t in found
    )
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))


@pytest.mark.parametrize(
    ("source", "origin"),
    [
        ("model: Gemini CLI tokenLimit() for Gemini models (not in journal)", "model table"),
        ("muse-spark model/list value (not in the journal)", "model table"),
        ("assumed: Claude default window, not in journal", "assumed"),
        (None, "assumed"),
        ("journal (/context)", None),
    ],
)
def test_the_window_says_where_it_came_from(source: str | None, origin: str | None) -> None:
    """Only a window read from the journal goes unlabelled; one from the harness's own
    per-model table (Gemini CLI's tokenLimit()) is not called assumed."""
    session = dataclasses.replace(long_session(40), window_source=source)
    page = parse(render_report([session]))
    view = section(page, "long")
    cell = overview_row(page, "long").one(data_key="window")
    header = view.one("dd", data_key="window").text()
    chart = view.one("text", class_="window-note").text()
    if origin is None:
        assert "(" not in header and "window 400,000:" in chart
        assert [small.text() for small in cell.find("small")] in ([], ["journal"])
    else:
        assert header == f"400,000 ({origin})" and f"window 400,000 ({origin})" in chart
        assert cell.one("small").text() == origin
    assert number(header) == 400_000


def test_a_gemini_window_from_the_model_table_is_not_assumed() -> None:
    path = TESTS / "data" / "journals" / "gemini-cli"
    (session,) = load([path / "entire-ab-2b9748b105-0_session.json"], Diagnostics()).sessions
    assert session.window_source and session.window_source.startswith("model:")
    page = parse(render_report([session]))
    cell = overview_row(page, session.session_id)
    labels = [small.text() for td in cell.find("td") for small in td.find("small")]
    assert labels.count("model table") == 2 and "assumed" not in labels  # window and fill
    assert (
        section(page, session.session_id)
        .one("dd", data_key="window")
        .text()
        .endswith("(model table)")
    )


# --------------------------------------------------------------------------- large sessions


def long_session(count: int = 500) -> Session:
    """`count` responses with a growing context, a compaction half way, a model change."""
    responses, snapshots, calls = [], [], []
    results = 0
    for i in range(count):
        start = (100 + 20 * i) * S
        results = (1_000 if i == count // 2 else results) + 300 + (i % 7) * 100
        categories = (
            (Category.SYSTEM, 3_000),
            (Category.TOOLS, 5_000),
            (Category.RESULTS, results),
        )
        total = sum(t for _, t in categories)
        calls.append(ToolCall(f"c{i}", "Read" if i % 2 else "Bash", start - 5 * S, start - 4 * S))
        delta = 300 + (i % 7) * 100
        change = ContextChange(
            f"result:c{i}",
            Category.RESULTS,
            ChangeKind.ADDED,
            delta,
            delta,
            None,
            "Tool result",
            f"c{i}",
            SourceKind.TOOL,
        )
        model = "model-a" if i < 300 else "model-b"
        responses.append(Response(f"r{i}", start, start + 3 * S, model, Usage(total + 2_000)))
        snapshots.append(
            ContextSnapshot(
                start,
                AnchorKind.RESPONSE,
                f"r{i}",
                Stage.REQUEST_INPUT,
                Basis.CHARS,
                Coverage.COMPLETE,
                i in (0, 300),
                categories,
                (change,),
                reported_tokens=total + 2_000,
            )
        )
    half = responses[count // 2 - 1]
    compaction = Compaction(
        "k1",
        half.end_ns + S,
        half.end_ns + 5 * S,
        "compaction",
        "auto",
        half.usage.prompt_tokens,
        9_000,
    )
    return Session(
        harness=Harness.CODEX,
        session_id="long",
        start_ns=90 * S,
        end_ns=(100 + 20 * count) * S,
        sources=("long.jsonl",),
        models=("model-a", "model-b"),
        window_tokens=400_000,
        window_source="journal",
        responses=tuple(responses),
        tool_calls=tuple(calls),
        compactions=(compaction,),
        snapshots=tuple(snapshots),
    )


def test_a_500_response_session_is_drawn_downsampled_and_tabled_in_full() -> None:
    session = long_session(500)
    page = parse(render_report([session]))
    view = section(page, "long")
    # one horizontal step per drawn sample (bands: along the top, then back along the bottom)
    line = view.one("path", class_="size-line").attrs["d"]
    assert 100 < line.count("H") <= MAX_POINTS + 1
    for band in view.find("path", class_="band"):
        assert 100 < band.attrs["d"].count("H") <= 2 * (MAX_POINTS + 1)
    assert len(view.one("g", class_="hover").find("rect")) <= MAX_POINTS
    assert "drawn from" in view.one("figcaption").text()
    assert len(view.one("table", class_="snapshots").find("tr")) - 1 == 500
    additions = view.one("table", class_="additions")
    assert f"of {500 - 2:,} additions" in view.text()  # the two baselines are not additions
    assert [number(r.one(data_key="delta").text()) for r in additions.find("tr")[1:]] == [900] * 20
    # window known from the journal: fill = peak / window
    row = overview_row(page, "long")
    peak = max(r.usage.prompt_tokens for r in session.responses)
    assert number(row.one(data_key="peak").text()) == peak
    assert row.one(data_key="fill").text() == f"{100 * peak / 400_000:.0f}%"
    (change,) = view.find("g", class_="model-change")
    assert "model → model-b" in change.text()
    assert view.find("g", class_="compaction")
    # and listed under its heading, at its time since the session's start
    assert "Model changes" in [h.text() for h in view.find("h3")]
    switch = min(r.start_ns for r in session.responses if r.model == "model-b")
    clock = clock_text(switch - session.start_ns)
    assert f"{clock}: model → model-b" in [li.text() for li in view.find("li")]


def test_downsample_keeps_the_ends_and_the_extremes() -> None:
    values = [i % 50 for i in range(5_000)]
    values[1234] = 10_000
    values[4321] = -5
    keep = downsample(values, 400)
    assert len(keep) <= 400 and keep == sorted(set(keep))
    assert {0, 4_999, 1_234, 4_321} <= set(keep)
    assert downsample(list(range(10)), 400) == list(range(10))


def test_the_chart_and_tables_read_one_session_data() -> None:
    """data.py takes each fact once (views, summary); the chart and its caption agree on the
    samples drawn even when the model holds the snapshots out of time order."""
    ordered = long_session(500)
    shuffled = dataclasses.replace(ordered, snapshots=tuple(reversed(ordered.snapshots)))
    row = summarise(shuffled)
    data = session_data(row, shuffled)
    assert [x.time_ns for x in data.snapshots] == sorted(x.time_ns for x in ordered.snapshots)
    assert data.categories == [Category.SYSTEM, Category.TOOLS, Category.RESULTS]
    assert data.sizes == context_size_series(shuffled)
    assert [model for _, model in data.changes] == ["model-b"]
    assert data.peak is not None and data.peak.usage.prompt_tokens == row.peak_prompt_tokens
    assert data.peak == next(
        r for r in shuffled.responses if r.usage.prompt_tokens == row.peak_prompt_tokens
    )
    chart = context_chart(data, None)
    assert chart.drawn == len(downsample([x.estimated_tokens for x in data.snapshots]))
    assert chart.drawn < 500 and chart == context_chart(session_data(row, ordered), None)
    assert f"drawn from {chart.drawn} of 500 snapshots" in render_report([shuffled])


# --------------------------------------------------------------------------- the page itself


def test_page_is_self_contained_and_escaped() -> None:
    hostile = Session(
        harness=Harness.CLAUDE_CODE,
        session_id='<script>alert("x")</script>',
        start_ns=0,
        end_ns=10 * S,
        sources=("x.jsonl",),
        models=("<img src=https://evil.example/x.png>",),
    )
    text = render_report([*read(SMALL), hostile], title="A & B")
    assert "<script" not in text.lower() and "<img" not in text.lower()
    assert "<title>A &amp; B</title>" in text
    assert "default-src 'none'" in text  # the browser refuses any fetch
    for link in re.findall(r'(?:href|src)="([^"]*)"', text):
        assert link.startswith("#"), link
    for target in re.findall(r"url\(([^)]*)\)", text):
        assert target.startswith("#"), target
    assert "@import" not in text and "<link" not in text


def test_a_session_length_is_not_broken_across_lines(spotter: list[Session]) -> None:
    """The header's "lasted 17 min 41 s" wrapped before its last "s": the number and
    its units are joined by no-break spaces."""
    text = render_report(spotter)
    assert "lasted 1\u00a0h\u00a014\u00a0min" in text and "lasted 33\u00a0s" in text


def test_render_is_deterministic_and_the_writer_writes_it(spotter: list[Session]) -> None:
    assert render_report(spotter) == render_report(spotter)
    stream = io.BytesIO()
    size = HtmlReportWriter().write(spotter, stream)
    assert size == len(stream.getvalue()) and stream.getvalue().decode() == render_report(spotter)
    assert parse(render_report([])).find("main")


@pytest.mark.slow  # corpus-wide
def test_every_corpus_journal_renders() -> None:
    # Not `read`: a fixture someone adds that cannot be read is not this test's business.
    sessions = load([SPOTTER_DIR.parent, CODEX], Diagnostics()).sessions
    assert len(sessions) >= 10
    page = parse(render_report(sessions))
    for session in sessions:
        overview_row(page, session.session_id)
        section(page, session.session_id)
    codex = parse(render_report(read(CODEX_LONG)))
    row = codex.one("tr", class_="depth-0")
    assert row.one(data_key="fill").text() == "81%"  # 209,950 / 258,400, window from the journal


# --------------------------------------------------------------------------- a real browser

CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (run `make browser` as root, or apt-get install chromium)",
)


def chromium(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium on a file:// page, its console logged to stderr."""
    assert CHROMIUM is not None
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            *args,
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def console_lines(stderr: str) -> list[str]:
    """Every console message (errors, CSP refusals, uncaught exceptions) is logged as
    `…:CONSOLE…`; the page has no script, so any such line is a problem."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


@needs_chromium
def test_console_check_sees_errors(tmp_path: Path) -> None:
    """The no-console-message check below is not vacuous: a page that errors is caught."""
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><p>x</p><script>throw new Error("kaboom")</script>')
    result = chromium(page, tmp_path / "profile", "--dump-dom")
    assert result.returncode == 0, result.stderr
    assert any("kaboom" in line for line in console_lines(result.stderr))


@needs_chromium
def test_report_renders_in_chromium(tmp_path: Path, spotter: list[Session]) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_report(spotter), encoding="utf-8")
    result = chromium(page, tmp_path / "profile", "--dump-dom")
    assert result.returncode == 0, result.stderr
    assert console_lines(result.stderr) == []
    dom = parse(result.stdout)
    for session in spotter:
        overview_row(dom, session.session_id)
        view = section(dom, session.session_id)
        chart = view.one("svg", class_="chart")
        assert chart.find("path", class_="band") and chart.find("path", class_="size-line")
        assert all(p.attrs["d"].startswith("M") for p in chart.find("path", class_="band"))
    # the screenshot is kept under pytest's tmp dir as an artefact (never committed)
    shot = tmp_path / "report.png"
    result = chromium(page, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1400,2000")
    assert result.returncode == 0, result.stderr
    assert console_lines(result.stderr) == []
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000


def test_report_command_writes_the_page_and_needs_force(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agent_profiler.cli import app

    journal = TESTS / "data" / "journals" / "claude-code" / "handmade" / "small.jsonl"
    out = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["report", str(journal), "-o", str(out)])
    assert result.exit_code == 0, result.output + result.stderr
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") or page.lower().startswith("<!doctype html>")
    assert "11111111-2222-4333-8444-555555555555" in page
    again = CliRunner().invoke(app, ["report", str(journal), "-o", str(out)])
    assert again.exit_code == 2 and "--force" in again.stderr
    assert "opens slowly" not in result.stderr


def test_a_large_report_of_many_sessions_points_to_fleet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report of 300 long sessions is a 38 MB page, slow to open: it says so, and
    names the command made for many sessions. One session's page is never told so."""
    from typer.testing import CliRunner

    from agent_profiler import exporting
    from agent_profiler.cli import app

    monkeypatch.setattr(exporting, "LARGE_PAGE", 1_000)  # the small pages here are larger
    journal = TESTS / "data" / "journals" / "claude-code" / "handmade" / "small.jsonl"
    codex = TESTS / "data" / "journals" / "codex"
    many = CliRunner().invoke(
        app, ["report", str(journal), str(codex), "-o", str(tmp_path / "m.html")]
    )
    assert many.exit_code == 0, many.stderr
    assert "opens slowly; for many sessions, `agent-profiler collect` them and read " in many.stderr
    one = CliRunner().invoke(app, ["report", str(journal), "-o", str(tmp_path / "o.html")])
    assert one.exit_code == 0 and "opens slowly" not in one.stderr


def test_a_report_of_standard_input_says_it_is_from_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from agent_profiler.cli import app

    journal = TESTS / "data" / "journals" / "claude-code" / "handmade" / "small.jsonl"
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["report", "-"], input=journal.read_bytes())
    assert result.exit_code == 0, result.output + result.stderr
    page = (tmp_path / "stdin.html").read_text()
    assert "1 session (0 subagents) from &lt;stdin&gt; ·" in page


# --------------------------------------------------------------------------- chart geometry


def _svg(chart_svg: str) -> ET.Element:
    return ET.fromstring(chart_svg)  # well-formed, or this raises


def test_a_band_goes_along_its_top_then_back_along_its_bottom() -> None:
    from agent_profiler.report.svg import _band_path

    # Upper 1 → 2 → 6 and lower 0 → 0 → 5, held until 30: back from the end along the lower
    # edge, stepping down to 0 where it rose to 5 (at x 20), then home.
    assert _band_path([0, 10, 20], [0, 0, 5], [1, 2, 6], 30) == "M0,1H10V2H20V6H30V5H20V0H10H0Z"
    assert _band_path([0, 10, 20], [0, 3, 3], [1, 4, 6], 30) == "M0,1H10V4H20V6H30V3H20H10V0H0Z"


def test_every_label_of_a_chart_is_inside_it(spotter: list[Session]) -> None:
    for session in (spotter[0], long_session(500), dataclasses.replace(spotter[0], snapshots=())):
        row = summarise(session)
        root = _svg(context_chart(session_data(row, session), 200_000).svg)
        width, height = float(root.get("width")), float(root.get("height"))
        texts = [t for t in root.iter() if t.tag.endswith("text")]
        assert texts
        for text in texts:
            x, y = float(text.get("x")), float(text.get("y"))
            assert 0 <= x <= width and 0 <= y <= height, (text.text, x, y)
        (axis,) = [t for t in texts if t.text == "tokens"]
        assert float(axis.get("y")) == (26 + 336) / 2  # the middle of the plot's height
        assert axis.get("transform") == f"rotate(-90 14 {(26 + 336) // 2})"


def test_a_model_change_is_labelled_with_the_new_model() -> None:
    session = long_session(500)  # model-a, then model-b from response 300
    root = _svg(context_chart(session_data(summarise(session), session), None).svg)
    labels = [t.text for t in root.iter() if t.tag.endswith("text")]
    assert "model → model-b" in labels


def test_nothing_to_draw_is_said_in_the_chart() -> None:
    empty = Session(Harness.CODEX, "e", 0, S, ("e.jsonl",))
    root = _svg(context_chart(session_data(summarise(empty), empty), None).svg)
    *_, said = [t for t in root.iter() if t.tag.endswith("text")]
    assert (said.text, said.attrib.keys()) == (
        "nothing recorded to draw",
        {"x", "y", "text-anchor"},
    )
    assert said.get("text-anchor") == "middle"


def test_the_peak_is_labelled_on_the_side_of_the_chart_it_is_not_near(
    spotter: list[Session],
) -> None:
    late = long_session(500)  # growing: its peak is near the right edge
    early = dataclasses.replace(
        late, responses=(dataclasses.replace(late.responses[0], usage=Usage(10**6)),)
    )
    for session, anchor in ((late, "end"), (early, "start")):
        root = _svg(context_chart(session_data(summarise(session), session), None).svg)
        (dot,) = [c for c in root.iter() if c.tag.endswith("circle")]
        (label,) = [t for t in root.iter() if t.get("class") == "halo peak"]
        assert label.get("text-anchor") == anchor
        dx = float(label.get("x")) - float(dot.get("cx"))
        assert dx == (-6 if anchor == "end" else 6)


def test_hover_columns_skip_only_the_samples_too_close_to_see() -> None:
    from agent_profiler.report.svg import _hover_columns
    from agent_profiler.report.timeaxis import Frame

    session = long_session(3)
    first, second, third = session.snapshots
    # The first two a nanosecond apart: the first column would be too narrow to hover.
    close = dataclasses.replace(second, time_ns=first.time_ns + 1)
    frame = Frame(first.time_ns, third.time_ns + 10 * S, 20_000)
    snapshots = [first, close, third]
    places = {id(x): f"request {n}" for n, x in enumerate(snapshots, 1)}
    svg = _hover_columns(snapshots, [0, 1, 2], frame, places, third.time_ns + 10 * S)
    root = _svg(svg)
    titles = [r.find("title").text for r in root if r.tag == "rect"]
    assert [t.split(" · ")[0] for t in titles] == ["request 2", "request 3"]
    assert titles[1].split("\n") == [
        "request 3 · 0:00:40",
        f"Context size {third.reported_tokens:,} tokens (reported)",
        f"estimated {third.estimated_tokens:,} tokens:",
        "  System instructions 3,000",
        "  Tool definitions 5,000",
        f"  Tool results {dict(third.categories)[Category.RESULTS]:,}",
        "not explained by the estimate: 2,000",  # reported − estimated
    ]


def test_axis_steps() -> None:
    from agent_profiler.report.svg import nice_step
    from agent_profiler.report.timeaxis import time_step

    spans = [0, 5, 7, 12, 24, 45, 450, 2_000_000]
    assert [nice_step(span) for span in spans] == [1.0, 1.0, 2.0, 2.5, 5.0, 10.0, 100.0, 500_000.0]
    # Elapsed time: the table's steps, then whole half days.
    assert [time_step(s) for s in (8, 9, 3600, 8 * 21600)] == [1, 2, 600, 21600]
    assert time_step(8 * 21600 + 1) == 43200 and time_step(864_000) == 3 * 43200


def test_the_legend_lists_the_categories_then_only_the_lines_drawn() -> None:
    from agent_profiler.report.fills import legend

    def spans(html: str) -> list[str | None]:
        return [x.text for x in ET.fromstring(html).iter("span")]

    every = legend(
        [Category.RESULTS], unexplained=True, size=True, window=True, compaction=True, model=True
    )
    root = ET.fromstring(every)
    assert not (root.text or "").strip() and not any((li.tail or "").strip() for li in root)
    assert spans(every) == [
        "Tool results",
        "Not explained by the estimate (reported − estimated)",
        "Context size (reported)",
        "window",
        "compaction",
        "model change",
    ]
    # Each item is its mark and its name, nothing else, every mark one height, and each
    # line drawn as the charts draw it (svg.py): the size solid, the others dashed.
    assert ["".join(li.itertext()) for li in root] == spans(every)
    assert {svg.get("height") for svg in root.iter("svg")} == {"14"}
    lines = [(p.get("stroke"), p.get("stroke-dasharray")) for p in root.iter("path")]
    assert lines == [("#111", None), ("#333", "7 5"), ("#b00020", "2 3"), ("#333", "8 3 2 3")]
    assert spans(legend([Category.RESULTS, Category.TOOLS], window=True)) == [
        "Tool results",
        "Tool definitions",
        "window",
    ]


def test_a_share_below_one_percent_is_escaped_so_each_picture_is_well_formed_svg() -> None:
    # "<1%" (a category under half a percent) in an SVG title was bare text: the HTML
    # parser let it pass, but the picture saved on its own was not XML.
    from agent_profiler.report.svg import composition_bar

    bar = composition_bar([(Category.RESULTS, 99_700, 0.997), (Category.TOOLS, 300, 0.003)])
    titles = [t.text for t in _svg(bar).iter("title")]
    assert "Tool definitions: 300 tokens (<1%)" in titles


def test_every_picture_of_a_real_report_is_well_formed_svg(spotter: list[Session]) -> None:
    # A whole page of real sessions (a parent and its subagents, compactions): each
    # inline <svg> parses as XML on its own, and no bare "<" starts a text ("<1%").
    page_html = render_report(spotter)
    pictures = re.findall(r"<svg\b.*?</svg>", page_html, re.S)
    assert len(pictures) > 5
    for picture in pictures:
        _svg(picture)
    assert not re.search(r"<(?![a-zA-Z/!?])", page_html)


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_report_made_group_by_group_is_the_page_of_all_sessions_at_once(
    tmp_path: Path, jobs: str
) -> None:
    """`report` makes the page a journal group at a time, in worker processes with -j 2,
    so it never holds more than a group's model (the whole model of 1,200 sessions was
    1.5 GB): the page is the one `render_report` makes of every session at once, its
    anchors numbered across the groups and every link landing on one."""
    from typer.testing import CliRunner

    from agent_profiler.cli import app

    journals = TESTS / "data" / "journals"
    out = tmp_path / "page.html"
    result = CliRunner().invoke(
        app, ["report", str(journals), "-o", str(out), "-j", jobs, "--cost"]
    )
    assert out.exists(), result.output
    whole = load([journals], Diagnostics())
    expected = render_report(whole.sessions, inputs=[journals.name], cost=True)
    page_text = out.read_text()
    assert page_text == expected
    assert "agent-profiler-" not in page_text  # every placeholder anchor renumbered
    ids = re.findall(r'id="(session-\d+)"', page_text)
    assert ids == [f"session-{n}" for n in range(1, len(whole.sessions) + 1)]
    assert set(re.findall(r'href="#(session-\d+)"', page_text)) <= set(ids)
    assert len(whole.sessions) > 20 and page_text.count('class="depth-1"') >= 2  # subagents
