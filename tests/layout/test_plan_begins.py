"""A block's slices made by `_begins` (layout/plan.py): its one-kind fast path gives what
its general loop gives for the same kind. The two loops are written out twice on purpose
(the general loop on one-kind blocks costs 5 M more instructions on the Pi 5 MB bench
journal's sweep, ~2% of it: a 13-field unpacking and an inner loop per item); this holds
them together on hand-made kinds and on every one-kind block of the test data and the
corpus, so a change to one that the other does not follow fails here."""

from __future__ import annotations

import dataclasses
import random
from array import array
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.annotations import TraceFacts
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.layout import plan as plan_module
from agent_profiler.layout.ordering import iter_layout, ordered_sessions
from agent_profiler.loader import LoadResult, plan_inputs, read_group
from conftest import DATA
from shared_paths import CORPUS


def _journals() -> Iterator[Path]:
    yield from sorted(p for p in DATA.iterdir() if p.is_dir())
    if CORPUS.is_dir():
        yield from sorted(p for p in CORPUS.iterdir() if p.is_dir())


JOURNALS = list(_journals())


def _plain(value: Any) -> Any:
    """A slice's field as a value: a builder's partial (made afresh per slice) by its parts."""
    if isinstance(value, partial):
        return (value.func, value.args, tuple(sorted(value.keywords.items())))
    return value


def _begins(made: Iterator[tuple[int, int, int, Any]]) -> list[tuple[Any, ...]]:
    return [
        (start, rank, order, *(_plain(getattr(s, f.name)) for f in dataclasses.fields(s)))
        for start, rank, order, s in made
    ]


def _general(data: Any, items: Any, kinds: tuple[Any, ...], taken: tuple[int, ...]) -> Any:
    """The same block through the general loop: its kind and one that makes no slice (its
    span is None for every item), on a slot of its own."""
    never = kinds[0]._replace(span=lambda item: None, slot=len(taken))
    return partial(plan_module._begins, data, items, (*kinds, never), (*taken, 0))


def _hand_made(rng: random.Random, items: list[int], taken: int) -> plan_module._Made:
    """A kind whose every part is chosen at random: a span that is None for some items,
    a name and args that are fixed or functions of the item (args of its index too), flows
    or none, a fixed rank or one by name, lanes and uuids for the slices it makes."""
    gap = rng.randint(2, 5)
    named, built = rng.random() < 0.5, rng.random() < 0.5
    count = taken + sum(1 for item in items if item % gap)
    uuids = [rng.randint(1, 2**63) for _ in range(rng.randint(1, 4))]
    return plan_module._Made(
        lambda item: (item * 10, item * 10 + item % 7) if item % gap else None,
        (lambda item: rng.choice(["profile (1)", "tool"]) + str(item % 3)) if named else "s",
        named,
        (lambda data, index, item: {"index": index, "item": item}) if built else {"k": 1},
        built,
        rng.choice([None, lambda data, index, item: ((index,), (item, index))]),
        rng.random() < 0.3,
        rng.choice([-1, 0, 3]),
        "track",
        "category",
        array("I", (rng.randrange(len(uuids)) for _ in range(count))),
        uuids,
        0,
    )


def test_the_one_kind_path_makes_what_the_general_loop_makes_on_hand_made_kinds() -> None:
    rng = random.Random(5)
    for _ in range(300):
        items = [1, *rng.sample(range(2, 400), rng.randint(0, 30))]  # 1: a span, whatever the gap
        rng.shuffle(items)
        taken = rng.randint(0, 3)
        kind = _hand_made(rng, items, taken)
        state = rng.getstate()  # a name picked at random is picked again the same way
        fast = _begins(plan_module._begins(None, items, (kind,), (taken,), 5))  # type: ignore[arg-type]
        rng.setstate(state)
        assert fast, items
        assert fast == _begins(_general(None, items, (kind,), (taken,))(5))


@pytest.mark.parametrize("folder", JOURNALS, ids=[f"{p.parent.name}/{p.name}" for p in JOURNALS])
def test_the_one_kind_path_makes_what_the_general_loop_makes(folder: Path) -> None:
    one_kind = 0
    for index, group in enumerate(plan_inputs([folder], None, LoadResult())):
        sessions = read_group(group, Diagnostics(), {}).sessions
        for _, session_plan in iter_layout(ordered_sessions(sessions), TraceFacts(), index):
            for block in session_plan.blocks:
                begins = block.begins
                assert isinstance(begins, partial) and begins.func is plan_module._begins
                data, items, kinds, taken = begins.args
                if len(kinds) != 1:
                    continue
                one_kind += 1
                for offset in (0, 17):
                    expected = _begins(_general(data, items, kinds, taken)(offset))
                    assert expected, (folder, block.kind)
                    assert _begins(begins(offset)) == expected, (folder, block.kind)
    assert one_kind, f"{folder}: no one-kind block to compare"
