"""`fleet --since DATE --before DATE`: the figures of the sessions started in a window of
time (a month's cost, last week's context), said in every heading; and the date options of
`fleet` and `discover` refuse what is not a date in the tool's words."""

from __future__ import annotations

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

HANDMADE = TESTS / "data" / "dataset" / "claude-cost-split.jsonl"
SESSION_ID = "0d5e7a7a-1111-4222-8333-444455556666"
LATER_ID = "99999999-1111-4222-8333-444455556666"
runner = CliRunner()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two sessions of the same journal: one started on 2026-01-05, one on 2026-03-05."""
    root = tmp_path_factory.mktemp("window")
    journals = root / "journals"
    journals.mkdir()
    shutil.copy(HANDMADE, journals / HANDMADE.name)
    later = HANDMADE.read_text().replace(SESSION_ID, LATER_ID)
    (journals / "later.jsonl").write_text(later.replace("2026-01-05T", "2026-03-05T"))
    collect([journals], root / "ds")
    return root / "ds"


def _fleet(dataset: Path, *options: str) -> dict[str, Any]:
    result = runner.invoke(app, ["fleet", str(dataset), "--json", "--no-cost", *options])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = orjson.loads(result.stdout)
    return data


def _sessions(data: dict[str, Any]) -> tuple[int, str | None, str | None]:
    sessions = data["sessions"]
    return sessions["count"], sessions["first_start"], sessions["last_start"]


def test_since_and_before_pick_the_sessions_started_in_the_window(dataset: Path) -> None:
    assert _sessions(_fleet(dataset))[0] == 2
    assert _sessions(_fleet(dataset, "--since", "2026-02-01"))[0] == 1
    assert _sessions(_fleet(dataset, "--since", "2026-02-01"))[1].startswith("2026-03-05")
    assert _sessions(_fleet(dataset, "--before", "2026-02-01"))[1].startswith("2026-01-05")
    assert _sessions(_fleet(dataset, "--before", "2026-02-01"))[0] == 1
    both = _fleet(dataset, "--since", "2026-01-01", "--before", "2026-12-01")
    assert _sessions(both)[0] == 2
    # since is on or after, before is strictly before: the later session's own day
    assert _sessions(_fleet(dataset, "--since", "2026-03-05"))[0] == 1
    assert _sessions(_fleet(dataset, "--before", "2026-03-05"))[0] == 1
    # an ISO time as well as a day
    assert _sessions(_fleet(dataset, "--since", "2026-03-05T23:59:59Z"))[0] == 0


def test_the_window_is_said_in_the_json_the_text_and_the_page(
    dataset: Path, tmp_path: Path
) -> None:
    data = _fleet(dataset, "--since", "2026-02-01", "--before", "2026-04-01")
    assert data["filters"] == {"since": "2026-02-01", "before": "2026-04-01"}
    text = runner.invoke(app, ["fleet", str(dataset), "--no-cost", "--since", "2026-02-01"])
    assert text.exit_code == 0, text.output
    assert text.stdout.startswith("fleet ds (--since 2026-02-01): 1 session ")
    page = tmp_path / "fleet.html"
    made = runner.invoke(
        app, ["fleet", str(dataset), "--no-cost", "--before", "2026-02-01", "-o", str(page)]
    )
    assert made.exit_code == 0, made.output
    assert "Agent Profiler fleet: ds (--before 2026-02-01)" in page.read_text()


def test_a_split_is_taken_within_the_window(dataset: Path) -> None:
    """--split compares the two sides of a date among the sessions the window keeps: the
    side before the split holds no session started before --since."""
    split = _fleet(dataset, "--since", "2026-02-01", "--split", "2026-03-01")["split"]
    assert _sessions(split["before"])[0] == 0
    assert _sessions(split["after"])[0] == 1
    split = _fleet(dataset, "--before", "2026-02-01", "--split", "2026-01-01")["split"]
    assert (_sessions(split["before"])[0], _sessions(split["after"])[0]) == (0, 1)


def test_a_window_with_no_session_says_so(dataset: Path) -> None:
    result = runner.invoke(app, ["fleet", str(dataset), "--no-cost", "--before", "2020-01-01"])
    assert result.exit_code == 0
    assert result.stdout == "fleet ds (--before 2020-01-01): no sessions\n"
    assert result.stderr == f"note: no session in {dataset} matches --before 2020-01-01\n"


def test_an_empty_window_and_a_bad_date_are_usage_errors(dataset: Path) -> None:
    empty = runner.invoke(
        app, ["fleet", str(dataset), "--since", "2026-03-01", "--before", "2026-03-01"]
    )
    assert empty.exit_code == 2
    assert empty.stderr == (
        "error: --since 2026-03-01 is not before --before 2026-03-01: no session could start "
        "in between\n"
    )
    for command in (["fleet", str(dataset)], ["discover"]):
        for option in ("--since", "--before", "--split"):
            if command == ["discover"] and option != "--since":
                continue
            bad = runner.invoke(app, [*command, option, "March"])
            assert bad.exit_code == 2, (command, option)
            assert (
                f"Invalid value for '{option}': 'March' is not a date (use YYYY-MM-DD or an "
                "ISO time)" in bad.stderr
            )
