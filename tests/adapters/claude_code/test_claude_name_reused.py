"""A Claude Code transcript rewritten with another session (its file name reused: a backup
restored over it, a copy renamed), beside the subagents' folder its name still owns
(`<name>/subagents/agent-*.jsonl`, whose records name the old session). The folder is
the transcript's (FORMATS §1.1: `<session-id>.jsonl` beside `<session-id>/subagents/`):
its files are read in that file's group, once. They were taken by that group and, given
too (the folder collected, or summarised), each made a group of its own: the subagent
read twice (`#2`, `session-repeated`), and the compaction file of the old session was
shown as the new session's compaction request."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from typer.testing import CliRunner

from agent_profiler.adapters import SniffedFile, claude_code
from agent_profiler.cli import app
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from samples import CLAUDE_SMALL
from shared_paths import TESTS

SPOTTER = TESTS / "data" / "journals" / "claude-code" / "spotter-2.1.39-subagents-compaction"
SPOTTER_ID = "258c7280-ae70-4798-800f-63464d01a85d"
SMALL_ID = "11111111-2222-4333-8444-555555555555"  # CLAUDE_SMALL's session (2 compactions)


def _name_reused(tmp_path: Path) -> tuple[Path, Path]:
    """The spotter session's folder, its transcript rewritten with another session:
    (the folder, the transcript)."""
    folder = tmp_path / "sp"
    shutil.copytree(SPOTTER, folder)
    transcript = folder / f"{SPOTTER_ID}.jsonl.gz"
    transcript.write_bytes(gzip.compress(CLAUDE_SMALL.read_bytes()))
    return folder, transcript


def test_the_subagents_of_a_reused_name_are_read_once_in_its_files_group(
    tmp_path: Path,
) -> None:
    folder, transcript = _name_reused(tmp_path)
    diagnostics = Diagnostics()
    sessions = load([folder], diagnostics).sessions
    assert sorted(s.session_id for s in sessions) == [SMALL_ID, f"{SPOTTER_ID}/a881341"]
    assert "session-repeated" not in diagnostics.warning_counts
    # AND the old session's compaction request is not the new session's
    (small,) = (s for s in sessions if s.session_id == SMALL_ID)
    assert small.compactions and all(c.request is None for c in small.compactions)
    assert small.sources == (str(transcript),)
    assert diagnostics.warning_counts["no-session"] == 1  # said for what it is


def test_the_plan_puts_each_subagent_file_in_one_group(tmp_path: Path) -> None:
    """The plan of the files a walk gives: the transcript (the new session's id) and its
    folder's files (the old session's), one group holding each file once."""
    folder, transcript = _name_reused(tmp_path)
    subagents = sorted((folder / SPOTTER_ID / "subagents").glob("agent-*.jsonl"))
    head = [{"type": "user", "sessionId": SPOTTER_ID, "isSidechain": True}]
    files = [SniffedFile(transcript, [{"type": "user", "sessionId": SMALL_ID}])]
    files += [SniffedFile(path, head) for path in subagents]
    (group,) = claude_code.plan(files)
    assert (group.main, group.extras, group.variant) == (transcript, tuple(subagents), "")


def test_a_copy_of_a_session_keeps_its_own_folders_subagents(tmp_path: Path) -> None:
    """Two files of one session, each with its folder (a backup beside the original): each
    group reads its own folder's subagents, once (those of the second were also added to
    the first by their session id: read twice)."""
    for copy in ("a", "b"):
        shutil.copytree(SPOTTER, tmp_path / copy)
    given = [tmp_path / "a", tmp_path / "b"]
    head = [{"type": "user", "sessionId": SPOTTER_ID, "isSidechain": True}]
    files = []
    for root in given:
        files.append(SniffedFile(root / f"{SPOTTER_ID}.jsonl.gz", [{"sessionId": SPOTTER_ID}]))
        files += [SniffedFile(p, head) for p in sorted(root.glob("*/subagents/agent-*"))]
    groups = claude_code.plan(files)
    assert [[p.relative_to(tmp_path).parts[0] for p in g.paths] for g in groups] == [
        ["a"] * 3,
        ["b"] * 3,
    ]


def test_summary_shows_the_subagent_once(tmp_path: Path) -> None:
    folder, _ = _name_reused(tmp_path)
    result = CliRunner().invoke(app, ["summary", str(folder)])
    assert result.exit_code == 0, result.output
    assert "#2" not in result.stdout and "session-repeated" not in result.stderr
    assert result.stdout.count(f"{SPOTTER_ID}/a881341") == 1
