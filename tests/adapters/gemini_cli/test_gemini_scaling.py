"""Gemini CLI recordings whose reading cost grew with the square of their size (notes:
review-scaling findings 5 and 6): a record with thousands of tool calls
(`gemini_timing.plan` worked out the current group's last completion again for each call)
and thousands of `$rewindTo` (`on_rewind` scanned the whole history twice for each). The
work is counted (comparisons), not timed; and the edge cases the faster code must keep
are pinned on their outcome."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters import gemini_timing as timing
from agent_profiler.adapters.common import timestamp_ns
from agent_profiler.adapters.gemini_recording import Recording, load_recording
from agent_profiler.adapters.gemini_session import SessionBuilder
from agent_profiler.adapters.gemini_timing import CREATED, CallTime
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.model import ChangeKind, Session
from counting import CountedNs
from rules_spy import sessions

HEADER = {"sessionId": "hand-made", "projectHash": "ab", "startTime": "2026-01-01T00:00:00Z"}
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z in ms


def _at(ms: int) -> str:
    seconds, rest = divmod(ms, 1000)
    hours, minutes = divmod(seconds // 60, 60)
    return f"2026-01-01T{hours:02d}:{minutes:02d}:{seconds % 60:02d}.{rest:03d}Z"


def _ns(ms: int) -> int:
    value = timestamp_ns(_at(ms))
    assert value is not None
    return value


# --------------------------------------------------------------------------- finding 5


def _timing_comparisons(monkeypatch: pytest.MonkeyPatch, calls: int) -> int:
    """The comparisons `plan` makes of a record with `calls` calls whose ids hold no time
    (every call in one group), each with a completion time."""
    start, ts = _ns(0), _ns(10_000)
    monkeypatch.setattr(
        timing, "_times", lambda call, start, ts: (None, CountedNs(ts + call["done"]))
    )
    CountedNs.compared = 0
    times = timing.plan([{"done": index} for index in range(calls)], start, ts)
    assert times.calls == [CallTime(ts)] * calls and times.merged == []
    return CountedNs.compared


def test_a_record_with_many_calls_is_timed_in_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Doubling the calls of one record doubles the comparisons of their completion times
    (worked out for each call, the group's last completion made it 4x: 500 → 1,000 calls
    went from 249,501 comparisons to 999,001; now 999 to 1,999)."""
    counts = [_timing_comparisons(monkeypatch, n) for n in (250, 500, 1000)]
    assert counts[-1] <= 10 * 1000, counts
    assert all(later <= 2.2 * earlier for earlier, later in pairwise(counts)), counts


def _call(made_ms: int, done_ms: int | None) -> dict[str, Any]:
    call: dict[str, Any] = {"id": f"read_file_{T0 + made_ms}_0", "name": "read_file"}
    if done_ms is not None:
        call["timestamp"] = _at(done_ms)
    return call


def test_overlapping_calls_of_one_record_keep_their_responses() -> None:
    """The record (written at 10 s) holds six calls in their order. The first three are
    one response's: the third was created (15 s) after the second completed (12 s) but
    before the first did (20 s), so it overlaps them. The fourth, created after all three
    completed, is a later response merged into the record; the fifth, created before the
    fourth completed, is that response's too, and so is the sixth, created long after:
    the fifth has no completion, so nothing says that response was over."""
    calls = [
        _call(1_000, 20_000),
        _call(2_000, 12_000),
        _call(15_000, 16_000),
        _call(21_000, 22_000),
        _call(21_500, None),
        _call(30_000, 31_000),
    ]
    times = timing.plan(calls, _ns(0), _ns(10_000))
    assert times.end_ns == _ns(10_000)
    assert times.calls == [
        CallTime(_ns(10_000)),
        CallTime(_ns(10_000)),
        CallTime(_ns(10_000)),
        CallTime(_ns(30_000), 1, CREATED),
        CallTime(_ns(30_000), 1, CREATED),
        CallTime(_ns(30_000), 1, CREATED),
    ]
    # The merged response from the completion of the calls before it to its last call.
    assert times.merged == [(_ns(20_000), _ns(30_000))]


# --------------------------------------------------------------------------- finding 6


class CountedId(str):
    """A message id that counts the comparisons made with it."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        CountedId.compared += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def _user(mid: str, ms: int, text: str) -> dict[str, Any]:
    return {"id": mid, "timestamp": _at(ms), "type": "user", "content": text}


def _gemini(mid: str, ms: int, tokens: int | None = 100) -> dict[str, Any]:
    record: dict[str, Any] = {"id": mid, "timestamp": _at(ms), "type": "gemini"}
    record |= {"content": f"answer {mid}", "model": "gemini-2.5-pro"}
    if tokens is not None:
        record["tokens"] = {"input": tokens, "output": 5, "cached": 0, "thoughts": 0}
    return record


def _log(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in [HEADER, *lines]))
    return path


def _rewind_comparisons(tmp_path: Path, rounds: int) -> int:
    """The id comparisons of reading `rounds` rounds of an answer, two prompts and a
    rewind to the second (the history grows by two each round): each id the replay
    hands on a copy of its own, so a lookup by id compares it once and a scan of the
    history once for each message passed."""
    lines: list[dict[str, Any]] = []
    for i in range(rounds):
        ms = 100 + i * 100
        lines += [_gemini(f"g{i}", ms), _user(f"u{2 * i + 1}", ms + 50, "next")]
        lines += [_user(f"u{2 * i + 2}", ms + 60, "again"), {"$rewindTo": f"u{2 * i + 2}"}]
    path = _log(tmp_path / f"session-2026-01-01T00-00-r{rounds}.jsonl", lines)
    loaded = load_recording(path, Diagnostics())
    recording = Recording(
        loaded.path,
        loaded.header,
        {CountedId(m): r for m, r in loaded.messages.items()},
        [(event, CountedId(v) if isinstance(v, str) else v) for event, v in loaded.events],
        loaded.container,
        {CountedId(m): line for m, line in loaded.lines.items()},
    )
    CountedId.compared = 0
    builder = SessionBuilder(recording, Diagnostics())
    builder.run()
    assert [m.kind for m in builder.markers] == ["rewind"] * rounds
    assert len(builder.order) == 2 * rounds
    return CountedId.compared


def test_many_rewinds_are_replayed_in_linear_work(tmp_path: Path) -> None:
    """Doubling the rewinds doubles the id comparisons (two scans of the history for
    each rewind made it 4x: 400 → 800 rounds went from 325,200 to 1,290,400; now 4,000
    to 8,000, the lookups of each message by its id)."""
    counts = [_rewind_comparisons(tmp_path, n) for n in (200, 400, 800)]
    assert counts[-1] <= 20 * 800, counts
    assert all(later <= 2.2 * earlier for earlier, later in pairwise(counts)), counts


def _changes(session: Session, response: str) -> dict[str, ChangeKind]:
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == response]
    return {c.id: c.change for c in snapshot.changes}


def test_rewinds_to_messages_gone_repeated_or_moved(tmp_path: Path) -> None:
    """A rewind drops its message and every one after it, found where the message is in
    the history now: `g2` written twice (streaming, then with its usage) is one message;
    a rewind to a message an earlier rewind dropped finds nothing, so everything leaves;
    a `$set.messages` that moves a message back (`u1`, after `g4`) and drops the one
    before (`u4`) moves where a rewind to each of them cuts."""
    lines = [
        _user("u1", 1_000, "one"),
        _gemini("g1", 2_000),
        _user("u2", 3_000, "two"),
        _gemini("g2", 4_000, None),
        _gemini("g2", 4_000),
        {"$rewindTo": "u2"},
        _user("u3", 5_000, "three"),
        _gemini("g3", 6_000),
        {"$rewindTo": "u2"},  # gone with the first rewind: not found, all leave
        _user("u4", 7_000, "four"),
        _gemini("g4", 8_000),
        {"$set": {"messages": [_gemini("g4", 8_000), _user("u1", 1_000, "one")]}},
        {"$rewindTo": "g4"},  # now first: both g4 and u1 leave
        _user("u5", 9_000, "five"),
        _gemini("g5", 10_000),
        {"$rewindTo": 7},  # not an id: all leave
        _user("u6", 11_000, "six"),
        _gemini("g6", 12_000),
    ]
    (session,) = sessions(_log(tmp_path / "session-2026-01-01T00-00-rw.jsonl", lines))
    assert [r.id for r in session.responses] == ["g1", "g2", "g3", "g4", "g5", "g6"]
    assert [m.value for m in session.markers if m.kind == "rewind"] == ["u2", "u2", "g4", "7"]
    removed, added = ChangeKind.REMOVED, ChangeKind.ADDED
    # (A response's text is in the context from the next request: `g2:text`, rewound
    # before it, never shows.)
    assert _changes(session, "g3") == {"u2:0": removed, "u3:0": added}
    assert _changes(session, "g4") == {
        "u1:0": removed,
        "g1:text": removed,
        "u3:0": removed,
        "u4:0": added,
    }
    # `g4:text` not added: the rewind to `g4` cut at its new place, first.
    assert _changes(session, "g5") == {"u4:0": removed, "u5:0": added}
    assert _changes(session, "g6") == {"u5:0": removed, "u6:0": added}
