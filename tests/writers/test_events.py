"""The TrackEvent packets of one journal group as writers/events.py encodes them by hand:
decoded with the protobuf schema (tests/traceview.py, as Trace Processor reads them), each
slice, instant and counter comes back at its own absolute time, with its name, category,
typed arguments, flows and counter values; interning, the sequence flags and the delta
clocks are the ones the trace contract says (TRACE_CONTRACT §1)."""

from __future__ import annotations

from typing import Any

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

from agent_profiler.layout import LaidSlice, Track, TrackKind
from agent_profiler.writers.events import DELTA_CLOCK_IDS, EventEncoder
from agent_profiler.writers.packets import track_descriptor_packet
from agent_profiler.writers.wire import record
from traceview import TraceView, load_trace

S = 1_000_000_000
T0 = 1_760_000_000 * S  # a realistic REALTIME start
SEQUENCE = 7
SLICES, OTHER, COUNTS, CACHED = 101, 102, 103, 104


def _tracks() -> bytes:
    tracks = [
        Track(SLICES, "Turns", TrackKind.SLICE),
        Track(OTHER, "Tools", TrackKind.SLICE),
        Track(COUNTS, "Context", TrackKind.COUNTER, counter_unit="tokens"),
        Track(CACHED, "Cached", TrackKind.COUNTER, counter_unit="tokens"),
    ]
    return b"".join(record(track_descriptor_packet(SEQUENCE, t)) for t in tracks)


def _slice(name: str, start: int, end: int, args: Any, **fields: Any) -> LaidSlice:
    fields.setdefault("track_uuid", SLICES)
    return LaidSlice("Turns", name, start, end, "agentprof.turn", args, **fields)


def _packets(data: bytes) -> list[Any]:
    trace = pb.Trace()
    trace.ParseFromString(data)
    return list(trace.packet)


def _view(data: bytes) -> TraceView:
    view = load_trace(_tracks() + data)
    assert not view.decode_problems, view.decode_problems
    assert not view.import_findings, view.import_findings
    return view


def test_a_group_decodes_to_its_slices_and_counters_at_their_own_times() -> None:
    encoder = EventEncoder(SEQUENCE)
    first = _slice("turn 1", T0, T0 + 5 * S, {"kind": "turn", "tokens": 300, "ok": True})
    # starts before the last event written: a subagent inside its parent
    inner = _slice("turn 2", T0 + 2 * S, T0 + 3 * S, {"kind": "turn", "tokens": -4})
    data = b"".join(
        (
            encoder.begin(T0, first),
            encoder.counters(T0 + 1, "agentprof.context", {COUNTS: 1_000, CACHED: 20}),
            encoder.end(T0 + 5 * S, SLICES),
            encoder.begin(T0 + 2 * S, inner),
            encoder.end(T0 + 3 * S, SLICES),
        )
    )
    view = _view(data)
    turns = sorted(view.slices_on(SLICES), key=lambda s: s.ts)
    assert [(s.name, s.ts, s.dur) for s in turns] == [
        ("turn 1", T0, 5 * S),
        ("turn 2", T0 + 2 * S, S),
    ]
    assert turns[0].args == {"kind": "turn", "tokens": 300, "ok": True}
    assert turns[0].arg_types == {"kind": "string", "tokens": "uint", "ok": "bool"}
    assert turns[1].arg_types["tokens"] == "int" and turns[1].args["tokens"] == -4
    assert {s.category for s in turns} == {"agentprof.turn"}
    assert view.counters[COUNTS] == [(T0 + 1, 1_000)]
    assert view.counters[CACHED] == [(T0 + 1, 20)]
    # two delta clocks, the second started where the clock would have gone back
    snapshots = [s for s in view.clock_snapshots]
    assert [sorted(s.incremental) for s in snapshots] == [[64], [65]]
    assert [s.clocks[65 if i else 64] for i, s in enumerate(snapshots)] == [T0, T0 + 2 * S]
    assert encoder.packets == len(_packets(data)) == 7
