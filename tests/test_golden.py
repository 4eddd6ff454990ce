"""Golden text: whole exports of small real journals, one per harness, and of the Chrome JSON
writer, as text: a change of what a user sees shows up here as a readable diff.

The Perfetto goldens are the decoded text of the trace (tests/traceview.py); the Chrome JSON
golden is the document as canonical pretty JSON (sorted keys, one-space indent). After an
intended change run `make golden` (pytest --update-golden) and review the diff like code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from conftest import DATA, GOLDEN

SMALL = DATA / "claude-code" / "handmade" / "small.jsonl"
CODEX = DATA / "codex" / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
PI = DATA / "pi" / "pi-mono_large-session_v1_first-25-lines.jsonl"
MUSE = DATA / "muse" / "hcn-1.4.2-R4684.1_meta_single-turn_retained-frame.session.jsonl"
GEMINI = DATA / "gemini-cli" / "magi-ui-0.4_session-2025-09-10T04-48-e7b3ecf2.json"
OPENCODE = DATA / "opencode" / "ses_2bef25635ffe8EzID0I1Oeymal.export.json"

PERFETTO_GOLDENS = [
    (SMALL, "claude-code-small.txt"),
    (CODEX, "codex-rollout-20-34-25.txt"),
    (PI, "pi-large-session-first-25-lines.txt"),
    (MUSE, "muse-hcn-single-turn.txt"),
    (GEMINI, "gemini-cli-magi-ui.txt"),
    (OPENCODE, "opencode-ses-2bef.txt"),
]
SINGLE_REQUEST = {MUSE}


def _check(request: pytest.FixtureRequest, text: str, golden: str) -> None:
    path = GOLDEN / golden
    if request.config.getoption("--update-golden"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing {path}: run `make golden`"
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("journal", "golden"), PERFETTO_GOLDENS, ids=[g for _, g in PERFETTO_GOLDENS]
)
def test_golden_text(
    export_trace: Any, request: pytest.FixtureRequest, journal: Path, golden: str
) -> None:
    # GIVEN a small real journal (a hand-made one for Claude Code)
    # WHEN exported THEN its decoded text equals the golden file
    # (a single-request journal has no addition after its first snapshot to require)
    exported = export_trace(journal, require_addition=journal not in SINGLE_REQUEST)
    _check(request, exported.view.to_text(), golden)


def test_golden_chrome_json(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    # GIVEN the hand-made Claude Code journal WHEN exported as Chrome JSON
    out = tmp_path / "trace.json"
    result = CliRunner().invoke(app, ["export", str(SMALL), "-o", str(out)])
    assert result.exit_code == 0, result.output + result.stderr
    # THEN the document, as canonical pretty JSON, equals the golden file
    document = json.loads(out.read_bytes())
    text = json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    _check(request, text, "chrome-json-claude-code-small.json")
