"""Requests with zeroed usage (issue 15, point 6): some backends (GLM behind Claude Code, in the
corpus' trackgentic stream-json) write 0 in every usage field. Those are still model requests:
the trace shows their response spans with `usage_known = false` and no Context size sample from
their zeros, and the summary keeps the peer-compatible `calls` (which skips them) while saying
how many responses had no usage.

SPEC §3 says "a record whose usage is all zero is not a request"; the issue is newer and wins
for the spans. The message-id merging rule (per field, max) is unchanged, so a zero block of a
message that has usage elsewhere is still part of that one request."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agent_profiler.cli import app

DATA = Path(__file__).parent / "data" / "journals" / "claude-code"
GLM = DATA / "trackgentic-mpa014m2_v2.1.143_bg-tasks-result.jsonl"
SMALL = DATA / "handmade" / "small.jsonl"
runner = CliRunner()


def zero_usage_messages(path: Path) -> set[str]:
    """Message ids whose every usage block is all zero, read from the raw journal."""
    seen: dict[str, bool] = {}
    for line in path.read_text().splitlines():
        try:
            frame = json.loads(line)
        except ValueError:
            continue
        message = frame.get("message") if isinstance(frame, dict) else None
        if frame.get("type") != "assistant" or not isinstance(message, dict):
            continue
        usage = message.get("usage") or {}
        keys = ("input_tokens", "output_tokens", "cache_creation_input_tokens")
        zero = not any(usage.get(k) for k in (*keys, "cache_read_input_tokens"))
        seen[message["id"]] = seen.get(message["id"], True) and zero
    return {mid for mid, zero in seen.items() if zero}


def test_zero_usage_responses_are_spans_with_usage_unknown(export_trace) -> None:  # type: ignore[no-untyped-def]
    # GIVEN real stream-json from a backend that reports 0 in every usage field
    expected = zero_usage_messages(GLM)
    assert len(expected) >= 5
    # WHEN exported
    view = export_trace(GLM, require_addition=False).view
    # THEN one response span per message, each saying its usage is unknown
    spans = view.slices_of_kind("assistant-message")
    assert {s.args["response_id"] for s in spans} == expected
    assert all(s.args["usage_known"] is False for s in spans)
    assert all("context_tokens" not in s.args for s in spans)
    # ... and no Context size pretends a 0-token request (only the opening and closing 0)
    (capture,) = view.captures()
    sizes = view.counter_samples(capture.uuid, "Context size")
    assert all(value == 0 for _, value in sizes) and len(sizes) <= 2


def test_summary_keeps_calls_and_says_how_many_had_no_usage() -> None:
    result = runner.invoke(app, ["summary", str(GLM), "--json"])
    (row,) = json.loads(result.stdout)
    assert row["calls"] == 0  # as peers count: an all-zero usage is no call
    exported = runner.invoke(app, ["export", str(GLM), "-o", "-", "--format", "json"])
    assert "0 response(s) (+10 without usage)" in exported.stderr
    assert row["responses_without_usage"] == len(zero_usage_messages(GLM))
    table = runner.invoke(app, ["summary", str(GLM)])
    assert "response(s) without usage" in table.stdout


def test_a_zero_block_among_real_ones_keeps_the_merge_rule(export_trace) -> None:  # type: ignore[no-untyped-def]
    # GIVEN the hand-made journal: msg_A's last block has sparse usage (merged by max),
    # msg_zero is a message of its own with all-zero usage
    view = export_trace(SMALL).view
    spans = {s.args["response_id"]: s for s in view.slices_of_kind("assistant-message")}
    # THEN msg_A keeps its merged size and msg_zero is a span with usage unknown
    assert spans["msg_A"].args["context_tokens"] == 3 + 5000 + 10000
    assert spans["msg_zero"].args["usage_known"] is False
    row = json.loads(runner.invoke(app, ["summary", str(SMALL), "--json"]).stdout)[0]
    assert (row["calls"], row["responses_without_usage"]) == (6, 1)
