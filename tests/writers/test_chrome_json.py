"""`export --format json`: the Chrome Trace Event Format carries the same slices,
counters (with closing zeros), flows and arguments as the Perfetto trace."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

import json_importer_rules
from agent_profiler import cli
from agent_profiler.cli import app
from agent_profiler.layout import TRACE_ROOT_UUID
from shared_paths import CORPUS, SHARED_REASON, TESTS
from traceview import load_trace

DATA = TESTS / "data" / "journals"
SMALL = DATA / "claude-code" / "handmade" / "small.jsonl"
SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
runner = CliRunner()


def export(tmp_path: Path, name: str, *args: str, journal: Path = SMALL) -> Path:
    out = tmp_path / name
    result = runner.invoke(app, ["export", str(journal), "-o", str(out), *args])
    assert result.exit_code == 0, result.output + result.stderr
    return out


def test_json_has_the_same_slices_counters_and_flows(tmp_path: Path) -> None:
    events: list[dict[str, Any]] = json.loads(
        export(tmp_path, "t.json", journal=SPOTTER).read_text()
    )["traceEvents"]
    view = load_trace(export(tmp_path, "t.pftrace", journal=SPOTTER))
    slices = [e for e in events if e["ph"] in ("X", "i")]
    assert len(slices) == len(view.slices)
    assert Counter(e["name"] for e in slices) == Counter(s.name for s in view.slices)
    kinds = Counter(e["args"].get("kind") for e in slices)
    assert kinds == Counter(s.args.get("kind") for s in view.slices)
    responses = [e for e in slices if e["args"].get("kind") == "assistant-message"]
    assert all(e["args"]["context"]["version"] == 1 for e in responses)
    # counters: one series per (session, name), ending at 0, same sample count
    series: dict[tuple[int, str], list[float]] = {}
    for event in (e for e in events if e["ph"] == "C"):
        series.setdefault((event["pid"], event["name"]), []).append(
            next(iter(event["args"].values()))
        )
    assert len(series) == sum(1 for t in view.tracks.values() if t.is_counter)
    assert all(values[-1] == 0 for values in series.values())
    # flows: every id has one start and one finish, start not after finish
    ends: dict[str, dict[str, float]] = {}
    for event in (e for e in events if e["ph"] in ("s", "f")):
        assert event["ph"] not in ends.setdefault(event["id"], {})
        ends[event["id"]][event["ph"]] = event["ts"]
    assert len(ends) == len(view.flows)
    assert all(set(pair) == {"s", "f"} and pair["s"] <= pair["f"] for pair in ends.values())
    # two sessions: two processes, named as the Perfetto trace names their groups
    names = [e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"]
    groups = [view.tracks[c.parent_uuid].name for c in view.captures() if c.parent_uuid]
    assert view.tracks[TRACE_ROOT_UUID].name.startswith("agent-profiler · 2 sessions")
    assert len(names) == 2 and names == groups


def test_format_follows_the_name_or_the_option(tmp_path: Path) -> None:
    assert export(tmp_path, "a.json").read_bytes()[:1] == b"{"
    assert export(tmp_path, "b.pftrace").read_bytes()[:1] == b"\x0a"
    assert export(tmp_path, "c.trace", "--format", "json").read_bytes()[:1] == b"{"
    result = runner.invoke(app, ["export", str(SMALL), "--format", "svg"])
    assert result.exit_code == 2 and "unknown format 'svg'" in result.stderr


def test_binary_to_a_terminal_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "_stdout_is_terminal", lambda: True)
    result = runner.invoke(app, ["export", str(SMALL), "-o", "-"])
    assert result.exit_code == 2 and "binary trace to a terminal" in result.stderr
    result = runner.invoke(app, ["export", str(SMALL), "-o", "-", "--format", "json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["traceEvents"]


def test_stdout_when_piped() -> None:
    result = runner.invoke(app, ["export", str(SMALL), "-o", "-"])
    assert result.exit_code == 0
    assert result.stdout_bytes[:1] == b"\x0a"
    assert "wrote stdout" in result.stderr


@pytest.mark.slow
def test_the_origin_is_the_earliest_event_and_the_document_is_one_dumps() -> None:
    """The writer times events from the earliest session's start, known before any layout,
    because each session's capture spans it; it writes a session at a time. Both hold only
    if that start is the earliest slice or counter sample of the layout, and the streamed
    document is what one `orjson.dumps` of it gives."""
    import io

    import orjson

    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.layout import TraceFacts, build_layout
    from agent_profiler.loader import load
    from agent_profiler.writers.chrome_json import ChromeJsonWriter

    checked = 0
    for journal in sorted(p for p in DATA.iterdir() if p.is_dir()):
        sessions = load([journal], Diagnostics()).sessions
        layout = build_layout(sessions, TraceFacts())
        starts = [s.start for t in layout.sessions for s in t.slices]
        starts += [ts for t in layout.sessions for c in t.counters for ts, _, _ in c.samples]
        out = io.BytesIO()
        events = ChromeJsonWriter().write(sessions, out)
        document = orjson.loads(out.getvalue())
        assert document["metadata"]["start_unix_ns"] == min(starts)
        assert min(e.get("ts", 0) for e in document["traceEvents"]) == 0
        assert len(document["traceEvents"]) == events
        assert orjson.dumps(document) == out.getvalue()
        checked += len(sessions)
    assert checked > 30


def test_the_document_is_written_in_runs_of_about_a_megabyte() -> None:
    """Events are dumped as they are made and written in runs of about 1 MiB, so the
    writer never holds the document: each write but the last is at least 1 MiB and at
    most 1 MiB and one event more."""
    import io

    import orjson

    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.loader import load
    from agent_profiler.writers.chrome_json import ChromeJsonWriter

    class Recording(io.BytesIO):
        def __init__(self) -> None:
            super().__init__()
            self.sizes: list[int] = []

        def write(self, data: Any) -> int:
            self.sizes.append(len(data))
            return super().write(data)

    journals = sorted(p for p in DATA.iterdir() if p.is_dir())
    out = Recording()
    ChromeJsonWriter().write(load(journals, Diagnostics()).sessions, out)
    largest = max(len(orjson.dumps(e)) for e in orjson.loads(out.getvalue())["traceEvents"])
    assert len(out.sizes) >= 3, out.sizes
    for size in out.sizes[:-1]:
        assert 1 << 20 <= size <= (1 << 20) + largest + 1


@pytest.mark.parametrize(
    "folder",
    [
        DATA,
        pytest.param(CORPUS, marks=pytest.mark.skipif(not CORPUS.is_dir(), reason=SHARED_REASON)),
    ],
    ids=["tests-data", "corpus"],
)
def test_perfettos_json_importer_draws_every_flow_the_trace_has(
    tmp_path: Path, folder: Path
) -> None:
    """Every journal of the test data and of the corpus, read as Perfetto's JSON importer
    reads it (tests/json_importer_rules.py): as many flows drawn as the Perfetto trace has,
    none dropped (14% were: the Largest additions' ends in another category, and an end
    written before its start at the same time), and no lane taken for a main thread."""
    events = orjson.loads(export(tmp_path, "t.json", journal=folder).read_bytes())["traceEvents"]
    view = load_trace(export(tmp_path, "t.pftrace", journal=folder))
    drawn, lost = json_importer_rules.flows(events)
    assert lost == [] and drawn == len(view.flows) > 1000
    threads = [e for e in events if e["ph"] == "M" and e["name"] == "thread_name"]
    assert threads and all(e["tid"] != e["pid"] for e in threads)
