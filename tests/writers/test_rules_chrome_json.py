"""The Chrome JSON writer serialises the Perfetto layout exactly: every slice's time and
duration in microseconds from the first event, its thread named after its track lane, its
flows on the right end, counters as "C" events, and the metadata. On a real journal (the
spotter session with its subagents), against the layout the Perfetto writer builds."""

from __future__ import annotations

import io
import json
from typing import Any

import json_importer_rules
from agent_profiler import __version__
from agent_profiler.writers.chrome_json import ChromeJsonWriter
from agent_profiler.writers.perfetto import ContentMode, TraceFacts, build_layout
from rules_spy import sessions
from shared_paths import TESTS

SPOTTER = TESTS / "data" / "journals" / "claude-code" / "spotter-2.1.39-subagents-compaction"


def _write(facts: TraceFacts) -> tuple[dict[str, Any], int, Any]:
    found = sessions(SPOTTER)
    stream = io.BytesIO()
    count = ChromeJsonWriter(facts).write(found, stream)
    return json.loads(stream.getvalue()), count, build_layout(found, facts)


def test_every_event_is_the_layout_in_microseconds() -> None:
    facts = TraceFacts(inputs=("a.jsonl", "b.jsonl"), content=ContentMode.PREVIEWS)
    document, count, layout = _write(facts)
    events = document["traceEvents"]
    assert count == len(events)
    starts = [s.start for t in layout.sessions for s in t.slices]
    starts += [ts for t in layout.sessions for c in t.counters for ts, _, _ in c.samples]
    origin = min(starts)
    assert document["metadata"] == {
        "trace_attribute.agent_profiler_version": __version__,
        "trace_attribute.harnesses": "claude-code",
        "trace_attribute.estimate_basis": "chars/4",
        "trace_attribute.clock": "wall-clock",
        "exporter": f"agent-profiler {__version__}",
        "start_unix_ns": origin,
        "content": "previews",
        "inputs": ["a.jsonl", "b.jsonl"],
    }
    assert document["displayTimeUnit"] == "ms"
    assert min(e["ts"] for e in events if "ts" in e) == 0.0
    written: set[str] = set()  # flows whose start is written (a parent's call: earlier)
    for pid, (group, tracks) in enumerate(zip(layout.groups, layout.sessions, strict=True), 1):
        mine = [e for e in events if e["pid"] == pid]
        meta = [e for e in mine if e["ph"] == "M"]
        assert meta[0] == {  # named as the Perfetto trace names the session's group
            "ph": "M",
            "name": "process_name",
            "pid": pid,
            "tid": 0,
            "args": {"name": group.name},
        }
        assert meta[1] == {
            "ph": "M",
            "name": "process_sort_index",
            "pid": pid,
            "tid": 0,
            "args": {"sort_index": pid},
        }
        threads = {e["tid"]: e["args"]["name"] for e in meta[2:] if e["name"] == "thread_name"}
        ranks = {e["tid"]: e["args"]["sort_index"] for e in meta[2:] if e["name"] != "thread_name"}
        assert {e["name"] for e in meta[2:]} == {"thread_name", "thread_sort_index"}
        # Lanes 1, 2, … in the order of the slices, as threads that skip the process's id
        # (the UI would list that one first, as the main thread), each ranked by its place.
        assert sorted(ranks.values()) == list(range(1, len(threads) + 1))
        assert [t for t, _ in sorted(ranks.items(), key=lambda r: r[1])] == [
            lane if lane < pid else lane + 1 for lane in range(1, len(threads) + 1)
        ]
        assert pid not in threads and threads.keys() == ranks.keys()
        slices = [e for e in mine if e["ph"] in ("X", "i")]
        expected = sorted(tracks.slices, key=lambda s: (s.start, -s.end, s.track))
        assert len(slices) == len(expected) > 0
        lanes: dict[tuple[str, int], int] = {}  # (track, lane's uuid) → tid
        for event, slice_ in zip(slices, expected, strict=True):
            assert (event["name"], event["cat"]) == (slice_.name, slice_.category)
            assert event["ts"] == round((slice_.start - origin) / 1000, 3)
            assert event["args"] == json.loads(json.dumps(slice_.args))
            assert threads[event["tid"]] == slice_.track
            assert lanes.setdefault((slice_.track, slice_.track_uuid), event["tid"]) == event["tid"]
            if slice_.instant:
                assert (event["ph"], event["s"]) == ("i", "t") and "dur" not in event
            else:
                assert event["ph"] == "X"
                assert event["dur"] == round((slice_.end - slice_.start) / 1000, 3)
        flows = [e for e in mine if e["ph"] in ("s", "f")]
        assert len(flows) == sum(len(s.flows) for s in tracks.slices)
        # Each flow event is on its slice's thread at its time: a start right after its
        # slice, an end after its slice or, when its start is not written yet, right after
        # that start; both ends say "flow", as the importer matches them by (id, cat, name).
        ends_of: dict[str, list[tuple[int, float]]] = {}
        for event in mine:
            if event["ph"] == "s":
                written.add(event["id"])
            if event["ph"] in ("s", "f"):
                assert (event["bp"], event["name"], event["cat"]) == ("e", "flow", "flow")
                assert event["ph"] == "s" or event["id"] in written
                ends = ends_of.setdefault(event["id"], [])
                ends.append((event["tid"], event["ts"]))
        for slice_ in tracks.slices:
            for flow in slice_.flows:
                at = (
                    lanes[slice_.track, slice_.track_uuid],
                    round((slice_.start - origin) / 1000, 3),
                )
                assert at in ends_of[format(flow, "x")]
        outgoing = {format(f, "x") for s in tracks.slices for f in s.outgoing}
        assert {f["id"] for f in flows if f["ph"] == "s"} <= outgoing
        counters = [e for e in mine if e["ph"] == "C"]
        samples = [(c.name, ts, v) for c in tracks.counters for ts, _, v in c.samples]
        units = {"Context fill": "%"}
        assert [
            (e["name"], e["ts"], e["args"][units.get(e["name"], "tokens")]) for e in counters
        ] == [(name, round((ts - origin) / 1000, 3), value) for name, ts, value in samples]
        assert all((e["cat"], e["tid"]) == (tracks.activity, 0) for e in counters)


def test_the_writer_says_what_it_is() -> None:
    writer = ChromeJsonWriter()
    assert (writer.name, writer.extension, writer.binary) == ("json", ".json", False)
    assert writer.facts == TraceFacts()
    document, _, _ = _write(TraceFacts())
    assert document["metadata"]["content"] == "none"
    assert document["metadata"]["inputs"] == []


def test_no_sessions_is_an_empty_trace() -> None:
    stream = io.BytesIO()
    assert ChromeJsonWriter().write([], stream) == 0
    document = json.loads(stream.getvalue())
    assert document["traceEvents"] == []
    assert document["metadata"]["start_unix_ns"] == 0


def test_perfettos_json_importer_draws_every_flow_and_keeps_the_lanes_order() -> None:
    """Read as Perfetto's JSON importer reads it (tests/json_importer_rules.py): every flow
    of the layout is drawn (its ends had different categories, and an end written before its
    start at one time was dropped), and each session's lanes are listed in the layout's
    order (a lane whose id was its process's was listed first, as the main thread)."""
    document, _, layout = _write(TraceFacts())
    events = document["traceEvents"]
    drawn, lost = json_importer_rules.flows(events)
    assert lost == []
    assert drawn == sum(len(s.outgoing) for t in layout.sessions for s in t.slices) > 0
    order = json_importer_rules.thread_order(events)
    for pid, tracks in enumerate(layout.sessions, 1):
        lanes: list[int] = []
        for slice_ in tracks.slices:
            if slice_.track_uuid not in lanes:
                lanes.append(slice_.track_uuid)
        names = {s.track_uuid: s.track for s in tracks.slices}
        assert order[pid] == [names[uuid] for uuid in lanes]
