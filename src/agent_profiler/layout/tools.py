"""Tool calls and subagents as slices: a `Tools` slice per call, and the flow from a
launching tool call to its subagent's first prompt-input (made at the subagent's start
when it has no prompt). Sessions are laid out one at a time, so each end of that flow is
worked out from the model alone, by the session it sits in."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial

from agent_profiler.annotations import (
    ContentMode,
    tool_args,
)
from agent_profiler.layout.state import BuilderState
from agent_profiler.layout.types import Block, LaidSlice, stable_id64
from agent_profiler.model import Session
from agent_profiler.views import session_span


def _first_input_start(session: Session) -> int:
    """When a session's first prompt-input is: its first prompt, else its start."""
    return session.prompts[0].start_ns if session.prompts else session_span(session)[0]


class ToolAndSubagentSlices(BuilderState):
    """The Tools slices, and both ends of the flows from a launching tool call to its
    subagent's first input (`link_out`, `link_in`)."""

    def tool_slices(self) -> Iterator[LaidSlice]:
        previews = self.facts.content is ContentMode.PREVIEWS
        lanes, uuids = self.lanes_of("Tools")
        for index, call in enumerate(self.calls):
            linked = self.call_links.source_of[index] >= 0
            arrival = (self.flow_id(f"tool:{call.call_id}"),) if linked else ()
            out = self.call_flows.get(index, ())
            yield LaidSlice(
                "Tools",
                call.name,
                call.start_ns,
                call.end_ns,
                self.activity,
                partial(tool_args, call, previews, not self.facts.redact),
                flows=arrival + out,
                outgoing=out,
                track_uuid=uuids[lanes[index]],
            )

    def link_out(self, links: Sequence[tuple[str, Session]]) -> None:
        """The launching tools' ends of the flows to their children's first prompt-input
        (each child's builder adds the other end: sessions are laid out one at a time)."""
        last_call = self.last_calls({call_id for call_id, _ in links})
        for call_id, child in links:
            index = last_call[call_id]
            if _first_input_start(child) < self.calls[index].start_ns:
                continue
            flow_id = stable_id64(f"{self.key}:flow:child:{call_id}:{child.session_id}")
            self.call_flows[index] = (*self.call_flows.get(index, ()), flow_id)

    def link_in(self, parent: Session, call_id: str, tool_start: int) -> None:
        """The child's end of a flow from its launching tool (see link_out): its first
        prompt-input, made at the session's start when it has none."""
        if not self.session.prompts and not self.session_input:
            self.session_input = True
            self.blocks.append(Block("session input", 1, self.session_input_slices))
        start = self.session.prompts[0].start_ns if self.session.prompts else self.start
        if start < tool_start:
            return
        self.child_flows += (stable_id64(f"{parent.session_id}:flow:child:{call_id}:{self.key}"),)

    def session_input_slices(self) -> Iterator[LaidSlice]:
        yield LaidSlice(
            "Inputs",
            "prompt-input",
            self.start,
            self.start,
            self.activity,
            {"source": "agent", "timing": "session-start"},
            flows=self.child_flows,
            instant=True,
            track_uuid=self.lanes_of("Inputs")[1][0],
        )
