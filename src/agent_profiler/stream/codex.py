"""One pass over a Codex CLI rollout (adapters/codex.py's reading, line by line through
`rollout_lines` and the rollout's own `RolloutBuilder`, its context log a `CodexLog`):
each request is written once its `token_count` is read and its snapshot replayed (a
request read later starts later; one that does not falls back): its response slice
with its arguments and `context`, its turn on the same lane, the request counters and
the context categories it moved, its usage totals at its end; its tool calls once they
are known to have ended (stream/codex_tools.py), through stream/tools.py. The session's
other tracks are laid out at the end by the track table's own rows from what the reading
kept (stream/end.py).

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

from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from agent_profiler.adapters.codex import rollout_lines
from agent_profiler.adapters.codex_rollout import HARNESS, RolloutBuilder
from agent_profiler.annotations import TraceFacts, response_args
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.layout.types import (
    R_SLICE_BEGIN,
)
from agent_profiler.model import ContextSnapshot, Response, Session
from agent_profiler.stream.codex_log import CodexLog
from agent_profiler.stream.codex_tools import CodexCalls
from agent_profiler.stream.log import Additions, NotHandled
from agent_profiler.stream.requests import OrderedPass, export_pass
from agent_profiler.stream.tools import StreamTools

# Lines read between two replays of the log and the requests' writing (stream/pi.py's
# BATCH_LINES: each stage a loop of its own over a few hundred lines).
BATCH_LINES = 256


class CodexPass(OrderedPass):
    """One Codex rollout read and written in one pass (see the module's docstring)."""

    builder: RolloutBuilder
    calls: CodexCalls

    def __init__(
        self, path: Path, diagnostics: Diagnostics, facts: TraceFacts, group: int, add: Any
    ) -> None:
        super().__init__(path, facts, group, add, f"{HARNESS.category_prefix}.activity")
        self.log = CodexLog()
        self.builder = RolloutBuilder(str(path), diagnostics, log=self.log)
        self.additions = Additions(self.builder.tools)
        # requests read (each with its calls and the calls known ended when it closed),
        # until their snapshots are replayed
        self.queue: list[tuple[Response | None, Any, list[Any]]] = []
        self.arrived = 0  # requests read
        self.responses: list[Response] = []  # theirs, for the builder's `finish`
        self.start = 0  # the rollout's first time so far
        self.stated_window = 0  # the window the last response stated
        self.has_window: bool | None = None  # whether the first request had a window
        self.tools = StreamTools(
            self.events, self._tool_lane, self._tool_flow, self.additions, self._cwd
        )
        self.calls = CodexCalls(self.builder, self.tools)
        # The snapshots the end reads the windows of (views.run_windows, model_requests):
        # each model run's first request's, each model's last request's.
        self.run_model: str | None = None
        self.run_starts: list[ContextSnapshot] = []
        self.model_last: dict[str, ContextSnapshot] = {}
        # Compactions: those whose size after (the next request's) is not known yet, so
        # their observation is not settled; the next request's start for each.
        self.compactions_seen = 0
        self.unsettled: list[Any] = []
        self.next_start: dict[str, int] = {}

    # ------------------------------------------------------------------ reading

    def read(self) -> Session:
        builder = self.builder
        requests, tools, queue, calls = builder.requests, builder.tools, self.queue, self.calls
        lines = 0
        start = 0
        compactions = builder.compactions
        for start in rollout_lines(builder, self.path):
            if len(tools) != calls.seen:
                calls.created()
            if len(compactions) != self.compactions_seen:
                self.compactions_seen += 1
                self.unsettled.append(compactions[-1])
                queue.append((None, compactions[-1], []))
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
                self._drain()
                lines = 0
        self.start = start
        for compaction in self.unsettled:  # (no request after it: as `finish` settles it)
            self.log.settle_early(
                compaction.observation,
                window_tokens=compaction.window or builder.window,
                reported_tokens=compaction.post_tokens,
            )
        self.unsettled = []
        self._drain()
        self._unhandled()
        if not requests:
            raise NotHandled("no measured request")
        if builder.end_ns is None:
            raise NotHandled("no session")
        window = builder.window
        if bool(window) != bool(self.has_window):
            raise NotHandled("a request without a window in a session with one")
        self.tools.placed.extend(calls.rest(builder.end_ns))
        self.tools.finish(self.key, builder.end_ns)
        if self.tools.cwd_used and self.tools.cwd_used[0] != builder.project:
            raise NotHandled("a call's path target made safe before the session's cwd")
        self.events.flush()
        kept = {
            id(x): x
            for x in (*self.run_starts, *self.model_last.values(), *self.compaction_snapshots)
        }
        for snapshot in self.additions.snapshots():
            kept.setdefault(id(snapshot), snapshot)
        # (the model's order: the log's, which is the requests' here)
        self.log.left = sorted(kept.values(), key=lambda x: x.time_ns)
        needed = set(self.additions.causes)
        if builder.compactions:  # (stream/end.py: the calls the end's snapshots name)
            needed.update(c.source_id for x in self.log.left for c in x.changes)
        calls.check_and_trim(builder.end_ns, needed)
        session = builder.finish(tuple(self.responses))
        if session is None:
            raise NotHandled("no session")
        assert self.session_facts is not None
        self.session_facts = replace(self.session_facts, window_tokens=session.window_tokens)
        return session

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
                compaction.observation,
                window_tokens=compaction.window or self.builder.window,
                reported_tokens=compaction.post_tokens,
            )
        self.unsettled = left

    def _drain(self) -> None:
        """The requests and compactions queued, in order, each with its snapshot (the
        log's entries up to the first observation not settled replayed in one loop);
        those after it wait."""
        builder = self.builder
        cuts = [c.observation for c in self.unsettled]
        if builder.pending is not None:
            cuts.append(builder.pending.observation)
        snapshots = iter(self.log.replayed_to(min(cuts, default=None)))
        done = 0
        for response, started, ended in self.queue:
            snapshot = next(snapshots, None)
            if snapshot is None:
                break
            done += 1
            if response is None:  # (`started`: the compaction)
                self._compaction(started, snapshot)
                continue
            self._arrive(response, snapshot, started)
            # The calls known ended when this request closed: decided at the next
            # request's snapshot, which holds their results.
            if ended:
                self.calls.hand_on(ended)
        self._drained(done, snapshots)

    def _compaction(self, draft: Any, snapshot: ContextSnapshot) -> None:
        """A compaction and its snapshot: the requests before it written, then the
        Context size (and fill) before it at its start and after it at its end
        (views.iter_context_size), the context categories it moved at its snapshot."""
        compaction = self._compaction_begun(draft, snapshot)
        events = self.events
        # Not where a request starts (the last written, or the next: `_settle`), whose own
        # reported size is the sample of that time (views.iter_context_size).
        starts = (self.committed[0], self.next_start.get(compaction.id))
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
        builder = self.builder
        self.key = key = builder.session_id or Path(builder.path).stem
        self.has_window = bool(builder.requests[0].window)
        self.session_facts = Session(
            HARNESS,
            key,
            0,
            0,
            (),
            provider=builder.provider or "openai",
            window_tokens=builder.requests[0].window,
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
        events.flush(min(response.start_ns, self.calls.earliest(), self._tools_earliest()))
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
