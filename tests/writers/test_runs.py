"""A long session's events in two runs (writers/runs.py): the trace holds what one run
writes (tracks, slices with their args, counters, flows), meets the contract and the
importer's rules; the second run clears the sequence's incremental state and starts a
clock of its own, as does the session after it; a helper process on another core writes
the same bytes this process would, and a helper that fails is replaced by this process.
The threshold is lowered here so that the journals of tests/data are long sessions."""

from __future__ import annotations

import io
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from agent_profiler.writers import runs
from agent_profiler.writers.perfetto import PerfettoWriter
from forks import FORK_TOLD, assert_helper_dies_with_its_parent, count_forks
from realtp import SHARED
from rules_spy import sessions
from shared_paths import TESTS
from stream.test_pi_stream import assert_same_trace
from traceview import SEQ_INCREMENTAL_STATE_CLEARED, inflated

JOURNALS = TESTS / "data" / "journals"
# A Claude Code session with two subagents in its group (the long session is not the
# group's last), and a Codex rollout.
SPOTTER = JOURNALS / "claude-code" / "spotter-2.1.39-subagents-compaction"
CODEX = (
    JOURNALS / "codex" / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl.gz"
)
CORPUS_CLAUDE = SHARED / "corpus" / "claude-code"
LOW = 40  # slices: every session of these journals but the smallest is "long"


def _cleared_and_clocks(path: Path) -> tuple[dict[int, int], list[int]]:
    """Per sequence, how many packets clear its incremental state; and the ids of the
    sequence-scoped clocks the trace's snapshots start, in file order."""
    cleared: dict[int, int] = {}
    clocks: list[int] = []
    for packet in inflated(path).packet:
        if packet.sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED:
            sequence = packet.trusted_packet_sequence_id
            cleared[sequence] = cleared.get(sequence, 0) + 1
        if packet.HasField("clock_snapshot"):
            clocks += [c.clock_id for c in packet.clock_snapshot.clocks if c.clock_id >= 64]
    return cleared, clocks


def _exports(
    path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, *args: str
) -> tuple[Any, Any]:
    """`path` exported in one run per session, then with long sessions in two runs (each
    export checked against the contract and the importer's rules by `export_trace`)."""
    monkeypatch.setattr(runs, "SECOND_RUN_SLICES", 10**9)
    whole = export_trace(path, args=args, require_addition=False)
    monkeypatch.setattr(runs, "SECOND_RUN_SLICES", LOW)
    split = export_trace(path, args=args, require_addition=False)
    return whole, split


def _corpus_claude() -> list[Any]:
    if not CORPUS_CLAUDE.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no corpus at {CORPUS_CLAUDE}"))]
    biggest = max(CORPUS_CLAUDE.rglob("*.jsonl"), key=lambda p: p.stat().st_size)
    return [pytest.param(biggest, id=f"corpus/{biggest.name}")]


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(SPOTTER, id="claude-code-subagents"),
        pytest.param(CODEX, id="codex"),
        *_corpus_claude(),
    ],
)
def test_two_runs_hold_what_one_run_holds(
    path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole, split = _exports(path, export_trace, monkeypatch)
    assert_same_trace(whole, split)
    assert split.path.read_bytes() != whole.path.read_bytes()
    # THEN each long session clears the sequence's state twice more than one run does
    # (its second run, and the session after it), and no clock id is started twice
    before, whole_clocks = _cleared_and_clocks(whole.path)
    after, clocks = _cleared_and_clocks(split.path)
    assert before.keys() == after.keys()
    assert sum(after.values()) > sum(before.values())
    assert len(clocks) == len(set(clocks)) and len(clocks) > len(whole_clocks)
    # each run takes the next id: every session here starts a clock (a group's first, a
    # subagent inside its parent, or the first after a long session)
    assert clocks == list(range(64, 64 + len(clocks)))
    # and the second runs are deflated as the first (no event packet outside a bundle)
    assert not any(p.HasField("track_event") for p in pb.Trace.FromString(raw(split)).packet)


def raw(exported: Any) -> bytes:
    return bytes(exported.path.read_bytes())


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return 1


def _helper_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """A helper may run whatever this test process holds (its memory rule: below); on
    Linux with two cores, it must."""
    monkeypatch.setattr(runs, "HELPER_MEMORY", 2**40)
    if not sys.platform.startswith("linux") or _cores() < 2:
        pytest.skip("a helper runs on Linux with a second core")
    assert runs.helper_can_run()


def test_when_a_helper_may_run(monkeypatch: pytest.MonkeyPatch) -> None:
    _helper_here(monkeypatch)
    # not beside another thread (a fork copies none of them)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not runs.helper_can_run()
    finally:
        stop.set()
        other.join()
    assert runs.helper_can_run()
    # not on one core
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0})
    assert not runs.helper_can_run()
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0, 1})
    assert runs.helper_can_run()
    # not past HELPER_MEMORY (at it: yes), nor where the memory cannot be read
    monkeypatch.setattr(runs, "_resident", lambda: 100)
    monkeypatch.setattr(runs, "HELPER_MEMORY", 100)
    assert runs.helper_can_run()
    monkeypatch.setattr(runs, "HELPER_MEMORY", 99)
    assert not runs.helper_can_run()

    def unreadable() -> int:
        raise OSError("no /proc")

    monkeypatch.setattr(runs, "_resident", unreadable)
    assert not runs.helper_can_run()


def test_the_memory_read_is_the_resident_set() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("/proc/self/status")
    status = Path("/proc/self/status").read_text()
    resident_kb = next(
        int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")
    )
    assert abs(runs._resident() - resident_kb * 1024) < 8 * 2**20


def test_the_helper_writes_the_bytes_this_process_would(
    export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _helper_here(monkeypatch)
    forks = count_forks(monkeypatch)
    parent = os.getpid()

    second_run = runs._second_run
    here: list[int] = []  # second runs this process encoded

    def spied(*args: Any, **keywords: Any) -> int:
        if os.getpid() == parent:
            here.append(1)
        return second_run(*args, **keywords)

    monkeypatch.setattr(runs, "_second_run", spied)
    monkeypatch.setattr(runs, "SECOND_RUN_SLICES", LOW)
    alone = export_trace(SPOTTER, args=("--jobs", "1"), require_addition=False)
    assert forks == [] and here  # --jobs 1: one process, which encodes the second runs
    here.clear()
    helped = export_trace(SPOTTER, require_addition=False)
    assert os.getpid() == parent
    # THEN helpers encoded every second run (none failed: this process encoded none)
    assert len(forks) >= 1 and here == []
    assert helped.path.read_bytes() == alone.path.read_bytes()


def test_the_helper_takes_up_where_the_first_run_stops() -> None:
    """The helper's sweep, skipped to the first run's end, yields the begin the first run
    stopped at, then what follows (`_skip_first_run`); a plan with fewer begins is an
    error, never a second run made of nothing."""
    events = [
        (1, 0, 1, "a", runs.BEGIN),
        (2, 0, 0, {}, 2),
        (3, 0, 1, "a", runs.END),
        (4, 0, 2, "b", runs.BEGIN),
        (5, 0, 3, "c", runs.BEGIN),
    ]
    rest = iter(events)
    assert runs._skip_first_run(rest, 1) == events[3]  # type: ignore[arg-type]
    assert list(rest) == events[4:]
    assert runs._skip_first_run(iter(events), 0) == events[0]  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fewer slices"):
        runs._skip_first_run(iter(events), 3)  # type: ignore[arg-type]


def test_a_helper_that_fails_is_replaced(
    export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _helper_here(monkeypatch)
    parent = os.getpid()
    second_run = runs._second_run
    calls: list[int] = []

    def failing_in_the_helper(*args: Any, **keywords: Any) -> int:
        if os.getpid() != parent:
            raise RuntimeError("the helper fails")
        calls.append(1)
        return second_run(*args, **keywords)

    monkeypatch.setattr(runs, "SECOND_RUN_SLICES", LOW)
    alone = export_trace(CODEX, args=("--jobs", "1"), require_addition=False)
    monkeypatch.setattr(runs, "_second_run", failing_in_the_helper)
    forks = count_forks(monkeypatch)
    replaced = export_trace(CODEX, require_addition=False)
    assert forks, "a helper was started"
    assert calls, "this process wrote the second run"
    assert replaced.path.read_bytes() == alone.path.read_bytes()


def test_where_the_second_run_starts() -> None:
    class Plan:
        def __init__(self, count: int) -> None:
            self.slice_count = count

    threshold = runs.SECOND_RUN_SLICES
    assert runs.second_run_at(Plan(threshold - 1)) is None  # type: ignore[arg-type]
    assert runs.second_run_at(Plan(threshold)) == threshold * 27 // 50  # type: ignore[arg-type]
    assert runs.second_run_at(Plan(20_000)) == 10_800  # type: ignore[arg-type]


def test_no_helper_past_the_memory_it_may_double(
    export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A helper copies most of what it shares with this process: none runs while this
    process holds more than HELPER_MEMORY (the trace is the same)."""
    _helper_here(monkeypatch)
    assert runs._resident() > 2**20  # (read from /proc: this process holds over 1 MB)
    forks = count_forks(monkeypatch)

    monkeypatch.setattr(runs, "SECOND_RUN_SLICES", LOW)
    helped = export_trace(SPOTTER, require_addition=False)
    assert len(forks) >= 1
    monkeypatch.setattr(runs, "HELPER_MEMORY", runs._resident() // 2)
    assert not runs.helper_can_run()
    forks.clear()
    alone = export_trace(SPOTTER, require_addition=False)
    assert forks == []
    assert alone.path.read_bytes() == helped.path.read_bytes()


@pytest.mark.parametrize("helper", [False, True], ids=["here", "helper"])
def test_the_packets_counted_are_the_packets_written(
    helper: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if helper:
        _helper_here(monkeypatch)
    forks = count_forks(monkeypatch)
    monkeypatch.setattr(runs, "SECOND_RUN_SLICES", LOW)
    stream = io.BytesIO()
    count = PerfettoWriter(compress=False, helper=helper).write(sessions(SPOTTER), stream)
    assert count == len(inflated(stream.getvalue()).packet)
    assert bool(forks) == helper


def test_the_second_run_starts_at_its_slice_begin(
    export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One session: the packet that clears the state a second time is the begin of the
    slice after the first run's share of them."""
    monkeypatch.setattr(runs, "SECOND_RUN_SLICES", LOW)
    split = export_trace(CODEX, args=("--no-compress",), require_addition=False)
    begins = 0
    cleared: list[int] = []  # the slice begins before each packet clearing the state
    kinds = (pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_INSTANT)
    for packet in inflated(split.path).packet:
        if packet.sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED:
            cleared.append(begins)
        if packet.HasField("track_event") and packet.track_event.type in kinds:
            begins += 1
    assert len(cleared) == 2 and cleared[0] == 0
    numerator, denominator = runs.FIRST_SHARE
    assert cleared[1] == begins * numerator // denominator


def test_no_temporary_folder_for_the_helper_is_no_failure(
    export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The helper writes into a file with no name in the temporary folder: where none can
    be made, this process writes the second run (no fork, the same bytes)."""
    from agent_profiler import spools
    from agent_profiler.errors import OutputError

    _helper_here(monkeypatch)
    monkeypatch.setattr(runs, "SECOND_RUN_SLICES", LOW)
    started = count_forks(monkeypatch)
    helped = export_trace(SPOTTER, require_addition=False)
    assert started

    def refused() -> Any:
        raise OutputError("error: no temporary folder can be written")

    forks = count_forks(monkeypatch)
    monkeypatch.setattr(spools, "unnamed_temporary_file", refused)
    alone = export_trace(SPOTTER, require_addition=False)
    assert forks == []
    assert alone.path.read_bytes() == helped.path.read_bytes()


def test_a_failed_first_run_ends_its_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process fails (or is interrupted) while its helper runs: the helper is
    killed and reaped before the error goes on, no process left behind."""
    _helper_here(monkeypatch)
    monkeypatch.setattr(runs, "SECOND_RUN_SLICES", LOW)
    forks = count_forks(monkeypatch)

    def failing(*args: Any) -> Any:
        raise RuntimeError("the first run fails")

    def slow_helper(*args: Any) -> Any:
        time.sleep(60)  # (the helper's first step: it would still be running)

    monkeypatch.setattr(runs, "_first_run", failing)
    monkeypatch.setattr(runs, "_skip_first_run", slow_helper)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="first run fails"):
        PerfettoWriter(helper=True).write(sessions(SPOTTER), io.BytesIO())
    assert time.monotonic() - started < 30  # killed, not waited for
    assert len(forks) == 1
    with pytest.raises(ChildProcessError):  # reaped already: no zombie, no process
        os.waitpid(forks[0], os.WNOHANG)


def test_a_helper_reaped_is_never_signalled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once waited for, a helper's pid may be another process's: the copy of its packets
    failing (a full disk) must not lead to a kill of that pid."""
    if not hasattr(os, "fork"):
        pytest.skip("needs fork")
    from agent_profiler.spools import temporary_file

    spool = temporary_file()
    spool.write(b"packets" + runs._COUNT.pack(1, 2))
    spool.flush()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    helper = runs._Helper(pid, spool, frozen=True)

    class Full(io.BytesIO):
        def write(self, data: Any) -> int:
            raise OSError(28, "No space left on device")

    signalled: list[int] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: signalled.append(pid))
    with pytest.raises(OSError, match="No space"):
        helper.join(Full())
    helper.kill()
    assert signalled == []


def test_a_helper_killed_is_never_signalled_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """`kill` may be reached twice on the way out (a failure, then the clean-up): once the
    helper is reaped, its pid may be another process's, and is not signalled again."""
    if not hasattr(os, "fork"):
        pytest.skip("needs fork")
    from agent_profiler.spools import temporary_file

    pid = os.fork()
    if pid == 0:  # (a helper still at work: killed here)
        time.sleep(60)
        os._exit(0)
    helper = runs._Helper(pid, temporary_file(), frozen=True)
    helper.kill()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # (reaped)
    signalled: list[int] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: signalled.append(pid))
    helper.kill()
    assert signalled == []


def test_no_helper_where_children_are_reaped_by_the_kernel(
    export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGCHLD ignored (inherited from a parent that ignores it): no helper's outcome
    could be waited for, so none runs, and one already reaped is no failure."""
    import signal

    _helper_here(monkeypatch)
    monkeypatch.setattr(runs, "SECOND_RUN_SLICES", LOW)
    helped = export_trace(SPOTTER, require_addition=False)
    before = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        assert not runs.helper_can_run()
        forks = count_forks(monkeypatch)
        alone = export_trace(SPOTTER, require_addition=False)
        assert forks == []
        assert alone.path.read_bytes() == helped.path.read_bytes()
    finally:
        signal.signal(signal.SIGCHLD, before)
    # A helper someone else reaped: its outcome is unknown, this process encodes the run.
    from agent_profiler.spools import temporary_file

    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    signalled: list[int] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: signalled.append(pid))
    helper = runs._Helper(pid, temporary_file(), frozen=True)
    assert helper.join(io.BytesIO()) is None
    helper.kill()
    assert signalled == []


# Objects in the permanent generation beyond those no one here froze (CPython 3.12 moves
# its immortal objects, about 400, there at each full collection): a frozen model is
# tens of thousands.
FEW_FROZEN = 1000


@pytest.mark.parametrize(
    ("by_loader", "before"),
    [(False, False), (True, True), (False, True)],
    ids=["thawed", "frozen-by-the-loader", "frozen-by-another"],
)
def test_the_collector_is_left_as_it_was(
    by_loader: bool, before: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The collector is frozen across the fork, then as it was: what the loader froze
    (collector.fewer_collections) stays frozen until it is let go. Objects frozen
    by no one here (CPython 3.12's immortal objects, after any full collection) do not
    count as the loader's: the fork's freeze is undone all the same."""
    import gc

    from agent_profiler import collector

    _helper_here(monkeypatch)
    monkeypatch.setattr(runs, "SECOND_RUN_SLICES", LOW)
    monkeypatch.setattr(collector, "_FROZEN", [True] if by_loader else [])
    forks = count_forks(monkeypatch)
    gc.unfreeze()
    gc.collect()  # (on CPython 3.12, its immortal objects back in the permanent generation)
    base = gc.get_freeze_count()
    if before:
        gc.freeze()
    try:
        PerfettoWriter(helper=True).write(sessions(SPOTTER), io.BytesIO())
        assert forks
        assert (gc.get_freeze_count() > base + FEW_FROZEN) == by_loader
    finally:
        gc.unfreeze()


def test_a_first_run_that_started_more_clocks_is_followed_after_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Were the first run to start a second clock (its times going back), the second run
    would start after it: not the helper's run (made before), this process's, the same
    bytes either way."""
    first_run = runs._first_run

    def two_clocks(encoder: Any, *args: Any) -> Any:
        event = first_run(encoder, *args)
        encoder.clock.used += 1  # as if it had started one more
        return event

    monkeypatch.setattr(runs, "_first_run", two_clocks)
    monkeypatch.setattr(runs, "SECOND_RUN_SLICES", LOW)
    alone = io.BytesIO()
    PerfettoWriter(helper=False).write(sessions(CODEX), alone)
    _helper_here(monkeypatch)
    forks = count_forks(monkeypatch)
    helped = io.BytesIO()
    PerfettoWriter(helper=True).write(sessions(CODEX), helped)
    assert forks
    assert helped.getvalue() == alone.getvalue()
    clocks = [
        c.clock_id
        for p in inflated(helped.getvalue()).packet
        if p.HasField("clock_snapshot")
        for c in p.clock_snapshot.clocks
        if c.clock_id >= 64
    ]
    assert clocks == [64, 66]  # the second run after the two the first took


def _signalled_helper(monkeypatch: pytest.MonkeyPatch, signum: int) -> tuple[int, float]:
    """Start a helper that sleeps, send it `signum` from this process's first run, and
    return its wait status and how long it took to end."""
    import signal

    _helper_here(monkeypatch)
    # Ctrl-C as at a terminal, whatever this run inherited (a job started in the background
    # by a shell ignores it, and so would its helper, as a worker does)
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    monkeypatch.setattr(runs, "SECOND_RUN_SLICES", LOW)
    forks = count_forks(monkeypatch)
    first_run = runs._first_run
    ended: list[tuple[int, float]] = []

    def asleep(*args: Any) -> Any:
        time.sleep(60)  # (the helper's first step after its set-up)

    def signal_the_helper(*args: Any) -> Any:
        if not ended:
            started = time.monotonic()
            os.kill(forks[-1], signum)
            _, status = os.waitpid(forks[-1], 0)
            ended.append((status, time.monotonic() - started))
        return first_run(*args)

    monkeypatch.setattr(runs, "_skip_first_run", asleep)
    monkeypatch.setattr(runs, "_first_run", signal_the_helper)
    try:
        PerfettoWriter(helper=True).write(sessions(CODEX), io.BytesIO())  # (this process
        # then encodes the second run: the helper's end was reaped here, an unknown outcome)
    finally:
        signal.signal(signal.SIGINT, ignored)
    return ended[0]


def test_sigterm_ends_a_helper_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Held across the fork, SIGTERM is taken again in the helper, where it ends it at
    once (the default action, as a worker's)."""
    import signal

    status, took = _signalled_helper(monkeypatch, signal.SIGTERM)
    assert took < 30
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM


def test_ctrl_c_ends_a_helper_without_a_word(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C ends a helper at once with 130, as a worker (no KeyboardInterrupt unwinding
    through this process's code in it)."""
    import signal

    status, took = _signalled_helper(monkeypatch, signal.SIGINT)
    assert took < 30
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 130


DRIVER = """
import io, os, sys, time
from pathlib import Path
sys.path[:0] = [{src!r}, {tests!r}]
from agent_profiler.writers import runs
from agent_profiler.writers.perfetto import PerfettoWriter
from rules_spy import sessions
runs.SECOND_RUN_SLICES, runs.HELPER_MEMORY = 40, 2**40
{fork_told}
runs._skip_first_run = lambda *args: time.sleep(60)
runs._first_run = lambda *args: time.sleep(60)
PerfettoWriter(helper=True).write(sessions(Path({journal!r})), io.BytesIO())
"""


def test_a_helper_dies_with_its_parent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A parent killed outright (SIGKILL, the OOM killer) takes its helper with it
    (PR_SET_PDEATHSIG, as the workers): none is left holding what it inherited."""
    _helper_here(monkeypatch)
    driver = tmp_path / "driver.py"
    src = str(Path(runs.__file__).resolve().parents[2])
    driver.write_text(
        DRIVER.format(src=src, tests=str(TESTS), journal=str(CODEX), fork_told=FORK_TOLD)
    )
    assert_helper_dies_with_its_parent(driver)


def test_each_run_deflates_where_a_thread_would_not_compete(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Beside a helper no core waits, so a deflating thread only competed with it
    (writers/chunks.py): this process's first run and the helper's run are deflated
    where they are encoded. Without a helper both runs may use a thread, as the writer
    says; a writer told not to (a folder's worker) never does; the group's sink is as it
    was once the session is written."""
    monkeypatch.setattr(runs, "SECOND_RUN_SLICES", LOW)
    first_run, second_run, write = runs._first_run, runs._second_run, runs.write_in_two_runs
    parent = os.getpid()
    firsts: list[bool] = []  # the sink's `threaded` in each first run
    seconds: list[bool] = []  # `threaded` of each second run encoded here
    after: list[bool] = []  # the sink's `threaded` once the session is written
    in_helper = tmp_path / "helper"  # what each helper was told, one line each

    def spied_first(encoder: Any, add: Any, *rest: Any) -> Any:
        firsts.append(add.__self__.threaded)
        return first_run(encoder, add, *rest)

    def spied_second(*args: Any, threaded: bool) -> Any:
        if os.getpid() == parent:
            seconds.append(threaded)
        else:
            with in_helper.open("a") as told:
                told.write(f"{threaded}\n")
        return second_run(*args, threaded=threaded)

    def spied_write(encoder: Any, sink: Any, *args: Any, **keywords: Any) -> Any:
        written = write(encoder, sink, *args, **keywords)
        after.append(sink.threaded)
        return written

    monkeypatch.setattr(runs, "_first_run", spied_first)
    monkeypatch.setattr(runs, "_second_run", spied_second)
    monkeypatch.setattr(runs, "write_in_two_runs", spied_write)

    def written(**keywords: bool) -> int:
        firsts.clear(), seconds.clear(), after.clear()
        PerfettoWriter(**keywords).write(sessions(CODEX), io.BytesIO())
        return len(firsts)

    long = written(helper=False)
    assert long and firsts == seconds == after == [True] * long
    assert written(helper=False, threaded=False) == long
    assert firsts == seconds == after == [False] * long
    _helper_here(monkeypatch)
    forks = count_forks(monkeypatch)
    assert written(helper=True) == long
    assert len(forks) == long and seconds == []  # every second run a helper's
    assert firsts == [False] * long and after == [True] * long
    assert in_helper.read_text().split() == ["False"] * long
