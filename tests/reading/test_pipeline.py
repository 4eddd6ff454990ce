"""Journal groups read and encoded apart (pipeline.py): the trace is the same bytes in one
process and in several, each group's track uuids sit in its own block, interning starts
afresh per group, ids repeated across groups are renamed as one process would, and each
capture's accounting is its own group's reading."""

from __future__ import annotations

import gzip
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.adapters import JournalGroup
from agent_profiler.cli import app
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.layout import TRACE_ROOT_UUID, UUID_BLOCK
from agent_profiler.loader import LoadResult, load, plan_inputs
from agent_profiler.model import Harness
from agent_profiler.pipeline import IN_FLIGHT, PARALLEL_MIN_BYTES, hands_one_more, jobs_for
from agent_profiler.stream.end import HEAD_SEQUENCES
from samples import CLAUDE_SMALL, CODEX_SMALL, DATA, PI_LARGE
from traceview import load_trace

pytestmark = pytest.mark.slow  # worker processes: `make check` leaves it out

runner = CliRunner()


def _export(tmp_path: Path, name: str, *args: str) -> bytes:
    """The trace's bytes (not checked: the test checks one of each pair it compares)."""
    out = tmp_path / name
    result = runner.invoke(app, ["export", *args, "-o", str(out)])
    assert result.exit_code in (0, 1), result.output + result.stderr
    return out.read_bytes()


def test_every_harness_in_one_trace_is_the_same_bytes_with_one_process_or_two(
    tmp_path: Path, export_trace: Any
) -> None:
    one = _export(tmp_path, "one.pftrace", str(DATA), "--jobs", "1")
    two = export_trace(DATA, args=("--jobs", "2"))  # contract, real importer
    assert one == two.path.read_bytes()
    view = load_trace(one)
    groups = plan_inputs([DATA], None, LoadResult())
    assert len(groups) > 10
    # Every group's captures are in its block; the first group keeps the small uuids.
    blocks = {uuid // UUID_BLOCK for uuid in view.tracks if uuid != TRACE_ROOT_UUID}
    assert blocks == set(range(len(groups))) - {
        i for i, g in enumerate(groups) if not load(list(g.paths), Diagnostics()).sessions
    }
    assert min(view.tracks) == 1
    # The clock snapshot, first, is at the earliest event of all groups (their subagents
    # included): every group reports its own earliest session start.
    assert view.clock_snapshots[0].packet_index == 0
    assert view.clock_snapshots[0].clocks[1] == min(view.event_times)
    # Each group writes on a sequence of its own (its interning and delta clocks); a group
    # the one pass wrote (a Pi journal, a Claude Code transcript) has its head on a second
    # one (stream/end.py, HEAD_SEQUENCES).
    heads = {sequence for sequence in view.sequence_ids if sequence > HEAD_SEQUENCES}
    assert heads  # (the pass wrote some)
    groups_of = {sequence % HEAD_SEQUENCES for sequence in view.sequence_ids}
    assert groups_of == {block + 1 for block in blocks}
    # The trace-level facts the parent writes once join every group's (issue 29): the
    # root counts every capture, the harnesses are every profile's.
    captures = view.captures()
    subagents = sum(
        1
        for c in captures
        if "parent_session" in view.profile_of(c.uuid).args  # type: ignore[union-attr]
    )
    root = view.tracks[TRACE_ROOT_UUID]
    assert root.name == (
        f"agent-profiler · {len(captures)} sessions ({subagents} subagents), by start time"
    )
    harnesses = {view.profile_of(c.uuid).args["harness"] for c in captures}  # type: ignore[union-attr]
    assert view.attributes["harnesses"] == ",".join(sorted(harnesses))
    # Top-level sessions in the order of their real start
    tops = sorted(view.children_of(TRACE_ROOT_UUID), key=lambda t: t.sibling_order_rank or 0)
    starts = []
    for group in tops:
        (capture,) = [t for t in view.children_of(group.uuid) if t.name == "agentprof.capture"]
        starts.append(view.profile_of(capture.uuid).ts)  # type: ignore[union-attr]
    assert [s // 10**9 for s in starts] == sorted(s // 10**9 for s in starts)


def test_a_session_given_twice_in_two_groups_is_renamed_the_same_way_by_workers(
    tmp_path: Path, export_trace: Any
) -> None:
    # GIVEN the same Claude Code session twice (a copy is a group of its own) and a Codex
    # rollout between them: three groups, the third repeating the first's session id
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(CLAUDE_SMALL, folder / "a.jsonl")
    shutil.copy(CODEX_SMALL, folder / "b.jsonl")
    copy = tmp_path / "copy" / "c.jsonl"
    copy.parent.mkdir()
    # (a longer copy: one with the very bytes of the first is read once, repeats.py)
    copy.write_bytes(CLAUDE_SMALL.read_bytes() + b"\n")
    inputs = [str(folder / "a.jsonl"), str(folder / "b.jsonl"), str(copy)]
    # WHEN exported by one process and by two (a worker reads the copy without knowing
    # the first group's ids: the parent reads it again, renamed)
    one = _export(tmp_path, "one.pftrace", *inputs, "--jobs", "1")
    two = export_trace(*map(Path, inputs), args=("--jobs", "2"))
    # THEN the bytes agree and the copy is `#2`
    assert one == two.path.read_bytes()
    view = two.view
    ids = sorted(
        str(profile.args["session_id"])
        for capture in view.captures()
        if (profile := view.profile_of(capture.uuid)) is not None
    )
    assert len(ids) == 3 and ids.count(ids[0]) == 1
    copies = [i for i in ids if i.endswith("#2")]
    assert len(copies) == 1 and copies[0].removesuffix("#2") in ids
    assert len(plan_inputs(map(Path, inputs), None, LoadResult())) == 3


def test_each_capture_carries_the_accounting_of_its_own_group(tmp_path: Path) -> None:
    trace = _export(tmp_path, "t.pftrace", str(CLAUDE_SMALL), str(CODEX_SMALL), "--jobs", "2")
    view = load_trace(trace)
    lines = {}
    for capture in view.captures():
        profile = view.profile_of(capture.uuid)
        assert profile is not None
        lines[str(profile.args["harness"])] = profile.args["accounting"]["lines_read"]
    assert lines == {
        "claude-code": sum(1 for line in CLAUDE_SMALL.read_bytes().splitlines() if line.strip()),
        "codex": sum(1 for line in CODEX_SMALL.read_bytes().splitlines() if line.strip()),
    }


def test_interning_starts_afresh_in_each_group(tmp_path: Path) -> None:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    from traceview import inflated

    trace = inflated(
        _export(tmp_path, "t.pftrace", str(CLAUDE_SMALL), str(CODEX_SMALL), "--jobs", "2")
    )
    cleared = [
        p.track_event.track_uuid // UUID_BLOCK
        for p in trace.packet
        if p.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    ]
    assert cleared == [0, 1]
    # each group on a sequence of its own, where its interning starts
    assert [
        p.trusted_packet_sequence_id
        for p in trace.packet
        if p.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    ] == [1, 2]
    assert {p.trusted_packet_sequence_id for p in trace.packet} == {1, 2}
    # The clock snapshot comes first, at the earliest event of either group.
    assert trace.packet[0].HasField("clock_snapshot")
    view = load_trace(trace)
    assert trace.packet[0].clock_snapshot.clocks[0].timestamp == min(view.event_times)


def test_jobs_default_to_every_core_only_for_several_groups_of_enough_input(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"x" * (PARALLEL_MIN_BYTES // 2 + 1))
    small = JournalGroup(Harness.CODEX, None, (CODEX_SMALL,))
    half = JournalGroup(Harness.CODEX, None, (big,))
    monkeypatch.setattr("os.process_cpu_count", lambda: 8, raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert jobs_for(None, [half]) == 1  # one group: nothing to share
    assert jobs_for(None, [small, small]) == 1  # too little input to pay for a pool
    assert jobs_for(None, [half, half]) == 2  # two groups are enough to share
    assert jobs_for(None, [half, half, small]) == 3  # as many as there are groups
    assert jobs_for(None, [half] * 12) == 8  # every core
    assert jobs_for(4, [small, small]) == 2  # --jobs, never more than the groups
    assert jobs_for(1, [half] * 12) == 1


def test_near_the_end_a_worker_is_handed_one_group_at_a_time() -> None:
    """A worker that brought a group back is handed the next while many are left; once
    no more than IN_FLIGHT a worker are left, only when it has none in hand (the parent
    reads the rest, so no process reads a queue alone at the end); with none left it is
    told there is no more."""
    workers = 2
    many = IN_FLIGHT * workers + 1
    assert hands_one_more(many, IN_FLIGHT - 1, workers)
    assert hands_one_more(many, 0, workers)
    assert not hands_one_more(many - 1, 1, workers)
    assert not hands_one_more(1, IN_FLIGHT - 1, workers)
    assert hands_one_more(many - 1, 0, workers)
    assert hands_one_more(1, 0, workers)
    assert hands_one_more(0, 3, workers)  # the end, sent once


def test_warnings_of_groups_read_apart_add_up_in_the_groups_order() -> None:
    first, second = Diagnostics(keep_first=3), Diagnostics()
    for line in (1, 2):
        first.warn("a.jsonl", line, "not-json", "bad")
    for line in (7, 8, 9):
        second.warn("b.jsonl", line, "bad-utf8", "bad")
    second.skip("progress")
    second.lines_read, second.records_parsed = 10, 9
    first.absorb(second)
    assert [(w.path, w.line) for w in first.warnings] == [
        ("a.jsonl", 1),
        ("a.jsonl", 2),
        ("b.jsonl", 7),
    ]
    assert first.warning_counts == {"not-json": 2, "bad-utf8": 3}
    assert (first.skipped["progress"], first.lines_read, first.records_parsed) == (1, 10, 9)


def test_a_large_pi_session_and_a_codex_rollout_export_alike_in_workers(tmp_path: Path) -> None:
    inputs = [str(PI_LARGE), str(CODEX_SMALL), str(CLAUDE_SMALL)]
    assert _export(tmp_path, "a.pftrace", *inputs, "-j", "1") == _export(
        tmp_path, "b.pftrace", *inputs, "-j", "3"
    )


def test_summary_rows_read_by_workers_are_the_rows_of_the_whole_model() -> None:
    import orjson

    from agent_profiler.summary import summarise_all

    # GIVEN every small journal of every harness (subagents among them)
    whole = summarise_all(load([DATA], Diagnostics()).sessions)
    expected = [row.to_json(False) for row in whole]
    assert any(row.parent for row in whole)
    for jobs in ("1", "2"):
        # WHEN summarised group by group, in this process and in two workers
        result = runner.invoke(app, ["summary", "--json", "--jobs", jobs, str(DATA)])
        assert result.exit_code == 0, result.stderr
        # THEN the rows and their order are those of the whole model
        assert orjson.loads(result.stdout) == orjson.loads(orjson.dumps(expected))


def test_plans_group_slimmed_heads_as_they_group_whole_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agent_profiler import loader
    from shared_paths import CORPUS

    roots = [DATA] + ([CORPUS] if CORPUS.is_dir() else [])
    slimmed = plan_inputs(roots, None, LoadResult())
    monkeypatch.setattr(loader, "_slim_head", lambda head: head)
    assert plan_inputs(roots, None, LoadResult()) == slimmed
    assert len(slimmed) > 20


def test_a_slimmed_head_keeps_small_facts_at_any_depth_and_drops_text() -> None:
    from agent_profiler.loader import _slim_head

    deep = {"payload": {"source": {"subagent": {"thread_spawn": {"parent_thread_id": "p"}}}}}
    record = {"type": "x", "n": 3, "ok": True, "none": None, "text": "t" * 257, "list": [1], **deep}
    assert _slim_head([record, [1, 2], "a"]) == [
        {"type": "x", "n": 3, "ok": True, "none": None, **deep},
        None,
        None,
    ]
    assert _slim_head([{"short": "t" * 256}]) == [{"short": "t" * 256}]


def test_the_clock_is_taken_at_the_earliest_session_of_a_tree_not_its_last(
    tmp_path: Path,
) -> None:
    # GIVEN a Claude Code session whose subagents start after it (one group, many sessions)
    spotter = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
    journal = next(spotter.glob("*.jsonl.gz"))
    view = load_trace(_export(tmp_path, "t.pftrace", str(journal)))
    assert len(load([journal], Diagnostics()).sessions) > 1
    # THEN the clock snapshot is at its very first event
    assert view.clock_snapshots[0].packet_index == 0
    assert view.clock_snapshots[0].clocks[1] == min(view.event_times)


# --------------------------------------------------------------------------- the pool path
# Run in this process with real workers (forked, so they run this process's code, mutants
# included, when pytest has no other thread; spawned otherwise).


@dataclass(frozen=True)
class _Pid:
    """A `Use` that says which process read the group."""

    def __call__(self, sessions: Any, diagnostics: Any, task: Any, out: Any) -> int:
        return os.getpid()


@dataclass(frozen=True)
class _DiesAt:
    """EncodeTrace, except that a worker reading group `index` dies on it (as the OOM
    killer would end it); the parent, reading it again, does not."""

    index: int
    parent: int

    def __call__(self, sessions: Any, diagnostics: Any, task: Any, out: Any) -> bytes:
        from agent_profiler.pipeline import EncodeTrace
        from agent_profiler.writers import TraceFacts

        if task.index == self.index and os.getpid() != self.parent:
            os._exit(9)
        return EncodeTrace(TraceFacts())(sessions, diagnostics, task, out)


@dataclass(frozen=True)
class _SinksThreaded:
    """EncodeTrace, returning whether each packet sink the writer made may deflate on a
    thread (writers/chunks.py), in the process that read the group."""

    def __call__(self, sessions: Any, diagnostics: Any, task: Any, out: Any) -> Any:
        from agent_profiler.pipeline import EncodeTrace
        from agent_profiler.writers import TraceFacts, chunks

        made: list[bool] = []
        init = chunks.PacketSink.__init__

        def spied(sink: Any, *args: Any, **keywords: Any) -> None:
            init(sink, *args, **keywords)
            made.append(sink.threaded)

        chunks.PacketSink.__init__ = spied  # type: ignore[method-assign]
        try:
            EncodeTrace(TraceFacts())(sessions, diagnostics, task, out)
        finally:
            chunks.PacketSink.__init__ = init  # type: ignore[method-assign]
        return made, out is not None


def test_no_deflating_thread_beside_a_folders_workers() -> None:
    """Where workers read the groups every core is busy: a deflating thread would only
    compete (writers/chunks.py), so neither a worker nor the parent reading a group as
    one of them (its bytes sent on, not written: `out` is None) starts one; one process
    alone may. (A group read again here, into the output, may too: a duplicate id's.)"""
    _, alone = _run(_SinksThreaded(), 1)
    _, together = _run(_SinksThreaded(), 2)
    assert [o.value for o in alone] == [([True], True)] * len(alone)
    assert all(o.value in (([False], False), ([True], True)) for o in together)
    assert sum(o.value == ([False], False) for o in together) > len(together) // 2


def _run(use: Any, jobs: int, notes: list[str] | None = None) -> tuple[bytes, list[Any]]:
    import io

    from agent_profiler.options import ReadOptions
    from agent_profiler.pipeline import GroupTask, run_groups

    groups = plan_inputs([DATA], None, LoadResult())
    tasks = [GroupTask(i, g, ReadOptions()) for i, g in enumerate(groups)]
    out = io.BytesIO()
    seen: list[tuple[int, int, JournalGroup]] = []
    outcomes = list(
        run_groups(
            tasks,
            use,
            jobs,
            out,
            progress=lambda done, total, group: seen.append((done, total, group)),
            notice=None if notes is None else notes.append,
        )
    )
    # Progress: once per group, in order, naming each group.
    assert seen == [(i + 1, len(groups), g) for i, g in enumerate(groups)]
    return out.getvalue(), outcomes


def test_workers_read_the_groups_and_the_parent_gets_them_in_order() -> None:
    from agent_profiler.pipeline import EncodeTrace
    from agent_profiler.writers import TraceFacts

    # One process and two give the same packets and the same outcomes, in order...
    alone, first = _run(EncodeTrace(TraceFacts()), 1)
    together, second = _run(EncodeTrace(TraceFacts()), 2)
    assert together == alone and len(alone) > 300_000  # deflated (writers/chunks.py)

    def facts(outcomes: list[Any]) -> list[Any]:
        return [(o.index, o.journal_ids, o.counts, o.first, o.links, o.paths) for o in outcomes]

    assert facts(second) == facts(first)
    # ... and with two, the groups were read by two processes: this one and one worker
    # (this one reads a group whenever the next to write is still with the worker).
    _, pids = _run(_Pid(), 2)
    readers = {outcome.value for outcome in pids}
    assert len(readers) == 2 and os.getpid() in readers
    _, pids = _run(_Pid(), 3)
    assert len({outcome.value for outcome in pids}) == 3
    _, pids = _run(_Pid(), 1)
    assert {outcome.value for outcome in pids} == {os.getpid()}


def test_a_worker_that_dies_costs_only_time(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_profiler import stream
    from agent_profiler.pipeline import EncodeTrace
    from agent_profiler.writers import TraceFacts

    # (the model path both times: `_DiesAt` is not an EncodeTrace, which the pass is for)
    monkeypatch.setenv(stream.SWITCH, "0")

    alone, first = _run(EncodeTrace(TraceFacts()), 1)
    notes: list[str] = []
    # (the worker is handed group 0 first; the parent reads the others meanwhile)
    together, second = _run(_DiesAt(0, os.getpid()), 2, notes)
    assert together == alone
    assert [o.index for o in second] == [o.index for o in first]
    assert notes == [
        "note: a worker process stopped before it was done; the journal groups not read "
        "yet are read in this process"
    ]


@dataclass(frozen=True)
class _Fails:
    def __call__(self, sessions: Any, diagnostics: Any, task: Any, out: Any) -> None:
        raise ValueError(f"bug reading group {task.index}")


def test_an_error_in_a_worker_is_raised_in_the_parent() -> None:
    with pytest.raises(ValueError, match="bug reading group"):
        _run(_Fails(), 2)


def test_the_wrote_line_counts_every_group(tmp_path: Path) -> None:
    # GIVEN every harness's journals, many groups (unmetered responses and subagents among them)
    sessions = load([DATA], Diagnostics()).sessions
    responses = sum(len(s.responses) for s in sessions)
    unmetered = sum(len(s.unmetered_responses) for s in sessions)
    subagents = sum(1 for s in sessions if s.is_subagent)
    compactions = sum(len(s.compactions) for s in sessions)
    assert unmetered and subagents and compactions
    for jobs in ("1", "2"):
        result = runner.invoke(app, ["export", str(DATA), "-j", jobs, "-o", str(tmp_path / jobs)])
        # THEN the closing line adds up every group
        assert (
            f": {len(sessions)} sessions ({subagents} subagents), {responses:,} responses "
            f"(+{unmetered} without usage), {compactions} compactions,"
        ) in result.stdout


def test_a_renamed_copy_keeps_its_subagents_linked_to_it(tmp_path: Path) -> None:
    # GIVEN a Claude Code session with subagents, and a longer copy of it (its subagents
    # too: with the very same bytes, each file is read once, repeats.py)
    spotter = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
    copy = tmp_path / "copy"
    shutil.copytree(spotter, copy)
    for path in copy.rglob("*.jsonl*"):
        data = path.read_bytes()
        if path.name.endswith(".gz"):
            path.write_bytes(gzip.compress(gzip.decompress(data) + b"\n"))
        else:
            path.write_bytes(data + b"\n")
    first, second = (next(folder.glob("*.jsonl.gz")) for folder in (spotter, copy))
    # WHEN both are read (two groups)
    sessions = load([first, second], Diagnostics()).sessions
    ids = {s.session_id for s in sessions}
    main = next(s for s in sessions if not s.is_subagent and not s.session_id.endswith("#2"))
    renamed = next(s for s in sessions if s.session_id == f"{main.session_id}#2")
    # THEN the copy's subagents name the copy as their parent, and the copy's launching
    # calls name the copy's subagents
    children = [s for s in sessions if s.parent_session == renamed.session_id]
    originals = [s for s in sessions if s.parent_session == main.session_id]
    assert children and len(children) == len(originals)
    launched = {c.child_session for c in renamed.tool_calls if c.child_session}
    assert launched and launched <= ids
    assert launched == {c.session_id for c in children} & launched
    assert not launched & {c.child_session for c in main.tool_calls}


def test_renaming_a_group_leaves_links_to_sessions_it_did_not_rename() -> None:
    import dataclasses

    from agent_profiler.loader import _rename

    first, other = load([CLAUDE_SMALL, CODEX_SMALL], Diagnostics()).sessions
    # GIVEN a group whose first session repeats an earlier group's id, and a subagent whose
    # parent is a session of another, unrenamed group
    child = dataclasses.replace(other, parent_session="an-earlier-parent")
    seen = {first.session_id: 1}
    renamed = _rename([first, child], seen)
    # THEN only the repeated id changes; the subagent's link to its parent stays
    assert [s.session_id for s in renamed] == [f"{first.session_id}#2", other.session_id]
    assert renamed[1].parent_session == "an-earlier-parent"
    assert seen == {first.session_id: 2, other.session_id: 1}


def test_workers_are_forked_only_from_a_process_without_other_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import threading

    from agent_profiler import children

    monkeypatch.setattr(children.sys, "platform", "linux")
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    assert children.start_method() == "fork"
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert children.start_method() == "spawn"
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(children.sys, "platform", "darwin")
    assert children.start_method() == "spawn"


@dataclass(frozen=True)
class _CountPreviews:
    """A Use that sends back how many of the group's tool calls kept argument previews."""

    def __call__(self, sessions: Any, diagnostics: Any, task: Any, out: Any) -> tuple[int, int]:
        calls = [c for s in sessions for c in s.tool_calls]
        return len(calls), sum(1 for c in calls if c.args_preview)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_reading_keeps_argument_previews_only_for_a_trace_that_shows_them(jobs: int) -> None:
    from agent_profiler.options import ReadOptions
    from agent_profiler.pipeline import GroupTask, run_groups

    groups = plan_inputs([CLAUDE_SMALL, CODEX_SMALL], None, LoadResult())

    def counts(previews: bool) -> tuple[int, int]:
        tasks = [GroupTask(i, g, ReadOptions(previews=previews)) for i, g in enumerate(groups)]
        values = [o.value for o in run_groups(tasks, _CountPreviews(), jobs, None)]
        return sum(v[0] for v in values), sum(v[1] for v in values)

    # GIVEN journals whose tool calls have arguments
    (calls, kept), (same_calls, none) = counts(True), counts(False)
    # THEN a reading for --previews keeps them, any other keeps none (in workers too)
    assert calls == same_calls > 0 and kept > 0 and none == 0


def test_export_reads_argument_previews_only_with_previews(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import agent_profiler.pipeline as pipeline

    asked: list[bool] = []
    run_group = pipeline.run_group

    def spy(task: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(task.options.previews)
        return run_group(task, *args, **kwargs)

    monkeypatch.setattr(pipeline, "run_group", spy)
    _export(tmp_path, "a.pftrace", str(CLAUDE_SMALL), "--jobs", "1")
    _export(tmp_path, "b.pftrace", str(CLAUDE_SMALL), "--jobs", "1", "--previews")
    assert asked == [False, True]
