"""Planning's rooms read directly: what a slice's flows are read from (`Links`) and a
context category's counter, whichever way the replay shared its totals."""

from __future__ import annotations

import heapq
import random
from array import array

from agent_profiler.layout.counters import session_counters
from agent_profiler.layout.planning import Links
from agent_profiler.layout.types import merged_begins
from agent_profiler.model import (
    AnchorKind,
    Basis,
    Category,
    ContextSnapshot,
    Coverage,
    Harness,
    Session,
    Stage,
)

S = 1_000_000_000
T0 = 1_770_000_000 * S


def test_values_of_a_source_are_the_values_at_its_targets_in_order() -> None:
    # Sources with no target, one, and several (not next to each other), at random.
    rng = random.Random(32)
    for _ in range(200):
        sources = rng.randint(1, 6)
        source_of = [rng.randint(-1, sources - 1) for _ in range(rng.randint(0, 12))]
        links = Links.of(sources, source_of)
        values = array("Q", (rng.randint(1, 2**64 - 1) for _ in source_of))
        for source in range(sources):
            expected = tuple(values[t] for t, s in enumerate(source_of) if s == source)
            assert links.values_of(source, values) == expected


def _snapshot(at: int, categories: tuple[tuple[Category, int], ...]) -> ContextSnapshot:
    return ContextSnapshot(
        at,
        AnchorKind.RESPONSE,
        f"r{at}",
        Stage.TRANSCRIPT_OBSERVED,
        Basis.CHARS,
        Coverage.PARTIAL,
        False,
        categories,
    )


def _category_samples(snapshots: list[ContextSnapshot]) -> dict[str, list[tuple[int, ...]]]:
    session = Session(Harness.PI, "s", T0, T0 + 10 * S, ("s.jsonl",), snapshots=tuple(snapshots))
    counters, last = session_counters(session, T0, [], "an estimate")
    samples = {c.name: list(c.made()) for c in counters if c.group}
    samples["(last)"] = [(last,)]
    return samples


def test_a_category_counter_is_the_same_whether_snapshots_share_their_totals_or_not() -> None:
    # The replay hands a snapshot the previous one's categories tuple when no total moved;
    # counters skip such a snapshot. Equal tuples that are not shared give the same
    # samples, categories coming, going (a 0) and coming back included.
    prompts, results = Category.PROMPTS, Category.RESULTS
    steps = [
        ((prompts, 10),),
        ((prompts, 10),),
        ((prompts, 10), (results, 5)),
        ((prompts, 10), (results, 5)),
        ((results, 5),),
        ((prompts, 12), (results, 5)),
        ((prompts, 12), (results, 5)),
        (),
        (),
        ((results, 7),),
    ]
    shared: list[ContextSnapshot] = []
    for i, categories in enumerate(steps):
        if shared and shared[-1].categories == categories:
            categories = shared[-1].categories  # the very object, as the replay does
        shared.append(_snapshot(T0 + i * S, categories))
    copied = [_snapshot(x.time_ns, tuple(list(x.categories))) for x in shared]
    assert _category_samples(shared) == _category_samples(copied)
    got = _category_samples(shared)
    assert [v for _, _, v in got["Context: User prompts"]] == [10, 0, 12, 0]
    assert [v for _, _, v in got["Context: Tool results"]] == [5, 0, 7]
    assert got["(last)"] == [(T0 + 9 * S,)]


def test_categories_never_present_leave_no_counter_and_no_end() -> None:
    # Snapshots with no category at all (shared empty tuples): no counter, and the last
    # sample's time is not moved by them.
    snapshots = [_snapshot(T0 + i * S, ()) for i in range(3)]
    assert _category_samples(snapshots) == {"(last)": [(T0,)]}


def test_merged_begins_is_heapq_merge_of_the_same_streams() -> None:
    # Streams in order, interleaved at random, with ties of start and rank between them
    # (orders are unique), some empty, and some out of order: heapq.merge's output each
    # time, item for item (the same objects).
    rng = random.Random(7)
    for _ in range(300):
        orders = list(range(1, rng.randint(0, 40) + 1))
        rng.shuffle(orders)
        streams: list[list[tuple[int, int, int, object]]] = [[] for _ in range(rng.randint(1, 5))]
        for order in orders:
            begin = (rng.randint(0, 6), rng.choice((0, 3, 4)), order, object())
            rng.choice(streams).append(begin)
        for stream in streams:
            if rng.random() < 0.8:
                stream.sort(key=lambda b: b[:3])
        expected = list(heapq.merge(*streams))
        got = list(merged_begins([iter(stream) for stream in streams]))  # type: ignore[misc]
        assert len(got) == len(expected)
        assert all(a is b for a, b in zip(got, expected, strict=True))
