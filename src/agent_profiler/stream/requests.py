"""What the one passes (stream/pi.py, stream/codex.py, stream/claude.py) share once a
request is read: the track uuids its first request fixes, its flows, its Responses and
Turns lanes, the request counters (their opening zeros, Context size, window and fill,
the usage totals, the `Context: *` categories) and the Tools lanes' descriptors
(`RequestPass`); what the passes that write their requests in the order read (Codex,
Claude Code) share of a request's and a compaction's checks (`OrderedPass`); and the
export around a pass (`export_pass`). Each pass keeps its reading, when it writes a
request, and what window a request states."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple, cast

from agent_profiler.annotations import TraceFacts
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.estimate import CHARS4_NOTE
from agent_profiler.layout.counters import CATEGORY_RANK, CONTEXT_GROUP
from agent_profiler.layout.plan import SHARE_KEY
from agent_profiler.layout.planning import TrackIds
from agent_profiler.layout.types import LaidSlice, Merge, Track, TrackKind, stable_ids64
from agent_profiler.model import AnchorKind, Category, ContextSnapshot, Response, Session
from agent_profiler.spools import SpooledBytes
from agent_profiler.stream.calls import LATER, PassCalls
from agent_profiler.stream.emit import Events, OnlineLanes
from agent_profiler.stream.end import CONTEXT_ROW, RANK, ROWS, TURN_ARGS, write_end
from agent_profiler.stream.log import Additions, NotHandled, ReadAgain
from agent_profiler.stream.tools import StreamTools, lane_track
from agent_profiler.writers.chunks import PacketSink
from agent_profiler.writers.events import UNIQUE_STRING_KEYS, EventEncoder
from agent_profiler.writers.perfetto import sequence_of

if TYPE_CHECKING:
    from agent_profiler.stream.claude import ClaudePass
    from agent_profiler.stream.codex import CodexPass
    from agent_profiler.stream.pi import PiPass

# Call and source ids not interned by a pass that writes a long session's calls (Claude
# Code's, Pi's): the table of its interned strings grew by one for every call and
# response (≈ 1 MB on the 100 MB Claude Code bench, 4 MB at Pi 50 MB, traced).
PASS_UNIQUE_KEYS = UNIQUE_STRING_KEYS | {"call_id", "source_id"}
# The requests' packets held in memory until the head is written, at most (then spooled).
SPOOL_AFTER = 1 << 18
# (A global: an enum class's attribute goes through EnumType's __getattr__ hook in
# CPython 3.11, ~900 instructions, and `OrderedPass._arrive` runs once a request.)
_RESPONSE = AnchorKind.RESPONSE


class ReadPrompt(NamedTuple):
    """A prompt as the flows read it (`RequestPass._flows`)."""

    id: str
    start_ns: int


class ReadSoFar:
    """What a writing side knows of its journal from the reading side's batches
    (stream/codex_reading.py, stream/claude_reading.py): what RequestPass reads of a
    builder, without one."""

    def __init__(self) -> None:
        self.prompts: list[ReadPrompt] = []
        self.tools: set[str] = set()  # the ids of the calls read
        self.project: str | None = None

    def take(self, prompts: list[tuple[str, int]], calls: list[str], project: str | None) -> None:
        """A batch's prompts and call ids read since the last, and the cwd so far."""
        if prompts:
            self.prompts.extend(ReadPrompt(*p) for p in prompts)
        self.tools.update(calls)
        self.project = project


class RequestPass:
    """The state and the writing of the requests a one pass shares (see the module's
    docstring); `builder` is the pass's own session builder."""

    builder: Any
    # Whether the reading may let go of what a journal seldom needs again (stream/pi.py: a
    # helper's reading of a linear Pi session), reading it again if it does (`ReadAgain`).
    lean = False

    def let_go(self) -> None:
        """Drop the pass's state now, not at the cycle collector's next full collection:
        its parts hold each other's bound methods (the tools the pass's lanes and flows;
        Claude Code's calls and tools each other's), cycles that kept the reader's
        entries and the log's items alive. A folder of three 20 MB Pi journals (`--jobs
        1`) peaked at 63 MB, 53 MB with each group's pass let go."""
        tools = vars(self).get("tools")
        if tools is not None:
            vars(tools).clear()
        vars(self).clear()

    def __init__(
        self,
        path: Path,
        facts: TraceFacts,
        group: int,
        add: Any,
        activity: str,
        unique: frozenset[str] = UNIQUE_STRING_KEYS,
    ) -> None:
        self.path = path
        self.facts = facts
        self.group = group
        self.ids = TrackIds(group)
        self.encoder = EventEncoder(sequence_of(group), unique=unique)
        self.events = Events(self.encoder, add, activity)
        self.lanes = OnlineLanes()
        self.key = ""
        self.session_facts: Session | None = None
        self.previous: ContextSnapshot | None = None  # the last written
        self.written = 0  # requests written
        self.lane_uuids: dict[str, list[int]] = {"Responses": [], "Turns": []}
        self.turns: list[LaidSlice] = []  # each Turns lane's slice, as encoded
        self.context_uuids: dict[Category, int] = {}
        self.context_last: dict[Category, int] = {}
        self.context_categories: object = None
        # the request counters' last values (their samples start with a 0)
        self.last_window = self.last_fill = self.input_total = self.output_total = 0
        self.last_usage_ts = -1
        self.opened_at: int | None = None  # where the counters' opening zeros were written
        self.tool_lanes: list[int] = []
        self.prompt_flow: Any = None
        self.tool_flow: Any = None
        self.flows_in: dict[str, int] = {}  # call id → the flow from its response
        self.first_prompt: dict[str, int] = {}

    def read(self) -> Session:
        """The whole journal read and its requests written; the session as it was left."""
        raise NotImplementedError

    # ------------------------------------------------------------------ the first request

    def _uuids(self, key: str, window: bool) -> None:
        """The track uuids the first request fixes, numbered in the group's block as the
        model path numbers them (the capture's uuid is its `capture_id`); the window's and
        the fill's where the session has a window."""
        self.session_uuid = self.ids.get(f"session:{key}")
        self.capture_uuid = self.ids.get(f"capture:{key}")
        self.context_uuid = self.ids.get(f"{key}:group:{CONTEXT_GROUP}")
        counter = f"{key}:counter:"
        self.size_uuid = self.ids.get(counter + "Context size")
        if window:
            self.window_uuid = self.ids.get(counter + "Context window")
            self.fill_uuid = self.ids.get(counter + "Context fill")
        self.input_uuid = self.ids.get(counter + "Input tokens")
        self.output_uuid = self.ids.get(counter + "Output tokens")
        self.prompt_flow = stable_ids64(f"{key}:flow:prompt:")
        self.tool_flow = stable_ids64(f"{key}:flow:tool:")

    # ------------------------------------------------------------------ calls and flows

    def _cwd(self) -> str | None:
        return self.builder.project  # type: ignore[no-any-return]

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

    def _flows(self, response: Response, started: list[str]) -> tuple[int, tuple[int, ...]]:
        """A request's flows: from its prompt's input (0: none), to each call it started
        (`started`, in layout order; each call's flow worked out once for its two ends)."""
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
        return arrival, tuple(map(flows_in.__getitem__, started))  # (no generator a request)

    # ------------------------------------------------------------------ a request's writing

    def _request(
        self,
        response: Response,
        snapshot: ContextSnapshot,
        window: int,
        args: Any,
        arrival: int,
        out: tuple[int, ...],
    ) -> None:
        """A request's response and turn slices on their lane (its tracks declared at its
        first request), with their flows (from its prompt's input, 0 for none, and `out`);
        its samples at its start (layout/counters.py `session_counters`): the context's
        size (every sample kept), the window it is in (0: none) and the fill where they
        change, the context categories that moved, in one packet; its usage totals at its
        end. (One method: it runs once a request.)"""
        events = self.events
        lane, first = self.lanes.place(response.start_ns, response.end_ns)
        if first:
            for name in ("Responses", "Turns"):
                uuid = self.ids.get(f"{self.key}:{name}:{lane}")
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
            # A turn's slice as the encoder reads it (its name, args, track: not its span).
            self.turns.append(
                LaidSlice("Turns", "turn", 0, 0, events.activity, TURN_ARGS, (), (), False, uuid)
            )
        size = response.usage.prompt_tokens
        values = {self.size_uuid: size}
        if window:
            if window != self.last_window:
                values[self.window_uuid] = self.last_window = window
            fill = -(-size * 100 // window)
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
                (arrival, *out) if arrival else out,
                out,
                False,
                self.lane_uuids["Responses"][lane],
            ),
            self.turns[lane],
            values,
            partial(self._usage, response),
        )

    # ------------------------------------------------------------------ the request counters

    def _fill(self, size: int, window: int, values: dict[int, int]) -> None:
        """A `Context fill` sample of a size in a window, where the fill changes."""
        fill = -(-size * 100 // window)
        if fill != self.last_fill:
            values[self.fill_uuid] = self.last_fill = fill

    def _open(self, start: int, window: bool) -> None:
        """The request counters' opening zeros, at the session's start (the earliest time
        read so far; the end checks no later line moved it): the first packets of the
        pass's sequence, before any sample that may share their time (Trace Processor
        keeps the file's order at one time)."""
        self.opened_at = start
        uuids = [self.size_uuid, self.input_uuid, self.output_uuid]
        if window:
            uuids[1:1] = [self.window_uuid, self.fill_uuid]
        self.events.counters_now(start, dict.fromkeys(uuids, 0))

    def _usage(self, response: Response, ts: int) -> dict[int, int]:
        """The running input and output totals once `response` ended (at `ts`)."""
        if ts == self.last_usage_ts:
            raise NotHandled("two requests that end at one time")  # (one sample each)
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


class OrderedPass(RequestPass):
    """A pass whose requests are written in the order they are read, each once its
    snapshot is replayed, its calls taken by stream/calls.py (stream/codex.py,
    stream/claude.py): what they share of a request's and a compaction's writing."""

    additions: Additions
    tools: StreamTools
    calls: PassCalls[Any]
    # Whether a compaction's snapshot must be later than the last one written (Claude
    # Code's pass), or only not at its time (Codex's, as it was written: its rollouts were
    # not seen to go back in time there, and a stricter check could only fall back more).
    COMPACTION_AFTER = False

    def __init__(
        self,
        path: Path,
        facts: TraceFacts,
        group: int,
        add: Any,
        activity: str,
        unique: frozenset[str] = UNIQUE_STRING_KEYS,
    ) -> None:
        super().__init__(path, facts, group, add, activity, unique)
        self.committed = (-(2**63), 0)  # the last request written: (start, end)
        # each compaction's snapshot and the one before it (its slice's arguments read
        # them at the end)
        self.compaction_snapshots: list[ContextSnapshot] = []

    def _write(
        self, response: Response, snapshot: ContextSnapshot, arrival: int, out: tuple[int, ...]
    ) -> None:
        raise NotImplementedError

    def _first(self, response: Response) -> None:
        """What the first request fixes, as the request arrives (the Codex and Claude Code
        passes: what their reading side said of it)."""
        raise NotImplementedError

    def _arrive(self, response: Response, snapshot: ContextSnapshot, started: list[str]) -> None:
        """A request and its snapshot: its flows, its additions; written now (a request
        read later starts later, or the pass falls back). `started`: its calls' ids, in
        layout order."""
        if snapshot.anchor is not _RESPONSE:
            raise NotHandled("a snapshot of something other than a request")
        if snapshot.anchor_id != response.id:
            raise NotHandled("a request without its snapshot")
        if self.session_facts is None:
            self._first(response)
        arrival, out = self._flows(response, started)
        self.additions.take(snapshot)
        self.tools.decide()
        order = (response.start_ns, response.end_ns)
        if order < self.committed:
            raise NotHandled("a request that starts before one written already")
        self.committed = order
        self._write(response, snapshot, arrival, out)

    def _written(self, snapshot: ContextSnapshot) -> tuple[int, ContextSnapshot | None]:
        """A request about to be written (its snapshot): its index, and the snapshot
        written before it that its arguments read (None right at a compaction's end:
        none before it in time)."""
        index = self.written
        self.written += 1
        previous = self.previous
        if previous is not None and previous.time_ns >= snapshot.time_ns:
            if previous.time_ns > snapshot.time_ns:
                # (a request before it would have been refused by `_arrive`'s order check:
                # this is a compaction read before the request and stamped after its start,
                # as a Claude Code microcompaction written after the result that triggered
                # the request; the model path orders their samples by time)
                raise NotHandled("a request starting before a compaction written already")
            if previous.anchor is not AnchorKind.COMPACTION:
                raise NotHandled("two requests at one time")
            previous = None
        self.previous = snapshot
        return index, previous

    def _compaction_begun(self, draft: Any, snapshot: ContextSnapshot) -> None:
        """A compaction (its draft, or the compaction: its id) and its snapshot, the
        requests before it written: the additions it caused taken, the calls fitted
        decided, its snapshot and the one before it kept."""
        if snapshot.anchor is not AnchorKind.COMPACTION or snapshot.anchor_id != draft.id:
            raise NotHandled("a compaction without its snapshot")
        if self.written == 0:
            raise NotHandled("a compaction before the first request")
        self.additions.take(snapshot)
        self.tools.decide()
        previous = self.previous
        if previous is not None:
            if self.COMPACTION_AFTER and previous.time_ns >= snapshot.time_ns:
                raise NotHandled("a compaction at or before the time of a request")
            if previous.time_ns == snapshot.time_ns:
                raise NotHandled("a compaction at the time of a request")
            self.compaction_snapshots.append(previous)
        self.compaction_snapshots.append(snapshot)
        self.previous = snapshot

    def _tools_earliest(self) -> int:
        """The start of the first call fitted and not written yet (or far in the future)."""
        earliest = LATER  # (a loop, not a generator: once a request)
        for call, _ in self.tools.placed:
            if call.start_ns < earliest:
                earliest = call.start_ns
        return earliest


def export_pass(
    kind: type[PiPass | CodexPass | ClaudePass],
    path: Path,
    diagnostics: Diagnostics,
    facts: TraceFacts,
    group: int,
    stream: IO[bytes],
    compress: bool,
    *,
    threaded: bool = True,
) -> Session:
    """Read and write one journal in one pass (`kind`: the pass, stream/pi.py's or
    stream/codex.py's): its packets into `stream` once the whole journal is read (the
    requests' packets wait until the head is written before them: about the trace's
    size, past `SPOOL_AFTER` in a file with no name, not in memory); returns
    the session as the end of the reading left it (its requests, calls and prompts, no
    snapshots but those the end reads), for what the caller counts. `threaded`: the
    deflating may run on a thread (chunks.PacketSink). A lean reading that let go of
    what the journal needs again (`ReadAgain`, before anything went into `stream`):
    the pass again, its reading keeping everything."""
    lean = True
    while True:  # (twice at most: the second reading is not lean)
        requests = SpooledBytes(SPOOL_AFTER)
        sink = PacketSink(cast(IO[bytes], requests), compress=compress, threaded=threaded)
        head = PacketSink(stream, compress=compress, threaded=threaded)
        one: PiPass | CodexPass | ClaudePass | None = None
        try:
            one = kind(path, diagnostics, facts, group, sink.add)
            one.lean = lean
            session = one.read()
            write_end(one, session, replace(facts, accounting=diagnostics.accounting()), head)
            sink.close()
            head.close()
            requests.copy_to(stream)
            return session
        except ReadAgain:
            if not lean:
                raise
            lean = False
        finally:
            sink.stop()
            head.stop()
            requests.close()
            if one is not None:
                one.let_go()
