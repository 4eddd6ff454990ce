"""Tests that kill the survivors of `opencode_v2.py`'s sample (mutation round 3, fourteenth
session; tests/mutation-survivors.md): small 2.x databases built at run time, as in
`test_opencode_v2.py` (no real 2.x database is in the corpus)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_opencode_v2 import CONVERSATION, MS, assistant, at, build, one, tokens

from agent_profiler.adapters import opencode_v2
from agent_profiler.diagnostics import Diagnostics
from samples import read


def test_a_user_row_is_a_prompt_at_its_time(tmp_path: Path) -> None:
    session, diagnostics = one(build(tmp_path / "opencode.db", {"ses_u": CONVERSATION}))
    (prompt,) = session.prompts
    assert prompt.start_ns == at(0) * MS
    assert "opencode:message-without-time" not in diagnostics.notes


def test_a_tool_runs_from_when_it_ran_to_when_it_completed(tmp_path: Path) -> None:
    """The `read` call of the conversation: created at +100 ms, ran at +110 ms, completed at
    +300 ms (its item's `time`), not at the request's start."""
    session, _ = one(build(tmp_path / "opencode.db", {"ses_t": CONVERSATION}))
    (call,) = session.tool_calls
    assert (call.start_ns, call.end_ns) == ((at(3) + 110) * MS, (at(3) + 300) * MS)


def test_a_tool_that_did_not_run_yet_starts_when_it_was_created(tmp_path: Path) -> None:
    call = {
        "type": "tool",
        "id": "c_wait",
        "name": "bash",
        "state": {"status": "running", "input": {"command": "sleep 1"}},
        "time": {"created": at(1) + 250},
    }
    rows: list[tuple[str, dict[str, Any] | str]] = [
        ("user", {"text": "go", "time": {"created": at(0)}}),
        ("assistant", assistant(1, [call], tokens=tokens(5, 5, read=50))),
    ]
    session, _ = one(build(tmp_path / "opencode.db", {"ses_w": rows}))
    (tool,) = session.tool_calls
    assert tool.start_ns == (at(1) + 250) * MS


def test_a_compaction_without_a_completion_time_ends_when_its_row_was_updated(
    tmp_path: Path,
) -> None:
    """The compaction's data has only its `created` time: its summarising request ends
    when the row was last written (`time_updated`, 500 ms after `time_created` here)."""
    compaction = {
        "status": "completed",
        "summary": "We read the README.",
        "time": {"created": at(5)},
        "tokens": tokens(200, 80, read=13000),
    }
    rows = [*CONVERSATION[:5], ("compaction", compaction)]
    session, _ = one(build(tmp_path / "opencode.db", {"ses_c": rows}))
    (done,) = session.compactions
    assert done.request is not None and done.request.end_ns == (at(5) + 500) * MS


def test_the_cost_of_a_step_without_usage_is_still_its_recorded_cost(tmp_path: Path) -> None:
    """A step that failed without `tokens` but with a `cost`: the failed request's recorded
    cost is that cost (the 1.x message's, read when it has no step-finish)."""
    rows: list[tuple[str, dict[str, Any] | str]] = [
        ("user", {"text": "go", "time": {"created": at(0)}}),
        ("assistant", {**assistant(1, []), "error": {"type": "aborted"}, "cost": 0.004}),
    ]
    session, _ = one(build(tmp_path / "opencode.db", {"ses_f": rows}))
    (failed,) = session.failed_requests
    assert failed.recorded_usd == 0.004


def test_reasoning_kept_opaque_in_its_state_is_encrypted_reasoning(tmp_path: Path) -> None:
    """A reasoning item without text whose provider state is opaque (round-tripped, not
    shown): seen as encrypted reasoning, not measured."""
    reasoning = {"type": "reasoning", "id": "r", "text": "", "state": {"opaque": "gAAAA"}}
    rows: list[tuple[str, dict[str, Any] | str]] = [
        ("user", {"text": "go", "time": {"created": at(0)}}),
        ("assistant", assistant(1, [reasoning], tokens=tokens(5, 5, read=50))),
    ]
    session, _ = one(build(tmp_path / "opencode.db", {"ses_r": rows}))
    assert dict(session.unmeasured) == {"encrypted-reasoning": 1}


def test_a_compaction_status_of_twenty_characters_is_an_unknown_status() -> None:
    """A status is named in the skip key only when shorter than 20 characters (a value that
    is no status is not copied into the summary)."""
    diagnostics = Diagnostics()
    for status in ("x" * 19, "x" * 20):
        row = ("m", "ses", "compaction", at(0), at(0), f'{{"status": "{status}"}}')
        opencode_v2.messages([row], "opencode.db", diagnostics)
    assert dict(diagnostics.skipped) == {
        f"opencode:session_message/compaction ({'x' * 19})": 1,
        "opencode:session_message/compaction (unknown status)": 1,
    }


def test_a_row_of_an_unknown_type_is_said_with_where_it_is(tmp_path: Path) -> None:
    path = build(tmp_path / "opencode.db", {"ses_h": [("hologram", {"time": {}})]})
    _, diagnostics = read(path)
    (where,) = diagnostics.unrecognised_at.values()
    assert where.endswith("opencode.db (message msg_ses_h_0)")
