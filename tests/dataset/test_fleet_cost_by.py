"""The fleet's bill split by harness, by model and by project (`cost.by`): each split adds
up to the billed total, and each harness's share is the sum of its sessions' own receipts
as `summary --cost` prices them, session by session (an independent path: the model, not
the dataset's SQL)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from datasets import collected
from shared_paths import TESTS

pytest.importorskip("duckdb")
pytest.importorskip("genai_prices")

runner = CliRunner()
DATA = TESTS / "data" / "journals"
# Three harnesses, three projects, four models of the price table; no subagent (summary's
# rows are sessions, and a subagent's bill is its own row there).
JOURNALS = (
    DATA / "pi" / "pi-mono_large-session_v1.jsonl",
    DATA / "claude-code" / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl",
    DATA / "codex" / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz",
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return collected(tmp_path_factory.mktemp("by"), *JOURNALS)


def _cost(folder: Path, *options: str) -> dict[str, Any]:
    result = runner.invoke(app, ["fleet", str(folder / "ds"), "--json", *options])
    assert result.exit_code == 0, result.output
    cost: dict[str, Any] = orjson.loads(result.stdout)["cost"]
    return cost


def test_each_split_adds_up_to_the_billed_total(folder: Path) -> None:
    cost = _cost(folder)
    total = cost["billed"]["total_usd"]
    assert total > 0 and set(cost["by"]) == {"harness", "model", "project"}
    for dimension, rows in cost["by"].items():
        assert sum(row["usd"] for row in rows) == pytest.approx(total, abs=1e-4), dimension
        assert sum(row["share"] for row in rows) == pytest.approx(1.0), dimension
        assert sum(row["requests"] for row in rows) == cost["requests_priced"], dimension
        usds = [row["usd"] for row in rows]
        assert usds == sorted(usds, reverse=True), dimension
    assert {row["name"] for row in cost["by"]["harness"]} == {"pi", "claude-code", "codex"}
    # models named by the price table's id: a dated variant is its model
    assert "anthropic/claude-opus-4-5" in {row["name"] for row in cost["by"]["model"]}


def test_each_harness_costs_what_its_sessions_receipts_say(folder: Path) -> None:
    summary = runner.invoke(app, ["summary", str(folder / "j"), "--cost", "--json"])
    assert summary.exit_code == 0, summary.output
    expected: dict[str, float] = defaultdict(float)
    for row in orjson.loads(summary.stdout):
        expected[row["harness"]] += row["cost"]["billed"]["total_usd"]
    by_harness = {row["name"]: row["usd"] for row in _cost(folder)["by"]["harness"]}
    assert by_harness.keys() == expected.keys()
    for harness, usd in expected.items():
        assert by_harness[harness] == pytest.approx(usd, abs=1e-4), harness


def test_the_split_follows_the_filters(folder: Path) -> None:
    cost = _cost(folder, "--harness", "codex")
    assert [row["name"] for row in cost["by"]["harness"]] == ["codex"]
    assert cost["by"]["harness"][0]["share"] == pytest.approx(1.0)
    assert cost["by"]["project"] == [
        {**cost["by"]["project"][0], "usd": cost["billed"]["total_usd"]}
    ]


def test_the_split_is_in_the_text_and_the_page(folder: Path, tmp_path: Path) -> None:
    text = runner.invoke(app, ["fleet", str(folder / "ds")]).stdout
    harness = text.split("  the bill as billed, by harness:\n")[1].split("\n  the bill")[0]
    names = [line.split()[0] for line in harness.splitlines()]
    assert sorted(names) == ["claude-code", "codex", "pi"]
    assert "  the bill as billed, by model:\n    anthropic/" in text
    page = tmp_path / "fleet.html"
    made = runner.invoke(app, ["fleet", str(folder / "ds"), "-o", str(page)])
    assert made.exit_code == 0, made.output
    html = page.read_text()
    for dimension in ("harness", "model", "project"):
        assert f"<h4>The bill as billed, by {dimension}</h4>" in html
    assert "<td class=num>$" in html  # the dollars right-aligned, as the counts
    assert "the bill" not in runner.invoke(app, ["fleet", str(folder / "ds"), "--no-cost"]).stdout


def _written_by_writer(receipt: dict[str, Any]) -> dict[str, float]:
    return receipt["written_once_by_writer"]  # type: ignore[no-any-return]


def test_the_fleet_splits_written_once_as_the_sessions_receipts_do(folder: Path) -> None:
    """The fleet split every session's written-once dollars in the plain mean of the
    sessions' end shares: a session of three requests weighed as much as one of 900, and a
    fleet whose receipts put tool results first put the inferred head (unattributed) first.
    Each session's are now split in its own shares: the sum of its receipts."""
    summary = runner.invoke(app, ["summary", str(folder / "j"), "--cost", "--json"])
    rows = orjson.loads(summary.stdout)
    cost = _cost(folder)
    for part in ("billed", "every_cache_hit"):
        expected: dict[str, float] = defaultdict(float)
        for row in rows:
            for writer, usd in _written_by_writer(row["cost"][part]).items():
                expected[writer] += usd
        got = _written_by_writer(cost[part])
        assert got.keys() == expected.keys(), part
        for writer, usd in expected.items():
            assert got[writer] == pytest.approx(usd, abs=1e-4), (part, writer)
        assert "written_once_unsplit_usd" not in cost[part]
    # tool results lead in these sessions' own receipts, and so in the fleet's
    hit = _written_by_writer(cost["every_cache_hit"])
    assert max(hit, key=hit.__getitem__) == "tool results"


def test_the_rest_is_one_line_only_when_more_than_one_is_left() -> None:
    """On the corpus one project was left past the 15 largest, and shown as "1 others":
    a single one is named as itself; two or more are one line, their sums kept."""
    from decimal import Decimal

    from agent_profiler.fleet.costs import TOP, _by

    def tallies(n: int) -> dict[str, list[object]]:
        return {f"p{i:02}": [1, Decimal(100 - i)] for i in range(n)}

    assert [row["name"] for row in _by(tallies(TOP + 1))] == [f"p{i:02}" for i in range(TOP + 1)]
    rows = _by(tallies(TOP + 3))
    assert len(rows) == TOP + 1 and rows[-1]["name"] == "3 others"
    assert rows[-1]["requests"] == 3 and rows[-1]["usd"] == float(100 - 15 + 100 - 16 + 100 - 17)
    assert sum(row["share"] for row in rows) == pytest.approx(1.0)


def test_the_output_lower_bound_counts_the_priced_requests(tmp_path: Path) -> None:
    """The line it qualifies is the priced requests' output: an unpriced model's streaming
    counts are not in it (the corpus said 209 where 208 were priced)."""
    excerpt = JOURNALS[1]  # Claude Code 2.1.14: streaming output counts, priced
    copy = tmp_path / "unpriced.jsonl"
    text = excerpt.read_text().replace("claude-opus-4-5-20251101", "zz-unknown-model")
    copy.write_text(text.replace("0cf3db51-1c73-43bb-8d05-dc02739514a5", "0cf3db51-copy"))
    root = collected(tmp_path / "root", excerpt, copy)
    summary = runner.invoke(app, ["summary", str(excerpt), "--cost", "--json"])
    own = orjson.loads(summary.stdout)[0]["cost"]["streaming_outputs"]
    cost = _cost(root)
    assert own > 0 and cost["streaming_outputs"] == own
    assert {e["model"] for e in cost["unpriced_models"]} == {"zz-unknown-model"}


def test_a_split_s_sets_made_at_once_are_those_made_one_after_another(folder: Path) -> None:
    """`fleet --split` makes its three sets of figures at once, each on a cursor of its own
    (fleet/command.py `_figures`): each is the set `figures` makes alone on one connection,
    its bill (a price table shared by the three) included."""
    from agent_profiler.cost import PriceTable
    from agent_profiler.fleet import Filters, figures, open_dataset
    from agent_profiler.fleet.command import _figures

    connection = open_dataset(folder / "ds")
    try:
        starts = sorted(
            row[0] for row in connection.execute("SELECT start_ns FROM sessions").fetchall()
        )
        split_ns = starts[len(starts) // 2]
        data, sides = _figures(connection, Filters(), PriceTable(), split_ns)
        prices = PriceTable()
        alone = [
            figures(connection, Filters(), prices, **window)
            for window in ({}, {"until_ns": split_ns}, {"since_ns": split_ns})
        ]
    finally:
        connection.close()
    assert sides is not None and sides["before"]["sessions"]["count"] > 0
    assert sides["after"]["sessions"]["count"] > 0 and data["cost"]["billed"]["total_usd"] > 0
    assert [data, sides["before"], sides["after"]] == alone
