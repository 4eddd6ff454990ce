"""`collect`'s planning does not grow with the square of the journals given: the journals
that cannot be used are taken out of those to plan once, not once per journal (a first
collect of 24,000 journals spent 11 s on that line alone). Counted, not timed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dsfiles import collected

from agent_profiler.dataset import collect as collect_module
from samples import CLAUDE_SMALL

pytest.importorskip("duckdb")


class _CountingKeys(dict[str, Any]):
    calls = 0

    def keys(self) -> Any:
        type(self).calls += 1
        return super().keys()


def _sessions(folder: Path, count: int) -> None:
    """`count` distinct Claude Code sessions: the small journal with its id changed."""
    text = CLAUDE_SMALL.read_text()
    session_id = text.split('"sessionId":"', 1)[1].split('"', 1)[0]
    for n in range(count):
        own = f"{session_id[:-4]}{n:04d}"
        (folder / f"{own}.jsonl").write_text(text.replace(session_id, own))


def test_the_unusable_journals_are_taken_out_once_not_per_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN 12 distinct sessions, and the scan's unusable journals counting their keys() calls
    journals = tmp_path / "j"
    journals.mkdir()
    _sessions(journals, 12)
    scan = collect_module.scan

    def counting_scan(*args: Any) -> Any:
        changes = scan(*args)
        changes.unusable = _CountingKeys(changes.unusable)
        return changes

    monkeypatch.setattr(collect_module, "scan", counting_scan)
    # (counted from 0 in this test: the class's count outlives a run, and a second run of
    # the suite in one process, as mutmut's clean run after its first pass, found 2)
    monkeypatch.setattr(_CountingKeys, "calls", 0)
    monkeypatch.chdir(tmp_path)
    # WHEN collected
    result = collected(str(journals))
    # THEN all 12 are collected, and the set of unusable journals was looked at once
    assert "12 sessions" in result.output + result.stderr
    assert _CountingKeys.calls == 1
