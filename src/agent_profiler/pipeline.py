"""Journal groups read and used one at a time, in this process or in worker processes.

A journal group (a session tree read together, loader.plan) depends on nothing outside
itself once it is read, and the Perfetto writer encodes each group on its own (its uuid
block, interning begun afresh: writers/perfetto.py). So `export` of many journals can read
and encode groups in parallel, and `summary` summarise them, each worker sending back only
the group's packets or rows and a few counts — never the model, whose pickling costs as much
as reading it — and the parent joins them in the groups' order: the bytes are those one
process writes. A worker that dies costs only time (`_Workers`).

Two things cross groups, and the parent settles both: a session id seen in an earlier group (the
copy is renamed `#2`: a worker that read such a group without knowing is overruled and the group
read again here), and a subagent whose parent is not exported (a warning, once every group's links
are known), with the subagents parents launched that were not read (one warning for the run).
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import IO, Any, Generic, Protocol, TypeVar

from agent_profiler import collector, leaving, scan
from agent_profiler.adapters import JournalGroup
from agent_profiler.annotations import TraceHeader
from agent_profiler.children import leave_with, portable, start_method, unpickles, worker_signals
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import JournalError
from agent_profiler.links import Unread, unread_links
from agent_profiler.loader import Link, parent_links, read_group
from agent_profiler.model import Session, frozen
from agent_profiler.options import ReadOptions
from agent_profiler.records import record
from agent_profiler.writers import TraceFacts

# Below this much input, starting worker processes and sending back their packets costs
# more than the second core saves.
PARALLEL_MIN_BYTES = 4 * 1024 * 1024
# Groups a worker is handed and has not brought back (`_Workers.outcomes`): enough that it
# goes on while the parent reads a group of its own, however long that one is. Measured on
# the bench's folder of 300 sessions (2 cores): with two, the worker waited for its next
# group 27–36 times, 0.6–0.8 s of a 7 s export, each time the parent read a group longer
# than the worker's two; with three to eight, about never. The export took 6.5–6.95 s
# against 6.9–7.15 s, summary 3.65–4.0 s against 3.9–4.1 s (two sets of alternating runs).
IN_FLIGHT = 4
COPY_CHUNK = 1 << 16
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


@frozen
class GroupTask:
    index: int  # the group's place in loader.plan's order (its uuid block in a trace)
    group: JournalGroup
    options: ReadOptions  # what reading depends on besides the journal, the same for all


class Use(Protocol[T_co]):
    """What is made of a group once read: called with its sessions (ids made unique),
    its warnings, the task, and where a value that is bytes goes in this process (None in
    a worker: the value is sent back)."""

    def __call__(
        self,
        sessions: list[Session],
        diagnostics: Diagnostics,
        task: GroupTask,
        out: IO[bytes] | None,
    ) -> T_co: ...


@record
class SessionCounts:
    """What the `wrote …` line says of one group's sessions."""

    sessions: int = 0
    subagents: int = 0
    responses: int = 0
    unmetered: int = 0
    compactions: int = 0
    # The trace-level facts (layout.TraceHeader) the parent writes once per trace.
    header: TraceHeader = field(default_factory=TraceHeader)

    def add(self, other: SessionCounts) -> None:
        self.sessions += other.sessions
        self.subagents += other.subagents
        self.responses += other.responses
        self.unmetered += other.unmetered
        self.compactions += other.compactions
        self.header = self.header.joined(other.header)

    @classmethod
    def of(cls, sessions: Sequence[Session]) -> SessionCounts:
        return cls(
            len(sessions),
            sum(1 for s in sessions if s.is_subagent),
            sum(len(s.responses) for s in sessions),
            sum(len(s.unmetered_responses) for s in sessions),
            sum(len(s.compactions) for s in sessions),
            TraceHeader.of(sessions),
        )


@record
class GroupOutcome(Generic[T]):
    """One group, read and used: everything the parent needs of it."""

    index: int
    failures: list[JournalError]
    paths: tuple[Path, ...]
    journal_ids: tuple[str, ...]  # before renaming: the parent checks them for repeats
    links: list[Link]  # for the parent's warning about subagents without their parent
    counts: SessionCounts
    first: int | None  # the earliest session start (a trace's clock snapshot)
    diagnostics: Diagnostics
    value: T
    # for the parent's one warning about subagents launched and not read (links.Unread)
    unread: list[Unread] = field(default_factory=list)


def run_group(
    task: GroupTask,
    use: Use[T],
    seen: dict[str, int] | None = None,
    out: IO[bytes] | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> GroupOutcome[T]:
    """Read one group and `use` it. `seen`: the session ids of the groups before it,
    updated (a worker knows none: the parent checks what it sends back)."""
    from agent_profiler.adapters.drafts import argument_digests

    # A trace never shows a call's input digest (only `summary` finds repeated calls by
    # it): an export reads without it (an orjson dump and a BLAKE2b a call), on either path.
    with argument_digests(not isinstance(use, EncodeTrace)):
        return _run_group(task, use, seen, out, on_progress)


def _run_group(
    task: GroupTask,
    use: Use[T],
    seen: dict[str, int] | None,
    out: IO[bytes] | None,
    on_progress: Callable[[str, int, int], None] | None,
) -> GroupOutcome[T]:
    from agent_profiler.views import session_span

    leaving.release()  # (the group before's model: one at a time, as ever, the pass's too)
    # An export in one process (not a folder's worker) may read with a helper (scan.py).
    helped = isinstance(use, EncodeTrace) and use.helper and out is not None
    if isinstance(use, EncodeTrace):
        from agent_profiler import stream

        split = False
        if helped and task.group.harness in stream.SPLIT_BY_DEFAULT:
            from agent_profiler.stream.forked import may_fork

            split = len(task.group.paths) == 1 and may_fork(task.group.paths[0], allowed=True)
        if stream.enabled(task.group.harness, split):
            from agent_profiler.stream.group import try_group

            with scan.allowed(helped):
                streamed = try_group(task, use, seen, out, on_progress)
            if streamed is not None:
                return streamed
    diagnostics = Diagnostics(on_progress=on_progress)
    with task.options.applied(), scan.allowed(helped):
        read = read_group(
            task.group, diagnostics, {} if seen is None else seen, harness=task.options.harness
        )
        if task.options.align:
            from agent_profiler.align import align_start

            read = replace(read, sessions=align_start(read.sessions))
        value = use(read.sessions, diagnostics, task, out)
    collector.let_go()
    leaving.keep("group", read)  # not freed object by object if it is the last (leaving.py)
    return GroupOutcome(
        task.index,
        read.failures,
        read.paths,
        read.journal_ids,
        parent_links(read.sessions),
        SessionCounts.of(read.sessions),
        min((session_span(s)[0] for s in read.sessions), default=None),
        diagnostics,
        value,
        unread_links(read.sessions),
    )


def jobs_for(requested: int | None, groups: Sequence[JournalGroup]) -> int:
    """How many processes read the groups: `--jobs`, else every core for input enough."""
    if requested is not None:
        return max(1, min(requested, len(groups)))
    if len(groups) < 2:
        return 1
    size = 0
    for group in groups:
        for path in group.paths:
            with contextlib.suppress(OSError):
                size += path.stat().st_size
    if size < PARALLEL_MIN_BYTES:
        return 1
    cores = os.process_cpu_count() if hasattr(os, "process_cpu_count") else os.cpu_count()
    return max(1, min(cores or 1, len(groups)))


def run_groups(
    tasks: Sequence[GroupTask],
    use: Use[T],
    jobs: int,
    out: IO[bytes] | None = None,
    *,
    on_progress: Callable[[str, int, int], None] | None = None,
    progress: Callable[[int, int, JournalGroup], None] | None = None,
    notice: Callable[[str], None] | None = None,
) -> Iterator[GroupOutcome[T]]:
    """Every group read and used, in the tasks' order, session ids made unique across
    groups: in this process (jobs = 1) or in this process and `jobs` − 1 workers. `out` is
    handed to `use` in this process; a worker's bytes are written to it here, in order."""
    with collector.fewer_for_the_run():  # (a forked worker's too)
        yield from _run_groups(tasks, use, jobs, out, on_progress, progress, notice)


def _run_groups(
    tasks: Sequence[GroupTask],
    use: Use[T],
    jobs: int,
    out: IO[bytes] | None,
    on_progress: Callable[[str, int, int], None] | None,
    progress: Callable[[int, int, JournalGroup], None] | None,
    notice: Callable[[str], None] | None,
) -> Iterator[GroupOutcome[T]]:
    seen: dict[str, int] = {}
    done = 0
    collector.started()  # (before any worker is forked)

    def step(outcome: GroupOutcome[T]) -> GroupOutcome[T]:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, len(tasks), tasks[done - 1].group)
        return outcome

    if jobs <= 1:
        for task in tasks:
            with collector.none_for_the_last(task is tasks[-1]):
                read = run_group(task, use, seen, out, on_progress)
            yield step(read)
        return
    # The parent is one of the `jobs` readers: it reads a group itself whenever the next
    # group to write is not back yet. One process fewer than `jobs` workers and an idle
    # parent, for the same cores: a folder's export held 113 MB of RSS in three processes,
    # about 30 MB of it the same imported pages counted in each.
    workers = _Workers(use, jobs - 1)
    try:
        noted = False
        for index, outcome in workers.outcomes(tasks, lambda task: run_group(task, use)):
            task = tasks[index]
            if outcome is None:
                # A worker was killed (out of memory, a signal): the groups no worker
                # brought back are read here; the output is the same.
                if not noted and notice is not None:
                    notice(
                        "note: a worker process stopped before it was done; the journal "
                        "groups not read yet are read in this process"
                    )
                noted = True
                yield step(run_group(task, use, seen, out))
                continue
            if any(session_id in seen for session_id in outcome.journal_ids):
                # An id an earlier group already used (the same session given twice):
                # read the group again here, renamed as one process would have.
                yield step(run_group(task, use, seen, out))
                continue
            for session_id in outcome.journal_ids:
                seen[session_id] = seen.get(session_id, 0) + 1
            if out is not None and isinstance(outcome.value, bytes):
                out.write(outcome.value)
                outcome.value = b""  # type: ignore[assignment]
            yield step(outcome)
    finally:
        workers.close()


@frozen
class _Failure:
    """What a worker sends back when reading a group raised (a bug): the parent raises it."""

    error: BaseException


class _Workers(Generic[T]):
    """`jobs` worker processes, each with a pipe of its own, handed `IN_FLIGHT` groups at a
    time (`outcomes`) and reading one after the other.

    No threads: nothing is left to join when a run ends early (concurrent.futures' pool
    joined a manager thread stuck reading the half-sent result of a worker it had just
    terminated, and hung). A worker that dies is an end of file on its pipe, never half a
    message, since no other process holds the worker's end."""

    def __init__(self, use: Use[T], jobs: int) -> None:
        import multiprocessing

        context: Any = multiprocessing.get_context(start_method())
        # A process started with Ctrl-C ignored (`nohup … &`) keeps its workers ignoring it.
        ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        # Workers start with Ctrl-C ignored (a worker interrupted while its interpreter
        # starts prints a fatal error), then leave at once on it (_serve). Signals can be
        # set from the main thread only: a caller on another thread keeps them.
        main = threading.current_thread() is threading.main_thread()
        before = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        self.workers: list[tuple[Any, Any]] = []
        forked = context.get_start_method() == "fork"
        try:
            for _ in range(jobs):
                mine, theirs = context.Pipe()
                # A forked worker holds copies of this process's ends of the pipes (its own
                # and earlier workers'): closed there, its `recv` sees the end of file
                # when this process dies (review-bad finding 5).
                ours = [c.fileno() for _, c in self.workers] + [mine.fileno()] if forked else []
                # Linux kills a worker when the *thread* that started it ends: only the
                # main thread's workers are asked to die with it (leave_with).
                parent = (os.getpid() if main else 0, ours)
                process = context.Process(
                    target=_serve, args=(theirs, use, ignored, parent), daemon=True
                )
                process.start()
                theirs.close()
                self.workers.append((process, mine))
        finally:
            if main:
                signal.signal(signal.SIGINT, before)

    def outcomes(
        self,
        tasks: Sequence[GroupTask],
        local: Callable[[GroupTask], GroupOutcome[T]] | None = None,
    ) -> Iterator[tuple[int, GroupOutcome[T] | None]]:
        """(index, outcome) for every task, in the tasks' order; None for every task not
        brought back once a worker died (the caller reads those itself). `local` reads a
        task in this process, as a worker would (no ids known): while the next outcome to
        yield is still with a worker and tasks are left, this process takes the next one
        (after handing every worker that is done a new one)."""
        from multiprocessing.connection import wait

        next_index = [0]  # the first task not handed out yet (to a worker or this process)

        def counted() -> Iterator[int]:
            for index in range(len(tasks)):
                next_index[0] = index + 1
                yield index

        queue = counted()
        # Each worker's tasks sent and not brought back, in order: IN_FLIGHT at a time, so
        # a worker that is done goes on with its next while this process is reading a
        # group of its own (one at a time left the worker idle a sixth of the run, two a
        # tenth). The outcomes that come back before the one to yield wait in `ready`.
        busy: dict[Any, deque[int]] = {connection: deque() for _, connection in self.workers}
        ended: set[Any] = set()  # told there is no more
        ready: dict[int, GroupOutcome[T]] = {}

        def top_up(connection: Any) -> bool:
            """A worker handed the next group if `hands_one_more` says so."""
            left = len(tasks) - next_index[0]
            return (
                give(connection) if hands_one_more(left, len(busy[connection]), len(busy)) else True
            )

        def give(connection: Any) -> bool:
            """Send the next task (or, once, the end); False when the worker is gone (a
            worker killed between two tasks: the send meets a closed pipe)."""
            if connection in ended:
                return True
            index = next(queue, None)
            try:
                connection.send(None if index is None else tasks[index])
            except (EOFError, OSError):
                return False
            if index is None:
                ended.add(connection)
            else:
                busy[connection].append(index)
            return True

        def rest(wanted: int) -> Iterator[tuple[int, GroupOutcome[T] | None]]:
            """A worker died: stop them all; what was not brought back is read here."""
            self.close()
            for index in range(wanted, len(tasks)):
                yield index, ready.pop(index, None)

        # The first groups dealt round by round, under the same rule as later ones: with
        # few groups each worker gets one (this process reads the rest), never one worker
        # all of them while the others and this process wait.
        for _ in range(IN_FLIGHT):
            if not all([top_up(c) for _, c in self.workers]):
                yield from rest(0)
                return
        wanted = 0
        while wanted < len(tasks):
            if wanted in ready:
                yield wanted, ready.pop(wanted)
                wanted += 1
                continue
            working = [connection for connection, sent in busy.items() if sent]
            answered: list[Any] = wait(working, timeout=0 if local is not None else None)
            if not answered and local is not None:
                index = next(queue, None)
                if index is not None:
                    ready[index] = local(tasks[index])
                    continue
                answered = wait(working)
            for connection in answered:
                try:
                    answer = connection.recv()
                except (EOFError, OSError):
                    yield from rest(wanted)
                    return
                index = busy[connection].popleft()
                if isinstance(answer, _Failure):
                    raise answer.error
                ready[index] = answer
                if not top_up(connection):
                    yield from rest(wanted)
                    return

    def close(self) -> None:
        """Stop every worker now (idle ones have been told to leave already)."""
        for process, connection in self.workers:
            if process.is_alive():
                process.terminate()
            connection.close()
        for process, _ in self.workers:
            process.join(timeout=5)
        self.workers = []


def _serve(
    connection: Any, use: Use[T], ignored: bool, parent: tuple[int, list[int]] = (0, [])
) -> None:
    """A worker's life: read the groups it is handed until told to stop (None) or until
    the parent is gone (end of file, or killed with it), sending back each group's
    outcome. `parent`: the parent's pid and its pipe ends this process inherited."""
    worker_signals(ignored)
    leave_with(*parent)
    collector.freeze_inherited()  # its collector never walks the parent's objects
    with collector.fewer_for_the_run():  # (as the parent's run: a spawned worker's too)
        while True:
            try:
                task = connection.recv()
            except (EOFError, OSError):
                return
            if task is None:
                return
            try:
                outcome = run_group(task, use)
                outcome.failures = [portable(failure) for failure in outcome.failures]
                answer: GroupOutcome[T] | _Failure = outcome
            except Exception as error:
                # A bug, raised in the parent as it is, or by its name when it cannot travel.
                answer = _Failure(
                    error if unpickles(error) else RuntimeError(f"{type(error).__name__}: {error}")
                )
            connection.send(answer)


def hands_one_more(left: int, in_hand: int, workers: int) -> bool:
    """Whether a worker that brought a group back is handed the next now (or, with none
    `left`, told there is no more): always while more than IN_FLIGHT a worker are left;
    nearer the end only when it has none in hand, so this process reads the rest and no
    process is left reading a queue of its own after the others are done. Measured: the
    bench's 50 Codex rollouts ended with the parent idle 0.15 s while the worker read its
    last three (0.06 s so: 1.56–1.63 s against 1.62–1.67 s in alternating runs); the
    folder of 300, 6.66–6.97 s against 6.77–7.24 s."""
    return not left or not in_hand or left > IN_FLIGHT * workers


# --------------------------------------------------------------------------- export


@frozen
class EncodeTrace:
    """A group's Perfetto packets (PerfettoWriter.write_group), its captures carrying the
    accounting of its own reading; into `out` in this process, else sent back as bytes."""

    facts: TraceFacts
    compress: bool = True  # deflated into compressed_packets, in the worker when in one
    # A long session's second run of events encoded on another core (writers/runs.py),
    # when the group is read in this process (a folder's workers keep the cores busy).
    helper: bool = False

    def __call__(
        self,
        sessions: list[Session],
        diagnostics: Diagnostics,
        task: GroupTask,
        out: IO[bytes] | None,
    ) -> bytes:
        from agent_profiler.writers.perfetto import PerfettoWriter

        if not sessions:
            return b""
        # Out of a folder's workers (`out` is None there) no core waits: neither a
        # helper nor a deflating thread (chunks.PacketSink) would run beside them.
        writer = PerfettoWriter(
            replace(self.facts, accounting=diagnostics.accounting()),
            compress=self.compress,
            helper=self.helper and out is not None,
            threaded=out is not None,
        )
        if out is not None:
            writer.write_group(sessions, out, task.index)
            return b""
        buffer = io.BytesIO()
        writer.write_group(sessions, buffer, task.index)
        return buffer.getvalue()


def write_joined(
    stream: IO[bytes], first: int, spool: IO[bytes], header: TraceHeader | None = None
) -> None:
    """The trace: the clock snapshot and the trace-level facts, then every group's spooled
    packets (they waited: the snapshot comes first, taken at the earliest start of all)."""
    from agent_profiler.writers.perfetto import write_clock

    write_clock(stream, first, header)
    spool.seek(0)
    while chunk := spool.read(COPY_CHUNK):
        stream.write(chunk)


# --------------------------------------------------------------------------- summary


@frozen
class SummariseRows:
    """A group's summary rows (summary.summarise_all: a subagent's parent is in its group)."""

    window: int | None
    cost: bool = False  # add each session's receipt (summary --cost)

    def __call__(
        self,
        sessions: list[Session],
        diagnostics: Diagnostics,
        task: GroupTask,
        out: IO[bytes] | None,
    ) -> list[Any]:
        from agent_profiler.summary import summarise_all

        return summarise_all(sessions, window=self.window, cost=self.cost)
