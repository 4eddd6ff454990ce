"""sorting.by_first: the full sort's order, item for item, sorting by the int first and
by the rest only where the int repeats (the layout's responses and calls, first_fit's
slices)."""

from __future__ import annotations

import random
from operator import attrgetter

import pytest

from agent_profiler.sorting import by_first
from shared_paths import CORPUS, SHARED_REASON


class _Item:
    __slots__ = ("end", "name", "place", "start")

    def __init__(self, start: int, end: int, name: str, place: int) -> None:
        self.start, self.end, self.name, self.place = start, end, name, place

    def __repr__(self) -> str:
        return f"_Item({self.start}, {self.end}, {self.name!r}, {self.place})"


_START = attrgetter("start")
_FULL = attrgetter("start", "end", "name")


def _items(rng: random.Random, count: int, spread: int) -> list[_Item]:
    return [
        _Item(rng.randrange(spread), rng.randrange(3), rng.choice("ab"), place)
        for place in range(count)
    ]


@pytest.mark.parametrize("spread", [1, 2, 4, 50, 10**6])
def test_the_full_sorts_order_item_for_item(spread: int) -> None:
    rng = random.Random(spread)
    for _ in range(300):
        items = _items(rng, rng.randrange(40), spread)
        expected = [x.place for x in sorted(items, key=_FULL)]
        # (places, not items: equal keys must keep their input order, as sorted's do)
        assert [x.place for x in by_first(items, _START, _FULL)] == expected
        # `then` without the int again orders alike; any iterable is taken
        then = attrgetter("end", "name")
        assert [x.place for x in by_first(iter(items), _START, then)] == expected


def test_runs_at_the_edges_and_in_a_row() -> None:
    def places(starts: list[int], ends: list[int]) -> list[int]:
        items = [_Item(s, e, "a", i) for i, (s, e) in enumerate(zip(starts, ends, strict=True))]
        return [x.place for x in by_first(items, _START, _FULL)]

    # a run first, a run last, two runs with one item between, one run of everything
    assert places([1, 1, 2], [2, 1, 0]) == [1, 0, 2]
    assert places([0, 3, 3], [0, 2, 1]) == [0, 2, 1]
    assert places([1, 1, 2, 3, 3], [1, 0, 0, 1, 0]) == [1, 0, 2, 4, 3]
    assert places([5, 5, 5, 5], [0, 2, 1, 2]) == [0, 2, 1, 3]
    assert places([], []) == []
    assert places([7], [0]) == [0]


def test_then_is_asked_only_where_the_int_repeats() -> None:
    asked: list[int] = []

    def then(item: _Item) -> int:
        asked.append(item.place)
        return item.end

    items = [_Item(s, e, "a", i) for i, (s, e) in enumerate([(3, 0), (1, 1), (3, 2), (2, 0)])]
    assert [x.place for x in by_first(items, _START, then)] == [1, 3, 0, 2]
    assert sorted(asked) == [0, 2]


@pytest.mark.skipif(not CORPUS.is_dir(), reason=SHARED_REASON)
def test_a_real_sessions_responses_and_calls() -> None:
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.loader import load

    journals = sorted((CORPUS / "codex").rglob("*.jsonl"))
    assert journals, "no Codex journal in the corpus"
    loaded = load(journals, Diagnostics())
    calls = [c for s in loaded.sessions for c in s.tool_calls]
    responses = [r for s in loaded.sessions for r in s.responses]
    assert len(calls) > 100 and len(responses) > 100
    # Codex starts parallel calls at one time: runs to sort again
    assert len({c.start_ns for c in calls}) < len(calls)
    start, end = attrgetter("start_ns"), attrgetter("end_ns")
    for items, first, full in (
        (calls, start, attrgetter("start_ns", "call_id")),
        (responses, start, attrgetter("start_ns", "end_ns", "id")),
        (responses, end, attrgetter("end_ns", "start_ns", "id")),
    ):
        assert by_first(items, first, full) == sorted(items, key=full)
