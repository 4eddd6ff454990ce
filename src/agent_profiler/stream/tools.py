"""A one-pass export's tool calls (layout/tracks.py's Tools row, as the pass writes it):
each call becomes a slice once it ends, on a lane fitted as the calls come (the calls a
message started share their start, so they are fitted together once they have all
ended: first fit takes them longest first), and is written once the next request's
snapshot says whether it caused one of the largest additions so far. A call that did is
held: its end is written then, its begin at the end of the session with the flows to the
additions still among the largest (the instants are only known at the end, and a flow's
source comes first). At most MAX_ADDITION_INSTANTS calls are held at a time; those pushed
out of the largest get their begin at the end too, without a flow."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from agent_profiler.annotations import tool_args
from agent_profiler.layout.types import (
    R_SLICE_BEGIN,
    LaidSlice,
    Merge,
    Track,
    TrackKind,
    stable_id64,
)
from agent_profiler.model import ToolCall
from agent_profiler.stream.emit import Events, OnlineLanes
from agent_profiler.stream.log import Additions, NotHandled
from agent_profiler.targets import safe_target

_set = object.__setattr__  # (a class's attribute is looked up the generic way each time)


class StreamTools:
    """The Tools slices of one session as its calls end (see the module's docstring)."""

    def __init__(
        self,
        events: Events,
        track: Callable[[int], int],
        flow_in: Callable[[str], int],
        additions: Additions,
        cwd: Callable[[], str | None],
    ) -> None:
        self.events = events
        self.track = track  # a lane's uuid (declared at its first slice)
        self.flow_in = flow_in  # the flow from a call's response
        self.additions = additions
        # The session's cwd, that a call's path target is made safe with (as the model's
        # Session does): the same when the session ends, or the pass is not used.
        self.cwd = cwd
        self.cwd_used: list[str | None] = []
        self.lanes = OnlineLanes()
        self.placed: list[tuple[ToolCall, int]] = []  # ended and fitted, awaiting a snapshot
        self.held: dict[str, tuple[ToolCall, int]] = {}  # among the largest additions' calls
        # pushed out of the largest additions' calls: written at the end, without a flow
        self.late: list[tuple[ToolCall, int]] = []

    def fit(self, calls: list[ToolCall]) -> None:
        """A message's calls, all ended (stream/pi_reading.py): fitted on lanes together,
        first fit's order (start, longest first, layout order: calls by start and id)."""
        calls.sort(key=lambda c: (c.start_ns, -c.end_ns, c.call_id))
        place, placed = self.lanes.place, self.placed
        for call in calls:
            lane, _ = place(call.start_ns, call.end_ns)
            placed.append((call, lane))

    def decide(self) -> None:
        """After a snapshot was taken: each call fitted since caused one of the largest
        additions so far (held) or not (written now)."""
        if not self.placed:
            return
        causes = self.additions.causes
        held = self.held
        for call, lane in self.placed:
            if call.call_id in causes:
                # Its end now, its begin (and the flows on it) at the end: an end written
                # late could come after a begin of the same time on its lane, which
                # Trace Processor would match with it (a zero-length call keeps its lane
                # until one past its start, and both its events wait).
                held[call.call_id] = (call, lane)
                if call.end_ns > call.start_ns:
                    self.events.end_of(self.track(lane), call.start_ns, call.end_ns)
            else:
                self._write(call, lane, ())
        self.placed = []
        if held:
            for call_id in [c for c in held if c not in causes]:
                self.late.append(held.pop(call_id))

    def finish(self, key: str, session_end: int) -> None:
        """The calls still waiting, with the flows to the largest additions."""
        self.decide()
        flows: dict[str, tuple[int, ...]] = {}
        for entry in sorted(self.additions.kept, key=lambda e: e.key[:4]):
            change, snapshot = entry.key[4], entry.key[5]
            held = self.held.get(change.source_id)
            if held is None:
                raise NotHandled("an addition of a call written before it was one")
            if snapshot.time_ns >= held[0].start_ns:
                flow = stable_id64(f"{key}:flow:addition:{change.id}:{snapshot.time_ns}")
                flows[change.source_id] = (*flows.get(change.source_id, ()), flow)
        for call_id, (call, lane) in self.held.items():
            self._write(call, lane, flows.get(call_id, ()), call.end_ns == call.start_ns)
        for call, lane in self.late:
            self._write(call, lane, (), call.end_ns == call.start_ns)
        self.held, self.late = {}, []

    def _write(self, call: ToolCall, lane: int, out: tuple[int, ...], end: bool = True) -> None:
        if call.target.startswith("path:"):
            cwd = self.cwd()
            if not self.cwd_used:
                self.cwd_used.append(cwd)
            elif self.cwd_used[0] != cwd:
                raise NotHandled("a call's path target made safe before the session's cwd")
            safe = safe_target(call.target, cwd)
            if safe != call.target:  # (the call is this pass's own, not handed on yet)
                _set(call, "target", safe)
        arrival = self.flow_in(call.call_id) if call.response_id else 0
        self.events.slice(
            R_SLICE_BEGIN,
            LaidSlice(
                "Tools",
                call.name,
                call.start_ns,
                call.end_ns,
                self.events.activity,
                partial(tool_args, call, False, True),
                (arrival, *out) if arrival else out,
                out,
                False,
                self.track(lane),
            ),
            end=end,
        )


def lane_track(uuid: int, parent: int, rank: int, description: str) -> Track:
    """A Tools lane's descriptor (layout/plan.py `_slice_tracks`)."""
    return Track(
        uuid,
        "Tools",
        TrackKind.SLICE,
        parent=parent,
        order_rank=rank,
        merge=Merge.BY_NAME,
        description=description,
    )


__all__ = ["StreamTools", "lane_track"]
