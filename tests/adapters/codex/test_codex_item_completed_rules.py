"""A paginated thread's `item_completed` FileChange stands for `patch_apply_end` (openai/codex
`TurnItem::as_legacy_events`, `FileChangeItem.status: Option<PatchApplyStatus>`, serialised
"completed" / "failed" / "declined"): only "completed" is a patch that applied; a failed or
declined one is a failed tool call, and a status not given (still running) says nothing
(review-d14 finding 6: no test fed a FileChange at all).

The rollout is the real 2026-05-11 one (tests/data/journals/codex) with the `patch_apply_end`
of its first `apply_patch` call (line 259) replaced by the `item_completed` a paginated
thread writes instead, and the call's output (line 260) a plain text without an exit code
(as a rejected patch's is), so that the FileChange alone tells the outcome."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rules_spy import raw_lines, write
from samples import CODEX_PLAIN, read_single

PLAIN = CODEX_PLAIN
LINES = [json.loads(text) for text in raw_lines(PLAIN) if text.strip()]
PATCH_END = 259
END = LINES[PATCH_END - 1]
CALL = END["payload"]["call_id"]


def _patch(tmp_path: Path, status: str | None) -> Any:
    """The apply_patch call's `is_error` when its end is only an `item_completed` FileChange
    (`status` None: the field left out)."""
    assert END["payload"]["type"] == "patch_apply_end" and END["payload"]["success"] is True
    item: dict[str, Any] = {"type": "FileChange", "id": CALL, "changes": {}}
    if status is not None:
        item["status"] = status
    thread = LINES[0]["payload"]["id"]
    payload = {"type": "item_completed", "thread_id": thread, "turn_id": "t-9", "item": item}
    completed = {"timestamp": END["timestamp"], "type": "event_msg", "payload": payload}
    output = LINES[PATCH_END]
    assert output["payload"]["type"] == "custom_tool_call_output"
    output = {**output, "payload": {**output["payload"], "output": "patch not applied"}}
    lines = [*LINES[: PATCH_END - 1], completed, output, *LINES[PATCH_END + 1 :]]
    session, diagnostics = read_single(write(tmp_path, lines, f"rollout-{status}.jsonl"))
    assert dict(diagnostics.unrecognised) == {}
    (tool,) = [t for t in session.tool_calls if t.call_id == CALL]
    assert tool.name == "apply_patch"
    return tool.is_error


@pytest.mark.parametrize(("status", "failed"), [("failed", True), ("declined", True)])
def test_a_file_change_that_did_not_apply_is_a_failed_call(
    tmp_path: Path, status: str, failed: bool
) -> None:
    assert _patch(tmp_path, status) is failed


def test_a_completed_file_change_is_a_call_that_succeeded(tmp_path: Path) -> None:
    assert _patch(tmp_path, "completed") is False


def test_a_file_change_still_in_progress_says_nothing_of_the_outcome(tmp_path: Path) -> None:
    """A status other than the three (here "inProgress"), or none: not the patch's end; the
    call keeps what it had (succeeded, its output giving no exit code), as without it."""
    assert _patch(tmp_path, "inProgress") is _patch(tmp_path, None) is False
