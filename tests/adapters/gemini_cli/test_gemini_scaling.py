"""Gemini CLI recordings whose reading cost grew with the square of their size (notes:
review-scaling findings 5 and 6): a record with thousands of tool calls
(`gemini_timing.plan` worked out the current group's last completion again for each call)
and thousands of `$rewindTo` (`on_rewind` scanned the whole history twice for each). The
work is counted (comparisons), not timed; and the edge cases the faster code must keep
are pinned on their outcome."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest

from agent_profiler.adapters import gemini_timing as timing
from agent_profiler.adapters.common import timestamp_ns
from agent_profiler.adapters.gemini_timing import CREATED, CallTime

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


class CountedNs(int):
    """A completion time that counts the comparisons made with it."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        CountedNs.compared += 1
        return int.__eq__(self, other)  # type: ignore[no-any-return]

    def __gt__(self, other: int) -> bool:
        CountedNs.compared += 1
        return int.__gt__(self, other)

    def __lt__(self, other: int) -> bool:
        CountedNs.compared += 1
        return int.__lt__(self, other)

    __hash__ = int.__hash__


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
    completed, is a later response merged into the record; the fifth, created after the
    fourth completed, another, and the sixth is that one's too, as the fifth has no
    completion to tell them apart by."""
    calls = [
        _call(1_000, 20_000),
        _call(2_000, 12_000),
        _call(15_000, 16_000),
        _call(21_000, 22_000),
        _call(22_500, None),
        _call(30_000, 31_000),
    ]
    times = timing.plan(calls, _ns(0), _ns(10_000))
    assert times.end_ns == _ns(10_000)
    assert times.calls == [
        CallTime(_ns(10_000)),
        CallTime(_ns(10_000)),
        CallTime(_ns(10_000)),
        CallTime(_ns(21_000), 1, CREATED),
        CallTime(_ns(30_000), 2, CREATED),
        CallTime(_ns(30_000), 2, CREATED),
    ]
    # Each merged response from the completion of the calls before it to its last call.
    assert times.merged == [(_ns(20_000), _ns(21_000)), (_ns(22_000), _ns(30_000))]
