"""Chrome Trace Event Format (JSON) writer, for tools that read only JSON: the layout
(layout/) as `{"traceEvents": [...]}`, one process per session, one thread per lane.

It encodes the same layout as the Perfetto writer (layout/: same slices, lanes,
counter samples with their closing zeros, flows and arguments) as far as the format
allows: each session is a process (`pid`, named as the Perfetto trace names its
group, in the same order), each track lane a thread (`tid`)
named after the track, counters are `"C"` events of their session's process,
flows are `"s"`/`"f"` pairs. What JSON cannot express: track nesting (the
`Context` group, the capture hierarchy), counter units and shared y-axes, and
typed annotations (all numbers become JSON numbers). Times are microseconds
from the first event, with the wall-clock start in `metadata`, because absolute
epoch microseconds with a nanosecond fraction exceed a double's precision.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import IO, Any

import orjson

from agent_profiler.layout import SessionLayout, TraceFacts, TraceHeader, iter_layout
from agent_profiler.model import Session
from agent_profiler.version import __version__
from agent_profiler.views import session_span


def _us(ns: int, origin: int) -> float:
    return round((ns - origin) / 1000, 3)


class ChromeJsonWriter:
    """Writes sessions as one Chrome JSON trace (`{"traceEvents": [...]}`)."""

    name = "json"
    extension = ".json"
    binary = False
    by_group = False  # one JSON document: it takes every session at once

    def __init__(self, facts: TraceFacts | None = None) -> None:
        self.facts = facts or TraceFacts()

    def write(self, sessions: Sequence[Session], stream: IO[bytes]) -> int:
        """The document, written as it is made: a session's layout and events at a time
        (`iter_layout`), never the whole layout or every event at once (a 50 MB Codex
        session held 280 MB). The same bytes as one `orjson.dumps` of the document."""
        # The first event of all is the earliest session's capture, which spans the session
        # (views.session_span): known before any layout.
        origin = min((session_span(s)[0] for s in sessions), default=0)
        out = _Chunks(stream)
        out.raw(b'{"traceEvents":[')
        laid: list[Session] = []
        started: set[int] = set()  # flows whose start is written
        for pid, (group, plan) in enumerate(iter_layout(sessions, self.facts), 1):
            tracks = plan.laid_out()
            del plan
            laid.append(tracks.session)
            for event in _session_events(pid, group.name, tracks, origin, started):
                out.event(event)
        header = TraceHeader.of(laid).attributes()
        rest = {
            "displayTimeUnit": "ms",
            "metadata": {
                **{f"trace_attribute.{k}": v for k, v in header.items()},
                "exporter": f"agent-profiler {__version__}",
                "start_unix_ns": origin,
                "content": self.facts.content.value,
                "inputs": list(self.facts.inputs),
            },
        }
        out.raw(b"]," + orjson.dumps(rest)[1:])
        out.flush()
        return out.events


class _Chunks:
    """Events joined by commas, written in runs of about a megabyte."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self.parts: list[bytes] = []
        self.size = 0
        self.events = 0

    def raw(self, data: bytes) -> None:
        self.parts.append(data)
        self.size += len(data)

    def event(self, event: dict[str, Any]) -> None:
        data = orjson.dumps(event)
        if self.events:
            self.parts.append(b",")
        self.events += 1
        self.raw(data)
        if self.size >= 1 << 20:
            self.flush()

    def flush(self) -> None:
        self.stream.write(b"".join(self.parts))
        self.parts.clear()
        self.size = 0


def _session_events(
    pid: int, name: str, tracks: SessionLayout, origin: int, started: set[int]
) -> Iterator[dict[str, Any]]:
    """One session's events: its process, its threads (one per track lane, numbered in the
    order of the slices), its slices with their flows, its counters. `started`: the flows
    whose start is written (this session's and earlier ones'), added to as they are."""
    # The session's name as the Perfetto trace's group shows it; JSON has no nesting, so
    # sessions are processes in the trace's order (each parent, then its subagents).
    yield {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}
    yield {
        "ph": "M",
        "name": "process_sort_index",
        "pid": pid,
        "tid": 0,
        "args": {"sort_index": pid},
    }
    # Lanes are threads 1, 2, … skipping the process's own id: Perfetto takes the thread
    # whose id is its process's for the main thread and lists it first, before the sort
    # index (json_trace_parser / process_tracker); each lane's sort index is its place.
    threads: dict[int, int] = {}
    for slice_ in tracks.slices:
        key = slice_.track_uuid
        if key not in threads:
            lane = len(threads) + 1
            tid = threads[key] = lane if lane < pid else lane + 1
            yield {
                "ph": "M",
                "name": "thread_name",
                "pid": pid,
                "tid": tid,
                "args": {"name": slice_.track},
            }
            yield {
                "ph": "M",
                "name": "thread_sort_index",
                "pid": pid,
                "tid": tid,
                "args": {"sort_index": lane},
            }
    # A flow's two ends are matched by (id, category, name), so both say "flow"; at one
    # time the importer takes complete slices first and everything else in file order, so
    # an end whose start is not written yet waits for it and follows it.
    waiting: dict[int, list[dict[str, Any]]] = {}
    for slice_ in sorted(tracks.slices, key=lambda s: (s.start, -s.end, s.track)):
        tid = threads[slice_.track_uuid]
        ts = _us(slice_.start, origin)
        event: dict[str, Any] = {
            "name": slice_.name,
            "cat": slice_.category,
            "pid": pid,
            "tid": tid,
            "ts": ts,
            "args": slice_.args,
        }
        if slice_.instant:
            event.update(ph="i", s="t")
        else:
            event.update(ph="X", dur=round((slice_.end - slice_.start) / 1000, 3))
        yield event
        for flow_id in slice_.flows:
            flow = {
                "ph": "s",
                "bp": "e",
                "id": format(flow_id, "x"),
                "name": "flow",
                "cat": "flow",
                "pid": pid,
                "tid": tid,
                "ts": ts,
            }
            if flow_id in slice_.outgoing:
                started.add(flow_id)
                yield flow
                yield from waiting.pop(flow_id, ())
            else:
                flow["ph"] = "f"
                if flow_id in started:
                    yield flow
                else:
                    waiting.setdefault(flow_id, []).append(flow)
    for ends in waiting.values():  # a start that is in no session read: as they came
        yield from ends
    units = {t.uuid: t.counter_unit for t in tracks.tracks}
    for counter in tracks.counters:
        # The value is named by its unit: `tokens`, or `%` (Context fill).
        unit = units.get(counter.track_uuid) or "tokens"
        for ts, _, value in counter.samples:
            yield {
                "ph": "C",
                "name": counter.name,
                "cat": tracks.activity,
                "pid": pid,
                "tid": 0,
                "ts": _us(ts, origin),
                "args": {unit: value},
            }
