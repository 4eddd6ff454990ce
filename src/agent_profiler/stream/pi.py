"""One pass over a Pi journal, its writing side: the reading side (stream/pi_reading.py:
the adapter's own builder fed line by line) hands it batches of data, in this process or
from a helper forked on another core (stream/forked.py), and it never reads the builder.
Each request is written once it is read and no request read later can start before it
(`REORDER_NS`):
its response slice with its arguments and `context` (the snapshot replayed as the
request is logged: stream/log.py), its turn on the same lane, the request counters and
the context categories it moved, its usage totals at its end; its tool calls as they end
(stream/tools.py); a compaction's samples in the same time order. The session's other
tracks (the capture and its facts, prompts and their inputs, failed requests,
compactions, configuration, largest additions) are laid out at the end by the track
table's own rows from what the reading kept (stream/end.py).

What this pass does not do is `NotHandled`, raised before the group's bytes are handed
on (stream/group.py then returns None and the model path reads the group): a session
without a measured request, a compaction before the first request, two requests at one
time, a request starting before one written already, an addition caused by a call
written already, a fact guessed at the first request (the provider, the window, the
session id, the session's start, the cwd a path is made safe with) that the end does not
confirm."""

from __future__ import annotations

import heapq
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from agent_profiler.adapters.common import assumed_model_window
from agent_profiler.adapters.drafts import CompactionDraft
from agent_profiler.adapters.pi import HARNESS
from agent_profiler.annotations import TraceFacts, response_args
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.layout.types import (
    R_COUNTER,
)
from agent_profiler.model import AnchorKind, ContextSnapshot, Response, Session
from agent_profiler.stream.forked import Reading, fork_reading, read_with
from agent_profiler.stream.log import Additions, NotHandled, StreamLog
from agent_profiler.stream.pi_reading import Batch, Ending, PiReading
from agent_profiler.stream.requests import PASS_UNIQUE_KEYS, ReadSoFar, RequestPass, export_pass
from agent_profiler.stream.tools import StreamTools

# A request's start can come before the one read before it (a Pi message's time is when it
# was created): requests wait this long (in journal time) to be written in time order.
REORDER_NS = 600 * 1_000_000_000
# The reading runs in a helper on another core (stream/forked.py) only for a journal of at
# most this many bytes. Each process holds its side of the session: the reading side the
# responses' ids and ends, the calls' drafts, the context's items, and the entry tree (of
# a chain, only the entries since the last request: `LET_GO_AFTER`); the writing side the
# responses and what the end lays out. Their peak together (the bench's Pi journal
# replayed): 72 MB at 30 MB, 92-93 MB at 50 MB, 99 MB at 55 MB, where one process peaks
# at 77 MB at 50 MB; past this the pair would pass the export's 100 MB target
# (docs/performance.md), and the reading stays in this process.
FORK_UNTIL = 52 * 2**20
# From this many bytes a helper's reading lets go of the entries a chain no longer reads
# (stream/pi_reading.py), reading the journal again if it turns out to (`ReadAgain`).
LET_GO_AFTER = 24 * 2**20


class PiPass(RequestPass):
    """One Pi journal read and written in one pass (see the module's docstring)."""

    builder: ReadSoFar

    def __init__(
        self, path: Path, diagnostics: Diagnostics, facts: TraceFacts, group: int, add: Any
    ) -> None:
        super().__init__(path, facts, group, add, "pi.activity", PASS_UNIQUE_KEYS)
        self.diagnostics = diagnostics
        self.log = StreamLog()
        self.builder = ReadSoFar()
        # the call ids of the Tools slices so far: every call of a response that did not
        # fail (one of a failed response with a result makes the pass fall back)
        self.calls = self.builder.tools
        self.additions = Additions(self.calls)
        # each compaction's snapshot and the one before it in time (the end lays the
        # compactions out: stream/end.py)
        self.kept: list[ContextSnapshot] = []
        self.arrived = 0  # responses read
        self.compactions_taken = 0
        # Requests read and not written yet, by (start, end, id), until no later one can
        # start before them (REORDER_NS), and the last written.
        # (a compaction's: no response, its draft in the arrival's place)
        self.pending: list[tuple[tuple[int, int, str], Any, ContextSnapshot, Any, Any]] = []
        self.latest = -(2**63)
        self.committed: tuple[int, int, str] | None = None
        self.batch: Batch | None = None  # the last taken
        self.tools = StreamTools(
            self.events, self._tool_lane, self._tool_flow, self.additions, self._cwd
        )

    # ------------------------------------------------------------------ reading

    def read(self) -> Session:
        # (on another core where a helper may run, and its memory fits: stream/forked.py)
        size = _size(self.path)
        # (read again after a lean reading let go of too much: in this process)
        helped = self.lean and size <= FORK_UNTIL
        let_go = size >= LET_GO_AFTER
        lean = partial(PiReading, self.path, self.diagnostics, lean=True, let_go=let_go)
        reading = fork_reading(lean, self.path, self.diagnostics) if helped else None
        return read_with(reading, partial(PiReading, self.path, self.diagnostics), self._read)

    def _read(self, reading: Reading) -> Session:
        for batch in reading.batches():
            self._take(batch)
        ending = reading.ending()
        if self.arrived == 0:
            return self._no_request(reading, ending)
        if ending.refused is not None:
            raise NotHandled(ending.refused)
        self._commit(None)
        if ending.end_ns is None:
            raise NotHandled("no session")
        tools = self.tools
        if ending.rest:
            tools.fit(ending.rest)
        tools.finish(self.key, ending.end_ns)
        if tools.cwd_used and tools.cwd_used[0] != ending.project:
            raise NotHandled("a call's path target made safe before the session's cwd")
        self.events.flush()
        left = {id(x): x for x in [*self.additions.snapshots(), *self.kept]}
        snapshots = sorted(left.values(), key=lambda x: x.time_ns)
        # (a compaction's `context` reads every call id: then every call is kept)
        needed = None if self.compactions_taken else set(self.additions.causes)
        session, more = reading.finish(needed)
        return replace(session, snapshots=(*snapshots, *more))

    def _no_request(self, reading: Reading, ending: Ending) -> Session:
        """A session without a measured request (a fork that made none of its own, say):
        nothing was written; its snapshot is the one the builder observes at its end, and
        the end lays the whole session out (stream/end.py)."""
        if not ending.bare or self.pending:
            raise NotHandled("compactions or calls without a measured request")
        session, more = reading.finish(None)
        return replace(session, snapshots=tuple(more))

    def _take(self, batch: Batch) -> None:
        """A batch read: what it says of the journal so far, its messages and compactions
        in order, each request with its snapshot (its entries replayed in one loop); then
        the requests no later one can start before written."""
        self.builder.take(batch.prompts, batch.calls, batch.project)
        self.batch = batch
        snapshots = iter(batch.snapshots)
        tools = self.tools
        request = AnchorKind.RESPONSE  # (a class's attribute: looked up once a batch)
        for response, started, ended in batch.entries:
            if response is None:  # a compaction (`started`: its draft)
                snapshot = next(snapshots, None)
                if (
                    snapshot is None
                    or snapshot.anchor is not AnchorKind.COMPACTION
                    or snapshot.anchor_id != started.id
                ):
                    raise NotHandled("a compaction without its snapshot")
                self.compactions_taken += 1
                self._compaction(started, snapshot)
                continue
            # A message: the calls of the one before have all ended (moved on).
            if ended is not None:
                tools.fit(ended)
            if response is not False:
                snapshot = next(snapshots, None)
                if snapshot is None or snapshot.anchor is not request:
                    raise NotHandled("a snapshot of something other than a request")
                self.arrived += 1
                self._arrive(response, snapshot, started or [])  # type: ignore[arg-type]
        if next(snapshots, None) is not None:
            raise NotHandled("a snapshot of no request")
        self._commit(self.latest - REORDER_NS)

    # ------------------------------------------------------------------ a request

    def _start(self, response: Response) -> None:
        """What the first request fixes: the session's key, the facts its arguments read,
        the capture's uuid (the tracks are numbered in the group's block)."""
        batch = self.batch
        assert batch is not None  # (a request comes in a batch)
        self.key = key = batch.key
        provider = batch.provider
        window, _ = assumed_model_window([response])
        # What a response's arguments read of the session (`response_args`): guessed at
        # the first request, checked at the end (stream/end.py).
        self.session_facts = Session(
            HARNESS, key, 0, 0, (), provider=provider, window_tokens=window
        )
        self._uuids(key, bool(window))

    def _arrive(self, response: Response, snapshot: ContextSnapshot, started: list[str]) -> None:
        """A request as it is read: what only its moment in the journal tells (its
        snapshot, its flows, its additions); it waits in `pending` to be written in time
        order. `started`: the ids of the calls its message started, sorted."""
        if snapshot.anchor_id != response.id:
            raise NotHandled("a request without its snapshot")
        if self.session_facts is None:
            self._start(response)
        # Flows: from its prompt's input; to each tool call it started (calls by id:
        # they all start at its entry; the calls its message started are the open ones,
        # a new entry closes the rest).
        arrival, out = self._flows(response, started)
        self.additions.take(snapshot)
        self.tools.decide()
        order = (response.start_ns, response.end_ns, response.id)
        if self.committed is not None and order < self.committed:
            raise NotHandled("a request that starts before one written already")
        heapq.heappush(self.pending, (order, response, snapshot, arrival, out))
        self.latest = max(self.latest, response.start_ns)

    def _commit(self, before: int | None) -> None:
        """Write the requests waiting that start before `before` (None: all), in time
        order."""
        pending = self.pending
        written = None
        while pending and (before is None or pending[0][0][0] < before):
            order, response, snapshot, arrival, out = heapq.heappop(pending)
            self.committed = order
            if response is None:
                self._write_compaction(snapshot, arrival, before is None)
            else:
                self._write(response, snapshot, arrival, out)
            written = order[0]
        if written is not None:
            # Everything held before the last one's start can go: no later event comes
            # before it (a loop of its own: the encoding).
            self.events.flush(written)

    def _compaction(self, compaction: CompactionDraft, snapshot: ContextSnapshot) -> None:
        """A compaction as it is read: its snapshot waits with the requests, in time order."""
        if self.session_facts is None:
            raise NotHandled("a compaction before the first request")
        if compaction.request is not None:  # (its usage in the token counters: not written)
            raise NotHandled("a compaction with a request of its own")
        self.additions.take(snapshot)
        order = (snapshot.time_ns, snapshot.time_ns, compaction.id)
        if self.committed is not None and order < self.committed:
            raise NotHandled("a compaction before a request written already")
        heapq.heappush(self.pending, (order, None, snapshot, compaction, ()))
        self.latest = max(self.latest, snapshot.time_ns)

    def _write_compaction(
        self, snapshot: ContextSnapshot, compaction: CompactionDraft, at_end: bool
    ) -> None:
        """A compaction's samples, in time order (views.iter_context_size): the context's
        size before it at its start, the size after it (the next request's) at its end with
        the context categories it left; its slice is the end's (stream/end.py)."""
        previous = self.previous
        if previous is not None and previous.time_ns >= snapshot.time_ns:
            raise NotHandled("a compaction at the time of a request")
        if previous is not None:
            self.kept.append(previous)
        self.kept.append(snapshot)
        self.previous = snapshot
        if self.written == 0:
            self._opening()
        last = previous.time_ns if previous is not None else -1
        if compaction.pre_tokens is not None:
            if compaction.start_ns <= last:
                raise NotHandled("a compaction starting before the request before it")
            values = self._size(compaction.pre_tokens, {})
            self.events.counters(compaction.start_ns, R_COUNTER, values)
        # The size after: the first request starting at or after its end (still waiting).
        following = min(
            (item[1] for item in self.pending if item[1] is not None),
            key=lambda r: (r.start_ns, r.end_ns, r.id),
            default=None,
        )
        if following is None and not at_end:
            raise NotHandled("the request after a compaction read too late")
        end = compaction.end_ns
        values = {}
        if following is not None and following.start_ns != end:
            self._size(following.usage.prompt_tokens, values)
        self._context_samples(snapshot, values)
        if values:
            self.events.counters(end, R_COUNTER, values)

    def _size(self, size: int, values: dict[int, int]) -> dict[int, int]:
        """`Context size` and `Context fill` samples of a size (the fill where it moves)."""
        values[self.size_uuid] = size
        facts = self.session_facts
        window = facts.window_tokens if facts is not None else None
        if window:
            self._fill(size, window, values)
        return values

    def _write(
        self,
        response: Response,
        snapshot: ContextSnapshot,
        arrival: int,
        out: tuple[int, ...],
    ) -> None:
        """A request's slices and samples, in time order (layout/data.py: the snapshot
        before it in time, its lane, the window it states)."""
        index = self.written
        self.written += 1
        previous = self.previous
        if previous is not None and previous.time_ns == snapshot.time_ns:
            raise NotHandled("two requests at one time")
        self.previous = snapshot
        if index == 0:
            self._opening()
        facts = self.session_facts
        assert facts is not None  # (made at the first request)
        window = facts.window_tokens if index == 0 else 0
        args = partial(response_args, facts, response, snapshot, previous, window, self.calls)
        # The request counters (layout/counters.py `session_counters`): at its start, the
        # context's size (every sample kept), window and fill (where they change), in one
        # packet with the context categories; the running usage totals at its end, in the
        # order the requests end (made when written).
        self._request(response, snapshot, facts.window_tokens or 0, args, arrival, out)

    def _opening(self) -> None:
        """The request counters' opening zeros, at the session's start (`_open`)."""
        start = self.batch.start if self.batch is not None else None
        assert start is not None  # (a request was read)
        facts = self.session_facts
        self._open(start, facts is not None and bool(facts.window_tokens))


def _size(path: Path) -> int:
    """The journal's size in bytes (past `FORK_UNTIL` when it cannot be told)."""
    try:
        return path.stat().st_size
    except OSError:
        return FORK_UNTIL + 1


# Read and write one Pi journal in one pass (stream/requests.py `export_pass`).
export_pi = partial(export_pass, PiPass)
