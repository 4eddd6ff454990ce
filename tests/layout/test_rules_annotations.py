"""The arguments each slice carries (annotations.py), pinned on real journals: the
compaction request's usage, a /context report's keys and the repeated `context` keys it
leaves out, a failed request's reason, and `profile (1)`'s context without a table of
previous snapshots. Exact values, read from the journals named in each test."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from agent_profiler.annotations import (
    context_dict,
    failed_request_args,
    profile_args,
    response_args,
    tool_args,
)
from agent_profiler.estimate import CALIBRATED_ESTIMATION, CHARS4_ESTIMATION
from agent_profiler.layout import TraceFacts, build_layout
from rules_spy import sessions
from samples import CLAUDE_SMALL, DATA, GEMINI_JSONL

SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
CONTEXT_TWICE = (
    DATA
    / "claude-code"
    / "context-command"
    / "hannibal8856-claude_backup_v2.1.222_5a198443_incl-queued.jsonl"
)
INIT_ONLY = DATA / "claude-code" / "trackgentic-mp9r3tbb_v2.1.143_init-only-no-result.jsonl"


def test_the_compaction_request_carries_its_usage() -> None:
    """Spotter's /compact: the summarising request's usage as its journal reports it."""
    layout = build_layout(sessions(SPOTTER), TraceFacts())
    (request,) = [s for t in layout.sessions for s in t.slices if s.track == "Compaction responses"]
    assert (request.name, request.start, request.end) == (
        "response",
        1_770_844_634_555_000_000,
        1_770_844_721_098_000_000,
    )
    assert request.args == {
        "kind": "compaction-response",
        "model": "claude-opus-4-6",
        "input_tokens": 3,
        "output_tokens": 6,
        "cache_read_tokens": 166_758,
        "cache_write_tokens": 2_487,
        "context_tokens": 169_248,
    }


def test_a_second_context_report_leaves_out_the_window_and_model_it_repeats() -> None:
    """Two /context runs in one real session, both of claude-opus-5 with a 1M window: the
    second's `context` does not say the window and the model again."""
    layout = build_layout(sessions(CONTEXT_TWICE), TraceFacts())
    first, second = [s for t in layout.sessions for s in t.slices if s.track == "Context command"]
    assert (first.name, second.name) == ("/context", "/context")
    heads = [{k: v for k, v in s.args.items() if k != "context"} for s in (first, second)]
    assert heads == [
        {"kind": "context-command", "used_tokens": used, "context_window_tokens": 1_000_000}
        for used in (22_000, 368_000)
    ]
    before, after = first.args["context"], second.args["context"]
    assert (before["window_tokens"], before["model"]) == (1_000_000, "claude-opus-5")
    assert "window_tokens" not in after and "model" not in after
    assert (before["reported_tokens"], after["reported_tokens"]) == (22_000, 368_000)
    assert after["categories"] == {
        "system": 5_600,
        "rules": 3_900,
        "skills": 4_100,
        "tools": 9_455,
        "messages": 345_100,
    }


def test_a_failed_request_without_a_reason_says_error(tmp_path: Path) -> None:
    """A Gemini CLI request without usage (`no usage recorded (cancelled?)`): tp-tutor's
    usage-less record 1c3235be given text (as written it only holds the late calls of the
    response before it, no request: test_gemini_late_calls.py), and the same request
    edited to have no reason at all."""
    lines = [json.loads(line) for line in GEMINI_JSONL.read_text().splitlines() if line]
    for line in lines:
        if line.get("id") == "1c3235be-c211-4ece-a2e4-7143860f39fc":
            line["content"] = "Running it."
    edited = tmp_path / GEMINI_JSONL.name
    edited.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (session,) = sessions(edited)
    request = session.failed_requests[0]
    expected = {
        "kind": "provider-request",
        "incomplete": True,
        "is_error": True,
        "reason": "no usage recorded (cancelled?)",
        "model": "gemini-3-flash-preview",
        "response_id": "1c3235be-c211-4ece-a2e4-7143860f39fc",
    }
    assert failed_request_args(request) == expected
    unexplained = dataclasses.replace(request, stop_reason=None)
    assert failed_request_args(unexplained) == {**expected, "reason": "error"}


def test_profile_args_without_previous_snapshots_still_write_the_session_context() -> None:
    """An init-only stream-json run: its only snapshot is the session's, on `profile (1)`;
    called without the table of previous snapshots, every repeated key is written."""
    (session,) = sessions(INIT_ONLY)
    args = profile_args(session, TraceFacts(), 1, session.start_ns, False)
    context = args["context"]
    assert context["model"] == "glm-5.1"
    assert context["categories"] == {"environment": 3_878}
    assert context["sample_offset_ns"] == 2_000_000
    assert [(c["id"], c["change"], c["tokens"], c["chars"]) for c in context["changes"]] == [
        ("hook:72b47ed7-e0ad-4277-9afe-90d45a84bc08", "baseline", 3_878, 15_511)
    ]


CODEX_CUT = (
    DATA / "codex" / "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"
)
GEMINI_WARNING_ONLY = DATA / "gemini-cli" / "entire-ec-38b74f08e3-2_session-warning-only.json"


def _profile(session: Any, calibrated: bool = False) -> dict[str, Any]:
    return profile_args(session, TraceFacts(), 1, session.start_ns, calibrated, {})


def test_a_session_cut_short_says_so_on_its_profile() -> None:
    """Codex's rollout that stops before its tool result (the session is incomplete)."""
    (cut,) = sessions(CODEX_CUT)
    args = _profile(cut)
    assert args["incomplete"] is True
    assert (args["model"], args["context_window_source"]) == ("gpt-5.3-codex", "journal")
    (whole, _) = sessions(SPOTTER)
    assert "incomplete" not in _profile(whole)


def test_a_session_without_a_model_says_unknown() -> None:
    """Gemini CLI's warning-only session: no request, so no model; its window is assumed."""
    (session,) = sessions(GEMINI_WARNING_ONLY)
    args = _profile(session)
    assert (args["provider"], args["model"]) == ("google", "unknown")
    assert args["context_window_tokens"] == 1_048_576
    assert args["context_window_source"] == (
        "assumed: Gemini CLI's default window (model unknown, not in journal)"
    )
    assert args["responses"] == 0


def test_a_window_or_a_child_role_nobody_explained_gets_the_default_word() -> None:
    """Edited real sessions (spotter and its Task subagent): no adapter leaves a window
    without its source or a subagent without its role, but the profile still reads."""
    parent, child = sessions(SPOTTER)
    assert _profile(parent)["context_window_source"] == (
        "assumed: Claude default window, not in journal"
    )
    assert _profile(dataclasses.replace(parent, window_source=None))["context_window_source"] == (
        "journal"
    )
    args = _profile(dataclasses.replace(child, child_role=None))
    assert (args["parent_session"], args["child_role"], args["agent_id"]) == (
        "258c7280-ae70-4798-800f-63464d01a85d",
        "subagent",
        "a881341",
    )
    assert args["parent_call_id"] == "toolu_01VmaERAwhb19LGUwu9GenaK"
    assert args["session_labels"] == ["Claude Code", "subagent"]


def test_a_calibrated_export_names_its_basis_and_the_default_does_not() -> None:
    (session, _) = sessions(SPOTTER)
    calibrated = _profile(session, calibrated=True)
    assert calibrated["estimation"] == CALIBRATED_ESTIMATION
    assert calibrated["estimate_basis"] == "chars/calibrated-v3"
    default = _profile(session)
    assert default["estimation"] == CHARS4_ESTIMATION and "estimate_basis" not in default


def test_a_context_with_more_changes_than_written_says_how_many_it_left_out() -> None:
    """Spotter's compaction changes 320 items: the first 64 changes are written, 256 counted."""
    (session, _) = sessions(SPOTTER)
    (snapshot,) = [x for x in session.snapshots if x.omitted_changes]
    context = context_dict(snapshot, snapshot.time_ns)
    assert (len(context["changes"]), context["omitted_changes"]) == (64, 256)
    assert "sample_offset_ns" not in context  # the snapshot is at the slice's start
    later = context_dict(snapshot, snapshot.time_ns - 5)
    assert later["sample_offset_ns"] == 5


def test_a_tool_call_without_its_result_is_incomplete_and_its_response_says_its_usage() -> None:
    """Codex's rollout cut off while `exec_command` ran: no result was recorded."""
    (cut,) = sessions(CODEX_CUT)
    (call,) = cut.tool_calls
    assert tool_args(call, previews=False) == {
        "kind": "tool-execution",
        "call_id": "call_UtYwHmwWekzvq83m8Rb9K8jJ",
        "name": "exec_command",
        "is_error": False,
        "bytes": 456,  # the `len=456` its redaction marker states
        "keys": [],
        "result_chars": 0,
        "incomplete": True,
    }
    (response,) = cut.responses
    expected = {
        "kind": "assistant-message",
        "model": "gpt-5.3-codex",
        "provider": "openai",
        "input_tokens": 34_469,
        "output_tokens": 431,
        "cache_read_tokens": 3_456,
        "cache_write_tokens": 0,
        "context_tokens": 34_469,
        "reasoning_tokens": 264,
        "context_window_tokens": 258_400,
        "response_id": "request-1",
    }
    # `is_error` is said only when true (a HABIT key on responses: absent reads false)
    assert response_args(cut, response, None) == expected
    failed = dataclasses.replace(response, is_error=True)
    assert response_args(cut, failed, None)["is_error"] is True
    # the window is said where it is given: absent, the window of the response before
    later = {k: v for k, v in expected.items() if k != "context_window_tokens"}
    assert response_args(cut, response, None, window=0) == later
    assert response_args(cut, response, None, window=121_600)["context_window_tokens"] == 121_600
    # edited: a session whose provider nobody recorded
    unknown = dataclasses.replace(cut, provider=None)
    assert response_args(unknown, response, None)["provider"] == "unknown"


def test_a_change_linked_to_a_tool_of_the_capture_leaves_out_what_the_link_says() -> None:
    """Spotter: its tool results and arguments are changes linked to the calls' slices."""
    (session, _) = sessions(SPOTTER)
    calls = frozenset(c.call_id for c in session.tool_calls)
    snapshot = next(
        x
        for x in session.snapshots
        if not x.baseline
        and {c.label for c in x.changes if c.source_id in calls}
        >= {"Tool result", "Tool arguments"}
    )
    unlinked = context_dict(snapshot, snapshot.time_ns)["changes"]
    linked = context_dict(snapshot, snapshot.time_ns, None, calls)["changes"]
    assert len(linked) == len(unlinked)
    for change, full, written in zip(snapshot.changes, unlinked, linked, strict=True):
        if change.source_id in calls and change.source_kind.value == "tool":
            # THEN a change a tool slice of the capture caused says so by its source_id
            # alone: no `source_kind` (it is `tool`), no default label (the UI names the tool)
            assert written == {k: v for k, v in full.items() if k not in ("source_kind", "label")}
            assert full["label"] in ("Tool result", "Tool arguments")
        else:
            assert written == full
    # AND a call id the capture has no slice for keeps both: the UI shows the label then
    (one,) = [c for c in snapshot.changes if c.source_id in calls][:1]
    elsewhere = context_dict(snapshot, snapshot.time_ns, None, calls - {one.source_id})
    kept = [c for c in elsewhere["changes"] if c.get("source_id") == one.source_id]
    assert kept and all(c["source_kind"] == "tool" and "label" in c for c in kept)


def test_a_linked_change_keeps_a_label_that_is_not_its_categorys_default() -> None:
    (session, _) = sessions(SPOTTER)
    calls = frozenset(c.call_id for c in session.tool_calls)
    snapshot = next(x for x in session.snapshots if any(c.source_id in calls for c in x.changes))
    change = next(c for c in snapshot.changes if c.source_id in calls)
    renamed = dataclasses.replace(
        snapshot, changes=(dataclasses.replace(change, label="Subagent report"),)
    )
    (written,) = context_dict(renamed, renamed.time_ns, None, calls)["changes"]
    assert written["label"] == "Subagent report" and "source_kind" not in written


def test_a_session_whose_model_changed_lists_its_models_on_its_profile() -> None:
    (whole, _) = sessions(SPOTTER)
    assert "models" not in _profile(whole)  # one model: `model` says it
    changed = dataclasses.replace(whole, models=("claude-opus-4-6", "claude-sonnet-4-5"))
    args = _profile(changed)
    assert (args["model"], args["models"]) == (
        "claude-opus-4-6",
        ["claude-opus-4-6", "claude-sonnet-4-5"],
    )


def test_a_context_report_and_a_compaction_leave_out_what_a_tool_link_says() -> None:
    """Spotter's compaction snapshot, on a /context report's slice and on the compaction's:
    both write their `context` as a request does, given the capture's call ids."""
    from agent_profiler.annotations import compaction_args, context_command_args

    (session, _) = sessions(SPOTTER)
    calls = frozenset(c.call_id for c in session.tool_calls)
    (compaction,) = [c for c in session.compactions if c.kind == "compaction"][:1]
    snapshot = next(x for x in session.snapshots if any(c.source_id in calls for c in x.changes))
    # and on profile (1), which carries a session's snapshot (a session without requests)
    from agent_profiler.model import AnchorKind

    at_session = dataclasses.replace(snapshot, anchor=AnchorKind.SESSION, anchor_id="")
    alone = dataclasses.replace(session, snapshots=(at_session,))
    profile = profile_args(alone, TraceFacts(), 1, alone.start_ns, False, {}, calls)
    for args in (
        context_command_args(snapshot, None, calls),
        compaction_args(compaction, snapshot, None, calls),
        profile,
    ):
        linked = [c for c in args["context"]["changes"] if c.get("source_id") in calls]
        assert linked and all("source_kind" not in c for c in linked)


def test_a_capture_lists_at_most_eight_of_the_commands_inputs_and_says_how_many() -> None:
    (session, _) = sessions(SPOTTER)
    names = tuple(f"rollout-{i}.jsonl" for i in range(12))
    args = profile_args(session, TraceFacts(inputs=names), 1, session.start_ns, False)
    assert (args["inputs"], args["inputs_total"]) == (list(names[:8]), 12)
    few = profile_args(session, TraceFacts(inputs=names[:8]), 1, 0, False)
    assert few["inputs"] == list(names[:8]) and "inputs_total" not in few


def test_a_compaction_whose_snapshot_is_the_sessions_first_carries_its_context() -> None:
    """A journal that begins with a compaction (a resumed session) has the compaction's
    snapshot first: the Compaction slice still carries it. SMALL (CLAUDE_SMALL) with the
    snapshots before its first compaction's left out."""
    (session,) = sessions(CLAUDE_SMALL)
    first = session.compactions[0]
    cut = next(i for i, x in enumerate(session.snapshots) if x.anchor_id == first.id)
    assert cut > 0
    resumed = dataclasses.replace(session, snapshots=session.snapshots[cut:])
    (laid,) = build_layout([resumed], TraceFacts()).sessions
    compactions = [s for s in laid.slices if s.track == "Compaction"]
    assert len(compactions) == len(session.compactions) == 2
    for slice_, compaction in zip(compactions, session.compactions, strict=True):
        (snapshot,) = [x for x in resumed.snapshots if x.anchor_id == compaction.id]
        context = slice_.args["context"]
        assert context["estimated_tokens"] == snapshot.estimated_tokens > 0
