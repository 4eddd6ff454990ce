"""One pass over a Codex CLI rollout, its writing side: the reading side
(stream/codex_reading.py: adapters/codex.py's own reading loop driving the rollout's
`RolloutBuilder`) hands it batches of data, in this process or from a helper forked on
another core (stream/forked.py), and it never reads the builder. Each request is written
once its `token_count` is read and its snapshot replayed here (a request read later
starts later; one that does not falls back): its response slice with its arguments and
`context`, its turn on the same lane, the request counters and the context categories it
moved, its usage totals at its end; its tool calls once they are known to have ended
(stream/codex_tools.py), fitted here, through stream/tools.py. The session's other tracks
are laid out at the end by the track table's own rows from what the reading kept
(stream/end.py).

A compaction is written when the request after it closes (its size after is that
request's, and its observation is settled then, as the builder's `finish` settles it):
its Context size before and after, and the categories it moved; its slice at the end.
A rollback is the replay's (its removals) and the end's (its marker on Events).

What this pass does not do is `NotHandled`, raised before the group's bytes are handed
on (stream/group.py then returns None and the model path reads the group): a spawned
or spawning thread, a message from another agent, a session without a
measured request, two requests at one time (start or end), a request starting before
one written already (or before a compaction written), a request without a window in a
session that has one, a compaction before the first request, a call changed after it was
written (its end, error or result read later than the pass could know), a fact guessed at
the first request that the end does not confirm."""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from agent_profiler.adapters.codex_rollout import HARNESS
from agent_profiler.annotations import TraceFacts, response_args
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.layout.types import R_SLICE_BEGIN
from agent_profiler.model import ContextSnapshot, Response, Session
from agent_profiler.stream.calls import LATER
from agent_profiler.stream.codex_reading import Batch, CodexReading
from agent_profiler.stream.forked import Reading, fork_reading, read_with
from agent_profiler.stream.log import Additions, NotHandled, StreamLog
from agent_profiler.stream.requests import OrderedPass, ReadSoFar, export_pass
from agent_profiler.stream.tools import StreamTools


class CodexPass(OrderedPass):
    """One Codex rollout read and written in one pass (see the module's docstring)."""

    builder: ReadSoFar

    def __init__(
        self, path: Path, diagnostics: Diagnostics, facts: TraceFacts, group: int, add: Any
    ) -> None:
        super().__init__(path, facts, group, add, f"{HARNESS.category_prefix}.activity")
        self.diagnostics = diagnostics
        self.log = StreamLog()
        self.builder = ReadSoFar()
        self.additions = Additions(self.builder.tools)
        self.start = 0  # the rollout's first time so far
        self.stated_window = 0  # the window the last response stated
        self.has_window: bool | None = None  # whether the first request had a window
        self.tools = StreamTools(
            self.events, self._tool_lane, self._tool_flow, self.additions, self._cwd
        )
        # The start of the first call not handed to StreamTools yet: of those taken for
        # the requests of this batch (in order), else `later`, the first draft waiting
        # (the reading side's `waiting` and `inflight`, stream/calls.py).
        self.inflight: deque[int] = deque()
        self.later = self.waiting = LATER
        self.batch: Batch | None = None  # the last handed on
        # The snapshots the end reads the windows of (views.run_windows, model_requests):
        # each model run's first request's, each model's last request's.
        self.run_model: str | None = None
        self.run_starts: list[ContextSnapshot] = []
        self.model_last: dict[str, ContextSnapshot] = {}

    # ------------------------------------------------------------------ reading

    def read(self) -> Session:
        make = partial(CodexReading, self.path, self.diagnostics)
        # (on another core where a helper may run: stream/forked.py)
        reading = fork_reading(make, self.path, self.diagnostics)
        return read_with(reading, make, self._read)

    def _read(self, reading: Reading) -> Session:
        for batch in reading.batches():
            self._take(batch)
        ending = reading.ending()
        window = ending.window
        if bool(window) != bool(self.has_window):
            raise NotHandled("a request without a window in a session with one")
        self.builder.project = ending.project
        self.tools.placed.extend(self._placed(ending.rest))
        self.tools.finish(self.key, ending.end_ns)
        if self.tools.cwd_used and self.tools.cwd_used[0] != ending.project:
            raise NotHandled("a call's path target made safe before the session's cwd")
        self.events.flush()
        kept = {
            id(x): x
            for x in (*self.run_starts, *self.model_last.values(), *self.compaction_snapshots)
        }
        for snapshot in self.additions.snapshots():
            kept.setdefault(id(snapshot), snapshot)
        # (the model's order: the log's, which is the requests' here)
        left = sorted(kept.values(), key=lambda x: x.time_ns)
        needed = set(self.additions.causes)
        if ending.compactions:  # (stream/end.py: the calls the end's snapshots name)
            needed.update(c.source_id for x in left for c in x.changes)
        session, ops = reading.finish(needed)
        more = self.log.snapshots_of(ops) if ops else []
        session = replace(session, snapshots=(*left, *more))
        assert self.session_facts is not None
        self.session_facts = replace(self.session_facts, window_tokens=session.window_tokens)
        return session

    def _placed(self, ended: list[tuple[Any, int]]) -> list[tuple[Any, int]]:
        """Calls taken, fitted on their lanes in the order taken."""
        place = self.tools.lanes.place
        return [(call, place(call.start_ns, call.end_ns)[0]) for call, _ in ended]

    def _take(self, batch: Batch) -> None:
        """A batch read: what it says of the rollout so far, its requests and compactions
        each with its snapshot (its entries replayed in one loop), in order."""
        self.builder.take(batch.prompts, batch.calls, batch.project)
        self.batch = batch
        self.start = batch.start
        self.waiting, self.later = batch.waiting, batch.later
        inflight = self.inflight
        entries = []
        for response, started, ended in batch.entries:
            if response is not None and ended:
                ended = self._placed(ended)
                inflight.extend(call.start_ns for call, _ in ended)
            entries.append((response, started, ended))
        snapshots = self.log.snapshots_of(batch.ops) if batch.ops else []
        if len(snapshots) != len(entries):
            raise NotHandled("an observation without its snapshot")
        for (response, started, ended), snapshot in zip(entries, snapshots, strict=True):
            if response is None:  # (`started`: the compaction, `ended`: the next start)
                self._compaction(started, snapshot, ended)
                continue
            self._arrive(response, snapshot, started)
            # The calls known ended when this request closed: decided at the next
            # request's snapshot, which holds their results.
            if ended:
                self.tools.placed.extend(ended)
                for _ in ended:
                    inflight.popleft()
        if self.written:
            self.batch = None  # (what the first request reads of it is read)

    def _earliest(self) -> int:
        """The start of the first call not handed to StreamTools yet (or far ahead)."""
        first = self.inflight[0] if self.inflight else self.later
        return min(self.waiting, first)

    def _compaction(
        self, compaction: Any, snapshot: ContextSnapshot, next_start: int | None
    ) -> None:
        """A compaction and its snapshot: the requests before it written, then the
        Context size (and fill) before it at its start and after it at its end
        (views.iter_context_size), the context categories it moved at its snapshot.
        `next_start`: the start of the request after it (None: none)."""
        self._compaction_begun(compaction, snapshot)
        events = self.events
        # Not where a request starts (the last written, or the next: `_settle`), whose own
        # reported size is the sample of that time (views.iter_context_size).
        starts = (self.committed[0], next_start)
        if compaction.pre_tokens is not None and compaction.start_ns not in starts:
            events.counters_at(compaction.start_ns, self._size(compaction.pre_tokens))
        values: dict[int, int] = {}
        self._context_samples(snapshot, values)
        if values:
            # (before the samples of a request starting then, whose snapshot is later)
            events.counters_at(snapshot.time_ns, values, R_SLICE_BEGIN)
        after = compaction.post_tokens
        if after is not None and compaction.end_ns not in starts:
            events.counters_at(compaction.end_ns, self._size(after))

    def _size(self, size: int) -> dict[int, int]:
        """A Context size sample, with Context fill where it changes (the window of the
        last request written)."""
        values = {self.size_uuid: size}
        if self.has_window:
            self._fill(size, self.last_window, values)
        return values

    # ------------------------------------------------------------------ a request

    def _first(self, response: Response) -> None:
        """What the first request fixes (`OrderedPass._arrive`, before it is written: a
        Codex request starts at the line that triggered it, so one read later starts
        later): the session's key, the facts its arguments read, the track uuids
        (numbered in the group's block as the model path numbers them)."""
        batch = self.batch
        assert batch is not None  # (a request comes in a batch)
        self.key = key = batch.key
        self.has_window = bool(batch.first_window)
        self.session_facts = Session(
            HARNESS,
            key,
            0,
            0,
            (),
            provider=batch.provider or "openai",
            window_tokens=batch.first_window,
        )
        self._uuids(key, bool(self.has_window))

    def _write(
        self, response: Response, snapshot: ContextSnapshot, arrival: int, out: tuple[int, ...]
    ) -> None:
        """A request's slices and samples, in time order."""
        index, previous = self._written(snapshot)
        model = response.model
        if model:
            if model != self.run_model:
                self.run_model = model
                self.run_starts.append(snapshot)
            self.model_last[model] = snapshot
        events = self.events
        if index == 0:
            self._open(self.start, bool(self.has_window))
        # Everything held before this request's start can go, and before the first call
        # not written yet (its slice's events are in time with the rest).
        events.flush(min(response.start_ns, self._earliest(), self._tools_earliest()))
        facts = self.session_facts
        assert facts is not None  # (made at the first request)
        # The window the request states: its own (the journal's, with its usage), said
        # on the first response and where it changes (layout/data.py `stated_windows`).
        own = snapshot.window_tokens or 0
        stated = own if index == 0 or own != self.stated_window else 0
        self.stated_window = own
        args = partial(
            response_args, facts, response, snapshot, previous, stated, self.builder.tools
        )
        if self.has_window and not own:
            raise NotHandled("a request without a window in a session with one")
        self._request(response, snapshot, own if self.has_window else 0, args, arrival, out)


# Read and write one Codex rollout in one pass (stream/requests.py `export_pass`).
export_codex = partial(export_pass, CodexPass)
