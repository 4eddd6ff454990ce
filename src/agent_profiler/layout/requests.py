"""The model's requests as slices: each prompt (an `Inputs` instant where it arrives and a
`Prompts` slice), each response with its `Turns` slice, and the failed requests; with the
flows from a prompt to its responses and from a response to its tool calls."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

from agent_profiler.annotations import (
    ContentMode,
    failed_request_args,
    response_args,
)
from agent_profiler.layout.state import BuilderState
from agent_profiler.layout.types import LaidSlice
from agent_profiler.model import AnchorKind

# One dict for every turn slice (a long session has thousands); writers only read args.
_TURN_ARGS: dict[str, Any] = {"kind": "turn"}


class PromptAndResponseSlices(BuilderState):
    """The Inputs, Prompts, Responses, Turns and Requests slices."""

    def prompt_slices(self) -> Iterator[LaidSlice]:
        previews = self.facts.content is ContentMode.PREVIEWS
        inputs = self.lanes_of("Inputs")[1]  # instants: all on the first lane
        lanes, uuids = self.lanes_of("Prompts")
        for index, prompt in enumerate(self.session.prompts):
            # Keyed by position: two prompts may share an id in a damaged journal, and
            # a flow id must sit on exactly two events.
            arrival = self.flow_id(f"input:{index}")
            yield LaidSlice(
                "Inputs",
                "prompt-input",
                prompt.start_ns,
                prompt.start_ns,
                self.activity,
                {"source": prompt.source, "timing": "journal-record-time"},
                flows=(arrival, *self.child_flows) if index == 0 else (arrival,),
                outgoing=(arrival,),
                instant=True,
                track_uuid=inputs[0],
            )
            text = prompt.preview if previews else f"[{prompt.chars} chars; not included]"
            args: dict[str, Any] = {
                "kind": "prompt",
                "text": text,
                "length": prompt.chars,
                "turn_id": prompt.id,
                "source": prompt.source,
            }
            out = tuple(
                self.flow_id(f"prompt:{self.responses[j].id}")
                for j in self.prompt_links.targets_of(index)
            )
            yield LaidSlice(
                "Prompts",
                "prompt",
                prompt.start_ns,
                prompt.end_ns,
                self.activity,
                args,
                flows=(arrival, *out),
                outgoing=out,
                track_uuid=uuids[lanes[index]],
            )

    def response_slices(self) -> Iterator[LaidSlice]:
        s = self.session
        snapshots = self.anchored(AnchorKind.RESPONSE)
        lanes, responses = self.lanes_of("Responses")
        turn_lanes, turns = self.lanes_of("Turns")
        for index, response in enumerate(self.responses):
            position = snapshots.get(response.id)
            args = partial(
                response_args,
                s,
                response,
                None if position is None else s.snapshots[position],
                self.previous(position),
                index == 0,
                self.call_ids,
            )
            arrival = (
                (self.flow_id(f"prompt:{response.id}"),)
                if self.prompt_links.source_of[index] >= 0
                else ()
            )
            out = tuple(
                self.flow_id(f"tool:{self.calls[k].call_id}")
                for k in self.call_links.targets_of(index)
            )
            lane = lanes[index]
            yield LaidSlice(
                "Responses",
                "response",
                response.start_ns,
                response.end_ns,
                self.activity,
                args,
                flows=arrival + out,
                outgoing=out,
                track_uuid=responses[lane],
            )
            yield LaidSlice(
                "Turns",
                "turn",
                response.start_ns,
                response.end_ns,
                self.activity,
                _TURN_ARGS,
                track_uuid=turns[turn_lanes[index]],
            )

    def failed_request_slices(self) -> Iterator[LaidSlice]:
        """Requests that failed before any usage came: spans with no size, so they never
        read as a request of 0 tokens (TRACE_CONTRACT §4: request without completion)."""
        lanes, uuids = self.lanes_of("Requests")
        for index, request in enumerate(self.session.failed_requests):
            yield LaidSlice(
                "Requests",
                "request",
                request.start_ns,
                max(request.end_ns, request.start_ns),
                self.activity,
                failed_request_args(request),
                track_uuid=uuids[lanes[index]],
            )
