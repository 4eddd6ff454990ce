"""Both writers encode one layout (layout/), so they must carry the same counter samples:
per session and counter, the same (time, value) series, step-function de-duplication and
closing zero included. And the layout knows no output format."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import agent_profiler.annotations
import agent_profiler.layout
import agent_profiler.views
from agent_profiler.cli import app
from conftest import DATA
from samples import pi_fork_source
from traceview import load_trace

JOURNALS = [
    DATA / "claude-code" / "handmade" / "small.jsonl",
    DATA / "claude-code" / "spotter-2.1.39-subagents-compaction",
    DATA / "codex" / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
    pi_fork_source(),  # the corpus fork's source (the fork made no request of its own)
    DATA / "muse" / "synthetic" / "sessions",
    DATA / "gemini-cli" / "expenses-tracker-0.37.1-subagents",
    DATA / "opencode" / "ses_fd4c895f0ffe6gKgxHiEgiQCcd.export.json",
]

Series = dict[tuple[str, str], list[tuple[float, int]]]


def _export(journal: Path, out: Path) -> None:
    result = CliRunner().invoke(app, ["export", str(journal), "-o", str(out)])
    assert result.exit_code == 0, result.output + result.stderr


def _perfetto_series(path: Path, origin: int) -> Series:
    view = load_trace(path)
    series: Series = {}
    for capture in view.captures():
        profile = view.profile_of(capture.uuid)
        assert profile is not None
        session = view.tracks[capture.parent_uuid].name if capture.parent_uuid else ""
        for track in view.counter_tracks(capture.uuid):
            # in microseconds from the trace's start, as the JSON writes them
            series[(session, track.name)] = [
                (round((ts - origin) / 1000, 3), int(value))
                for ts, value in view.counters.get(track.uuid, [])
            ]
    return series


def _json_series(document: dict[str, object]) -> Series:
    events = document["traceEvents"]
    assert isinstance(events, list)
    sessions = {
        e["pid"]: e["args"]["name"]
        for e in events
        if e["ph"] == "M" and e["name"] == "process_name"
    }
    series: Series = {}
    for event in (e for e in events if e["ph"] == "C"):
        key = (sessions[event["pid"]], event["name"])
        (value,) = event["args"].values()  # named by the counter's unit
        series.setdefault(key, []).append((event["ts"], value))
    return series


@pytest.mark.parametrize("journal", JOURNALS, ids=[j.name for j in JOURNALS])
def test_both_writers_carry_the_same_counter_samples(tmp_path: Path, journal: Path) -> None:
    # GIVEN one journal WHEN exported by both writers
    _export(journal, tmp_path / "t.pftrace")
    _export(journal, tmp_path / "t.json")
    document = json.loads((tmp_path / "t.json").read_bytes())
    origin = document["metadata"]["start_unix_ns"]
    perfetto = _perfetto_series(tmp_path / "t.pftrace", origin)
    chrome = _json_series(document)
    # THEN every counter of every session has the same sample series in both
    assert perfetto, "no counters exported"
    assert sorted(chrome) == sorted(perfetto)
    for key, samples in perfetto.items():
        assert chrome[key] == samples, key
        assert samples[-1][1] == 0, key  # the closing zero, last


def test_the_layout_knows_no_output_format() -> None:
    # GIVEN the format-neutral modules WHEN their imports are read
    # THEN none of them imports protobuf, orjson or a writer
    layout = Path(agent_profiler.layout.__file__ or "").parent  # a package: all its modules
    files = [*sorted(layout.glob("*.py"))]
    assert len(files) > 1, layout
    for module in (agent_profiler.annotations, agent_profiler.views):
        assert module.__file__ is not None
        files.append(Path(module.__file__))
    for file in files:
        tree = ast.parse(file.read_text(encoding="utf-8"))
        imported = {
            node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
        } | {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        for name in imported:
            assert not name.startswith(("perfetto", "google", "orjson", "agent_profiler.writers"))
