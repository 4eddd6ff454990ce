"""One pass over a Pi journal (adapters/pi.py's reading, line by line): each request is
written once it is read and no request read later can start before it (`REORDER_NS`):
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
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Any

from agent_profiler.adapters.common import assumed_model_window, journal_clock
from agent_profiler.adapters.drafts import CompactionDraft, ToolDraft
from agent_profiler.adapters.pi import HARNESS, SessionBuilder
from agent_profiler.annotations import TraceFacts, response_args
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.jsonl import read_jsonl
from agent_profiler.layout.types import (
    R_COUNTER,
)
from agent_profiler.model import AnchorKind, ContextSnapshot, Response, Session
from agent_profiler.stream.end import trim_calls
from agent_profiler.stream.log import Additions, NotHandled, StreamLog
from agent_profiler.stream.requests import RequestPass, export_pass
from agent_profiler.stream.tools import StreamTools

# A request's start can come before the one read before it (a Pi message's time is when it
# was created): requests wait this long (in journal time) to be written in time order.
REORDER_NS = 600 * 1_000_000_000
# Lines read between two replays of the log (and the requests' writing): each stage runs
# as a loop of its own over a few hundred lines, not interleaved line by line (which ran
# 3-4% fewer instructions than the model path but took 15% more time on the 50 MB bench:
# a third more instruction cache misses).
BATCH_LINES = 256


class _Calls:
    """The call ids of the Tools slices so far, read from the builder's drafts: every call
    of a response that did not fail, and one of a failed response once its result came."""

    __slots__ = ("tools",)

    def __init__(self, tools: dict[str, Any]) -> None:
        self.tools = tools

    def __contains__(self, call_id: object) -> bool:
        tool = self.tools.get(call_id)  # type: ignore[call-overload]
        return tool is not None and (tool.end_ns is not None or not tool.from_failed_response)


class PiPass(RequestPass):
    """One Pi journal read and written in one pass (see the module's docstring)."""

    builder: SessionBuilder

    def __init__(
        self, path: Path, diagnostics: Diagnostics, facts: TraceFacts, group: int, add: Any
    ) -> None:
        super().__init__(path, facts, group, add, "pi.activity")
        self.diagnostics = diagnostics
        self.log = StreamLog()
        self.builder = SessionBuilder(str(path), diagnostics, log=self.log)
        self.calls = _Calls(self.builder.tools)
        self.additions = Additions(self.calls)
        # messages read, until their snapshots are replayed: (a request, the calls begun)
        self.queue: list[
            tuple[Response | None, list[ToolDraft] | None, CompactionDraft | None]
        ] = []
        self.compactions_seen = 0
        # each compaction's snapshot and the one before it in time (the end lays the
        # compactions out: stream/end.py)
        self.kept: list[ContextSnapshot] = []
        self.arrived = 0  # responses read
        # Requests read and not written yet, by (start, end, id), until no later one can
        # start before them (REORDER_NS), and the last written.
        # (a compaction's: no response, its draft in the arrival's place)
        self.pending: list[tuple[tuple[int, int, str], Any, ContextSnapshot, Any, Any]] = []
        self.latest = -(2**63)
        self.committed: tuple[int, int, str] | None = None
        self.tools_seen = 0
        self.tools = StreamTools(
            self.events, self._tool_lane, self._tool_flow, self.additions, self._cwd
        )

    # ------------------------------------------------------------------ reading

    def read(self) -> Session:
        builder = self.builder
        on_record = builder.on_record
        clock = journal_clock(self.path, self.diagnostics, str(self.path))
        tools, queue = builder.tools, self.queue
        lines = 0
        for line, value in read_jsonl(self.path, self.diagnostics):
            on_record(value, line, clock)
            arrived = len(builder.responses) > self.arrived
            started = len(tools) != self.tools_seen
            if len(builder.compactions) > self.compactions_seen:
                self.compactions_seen += 1
                queue.append((None, None, builder.compactions[-1]))
            if arrived or started:
                # A message: queued with what only this moment tells (the calls it
                # started, open now), until its snapshot is replayed.
                response = None
                if arrived:
                    self.arrived += 1
                    response = builder.responses[-1]
                drafts: list[ToolDraft] | None = None
                if started:  # (the open calls are the message's own)
                    self.tools_seen = len(tools)
                    drafts = [t for t in builder.open_tools if not t.from_failed_response]
                queue.append((response, drafts, None))
            lines += 1
            if lines >= BATCH_LINES and queue:
                self._drain()
                lines = 0
        self._drain()
        if not builder.responses:
            return self._no_request()
        if any(t.from_failed_response and t.end_ns is not None for t in builder.tools.values()):
            # Its response's flows were written without it (a failed response's calls
            # never ran, as a rule).
            raise NotHandled("a call of a failed response with a result")
        self._commit(None)
        if builder.end_ns is None:
            raise NotHandled("no session")
        self.tools.finish(self.key, builder.end_ns)
        if self.tools.cwd_used and self.tools.cwd_used[0] != builder.project:
            raise NotHandled("a call's path target made safe before the session's cwd")
        self.events.flush()
        left = {id(x): x for x in [*self.additions.snapshots(), *self.kept]}
        self.log.left = sorted(left.values(), key=lambda x: x.time_ns)
        if not builder.compactions:  # (a compaction's `context` reads every call id)
            trim_calls(self)
        session = builder.finish()
        if session is None:
            raise NotHandled("no session")
        return session

    def _no_request(self) -> Session:
        """A session without a measured request (a fork that made none of its own, say):
        nothing was written; its snapshot is the one the builder observes at its end, and
        the end lays the whole session out (stream/end.py)."""
        builder = self.builder
        if (
            builder.compactions
            or self.pending
            or any(not t.from_failed_response for t in builder.tools.values())
        ):
            raise NotHandled("compactions or calls without a measured request")
        session = builder.finish()
        if session is None:
            raise NotHandled("no session")
        return session

    def _drain(self) -> None:
        """The messages queued, in order, each request with its snapshot (the log's
        entries since the last drain replayed in one loop)."""
        snapshots = iter(self.log.replayed())
        tools = self.tools
        request = AnchorKind.RESPONSE  # (a class's attribute: looked up once a batch)
        for response, drafts, compaction in self.queue:
            if compaction is not None:
                snapshot = next(snapshots, None)
                if (
                    snapshot is None
                    or snapshot.anchor is not AnchorKind.COMPACTION
                    or snapshot.anchor_id != compaction.id
                ):
                    raise NotHandled("a compaction without its snapshot")
                self._compaction(compaction, snapshot)
                continue
            # A message: the calls of the one before have all ended (moved on).
            if tools.group:
                tools.ended()
            if response is not None:
                snapshot = next(snapshots, None)
                if snapshot is None or snapshot.anchor is not request:
                    raise NotHandled("a snapshot of something other than a request")
                self._arrive(response, snapshot, drafts or ())
            if drafts is not None:
                tools.started(drafts)
        self.queue.clear()
        if next(snapshots, None) is not None:
            raise NotHandled("a snapshot of no request")
        self._commit(self.latest - REORDER_NS)

    # ------------------------------------------------------------------ a request

    def _start(self, response: Response) -> None:
        """What the first request fixes: the session's key, the facts its arguments read,
        the capture's uuid (the tracks are numbered in the group's block)."""
        builder = self.builder
        self.key = key = builder.session_id or Path(builder.path).name.split(".")[0]
        provider = builder.providers[0] if builder.providers else builder.header_provider
        window, _ = assumed_model_window([response])
        # What a response's arguments read of the session (`response_args`): guessed at
        # the first request, checked at the end (stream/end.py).
        self.session_facts = Session(
            HARNESS, key, 0, 0, (), provider=provider, window_tokens=window
        )
        self._uuids(key, bool(window))

    def _arrive(
        self, response: Response, snapshot: ContextSnapshot, drafts: Iterable[ToolDraft]
    ) -> None:
        """A request as it is read: what only its moment in the journal tells (its
        snapshot, its flows, its additions); it waits in `pending` to be written in time
        order. `drafts`: the calls its message started."""
        if snapshot.anchor_id != response.id:
            raise NotHandled("a request without its snapshot")
        if self.session_facts is None:
            self._start(response)
        # Flows: from its prompt's input; to each tool call it started (calls by id:
        # they all start at its entry; the calls its message started are the open ones,
        # a new entry closes the rest).
        started = sorted(t.call_id for t in drafts if t.response_id == response.id)
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
        start = self.builder.start_ns
        assert start is not None  # (a request was read)
        facts = self.session_facts
        self._open(start, facts is not None and bool(facts.window_tokens))


# Read and write one Pi journal in one pass (stream/requests.py `export_pass`).
export_pi = partial(export_pass, PiPass)
