"""What Perfetto's JSON importer does with a Chrome JSON trace, in the parts our writer's
events meet, written from its source (google/perfetto, src/trace_processor/):

- sorting (sorter/trace_sorter.h, `SlowOperatorLess`, used once a trace has an `X` event):
  events in (ts, key, file order), the key `max − dur` for `X` (complete slices first,
  longest first), `min` for `E`, `max` for every other phase: at one time, `s`/`f`/`i`/`C`
  keep their order in the file;
- timestamps (importers/json/json_trace_tokenizer.cc): microseconds, a fraction read as
  `llround(us × 1000)` ns;
- threads (json_trace_tokenizer.cc, process_tracker.cc): `tid` 0 is the process's own id,
  and a thread whose id is its process's is that process's main thread; the UI lists a
  process's threads by `thread_sort_index` (0 when absent), then the main thread first,
  then by id (ui/src/plugins/dev.perfetto.ProcessThreadGroups, `addThreadGroups`);
- v1 flows (importers/common/flow_tracker.cc, `GetFlowIdForV1Event`): the two ends of a
  flow are one flow only if they agree on (id, cat, name); an `f` read before its `s` is
  `flow_end_without_start` and no arrow is drawn; with `bp: "e"` an end binds to the
  slice that encloses it on its thread (the topmost open one).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

_MAX = 2**63 - 1
_MIN = -(2**63)


def _ns(us: float) -> int:
    return math.floor(us * 1000.0 + 0.5)


def sorted_events(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The events in the order the importer reads them (metadata events left out)."""
    keyed = []
    for index, event in enumerate(events):
        phase = event.get("ph")
        if phase == "M":
            continue
        key = _MAX - _ns(event["dur"]) if phase == "X" else _MIN if phase == "E" else _MAX
        keyed.append((_ns(event["ts"]), key, index, event))
    keyed.sort(key=lambda k: k[:3])
    return [event for *_, event in keyed]


def flows(events: Iterable[Mapping[str, Any]]) -> tuple[int, list[str]]:
    """(flows drawn, why each other one is not): every `s` … `f` pair, read in the
    importer's order and matched by (id, cat, name)."""
    open_: set[tuple[Any, Any, Any]] = set()
    drawn = 0
    lost: list[str] = []
    for event in sorted_events(events):
        phase = event.get("ph")
        if phase not in ("s", "f"):
            continue
        key = (event.get("id"), event.get("cat"), event.get("name"))
        if phase == "s":
            open_.add(key)
        elif key in open_:
            open_.discard(key)
            drawn += 1
        else:
            lost.append(f"flow {event.get('id')} at {event.get('ts')}: end without start")
    return drawn, lost


def thread_order(events: Iterable[Mapping[str, Any]]) -> dict[int, list[str]]:
    """Each process's threads by name, in the order the UI lists them: by
    `thread_sort_index` (0 when absent), the main thread (id equal to the process's) first
    among equals, then by id."""
    names: dict[tuple[int, int], str] = {}
    ranks: dict[tuple[int, int], int] = {}
    for event in events:
        if event.get("ph") != "M":
            continue
        pid, tid = event["pid"], event["tid"] or event["pid"]
        if event["name"] == "thread_name":
            names[pid, tid] = event["args"]["name"]
        elif event["name"] == "thread_sort_index":
            ranks[pid, tid] = event["args"]["sort_index"]
    order: dict[int, list[str]] = {}
    for pid, tid in sorted(names, key=lambda k: (k[0], ranks.get(k, 0), k[1] != k[0], k[1])):
        order.setdefault(pid, []).append(names[pid, tid])
    return order
