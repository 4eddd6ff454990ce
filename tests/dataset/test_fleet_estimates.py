"""The fleet says how its shares were estimated (SPEC §3: an estimate is labelled and its
method named) and what its unattributed share mostly is, in the text and on the page."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.console import counted
from shared_paths import TESTS

pytest.importorskip("duckdb")

runner = CliRunner()
DATA = TESTS / "data" / "journals"
PI = DATA / "pi" / "pi-mono_large-session_v1.jsonl"  # chars/4, 900 requests
MUSE = DATA / "muse"  # Muse's own request lanes: native-bytes/4


def _dataset(tmp_path: Path, *journals: Path, estimate: str = "chars/4") -> Path:
    folder = tmp_path / "j"
    folder.mkdir()
    for journal in journals:
        if journal.is_dir():
            shutil.copytree(journal, folder / journal.name)
        else:
            shutil.copy(journal, folder)
    result = runner.invoke(
        app, ["collect", str(folder), "--to", str(tmp_path / "ds"), "--estimate", estimate]
    )
    assert result.exit_code in (0, 1), result.output
    return tmp_path / "ds"


def test_the_basis_of_the_estimate_is_named(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path, PI)
    data = orjson.loads(runner.invoke(app, ["fleet", str(dataset), "--json"]).stdout)
    assert data["sessions"]["estimate_bases"] == {"chars/4": 1}
    assert data["sources"]["weight"].startswith("estimated tokens × requests resident")
    text = runner.invoke(app, ["fleet", str(dataset), "--no-cost"]).stdout
    assert (
        "with ≥ 5 requests; estimated: characters / 4 per journal item, not tokenizer counts):"
        in text
    )
    page = tmp_path / "fleet.html"
    assert runner.invoke(app, ["fleet", str(dataset), "-o", str(page)]).exit_code == 0
    assert "(estimated: characters / 4 per journal item, not tokenizer counts)" in (
        page.read_text()
    )


def test_a_calibrated_dataset_says_so(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path, PI, estimate="calibrated")
    text = runner.invoke(app, ["fleet", str(dataset), "--no-cost"]).stdout
    assert "estimated: calibrated characters per token, by kind of text, not tokenizer" in text


def test_bases_that_differ_are_each_named_with_their_sessions(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path, PI, MUSE)
    data = orjson.loads(runner.invoke(app, ["fleet", str(dataset), "--json"]).stdout)
    assert set(data["sessions"]["estimate_bases"]) == {"chars/4", "native-bytes/4"}
    # the heading's counts are of the sessions its shares are the mean of
    who = data["who_wrote"]
    bases = who["estimate_bases"]
    assert set(bases) == {"chars/4", "native-bytes/4"} and sum(bases.values()) == who["sessions"]
    text = runner.invoke(app, ["fleet", str(dataset), "--no-cost"]).stdout
    assert f"mean over {counted(who['sessions'], 'session')} with ≥ 5 requests; " in text
    assert f"characters / 4 per journal item ({counted(bases['chars/4'], 'session')});" in text
    assert "the harness's own lanes, bytes / 4 (" in text


def test_the_unattributed_share_is_said_for_what_it_mostly_is(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path, PI)
    data = orjson.loads(runner.invoke(app, ["fleet", str(dataset), "--json"]).stdout)
    assert data["who_wrote"]["by_writer"]["unattributed"] > 0
    text = runner.invoke(app, ["fleet", str(dataset), "--no-cost"]).stdout
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  unattributed "))
    assert lines[at + 1].startswith("  (unattributed: what no journal item explains; mostly ")
    assert "the system prompt and tool schemas, inferred" in lines[at + 1]
    # (a head measured again after a compaction holds what the harness restored too)
    assert "and again after a compaction, when it also holds what the harness restored" in text


def test_the_turn_figures_say_their_unit(tmp_path: Path) -> None:
    """The context by turn read "15.2K" with no unit, in the text and under the page's bars."""
    dataset = _dataset(tmp_path, PI)
    text = runner.invoke(app, ["fleet", str(dataset), "--no-cost"]).stdout
    assert "\ncontext by turn (reported input, tokens):\n" in text
    page = tmp_path / "fleet.html"
    assert runner.invoke(app, ["fleet", str(dataset), "-o", str(page)]).exit_code == 0
    assert "median reported input at that request, in tokens (K: thousands" in page.read_text()
