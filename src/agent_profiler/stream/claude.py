"""One pass over a Claude Code transcript, its writing side: the reading side
(stream/claude_reading.py: the adapter's own reading driving the transcript's
`SessionBuilder`) hands it batches of data, in this process or from a helper forked on
another core (stream/forked.py), and it never reads the builder. A request's records
share one message id and may be many lines, so a request closes when the next one begins
(a record of a closed request falls back); it is written once its snapshot is replayed
here (a request read later starts later; one that does not falls back): its response
slice with its arguments and `context`, its turn on the same lane, the request counters
and the context categories it moved, its usage totals at its end; its tool calls once
they have ended and their request closed (stream/claude_tools.py), through
stream/tools.py. The session's other tracks are laid out at the end by the track table's
own rows from what the reading kept (stream/end.py).

A compaction (a `compact_boundary` observed after its summary, a microcompaction) is
written when the request after it closes: its Context size before and after, and the
categories it moved; its slice at the end.

The window is a session-wide fact in Claude Code (the model that served most requests
says it, or a `/context` run): guessed at the first request (the first Claude model's),
checked at the end.

What this pass does not do is `NotHandled`, raised before the group's bytes are handed
on (stream/group.py then returns None and the model path reads the group): records of
another agent (sidechains) in the file, a `/context` run, a journal without a readable
time, a record of a request closed already, a response without usage that is not Claude
Code's own `<synthetic>` one, a session without a measured request, two requests at one
time, a request starting before one written already (or before a compaction written),
a compaction before the first request, a call changed after it was written, a fact
guessed at the first request that the end does not confirm."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from agent_profiler.adapters.claude_code import HARNESS
from agent_profiler.adapters.claude_transcript import progress_skip
from agent_profiler.annotations import TraceFacts, response_args
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.layout.types import R_SLICE_BEGIN
from agent_profiler.model import ContextSnapshot, Response, Session, ToolCall
from agent_profiler.stream.calls import UNENDED
from agent_profiler.stream.claude_reading import Batch, ClaudeReading
from agent_profiler.stream.claude_tools import FOREVER, ClaudeTools
from agent_profiler.stream.forked import Reading, fork_reading, read_with
from agent_profiler.stream.log import Additions, NotHandled, StreamLog
from agent_profiler.stream.requests import PASS_UNIQUE_KEYS, OrderedPass, ReadSoFar, export_pass


class ClaudePass(OrderedPass):
    """One Claude Code transcript read and written in one pass (the module's docstring)."""

    builder: ReadSoFar
    tools: ClaudeTools
    COMPACTION_AFTER = True  # (a compaction no later than the request before it falls back)

    def __init__(
        self, path: Path, diagnostics: Diagnostics, facts: TraceFacts, group: int, add: Any
    ) -> None:
        activity = f"{HARNESS.category_prefix}.activity"
        super().__init__(path, facts, group, add, activity, PASS_UNIQUE_KEYS)
        self.diagnostics = diagnostics
        self.log = StreamLog()
        self.builder = ReadSoFar()
        self.additions = Additions(self.builder.tools)
        self.tools = ClaudeTools(
            self.events, self._tool_lane, self._tool_flow, self.additions, self._cwd
        )
        self.batch: Batch | None = None  # the last handed on
        self.window: int | None = None  # the window guessed at the first request
        self.has_window = False
        self.unended: dict[str, int] = {}  # a call taken without an end → its lane

    # ------------------------------------------------------------------ reading

    def read(self) -> Session:
        make = partial(ClaudeReading, self.path, self.diagnostics)
        # (on another core where a helper may run: stream/forked.py)
        reading = fork_reading(make, self.path, self.diagnostics, progress_skip)
        return read_with(reading, make, self._read)

    def _read(self, reading: Reading) -> Session:
        for batch in reading.batches():
            self._take(batch)
        return self._end(reading)

    def _placed(self, ended: list[tuple[Any, int]]) -> list[tuple[ToolCall, int]]:
        """Calls taken, fitted on their lanes in the order taken (one without an end as
        lasting to the session's end, its call given that lane at the end)."""
        place = self.tools.lanes.place
        placed = []
        for call, lane in ended:
            if lane != UNENDED:
                placed.append((call, place(call.start_ns, call.end_ns)[0]))
            elif call.__class__ is ToolCall:
                placed.append((call, self.unended.pop(call.call_id)))
            else:
                self.unended[call.call_id] = place(call.start_ns, FOREVER)[0]
        return placed

    def _take(self, batch: Batch) -> None:
        """A batch read: what it says of the transcript so far, its requests and
        compactions each with its snapshot (its entries replayed in one loop), in order."""
        self.builder.take(batch.prompts, batch.calls, batch.project)
        if batch.named is not None:
            self.tools.named = batch.named
        self.batch = batch
        entries = []
        for response, started, ended in batch.entries:
            if response is not None and ended:
                ended = self._placed(ended)
            entries.append((response, started, ended))
        snapshots = iter(self.log.snapshots_of(batch.ops) if batch.ops else ())
        for response, started, ended in entries:
            if response is None:  # (`started`: the compaction, `ended`: the request after)
                snapshot = next(snapshots, None)
                if snapshot is None:
                    raise NotHandled("a compaction without its snapshot")
                self._compaction(started, snapshot, ended)
                continue
            if response is not False:
                snapshot = next(snapshots, None)
                if snapshot is None:
                    raise NotHandled("a snapshot of something other than a request")
                self._arrive(response, snapshot, started)  # type: ignore[arg-type]
            # The calls taken when this response closed: decided at the next snapshot,
            # which holds their results.
            if ended:
                self.tools.placed.extend(ended)
        if next(snapshots, None) is not None:
            raise NotHandled("a snapshot of no request")
        if self.written:
            # Everything held before the last request's start can go, and before the
            # first call not written yet (its slice's events are in time with the rest):
            # encoded in one loop of its own, after the batch's requests.
            start = self.committed[0]
            self.events.flush(min(start, batch.waiting, batch.later, self._tools_earliest()))
            self.batch = None  # (what the first request reads of it is read)

    # ------------------------------------------------------------------ a compaction

    def _compaction(
        self, compaction: Any, snapshot: ContextSnapshot, following: tuple[int, int] | None
    ) -> None:
        """A compaction and its snapshot: the requests before it written, then the
        Context size (and fill) before it at its start and after it at its end
        (views.iter_context_size), the context categories it moved at its snapshot.
        `following`: the start and reported size of the request after it (None: none)."""
        self._compaction_begun(compaction, snapshot)
        if compaction.start_ns < self.committed[0]:
            raise NotHandled("a compaction starting before a request written already")
        events = self.events
        # The size after (views.compactions_after): the harness's figure, else the next
        # request's (its start `at`).
        after = compaction.post_tokens
        if after is None and following is not None:
            after = following[1]
        at = following[0] if following is not None else None
        # The Context size samples in the model's order (views.iter_context_size): the
        # size before at its start, the size after at its end; not where the next request
        # starts, whose own reported size is the sample of that time. Samples of one time
        # are one (the last: writers/perfetto.py `_counter_packets`).
        samples: list[tuple[int, int]] = []
        if compaction.pre_tokens is not None:
            samples.append((compaction.start_ns, compaction.pre_tokens))
        if after is not None:
            samples.append((compaction.end_ns, after))
        sizes: dict[int, list[int]] = {}
        for ts, size in samples:
            if ts == self.committed[0]:
                # (a compaction reaching back to a request written already: its categories
                # there are that request's packet's, which is out)
                raise NotHandled("a compaction's size at a request's start written already")
            if ts != at:
                sizes.setdefault(ts, []).append(size)
        for ts, told in sizes.items():
            events.counters_at(ts, self._sizes(told))
        values: dict[int, int] = {}
        self._context_samples(snapshot, values)
        if values:
            # (before the samples of a request starting then, whose snapshot is later)
            events.counters_at(snapshot.time_ns, values, R_SLICE_BEGIN)

    def _sizes(self, sizes: list[int]) -> dict[int, int]:
        """The Context size and fill samples of `sizes` told at one time (one sample of
        each: the last; Context fill as the model's repeats rule leaves it: a sample
        unless every fill told there repeats the one before)."""
        values = {self.size_uuid: sizes[-1]}
        window = self.window
        if window:
            fills = [-(-size * 100 // window) for size in sizes]
            if any(fill != self.last_fill for fill in fills):
                values[self.fill_uuid] = fills[-1]
            self.last_fill = fills[-1]
        return values

    # ------------------------------------------------------------------ a request

    def _first(self, response: Response) -> None:
        """What the first request fixes (its batch says: the reading side fixed it as the
        request closed): the session's key, the facts its arguments read (the window
        guessed: the first Claude model's), the track uuids."""
        batch = self.batch
        assert batch is not None  # (a request comes in a batch)
        self.key = key = batch.key
        self.window = window = batch.window
        self.has_window = bool(window)
        self.session_facts = Session(
            HARNESS, key, 0, 0, (), provider="anthropic", window_tokens=window
        )
        self._uuids(key, self.has_window)

    def _write(
        self, response: Response, snapshot: ContextSnapshot, arrival: int, out: tuple[int, ...]
    ) -> None:
        """A request's slices and samples, in time order."""
        index, previous = self._written(snapshot)
        if index == 0:
            assert self.batch is not None
            self._open(self.batch.start, self.has_window)
        facts = self.session_facts
        assert facts is not None  # (made at the first request)
        window = facts.window_tokens or 0
        args = partial(
            response_args,
            facts,
            response,
            snapshot,
            previous,
            window if index == 0 else 0,
            self.builder.tools,
        )
        self._request(response, snapshot, window, args, arrival, out)

    # ------------------------------------------------------------------ the end

    def _end(self, reading: Reading) -> Session:
        """The calls left, the checks, and the session as the reading side's `finish`
        makes it from what the end reads."""
        ending = reading.ending()
        if self.written == 0:
            raise NotHandled("no measured request")
        if ending.end_ns is None:
            raise NotHandled("no session")
        tools = self.tools
        self.builder.project = ending.project
        tools.placed.extend(self._placed(ending.rest))
        tools.named = ending.named
        tools.decide()
        marked = tools.relink(ending.children)
        # (the largest additions' calls: their drafts may be let go, the end reads them)
        own = {call_id: call for call_id, (call, _) in tools.held.items()}
        tools.finish(self.key, ending.end_ns)
        if tools.cwd_used and tools.cwd_used[0] != ending.project:
            raise NotHandled("a call's path target made safe before the session's cwd")
        self.events.flush()
        kept = {id(x): x for x in self.compaction_snapshots}
        for snapshot in self.additions.snapshots():
            kept.setdefault(id(snapshot), snapshot)
        # (the model's order: the log's, which is the requests' here)
        left = sorted(kept.values(), key=lambda x: x.time_ns)
        needed = set(self.additions.causes)
        if ending.compactions:  # (stream/end.py: the calls the end's snapshots name)
            needed.update(c.source_id for x in left for c in x.changes)
        session, ops = reading.finish((needed, marked, set(own)))
        more = self.log.snapshots_of(ops) if ops else []
        have = {call.call_id for call in session.tool_calls}
        mine = tuple(call for call_id, call in own.items() if call_id not in have)
        return replace(
            session,
            tool_calls=(*session.tool_calls, *mine),
            snapshots=(*left, *more),
        )


# Read and write one Claude Code transcript in one pass (stream/requests.py `export_pass`).
export_claude = partial(export_pass, ClaudePass)
