"""Values that are valid but out of range are said to be out of range, in a usage line: a
window past any (past 2^64 it was an internal error in `summary --json`), a date outside
what a trace can hold (it was "not a date"). A harness variable that names no folder is
said by `discover` (it answered "no journals in the default folders" alone)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler import options
from agent_profiler.cli import app
from samples import CLAUDE_SMALL

runner = CliRunner()


@pytest.mark.parametrize("window", [str(2**64), "9" * 400 + "k", str(10**15)])
def test_a_window_past_any_is_a_usage_error(window: str) -> None:
    result = runner.invoke(app, ["summary", str(CLAUDE_SMALL), "--json", "--window", window])
    assert result.exit_code == 2, result.output + result.stderr
    assert "is more tokens than any window" in result.stderr
    assert "internal error" not in result.stderr


def test_the_largest_window_taken_is_taken() -> None:
    assert options.tokens(str(options.WINDOW_LIMIT - 1)) == options.WINDOW_LIMIT - 1


@pytest.mark.parametrize("date", ["9999-12-31", "1969-12-31", "1900-01-01T00:00:00"])
def test_a_date_out_of_range_is_called_so(date: str) -> None:
    with pytest.raises(ValueError, match="is outside 1970-01-01 … 2262-04-11"):
        options.moment(date)


def test_a_date_that_is_none_is_still_not_a_date() -> None:
    with pytest.raises(ValueError, match="is not a date"):
        options.moment("2026-13-01")


def test_fleet_since_out_of_range_is_a_usage_error_saying_the_range(tmp_path: Path) -> None:
    result = runner.invoke(app, ["fleet", str(tmp_path), "--since", "9999-12-31"])
    assert result.exit_code == 2
    assert "'9999-12-31' is outside 1970-01-01 … 2262-04-11" in result.stderr


@pytest.mark.parametrize("kind", ["file", "missing"])
def test_discover_says_a_harness_variable_names_no_folder(tmp_path: Path, kind: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    place = tmp_path / "settings.jsonl"
    if kind == "file":
        place.write_text("{}\n")
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(place), "XDG_DATA_HOME": ""}
    result = runner.invoke(app, ["discover", "--harness", "claude-code"], env=env)
    assert result.exit_code == 0, result.output + result.stderr
    what = "is not a folder" if kind == "file" else "names no folder"
    assert f"note: CLAUDE_CONFIG_DIR (settings.jsonl) {what}: claude-code journals" in (
        result.stderr
    )
    assert str(tmp_path) not in result.stderr  # a path shown as warnings show one


def test_discover_is_quiet_about_variables_of_other_harnesses(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / "none"), "XDG_DATA_HOME": ""}
    result = runner.invoke(app, ["discover", "--harness", "claude-code"], env=env)
    assert "CODEX_HOME" not in result.stderr
    result = runner.invoke(app, ["discover"], env=env)
    assert "note: CODEX_HOME (~/none) names no folder: codex journals" in result.stderr


def test_discover_says_an_opencode_db_that_is_no_database(tmp_path: Path) -> None:
    journal = tmp_path / "x.jsonl"
    journal.write_text("{}\n")
    env = {"HOME": str(tmp_path), "OPENCODE_DB": str(journal), "XDG_DATA_HOME": ""}
    result = runner.invoke(app, ["discover", "--harness", "opencode"], env=env)
    assert "note: OPENCODE_DB (~/x.jsonl) is not a SQLite database: opencode" in result.stderr
