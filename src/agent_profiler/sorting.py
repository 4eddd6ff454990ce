"""Sorting a session's items by an int (a time) and then by more.

`sorted(responses, key=attrgetter("start_ns", "end_ns", "id"))` makes a tuple for every
item and compares tuples: on a 50 MB Codex rollout's 14,360 responses that took 24 ms,
where sorting by `start_ns` alone took 2 ms. A session's items nearly all have times of
their own, so `by_first` sorts by the int and then sorts again, by the rest, only the
runs of items that share it. The result is the full sort's, item for item: both sorts
are stable, and within a run of one int the rest orders as it does in the full sort."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import islice
from operator import eq
from typing import Any, TypeVar

T = TypeVar("T")


def by_first(items: Iterable[T], first: Callable[[T], int], then: Callable[[T], Any]) -> list[T]:
    """`sorted(items, key=lambda x: (first(x), then(x)))`: `then` is called only for
    the items whose `first` another item shares (a key that starts with `first` again,
    as `attrgetter("start_ns", "id")` after `attrgetter("start_ns")`, orders the same)."""
    ordered = sorted(items, key=first)
    firsts = list(map(first, ordered))
    same = list(map(eq, firsts, islice(firsts, 1, None)))  # same[i]: i and i + 1 tie
    count = len(same)
    start = same.index(True) if True in same else count
    while start < count:
        end = start + 1  # the run is ordered[start : end + 1]
        while end < count and same[end]:
            end += 1
        ordered[start : end + 1] = sorted(ordered[start : end + 1], key=then)
        try:
            start = same.index(True, end)
        except ValueError:
            break
    return ordered
