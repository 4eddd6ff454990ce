"""The report's receipt (`report --cost`, report/receipt.py): both receipts as two tables
whose every row is the receipt's own tokens and dollars, the price table named with its
date, the estimated split said to be estimated, and a model without a price named."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import pytest

from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.report.receipt import receipt_section
from shared_paths import TESTS

HANDMADE = TESTS / "data" / "dataset" / "claude-cost-split.jsonl"
# Where text may stand in the section: anywhere else it is stray.
TEXT_TAGS = {"td", "th", "h3", "h4", "p", "li"}


class _Section(HTMLParser):
    """The section's tables (rows of cell texts), paragraphs, list items and stray text."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.tables: list[list[list[str]]] = []
        self.texts: dict[str, list[str]] = {}
        self.stray: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.open.append(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.tables[-1][-1].append("")
        elif tag in TEXT_TAGS:
            self.texts.setdefault(tag, []).append("")

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open[-1] == tag, (self.open, tag)
        self.open.pop()

    def handle_data(self, data: str) -> None:
        tag = self.open[-1] if self.open else ""
        if tag in ("td", "th"):
            self.tables[-1][-1][-1] += data
        elif tag in TEXT_TAGS:
            self.texts[tag][-1] += data
        elif data.strip():
            self.stray.append(data)


def _parsed(html: str) -> _Section:
    parser = _Section()
    parser.feed(html)
    parser.close()
    assert parser.open == [], "an element left open"
    assert parser.stray == [], parser.stray
    return parser


def _receipt() -> dict[str, Any]:
    """A receipt as cost.Receipt.to_json writes it, with two writers and an unpriced model."""
    return {
        "prices": {"table": "genai-prices 9.9", "date": "2026-01-31", "currency": "USD"},
        "models": {"m": "prov/m"},
        "unpriced_models": [{"model": "zz<model>", "requests": 1234}],
        "complete": False,
        "billed": {
            "input": {"tokens": 1200, "usd": 0.0036},
            "cache_read": {"tokens": 50_000, "usd": 0.015},
            "cache_write_5m": {"tokens": 800, "usd": 0.003},
            "cache_write_1h": {"tokens": 300, "usd": 0.0018},
            "output": {"tokens": 70, "usd": 0.00106},
            "written_once_by_category": {},
            "written_once_by_writer": {},
            "total_usd": 0.02446,
        },
        "every_cache_hit": {
            "written_once": {"tokens": 2300, "usd": 0.008625},
            "re_read": {"tokens": 50_000, "usd": 0.015},
            "output": {"tokens": 70, "usd": 0.00106},
            "written_once_by_category": {},
            "written_once_by_writer": {"tool results": 0.006, "the user": 0.002625},
            "total_usd": 0.024685,
        },
    }


def test_each_row_is_the_receipts_own_line() -> None:
    # GIVEN a receipt with two writers of the written-once dollars and an unpriced model
    section = _parsed(receipt_section("s1", _receipt()))
    billed, hit = section.tables
    head = ["", "tokens", "USD"]
    # THEN the billed table lists each component with its tokens and dollars, then the total
    assert billed == [
        head,
        ["uncached input", "1,200", "$0.0036"],
        ["cache writes, 5 minutes", "800", "$0.0030"],
        ["cache writes, 1 hour", "300", "$0.0018"],
        ["re-read (cache reads)", "50,000", "$0.0150"],
        ["model output", "70", "$0.0011"],
        ["total", "", "$0.0245"],
    ]
    # and the hypothetical table the written-once dollars per writer, the re-reads, the output
    assert hit == [
        head,
        ["written once, tool results", "", "$0.0060"],
        ["written once, the user", "", "$0.0026"],
        ["re-read, every turn", "50,000", "$0.0150"],
        ["model output", "70", "$0.0011"],
        ["total", "", "$0.0247"],
    ]
    assert section.texts["h4"] == ["As billed", "Every cache hit (hypothetical, not what was paid)"]
    # the table is named with its date, and the split is said to be an estimate
    (note,) = section.texts["p"]
    assert "List prices from genai-prices 9.9 (table of 2026-01-31)" in note
    assert "shares of the end-of-session composition (estimated)" in note
    # and who "code + disk" is, a writer the page names nowhere else
    assert note.endswith(
        "code + disk is the harness's own text and the files it loads (system instructions, "
        "rules and memory, skills, tool definitions, environment, harness overhead)."
    )
    # and the model without a price is named with its requests (escaped)
    # and what the text receipt says under its totals, the same sentences: the model
    # without a price named with its requests (escaped), the table's model of each
    assert section.texts["li"] == [
        "No price for zz<model> (1,234 requests): its name matched no model of the table "
        "(nothing is guessed), left out of the totals.",
        "Priced as: m → prov/m.",
    ]
    assert "zz&lt;model&gt;" in receipt_section("s1", _receipt())


def test_a_complete_receipt_has_no_list_of_unpriced_models() -> None:
    data = _receipt() | {"unpriced_models": [], "complete": True}
    html = receipt_section("s1", data)
    section = _parsed(html)
    assert section.texts["li"] == ["Priced as: m → prov/m."]
    bare = receipt_section("s1", data | {"models": {}})
    assert "li" not in _parsed(bare).texts and "<ul" not in bare
    assert html.startswith('<section class="receipt" id="s1-cost"><h3>What the context cost</h3>')
    assert html.endswith("</section>")


def test_a_real_sessions_receipt_shows_its_numbers() -> None:
    genai_prices = pytest.importorskip("genai_prices")
    from agent_profiler.cost import PriceTable, session_receipt

    assert genai_prices
    # GIVEN the hand-made journal priced with the bundled table
    (session,) = load([HANDMADE], Diagnostics()).sessions
    table = PriceTable()
    data = session_receipt(session, table).to_json(table)
    billed, hit = _parsed(receipt_section("x", data)).tables
    # THEN each row shows the receipt's tokens and dollars, rounded to a hundredth of a cent
    rows = {row[0]: row[1:] for row in billed[1:]}
    assert rows["cache writes, 1 hour"] == [
        "600",
        f"${data['billed']['cache_write_1h']['usd']:,.4f}",
    ]
    assert rows["total"] == ["", f"${data['billed']['total_usd']:,.4f}"]
    writers = data["every_cache_hit"]["written_once_by_writer"]
    assert [r[0] for r in hit[1 : 1 + len(writers)]] == [f"written once, {w}" for w in writers]
    assert len(writers) >= 2


def test_the_page_says_under_a_receipt_what_the_text_receipt_says() -> None:
    """`report --cost` left out the price variant (`claude-opus-4-8 (speed=fast)`), web
    searches without a price, and the output's lower bound, which summary and fleet say:
    the page now lists the same sentences (cost.receipt_notes)."""
    from agent_profiler.cost_text import render_receipt

    data = _receipt() | {
        "output_lower_bound": True,
        "recorded": {"usd": 0.0, "requests": 3},
        "models": {"m (speed=fast)": "prov/m (speed=fast)"},
    }
    data["billed"] = data["billed"] | {"web_searches": {"count": 2, "usd": 0.0, "unpriced": 2}}
    items = _parsed(receipt_section("s1", data)).texts["li"]
    text = render_receipt("s", data)
    assert len(items) == 5
    for item in items:
        assert f"  {item[:1].lower()}{item[1:-1]}" in text.splitlines()
    assert any("(speed=fast)" in item for item in items)


def test_the_page_receipt_says_what_its_rows_cover() -> None:
    """The page's "As billed" rows are the priced requests' (the others named below), its
    web searches row counts the priced searches, and a written-once share no composition
    splits is its own row, as in the text."""
    from agent_profiler.report.receipt import receipt_section

    line = {"tokens": 0, "usd": 0.0}
    searches = {"count": 11, "usd": 0.04, "unpriced": 7}
    data = {
        "prices": {"table": "t 1", "date": "2026-12-01"},
        "models": {},
        "unpriced_models": [{"model": "x-free", "requests": 146}],
        "requests_priced": 2261,
        "billed": {
            **dict.fromkeys(
                ("input", "cache_write_5m", "cache_write_1h", "cache_read", "output"), line
            ),
            "web_searches": searches,
            "total_usd": 1.0,
        },
        "every_cache_hit": {
            "written_once_by_writer": {"tool results": 0.5},
            "written_once_unsplit_usd": 0.25,
            "re_read": line,
            "output": line,
            "web_searches": searches,
            "total_usd": 1.0,
        },
    }
    html = receipt_section("s", data)
    assert "<h4>As billed (the 2,261 requests priced; 146 not: below)</h4>" in html
    assert html.count("<td>web searches (4)</td>") == 2
    assert "<td>written once, no composition to split it</td>" in html
    assert "No price for x-free (146 requests)" in html
