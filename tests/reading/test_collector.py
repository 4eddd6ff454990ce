"""While a journal group is read, the cycle collector runs a hundred times less often (it
went through the growing model every 700 new objects), and a long read ends with what it
made frozen out of the collector's way (gc.freeze), so the writer's collections do not go
through the new model again and again, and no full collection walks the heap for it; the
thresholds are the caller's again afterwards, and the group's use ends with `let_go`
(collector.fewer_collections)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from agent_profiler.collector import (
    READING_COLLECTIONS_BEFORE_FULL,
    READING_GC_THRESHOLD,
    READING_YOUNG_BEFORE_FREEZE,
    fewer_collections,
    frozen,
    let_go,
)


@pytest.fixture(autouse=True)
def _nothing_frozen() -> Iterator[None]:
    # Nothing frozen before or after, and CPython's default thresholds meanwhile (a tool
    # run in-process, mypy for one, may leave its own).
    let_go()
    old = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    # Each generation's count from zero: what earlier tests left pending could otherwise
    # make the test's own collections reach the oldest generation (a full collection).
    gc.collect()
    yield
    gc.set_threshold(*old)
    let_go()


def test_reading_collects_less_often_and_restores_the_thresholds() -> None:
    before = gc.get_threshold()
    with fewer_collections():
        during = gc.get_threshold()
    assert during[0] == max(before[0], READING_GC_THRESHOLD) and during[1:] == before[1:]
    assert gc.get_threshold() == before


def test_a_long_read_ends_with_its_objects_frozen_until_let_go() -> None:
    full = gc.get_stats()[2]["collections"]
    with fewer_collections():
        kept = [
            [index] for index in range(READING_GC_THRESHOLD * (READING_COLLECTIONS_BEFORE_FULL + 1))
        ]
    # What the read made is out of the collector's way, and no full collection ran for it
    assert gc.get_freeze_count() >= len(kept)
    assert gc.get_stats()[2]["collections"] == full
    assert frozen()
    # ... until the group is used: then the collector has them again
    let_go()
    assert gc.get_freeze_count() == 0
    assert not frozen()
    with fewer_collections():
        few = [[index] for index in range(1000)]  # a short read: nothing frozen
    assert gc.get_freeze_count() == 0
    assert not frozen()
    assert len(kept) > len(few)


def test_a_read_that_leaves_many_objects_unseen_ends_frozen_without_a_collection() -> None:
    """A read under the raised threshold that ran no collection (a 100 MB Claude Code
    transcript made 78,000 objects): what it left is frozen as it ends, before the caller's
    threshold would have the next object start a collection of all of it."""
    with fewer_collections():
        kept = [[index] for index in range(READING_YOUNG_BEFORE_FREEZE + 1000)]
        collections = [generation["collections"] for generation in gc.get_stats()]
    assert [generation["collections"] for generation in gc.get_stats()] == collections
    assert gc.get_freeze_count() >= len(kept)
    assert frozen()
    let_go()
    assert gc.get_freeze_count() == 0
    assert not frozen()


def test_a_run_group_lets_go_of_what_its_read_froze() -> None:
    from agent_profiler.loader import plan
    from agent_profiler.options import ReadOptions
    from agent_profiler.pipeline import GroupTask, run_group
    from samples import PI_LARGE

    (group,), _ = plan([PI_LARGE], None)
    during: list[tuple[int, bool]] = []

    def use(sessions: object, diagnostics: object, task: object, out: object) -> None:
        during.append((gc.get_freeze_count(), frozen()))

    # GIVEN a read long enough to freeze (the threshold made small for the test)
    import agent_profiler.collector as collector

    old = collector.READING_GC_THRESHOLD
    collector.READING_GC_THRESHOLD = 1000
    try:
        run_group(GroupTask(0, group, ReadOptions()), use)
    finally:
        collector.READING_GC_THRESHOLD = old
    # THEN its objects were frozen (and marked so) while it was used, and are not after
    ((count, marked),) = during
    assert count > 0 and marked
    assert gc.get_freeze_count() == 0
    assert not frozen()


def test_a_worker_never_collects_what_it_inherited(monkeypatch: pytest.MonkeyPatch) -> None:
    """A forked worker freezes what it inherited and keeps it frozen after each group
    (`let_go` unfroze it): a library's garbage copied from the parent (a DuckDB relation in
    a cycle, in the test process) crashed in its finalizer when the child collected it."""
    import multiprocessing

    import agent_profiler.collector as collector

    monkeypatch.setattr(collector, "_FROZEN", [])  # (the parent's own mark: none)

    def child(connection: object) -> None:
        from agent_profiler.collector import freeze_inherited

        freeze_inherited()
        inherited = gc.get_freeze_count()
        with fewer_collections():
            made = [[] for _ in range(10_000)]
        let_go()
        del made
        connection.send((inherited, gc.get_freeze_count(), frozen()))  # type: ignore[attr-defined]

    parent_end, child_end = multiprocessing.get_context("fork").Pipe()
    process = multiprocessing.get_context("fork").Process(target=child, args=(child_end,))
    process.start()
    answered = parent_end.poll(30)
    process.join(timeout=30)
    assert answered and process.exitcode == 0
    inherited, after, still = parent_end.recv()
    assert inherited > 1000 and after >= inherited and still
    # the parent's own rule is unchanged: nothing of its own frozen, and what a read froze
    # is let go (the count itself may not be 0 here: CPython 3.12 moves its immortal
    # objects into the permanent generation at each full collection)
    assert not frozen()
    let_go()
    assert gc.get_freeze_count() == 0


@pytest.fixture
def leaving_without_freeing(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The console script's process (leaving.start), the collector as a test left it."""
    from agent_profiler import collector, leaving

    monkeypatch.setattr(leaving, "_keeping", [True])
    monkeypatch.setattr(collector, "_QUIET", [])
    try:
        yield
    finally:
        gc.enable()


def test_a_command_starts_without_collections_only_where_it_leaves_without_freeing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agent_profiler import collector, leaving

    monkeypatch.setattr(collector, "_QUIET", [])
    monkeypatch.setattr(leaving, "_keeping", [False])  # entry.main, a test, an embedder
    collector.quiet_start()
    assert gc.isenabled() and not collector._QUIET


@pytest.mark.usefixtures("leaving_without_freeing")
def test_the_quiet_start_ends_at_the_first_read_with_what_it_made_frozen() -> None:
    from agent_profiler import collector

    collector.quiet_start()
    assert not gc.isenabled()
    made = [[index] for index in range(20_000)]  # the start's imports and options
    assert gc.get_count()[0] >= len(made)  # young, never walked
    with fewer_collections():
        during = gc.isenabled()
        young = gc.get_count()[0]
    assert during and gc.isenabled() and not collector._QUIET
    # What the start made is out of the collector's way: no young collection walks it
    assert young < 1000 and gc.get_freeze_count() >= len(made)


@pytest.mark.usefixtures("leaving_without_freeing")
def test_the_last_group_is_read_and_used_without_collections_then_frozen() -> None:
    from agent_profiler import collector

    with collector.none_for_the_last(True):
        with fewer_collections():
            off_in_read = not gc.isenabled()
            model = [[index] for index in range(READING_GC_THRESHOLD + 1000)]
        off_in_use = not gc.isenabled()
        assert gc.get_count()[0] >= len(model)  # no collection went through the model
        let_go()
    assert off_in_read and off_in_use
    # Then the model is frozen, not walked by the first young collection, and the
    # collector is back for what is left to do
    assert gc.isenabled() and gc.get_freeze_count() >= len(model)
    assert gc.get_count()[0] < 1000


@pytest.mark.usefixtures("leaving_without_freeing")
def test_a_group_before_the_last_is_collected_as_ever() -> None:
    from agent_profiler import collector

    with collector.none_for_the_last(False):
        assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_the_last_group_is_collected_where_the_process_frees_at_its_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agent_profiler import collector, leaving

    monkeypatch.setattr(leaving, "_keeping", [False])
    with collector.none_for_the_last(True):
        assert gc.isenabled()
    assert gc.get_freeze_count() == 0


@pytest.mark.usefixtures("leaving_without_freeing")
def test_the_quiet_start_goes_on_through_a_single_group() -> None:
    """One group (a journal): the collector is off from the start to the group's end,
    its read's `fewer_collections` does not bring it back."""
    from agent_profiler import collector

    collector.quiet_start()
    with collector.none_for_the_last(True):
        with fewer_collections():
            off_in_read = not gc.isenabled()
        off_in_use = not gc.isenabled()
    assert off_in_read and off_in_use
    assert gc.isenabled() and not collector._QUIET


def test_only_the_last_of_a_console_commands_groups_runs_without_collections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pipeline.run_groups in one process: each group's use sees the collector on, but
    the last one's, in the console script only."""
    from agent_profiler import collector, leaving
    from agent_profiler.loader import plan
    from agent_profiler.options import ReadOptions
    from agent_profiler.pipeline import GroupTask, run_groups
    from samples import CLAUDE_SMALL, CODEX_SMALL

    groups, _ = plan([CLAUDE_SMALL, CODEX_SMALL], None)
    tasks = [GroupTask(index, group, ReadOptions()) for index, group in enumerate(groups)]
    monkeypatch.setattr(collector, "_QUIET", [])
    seen: dict[bool, list[bool]] = {}
    for keeping in (False, True):
        monkeypatch.setattr(leaving, "_keeping", [keeping])
        on: list[bool] = []

        def use(sessions: object, diagnostics: object, task: object, out: object) -> None:
            on.append(gc.isenabled())  # noqa: B023 (called within this iteration)

        try:
            for _ in run_groups(tasks, use, 1):
                pass
        finally:
            gc.enable()
            let_go()
        seen[keeping] = on
    assert seen == {False: [True, True], True: [True, False]}


@pytest.mark.usefixtures("leaving_without_freeing")
def test_the_console_scripts_export_and_summary_start_quietly() -> None:
    from agent_profiler import entry

    on: list[bool] = []

    def run(parsed: dict[str, object]) -> int:
        on.append(gc.isenabled())
        return 0

    assert entry._run_fast(run, {}) == 0
    assert on == [False]
