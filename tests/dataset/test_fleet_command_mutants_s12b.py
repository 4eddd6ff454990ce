"""The bodies of `collect` and `fleet` (`fleet/command.py`): what the twelfth session's
second mutation sample found no test checking in-process. The hand-made transcript of the
dataset and cost tests, and the 2.1.14 compaction transcript of tests/data."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.fleet.command import run_collect
from agent_profiler.options import ReadOptions
from datasets import collected
from shared_paths import TESTS

pytest.importorskip("duckdb")

runner = CliRunner()
HANDMADE = TESTS / "data" / "dataset" / "claude-cost-split.jsonl"
COMPACTED = (
    TESTS
    / "data"
    / "journals"
    / "claude-code"
    / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"
)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_collect_shows_its_progress_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two journals collected with stderr a terminal: the line export shows, journal group
    by group, is shown while collect reads them (fleet.command.run_collect__mutmut_30 gave
    collect no progress: nothing was shown)."""
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    said: list[str] = []
    code = run_collect(
        [HANDMADE, COMPACTED],
        tmp_path / "ds",
        options=ReadOptions(jobs=1),
        echo=lambda line, err=False: said.append(line),
    )
    assert code == 0 and said[-1].startswith(f"{tmp_path / 'ds'}: version 1; 2 journals: 2 new")
    assert terminal.getvalue() == (
        f"\r\033[Kreading journals: 1/2 {HANDMADE.name}"
        f"\r\033[Kreading journals: 2/2 {COMPACTED.name}\n"
    )


def test_the_fleets_json_and_its_page_both_to_stdout_are_refused(tmp_path: Path) -> None:
    """`fleet ds --json -o -`: the page and the JSON would interleave on stdout; one error
    in words, exit 2, nothing written (fleet.command.run_fleet__mutmut_17 said it in
    capitals)."""
    root = collected(tmp_path, HANDMADE)
    result = runner.invoke(app, ["fleet", str(root / "ds"), "--json", "-o", "-"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == (
        "error: --json and --html - (-o -) would both write to stdout: give the page a file\n"
    )
