"""`SessionBuilder`: one session's plan, from the kinds of slices its mixins make (requests,
tools, compactions, counters). It lists the blocks in layout order, puts every slice on a
lane of its logical track, declares the tracks in display order, and hands over the plan
(`finish`), letting go of its blocks so the two are no cycle for the garbage collector."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from agent_profiler.annotations import profile_args
from agent_profiler.layout.compactions import CompactionAndContextSlices
from agent_profiler.layout.counters import CounterAndAdditionPlans
from agent_profiler.layout.planning import DISPLAY_RANK, SLICE_TRACKS, first_fit, rising
from agent_profiler.layout.requests import PromptAndResponseSlices
from agent_profiler.layout.tools import ToolAndSubagentSlices
from agent_profiler.layout.types import (
    Block,
    LaidSlice,
    Merge,
    Place,
    SessionPlan,
    Track,
    TrackKind,
)
from agent_profiler.model import AnchorKind
from agent_profiler.views import session_label


class SessionBuilder(
    PromptAndResponseSlices,
    ToolAndSubagentSlices,
    CompactionAndContextSlices,
    CounterAndAdditionPlans,
):
    """Plans one session's slices, counters and tracks (`build`, the links, then
    `assign_tracks`); `finish` hands over the plan, whose blocks make the slices."""

    def build(self) -> None:
        session = self.session
        prompts = session.prompts
        requests = sum(1 for c in session.compactions if c.request is not None)
        self.blocks += [
            Block("capture", 1, self._profile, ordered=True),
            Block(
                "prompts",
                2 * len(prompts),
                self.prompt_slices,
                # (instant, prompt) pairs are in (start, rank) order when starts increase
                ordered=all(a.start_ns < b.start_ns for a, b in itertools.pairwise(prompts)),
            ),
            Block("responses", 2 * len(self.responses), self.response_slices, ordered=True),
            Block("tools", len(self.calls), self.tool_slices, ordered=True),
            Block("compactions", len(session.compactions) + requests, self.compaction_slices),
            Block(
                "runs", len(self.runs), self.configuration_slices, rising(s for s, _ in self.runs)
            ),
            Block(
                "failed",
                len(session.failed_requests),
                self.failed_request_slices,
                rising(r.start_ns for r in session.failed_requests),
            ),
            Block(
                "markers",
                len(session.markers),
                self.marker_slices,
                rising(m.time_ns for m in session.markers),
            ),
            Block(
                "natives",
                len(self.natives),
                self.native_report_slices,
                rising(self.session.snapshots[i].time_ns for i in self.natives),
            ),
        ]
        last_sample = self.response_counters()
        latest_context = self.context_counters()
        self.largest_additions()
        self.blocks.append(Block("additions", len(self.additions), lambda: iter(self.additions)))
        # Every counter's last value is 0 at the session's end (TRACE_CONTRACT §6), and it
        # must be the last sample in time too: Trace Processor orders a track's samples by
        # timestamp only, so a closing zero sharing its timestamp with the last sample
        # (cumulative usage at the final response's end, which is usually the session's
        # end) reads as "the last value is N" to anyone ordering by ts. So when a sample
        # sits at the end, the session ends 1 ns later: all counters still drop together,
        # at the end of `profile (1)`, which still spans every sample of its capture
        # (§3), and 1 ns is below anything a journal's clock resolves.
        if latest_context is not None:  # its repeats were dropped, not its time
            last_sample = max(last_sample, latest_context)
        if self.counters and last_sample >= self.end:
            self.end = last_sample + 1  # profile (1) and the closing zeros are made with it

    def _profile(self) -> Iterator[LaidSlice]:
        args = profile_args(
            self.session,
            self.facts,
            self.capture_uuid,
            self.start,
            self.calibrated,
            {
                id(snapshot): previous
                for i, snapshot in enumerate(self.session.snapshots)
                if snapshot.anchor is AnchorKind.SESSION
                and (previous := self.previous(i)) is not None
            },
            self.call_ids,
        )
        yield LaidSlice(
            "Session",
            "profile (1)",
            self.start,
            self.end,
            self.metadata,
            args,
            track_uuid=self.lane_uuids["Session"][0],
        )

    # -- lanes and tracks ---------------------------------------------------

    def _places(self) -> Iterator[tuple[str, list[Place]]]:
        """Every slice but the capture's, one track at a time: (start, end, position,
        instant) in the order its blocks make them (position: its place in the layout,
        from 0). One track's list is made at a time: a long session's are not all held."""
        at: dict[str, int] = {}  # block kind → its first slice's place in the layout
        offset = 0
        for block in self.blocks:
            at[block.kind] = offset
            offset += block.count
        session = self.session
        inputs: list[Place] = [
            (p.start_ns, p.start_ns, at["prompts"] + 2 * i, True)
            for i, p in enumerate(session.prompts)
        ]
        if self.session_input:
            inputs.append((self.start, self.start, at["session input"], True))
        yield "Inputs", inputs
        yield (
            "Prompts",
            [
                (p.start_ns, p.end_ns, at["prompts"] + 2 * i + 1, False)
                for i, p in enumerate(session.prompts)
            ],
        )
        for track, first in (("Responses", at["responses"]), ("Turns", at["responses"] + 1)):
            yield (
                track,
                [
                    (r.start_ns, r.end_ns, first + 2 * i, False)
                    for i, r in enumerate(self.responses)
                ],
            )
        yield (
            "Tools",
            [(c.start_ns, c.end_ns, at["tools"] + i, False) for i, c in enumerate(self.calls)],
        )
        compactions: list[Place] = []
        requests: list[Place] = []
        position = at["compactions"]
        for compaction in session.compactions:
            compactions.append((compaction.start_ns, compaction.end_ns, position, False))
            position += 1
            if compaction.request is not None:
                request = compaction.request
                requests.append((request.start_ns, request.end_ns, position, False))
                position += 1
        yield "Compaction", compactions
        yield "Compaction responses", requests
        yield (
            "Configuration",
            [
                *(
                    (start, self.run_end(i), at["runs"] + i, False)
                    for i, (start, _) in enumerate(self.runs)
                ),
                *(
                    (m.time_ns, m.time_ns, at["markers"] + i, True)
                    for i, m in enumerate(session.markers)
                ),
            ],
        )
        yield (
            "Requests",
            [
                (r.start_ns, max(r.end_ns, r.start_ns), at["failed"] + i, False)
                for i, r in enumerate(session.failed_requests)
            ],
        )
        yield (
            "Context command",
            [
                (
                    session.snapshots[p].time_ns,
                    session.snapshots[p].time_ns,
                    at["natives"] + i,
                    False,
                )
                for i, p in enumerate(self.natives)
            ],
        )
        yield (
            "Largest additions",
            [(a.start, a.start, at["additions"] + i, True) for i, a in enumerate(self.additions)],
        )

    def assign_tracks(self) -> None:
        """Give each slice a track: one lane per logical track unless slices overlap,
        then first-fit lanes with the same name (merged by name in the UI). Slices take
        their lanes in (start, longest first, layout order), and a lane's track uuid is
        numbered at the first slice that takes it."""
        self.tracks.append(
            Track(
                self.capture_uuid,
                "agentprof.capture",
                TrackKind.GROUP,
                parent=self.parent_uuid,
                order_rank=0,  # first in its session's group, before its subagents
                explicit_child_order=True,
                merge=Merge.NONE,
                description=session_label(self.session),
            )
        )
        context_group = self.uuid("group:Context")
        first = [((self.start, -self.end, 0), "Session", 0)]
        counts: dict[str, int] = {}
        for track, places in self._places():
            if not places:
                continue
            lanes, firsts, counts[track] = first_fit(places)
            self.lanes[track] = lanes
            first += [(key, track, lane) for lane, key in firsts.items()]
        first.sort()
        for _, track, lane in first:
            key = "Session:profile" if track == "Session" else f"{track}:{lane}"
            uuids = self.lane_uuids.setdefault(track, [0] * counts.get(track, 1))
            uuids[lane] = self.uuid(key)
        # Tracks: profile track first, then the logical tracks in a fixed order.
        self.tracks.append(
            Track(
                self.lane_uuids["Session"][0],
                "Session",
                TrackKind.SLICE,
                parent=self.capture_uuid,
                order_rank=DISPLAY_RANK["Session"],
            )
        )
        for name in SLICE_TRACKS:
            for lane in range(counts.get(name, 0)):
                self.tracks.append(
                    Track(
                        self.lane_uuids[name][lane],
                        name,
                        TrackKind.SLICE,
                        parent=self.capture_uuid,
                        order_rank=DISPLAY_RANK[name],
                        merge=Merge.BY_NAME,
                    )
                )
        for counter in self.counters.values():
            if counter.parent == "capture":
                self.declare_counter(counter, self.capture_uuid)
        context_counters = [c for c in self.counters.values() if c.parent == "context"]
        if context_counters or self.additions:
            self.tracks.append(
                Track(
                    context_group,
                    "Context",
                    TrackKind.GROUP,
                    parent=self.capture_uuid,
                    order_rank=DISPLAY_RANK["Context"],
                    explicit_child_order=True,
                    description="Context composition by category (" + self.estimate_note + "). "
                    "'Context size' beside it is the reported request input.",
                )
            )
            for counter in context_counters:
                self.declare_counter(counter, context_group)
            if self.additions:
                self.tracks.append(
                    Track(
                        self.lane_uuids["Largest additions"][0],
                        "Largest additions",
                        TrackKind.SLICE,
                        parent=context_group,
                        # First in the group: right below the Tools lanes' neighbours, so
                        # the arrows from the tool calls cross as few counters as possible.
                        order_rank=0,
                        description="The largest non-baseline additions to the context; "
                        "each has a flow arrow from the tool call that caused it.",
                    )
                )
        for instant in self.additions:
            instant.track_uuid = self.lane_uuids["Largest additions"][0]

    def finish(self) -> SessionPlan:
        """The session's plan; counters become step-function series here. The plan's
        blocks and samples are the builder's methods: the builder lets go of them, so the
        two are not a cycle that only the garbage collector frees."""
        blocks, self.blocks = tuple(self.blocks), []
        counters, self.counters = self.counters, {}  # their samples are its methods too
        return SessionPlan(
            self.session,
            self.activity,
            self.capture_uuid,
            tuple(self.tracks),
            tuple(self.series(counter) for counter in counters.values()),
            blocks,
        )
