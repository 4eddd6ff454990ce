"""The real Perfetto UI (v58.2, ../shared/tools/perfetto-ui/shot.sh: headless Chromium, the
native trace processor on 127.0.0.1:9001) on one Claude Code and one Codex export, judged from
shot.sh's text outputs: the track tree a user sees on load (OUT.tracks.txt), the details panel of
a selected slice (OUT.details.txt) and the log (OUT.log: import errors, page errors).

Two renders of 12–30 s each; marked `ui`, and part of `make test`. Skipped when the UI tools,
the trace processor or Chromium are absent, or when port 9001 is taken by someone else.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_claude_code import ENTIRE_4B
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.model import Category
from realtp import BINARY, SHARED, SKIP_REASON
from shared_paths import TESTS
from traceview import TraceView, load_trace

SHOT = SHARED / "tools" / "perfetto-ui" / "shot.sh"
CODEX_SMALL = (
    TESTS
    / "data"
    / "journals"
    / "codex"
    / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
)
# The first Largest additions instant that ends a flow: the UI selects it, and its details
# panel must name the tool call the flow comes from.
SELECT_ADDITION = (
    "SELECT f.slice_in FROM flow f JOIN slice s ON s.id = f.slice_in "
    "JOIN track t ON t.id = s.track_id WHERE t.name = 'Largest additions' "
    "ORDER BY s.ts, s.id LIMIT 1"
)
# What a capture shows, top to bottom (only the tracks a session has).
CAPTURE_ORDER = (
    "Session",
    "Inputs",
    "Prompts",
    "Responses",
    "Requests",
    "Turns",
    "Tools",
    "Compaction",
    "Compaction responses",
    "Events",
    "Context command",
    "Context size",
    "Context fill",
    "Context window",
    "Context",
    "Input tokens",
    "Output tokens",
    "Configuration",
)

pytestmark = [
    pytest.mark.ui,
    pytest.mark.slow,
    pytest.mark.skipif(not SHOT.is_file(), reason=f"Perfetto UI tools not found at {SHOT}"),
    pytest.mark.skipif(BINARY is None, reason=SKIP_REASON),
    pytest.mark.skipif(
        shutil.which("chromium") is None,
        reason="chromium is not installed (make browser, or apt-get install chromium)",
    ),
]


@dataclass
class Node:
    depth: int
    name: str
    state: str  # "[collapsed]", "[expanded]" or ""
    kind: str


def parse_tree(text: str) -> list[Node]:
    nodes = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 2
        match = re.match(
            r"^(.*?) (\[collapsed\]|\[expanded\]|)(?: summary)?  kind=(\S*) uri=", line.strip()
        )
        assert match, line
        nodes.append(Node(depth, match[1], match[2], match[3]))
    return nodes


def children(nodes: list[Node], parent: int) -> list[Node]:
    out = []
    for node in nodes[parent + 1 :]:
        if node.depth <= nodes[parent].depth:
            break
        if node.depth == nodes[parent].depth + 1:
            out.append(node)
    return out


def render(journal: Path, out: Path) -> tuple[TraceView, Path]:
    trace = out / "trace.pftrace"
    result = CliRunner().invoke(app, ["export", str(journal), "-o", str(trace)])
    assert result.exit_code == 0, result.output
    png = out / "shot.png"
    for _attempt in range(2):
        # shot.sh polls its static server's log (OUT.serve.log) for the port, and under set -e
        # its sed fails the run if the polling starts before the background redirect creates
        # the file ("sed: can't read OUT.serve.log"), which happens on a busy machine. The
        # file existing beforehand closes that race (the redirect truncates it); one retry stays
        # for anything else of the tool's.
        png.with_suffix(".serve.log").touch()
        run = shot(trace, png)
        if "serve.log: No such file" not in run.stderr:
            break
    if run.returncode == 3:
        pytest.skip("port 127.0.0.1:9001 is busy (another trace processor); shot.sh needs it")
    log = png.with_suffix(".log")
    assert run.returncode == 0, run.stdout + run.stderr + (log.read_text() if log.exists() else "")
    return load_trace(trace), png


def shot(trace: Path, png: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            "bash",
            str(SHOT),
            str(trace),
            str(png),
            "--expand",
            "^Context$",
            "--select-sql",
            SELECT_ADDITION,
            "--size",
            "1200x800",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("journal", [ENTIRE_4B, CODEX_SMALL], ids=["claude-code", "codex"])
def test_the_ui_shows_what_the_model_holds(journal: Path, tmp_path: Path) -> None:
    view, png = render(journal, tmp_path)
    (capture,) = view.captures()
    group = view.tracks[capture.parent_uuid] if capture.parent_uuid else None
    assert group is not None and group.process is None and group.parent_uuid is not None
    root = view.tracks[group.parent_uuid]

    # The log: the trace imported cleanly, so no red Trace Doctor icon and no error tab.
    log = png.with_suffix(".log").read_text()
    assert "stats: no import errors or data loss" in log
    assert "import errors / data loss" not in log and "loadingErrors" not in log
    assert "pageerror" not in log

    # The track tree on load (issue 29): the trace's root → the session's group, named for
    # it (no pid) → agentprof.capture → the session's tracks, in order.
    nodes = parse_tree(png.with_suffix(".tracks.txt").read_text())
    (top,) = [i for i, n in enumerate(nodes) if n.depth == 0 and n.name == root.name]
    (session_node,) = children(nodes, top)
    assert session_node.name == group.name
    (capture_node,) = children(nodes, nodes.index(session_node))
    assert capture_node.name == "agentprof.capture"
    index = nodes.index(capture_node)
    shown = [n.name for n in children(nodes, index)]
    present = {t.name for t in view.children_of(capture.uuid)}
    assert shown == [name for name in CAPTURE_ORDER if name in present]
    for node in children(nodes, index):
        counter = view.counter_by_name(capture.uuid, node.name)
        assert node.kind == ("CounterTrack" if counter else node.kind), node

    # The Context group: collapsed on load, Largest additions then the categories.
    (group,) = [n for n in children(nodes, index) if n.name == "Context"]
    assert group.state == "[collapsed]"
    inside = children(nodes, nodes.index(group))
    labels = {t.name for t in view.counter_tracks(capture.uuid) if t.name.startswith("Context: ")}
    assert [n.name for n in inside] == ["Largest additions"] + [
        f"Context: {c.label}" for c in Category if f"Context: {c.label}" in labels
    ]
    assert inside[0].kind == "SliceTrack"
    assert {n.kind for n in inside[1:]} == {"CounterTrack"} and len(inside) > 2

    # The selected Largest additions instant: its preceding flow is the tool call that caused it.
    details = png.with_suffix(".details.txt").read_text().splitlines()
    additions = [s for s in view.slices if view.tracks[s.track_uuid].name == "Largest additions"]
    instant = min((s for s in additions if s.flow_ids), key=lambda s: (s.ts, s.order))
    assert instant.name in details
    (tool,) = [
        s
        for s in view.slices
        if s.kind == "tool-execution" and s.args["call_id"] == instant.args["tool_call_id"]
    ]
    assert set(instant.flow_ids) & set(tool.flow_ids)
    preceding = details[details.index("Preceding Flows") : details.index("Arguments")]
    assert tool.name in preceding and instant.args["tool_call_id"] in details
