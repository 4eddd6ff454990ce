"""The trace layout, format-neutral: model sessions → tracks, lanes, slices with their
arguments and flows, de-duplicated counter series and the order of events (TRACE_CONTRACT).

Both writers encode this and nothing else (writers/perfetto.py as protobuf,
writers/chrome_json.py as JSON), so they show the same slices and the same counter samples.
Track uuids are small numbers, 1, 2, 3 … in the order their keys are first asked for; flow ids
are `stable_id64` hashes of stable keys, the trace root's uuid too. Same sessions, same layout.

A session is planned, not laid out whole (`SessionPlan`): its lanes, uuids, counters and
the model relations its flows draw are worked out first, and its slices are made by blocks
(one per source of items, in layout order) when a writer reads them. The Perfetto writer
sweeps them as they are made, holding a slice from its begin to its end; build_layout
keeps them.

Every track of a capture is one row of a table (`tracks.TRACKS`, in display order), which
says how its slices are made; planning is functions of data that read the table.

The package, in the order its modules import one another (no module imports a later one):

- `types`: what a writer reads (Track, LaidSlice, CounterSeries, SessionPlan, Layout …),
  the same-timestamp event ranks (R_*), the trace root and flow ids;
- `planning`: the rooms a session is planned in: track ids, first-fit lanes, the links
  its flows draw, counters and their step functions;
- `counters`: a session's counters and its largest additions, as functions of the model;
- `data`: `SessionData`, what the table's rows read of one session (`session_data`);
- `spec`: the shape of a row (`TrackSpec`, `Slices`), the sources of items in layout
  order, and `Table`, a table ready for planning;
- `tracks`: the table itself (`TRACKS`, `TABLE`) and how each slice is made;
- `plan`: `plan_session`, a session's plan from its data and the table;
- `ordering`: the order sessions go in and the layout of a set of them (`iter_layout`,
  `build_layout`).

This module re-exports the public names writers and tests use.
"""

from __future__ import annotations

from agent_profiler.annotations import ContentMode, TraceFacts, TraceHeader
from agent_profiler.layout.ordering import build_layout, iter_layout, ordered_sessions
from agent_profiler.layout.planning import UUID_BLOCK
from agent_profiler.layout.types import (
    R_CAPTURE_BEGIN,
    R_CAPTURE_END,
    R_COUNTER,
    R_COUNTER_CLOSE,
    R_COUNTER_OPEN,
    R_INSTANT,
    R_SLICE_BEGIN,
    R_SLICE_END,
    R_ZERO_END,
    TRACE_ROOT_UUID,
    CounterSeries,
    LaidSlice,
    Layout,
    Merge,
    SessionLayout,
    SessionPlan,
    Track,
    TrackKind,
    begin_events,
    begin_rank,
    end_rank,
    stable_id64,
    start_rank,
    trace_root,
)

__all__ = [
    "R_CAPTURE_BEGIN",
    "R_CAPTURE_END",
    "R_COUNTER",
    "R_COUNTER_CLOSE",
    "R_COUNTER_OPEN",
    "R_INSTANT",
    "R_SLICE_BEGIN",
    "R_SLICE_END",
    "R_ZERO_END",
    "TRACE_ROOT_UUID",
    "UUID_BLOCK",
    "ContentMode",
    "CounterSeries",
    "LaidSlice",
    "Layout",
    "Merge",
    "SessionLayout",
    "SessionPlan",
    "TraceFacts",
    "TraceHeader",
    "Track",
    "TrackKind",
    "begin_events",
    "begin_rank",
    "build_layout",
    "end_rank",
    "iter_layout",
    "ordered_sessions",
    "stable_id64",
    "start_rank",
    "trace_root",
]
