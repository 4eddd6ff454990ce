"""`collect` says, as `export` does, when the sessions it read launched subagents whose
journals it did not read (one warning for the run, at the first such parent's file), and
tells the user to collect their files; a later collect of those files reads the parent's
group again with them, and the warning is gone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from shared_paths import TESTS

pytest.importorskip("duckdb")

JOURNALS = TESTS / "data" / "journals" / "claude-code"
ENTIRE_51 = JOURNALS / "entire-51-0c10bf7b7a-0_v2.0.76_parallel-task-subagents.jsonl"
SPOTTER = JOURNALS / "spotter-2.1.39-subagents-compaction"
PARENT = SPOTTER / "258c7280-ae70-4798-800f-63464d01a85d.jsonl.gz"
FOLDER = SPOTTER / "258c7280-ae70-4798-800f-63464d01a85d"


def test_collect_warns_of_the_subagents_it_did_not_read(tmp_path: Path) -> None:
    # GIVEN a real session that ran 6 subagents, none of whose journals is given
    # WHEN collected
    result = CliRunner().invoke(app, ["collect", str(ENTIRE_51), "--to", str(tmp_path / "d")])
    # THEN it is collected (a warning is not a failure) and one warning names the file
    assert result.exit_code == 0, result.output
    assert (
        f"{ENTIRE_51.name}: 6 subagents named by this session were not read: collect their"
        " files or folder (the launching call keeps the id, `child_session`)\n"
    ) in result.stderr
    assert "1 warning (subagent-not-read: 1)" in result.stderr


def test_a_later_collect_of_the_subagent_reads_the_parent_again_without_the_warning(
    tmp_path: Path,
) -> None:
    # GIVEN the spotter's main journal collected alone (its subagents' folder elsewhere)
    journals, dataset = tmp_path / "j", tmp_path / "d"
    journals.mkdir()
    shutil.copy(PARENT, journals / PARENT.name)
    first = CliRunner().invoke(app, ["collect", str(journals), "--to", str(dataset)])
    assert first.exit_code == 0, first.output
    assert "1 subagent named by this session was not read: collect its file" in first.stderr
    # WHEN its subagents' folder is put beside it and collected again
    shutil.copytree(FOLDER, journals / FOLDER.name)
    second = CliRunner().invoke(app, ["collect", str(journals), "--to", str(dataset)])
    # THEN the parent is read with its subagent: nothing is said to be missing
    assert second.exit_code == 0, second.output
    assert "subagent-not-read" not in second.stderr
    assert "2 sessions in the dataset" in second.stdout
