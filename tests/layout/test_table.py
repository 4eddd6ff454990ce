"""The layout is a table of tracks (layout/tracks.py): adding a track is writing one row,
and the UI shows the rows in the table's order. Both are checked on a decoded export of
a real session tree (prompts, responses, tools, compactions, subagents), laid out with a
copy of the table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from test_claude_code import SPOTTER_DIR

from agent_profiler.layout import tracks
from agent_profiler.layout.data import SessionData
from agent_profiler.layout.spec import PROMPTS, Slices, Table, TrackSpec
from agent_profiler.model import Prompt
from traceview import TraceView

NEW = "Prompt lengths"


def _length_args(data: SessionData, index: int, prompt: Prompt) -> dict[str, Any]:
    return {"kind": "prompt-length", "length": prompt.chars}


# A made-up track: one slice per prompt, over the prompt's span. This row is all it takes.
PROMPT_LENGTHS = TrackSpec(
    NEW,
    (Slices(PROMPTS, lambda p: (p.start_ns, p.end_ns), "prompt-length", _length_args),),
)


def _export(
    export_trace: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, rows: tuple[TrackSpec, ...]
) -> TraceView:
    monkeypatch.setattr(tracks, "TABLE", Table(rows))
    # one process: the table is this process's
    view: TraceView = export_trace(SPOTTER_DIR, args=("--jobs", "1")).view
    return view


def _lane(view: TraceView, uuid: int) -> tuple[str, ...]:
    """A track as its names up the tree, and its place among its same-named siblings (a
    lane): what stays when uuids are numbered differently."""
    track = view.tracks[uuid]
    siblings = [
        t.uuid
        for t in view.tracks.values()
        if t.parent_uuid == track.parent_uuid and t.name == track.name
    ]
    path = tuple(t.name for t in view.ancestors(uuid))
    return (*path, str(siblings.index(uuid)))


def _content(view: TraceView, leave_out: str = "") -> dict[str, Any]:
    """Every track (but `leave_out`'s), slice and counter sample of the trace, by where
    they sit rather than by uuid."""
    kept = {u for u, t in view.tracks.items() if t.name != leave_out}
    return {
        "tracks": sorted(
            (
                _lane(view, t.uuid),
                t.sibling_order_rank,
                t.child_ordering,
                t.sibling_merge_behavior,
                t.description,
                t.is_counter,
                t.unit,
            )
            for t in view.tracks.values()
            if t.uuid in kept
        ),
        "slices": sorted(
            (
                _lane(view, s.track_uuid),
                s.ts,
                s.dur,
                s.name,
                s.categories,
                repr(sorted(_args(view, s.args).items())),
                tuple(sorted(s.flow_ids)),
                tuple(sorted(s.terminating_flow_ids)),
            )
            for s in view.slices
            if s.track_uuid in kept
        ),
        "counters": sorted(
            (_lane(view, uuid), tuple(samples)) for uuid, samples in view.counters.items()
        ),
    }


def _args(view: TraceView, args: dict[str, Any]) -> dict[str, Any]:
    """A slice's args, the capture's uuid (`capture_id` on profile (1)) by its place."""
    if "capture_id" not in args:
        return args
    return {**args, "capture_id": _lane(view, int(args["capture_id"], 16))}


def _display_order(view: TraceView, capture: int) -> list[str]:
    """The names of a capture's tracks in the order ui.perfetto.dev shows them: the
    capture orders its children explicitly, by sibling_order_rank, which must say it
    alone (one rank per name, every name's its own)."""
    view_capture = view.tracks[capture]
    assert view_capture.child_ordering.lower() == "explicit"
    ranks: dict[str, set[int | None]] = {}
    for track in view.children_of(capture):
        ranks.setdefault(track.name, set()).add(track.sibling_order_rank)
    assert all(len(r) == 1 for r in ranks.values()), ranks
    rank = {name: next(iter(r)) for name, r in ranks.items()}
    assert None not in rank.values() and len(set(rank.values())) == len(rank), rank
    return sorted(rank, key=lambda name: rank[name] or 0)


@pytest.mark.skipif(not SPOTTER_DIR.exists(), reason="the spotter session tree is not here")
def test_a_new_track_is_one_row_of_the_table(
    export_trace: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _export(export_trace, monkeypatch, tracks.TRACKS)
    # WHEN one row is added to a copy of the table
    after = _export(export_trace, monkeypatch, (*tracks.TRACKS, PROMPT_LENGTHS))
    # THEN every capture with prompts has the new track, last, with a slice per prompt
    added = 0
    for capture in after.captures():
        prompts = [s for s in after.slices_in_capture(capture.uuid) if s.name == "prompt"]
        mine = [
            s
            for s in after.slices_in_capture(capture.uuid)
            if after.tracks[s.track_uuid].name == NEW
        ]
        assert sorted((s.ts, s.dur) for s in mine) == sorted((s.ts, s.dur) for s in prompts)
        assert {s.name for s in mine} <= {"prompt-length"}
        assert [s.args["length"] for s in sorted(mine, key=lambda s: s.ts)] == [
            s.args["length"] for s in sorted(prompts, key=lambda s: s.ts)
        ]
        if mine:
            added += len(mine)
            assert _display_order(after, capture.uuid)[-1] == NEW
            assert {after.tracks[s.track_uuid].sibling_order_rank for s in mine} == {
                len(tracks.TRACKS)
            }
    assert added > 1
    # AND nothing else changed: every other track, slice, flow and counter sample is the same
    assert not [t for t in before.tracks.values() if t.name == NEW]
    assert _content(after, leave_out=NEW) == _content(before)


@pytest.mark.skipif(not SPOTTER_DIR.exists(), reason="the spotter session tree is not here")
def test_the_ui_order_is_the_table_order(
    export_trace: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = list(tracks.TRACKS)
    names = [row.name for row in rows]
    view = _export(export_trace, monkeypatch, tuple(rows))
    capture = max(view.captures(), key=lambda c: len(view.children_of(c.uuid))).uuid
    shown = _display_order(view, capture)
    assert shown == [name for name in names if name in shown]
    assert {"Turns", "Tools", "Compaction"} <= set(shown)
    # WHEN two rows change places
    turns, tools = names.index("Turns"), names.index("Tools")
    rows[turns], rows[tools] = rows[tools], rows[turns]
    swapped = _export(export_trace, monkeypatch, tuple(rows))
    capture = max(swapped.captures(), key=lambda c: len(swapped.children_of(c.uuid))).uuid
    # THEN the two tracks change places in the UI, and nothing else does
    order = _display_order(swapped, capture)
    assert order.index("Tools") < order.index("Turns")
    assert order == [row.name for row in rows if row.name in order]
    expected = list(shown)
    i, j = expected.index("Turns"), expected.index("Tools")
    expected[i], expected[j] = expected[j], expected[i]
    assert order == expected
    # the slices are the same, on their tracks
    before, after = _content(view), _content(swapped)
    assert before["slices"] == after["slices"] and before["counters"] == after["counters"]


def test_a_table_refuses_two_rows_of_one_name() -> None:
    with pytest.raises(ValueError, match="two rows named 'Tools'"):
        Table((*tracks.TRACKS, TrackSpec("Tools")))


def test_every_counter_made_has_a_row() -> None:
    # The capture's counters are placed by their rows; a counter without one is refused
    # when a session is planned (plan._counter_tracks), so the table lists all of them.
    counters = {row.name for row in tracks.TRACKS if row.counter}
    assert counters == {
        "Context size",
        "Context fill",
        "Context window",
        "Input tokens",
        "Output tokens",
    }


@pytest.mark.skipif(not SPOTTER_DIR.exists(), reason="the spotter session tree is not here")
def test_a_table_without_a_sources_rows_lays_out_every_other_source(
    export_trace: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No row reads the failed requests (the table of a view without them): the sources
    after it in layout order (markers, /context reports, additions, a subagent's first
    input) are laid out as before."""
    before = _export(export_trace, monkeypatch, tracks.TRACKS)
    rows = tuple(row for row in tracks.TRACKS if row.name != "Requests")
    after = _export(export_trace, monkeypatch, rows)
    kept, now = _content(before, leave_out="Requests"), _content(after)
    assert now["slices"] == kept["slices"] and now["counters"] == kept["counters"]
    inputs = [s for s in after.slices if s.name == "prompt-input"]
    assert any(s.args.get("source") == "agent" for s in inputs)  # a subagent's first input


@pytest.mark.skipif(not SPOTTER_DIR.exists(), reason="the spotter session tree is not here")
def test_a_slice_tracks_description_may_be_a_function_of_its_session(
    export_trace: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row's description may depend on the session (TrackSpec.description), a slice
    track's at the top level as the Context group's does."""
    counted = TrackSpec(
        NEW,
        PROMPT_LENGTHS.slices,
        description=lambda data: f"{len(data.session.prompts)} prompts",
    )
    view = _export(export_trace, monkeypatch, (*tracks.TRACKS, counted))
    described = 0
    for capture in view.captures():
        prompts = [s for s in view.slices_in_capture(capture.uuid) if s.name == "prompt"]
        for track in view.children_of(capture.uuid):
            if track.name == NEW:
                assert track.description == f"{len(prompts)} prompts"
                described += 1
    assert described > 1
