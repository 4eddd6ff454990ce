"""The report's page (report/page.py): what its header and legend say, that the window, the
receipts and the argument previews reach every view, and that a page assembled a journal
group at a time (`ReportParts`, `Assembly`, as `agent-profiler report` makes it) is the page
`render_report` makes of every session at once. Real journals of tests/data."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from test_claude_code import SPOTTER_DIR, SPOTTER_ID

from agent_profiler.model import Category, Harness, Session
from agent_profiler.options import ReadOptions
from agent_profiler.report import HtmlReportWriter, render_report
from agent_profiler.report.page import Assembly, ReportParts
from agent_profiler.targets import without_targets
from agent_profiler.version import __version__
from agent_profiler.views import HEAD_AFTER_COMPACTION_LABEL, HEAD_LABEL
from samples import CODEX_SMALL, read

CODEX_SHORT = CODEX_SMALL
SUBAGENT_ID = f"{SPOTTER_ID}/a881341"
# What the header says after the counts and the names, on every page.
HEADER_END = (
    f" · agent-profiler {__version__}. Sizes are in tokens. Context size is the reported "
    "request input (cached tokens counted once), the same series as the trace's Context size "
    "counter; the composition by category is an estimate (see each session's basis)."
)
# A placeholder anchor as `report` makes one: one no journal can hold.
ANCHOR = "agent-profiler-0123456789abcdef-"


def _read(path: Path, previews: bool = False) -> list[Session]:
    with ReadOptions(previews=previews).applied():
        return read(path)[0]


@pytest.fixture(scope="module")
def spotter() -> list[Session]:
    """The spotter's session and its subagent, read with their tool calls' argument
    previews (in the model only when asked for: the page shows them only with `previews`)."""
    sessions = _read(SPOTTER_DIR, previews=True)
    assert [s.session_id for s in sessions] == [SPOTTER_ID, SUBAGENT_ID]
    return sessions


@pytest.fixture(scope="module")
def codex() -> list[Session]:
    sessions = _read(CODEX_SHORT)
    assert [s.harness for s in sessions] == [Harness.CODEX]
    return sessions


def header(page: str) -> str:
    """The text of the header's paragraph (counts, sources, version, how to read sizes)."""
    found = re.search(r'<header><h1>.*?</h1><p class="muted">(.*?)</p></header>', page, re.S)
    assert found, page[:2000]
    return found[1]


def legend(page: str) -> list[str]:
    """The names of the page's key (the first legend: the Overview's, before any view)."""
    found = re.search(r'<ul class="legend">(.*?)</ul>', page, re.S)
    assert found
    return re.findall(r"<span>(.*?)</span>", found[1])


def view_ids(page: str) -> list[str]:
    return re.findall(r'<section class="session[^"]*" id="([^"]+)"', page)


# --------------------------------------------------------------------------- the header


def test_the_header_counts_the_sessions_and_names_the_journal_files(
    spotter: list[Session],
) -> None:
    """The title (escaped) in the tab and the heading; the sessions and subagents counted;
    the sources are the journals' file names, each once, sorted, never their folders (the
    main session's compaction agent file is one of its sources)."""
    page = render_report(spotter, title="Spot & <check>")
    assert "<title>Spot &amp; &lt;check&gt;</title>" in page
    assert "<h1>Spot &amp; &lt;check&gt;</h1>" in page
    assert header(page) == (
        f"2 sessions (1 subagent) from {SPOTTER_ID}.jsonl.gz, agent-a881341.jsonl, "
        "agent-acompact-fffbd0.jsonl" + HEADER_END
    )
    assert str(SPOTTER_DIR) not in page
    # The names given (the command line's inputs) replace the journals' own.
    given = render_report(spotter, inputs=["mine.jsonl", "<yours>"])
    assert header(given) == "2 sessions (1 subagent) from mine.jsonl, &lt;yours&gt;" + HEADER_END


def test_a_page_of_no_session_says_so() -> None:
    page = render_report([])
    assert header(page) == "0 sessions (0 subagents) from no input" + HEADER_END
    assert page.endswith("</section><p>No sessions.</p></main></body></html>\n")
    assert view_ids(page) == []


def test_a_page_of_sessions_ends_with_its_last_view(codex: list[Session]) -> None:
    page = render_report(codex)
    assert "No sessions." not in page
    assert page.startswith("<!DOCTYPE html>\n") and page.endswith("</main></body></html>\n")
    assert view_ids(page) == ["session-1"]


# --------------------------------------------------------------------------- the legend


def test_the_legend_keys_the_categories_of_the_latest_compositions(
    spotter: list[Session], codex: list[Session]
) -> None:
    """Those of any session's latest composition, in contract order; every category when
    no session has one (a key of nothing would explain nothing). Unattributed is named as
    the bars name it: spotter's is only its inferred head in both sessions."""
    assert legend(render_report(spotter)) == [
        "Environment",
        "User prompts",
        "Assistant history",
        "Tool results",
        "Compaction summaries",
        # the parent's head was measured again after its compaction, the subagent's was not
        f"{HEAD_LABEL}, or {HEAD_AFTER_COMPACTION_LABEL} (as each bar names it)",
    ]
    assert legend(render_report(codex)) == [
        "System instructions",
        "Assistant history",
        "Tool results",
        "Unattributed",
    ]
    bare = Session(
        harness=Harness.CODEX, session_id="bare", start_ns=0, end_ns=1, sources=("b.jsonl",)
    )
    assert legend(render_report([bare])) == [c.label for c in Category]


# --------------------------------------------------------------------------- the options


def test_the_window_given_is_every_rows_and_every_views(spotter: list[Session]) -> None:
    page = render_report(spotter, window=123_000)
    cells = re.findall(r'<td class="num" data-key="window">(.*?)</td>', page)
    assert len(cells) == 2 and all(cell.startswith("123,000") for cell in cells)
    assert "200,000" not in "".join(cells)  # not the assumed window of the journal
    assert "123,000" in page.partition(f'id="{view_ids(page)[1]}"')[2]  # the child's view


def test_argument_previews_are_shown_only_when_asked_for(spotter: list[Session]) -> None:
    """The model read with previews keeps them; the page shows them only with `previews`
    (report --previews), and leaving them out does not take them from the model."""
    previews = sum(1 for s in spotter for c in s.tool_calls if c.args_preview)
    assert previews == 188
    assert 'class="args muted"' not in render_report(spotter)
    assert sum(1 for s in spotter for c in s.tool_calls if c.args_preview) == previews
    shown = render_report(spotter, previews=True).count('class="args muted"')
    assert shown == 23  # the calls behind the largest additions


def test_a_receipt_follows_each_view_only_with_cost(spotter: list[Session]) -> None:
    assert '<section class="receipt"' not in render_report(spotter)
    page = render_report(spotter, cost=True)
    receipts = re.findall(r'<section class="receipt" id="([^"]+)"', page)
    assert receipts == ["session-1-cost", "session-2-cost"]
    # each right after its own session's view
    for anchor in view_ids(page):
        assert page.index(f'id="{anchor}-cost"') > page.index(f'id="{anchor}"')
    assert page.index('id="session-1-cost"') < page.index('id="session-2"')


def test_a_parents_view_links_its_subagents_view(spotter: list[Session]) -> None:
    page = render_report(spotter)
    assert view_ids(page) == ["session-1", "session-2"]
    parent = page.partition('id="session-1"')[2].partition('id="session-2"')[0]
    child = page.partition('id="session-2"')[2]
    assert 'href="#session-2"' in parent  # its subagent
    assert 'href="#session-1"' in child  # its parent


def test_the_writer_writes_the_page_its_options_make(spotter: list[Session]) -> None:
    writer = HtmlReportWriter(
        title="T", window=150_000, inputs=["given.jsonl"], cost=True, previews=True
    )
    stream = io.BytesIO()
    size = writer.write(spotter, stream)
    expected = render_report(
        spotter, title="T", window=150_000, inputs=["given.jsonl"], cost=True, previews=True
    )
    assert stream.getvalue() == expected.encode("utf-8") and size == len(stream.getvalue())


# --------------------------------------------------------------------------- group by group


def _assembled(
    groups: list[list[Session]], parts: ReportParts, inputs: list[str]
) -> tuple[str, int, Assembly]:
    stream = io.BytesIO()
    with Assembly(ANCHOR, parts.cost) as page:
        for group in groups:
            page.add(parts(group, None, None, None))
        size = page.write(stream, title="Group by group", inputs=inputs)
        again = io.BytesIO()
        page.write(again, title="Group by group", inputs=inputs)  # the spool is read anew
        assert again.getvalue() == stream.getvalue()
    assert size == len(stream.getvalue())
    return stream.getvalue().decode("utf-8"), size, page


def test_a_page_made_group_by_group_is_the_page_of_every_session_at_once(
    spotter: list[Session], codex: list[Session]
) -> None:
    """Each group's rows and views are made with the placeholder anchor, numbered from 1
    in the group, and renumbered after the groups before it: the second group's parent
    and subagent (session-2, session-3) link to each other. The header counts and names
    every group's sessions, the legend keys every group's categories."""
    parts = ReportParts(window=150_000, cost=True, previews=True, redact=False, anchor=ANCHOR)
    text, _, page = _assembled([codex, spotter], parts, [])
    everything = [*codex, *spotter]
    assert text == render_report(
        everything, title="Group by group", window=150_000, cost=True, previews=True
    )
    assert (page.sessions, page.subagents) == (3, 1)
    assert ANCHOR not in text and view_ids(text) == ["session-1", "session-2", "session-3"]
    assert header(text).startswith(
        f"3 sessions (1 subagent) from {SPOTTER_ID}.jsonl.gz, agent-a881341.jsonl, "
        "agent-acompact-fffbd0.jsonl, rollout-2026-02-23T20-34-25-"
    )
    assert legend(text) == [
        "System instructions",
        "Environment",
        "User prompts",
        "Assistant history",
        "Tool results",
        "Compaction summaries",
        # Codex's Unattributed is more than its head, spotter's is only that: every name
        f"Unattributed, or {HEAD_LABEL}, or {HEAD_AFTER_COMPACTION_LABEL} (as each bar names it)",
    ]
    # The inputs named by the command line, as render_report names them.
    named, _, _ = _assembled([codex, spotter], parts, ["a", "b"])
    assert named == render_report(
        everything,
        title="Group by group",
        window=150_000,
        inputs=["a", "b"],
        cost=True,
        previews=True,
    )


def test_a_page_made_group_by_group_redacts_and_leaves_previews_out_when_told(
    spotter: list[Session], codex: list[Session]
) -> None:
    parts = ReportParts(window=None, cost=False, previews=False, redact=True, anchor=ANCHOR)
    text, _, _ = _assembled([spotter, codex], parts, ["x"])
    hidden = without_targets([*spotter, *codex])
    assert text == render_report(hidden, title="Group by group", inputs=["x"])
    assert 'class="target"' not in text and 'class="args muted"' not in text
    # what redact left out is there without it
    kept = ReportParts(window=None, cost=False, previews=False, redact=False, anchor=ANCHOR)
    assert 'class="target"' in _assembled([spotter, codex], kept, ["x"])[0]


def test_a_page_assembled_of_no_group_is_the_empty_page() -> None:
    with Assembly(ANCHOR) as page:
        stream = io.BytesIO()
        size = page.write(stream, title="Agent Profiler report", inputs=[])
    assert stream.getvalue().decode() == render_report([]) and size == len(stream.getvalue())


def test_with_cost_the_overview_says_each_sessions_bill_and_links_to_its_receipt(
    spotter: list[Session], codex: list[Session]
) -> None:
    """`report --cost` put a receipt under each chart, and the Overview said nothing of it:
    a reader comparing sessions had to scroll to each. Each row now has the billed total
    at list price (summary's receipt's), linking to its receipt, marked when incomplete."""
    from agent_profiler.cost import PriceTable, session_receipt

    everything = [*codex, *spotter]
    text = render_report(everything, cost=True)
    assert '<th class="num" title="as billed, at list price' in text
    cells = re.findall(r'<td class="num" data-key="cost"><a href="#([^"]+)">\$([\d,.]+)</a>', text)
    table = PriceTable()
    order = [s.session_id for s in everything]  # codex first, then spotter and its subagent
    totals = {s.session_id: session_receipt(s, table).to_json(table) for s in everything}
    assert len(cells) == len(everything) == 3
    for (anchor, shown), session_id in zip(cells, order, strict=True):
        assert f'id="{anchor}"' in text  # the receipt it links to
        assert shown == f"{totals[session_id]['billed']['total_usd']:,.2f}"
    assert 'data-key="cost"' not in render_report(everything)
    assert '<th class="num" title="as billed' not in render_report(everything)
