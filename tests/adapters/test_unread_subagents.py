"""Subagents that ran but whose journals were not read (review of subagents, finding 5):
the launching call keeps the id the child has when read (`child_session`), the parent's
`profile (1)` counts them (`unavailable_child_sessions`, TRACE_CONTRACT §3, a uint as in
the reference traces), no flow leads to nothing, one warning says so for the run, and the
summary and the report say it where they list subagents. Claude Code and OpenCode here, on
real journals; Codex in tests/adapters/codex/test_codex.py (hand-made)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from samples import DATA
from shared_paths import CORPUS, SHARED_REASON

SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
SPOTTER_ID = "258c7280-ae70-4798-800f-63464d01a85d"
ENTIRE_51 = DATA / "claude-code" / "entire-51-0c10bf7b7a-0_v2.0.76_parallel-task-subagents.jsonl"
DHC = CORPUS / "opencode" / "dhc-dashboard-1.18.21-task-subagent"


def profiles(view: Any) -> dict[str, Any]:
    """Each capture's `profile (1)` slice by its session id."""
    found = {}
    for capture in view.captures():
        profile = view.profile_of(capture.uuid)
        found[profile.args["session_id"]] = profile
    return found


def launchers(view: Any) -> dict[str, str]:
    """call id → child_session of every slice that names a child."""
    return {
        s.args["call_id"]: s.args["child_session"]
        for s in view.slices
        if "child_session" in (s.args or {})
    }


def test_a_claude_session_given_without_its_folder_names_its_subagent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, export_trace: Any
) -> None:
    # GIVEN the spotter's main journal alone (its subagents/ folder not beside it)
    monkeypatch.chdir(tmp_path)
    shutil.copy(SPOTTER / f"{SPOTTER_ID}.jsonl.gz", ".")
    alone = Path(f"{SPOTTER_ID}.jsonl.gz")
    # WHEN exported
    exported = export_trace(alone)
    # THEN the Task call names its subagent, the profile counts one not read, as a uint
    profile = profiles(exported.view)[SPOTTER_ID]
    assert profile.args["unavailable_child_sessions"] == 1
    assert profile.typed_args["unavailable_child_sessions"].type == "uint"
    assert launchers(exported.view) == {"toolu_01VmaERAwhb19LGUwu9GenaK": f"{SPOTTER_ID}/a881341"}
    # AND no flow is drawn to a child that is not there
    assert all(len(ends) == 2 for ends in exported.view.flows.values())
    # AND one warning, naming the file as given, and where the subagent's id is kept
    assert (
        f"  {alone}: 1 subagent named by this session was not read: pass its file or folder"
        " (the launching call keeps the id, `child_session`)\n"
    ) in exported.stderr
    assert "1 warning (subagent-not-read: 1)" in exported.stderr
    # AND the summary and the report say it where they list subagents
    summary = CliRunner().invoke(app, ["summary", str(alone), "--json"])
    (row,) = json.loads(summary.stdout)
    assert (row["subagent_calls"], row["subagents_not_read"]) == (0, 1)
    table = CliRunner().invoke(app, ["summary", str(alone)]).stdout
    assert f"{SPOTTER_ID}: 1 subagent it launched not read (in no number here)" in table
    page = tmp_path / "r.html"
    assert CliRunner().invoke(app, ["report", str(alone), "-o", str(page)]).exit_code == 0
    assert "+1 not read</small>" in page.read_text()


def test_a_claude_session_read_with_its_subagent_counts_none_not_read(export_trace: Any) -> None:
    exported = export_trace(SPOTTER)
    found = profiles(exported.view)
    assert all("unavailable_child_sessions" not in p.args for p in found.values())
    assert "subagent-not-read" not in exported.stderr
    assert launchers(exported.view) == {"toolu_01VmaERAwhb19LGUwu9GenaK": f"{SPOTTER_ID}/a881341"}
    summary = CliRunner().invoke(app, ["summary", str(SPOTTER), "--json"])
    assert [r["subagents_not_read"] for r in json.loads(summary.stdout)] == [0, 0]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_subagents_not_read_of_several_sessions_are_one_warning(
    jobs: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, export_trace: Any
) -> None:
    # GIVEN two sessions whose subagents' files are not given: 6 (entire-51) and 1
    monkeypatch.chdir(tmp_path)
    shutil.copy(SPOTTER / f"{SPOTTER_ID}.jsonl.gz", ".")
    shutil.copy(ENTIRE_51, ".")
    inputs = [Path(ENTIRE_51.name), Path(f"{SPOTTER_ID}.jsonl.gz")]
    # WHEN exported together, with one process or two
    exported = export_trace(*inputs, args=("--jobs", jobs))
    # THEN one line for the run, at the first such session's file
    assert (
        f"  {ENTIRE_51.name}: 7 subagents named by 2 sessions (this one first) were not read: "
        "pass their files or folder"
    ) in exported.stderr
    assert "subagent-not-read: 1" in exported.stderr
    counts = {
        i: p.args.get("unavailable_child_sessions") for i, p in profiles(exported.view).items()
    }
    assert sorted(counts.values()) == [1, 6]


@pytest.mark.skipif(not DHC.is_dir(), reason=SHARED_REASON)
def test_an_opencode_task_whose_child_was_not_exported_keeps_its_id(export_trace: Any) -> None:
    # GIVEN the dhc-dashboard exports: the parent and one of its two `task` children
    exported = export_trace(DHC, require_addition=False)
    found = profiles(exported.view)
    parent = "ses_fd4e13d58ffetoIsfha64XDWNj"
    # THEN the child not exported is named on its call (its state.metadata.sessionId; it
    # was dropped), counted on the parent's profile, and the other child stays linked
    assert found[parent].args["unavailable_child_sessions"] == 1
    named = set(launchers(exported.view).values())
    assert named == {"ses_fd4d960f6ffeE5qGihIRAIrfoz", "ses_fd4c895f0ffe6gKgxHiEgiQCcd"}
    assert "ses_fd4c895f0ffe6gKgxHiEgiQCcd" in found
    assert "unavailable_child_sessions" not in found["ses_fd4c895f0ffe6gKgxHiEgiQCcd"].args
    assert all(len(ends) == 2 for ends in exported.view.flows.values())
    assert "1 subagent named by this session was not read" in exported.stderr
