"""The docs name our arg keys and tracks: every one they use must exist in a real trace."""

from __future__ import annotations

import re
from typing import Any

from shared_paths import REPO, TESTS

DOCS = REPO / "docs"
SPOTTER = TESTS / "data" / "journals" / "claude-code" / "spotter-2.1.39-subagents-compaction"
MUSE = (
    TESTS
    / "data"
    / "journals"
    / "muse"
    / "hcn-1.4.2-R4684.1_meta_single-turn_retained-frame.session.jsonl"
)


def flatten(prefix: str, value: Any, out: set[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            flatten(f"{prefix}.{key}", item, out)
    elif isinstance(value, list):
        for item in value:
            flatten(f"{prefix}[]", item, out)
    else:
        out.add(prefix)


def test_cookbook_keys_and_tracks_exist(export_trace: Any) -> None:
    view = export_trace(SPOTTER).view
    small = export_trace(SPOTTER.parent / "handmade" / "small.jsonl").view  # has post_tokens
    # harness-started tool slices (`started_by`): Muse's reminder runs
    muse = export_trace(MUSE, require_addition=False).view  # one request: no addition
    keys: set[str] = set()
    for slice_ in view.slices + small.slices + muse.slices:
        for name, value in slice_.args.items():
            flatten(f"debug.{name}", value, keys)
    text = (DOCS / "sql-cookbook.md").read_text()
    used = set(re.findall(r"'(debug\.[a-z_.]+)'", text))
    used |= {f"debug.context.changes[].{k}" for k in re.findall(r"'\.([a-z_]+)'", text)}
    assert len(used) > 15
    assert sorted(used - keys) == []
    tracks = {t.name for t in view.tracks.values()}
    for name in re.findall(r"name (?:=|IN \() ?'([A-Za-z :.]+)'", text):
        assert name in tracks, name


def test_traces_doc_lists_every_track_and_category() -> None:
    from agent_profiler.model import Category

    text = (DOCS / "traces.md").read_text()
    for label in (c.label for c in Category):
        assert f"| {label} |" in text
    for track in (
        "Inputs",
        "Prompts",
        "Responses",
        "Turns",
        "Tools",
        "Compaction",
        "Compaction responses",
        "Events",
        "Configuration",
        "Largest additions",
    ):
        assert f"`{track}`" in text
    # and every row of the track table, with its children
    from agent_profiler.layout.tracks import TRACKS

    for row in TRACKS:
        for track in (row, *row.children):
            assert f"`{track.name}`" in text, track.name
