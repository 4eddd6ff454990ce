"""The Claude Code pass with its reading in a forked helper (stream/forked.py), against the
same pass in one process: the same bytes and the same lines said, on every transcript of
tests/data and the corpus and on the hand-made ones of test_claude_stream_cases (what
the pass does not handle falls back for the same reason, the helper's `NotHandled` said
in this process); the helper's failures and this process's own fall back to the model
path's bytes, with no process left behind; and an export of one long transcript takes
the pass by default where the helper runs, and only there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import test_claude_stream_cases as cases
from test_claude_stream import _journals, _reason
from test_codex_forked import (
    FAILURES,
    _said,
    hand_made_the_same,
    helper_fails,
    one_and_two,
    taken_by_default_when_long,
    writing_side_refuses,
)
from test_codex_forked import forks as forks  # (the fixture)
from test_pi_stream import refusals

from agent_profiler import stream
from agent_profiler.stream import claude as stream_claude
from agent_profiler.stream import claude_reading

# Every hand-made transcript of test_claude_stream_cases: those the pass handles and
# those it falls back on.
CHANGES = [
    "no_result_mid",
    "result_before_call",
    "synthetic",
    "microcompaction",
    "two_microcompactions",
    "microcompaction_later",
    "microcompaction_after_request",
    "results_cut",
    "changed_after_cut",
    "stripped_after_cut",
    "content_replaced",
    "first_model_not_claude",
    "names_an_agent",
    "names_an_agent_at_the_end",
    "sidechain",
    "undated",
    "closed_request",
    "unmetered",
    "compaction_first",
    "same_start",
    "time_back",
    "late_result",
    "late_results",
    "calls_again",
]


@pytest.mark.parametrize("path", _journals())
def test_the_same_bytes_with_the_reading_forked(
    path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    reason = _reason(path)
    helpers = 0 if reason is not None and "up front" in reason else 1
    reasons = refusals(monkeypatch, stream_claude.ClaudePass)
    one, two = one_and_two(path, export_trace, monkeypatch, forks, helpers)
    assert two.path.read_bytes() == one.path.read_bytes()
    assert _said(two) == _said(one)
    # (one that falls back: for the same reason both ways, the helper's said here)
    assert reasons[: len(reasons) // 2] == reasons[len(reasons) // 2 :]


@pytest.mark.parametrize("name", CHANGES)
def test_hand_made_transcripts_with_the_reading_forked(
    name: str, tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    path = cases._write(tmp_path, getattr(cases, name))
    hand_made_the_same(
        path, claude_reading, stream_claude.ClaudePass, export_trace, monkeypatch, forks
    )


def test_damaged_lines_are_said_the_same_way_by_the_helper(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    # GIVEN a transcript with a cut line, a line that is no object and a type none knows:
    # warnings the helper's reading makes, and counts (lines read, records skipped)
    lines = cases.BASE.read_text().splitlines(keepends=True)
    lines.insert(6, '{"type": "user", "timestamp": "2026-01-22T01:41:15.000Z", \n')
    lines.insert(9, "[1, 2]\n")
    lines.insert(12, '{"type": "mystery", "timestamp": "2026-01-22T01:41:16.000Z"}\n')
    path = tmp_path / "journal.jsonl"
    path.write_text("".join(lines))
    one, two = one_and_two(path, export_trace, monkeypatch, forks)
    # THEN this process says what the helper read, as the pass in one process says it
    assert "not recognised" in one.stderr and "not a JSON object" in one.stderr
    assert _said(two) == _said(one)
    assert two.path.read_bytes() == one.path.read_bytes()


def _base(tmp_path: Path) -> Path:
    path = tmp_path / "journal.jsonl"
    path.write_bytes(cases.BASE.read_bytes())
    return path


@FAILURES
def test_the_helper_failing_falls_back_to_the_model_path(
    failure: Any,
    reason: bool,
    tmp_path: Path,
    export_trace: Any,
    monkeypatch: pytest.MonkeyPatch,
    forks: list[int],
) -> None:
    helper_fails(
        _base(tmp_path),
        claude_reading.ClaudeReading,
        stream_claude.ClaudePass,
        failure,
        reason,
        export_trace,
        monkeypatch,
        forks,
    )


def test_the_writing_side_failing_ends_the_helper(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    writing_side_refuses(
        _base(tmp_path), claude_reading, stream_claude.ClaudePass, export_trace, monkeypatch, forks
    )


def test_a_long_transcript_alone_takes_the_pass_by_default_where_the_helper_runs(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    taken_by_default_when_long(_base(tmp_path), export_trace, monkeypatch, forks)


def test_the_helper_reads_without_a_scanning_helper_of_its_own(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    """Two processes on two cores, not three: the helper's reading does its own byte test
    (scan.py's helper would be its child)."""
    from agent_profiler import scan

    seen: list[bool] = []
    original = claude_reading.ClaudeReading.batches

    def batches(self: claude_reading.ClaudeReading) -> Any:
        seen.append(scan.is_allowed())
        if len(seen) == 1:  # (in the helper: said through the diagnostics' lines)
            self.diagnostics.warn(str(self.path), 1, "probe", f"scan allowed: {seen[0]}")
        yield from original(self)

    monkeypatch.setattr(claude_reading.ClaudeReading, "batches", batches)
    monkeypatch.setenv(stream.SWITCH, "1")
    got = export_trace(_base(tmp_path), require_addition=False)
    assert len(forks) == 1
    assert "scan allowed: False" in got.stderr


def test_the_export_tells_the_helper_its_lines_verdicts(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    """The helper's byte test is worked out by the export in its waits for batches
    (scan.Scanning) and read by the helper as a scanning helper's would be (scan.given).
    The helper says how many verdicts it read, through its diagnostics."""
    import re
    import select

    from agent_profiler import scan

    told: list[int] = []
    start = scan.LineScan.start.__func__  # type: ignore[attr-defined]

    def started(cls: type[scan.LineScan], stream: object, skip: Any) -> Any:
        made = start(cls, stream, skip)
        if made is not None and made._pid is None:  # (handed over, not a helper's own)
            select.select([made._fd], [], [], 30)  # (until the first verdicts come)
        return made

    close = scan.LineScan.close

    def closed(self: scan.LineScan) -> None:
        told.append(len(self.values))
        close(self)

    batches = claude_reading.ClaudeReading.batches

    def reported(self: claude_reading.ClaudeReading) -> Any:
        yield from batches(self)
        self.diagnostics.warn(str(self.path), 1, "probe", f"lines told: {told}")

    monkeypatch.setattr(scan.LineScan, "start", classmethod(started))
    monkeypatch.setattr(scan.LineScan, "close", closed)
    monkeypatch.setattr(claude_reading.ClaudeReading, "batches", reported)
    monkeypatch.setenv(stream.SWITCH, "1")
    path = _base(tmp_path)
    got = export_trace(path, require_addition=False)
    assert len(forks) == 1
    found = re.search(r"lines told: \[(\d+)\]", got.stderr)
    assert found is not None, got.stderr
    assert 0 < int(found[1]) <= path.read_bytes().count(b"\n")
