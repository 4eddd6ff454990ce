"""While a journal group is read, the cycle collector runs a hundred times less often (it
went through the growing model every 700 new objects), and a long read ends with one full
collection, so the writer's collections do not go through the new model again and again;
the thresholds are the caller's again afterwards (loader.fewer_collections)."""

from __future__ import annotations

import gc

from agent_profiler.loader import (
    READING_COLLECTIONS_BEFORE_FULL,
    READING_GC_THRESHOLD,
    fewer_collections,
)


def test_reading_collects_less_often_and_restores_the_thresholds() -> None:
    before = gc.get_threshold()
    with fewer_collections():
        during = gc.get_threshold()
    assert during[0] == max(before[0], READING_GC_THRESHOLD) and during[1:] == before[1:]
    assert gc.get_threshold() == before


def test_a_long_read_ends_with_one_full_collection() -> None:
    full = gc.get_stats()[2]["collections"]
    with fewer_collections():
        kept = [
            [index] for index in range(READING_GC_THRESHOLD * (READING_COLLECTIONS_BEFORE_FULL + 1))
        ]
    assert gc.get_stats()[2]["collections"] > full
    full = gc.get_stats()[2]["collections"]
    with fewer_collections():
        few = [[index] for index in range(1000)]  # a short read: no full collection
    assert gc.get_stats()[2]["collections"] == full
    assert len(kept) > len(few)
