"""One pass over a Claude Code transcript (the adapter's own reading,
adapters/claude_transcript.py's `transcript_lines`, driving the transcript's
`SessionBuilder`, its context log a `ClaudeLog`): a request's records share one message
id and may be many lines, so a
request closes when the next one begins (a record of a closed request falls back); it is
settled then as the builder's `finish` settles it (its reported size, the session's
window, its hidden thinking sized) and written once its snapshot is replayed (a request
read later starts later; one that does not falls back): its response slice with its
arguments and `context`, its turn on the same lane, the request counters and the context
categories it moved, its usage totals at its end; its tool calls once they have ended
and their request closed (stream/claude_tools.py), through stream/tools.py. The
session's other tracks are laid out at the end by the track table's own rows from what
the reading kept (stream/end.py).

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

from collections.abc import Generator, Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from agent_profiler.adapters.claude_code import HARNESS, _link_subagents
from agent_profiler.adapters.claude_context import assumed_window
from agent_profiler.adapters.claude_response import ResponseDraft
from agent_profiler.adapters.claude_session import SessionBuilder
from agent_profiler.adapters.claude_transcript import Reading, transcript_lines
from agent_profiler.adapters.common import believed_times
from agent_profiler.annotations import TraceFacts, response_args
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.layout.types import R_SLICE_BEGIN
from agent_profiler.links import with_unread_children
from agent_profiler.model import ContextSnapshot, Response, Session, ToolCall
from agent_profiler.stream.claude_tools import ClaudeCalls, ClaudeLog, ClaudeTools
from agent_profiler.stream.emit import Events
from agent_profiler.stream.log import Additions, NotHandled
from agent_profiler.stream.requests import OrderedPass, export_pass
from agent_profiler.writers.events import UNIQUE_STRING_KEYS, EventEncoder
from agent_profiler.writers.perfetto import sequence_of

# Records read further (not progress, not file-history snapshots) between two replays of
# the log, the requests' writing and their encoding (stream/pi.py's BATCH_LINES: each
# stage a loop of its own over a few hundred records; 64 and 2,048 took the same time on
# the 100 MB bench, 2,048 2 MB more memory).
BATCH_LINES = 256
SYNTHETIC = "<synthetic>"  # Claude Code's own reply to an API error: no request
PASS_UNIQUE_KEYS = UNIQUE_STRING_KEYS | {"call_id", "source_id"}


class _Closed:
    """A request closed and settled, in the builder's `responses` in its draft's place:
    its `Response`, made once, which `builder.finish` hands on (the draft, its usage dict
    and the model made again at the end were a long session's most per-request memory)."""

    __slots__ = ("observation", "response")
    is_request = True
    hidden = None  # (settled)

    def __init__(self, response: Response, observation: Any) -> None:
        self.response = response
        self.observation = observation

    @property
    def model(self) -> str:
        return self.response.model

    @property
    def prompt_tokens(self) -> int:
        return self.response.usage.prompt_tokens

    def finish(self) -> Response:
        return self.response


class ClaudePass(OrderedPass):
    """One Claude Code transcript read and written in one pass (the module's docstring)."""

    builder: SessionBuilder
    calls: ClaudeCalls
    tools: ClaudeTools
    COMPACTION_AFTER = True  # (a compaction no later than the request before it falls back)

    def __init__(
        self, path: Path, diagnostics: Diagnostics, facts: TraceFacts, group: int, add: Any
    ) -> None:
        super().__init__(path, facts, group, add, f"{HARNESS.category_prefix}.activity")
        self.diagnostics = diagnostics
        self.log = ClaudeLog()
        self.reading = Reading(self._new_log)
        # Call and source ids not interned: the table of a long session's interned
        # strings (≈ 1 MB on the 100 MB bench) grew with every call and response.
        self.encoder = EventEncoder(sequence_of(group), unique=PASS_UNIQUE_KEYS)
        self.events = Events(self.encoder, add, self.events.activity)
        self.additions = Additions(())  # (its calls: the builder's drafts, `_begin`)
        self.tools = ClaudeTools(
            self.events, self._tool_lane, self._tool_flow, self.additions, self._cwd
        )
        # Observations logged, in the log's order, until their snapshots are replayed:
        # [draft, response (None: open, or no request), started, ended calls] of a
        # response; [compaction, None, None, None] of a compaction.
        self.queue: list[list[Any]] = []
        self.open: ResponseDraft | None = None  # the response whose records may still come
        self.arrived = 0  # response drafts seen
        self.compactions_seen = 0  # compactions whose observation is logged
        self.unsettled: list[Any] = []  # compactions waiting for the request after them
        self.after: dict[str, tuple[int, int]] = {}  # compaction id → next request's
        self.has_window = False
        self.logs = 0  # logs handed to the reading's builders

    def _new_log(self) -> ClaudeLog:
        """The log of the file's first thread; another thread is a sidechain's."""
        self.logs += 1
        if self.logs > 1:
            raise NotHandled("records of another agent (a sidechain) in the file")
        return self.log

    # ------------------------------------------------------------------ reading

    def read(self) -> Session:
        lines = transcript_lines(self.path, self.diagnostics, self.reading)
        try:
            return self._run(lines)
        finally:
            lines.close()  # (its file, when the pass stops before the end)

    def _run(self, lines: Generator[dict[str, Any]]) -> Session:
        reading = self.reading
        builder: SessionBuilder | None = None
        for value in lines:  # (until the file's first thread is made)
            builder = reading.builders.get("")
            if builder is not None:
                self._begin(builder)
                self._after_record(builder)
                if value.get("type") == "assistant":
                    self._check_assistant(builder, value)
                break
        if builder is not None:
            self._read(builder, lines)
        if builder is None:
            raise NotHandled("no session")
        builder.flush_post_compaction()  # (as `finish` does first)
        self._after_record(builder)
        if reading.builders.keys() != {""}:
            raise NotHandled("records of another agent (a sidechain) in the file")
        if builder.native_runs:
            raise NotHandled("a /context run")
        if any(fact == ("clock", "synthetic") for fact in builder.facts):
            raise NotHandled("no readable time in the journal")
        if self.open is not None:
            self.calls.open_id = None
            self._close(builder, self.open)
        for compaction in self.unsettled:  # (no request after it: as `finish` settles it)
            self.log.settle_early(compaction.observation, window_tokens=self.log.window)
        self.unsettled = []
        self._drain()
        return self._end(builder)

    def _read(self, builder: SessionBuilder, lines: Iterator[dict[str, Any]]) -> None:
        """The rest of the records: what each did is looked at only where it changed
        the number of responses, calls or compactions (most records are read no
        further); an assistant record is checked before it is read."""
        queue, calls = self.queue, self.calls
        responses, tools, compactions = builder.responses, builder.tools, builder.compactions
        count = 0
        for value in lines:
            if (
                len(responses) != self.arrived
                or len(tools) != calls.seen
                or len(compactions) != self.compactions_seen
            ):
                self._after_record(builder)
            if value.get("type") == "assistant":
                self._check_assistant(builder, value)
            count += 1
            if count >= BATCH_LINES and queue:
                self._drain()
                count = 0

    def _begin(self, builder: SessionBuilder) -> None:
        self.builder = builder
        self.calls = ClaudeCalls(builder, self.tools)
        self.additions.calls = self.calls.known  # (the Tools slices' ids: every draft's)
        self.tools.named = self.calls.agent_calls
        self.tools.let_go = self.calls.let_go

    def _after_record(self, builder: SessionBuilder) -> None:
        """What the record before did: a compaction observed, a response begun (the one
        before it closed), calls made."""
        compactions = builder.compactions
        while self.compactions_seen < len(compactions):
            compaction = compactions[self.compactions_seen]
            if compaction.observation is None:  # (waiting for its summary record)
                break
            self.compactions_seen += 1
            self.unsettled.append(compaction)
            self.queue.append([compaction, None, None, None])
        if len(builder.tools) != self.calls.seen:
            self.calls.created()
        responses = builder.responses
        if len(responses) != self.arrived:
            self.arrived += 1
            draft = next(reversed(responses.values()))
            self.calls.open_id = draft.id  # (its calls wait for it to close)
            if self.open is not None:
                self._close(builder, self.open)
            self.open = draft
            self.queue.append([draft, None, None, None])

    def _check_assistant(self, builder: SessionBuilder, value: dict[str, Any]) -> None:
        """An assistant record about to be read: one of the open response, or a new one."""
        message = value.get("message")
        if message.__class__ is not dict:
            return
        message_id = message.get("id")
        if message_id.__class__ is not str or not message_id:
            raise NotHandled("an assistant record without a message id")
        if message_id in builder.responses and (self.open is None or message_id != self.open.id):
            raise NotHandled("a record of a request closed already")

    def _close(self, builder: SessionBuilder, draft: ResponseDraft) -> None:
        """A response's records are all read: settled as `finish` settles it."""
        self.open = None
        log = self.log
        if self.session_facts is None and draft.is_request:
            self._start(builder, draft)
        window = log.window
        entry = next(e for e in reversed(self.queue) if e[0] is draft)
        if draft.is_request:
            log.settle_early(
                draft.observation, window_tokens=window, reported_tokens=draft.prompt_tokens
            )
            response = draft.finish()
            entry[1] = response
            entry[2] = self.calls.of(draft.id, response.start_ns)
            if self.unsettled:
                self._settle(draft, response)
        else:
            if draft.model != SYNTHETIC:
                raise NotHandled("a response without usage")  # (a response span: the model's)
            log.settle_early(draft.observation, window_tokens=window, dropped=True)
            self.calls.dropped(draft.id)
            entry[1] = False
        builder._settle_hidden(draft)  # (the adapter's rule, once its usage is final)
        draft.hidden = None  # (settled: `finish` has none left to settle)
        if entry[1]:  # (its place in the dict kept: the newest draft stays last)
            builder.responses[draft.id] = _Closed(entry[1], draft.observation)  # type: ignore[assignment]
        self.calls.recent = draft.id  # (its calls without a result wait a request more)
        entry[3] = self.calls.ended()

    def _settle(self, draft: ResponseDraft, response: Response) -> None:
        """A request closed: the compactions logged before it are settled (as the
        builder's `finish` settles them), so the log can be replayed past them; it is the
        request after them (views.compactions_after)."""
        left = []
        for compaction in self.unsettled:
            if compaction.observation > draft.observation:
                left.append(compaction)  # (after it: waits for the next request)
                continue
            self.after[compaction.id] = (response.start_ns, response.usage.prompt_tokens)
            self.log.settle_early(compaction.observation, window_tokens=self.log.window)
        self.unsettled = left

    def _drain(self) -> None:
        """The observations queued, in order, each with its snapshot (the log's entries up
        to the first observation not settled replayed in one loop); those after it wait."""
        cuts = [c.observation for c in self.unsettled]
        if self.open is not None:
            cuts.append(self.open.observation)
        snapshots = iter(self.log.replayed_to(min(cuts, default=None)))
        done = 0
        unsettled = self.unsettled
        for draft, response, started, ended in self.queue:
            if response is None:
                if not isinstance(draft, ResponseDraft):
                    # a compaction: settled once the request after it closed
                    if any(c is draft for c in unsettled):
                        break
                    snapshot = next(snapshots, None)
                    if snapshot is None:
                        raise NotHandled("a compaction without its snapshot")
                    done += 1
                    self._compaction(draft, snapshot)
                    continue
                break  # (the open response)
            done += 1
            if response is not False:
                snapshot = next(snapshots, None)
                if snapshot is None:
                    raise NotHandled("a snapshot of something other than a request")
                self._arrive(response, snapshot, started)
            # The calls taken when this response closed: decided at the next snapshot,
            # which holds their results.
            if ended:
                self.calls.hand_on(ended)
        self._drained(done, snapshots)
        if self.written:
            # Everything held before the last request's start can go, and before the
            # first call not written yet (its slice's events are in time with the rest):
            # encoded in one loop of its own, after the batch's requests.
            start = self.committed[0]
            self.events.flush(min(start, self.calls.earliest(), self._tools_earliest()))

    # ------------------------------------------------------------------ a compaction

    def _compaction(self, draft: Any, snapshot: ContextSnapshot) -> None:
        """A compaction and its snapshot: the requests before it written, then the
        Context size (and fill) before it at its start and after it at its end
        (views.iter_context_size), the context categories it moved at its snapshot."""
        self._compaction_begun(draft, snapshot)
        compaction = draft.finish()
        if compaction.start_ns < self.committed[0]:
            raise NotHandled("a compaction starting before a request written already")
        events = self.events
        # The size after (views.compactions_after): the harness's figure, else the next
        # request's (its start `at`).
        following = self.after.get(compaction.id)
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
        window = self.log.window
        if window:
            fills = [-(-size * 100 // window) for size in sizes]
            if any(fill != self.last_fill for fill in fills):
                values[self.fill_uuid] = fills[-1]
            self.last_fill = fills[-1]
        return values

    # ------------------------------------------------------------------ a request

    def _start(self, builder: SessionBuilder, draft: ResponseDraft) -> None:
        """What the first request fixes: the session's key, the facts its arguments read
        (the window guessed: the first Claude model's), the track uuids."""
        self.key = key = builder.session_id
        model = draft.model if draft.model.startswith("claude-") else None
        if model is None:
            model = next((m for m in builder.models if m.startswith("claude-")), None)
        window = assumed_window(model)[0] if model is not None else None
        self.log.window = window
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
            self._open(self._session_start(), self.has_window)
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
            self.calls.known,
        )
        self._request(response, snapshot, window, args, arrival, out)

    def _session_start(self) -> int:
        """The session's start as read so far: its first record's, or the first record
        read no further whose time the span covers (the end checks no later line moved
        it)."""
        start = self.builder.start_ns
        assert start is not None  # (a request was read)
        reading = self.reading
        if reading.first is not None:
            outer = believed_times((reading.first.get("timestamp"), reading.first_near))
            start = min([start, *outer])
        return start

    # ------------------------------------------------------------------ the end

    def _end(self, builder: SessionBuilder) -> Session:
        """The calls left, the checks, and the builder's `finish` on what the end reads."""
        if self.written == 0:
            raise NotHandled("no measured request")
        if builder.end_ns is None:
            raise NotHandled("no session")
        self.tools.placed.extend(self.calls.rest(builder.end_ns))
        self.tools.decide()
        _link_subagents({builder.session_id: builder})  # (as read_group links them)
        self.tools.relink(builder.tools, self.calls.mark)
        self.tools.finish(self.key, builder.end_ns)
        if self.tools.cwd_used and self.tools.cwd_used[0] != builder.project:
            raise NotHandled("a call's path target made safe before the session's cwd")
        self.events.flush()
        kept = {id(x): x for x in self.compaction_snapshots}
        for snapshot in self.additions.snapshots():
            kept.setdefault(id(snapshot), snapshot)
        self.log.left = sorted(kept.values(), key=lambda x: x.time_ns)
        needed = set(self.additions.causes)
        # (the calls that name a subagent: links.with_unread_children counts them)
        needed.update(c for c, d in builder.tools.items() if d.child_session is not None)
        if builder.compactions:  # (stream/end.py: the calls the end's snapshots name)
            needed.update(c.source_id for x in self.log.left for c in x.changes)
        self.calls.check_and_trim(builder.end_ns, needed)
        session = builder.finish()
        if session is None:
            raise NotHandled("no session")
        # The calls let go that the end's snapshots name: only their ids are read (a
        # change's `source_id` is a call's), so each is a call of no time at the start.
        gone = sorted(c for c in needed if c in self.calls.gone)
        if gone:
            start = session.start_ns
            stubs = tuple(ToolCall(c, "", start, start) for c in gone)
            session = replace(session, tool_calls=(*session.tool_calls, *stubs))
        return with_unread_children([session])[0]  # (as loader.read_group marks it)


# Read and write one Claude Code transcript in one pass (stream/requests.py `export_pass`).
export_claude = partial(export_pass, ClaudePass)
