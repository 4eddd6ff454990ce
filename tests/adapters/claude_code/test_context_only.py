"""Sessions that hold only `/context` output (issue 15, point 7) agree with themselves: the
Conversation counter carries the native Messages figure, the window read from `/context` is not
called assumed, the model is named where `/context` names it, and coverage is stated once. Run
on every such session of the corpus (Claude Code's context-command set)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from shared_paths import TESTS

CORPUS = Path("/work/shared/corpus/claude-code/context-command")
LOCAL = TESTS / "data" / "journals" / "claude-code" / "context-command"
FOLDER = CORPUS if CORPUS.is_dir() else LOCAL
runner = CliRunner()


def context_only(path: Path) -> bool:
    """No assistant record with usage: the session is its /context runs (read raw)."""
    for line in path.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        message = record.get("message") if isinstance(record, dict) else None
        usage = message.get("usage") if isinstance(message, dict) else None
        if record.get("type") == "assistant" and isinstance(usage, dict) and any(usage.values()):
            return False
    return True


SESSIONS = [p for p in sorted(FOLDER.glob("*.jsonl")) if context_only(p)]


def test_the_corpus_has_context_only_sessions() -> None:
    assert len(SESSIONS) >= 5


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.name[:50])
def test_a_context_only_session_agrees_with_itself(
    path: Path, tmp_path: Path, export_trace
) -> None:  # type: ignore[no-untyped-def]
    view = export_trace(path, require_addition=False).view
    (capture,) = view.captures()
    profile = view.profile_of(capture.uuid)
    native = [s for s in view.slices_in_capture(capture.uuid) if s.name == "/context"]
    assert profile is not None and native
    last = native[-1].args["context"]
    # the Conversation counter carries the native Messages figure of the last run
    messages = last["categories"].get("messages", 0)
    conversation = [v for _, v in view.counter_samples(capture.uuid, "Context: Conversation")]
    assert messages == 0 or messages in conversation, (messages, conversation)
    # the window read from /context is the journal's, not an assumption
    assert not profile.args["context_window_source"].startswith("assumed")
    # the model is named where /context names it
    if last.get("model"):
        assert profile.args["model"] == last["model"]
    # coverage stated once: every snapshot of the session says the same
    coverages = {
        s.args["context"]["coverage"]
        for s in view.slices_in_capture(capture.uuid)
        if "context" in s.args
    }
    assert coverages == {"complete"}, coverages
    # the summary and the report agree: a known window, no "assumed", the model named
    (row,) = json.loads(runner.invoke(app, ["summary", str(path), "--json"]).stdout)
    assert row["window_tokens"] == profile.args["context_window_tokens"]
    assert row["model"] == (last.get("model") or row["model"])
    page = tmp_path / "r.html"
    assert runner.invoke(app, ["report", str(path), "-o", str(page)]).exit_code == 0
    html = page.read_text()
    assert '<small class="muted">assumed</small>' not in html and "(assumed)" not in html
    assert "model unknown" not in html or not last.get("model")
