"""Which changes a snapshot keeps (MAX_CHANGES, largest |delta| first, then by id) and how
many it leaves out, chosen without sorting every item: a session that changes model at
every request makes each request a baseline of every item in context."""

from __future__ import annotations

import random
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_profiler import attribution_replay
from agent_profiler.attribution import MAX_CHANGES, ContextLog, Observation
from agent_profiler.attribution_replay import Replayer, first_changes
from agent_profiler.model import Category, ChangeKind, ContextSnapshot


class CountingId(str):
    """An item id that counts how often it is ordered against another (`<`)."""

    compared = 0

    def __lt__(self, other: Any) -> bool:
        CountingId.compared += 1
        return str.__lt__(self, other)


def alternating_session(items: int, requests: int) -> tuple[ContextLog, int]:
    """`items` items of one size (every order falls to the ids), ids in no order, then
    `requests` requests alternating between two models (each a baseline), one item more
    before each; with the number of items the baselines held, summed."""
    log = ContextLog()
    rng = random.Random(7)
    names = [f"item-{n:06d}" for n in range(items + requests)]
    rng.shuffle(names)
    for name in names[:items]:
        log.add(CountingId(name), Category.RESULTS, 40)
    for n in range(requests):
        log.add(CountingId(names[items + n]), Category.RESULTS, 40)
        log.observe(Observation.request(n + 1, f"r{n}", model=("a", "b")[n % 2]))
    return log, sum(items + n + 1 for n in range(requests))


def test_a_baseline_compares_each_item_in_context_about_once() -> None:
    # GIVEN 4,000 items of one size and 10 requests that alternate models
    log, held = alternating_session(4000, 10)
    CountingId.compared = 0
    # WHEN replayed
    snapshots = log.replay()
    # THEN each is a baseline of every item, 64 kept, the rest counted
    assert all(s.baseline and len(s.changes) == MAX_CHANGES for s in snapshots)
    assert [s.omitted_changes for s in snapshots] == [4001 + n - 64 for n in range(10)]
    # AND the ids were compared about once per item a baseline held (with a heap of 64:
    # ~1.5 per item here), not log2(items) times (a sort of every item at each baseline:
    # ~11 per item)
    assert CountingId.compared <= 3 * held


def test_the_kept_changes_are_the_first_of_all_sorted() -> None:
    # A compaction changes every item: its changes are chosen, not all sorted.
    rng = random.Random(3)
    for size in (0, 1, 63, 64, 65, 200, 2000):
        found = [
            (-abs(d), f"id{rng.randrange(10**6):06d}-{n}", None, ChangeKind.ADDED, d, d)
            for n, d in enumerate(rng.choice((-5, -1, 0, 1, 5, 9)) for _ in range(size))
        ]
        rng.shuffle(found)
        expected = sorted(found)[:MAX_CHANGES]
        assert first_changes(list(found)) == expected  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.integers(-3, 3), st.integers(0, 1)),
        min_size=1,
        max_size=60,
    )
)
def test_first_changes_equal_a_full_sort_with_ties_and_negative_deltas(
    entries: list[tuple[int, int, int]],
) -> None:
    # (size class, delta, kind): few sizes, so most |delta| tie and the ids decide
    found = []
    for n, (size, delta, kind) in enumerate(entries * 3):
        d = delta * (1 + size)
        kinds = (ChangeKind.ADDED, ChangeKind.REMOVED)
        found.append((-abs(d), f"i{(n * 7919) % 1000:03d}-{n}", None, kinds[kind], d, d))
    assert first_changes(list(found)) == sorted(found)[:MAX_CHANGES]  # type: ignore[arg-type]


class FullSort(Replayer):
    """The replay as it was: every item of a baseline in a list, all sorted, cut."""

    def _baseline_changes(self) -> Any:
        found = [
            (-abs(item.tokens), item_id, item, ChangeKind.BASELINE, item.tokens, item.tokens)
            for item_id, item in self.items.items()
        ]
        found.sort()
        return found[:MAX_CHANGES], len(found)


# One step of a session: ("add", id, tokens), ("fill", first id, count, tokens): that many
# items of one size, their ids out of order; ("remove", id), ("drop", first id, count): that
# many removed; ("clear", keep prompts?),
# ("head", tokens), ("observe", model, force a baseline, reported size).
ids = st.integers(0, 199).map(lambda n: f"id{n:03d}")
observe = st.tuples(
    st.just("observe"),
    st.sampled_from(("a", "a", "b", "c", None)),
    st.booleans(),
    st.sampled_from((None, 10, 5000)),
)
steps = st.one_of(
    st.tuples(st.just("fill"), st.integers(0, 199), st.integers(1, 120), st.sampled_from((1, 7))),
    st.tuples(st.just("drop"), st.integers(0, 199), st.integers(1, 120)),
    st.tuples(st.just("add"), ids, st.sampled_from((0, 1, 1, 2, 3, 7, 7, 40, -2))),
    st.tuples(st.just("add"), ids, st.integers(-50, 500)),
    st.tuples(st.just("remove"), ids),
    st.tuples(st.just("clear"), st.booleans()),
    st.tuples(st.just("head"), st.integers(0, 30)),
    observe,
    observe,  # as likely as the rest: most sessions' baselines follow one another
    observe,
)


def replayed(session: list[tuple[Any, ...]], replayer: type[Replayer]) -> list[ContextSnapshot]:
    log = ContextLog()
    expanded: list[tuple[Any, ...]] = []
    for step in session:
        if step[0] == "fill":
            _, first, count, tokens = step
            expanded += [("add", f"id{(first + 37 * k) % 200:03d}", tokens) for k in range(count)]
        elif step[0] == "drop":
            _, first, count = step
            expanded += [("remove", f"id{(first + 37 * k) % 200:03d}") for k in range(count)]
        else:
            expanded.append(step)
    for n, step in enumerate(expanded):
        if step[0] == "add":
            category = (Category.RESULTS, Category.PROMPTS)[int(step[1][-1]) % 2]
            log.add(step[1], category, 4, tokens=step[2], label=step[1])
        elif step[0] == "remove":
            log.remove(step[1])
        elif step[0] == "clear":
            log.clear(frozenset({Category.PROMPTS}) if step[1] else frozenset())
        elif step[0] == "head":
            log.native_head([(f"head{k}", Category.SYSTEM, step[1] + k, "h") for k in range(3)])
        else:
            _, model, force, reported = step
            log.observe(
                Observation.request(
                    n, f"r{n}", model=model, force_baseline=force, reported_tokens=reported
                )
            )
    with mock.patch.object(attribution_replay, "Replayer", replayer):
        return log.replay()


@settings(max_examples=300, deadline=None)
@given(st.lists(steps, min_size=1, max_size=200))
def test_snapshots_equal_the_full_sort_replay(session: list[tuple[Any, ...]]) -> None:
    # Items of few sizes (ties broken by ids), negative ones, replaced, removed, compacted,
    # a native head, and observations switching models or forcing a baseline.
    assert replayed(session, Replayer) == replayed(session, FullSort)


def test_a_baseline_after_most_kept_items_left_looks_at_every_item() -> None:
    # GIVEN 100 items of one size, a baseline (64 kept), then 40 of the kept ones removed
    session: list[tuple[Any, ...]] = [("fill", 0, 100, 7), ("observe", "a", False, None)]
    session += [("remove", f"id{n:03d}") for n in sorted(n * 37 % 200 for n in range(100))[:40]]
    # WHEN the model changes (a baseline)
    session.append(("observe", "b", False, None))
    second = replayed(session, Replayer)[1]
    # THEN it holds the 60 items left, not only the 24 kept ones that stayed
    assert second.baseline and len(second.changes) == 60 and second.omitted_changes == 0
    assert replayed(session, Replayer) == replayed(session, FullSort)


def test_a_baseline_after_a_baseline_looks_only_at_the_items_touched_since() -> None:
    # GIVEN 4,000 items of one size and 10 requests that alternate models, one item more
    # before each
    log, _ = alternating_session(4000, 10)
    CountingId.compared = 0
    snapshots = log.replay()
    # THEN after the first baseline (every item, ~1.5 comparisons each), each chose from
    # the kept 64 and the item added: a few hundred comparisons, not thousands
    assert [len(s.changes) for s in snapshots] == [MAX_CHANGES] * 10
    assert CountingId.compared <= 2 * 4001 + 9 * 1000


def test_snapshots_equal_the_full_sort_replay_on_long_random_sessions() -> None:
    # Longer than Hypothesis makes them: hundreds of items in context, many baselines.
    rng = random.Random(11)
    for _ in range(8):
        session: list[tuple[Any, ...]] = []
        for n in range(3000):
            roll = rng.random()
            if roll < 0.6:
                size = rng.choice((1, 1, 2, 5, 5, 30, rng.randrange(-10, 2000)))
                session.append(("add", f"id{rng.randrange(600):03d}", size))
            elif roll < 0.75:
                session.append(("remove", f"id{rng.randrange(600):03d}"))
            elif roll < 0.752:
                session.append(("clear", rng.random() < 0.5))
            else:
                model = rng.choice(("a", "b", "b", None))
                session.append(("observe", model, rng.random() < 0.02, None))
            if n % 1000 == 999:
                session.append(("head", rng.randrange(30)))
        assert replayed(session, Replayer) == replayed(session, FullSort)
