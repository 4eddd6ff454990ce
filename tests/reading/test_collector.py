"""While a journal group is read, the cycle collector runs a hundred times less often (it
went through the growing model every 700 new objects), and a long read ends with what it
made frozen out of the collector's way (gc.freeze), so the writer's collections do not go
through the new model again and again, and no full collection walks the heap for it; the
thresholds are the caller's again afterwards, and the group's use ends with `let_go`
(collector.fewer_collections)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.collector import (
    READING_COLLECTIONS_BEFORE_FULL,
    READING_GC_THRESHOLD,
    READING_YOUNG_BEFORE_FREEZE,
    fewer_collections,
    frozen,
    let_go,
)
from conftest import DATA

# A Codex rollout of a few requests, copied as sessions of their own (`_rollouts`).
CODEX_SMALL = "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
CODEX_SMALL_ID = "019c8bfe-ec25-79e0-97d7-bda6a9c575ff"


def _rollouts(folder: Path, count: int) -> Path:
    """`count` copies of CODEX_SMALL in `folder`, each with a session id of its own (each
    a journal group)."""
    folder.mkdir()
    source = (DATA / "codex" / CODEX_SMALL).read_text()
    for index in range(count):
        own = CODEX_SMALL_ID[:-4] + f"{index:04x}"
        (folder / CODEX_SMALL.replace(CODEX_SMALL_ID, own)).write_text(
            source.replace(CODEX_SMALL_ID, own)
        )
    return folder


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


def test_a_run_raises_only_the_first_threshold_and_never_lowers_it() -> None:
    """The reads' and a run's threshold: the first raised to READING_GC_THRESHOLD unless
    the caller's is higher already, the other two the caller's, each restored after."""
    from agent_profiler.collector import fewer_for_the_run

    for first in (700, 2 * READING_GC_THRESHOLD):
        gc.set_threshold(first, 11, 12)
        with fewer_for_the_run():
            during = gc.get_threshold()
            with fewer_collections():
                reading = gc.get_threshold()
        assert during == reading == (max(first, READING_GC_THRESHOLD), 11, 12)
        assert gc.get_threshold() == (first, 11, 12)


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
    """The console script's process (leaving.start), the collector as a test left it:
    on, and nothing frozen (the autouse fixture's `let_go`)."""
    from agent_profiler import collector, leaving

    monkeypatch.setattr(leaving, "_keeping", [True])
    monkeypatch.setattr(leaving, "_kept", {})
    monkeypatch.delenv("PYTHONINSPECT", raising=False)
    monkeypatch.setattr(collector, "_QUIET", [])
    try:
        yield
    finally:
        gc.enable()


def test_a_command_starts_with_collections_where_it_frees_at_its_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agent_profiler import collector, leaving

    monkeypatch.setattr(collector, "_QUIET", [])
    monkeypatch.setattr(leaving, "_keeping", [False])  # entry.main, a test, an embedder
    collector.quiet_start()
    assert gc.isenabled() and not collector._QUIET


@pytest.mark.usefixtures("leaving_without_freeing")
def test_a_command_run_with_python_dash_i_starts_and_ends_with_collections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`python -i -m agent_profiler`: the process goes on to its prompt, so neither its
    start nor its last group goes without the collector."""
    from agent_profiler import collector

    monkeypatch.setenv("PYTHONINSPECT", "1")
    collector.quiet_start()
    assert gc.isenabled()
    with collector.none_for_the_last(True):
        assert gc.isenabled()
    assert gc.get_freeze_count() == 0


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
def test_a_collector_off_by_another_s_will_is_left_off() -> None:
    from agent_profiler import collector

    gc.disable()
    collector.quiet_start()
    assert not collector._QUIET
    with fewer_collections():
        assert not gc.isenabled()
    with collector.none_for_the_last(True):
        assert not gc.isenabled()
    assert not gc.isenabled() and gc.get_freeze_count() == 0


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
    # collector is back for what the command does next
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


def _use(sessions: object, diagnostics: object, task: object, out: object) -> bool:
    return gc.isenabled()


def _run(tasks: list[Any], jobs: int) -> list[bool]:
    """Whether the collector was on while each group was used (pipeline.run_groups, in
    this process or in a worker: the use's value comes back with its outcome)."""
    from agent_profiler.pipeline import run_groups

    try:
        return [outcome.value for outcome in run_groups(tasks, _use, jobs)]
    finally:
        gc.enable()
        let_go()


def _two_groups() -> list[Any]:
    from agent_profiler.loader import plan
    from agent_profiler.options import ReadOptions
    from agent_profiler.pipeline import GroupTask
    from samples import CLAUDE_SMALL, CODEX_SMALL

    groups, _ = plan([CLAUDE_SMALL, CODEX_SMALL], None)
    return [GroupTask(index, group, ReadOptions()) for index, group in enumerate(groups)]


def test_only_the_last_of_a_console_commands_groups_runs_without_collections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pipeline.run_groups in one process: each group's use sees the collector on, but
    the last one's, in the console script only."""
    from agent_profiler import collector, leaving

    tasks = _two_groups()
    monkeypatch.setattr(collector, "_QUIET", [])
    monkeypatch.setattr(leaving, "_kept", {})
    monkeypatch.setattr(leaving, "_keeping", [False])
    assert _run(tasks, 1) == [True, True]
    monkeypatch.setattr(leaving, "_keeping", [True])
    assert _run(tasks, 1) == [True, False]


@pytest.mark.usefixtures("leaving_without_freeing")
def test_the_groups_are_read_with_the_collector_back_after_a_quiet_start() -> None:
    """A quiet start ends where the groups are read, before any worker is forked: a
    folder's groups (all but the last, read in workers or in this process) are collected
    as ever."""
    from agent_profiler import collector
    from agent_profiler.pipeline import run_groups

    collector.quiet_start()
    assert list(run_groups([], _use, 2)) == []  # (where this process reads none itself)
    assert gc.isenabled()
    tasks = _two_groups()
    collector.quiet_start()
    assert _run(tasks, 1) == [True, False]
    collector.quiet_start()
    assert _run(tasks, 2) == [True, True]  # (in a worker or here: a folder's run)


@pytest.mark.usefixtures("leaving_without_freeing")
def test_the_console_scripts_export_and_summary_start_quietly() -> None:
    from agent_profiler import entry

    on: list[bool] = []

    def run(parsed: dict[str, object]) -> int:
        on.append(gc.isenabled())
        return 0

    assert entry._run_fast(run, {}) == 0
    assert on == [False]


def _bad_lines(path: Path, count: int) -> Path:
    """A small transcript, then `count` lines of each kind the careful reader takes: cut
    off, not JSON, bad UTF-8, an escaped lone surrogate, and either of the last two still
    not JSON once mended (a trailing comma)."""
    from samples import CLAUDE_SMALL

    lines = [CLAUDE_SMALL.read_bytes()]
    for index in range(count):
        lines += [
            b'{"type":"assistant","message":{"content":[{"type":"text","text":"abc\n',
            b"a crash message, not JSON\n",
            b'{"type":"progress","sessionId":"s","data":"caf\xe9 %d"}\n' % index,
            b'{"type":"progress","sessionId":"s","data":"\\ud83d %d"}\n' % index,
            b'{"type":"progress","sessionId":"s","data":"caf\xe9 %d",}\n' % index,
            b'{"type":"progress","sessionId":"s","data":"\\ud83d %d",}\n' % index,
        ]
    path.write_bytes(b"".join(lines))
    return path


def _export(path: Path, output: Path) -> int:
    """`export path -o output` in this process (`--jobs 1`); its exit code."""
    from agent_profiler.exporting import run_export
    from agent_profiler.options import ReadOptions

    return run_export(
        [path],
        output=output,
        options=ReadOptions(jobs=1),
        force=False,
        strict=False,
        format_name=None,
        stdout_is_terminal=lambda: False,
        open_ui=None,
    )


def _left_in_cycles(path: Path, output: Path) -> int:
    """The objects `_export` left in reference cycles (what a collection then frees)."""
    gc.collect()
    gc.disable()
    try:
        assert _export(path, output) == 0
        return gc.collect()
    finally:
        gc.enable()


def test_reading_leaves_no_reference_cycle_per_line(tmp_path: Path) -> None:
    """Where the console script reads its last group without the collector, whatever a
    read left in cycles, line after line, would stay to the end (a bad line's error held
    its frame, and its bytes, until a collection): an export leaves as many objects in
    cycles for 600 bad lines as for 60."""
    left = [
        _left_in_cycles(_bad_lines(tmp_path / f"bad-{count}.jsonl", count), tmp_path / f"{count}.x")
        for count in (60, 600)
    ]
    assert left[1] - left[0] < 100, left


def test_a_run_of_groups_reads_and_writes_them_with_fewer_collections(tmp_path: Path) -> None:
    """Between the reads too (a group written, the one before let go), the first threshold
    is the reads' own, and the caller's again once the run is over."""
    from agent_profiler import pipeline

    folder = _rollouts(tmp_path / "in", 2)
    seen: list[int] = []
    run_group = pipeline.run_group

    def counted(*args: Any, **kwargs: Any) -> Any:
        outcome = run_group(*args, **kwargs)
        seen.append(gc.get_threshold()[0])  # (after its read: the writing's threshold)
        return outcome

    before = gc.get_threshold()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline, "run_group", counted)
        assert _export(folder, tmp_path / "out.pftrace") == 0
    assert seen == [READING_GC_THRESHOLD] * 2
    assert gc.get_threshold() == before


def test_writing_leaves_no_reference_cycle_per_group(tmp_path: Path) -> None:
    """What a group's writing left in cycles (each encoder, its annotation functions and
    its interned texts: about 460 objects) waited for a collection, which a run of groups
    now makes a hundred times less often: an export leaves as many objects in cycles for
    twelve groups as for two (writers/events.py `EventEncoder.close`)."""
    left = [
        _left_in_cycles(_rollouts(tmp_path / f"in-{count}", count), tmp_path / f"{count}.x")
        for count in (2, 12)
    ]
    assert left[1] - left[0] < 100, left
