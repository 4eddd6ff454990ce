"""One session's builder state (`BuilderState`): the model's items in layout order, the
relations its flows draw, the snapshots each one is compared with, and what the lanes,
counters and blocks planned so far are; with the helpers every kind of slice uses
(uuids, flow ids, lanes, counters). The slice kinds are mixins on it (requests, tools,
compactions, counters) that builder.SessionBuilder joins."""

from __future__ import annotations

import itertools
from array import array

from agent_profiler import estimate
from agent_profiler.annotations import TraceFacts
from agent_profiler.layout.planning import (
    COUNTER_DESCRIPTIONS,
    NO_LANES,
    Links,
    PlannedCounter,
    TrackIds,
    linked,
)
from agent_profiler.layout.types import Block, LaidSlice, Track, stable_id64
from agent_profiler.model import (
    AnchorKind,
    ContextSnapshot,
    Session,
)
from agent_profiler.views import (
    model_runs,
    session_span,
)

CATEGORY_ESTIMATE_NOTE = estimate.CHARS4_NOTE


class BuilderState:
    """What planning one session knows, worked out from the model when the builder is made,
    and filled in as it goes: the blocks, counters and tracks so far, the flows that
    start at each tool call, and (by assign_tracks) each slice's lane."""

    def __init__(
        self, session: Session, parent_uuid: int | None, facts: TraceFacts, ids: TrackIds
    ) -> None:
        self.session = session
        self.key = session.session_id
        self.ids = ids
        self.prefix = session.harness.category_prefix
        self.activity = f"{self.prefix}.activity"
        self.metadata = f"{self.prefix}.metadata"
        self.capture_uuid = ids.get(f"capture:{self.key}")
        self.parent_uuid = parent_uuid
        self.facts = facts
        # A calibrated export says so wherever the trace describes its estimates.
        self.calibrated = estimate.is_calibrated(x.basis for x in session.snapshots)
        self.estimate_note = estimate.CALIBRATED_NOTE if self.calibrated else CATEGORY_ESTIMATE_NOTE
        self.blocks: list[Block] = []
        self.counters: dict[str, PlannedCounter] = {}
        self.tracks: list[Track] = []
        # The capture spans everything the session holds, so every counter's closing
        # zero comes after its last sample.
        self.start, self.end = session_span(session)
        # The last model run ends where the session's span does, before `build` may move
        # the end 1 ns past a counter's last sample.
        self.runs_end = self.end
        # The call ids of the capture's tool slices (one per tool call): the changes they
        # caused link to them, which lets `context` leave out what the link already says.
        self.call_ids = frozenset(call.call_id for call in session.tool_calls)
        # Each snapshot's predecessor in time, by position in `session.snapshots` (-1:
        # none; snapshots are frozen and may be equal), against which repeated optional
        # `context` keys are left out; none for a snapshot that shares its time with the
        # one before (a reader could not order the two). Stable: as snapshots_in_time_order.
        snapshots = session.snapshots
        in_time = sorted(range(len(snapshots)), key=lambda i: snapshots[i].time_ns)
        self.before = array("q", itertools.repeat(-1, len(snapshots)))
        for before, after in itertools.pairwise(in_time):
            if snapshots[before].time_ns < snapshots[after].time_ns:
                self.before[after] = before
        del in_time
        # The model's items in the order their slices are laid out.
        self.responses = sorted(
            [*session.responses, *session.unmetered_responses],
            key=lambda r: (r.start_ns, r.end_ns, r.id),
        )
        self.calls = sorted(session.tool_calls, key=lambda c: (c.start_ns, c.call_id))
        self.runs = model_runs(session)
        self.natives = [i for i, x in enumerate(snapshots) if x.anchor is AnchorKind.NATIVE]
        # Flows, as the relations of the model that they draw: worked out here, their ids
        # made with the slices. A prompt id names its first prompt; a response id its last
        # response, and a call id its last tool call (the slice a later one replaced).
        first_prompt: dict[str, int] = {}
        for index, prompt in enumerate(session.prompts):
            first_prompt.setdefault(prompt.id, index)
        self.prompt_links = Links.of(  # prompt → its responses
            len(session.prompts),
            (
                linked(first_prompt, r.prompt_id, r.start_ns, session.prompts)
                for r in self.responses
            ),
        )
        last_response = {response.id: index for index, response in enumerate(self.responses)}
        self.call_links = Links.of(  # response → its tool calls
            len(self.responses),
            (linked(last_response, c.response_id, c.start_ns, self.responses) for c in self.calls),
        )
        self.call_flows: dict[int, tuple[int, ...]] = {}  # call index → flows starting there
        self.additions: list[LaidSlice] = []
        self.child_flows: tuple[int, ...] = ()  # flows from a parent's tool to the first input
        self.session_input = False  # no prompt: the first input is made at the start
        # Filled by assign_tracks: each slice's lane, per track and per block item.
        self.lanes: dict[str, array[int]] = {}
        self.lane_uuids: dict[str, list[int]] = {}

    # -- helpers ----------------------------------------------------------

    def uuid(self, key: str) -> int:
        return self.ids.get(f"{self.key}:{key}")

    def previous(self, position: int | None) -> ContextSnapshot | None:
        """The snapshot before the one at `position` in time (see `before`)."""
        found = -1 if position is None else self.before[position]
        return self.session.snapshots[found] if found >= 0 else None

    def anchored(self, anchor: AnchorKind) -> dict[str, int]:
        """anchor id → the position of its (last) snapshot of that anchor kind."""
        return {x.anchor_id: i for i, x in enumerate(self.session.snapshots) if x.anchor is anchor}

    def flow_id(self, key: str) -> int:
        return stable_id64(f"{self.key}:flow:{key}")

    def last_calls(self, call_ids: set[str]) -> dict[str, int]:
        """call id → the index of its (last) tool slice, for these ids."""
        return {call.call_id: i for i, call in enumerate(self.calls) if call.call_id in call_ids}

    def counter(self, name: str, parent: str = "capture", share: bool = False) -> PlannedCounter:
        if name not in self.counters:
            description = COUNTER_DESCRIPTIONS.get(name, "")
            if parent == "context":
                description = (
                    f"Tokens of this context category at each observed snapshot ("
                    f"{self.estimate_note}; native counts where the journal has them)."
                )
            self.counters[name] = PlannedCounter(name, parent, share, description)
        return self.counters[name]

    def lanes_of(self, track: str) -> tuple[array[int], list[int]]:
        """The lane of each slice of `track` (in its block's order) and each lane's uuid."""
        return self.lanes.get(track, NO_LANES), self.lane_uuids.get(track, [])

    def run_end(self, index: int) -> int:
        """A model run lasts until the next one starts, the last one to the span's end."""
        return self.runs[index + 1][0] if index + 1 < len(self.runs) else self.runs_end
