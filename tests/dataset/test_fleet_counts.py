"""What the fleet counts a session for: one that made no request is a session but not in
the compaction rate; one without times in its journal is dated by its file, and said, but
is not in the dates; one whose responses carry no usage makes every receipt incomplete."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.dataset.collect import collect
from shared_paths import TESTS

pytest.importorskip("duckdb")
pytest.importorskip("genai_prices")

runner = CliRunner()
CLAUDE = TESTS / "data" / "journals" / "claude-code"
HANDMADE = TESTS / "data" / "dataset" / "claude-cost-split.jsonl"  # 3 requests, 2026-01-05
# A `-p` stream-json run of 10 responses on glm-5.1 whose messages report no usage.
NO_USAGE = CLAUDE / "trackgentic-mpa014m2_v2.1.143_bg-tasks-result.jsonl"
# A stream-json `init` alone: no request, and no time in the journal (a synthetic clock).
NO_TIMES = CLAUDE / "trackgentic-mp9r3tbb_v2.1.143_init-only-no-result.jsonl"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("counts")
    (root / "j").mkdir()
    for journal in (HANDMADE, NO_USAGE, NO_TIMES):
        shutil.copy(journal, root / "j")
    # the copy's modification time, the date a journal without times is given: far ahead
    later = 4_102_444_800  # 2100-01-01
    os.utime(root / "j" / NO_TIMES.name, (later, later))
    collect([root / "j"], root / "ds")
    return root / "ds"


def _fleet(dataset: Path, *options: str) -> dict[str, Any]:
    result = runner.invoke(app, ["fleet", str(dataset), "--json", *options])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = orjson.loads(result.stdout)
    return data


def test_sessions_that_made_no_request_are_counted_apart(dataset: Path) -> None:
    """The init-only run made no request; the glm-5.1 run's responses record no usage, but
    they were requests all the same."""
    data = _fleet(dataset)
    sessions, compactions = data["sessions"], data["compactions"]
    assert (sessions["count"], sessions["with_requests"]) == (3, 2)
    # the compaction rate is of the two sessions that made a request, not of all three
    assert compactions["sessions"] == 2
    assert sum(compactions["per_session"].values()) == 2
    text = runner.invoke(app, ["fleet", str(dataset), "--no-cost"]).stdout
    assert text.startswith("fleet ds: 3 sessions (+0 subagents), 2 of them made a request, ")
    assert "compactions: 0 in 0 of 2 sessions that made a request; " in text


def test_a_session_without_times_is_not_in_the_dates(dataset: Path) -> None:
    """It was dated by its file's modification time (the day the journal was copied) and
    stretched the fleet's dates to it; it is said apart and left out of them."""
    sessions = _fleet(dataset)["sessions"]
    assert sessions["dated_by_file_mtime"] == 1
    assert sessions["first_start"] == "2026-01-05"
    assert sessions["last_start"] != "2100-01-01"
    text = runner.invoke(app, ["fleet", str(dataset), "--no-cost"]).stdout
    assert "(1 session without times in the journal, dated by its file's modification " in text


def test_responses_without_usage_make_the_receipts_incomplete(dataset: Path) -> None:
    """The glm-5.1 run's ten responses report no usage: its receipt said $0.00 and
    `complete: true`, and the fleet's said nothing of it."""
    summary = runner.invoke(app, ["summary", str(NO_USAGE), "--cost", "--json"])
    (row,) = orjson.loads(summary.stdout)
    assert row["responses_without_usage"] == 10
    assert row["cost"]["complete"] is False
    assert row["cost"]["responses_without_usage"] == 10
    cost = _fleet(dataset)["cost"]
    assert cost["complete"] is False and cost["responses_without_usage"] == 10
    text = runner.invoke(app, ["fleet", str(dataset)]).stdout
    assert "  10 responses without usage in the journal (every count 0): not priced" in text
    # a fleet of sessions that all report their usage is complete, and says nothing of it
    handmade_only = _fleet(dataset, "--model", "claude-sonnet-4-5")["cost"]
    assert handmade_only["complete"] is True
    assert "responses_without_usage" not in handmade_only
