"""The reading side of the one pass over a Claude Code transcript (stream/claude.py is the
writing side): the adapter's own reading (adapters/claude_transcript.py's
`transcript_lines`) driving the transcript's `SessionBuilder`, its context log a
`ClaudeLog`, the calls taken as they end (stream/claude_tools.py).

A request's records share one message id and may be many lines, so a request closes when
the next one begins (a record of a closed request falls back); it is settled then as the
builder's `finish` settles it (its reported size, the session's window, its hidden
thinking sized). A compaction (a `compact_boundary` observed after its summary, a
microcompaction) is settled when the request after it closes.

What it hands the writing side is data, never the builder (stream/codex_reading.py's
shape): every `BATCH_LINES` records read further, a `Batch` with the log's entries up to
the first observation not settled (the open request's, a compaction's waiting for the
request after it) and the requests and compactions those entries observe; at the end,
`Ending`; once the writing side has said which calls the end reads and which it gave
their subagent at the end, the session (`finish`). So the two sides can run in one
process or in two (stream/forked.py).

A call's draft is let go as it is handed on (unless `builder.finish` reads it: the
calls' `let_go`), so the writing side keeps the calls of the largest additions it holds
itself, and the end's session has them from there."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import replace
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

from agent_profiler.adapters.claude_code import _link_subagents
from agent_profiler.adapters.claude_context import assumed_window
from agent_profiler.adapters.claude_response import ResponseDraft
from agent_profiler.adapters.claude_session import SessionBuilder
from agent_profiler.adapters.claude_transcript import Reading, transcript_lines
from agent_profiler.adapters.common import believed_times
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.links import with_unread_children
from agent_profiler.model import ContextSnapshot, Response, Session, ToolCall
from agent_profiler.stream.calls import LATER
from agent_profiler.stream.claude_tools import ClaudeCalls, ClaudeLog
from agent_profiler.stream.log import NotHandled

# Records read further (not progress, not file-history snapshots) between two batches
# (stream/pi.py's BATCH_LINES: each stage a loop of its own over a few hundred records;
# 64 and 2,048 took the same time on the 100 MB bench, 2,048 2 MB more memory).
BATCH_LINES = 256
SYNTHETIC = "<synthetic>"  # Claude Code's own reply to an API error: no request

# A request as the writing side takes it: its response, the ids of the calls it started
# (in layout order), the calls taken when it closed (stream/calls.py `_made`: each with
# -1, its lane the writing side's to fit, in this order); a response that was no request:
# False, None, the calls taken; a compaction: None, the compaction, the start and the
# reported size of the request after it (None: none yet).
Entry = tuple[Response | bool | None, Any, Any]


class Batch(NamedTuple):
    """What the writing side needs of the records read since the last batch."""

    ops: list[Any]  # the log's entries up to the cut, settled (to be replayed)
    entries: list[Entry]  # the requests and compactions they observe, in the log's order
    start: int  # the session's start as read so far (0: no request yet)
    waiting: int  # the start of the first draft not taken yet (LATER: none)
    later: int  # the start of the first call taken for a request still queued (LATER: none)
    prompts: list[tuple[str, int]]  # the prompts read since the last batch: id, start
    calls: list[str]  # the ids of the calls read since the last batch
    # the calls whose result named a subagent, so far (None: as in the last batch)
    named: frozenset[str] | None
    # what the first request fixes: the session's key, the window guessed; the cwd so far
    key: str
    window: int | None
    project: str | None


class Ending(NamedTuple):
    """What only the end of the transcript says, once every batch is handed on."""

    end_ns: int | None  # (None: no session)
    project: str | None
    rest: list[tuple[Any, int]]  # every call not taken yet, ended as `finish` ends them
    named: frozenset[str]
    children: dict[str, str]  # call id → the subagent the adapter linked it to
    compactions: int  # how many were read


class Closed:
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


class _ReadingLog(ClaudeLog):
    """The reading side's log: its entries are handed on (`taken_to`) and replayed by the
    writing side, never here, the builder's `finish` included."""

    def replay(self, **_: object) -> list[ContextSnapshot]:
        return []


class ClaudeReading:
    """One Claude Code transcript read for the one pass (see the module's docstring)."""

    builder: SessionBuilder
    calls: ClaudeCalls

    def __init__(self, path: Path, diagnostics: Diagnostics) -> None:
        self.path = path
        self.diagnostics = diagnostics
        self.log = _ReadingLog()
        self.logs = 0  # logs handed to the reading's builders
        self.reading = Reading(self._new_log)
        # Observations logged, in the log's order, until they are handed on:
        # [draft, response (None: open; False: no request), started, ended calls] of a
        # response; [compaction, None, None, None] of a compaction.
        self.queue: list[list[Any]] = []
        self.open: ResponseDraft | None = None  # the response whose records may still come
        self.open_entry: list[Any] = []  # its entry in the queue
        self.arrived = 0  # response drafts seen
        self.compactions_seen = 0  # compactions whose observation is logged
        self.unsettled: list[Any] = []  # compactions waiting for the request after them
        self.after: dict[str, tuple[int, int]] = {}  # compaction id → next request's
        self.fixed = False  # what the first request fixes: the key, the window guessed
        self.key = ""
        self.window: int | None = None
        self.prompts_sent = 0
        self.new_calls: list[str] = []  # the ids of the calls read since the last batch
        self.named_sent: frozenset[str] = frozenset()

    def let_go(self) -> None:
        """Drop the reading's state now (stream/requests.py `RequestPass.let_go`): its
        reading holds this reading's `_new_log`, a cycle that kept the builder, its drafts
        and the log's items until the cycle collector's next full collection. Its file is
        closed now, if the writing side stopped before the end."""
        lines = vars(self).get("lines")
        if lines is not None:
            lines.close()
        vars(self).clear()

    def _new_log(self) -> ClaudeLog:
        """The log of the file's first thread; another thread is a sidechain's."""
        self.logs += 1
        if self.logs > 1:
            raise NotHandled("records of another agent (a sidechain) in the file")
        return self.log

    # ------------------------------------------------------------------ the batches

    def batches(self) -> Iterator[Batch]:
        """The transcript read, a batch at a time."""
        self.lines = lines = transcript_lines(self.path, self.diagnostics, self.reading)
        try:
            yield from self._run(lines)
        finally:
            lines.close()  # (its file, when the pass stops before the end)

    def _run(self, lines: Generator[dict[str, Any]]) -> Iterator[Batch]:
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
            yield from self._read(builder, lines)
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
        yield self._batch()

    def _read(self, builder: SessionBuilder, lines: Iterator[dict[str, Any]]) -> Iterator[Batch]:
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
                yield self._batch()
                count = 0

    def _begin(self, builder: SessionBuilder) -> None:
        self.builder = builder
        self.calls = ClaudeCalls(builder)

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
        calls, tools = self.calls, builder.tools
        if len(tools) != calls.seen:
            new = len(tools) - calls.seen
            self.new_calls.extend(reversed(list(islice(reversed(tools), new))))
            calls.created()
        responses = builder.responses
        if len(responses) != self.arrived:
            self.arrived += 1
            draft = next(reversed(responses.values()))
            calls.open_id = draft.id  # (its calls wait for it to close)
            if self.open is not None:
                self._close(builder, self.open)
            self.open = draft
            self.open_entry = [draft, None, None, None]
            self.queue.append(self.open_entry)

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
        if not self.fixed and draft.is_request:
            self._start(builder, draft)
        window = log.window
        entry = self.open_entry  # (its entry in the queue)
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
            builder.responses[draft.id] = Closed(entry[1], draft.observation)  # type: ignore[assignment]
        self.calls.recent = draft.id  # (its calls without a result wait a request more)
        entry[3] = self.calls.ended()

    def _start(self, builder: SessionBuilder, draft: ResponseDraft) -> None:
        """What the first request fixes: the session's key, the window guessed (the first
        Claude model's), which the log settles every request with."""
        self.fixed = True
        self.key = builder.session_id
        model = draft.model if draft.model.startswith("claude-") else None
        if model is None:
            model = next((m for m in builder.models if m.startswith("claude-")), None)
        self.window = self.log.window = assumed_window(model)[0] if model is not None else None

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

    def _batch(self) -> Batch:
        """The log's entries up to the first observation not settled (the open request's,
        a compaction's waiting for the request after it), with what they observe; the
        rest wait."""
        unsettled = self.unsettled
        cuts = [c.observation for c in unsettled]
        if self.open is not None:
            cuts.append(self.open.observation)
        ops = self.log.taken_to(min(cuts, default=None))
        calls = self.calls
        entries: list[Entry] = []
        named = calls.agent_calls()  # (a call named now keeps its draft: `let_go`)
        for draft, response, started, ended in self.queue:
            if response is None:
                if isinstance(draft, ResponseDraft):
                    break  # (the open response)
                # a compaction: settled once the request after it closed
                if any(c is draft for c in unsettled):
                    break
                entries.append((None, draft.finish(), self.after.get(draft.id)))
                continue
            entries.append((response, started, ended))
            if ended:
                calls.hand_on(ended)
        del self.queue[: len(entries)]
        builder = self.builder
        new_calls, self.new_calls = self.new_calls, []
        prompts = builder.prompts
        new_prompts = [(p.id, p.start_ns) for p in prompts[self.prompts_sent :]]
        self.prompts_sent = len(prompts)
        changed = None
        if named != self.named_sent:
            changed = self.named_sent = frozenset(named)
        return Batch(
            ops,
            entries,
            self._session_start() if builder.start_ns is not None else 0,
            calls.waiting[0][0] if calls.waiting else LATER,
            calls.inflight[0] if calls.inflight else LATER,
            new_prompts,
            new_calls,
            changed,
            self.key,
            self.window,
            builder.project,
        )

    def _session_start(self) -> int:
        """The session's start as read so far: its first record's, or the first record
        read no further whose time the span covers (the end checks no later line moved
        it)."""
        start = self.builder.start_ns
        assert start is not None
        reading = self.reading
        if reading.first is not None:
            outer = believed_times((reading.first.get("timestamp"), reading.first_near))
            start = min([start, *outer])
        return start

    # ------------------------------------------------------------------ the end

    def ending(self) -> Ending:
        """Once every batch is handed on: the calls left (as `finish` ends them), the
        subagents linked to theirs."""
        builder = self.builder
        end = builder.end_ns
        rest = self.calls.rest(end) if end is not None else []
        named = frozenset(self.calls.agent_calls())
        _link_subagents({builder.session_id: builder})  # (as read_group links them)
        children = {
            call_id: draft.child_session
            for call_id, draft in builder.tools.items()
            if draft.child_session is not None
        }
        return Ending(end, builder.project, rest, named, children, len(builder.compactions))

    def check(self) -> None:
        """The calls are checked in `finish`: the writing side gives some their subagent
        at the end (ClaudeTools.relink), which the check must know first."""

    def finish(self, told: tuple[set[str], list[ToolCall], set[str]]) -> tuple[Session, list[Any]]:
        """The session, once the writing side said which calls the end reads (`needed`),
        which it gave their subagent at the end (`marked`), and which it holds itself
        (`own`, the largest additions' calls: their drafts may be let go); its snapshots
        are the writing side's, with the log's entries left after the last batch."""
        needed, marked, own = told
        builder, calls = self.builder, self.calls
        assert builder.end_ns is not None  # (the writing side checked it)
        for call in marked:
            calls.mark(call)
        # (the calls that name a subagent: links.with_unread_children counts them)
        needed.update(c for c, d in builder.tools.items() if d.child_session is not None)
        calls.check_and_trim(builder.end_ns, needed)
        session = builder.finish()
        if session is None:
            raise NotHandled("no session")
        # The calls let go that the end's snapshots name (but those the writing side
        # holds): only their ids are read (a change's `source_id` is a call's), so each
        # is a call of no time at the start.
        gone = sorted(c for c in needed if c in calls.gone and c not in own)
        if gone:
            start = session.start_ns
            stubs = tuple(ToolCall(c, "", start, start) for c in gone)
            session = replace(session, tool_calls=(*session.tool_calls, *stubs))
        return with_unread_children([session])[0], self.log.taken_to(None)
