"""`collect` of a Claude Code session folder whose transcript was rewritten with another
session (its file name reused): its subagents' folder is the transcript's, read in its
group once (claude_code.plan). Each subagent file also made a group of its own: the
subagent counted twice, and a change of it said twice."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from agent_profiler.dataset.collect import collect
from agent_profiler.options import ReadOptions
from samples import CLAUDE_SMALL
from shared_paths import TESTS

pytest.importorskip("duckdb")
SPOTTER = TESTS / "data" / "journals" / "claude-code" / "spotter-2.1.39-subagents-compaction"
SPOTTER_ID = "258c7280-ae70-4798-800f-63464d01a85d"


def test_a_subagent_beside_a_reused_name_is_collected_and_said_once(tmp_path: Path) -> None:
    folder = tmp_path / "sp"
    shutil.copytree(SPOTTER, folder)
    dataset = tmp_path / "ds"
    collect([folder], dataset, options=ReadOptions(jobs=1))
    # GIVEN the transcript rewritten with another session
    transcript = folder / f"{SPOTTER_ID}.jsonl.gz"
    transcript.write_bytes(gzip.compress(CLAUDE_SMALL.read_bytes()))
    rewritten = collect([folder], dataset, options=ReadOptions(jobs=1))
    assert (rewritten.groups_read, rewritten.sessions_total) == (1, 2)
    # WHEN the subagent's file shrinks too
    subagent = folder / SPOTTER_ID / "subagents" / "agent-a881341.jsonl"
    subagent.write_bytes(b"".join(subagent.read_bytes().splitlines(keepends=True)[:-1]))
    said: list[str] = []
    shrunk = collect([folder], dataset, options=ReadOptions(jobs=1), notice=said.append)
    # THEN it is read once, in the transcript's group, and said once
    assert (shrunk.groups_read, shrunk.sessions_total) == (1, 2)
    assert len(said) == 1 and f"{subagent.name}: it shrank (131,721 → " in said[0]
