"""The user's own /context runs become native snapshots in the Claude Code trace, and
the transcript-observed snapshots after one use its measured head instead of the
inferred one (issue 10, points 3–5)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.adapters.claude_context import ContextCommandTracker, NativeSnapshot
from agent_profiler.attribution import INFERRED_HEAD_ID
from agent_profiler.cli import app
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.model import AnchorKind, Basis, Category, Coverage
from shared_paths import TESTS

FOLDER = TESTS / "data" / "journals" / "claude-code" / "context-command"
FILES = sorted(FOLDER.glob("*.jsonl"))


def parsed_runs(path: Path) -> list[NativeSnapshot]:
    """The parser's own reading of the file (tested on its own in test_context_command)."""
    tracker = ContextCommandTracker()
    runs: list[Any] = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        runs += tracker.feed(json.loads(line), number)
    runs += tracker.finish()
    return [r for r in runs if isinstance(r, NativeSnapshot)]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:40])
def test_each_run_is_a_native_snapshot_in_the_trace(path: Path, export_trace: Any) -> None:
    runs = parsed_runs(path)
    assert runs
    exported = export_trace(path, require_addition=False)
    slices = exported.view.slices_of_kind("context-command")
    assert len(slices) == len(runs)
    for slice_, run in zip(slices, runs, strict=True):
        context = slice_.args["context"]
        assert (context["basis"], context["coverage"], context["baseline"]) == (
            "native-summary",
            "complete",
            True,
        )
        assert context["reported_tokens"] == run.used_tokens == slice_.args["used_tokens"]
        # absent when the session's previous snapshot said the same (docs/traces.md); the
        # report's own window is on the slice itself
        assert context.get("window_tokens", run.window_tokens) == run.window_tokens
        assert slice_.args["context_window_tokens"] == run.window_tokens
        assert len(context["categories"]) >= 3
        assert context["categories"] == {c.value: t for c, t in run.categories if t}
        # the header's used total is its own number, never the rows scaled to it
        assert context["estimated_tokens"] == sum(t for _, t in run.categories)


def test_a_failed_run_is_one_warning_and_no_snapshot() -> None:
    path = FOLDER / "smartagent-so-pai_v2.0.57_703e4528_stderr-then-stdout.jsonl"
    diagnostics = Diagnostics()
    (session,) = load([path], diagnostics).sessions
    assert diagnostics.warning_counts == {"context-command": 1}
    assert diagnostics.warnings[0].line == 2
    assert sum(1 for s in session.snapshots if s.anchor is AnchorKind.NATIVE) == 1


def journal_after_a_run(tmp_path: Path) -> tuple[Path, NativeSnapshot, int]:
    """A real /context excerpt (2.1.2) followed by a synthetic prompt and response."""
    source = FOLDER / "simonw-cct-pr51_v2.1.2_44baca89.jsonl"
    records = [json.loads(line) for line in source.read_text().splitlines()]
    session_id = records[0]["sessionId"]
    (run,) = parsed_runs(source)
    reported = run.used_tokens + 500
    records += [
        {
            "type": "user",
            "sessionId": session_id,
            "uuid": "synthetic-u",
            "parentUuid": records[-1]["uuid"],
            "timestamp": "2026-06-01T00:00:00.000Z",
            "message": {"role": "user", "content": "SYNTHETIC prompt after /context"},
        },
        {
            "type": "assistant",
            "sessionId": session_id,
            "uuid": "synthetic-a",
            "parentUuid": "synthetic-u",
            "timestamp": "2026-06-01T00:00:02.000Z",
            "message": {
                "id": "msg_synthetic",
                "model": "claude-x",
                "content": [{"type": "text", "text": "ok"}],
                "usage": {
                    "input_tokens": 10,
                    "cache_read_input_tokens": reported - 10,
                    "output_tokens": 3,
                },
            },
        },
    ]
    journal = tmp_path / "after.jsonl"
    journal.write_text("".join(json.dumps(r) + "\n" for r in records))
    return journal, run, reported


def test_requests_after_a_run_use_the_native_head(tmp_path: Path) -> None:
    journal, run, reported = journal_after_a_run(tmp_path)
    (session,) = load([journal], Diagnostics()).sessions
    native, request = [
        s for s in session.snapshots if s.anchor in (AnchorKind.NATIVE, AnchorKind.RESPONSE)
    ]
    assert native.basis is Basis.NATIVE_SUMMARY and native.coverage is Coverage.COMPLETE
    assert request.basis is Basis.CHARS and "/context" in (request.item_stage or "")
    categories = dict(request.categories)
    totals = dict(run.categories)
    for head in (Category.SYSTEM, Category.TOOLS, Category.RULES, Category.SKILLS):
        assert categories.get(head, 0) == totals.get(head, 0)
    # the measured head replaces the inferred one: nothing is inferred any more
    assert all(c.id != INFERRED_HEAD_ID for s in session.snapshots for c in s.changes)
    assert request.reported_tokens == reported
    assert Category.PROMPTS in categories


def test_a_window_read_by_context_gives_the_summary_a_fill(tmp_path: Path) -> None:
    # The window /context printed is the journal's (`journal (/context)`), so the summary
    # knows it and gives the peak's fill, as it does for a plain `journal` window.
    journal, run, reported = journal_after_a_run(tmp_path)
    (session,) = load([journal], Diagnostics()).sessions
    assert session.window_source == "journal (/context)" and run.window_tokens
    result = CliRunner().invoke(app, ["summary", "--json", str(journal)])
    (row,) = json.loads(result.stdout)
    assert row["window_tokens"] == run.window_tokens
    assert row["peak_fill"] == round(reported / run.window_tokens, 4)


def test_summary_shows_the_native_head_split() -> None:
    path = FOLDER / "simonw-cct-pr51_v2.1.2_44baca89.jsonl"
    (run,) = parsed_runs(path)
    result = CliRunner().invoke(app, ["summary", "--json", str(path)])
    (row,) = json.loads(result.stdout)
    head = {
        c.value: t
        for c, t in run.categories
        if c in (Category.SYSTEM, Category.TOOLS, Category.RULES, Category.SKILLS)
    }
    assert row["native_head"] == head
    text = CliRunner().invoke(app, ["summary", str(path)]).stdout
    assert "head measured by /context: System instructions 2,900" in text
