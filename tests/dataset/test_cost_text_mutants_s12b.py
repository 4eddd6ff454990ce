"""A receipt as text (`cost_text.py`): what the twelfth session's second mutation sample
found no test reading. The hand-made Claude Code transcript of the dataset and cost tests
(3 requests writing the cache for 5 minutes and for an hour), and the cost tests' session
priced by their table of test prices."""

from __future__ import annotations

import dataclasses

import orjson
import pytest
from test_cost import _session, _Table
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.cost import session_receipt
from agent_profiler.cost_text import render_receipt
from shared_paths import TESTS

runner = CliRunner()
HANDMADE = TESTS / "data" / "dataset" / "claude-cost-split.jsonl"


def test_each_billed_line_is_named_with_its_tokens_and_dollars() -> None:
    """The transcript writes 600 tokens for 5 minutes and 600 for an hour: each of the five
    billed lines says what it is, in order, with the JSON receipt's tokens and dollars
    (cost_text.render_receipt__mutmut_47 named the 5-minute writes `XXcache writes, 5
    minXX`)."""
    pytest.importorskip("genai_prices")
    json_out = runner.invoke(app, ["summary", "--cost", "--json", str(HANDMADE)])
    assert json_out.exit_code == 0, json_out.output
    billed = orjson.loads(json_out.stdout)[0]["cost"]["billed"]
    text = runner.invoke(app, ["summary", "--cost", str(HANDMADE)]).stdout.splitlines()
    start = text.index("  as billed, at list price, from the reported usage:") + 1
    labels = {
        "input": "uncached input",
        "cache_write_5m": "cache writes, 5 min",
        "cache_write_1h": "cache writes, 1 hour",
        "cache_read": "re-read (cache reads)",
        "output": "model output",
    }
    assert text[start : start + 5] == [
        f"    {label:<24}{billed[c]['tokens']:>14,} tok  ${billed[c]['usd']:>10.4f}"
        for c, label in labels.items()
    ]
    assert billed["cache_write_5m"]["tokens"] == billed["cache_write_1h"]["tokens"] == 600


def test_one_web_search_without_a_price_is_said_in_the_singular() -> None:
    """One search of a model the table gives no search price: `no price for 1 web search`
    (cost_text.receipt_notes__mutmut_50 said `1 None`)."""
    responses = list(_session().responses)
    responses[0] = dataclasses.replace(responses[0], web_searches=1)
    session = dataclasses.replace(_session(), responses=tuple(responses))
    data = session_receipt(session, _Table()).to_json(_Table())  # type: ignore[arg-type]
    assert data["billed"]["web_searches"] == {"count": 1, "usd": 0.0, "unpriced": 1}
    (note,) = [x for x in render_receipt("s", data).splitlines() if ": the table gives" in x]
    assert note == (
        "  no price for 1 web search: the table gives their model none (nothing is guessed), "
        "left out of the totals"
    )
