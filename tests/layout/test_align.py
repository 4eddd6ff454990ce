"""`export --align start` (issue 29): every session tree laid out from one origin, so two
sessions of different days sit one above the other; the trace and each `profile (1)` say
the clock was aligned and keep each session's real start. Real journals: the spotter
Claude Code session with its subagent and a Codex rollout of another day."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_profiler.align import ORIGIN, align_start
from agent_profiler.layout import TRACE_ROOT_UUID, start_rank
from agent_profiler.model import Session
from agent_profiler.views import session_span
from samples import CLAUDE_SMALL, DATA, GEMINI_JSONL, read
from traceview import TraceView

SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
CODEX = DATA / "codex"


def _profiles(view: TraceView) -> dict[str, Any]:
    found = {}
    for capture in view.captures():
        profile = view.profile_of(capture.uuid)
        assert profile is not None
        found[profile.args["session_id"]] = profile
    return found


def test_default_keeps_real_time_and_align_start_moves_every_tree_to_one_origin(
    export_trace: Any,
) -> None:
    real = export_trace(SPOTTER, CODEX)
    aligned = export_trace(SPOTTER, CODEX, args=("--align", "start"))
    before, after = _profiles(real.view), _profiles(aligned.view)
    assert before.keys() == after.keys() and len(before) >= 3
    assert real.view.attributes["clock"] == "wall-clock"
    assert aligned.view.attributes["clock"] == "aligned-start"
    roots = {sid: p for sid, p in before.items() if "parent_session" not in p.args or sid == ""}
    starts = {sid: p.ts for sid, p in roots.items()}
    assert len(set(starts.values())) == len(starts), "the real sessions start apart"
    for sid, profile in after.items():
        old = before[sid]
        # same length, real start kept and said
        assert profile.dur == old.dur
        assert profile.args["clock_alignment"] == "start"
        assert profile.args["real_start_ns"] == old.ts
        assert profile.args["real_start"].endswith("Z")
        assert "clock_alignment" not in old.args
    # each top-level session starts at the origin (its earliest moment), and a subagent
    # keeps its offset inside its parent
    for sid in roots:
        assert after[sid].ts == ORIGIN
    child = next(s for s, p in before.items() if p.args.get("parent_session") == SPOTTER_ID)
    assert after[child].ts - after[SPOTTER_ID].ts == before[child].ts - before[SPOTTER_ID].ts
    # the trace root says so, and still orders the sessions by their real start
    root = aligned.view.tracks[TRACE_ROOT_UUID]
    assert root.name.endswith("aligned at their start")
    tops = [t for t in aligned.view.tracks.values() if t.parent_uuid == TRACE_ROOT_UUID]
    by_rank = sorted(tops, key=lambda t: t.sibling_order_rank or 0)
    real_order = sorted(roots, key=lambda sid: starts[sid])
    assert [t.sibling_order_rank for t in by_rank] == [start_rank(starts[s]) for s in real_order]


SPOTTER_ID = "258c7280-ae70-4798-800f-63464d01a85d"


def test_the_json_writer_aligns_the_same_way(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agent_profiler.cli import app

    out = tmp_path / "t.json"
    result = CliRunner().invoke(app, ["export", str(SPOTTER), str(CODEX), "-o", str(out)])
    assert result.exit_code == 0
    real = json.loads(out.read_bytes())
    result = CliRunner().invoke(
        app, ["export", str(SPOTTER), str(CODEX), "-o", str(out), "--align", "start", "--force"]
    )
    assert result.exit_code == 0, result.output
    aligned = json.loads(out.read_bytes())
    assert aligned["metadata"]["trace_attribute.clock"] == "aligned-start"
    assert aligned["metadata"]["start_unix_ns"] == ORIGIN
    profiles = [e for e in aligned["traceEvents"] if e.get("name") == "profile (1)"]
    assert profiles and all(p["args"]["clock_alignment"] == "start" for p in profiles)
    tops = [p for p in profiles if "parent_session" not in p["args"]]
    assert {p["ts"] for p in tops} == {0.0}
    assert len(aligned["traceEvents"]) == len(real["traceEvents"])


def test_an_unknown_alignment_is_one_line() -> None:
    from typer.testing import CliRunner

    from agent_profiler.cli import app

    result = CliRunner().invoke(app, ["export", str(CODEX), "--align", "end", "-o", "-"])
    assert result.exit_code == 2
    assert "--align" in result.output + result.stderr


MUSE_COMPACTED = (
    DATA / "muse/synthetic/sessions/2026/10/05/01a20000-0000-7000-8000-00000000a001/session.jsonl"
)
PI_FIRST_LINES = DATA / "pi" / "pi-mono_large-session_v1_first-25-lines.jsonl"


def _moments(session: Session) -> list[int]:
    """Every time a session holds, in a fixed order."""
    requests = [c.request for c in session.compactions if c.request is not None]
    spans = [
        *session.prompts,
        *session.responses,
        *session.tool_calls,
        *session.compactions,
        *requests,
        *session.failed_requests,
        *session.unmetered_responses,
    ]
    return [
        session.start_ns,
        session.end_ns,
        *(t for span in spans for t in (span.start_ns, span.end_ns)),
        *(snapshot.time_ns for snapshot in session.snapshots),
        *(marker.time_ns for marker in session.markers),
    ]


def test_every_moment_of_a_session_moves_with_it() -> None:
    """Not only the spans: the Events track's markers (model changes, errors), the failed
    and the unmetered requests and a compaction's own request sit where they were among
    the rest once aligned (real journals of Gemini CLI, Muse, Claude Code and Pi that hold
    each)."""
    sessions, _ = read(GEMINI_JSONL, MUSE_COMPACTED, CLAUDE_SMALL, PI_FIRST_LINES)
    assert all(
        any(getattr(s, kind) for s in sessions)
        for kind in ("markers", "failed_requests", "unmetered_responses", "snapshots")
    )
    assert any(c.request is not None for s in sessions for c in s.compactions)
    aligned = align_start(sessions)
    ids = {s.session_id for s in sessions}
    for before, after in zip(sessions, aligned, strict=True):
        shift = after.shifted_ns
        assert shift != 0
        assert _moments(after) == [t + shift for t in _moments(before)]
        if before.parent_session not in ids:  # a tree's top: at the origin (a subagent: after)
            assert session_span(after)[0] == ORIGIN
