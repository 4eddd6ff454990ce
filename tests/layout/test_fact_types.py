"""The session facts that are counts are integers in the trace (`uint_value`, TRACE_CONTRACT
§4), not digits in a string: SQL's `int_value` and the UI's "Visualize argument values" read
them as numbers. On real journals: every bundled one in one trace, the corpus's too when it is
beside the repository, and an edited real Pi journal for the one count no real journal has."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import shared_paths
from agent_profiler.cli import app
from rules_spy import record, write
from samples import DATA, PI_LARGE
from traceview import TraceView, load_trace

COUNTS = (
    "redacted_items",  # Codex
    "patch_parts",  # OpenCode
    "init_tools",  # Claude Code stream-json: its init frame's lists, counted
    "init_skills",
    "init_agents",
    "init_slash_commands",
    "init_plugins",
    "thinking_level_changes",  # Pi
    "tool_calls_not_run",
    "entries_off_final_branch",
    "inherited_entries",  # a Pi fork's copy of its source's history
    "inherited_requests",
    "pruned_tool_results",  # OpenCode's prune (the hand-made export has one)
)


def _export(tmp_path: Path, journal: Path) -> TraceView:
    out = tmp_path / "trace.pftrace"
    result = CliRunner().invoke(app, ["export", str(journal), "-o", str(out), "--force"])
    assert result.exit_code == 0, result.output
    return load_trace(out)


def _counts(view: TraceView) -> dict[str, set[tuple[str, object]]]:
    """Each count fact's (wire type, value) over every profile of the trace."""
    found: dict[str, set[tuple[str, object]]] = {}
    for capture in view.captures():
        profile = view.profile_of(capture.uuid)
        assert profile is not None
        for name in COUNTS:
            if name in profile.args:
                found.setdefault(name, set()).add((profile.arg_types[name], profile.args[name]))
    return found


@pytest.mark.slow  # every bundled journal in one trace
def test_count_facts_are_integers_on_every_bundled_journal(tmp_path: Path) -> None:
    found = _counts(_export(tmp_path, DATA))
    assert {t for types in found.values() for t, _ in types} == {"uint"}
    assert set(found) >= {
        "redacted_items",
        "init_tools",
        "init_plugins",
        "thinking_level_changes",
        "tool_calls_not_run",
        "inherited_entries",
        "inherited_requests",
        "pruned_tool_results",
    }
    assert ("uint", 30) in found["redacted_items"]  # the Codex 20-34-25 rollout (its golden)
    assert ("uint", 103) in found["thinking_level_changes"]  # Pi's large session
    assert ("uint", 18) in found["tool_calls_not_run"]
    assert found["inherited_requests"] == {("uint", 484)}  # Pi's fork (before-compaction)
    assert found["pruned_tool_results"] == {("uint", 1)}  # OpenCode's hand-made prune


@pytest.mark.skipif(not shared_paths.CORPUS.is_dir(), reason=shared_paths.SHARED_REASON)
def test_opencode_patch_parts_are_an_integer_on_the_corpus(tmp_path: Path) -> None:
    journal = shared_paths.CORPUS / "opencode" / "dhc-dashboard-1.18.21-task-subagent"
    found = _counts(_export(tmp_path, journal))
    assert ("uint", 51) in found["patch_parts"]
    assert {t for types in found.values() for t, _ in types} == {"uint"}


def test_entries_off_the_final_branch_are_an_integer(tmp_path: Path) -> None:
    """Pi's large session, lines 1, 5, 6 and 17 made v3 (as `test_rules_pi_adapter`'s
    repeated-id case), line 17 branching from line 5: the first answer is off the final
    branch."""
    header, *entries = [record(PI_LARGE, n) for n in (1, 5, 6, 17)]
    header = {k: v for k, v in header.items() if k not in ("provider", "modelId")}
    header["version"] = 3
    parent = None
    for n, entry in enumerate(entries):
        entry["id"], entry["parentId"] = f"e{n}", parent
        parent = entry["id"]
    entries[-1]["parentId"] = "e0"
    found = _counts(_export(tmp_path, write(tmp_path, [header, *entries])))
    assert found["entries_off_final_branch"] == {("uint", 1)}
