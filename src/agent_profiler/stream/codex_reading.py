"""The reading side of the one pass over a Codex CLI rollout (stream/codex.py is the
writing side): adapters/codex.py's own reading loop (`rollout_lines`) driving a
`RolloutBuilder` whose log is a `CodexLog`, the calls taken as they end
(stream/codex_tools.py), the compactions settled as the builder's `finish` settles them.

What it hands the writing side is data, never the builder: every `BATCH_LINES` lines, a
`Batch` with the log's entries up to the first observation not settled yet (the open
request's, a compaction's waiting for its size after) and the requests and compactions
those entries observe, each as it will be written; at the end, `Ending`; once the
writing side has said which calls the end reads, the session (`finish`). So the two
sides can run in one process (stream/codex.py) or in two.

A request is queued once its `token_count` closes it (its response is the model's: made
now, handed to `finish`), with the ids of the calls it started and the calls known ended
then; a compaction once it is read, and finished once its observation is settled (the
request after it closed: its size after)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

from agent_profiler.adapters.codex import rollout_lines
from agent_profiler.adapters.codex_rollout import Compaction, RolloutBuilder
from agent_profiler.attribution import Observation
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.model import ContextSnapshot, Response, Session, ToolCall
from agent_profiler.stream.calls import LATER
from agent_profiler.stream.codex_log import CodexLog
from agent_profiler.stream.codex_tools import CodexCalls
from agent_profiler.stream.log import NotHandled

# Lines read between two batches (stream/pi.py's BATCH_LINES: the reading, the replay and
# the writing each a loop of its own over a few hundred lines).
BATCH_LINES = 256

# A request as the writing side takes it: its response, the ids of the calls it started
# (in layout order), the calls known ended when it closed (each with -1: its lane is the
# writing side's to fit, in this order). A compaction: None, the compaction, the start of
# the request after it (None: none yet).
Entry = tuple[Response | None, Any, Any]


class Batch(NamedTuple):
    """What the writing side needs of the lines read since the last batch."""

    ops: list[Any]  # the log's entries up to the cut, settled (to be replayed)
    entries: list[Entry]  # the requests and compactions they observe, in the log's order
    start: int  # the rollout's first time so far
    waiting: int  # the start of the first draft not taken yet (LATER: none)
    # the start of the first call taken for a request still queued here (LATER: none)
    later: int
    prompts: list[tuple[str, int]]  # the prompts read since the last batch: id, start
    calls: list[str]  # the ids of the calls read since the last batch
    # what the first request fixes: the session's key, the first request's window, the
    # provider; and the session's cwd so far
    key: str
    first_window: int | None
    provider: str | None
    project: str | None


class Ending(NamedTuple):
    """What only the end of the rollout says, once every batch is handed on."""

    end_ns: int
    window: int | None
    project: str | None
    rest: list[tuple[ToolCall, int]]  # every call not taken yet, ended as `finish` ends them
    compactions: int  # how many were read


class _ReadingLog(CodexLog):
    """The reading side's log: its entries are handed on (`taken_to`) and replayed by the
    writing side, never here, the builder's `finish` included (the entries left after the
    last batch, what it settled, go with the session)."""

    def replay(self, **_: object) -> list[ContextSnapshot]:
        return []


class CodexReading:
    """One Codex rollout read for the one pass (see the module's docstring)."""

    def __init__(self, path: Path, diagnostics: Diagnostics) -> None:
        self.path = path
        self.log = _ReadingLog()
        self.builder = RolloutBuilder(str(path), diagnostics, log=self.log)
        self.calls = CodexCalls(self.builder)
        # requests and compactions read, until their log entries are handed on
        self.queue: list[Entry] = []
        self.arrived = 0  # requests read
        self.responses: list[Response] = []  # theirs, for the builder's `finish`
        self.start = 0  # the rollout's first time so far
        # Compactions: those whose size after (the next request's) is not known yet, so
        # their observation is not settled; the next request's start for each.
        self.compactions_seen = 0
        self.unsettled: list[Compaction] = []
        self.next_start: dict[str, int] = {}
        self.prompts_sent = 0
        self.kept: set[str] | None = None  # the drafts `finish` needs, once checked
        self.new_calls: list[str] = []  # the ids of the calls read since the last batch

    def let_go(self) -> None:
        """Drop the reading's state now (stream/requests.py `RequestPass.let_go`)."""
        vars(self).clear()

    def batches(self) -> Iterator[Batch]:
        """The rollout read, a batch at a time; then `ending` is set."""
        builder = self.builder
        requests, tools, queue, calls = builder.requests, builder.tools, self.queue, self.calls
        lines = 0
        start = 0
        compactions = builder.compactions
        for start in rollout_lines(builder, self.path):
            if len(tools) != calls.seen:
                new = len(tools) - calls.seen
                self.new_calls.extend(reversed(list(islice(reversed(tools), new))))
                calls.created()
            if len(compactions) != self.compactions_seen:
                self.compactions_seen += 1
                compaction = compactions[-1]
                self.unsettled.append(compaction)
                queue.append((None, compaction, None))
            if len(requests) != self.arrived:
                # A request closed (its token_count): its response is what the model's
                # will be; the calls it started, and those known ended now, go with it.
                self.arrived += 1
                draft = requests[-1]
                response = draft.finish()
                self.responses.append(response)
                calls.closed.add(response.id)
                queue.append((response, calls.of(response.id, response.start_ns), calls.ended()))
                if self.unsettled:
                    self._settle(response)
            lines += 1
            if lines >= BATCH_LINES and queue:
                self.start = start
                yield self._batch()
                lines = 0
        self.start = start
        for compaction in self.unsettled:  # (no request after it: as `finish` settles it)
            self.log.settle_early(
                compaction.observation,  # type: ignore[arg-type]
                window_tokens=compaction.window or builder.window,
                reported_tokens=compaction.post_tokens,
            )
        self.unsettled = []
        yield self._batch()
        self._unhandled()
        if not requests:
            raise NotHandled("no measured request")
        if builder.end_ns is None:
            raise NotHandled("no session")

    def ending(self) -> Ending:
        """Once every batch is handed on: what only the end says."""
        builder = self.builder
        assert builder.end_ns is not None  # (`batches` checked it)
        return Ending(
            builder.end_ns,
            builder.window,
            builder.project,
            self.calls.rest(builder.end_ns),
            len(builder.compactions),
        )

    def check(self) -> None:
        """Once the ending is made: every call written is the call the builder's `finish`
        will make (stream/calls.py `check`), whatever the end reads. (A helper checks while
        the writing side ends: stream/forked.py.)"""
        if self.kept is None:
            assert self.builder.end_ns is not None
            self.kept = self.calls.check(self.builder.end_ns)

    def finish(self, needed: set[str]) -> tuple[Session, list[Any]]:
        """The session, once the calls written are checked against the model's and the
        drafts it does not need let go (`needed`: those the end reads); its snapshots are
        the writing side's (none here), with the log's entries left after the last batch
        (what `finish` settled: the request left open) to be replayed there."""
        builder = self.builder
        self.check()
        assert self.kept is not None
        self.calls.trim(self.kept, needed)
        session = builder.finish(tuple(self.responses))
        if session is None:
            raise NotHandled("no session")
        return session, self.log.taken_to(None)

    def _unhandled(self) -> None:
        """What the rollout held that this pass does not write (yet)."""
        builder = self.builder
        if (
            builder.parent_session is not None
            or builder.spawned
            or builder.spawn_paths
            or builder.agent_path
        ):
            raise NotHandled("a spawned or spawning thread")
        if any(key != "source" for key, _ in builder.facts) or any(
            p.source == "agent" for p in builder.prompts
        ):
            raise NotHandled("a message from another agent, or a rollout reference")

    def _settle(self, response: Response) -> None:
        """A request closed: the compactions it told the size after of are settled (as
        the builder's `finish` settles them), so the log can be replayed past them."""
        waiting = self.builder.awaiting_post
        left = []
        for compaction in self.unsettled:
            if compaction in waiting:
                left.append(compaction)
                continue
            self.next_start[compaction.id] = response.start_ns
            self.log.settle_early(
                compaction.observation,  # type: ignore[arg-type]
                window_tokens=compaction.window or self.builder.window,
                reported_tokens=compaction.post_tokens,
            )
        self.unsettled = left

    def _batch(self) -> Batch:
        """The log's entries up to the first observation not settled (the open request's,
        a compaction's waiting for its size after), with the requests and compactions they
        observe (one each: a snapshot); the rest wait."""
        builder = self.builder
        cuts = [c.observation for c in self.unsettled]
        if builder.pending is not None:
            cuts.append(builder.pending.observation)
        ops = self.log.taken_to(min(cuts, default=None))  # type: ignore[type-var]
        observed = 0
        for op in ops:
            if op.__class__ is Observation and not op.dropped:
                observed += 1
        queue = self.queue
        if observed > len(queue):
            raise NotHandled("a snapshot of no request")
        entries = []
        for entry in queue[:observed]:
            if entry[0] is None:  # a compaction: as its snapshot finds it
                compaction = entry[1]
                entry = (None, compaction.finish(), self.next_start.get(compaction.id))
            else:
                self.calls.hand_on(entry[2])
            entries.append(entry)
        del queue[:observed]
        calls, prompts = self.calls, builder.prompts
        new_calls, self.new_calls = self.new_calls, []
        new_prompts = [(p.id, p.start_ns) for p in prompts[self.prompts_sent :]]
        self.prompts_sent = len(prompts)
        requests = builder.requests
        return Batch(
            ops,
            entries,
            self.start,
            calls.waiting[0][0] if calls.waiting else LATER,
            # (the calls taken for the requests still queued: those not handed on)
            calls.inflight[0] if calls.inflight else LATER,
            new_prompts,
            new_calls,
            builder.session_id or Path(builder.path).stem,
            requests[0].window if requests else None,
            builder.provider,
            builder.project,
        )
