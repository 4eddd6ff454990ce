"""Journal markers that are not configuration (Gemini CLI's notices and rewinds, OpenCode's
patches and retries) sit on a track of their own, `Events`, named by their value's first
line; Pi's model and thinking-level changes stay on `Configuration`. On real journals, the
corpus's when it is beside the repository."""

from __future__ import annotations

from typing import Any

import pytest

import shared_paths
from agent_profiler.layout import TraceFacts, build_layout
from agent_profiler.layout.tracks import TRACKS, _marker_name
from agent_profiler.model import Marker
from rules_spy import sessions
from samples import DATA, GEMINI_DOCUMENT, GEMINI_JSONL, PI_LARGE
from traceview import Slice, TraceView

GEMINI_WARNING = DATA / "gemini-cli" / "entire-ec-38b74f08e3-2_session-warning-only.json"
OPENCODE_PATCHES = shared_paths.CORPUS / "opencode" / "dhc-dashboard-1.18.21-task-subagent"


def _instants_on(view: TraceView, track: str) -> list[Slice]:
    return [s for s in view.slices if s.instant and view.tracks[s.track_uuid].name == track]


def test_the_events_track_comes_after_the_compactions_with_a_description() -> None:
    names = [row.name for row in TRACKS]
    assert names.index("Compaction") < names.index("Events") < names.index("Context size")
    (events,) = [row for row in TRACKS if row.name == "Events"]
    assert "Gemini CLI" in str(events.description) and "OpenCode" in str(events.description)


def test_gemini_notices_are_events_named_by_their_first_line(export_trace: Any) -> None:
    """Gemini CLI's update notice runs over two lines (`0.23.0 → 0.24.0`, then how it was
    installed): its name keeps the first, its `value` both; the Configuration lane holds
    only the model run."""
    view = export_trace(GEMINI_DOCUMENT, require_addition=False).view
    (info,) = _instants_on(view, "Events")
    assert info.name == "info: Gemini CLI update available! 0.23.0 → 0.24.0"
    assert info.args["marker"] == "info"
    assert info.args["value"].startswith("Gemini CLI update available! 0.23.0 → 0.24.0\n")
    assert "brew upgrade gemini-cli" in info.args["value"]
    assert _instants_on(view, "Configuration") == []
    assert [s.name for s in view.slices if view.tracks[s.track_uuid].name == "Configuration"] == [
        "run-configuration"
    ]
    (track,) = {view.tracks[info.track_uuid].description}
    assert track.startswith("Moments the journal marks")

    # A session with no request (so no Context counter: laid out, not exported under the
    # contract's example check): its hook warning, a sentence over 100 characters.
    (laid,) = build_layout(sessions(GEMINI_WARNING), TraceFacts()).sessions
    (hook,) = [s for s in laid.slices if s.track == "Events"]
    assert not [s for s in laid.slices if s.track == "Configuration" and s.instant]
    assert hook.name == (
        "warning: Hook(s) [entire-session-end-exit] failed for event SessionEnd. Press F12 to "
        "see the debug…"
    )
    assert len(hook.name) <= 100 and hook.args["value"].endswith("more details.\n")
    cancelled = export_trace(GEMINI_JSONL, require_addition=False).view
    assert {s.name for s in _instants_on(cancelled, "Events")} == {"info: Request cancelled."}


def test_pi_model_and_thinking_level_changes_stay_on_configuration(export_trace: Any) -> None:
    view = export_trace(PI_LARGE, require_addition=False).view
    changes = _instants_on(view, "Configuration")
    assert {s.args["marker"] for s in changes} == {"model_change", "thinking_level_change"}
    assert "model change: anthropic/claude-sonnet-4-5" in {s.name for s in changes}
    assert not any(t.name == "Events" for t in view.tracks.values())


@pytest.mark.skipif(not OPENCODE_PATCHES.is_dir(), reason=shared_paths.SHARED_REASON)
def test_opencode_patches_are_events(export_trace: Any) -> None:
    view = export_trace(OPENCODE_PATCHES, require_addition=False).view
    patches = _instants_on(view, "Events")
    assert len(patches) > 50 and {s.args["marker"] for s in patches} == {"patch"}
    assert "patch: 2 files" in {s.name for s in patches}
    assert _instants_on(view, "Configuration") == []


def test_a_marker_name_is_one_line_of_at_most_100_characters() -> None:
    assert _marker_name(Marker(0, "error", "Automatic update failed.\n  at line 3")) == (
        "error: Automatic update failed."
    )
    long = _marker_name(Marker(0, "info", "x" * 300))
    assert len(long) == 100 and long == "info: " + "x" * 93 + "…"
    assert _marker_name(Marker(0, "thinking_level_change", "high")) == "thinking level change: high"
