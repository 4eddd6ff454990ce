"""Journal groups read and encoded one at a time, in this process or in worker processes.

A journal group (a session tree read together, loader.plan) depends on nothing outside
itself once it is read, and the Perfetto writer encodes each group on its own (its uuid
block, interning begun afresh: writers/perfetto.py). So `export` of many journals can read
and encode groups in parallel, each worker sending back only the group's packets and a few
counts — never the model, whose pickling costs as much as reading it — and the parent
joins them in the groups' order: the bytes are those one process writes.

Two things cross groups, and the parent settles both: a session id seen in an earlier
group (the copy is renamed `#2`: a worker that read such a group without knowing is
overruled and the group read again here), and a subagent whose parent is not exported (a
warning, once every group's links are known).
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

from agent_profiler.adapters import JournalGroup
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import JournalError
from agent_profiler.estimate import EstimateChoice, named, use_estimator
from agent_profiler.loader import read_group
from agent_profiler.model import Harness, Session
from agent_profiler.writers import TraceFacts

# Below this much input a worker pool (≈ 30–60 ms to fork and feed) costs more than it saves.
PARALLEL_MIN_BYTES = 4 * 1024 * 1024
COPY_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class GroupTask:
    index: int  # the group's place in loader.plan's order: its uuid block
    group: JournalGroup
    harness: Harness | None
    estimate: EstimateChoice
    facts: TraceFacts  # without accounting: each group's capture carries its own


@dataclass(slots=True)
class SessionCounts:
    """What the `wrote …` line says of one group's sessions."""

    sessions: int = 0
    subagents: int = 0
    responses: int = 0
    unmetered: int = 0
    compactions: int = 0

    def add(self, other: SessionCounts) -> None:
        self.sessions += other.sessions
        self.subagents += other.subagents
        self.responses += other.responses
        self.unmetered += other.unmetered
        self.compactions += other.compactions

    @classmethod
    def of(cls, sessions: Sequence[Session]) -> SessionCounts:
        return cls(
            len(sessions),
            sum(1 for s in sessions if s.is_subagent),
            sum(len(s.responses) for s in sessions),
            sum(len(s.unmetered_responses) for s in sessions),
            sum(len(s.compactions) for s in sessions),
        )


@dataclass(slots=True)
class GroupTrace:
    """One group, read and encoded: everything the parent needs of it."""

    index: int
    failures: list[JournalError]
    paths: tuple[Path, ...]
    journal_ids: tuple[str, ...]  # before renaming: the parent checks them for repeats
    links: list[tuple[str, str | None, str]]  # (session id, parent id, first source)
    counts: SessionCounts
    first: int | None  # the earliest session start, for the clock snapshot
    diagnostics: Diagnostics
    data: bytes = b""  # the group's packets (PerfettoWriter.write_group), from a worker


def encode_group(
    task: GroupTask,
    seen: dict[str, int] | None = None,
    out: IO[bytes] | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> GroupTrace:
    """Read one group and encode its packets, into `out` or else into the result's `data`.
    `seen`: the session ids of the groups before it, updated (a worker knows none: the
    parent checks what it sends back)."""
    from agent_profiler.writers.perfetto import PerfettoWriter, trace_start

    diagnostics = Diagnostics(on_progress=on_progress)
    with use_estimator(named(task.estimate)):
        read = read_group(
            task.group, diagnostics, {} if seen is None else seen, harness=task.harness
        )
    buffer = io.BytesIO() if out is None else None
    if read.sessions:
        facts = replace(task.facts, accounting=diagnostics.accounting())
        PerfettoWriter(facts).write_group(read.sessions, buffer or out, task.index)  # type: ignore[arg-type]
    return GroupTrace(
        task.index,
        read.failures,
        read.paths,
        read.journal_ids,
        [
            (s.session_id, s.parent_session, s.sources[0] if s.sources else "")
            for s in read.sessions
        ],
        SessionCounts.of(read.sessions),
        trace_start(read.sessions),
        diagnostics,
        b"" if buffer is None else buffer.getvalue(),
    )


def _worker(task: GroupTask) -> GroupTrace:
    return encode_group(task)


def jobs_for(requested: int | None, groups: Sequence[JournalGroup]) -> int:
    """How many processes read the groups: `--jobs`, else every core when there is enough
    input to pay for the pool."""
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


def _traces(
    tasks: Sequence[GroupTask],
    jobs: int,
    spool: IO[bytes],
    on_progress: Callable[[str, int, int], None] | None,
) -> Iterator[GroupTrace]:
    """Every group's trace in the tasks' order, its packets appended to `spool`, session
    ids made unique across groups: in this process (jobs = 1) or in `jobs` workers."""
    seen: dict[str, int] = {}
    if jobs <= 1:
        for task in tasks:
            yield encode_group(task, seen, spool, on_progress)
        return
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with context.Pool(jobs) as pool:
        for task, trace in zip(tasks, pool.imap(_worker, tasks, chunksize=1), strict=True):
            if any(session_id in seen for session_id in trace.journal_ids):
                # An id an earlier group already used (the same session given twice):
                # read the group again here, renamed as one process would have.
                yield encode_group(task, seen, spool)
                continue
            for session_id in trace.journal_ids:
                seen[session_id] = seen.get(session_id, 0) + 1
            spool.write(trace.data)
            trace.data = b""
            yield trace


def read_all(
    tasks: Sequence[GroupTask],
    jobs: int,
    spool: IO[bytes],
    *,
    on_progress: Callable[[str, int, int], None] | None = None,
    progress: Callable[[int, int, JournalGroup], None] | None = None,
) -> tuple[list[GroupTrace], int | None]:
    """Read and encode every group, their packets into `spool` (a temporary file) in the
    groups' order: each group's trace without its packets, and the earliest start of all
    (the clock snapshot, which comes first in the trace, is taken there)."""
    done: list[GroupTrace] = []
    first: int | None = None
    for trace in _traces(tasks, jobs, spool, on_progress if jobs <= 1 else None):
        if trace.first is not None:
            first = trace.first if first is None else min(first, trace.first)
        done.append(trace)
        if progress is not None:
            progress(len(done), len(tasks), tasks[len(done) - 1].group)
    return done, first


def write_joined(stream: IO[bytes], first: int, spool: IO[bytes]) -> None:
    """The trace: the clock snapshot, then the spooled packets of every group."""
    from agent_profiler.writers.perfetto import write_clock

    write_clock(stream, first)
    spool.seek(0)
    while chunk := spool.read(COPY_CHUNK):
        stream.write(chunk)
