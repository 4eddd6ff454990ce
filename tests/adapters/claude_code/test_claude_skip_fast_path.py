"""The transcript reader counts a skipped record (progress, file-history snapshot) without
handing it to the `/context` tracker when the tracker says it would do nothing with it
(`ContextCommandTracker.ignores`). These tests pin that this shortcut changes nothing: the
reader finds the same `/context` runs and failures, at the same lines, as a tracker fed every
record, also when skipped records sit inside a run's chain or carry a command themselves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters.claude_code import read_transcript
from agent_profiler.adapters.claude_context import (
    ContextCommandFailure,
    ContextCommandTracker,
    NativeSnapshot,
)
from agent_profiler.diagnostics import Diagnostics
from shared_paths import TESTS

CONTEXT = TESTS / "data" / "journals" / "claude-code" / "context-command"
SIMONW = CONTEXT / "simonw-cct-pr51_v2.1.2_44baca89.jsonl"
JOURNALS = sorted(CONTEXT.glob("*.jsonl"))


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _progress(session_id: str, parent: object, number: int, **extra: Any) -> dict[str, Any]:
    # In Claude Code's order of keys: written compactly, `jsonl.LineSkip` can tell it by
    # its bytes (`_read(compact=True)`).
    return {
        "parentUuid": parent,
        "sessionId": session_id,
        "type": "progress",
        "data": {"type": "hook_progress"},
        "uuid": f"progress-{number}",
        "timestamp": "2026-01-01T00:00:00.000Z",
        **extra,
    }


def _with_progress(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each record followed by a progress record chained to it (`parentUuid`), as Claude
    Code writes hook progress: one of them may sit between a command and its output."""
    session_id = next(str(r["sessionId"]) for r in records if "sessionId" in r)
    out: list[dict[str, Any]] = []
    for number, record in enumerate(records):
        out += [record, _progress(session_id, record.get("uuid"), number)]
    return out


def _expected(records: list[dict[str, Any]]) -> tuple[list[tuple[int, str]], int]:
    """What a tracker fed every record finds: its failures (line, reason), its runs."""
    tracker = ContextCommandTracker()
    results = []
    for line, record in enumerate(records, 1):
        results += tracker.feed(record, line)
    results += tracker.finish()
    found = [(r.line, r.reason) for r in results if isinstance(r, ContextCommandFailure)]
    return found, sum(isinstance(r, NativeSnapshot) for r in results)


@pytest.fixture(params=[False, True], ids=["spaced", "compact"])
def compact(request: pytest.FixtureRequest) -> bool:
    """Each test reads its records written with spaces, then compactly as Claude Code
    writes them, where progress records are told by their bytes and left unparsed
    whenever nothing needs to see them (`jsonl.LineSkip`)."""
    return bool(request.param)


def _read(
    tmp_path: Path, records: list[dict[str, Any]], compact: bool
) -> tuple[list[tuple[int, str]], int]:
    path = tmp_path / "session.jsonl"
    separators = (",", ":") if compact else (", ", ": ")
    lines = (json.dumps(r, separators=separators) + "\n" for r in records)
    path.write_text("".join(lines), encoding="utf-8")
    diagnostics = Diagnostics(keep_first=1000)
    builders = read_transcript(path, diagnostics)
    found = [(w.line, w.message) for w in diagnostics.warnings if w.kind == "context-command"]
    progress = sum(r.get("type") == "progress" for r in records)
    assert diagnostics.skipped["claude:progress"] == progress  # each counted once
    return found, sum(b.native_runs for b in builders.values())


@pytest.mark.parametrize("journal", JOURNALS, ids=lambda p: p.name)
def test_progress_records_inside_context_runs_change_nothing(
    tmp_path: Path, journal: Path, compact: bool
) -> None:
    records = _with_progress(_records(journal))
    expected = _expected(records)
    assert expected[0] or expected[1]  # the journal holds a /context run or its failure
    assert _read(tmp_path, records, compact) == expected


def test_a_progress_record_chained_to_a_command_ends_its_run(tmp_path: Path, compact: bool) -> None:
    command, output = _records(SIMONW)
    between = _progress(str(command["sessionId"]), command["uuid"], 1)
    found, runs = _read(tmp_path, [command, between, output], compact)
    assert (found, runs) == ([(1, "/context gave no output record")], 0)
    # Without it, the same two records are a run.
    assert _read(tmp_path, [command, output], compact) == ([], 1)


def test_a_skipped_record_with_a_command_message_is_still_a_command(
    tmp_path: Path, compact: bool
) -> None:
    command, _ = _records(SIMONW)
    odd = _progress(str(command["sessionId"]), None, 1, message=command["message"])
    records = [_progress(str(command["sessionId"]), None, 0), odd]
    assert _read(tmp_path, records, compact) == ([(2, "/context gave no output record")], 0)


def test_ignores_only_what_feed_would_do_nothing_with() -> None:
    command, _ = _records(SIMONW)
    plain = _progress("s", None, 0)
    tracker = ContextCommandTracker()
    assert tracker.ignores(plain)
    assert not tracker.ignores({**plain, "message": {"content": "text"}})
    assert not tracker.ignores({**plain, "type": "system"})
    assert tracker.feed(command, 1) == []  # a command now awaits its output
    assert not tracker.ignores(plain)
