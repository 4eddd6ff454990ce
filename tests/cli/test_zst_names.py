"""A cold Codex rollout (`x.jsonl.zst`) is named as a `.jsonl.gz` one is: its default
output name, the dataset's stem, the help of every command that takes journals."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from agent_profiler.adapters import JournalGroup
from agent_profiler.cli import app
from agent_profiler.dataset.reading import stem
from agent_profiler.model import Harness
from agent_profiler.outputs import default_output


def test_a_zstd_journal_is_named_without_its_suffixes() -> None:
    for name in ("x.jsonl.zst", "x.jsonl.gz", "x.jsonl"):
        assert default_output([Path(name)]) == Path("x.pftrace"), name
        assert default_output([Path(name)], ".json") == Path("x.json"), name
        assert stem(JournalGroup(Harness.CODEX, None, (Path("/d") / name,))) == "x", name


def test_the_help_of_commands_taking_journals_names_zstd() -> None:
    for command in ("export", "collect"):  # the others say "as export reads them"
        result = CliRunner().invoke(app, [command, "--help"], terminal_width=200)
        assert result.exit_code == 0
        assert ".jsonl.zst" in result.output, command
