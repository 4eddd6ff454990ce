"""A Claude Code `-p` run records its own cost once, for the whole run
(`result.total_cost_usd`: every call, side models and subagents included, at Claude Code's
prices). It is the main session's `recorded_total_usd`, said beside the list-price receipt
in `summary --cost`, the report and `fleet`, never mixed into it; the dataset keeps it per
session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from test_claude_code import lines
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.cost import PriceTable, session_receipt
from agent_profiler.cost_text import render_receipt
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from datasets import collected
from shared_paths import TESTS

runner = CliRunner()
CLAUDE = TESTS / "data" / "journals" / "claude-code"
# gh-aw: a run on claude-sonnet-4 with a side model (haiku) the journal's requests miss;
# trackgentic: a run on glm-5.1 whose requests record no usage (priced $0).
STREAMS = (
    CLAUDE / "gh-aw_sample_claude_log_new_format.txt",
    CLAUDE / "trackgentic-mpa014m2_v2.1.143_bg-tasks-result.jsonl",
)
PI = TESTS / "data" / "journals" / "pi" / "pi-mono_large-session_v1.jsonl"


def _frames(path: Path) -> list[dict[str, Any]]:
    return lines(path)  # the JSON frames, in order (the log's other lines left out)


def _recorded(path: Path) -> float:
    """The last `result` frame's total, counted from the raw lines."""
    (total,) = [f["total_cost_usd"] for f in _frames(path) if f.get("type") == "result"][-1:]
    return float(total)


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name[:12])
def test_a_runs_total_is_its_main_sessions_and_said_beside_the_receipt(path: Path) -> None:
    sessions = load([path], Diagnostics()).sessions
    main = [s for s in sessions if s.parent_session is None]
    assert [s.recorded_total_usd for s in main] == [_recorded(path)]
    assert all(s.recorded_total_usd is None for s in sessions if s.parent_session is not None)
    table = PriceTable()
    data = session_receipt(main[0], table).to_json(table)
    total = {"usd": pytest.approx(_recorded(path), abs=1e-6), "sessions": 1}
    assert data["recorded_total"] == total
    assert data["recorded"] is None  # no request records a cost of its own
    # Said beside the list price, never added to it.
    priced = session_receipt(main[0], table)
    assert data["billed"]["total_usd"] == pytest.approx(
        float(sum(priced.billed_usd.values(), priced.searches_usd)), abs=1e-6
    )
    text = render_receipt(main[0].session_id, data)
    assert f"recorded by the harness for the whole run: ${_recorded(path):.4f}" in text


def test_each_appended_run_keeps_its_own_total_and_a_bad_total_is_none(tmp_path: Path) -> None:
    """Two runs appended to one file (`tee -a`) are two sessions, each with its own
    `result`'s total; a total that is not a finite number ≥ 0 is not a cost."""
    frames = _frames(STREAMS[0])
    second = [{**f, "total_cost_usd": "0.5"} if f.get("type") == "result" else f for f in frames]
    third = [{**f, "total_cost_usd": 0.25} if f.get("type") == "result" else f for f in frames]
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"".join(orjson.dumps(f) + b"\n" for f in [*frames, *second, *third]))
    mains = [s for s in load([path], Diagnostics()).sessions if s.parent_session is None]
    assert [s.recorded_total_usd for s in mains] == [_recorded(STREAMS[0]), None, 0.25]


def test_a_journal_without_a_run_total_says_nothing_of_one() -> None:
    (session,) = load([PI], Diagnostics()).sessions
    assert session.recorded_total_usd is None
    table = PriceTable()
    data = session_receipt(session, table).to_json(table)
    assert data["recorded_total"] is None
    assert "whole run" not in render_receipt("s", data)


def test_summary_report_and_fleet_say_the_runs_total(tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    pytest.importorskip("genai_prices")
    # A folder takes `.jsonl` files: the `.txt` log is given that name, as a user would.
    named = tmp_path / "gh-aw.jsonl"
    named.write_bytes(STREAMS[0].read_bytes())
    root = collected(tmp_path / "t", named, *STREAMS[1:], PI)
    summary = runner.invoke(app, ["summary", str(root / "j"), "--cost", "--json"])
    assert summary.exit_code == 0, summary.output
    totals = [row["cost"]["recorded_total"] for row in orjson.loads(summary.stdout)]
    said = [t for t in totals if t is not None]
    assert sorted(t["usd"] for t in said) == pytest.approx(
        sorted(_recorded(p) for p in STREAMS), abs=1e-6
    )
    fleet = runner.invoke(app, ["fleet", str(root / "ds"), "--json"])
    assert fleet.exit_code == 0, fleet.output
    recorded = orjson.loads(fleet.stdout)["cost"]["recorded_total"]
    assert recorded["sessions"] == 2
    assert recorded["usd"] == pytest.approx(sum(_recorded(p) for p in STREAMS), abs=1e-6)
    text = runner.invoke(app, ["fleet", str(root / "ds")])
    assert f"recorded by the harness for 2 whole runs: ${recorded['usd']:.4f}" in text.stdout
    page = tmp_path / "r.html"
    report = runner.invoke(app, ["report", str(STREAMS[0]), "--cost", "-o", str(page)])
    assert report.exit_code == 0, report.output
    assert f"${_recorded(STREAMS[0]):.4f}" in page.read_text(encoding="utf-8")
