"""What changed the context or the run, as slices: compactions and the model requests
that made them (`Compaction responses`), the harness's own context reports (`Context
command`: Claude Code's /context), and the `Configuration` lane (the model runs and the
harness's markers)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

from agent_profiler.annotations import (
    compaction_args,
    compaction_response_args,
    context_command_args,
)
from agent_profiler.layout.state import BuilderState
from agent_profiler.layout.types import LaidSlice
from agent_profiler.model import AnchorKind
from agent_profiler.views import compactions_after


class CompactionAndContextSlices(BuilderState):
    """The Compaction, Compaction responses, Context command and Configuration slices."""

    def compaction_slices(self) -> Iterator[LaidSlice]:
        snapshots = self.anchored(AnchorKind.COMPACTION)
        lanes, uuids = self.lanes_of("Compaction")
        request_lanes, request_uuids = self.lanes_of("Compaction responses")
        requests = 0
        after = compactions_after(self.session)
        for index, compaction in enumerate(self.session.compactions):
            position = snapshots.get(compaction.id)
            args = partial(
                compaction_args,
                compaction,
                None if position is None else self.session.snapshots[position],
                self.previous(position),
                self.call_ids,
                after[index],
            )
            yield LaidSlice(
                "Compaction",
                compaction.kind,
                compaction.start_ns,
                compaction.end_ns,
                self.activity,
                args,
                track_uuid=uuids[lanes[index]],
            )
            request = compaction.request
            if request is not None:
                yield LaidSlice(
                    "Compaction responses",
                    "response",
                    request.start_ns,
                    request.end_ns,
                    self.activity,
                    compaction_response_args(request),
                    track_uuid=request_uuids[request_lanes[requests]],
                )
                requests += 1

    def native_report_slices(self) -> Iterator[LaidSlice]:
        """The harness's own context reports (Claude Code's /context runs), each a
        zero-length slice carrying its native snapshot."""
        lanes, uuids = self.lanes_of("Context command")
        for index, position in enumerate(self.natives):
            snapshot = self.session.snapshots[position]
            yield LaidSlice(
                "Context command",
                "/context",
                snapshot.time_ns,
                snapshot.time_ns,
                self.activity,
                partial(
                    context_command_args,
                    snapshot,
                    self.previous(position),
                    self.call_ids,
                ),
                track_uuid=uuids[lanes[index]],
            )

    def configuration_slices(self) -> Iterator[LaidSlice]:
        s = self.session
        lanes, uuids = self.lanes_of("Configuration")
        for index, (start, model) in enumerate(self.runs):
            end = self.run_end(index)
            args: dict[str, Any] = {
                "harness": s.harness.value,
                "provider": s.provider or "unknown",
                "model": model,
            }
            if s.window_tokens:
                args["context_window_tokens"] = s.window_tokens
            yield LaidSlice(
                "Configuration",
                "run-configuration",
                start,
                end,
                self.metadata,
                args,
                track_uuid=uuids[lanes[index]],
            )

    def marker_slices(self) -> Iterator[LaidSlice]:
        uuids = self.lanes_of("Configuration")[1]  # instants: all on the first lane
        for marker in self.session.markers:
            label = marker.kind.replace("_", " ")
            yield LaidSlice(
                "Configuration",
                f"{label}: {marker.value}",
                marker.time_ns,
                marker.time_ns,
                self.activity,
                {"marker": marker.kind, "value": marker.value},
                instant=True,
                track_uuid=uuids[0],
            )
