"""Largest additions (trace instants and the report's table) never list a baseline's items:
on real Claude Code records where a model change makes a baseline that holds three tool
results, only what came after it may be an addition."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_profiler.views import largest_additions
from rules_spy import record, sessions, write
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "claude-code"
E4B = DATA / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"


def _journal(tmp_path: Path) -> tuple[Path, set[str], set[str]]:
    """Lines 4–18 of E4B; line 12's request is sent to another model, so its snapshot is a
    baseline that holds the results of lines 9–11. Line 17's result (256 chars) comes after
    it (line 14's is empty)."""
    values = [record(E4B, n) for n in range(4, 19)]
    for value in values[8:]:  # lines 12–18 on another model
        message = value.get("message")
        if value["type"] == "assistant" and isinstance(message, dict):
            message["model"] = "claude-sonnet-4-5-20250929"
    in_baseline = {
        f"result:{record(E4B, n)['message']['content'][0]['tool_use_id']}" for n in (9, 10, 11)
    }
    after = {f"result:{record(E4B, 17)['message']['content'][0]['tool_use_id']}"}
    return write(tmp_path, values, name="model-change.jsonl"), in_baseline, after


def test_the_model_change_makes_a_baseline_with_the_results(tmp_path: Path) -> None:
    path, in_baseline, after = _journal(tmp_path)
    (session,) = sessions(path)
    baselines = [s for s in session.snapshots if s.baseline]
    assert len(baselines) == 2
    assert not session.snapshots[-1].baseline
    assert in_baseline <= {c.id for c in baselines[1].changes}
    grown = {c.id for s in session.snapshots if not s.baseline for c in s.changes}
    assert after <= grown and not in_baseline & grown


def test_report_largest_additions_skip_baselines(tmp_path: Path) -> None:
    path, in_baseline, after = _journal(tmp_path)
    (session,) = sessions(path)
    additions = largest_additions(session)
    ids = [a.change.id for a in additions]
    assert not in_baseline & set(ids)
    assert after <= set(ids)
    assert all(not a.snapshot.baseline and a.change.delta_tokens > 0 for a in additions)
    deltas = [a.change.delta_tokens for a in additions]
    assert deltas == sorted(deltas, reverse=True)
    (result,) = [a for a in additions if a.change.id in after]
    assert result.tool is not None and result.tool.name == "Bash"


def test_trace_largest_additions_skip_baselines(tmp_path: Path, export_trace: Any) -> None:
    path, in_baseline, after = _journal(tmp_path)
    (session,) = sessions(path)
    exported = export_trace(path)
    view = exported.view
    instants = sorted(
        (s for t in view.tracks_named("Largest additions") for s in view.slices_on(t.uuid)),
        key=lambda s: s.args["rank"],
    )
    items = [s.args["item_id"] for s in instants]
    assert not in_baseline & set(items)
    assert after <= set(items)
    # Exactly the report's additions that came from a tool call, in the same order.
    expected = [a.change.id for a in largest_additions(session) if a.tool is not None]
    assert items == expected[:10]
    assert [s.args["rank"] for s in instants] == list(range(1, len(items) + 1))


def test_the_traces_additions_are_the_first_ten_a_tool_caused() -> None:
    """The trace's Largest additions instants (views.largest_tool_additions, made without
    an Addition per change) are the first ten of largest_additions that a tool call caused,
    in that order: on real journals with many additions, and ties of size among them."""
    from agent_profiler.views import largest_tool_additions
    from samples import PI_LARGE

    for journal in (E4B, PI_LARGE, DATA / "spotter-2.1.39-subagents-compaction"):
        for session in sessions(journal):
            every = largest_additions(session)
            caused = [a for a in every if a.tool is not None]
            assert len(caused) > 10 or session.parent_session is not None
            for limit in (1, 10, len(caused) + 1):
                assert largest_tool_additions(session, limit) == caused[:limit]
