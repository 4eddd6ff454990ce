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
one written already, a request without a window in a session that has one, a compaction
before the first request, a call changed after it was written (its end, error or result
read later than the pass could know), a fact guessed at the first request that the end
does not confirm."""

from __future__ import annotations

import io
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import IO, Any

from agent_profiler.adapters.codex import rollout_lines
from agent_profiler.adapters.codex_rollout import HARNESS, RolloutBuilder
from agent_profiler.annotations import TraceFacts, response_args
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.estimate import CHARS4_NOTE
from agent_profiler.layout.counters import CATEGORY_RANK, CONTEXT_GROUP
from agent_profiler.layout.plan import SHARE_KEY
from agent_profiler.layout.planning import TrackIds
from agent_profiler.layout.types import (
    R_SLICE_BEGIN,
    LaidSlice,
    Merge,
    Track,
    TrackKind,
    stable_ids64,
)
from agent_profiler.model import AnchorKind, Category, ContextSnapshot, Response, Session
from agent_profiler.stream.codex_log import CodexLog
from agent_profiler.stream.codex_tools import CodexCalls
from agent_profiler.stream.emit import Events, OnlineLanes
from agent_profiler.stream.end import CONTEXT_ROW, RANK, ROWS, TURN_ARGS, write_end
from agent_profiler.stream.log import Additions, NotHandled
from agent_profiler.stream.tools import StreamTools, lane_track
from agent_profiler.writers.chunks import PacketSink
from agent_profiler.writers.events import EventEncoder
from agent_profiler.writers.perfetto import sequence_of

# Lines read between two replays of the log and the requests' writing (stream/pi.py's
# BATCH_LINES: each stage a loop of its own over a few hundred lines).
BATCH_LINES = 256


class CodexPass:
    """One Codex rollout read and written in one pass (see the module's docstring)."""

    def __init__(
        self, path: Path, diagnostics: Diagnostics, facts: TraceFacts, group: int, add: Any
    ) -> None:
        self.path = path
        self.facts = facts
        self.group = group
        self.ids = TrackIds(group)
        self.encoder = EventEncoder(sequence_of(group))
        self.log = CodexLog()
        self.builder = RolloutBuilder(str(path), diagnostics, log=self.log)
        self.additions = Additions(self.builder.tools)
        self.events = Events(self.encoder, add, f"{HARNESS.category_prefix}.activity")
        self.lanes = OnlineLanes()
        self.key = ""
        self.session_facts: Session | None = None
        # requests read (each with its calls and the calls known ended when it closed),
        # until their snapshots are replayed
        self.queue: list[tuple[Response | None, Any, list[Any]]] = []
        self.previous: ContextSnapshot | None = None  # the last written
        self.arrived = 0  # requests read
        self.responses: list[Response] = []  # theirs, for the builder's `finish`
        self.written = 0  # requests written
        self.start = 0  # the rollout's first time so far
        self.committed = (-(2**63), 0)  # the last request written: (start, end)
        self.lane_uuids: dict[str, list[int]] = {"Responses": [], "Turns": []}
        self.turns: list[LaidSlice] = []  # each Turns lane's slice, as encoded
        self.context_uuids: dict[Category, int] = {}
        self.context_last: dict[Category, int] = {}
        self.context_categories: object = None
        self.last_window = self.last_fill = self.input_total = self.output_total = 0
        self.stated_window = 0  # the window the last response stated
        self.has_window: bool | None = None  # whether the first request had a window
        self.last_usage_ts = -1
        self.opened_at: int | None = None  # where the counters' opening zeros were written
        self.tools = StreamTools(
            self.events, self._tool_lane, self._tool_flow, self.additions, self._cwd
        )
        self.calls = CodexCalls(self.builder, self.tools)
        self.tool_lanes: list[int] = []
        self.prompt_flow: Any = None
        self.tool_flow: Any = None
        self.flows_in: dict[str, int] = {}  # call id → the flow from its response
        self.first_prompt: dict[str, int] = {}
        # The snapshots the end reads the windows of (views.run_windows, model_requests):
        # each model run's first request's, each model's last request's.
        self.run_model: str | None = None
        self.run_starts: list[ContextSnapshot] = []
        self.model_last: dict[str, ContextSnapshot] = {}
        # Compactions: those whose size after (the next request's) is not known yet, so
        # their observation is not settled; the next request's start for each; each one's
        # snapshot and the one before it (what its slice's arguments read at the end).
        self.compactions_seen = 0
        self.unsettled: list[Any] = []
        self.next_start: dict[str, int] = {}
        self.compaction_snapshots: list[ContextSnapshot] = []

    # ------------------------------------------------------------------ reading

    def run(self) -> Session:
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
        tools = self.tools
        done = 0
        for response, started, ended in self.queue:
            snapshot = next(snapshots, None)
            if snapshot is None:
                break
            done += 1
            if response is None:  # (`started`: the compaction)
                self._compaction(started, snapshot)
                continue
            if snapshot.anchor is not AnchorKind.RESPONSE:
                raise NotHandled("a snapshot of something other than a request")
            self._arrive(response, snapshot, started)
            # The calls known ended when this request closed: decided at the next
            # request's snapshot, which holds their results.
            if ended:
                tools.placed.extend(ended)
                self.calls.handed(len(ended))
        del self.queue[:done]
        if next(snapshots, None) is not None:
            raise NotHandled("a snapshot of no request")

    def _compaction(self, draft: Any, snapshot: ContextSnapshot) -> None:
        """A compaction and its snapshot: the requests before it written, then the
        Context size (and fill) before it at its start and after it at its end
        (views.iter_context_size), the context categories it moved at its snapshot."""
        if snapshot.anchor is not AnchorKind.COMPACTION or snapshot.anchor_id != draft.id:
            raise NotHandled("a compaction without its snapshot")
        if self.session_facts is None:
            raise NotHandled("a compaction before the first request")
        self.additions.take(snapshot)
        self.tools.decide()
        previous = self.previous
        if previous is not None and previous.time_ns == snapshot.time_ns:
            raise NotHandled("a compaction at the time of a request")
        if previous is not None:
            self.compaction_snapshots.append(previous)
        self.compaction_snapshots.append(snapshot)
        self.previous = snapshot
        compaction = draft.finish()
        events = self.events
        if compaction.pre_tokens is not None:
            events.counters_at(compaction.start_ns, self._size(compaction.pre_tokens))
        values: dict[int, int] = {}
        self._context_samples(snapshot, values)
        if values:
            # (before the samples of a request starting then, whose snapshot is later)
            events.counters_at(snapshot.time_ns, values, R_SLICE_BEGIN)
        after = compaction.post_tokens
        # The size after is the next request's (`_settle`): said by that request's own
        # sample when it starts right at the compaction's end.
        if after is not None and self.next_start.get(compaction.id) != compaction.end_ns:
            events.counters_at(compaction.end_ns, self._size(after))

    def _size(self, size: int) -> dict[int, int]:
        """A Context size sample, with Context fill where it changes (the window of the
        last request written)."""
        values = {self.size_uuid: size}
        if self.has_window:
            fill = -(-size * 100 // self.last_window)
            if fill != self.last_fill:
                values[self.fill_uuid] = self.last_fill = fill
        return values

    # ------------------------------------------------------------------ a request

    def _start(self, response: Response) -> None:
        """What the first request fixes: the session's key, the facts its arguments read,
        the track uuids (numbered in the group's block as the model path numbers them)."""
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
        self.session_uuid = self.ids.get(f"session:{key}")
        self.capture_uuid = self.ids.get(f"capture:{key}")
        self.context_uuid = self.ids.get(f"{key}:group:{CONTEXT_GROUP}")
        counter = f"{key}:counter:"
        self.size_uuid = self.ids.get(counter + "Context size")
        if self.has_window:
            self.window_uuid = self.ids.get(counter + "Context window")
            self.fill_uuid = self.ids.get(counter + "Context fill")
        self.input_uuid = self.ids.get(counter + "Input tokens")
        self.output_uuid = self.ids.get(counter + "Output tokens")
        self.prompt_flow = stable_ids64(f"{key}:flow:prompt:")
        self.tool_flow = stable_ids64(f"{key}:flow:tool:")

    def _cwd(self) -> str | None:
        return self.builder.project

    def _tool_flow(self, call_id: str) -> int:
        """The flow into a call from its response (made when the response was read)."""
        return self.flows_in.pop(call_id)

    def _tool_lane(self, lane: int) -> int:
        """A Tools lane's uuid, its descriptor written at its first slice."""
        lanes = self.tool_lanes
        while len(lanes) <= lane:
            uuid = self.ids.get(f"{self.key}:Tools:{len(lanes)}")
            lanes.append(uuid)
            row = ROWS["Tools"]
            self.events.declare(
                lane_track(uuid, self.capture_uuid, RANK["Tools"], row.description)  # type: ignore[arg-type]
            )
        return lanes[lane]

    def _arrive(self, response: Response, snapshot: ContextSnapshot, started: list[str]) -> None:
        """A request as it is read: its snapshot, its flows, its additions; it waits in
        written now. `started`: its calls' ids, in layout order."""
        if snapshot.anchor_id != response.id:
            raise NotHandled("a request without its snapshot")
        if self.session_facts is None:
            self._start(response)
        prompts = self.builder.prompts
        for i in range(len(self.first_prompt), len(prompts)):
            self.first_prompt.setdefault(prompts[i].id, i)
        found = self.first_prompt.get(response.prompt_id, -1) if response.prompt_id else -1
        arrival = (
            self.prompt_flow(response.id)
            if found >= 0 and response.start_ns >= prompts[found].start_ns
            else 0
        )
        flows_in = self.flows_in
        for call_id in started:
            flows_in[call_id] = self.tool_flow(call_id)
        out = tuple(flows_in[call_id] for call_id in started)
        self.additions.take(snapshot)
        self.tools.decide()
        # Written now: a Codex request starts at the line that triggered it, so one read
        # later starts later (unless the rollout's times go back: then it falls back).
        order = (response.start_ns, response.end_ns)
        if order < self.committed:
            raise NotHandled("a request that starts before one written already")
        self.committed = order
        self._write(response, snapshot, arrival, out)

    def _write(
        self, response: Response, snapshot: ContextSnapshot, arrival: int, out: tuple[int, ...]
    ) -> None:
        """A request's slices and samples, in time order."""
        index = self.written
        self.written += 1
        previous = self.previous
        if previous is not None and previous.time_ns == snapshot.time_ns:
            if previous.anchor is not AnchorKind.COMPACTION:
                raise NotHandled("two requests at one time")
            previous = None  # (a request right at a compaction's end: none before it in time)
        self.previous = snapshot
        model = response.model
        if model:
            if model != self.run_model:
                self.run_model = model
                self.run_starts.append(snapshot)
            self.model_last[model] = snapshot
        events, key = self.events, self.key
        if index == 0:
            self._open()
        # Everything held before this request's start can go, and before the first call
        # not written yet (its slice's events are in time with the rest).
        events.flush(min(response.start_ns, self.calls.earliest(), self.tools_earliest()))
        lane, first = self.lanes.place(response.start_ns, response.end_ns)
        if first:
            for name in ("Responses", "Turns"):
                uuid = self.ids.get(f"{key}:{name}:{lane}")
                self.lane_uuids[name].append(uuid)
                row = ROWS[name]
                events.declare(
                    Track(
                        uuid,
                        name,
                        TrackKind.SLICE,
                        parent=self.capture_uuid,
                        order_rank=RANK[name],
                        merge=Merge.BY_NAME if row.merge else None,
                        description=row.description,  # type: ignore[arg-type]
                    )
                )
            self.turns.append(
                LaidSlice("Turns", "turn", 0, 0, events.activity, TURN_ARGS, (), (), False, uuid)
            )
        flows = (arrival, *out) if arrival else out
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
        size = response.usage.prompt_tokens
        values = {self.size_uuid: size}
        if self.has_window:
            if not own:
                raise NotHandled("a request without a window in a session with one")
            if own != self.last_window:
                values[self.window_uuid] = self.last_window = own
            fill = -(-size * 100 // own)
            if fill != self.last_fill:
                values[self.fill_uuid] = self.last_fill = fill
        self._context_samples(snapshot, values)
        events.pair(
            LaidSlice(
                "Responses",
                "response",
                response.start_ns,
                response.end_ns,
                events.activity,
                args,
                flows,
                out,
                False,
                self.lane_uuids["Responses"][lane],
            ),
            self.turns[lane],
            values,
            partial(self._usage, response),
        )

    def tools_earliest(self) -> int:
        """The start of the first call fitted and not written yet (or far in the future)."""
        placed = self.tools.placed
        return min((call.start_ns for call, _ in placed), default=1 << 70)

    def _open(self) -> None:
        """The request counters' opening zeros at the session's start (the earliest time
        read so far; the end checks no later line moved it)."""
        self.opened_at = start = self.start
        uuids = [self.size_uuid, self.input_uuid, self.output_uuid]
        if self.has_window:
            uuids[1:1] = [self.window_uuid, self.fill_uuid]
        self.events.counters_now(start, dict.fromkeys(uuids, 0))

    def _usage(self, response: Response, ts: int) -> dict[int, int]:
        """The running input and output totals once `response` ended (at `ts`)."""
        if ts == self.last_usage_ts:
            raise NotHandled("two requests that end at one time")
        self.last_usage_ts = ts
        values = {}
        usage = response.usage
        if usage.input_tokens:
            self.input_total += usage.input_tokens
            values[self.input_uuid] = self.input_total
        if usage.output_tokens:
            self.output_total += usage.output_tokens
            values[self.output_uuid] = self.output_total
        return values

    def _context_samples(self, snapshot: ContextSnapshot, values: dict[int, int]) -> None:
        """The `Context: *` samples of this snapshot: the categories that moved, a 0 for
        one gone (layout/counters.py `_context_counters`)."""
        categories = snapshot.categories
        if categories is self.context_categories:
            return
        self.context_categories = categories
        uuids, last = self.context_uuids, self.context_last
        present = dict(categories)
        for category, value in present.items():
            uuid = uuids.get(category)
            if uuid is None:
                uuid = uuids[category] = self._context_counter(category)
            elif last[category] == value:
                continue
            values[uuid] = value
            last[category] = value
        if len(present) < len(uuids):
            for category, uuid in uuids.items():
                if category not in present and last[category] != 0:
                    values[uuid] = 0
                    last[category] = 0

    def _context_counter(self, category: Category) -> int:
        name = f"Context: {category.label}"
        uuid = self.ids.get(f"{self.key}:counter:{name}")
        self.events.declare(
            Track(
                uuid,
                name,
                TrackKind.COUNTER,
                parent=self.context_uuid,
                order_rank=len(CONTEXT_ROW.children)
                + CATEGORY_RANK.get(category.label, len(CATEGORY_RANK)),
                description=(
                    f"Tokens of this context category at each observed snapshot ({CHARS4_NOTE}; "
                    "native counts where the journal has them)."
                ),
                counter_unit="tokens",
                share_key=SHARE_KEY,
            )
        )
        return uuid


def export_codex(
    path: Path,
    diagnostics: Diagnostics,
    facts: TraceFacts,
    group: int,
    stream: IO[bytes],
    compress: bool,
) -> Session:
    """Read and write one Codex rollout in one pass (as stream/pi.py `export_pi`): its
    packets into `stream` once the whole rollout is read; returns the session as the end
    of the reading left it, for what the caller counts."""
    requests = io.BytesIO()
    sink = PacketSink(requests, compress=compress)
    head = PacketSink(stream, compress=compress)
    try:
        one = CodexPass(path, diagnostics, facts, group, sink.add)
        session = one.run()
        write_end(one, session, replace(facts, accounting=diagnostics.accounting()), head)
        sink.close()
        head.close()
    finally:
        sink.stop()
        head.stop()
    stream.write(requests.getbuffer())
    return session
