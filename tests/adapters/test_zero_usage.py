"""Requests with zeroed usage (issue 15, point 6): some backends (GLM behind Claude Code, in the
corpus' trackgentic stream-json) write 0 in every usage field. Those are still model requests:
the trace shows their response spans with `usage_known = false` and no Context size sample from
their zeros, and the summary keeps the peer-compatible `calls` (which skips them) while saying
how many responses had no usage.

SPEC §3 says "a record whose usage is all zero is not a request"; the issue is newer and wins
for the spans. The message-id merging rule (per field, max) is unchanged, so a zero block of a
message that has usage elsewhere is still part of that one request."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from typer.testing import CliRunner

from agent_profiler.cli import app
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "claude-code"
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
    assert "0 responses (+10 without usage)" in exported.stderr
    assert row["responses_without_usage"] == len(zero_usage_messages(GLM))
    table = runner.invoke(app, ["summary", str(GLM)])
    assert "10 responses without usage" in table.stdout


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


GEMINI = TESTS / "data" / "journals" / "gemini-cli"
OPENCODE = TESTS / "data" / "journals" / "opencode"
OPENCODE_CORPUS = Path(
    "/work/shared/corpus/opencode/dhc-dashboard-1.18.21-task-subagent/"
    "ses_fd4e13d58ffetoIsfha64XDWNj.export.json.gz"
)


def gemini_zero_usage(path: Path) -> set[str]:
    """`gemini` records whose `tokens` are there and all zero, read from the raw document."""
    return {
        m["id"]
        for m in json.loads(path.read_text())["messages"]
        if m.get("type") == "gemini" and m.get("tokens") and not any(m["tokens"].values())
    }


def opencode_zero_usage(export: dict) -> set[str]:  # type: ignore[type-arg]
    """Assistant messages of an export whose finished step reports 0 in every usage field."""
    found = set()
    for message in export["messages"]:
        for part in message["parts"]:
            tokens = part.get("tokens") or {}
            cache = tokens.get("cache") or {}
            fields = [tokens.get(k) for k in ("input", "output", "reasoning")]
            if part.get("type") == "step-finish" and not any(fields + list(cache.values())):
                found.add(message["info"]["id"])
    return found


def test_gemini_zero_usage_requests_are_spans_with_usage_unknown(export_trace, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a real Gemini CLI session with one `gemini` record whose tokens are all 0, given
    # text (as written it only holds the late calls of the record before it: no request,
    # tests/adapters/gemini_cli/test_gemini_late_calls.py)
    document = json.loads((GEMINI / "entire-ab-2b9748b105-0_session.json").read_text())
    for message in document["messages"]:
        if message["id"] in gemini_zero_usage(GEMINI / "entire-ab-2b9748b105-0_session.json"):
            message["content"] = "I will remove it."
    path = tmp_path / "entire-ab-2b9748b105-0_session.json"
    path.write_text(json.dumps(document))
    expected = gemini_zero_usage(path)
    assert len(expected) == 1
    # WHEN exported and summarised
    view = export_trace(path, require_addition=False).view
    spans = {s.args["response_id"]: s for s in view.slices_of_kind("assistant-message")}
    # THEN it is a response span with usage unknown and no context size, not a failure
    for response_id in expected:
        assert spans[response_id].args["usage_known"] is False
        assert "context_tokens" not in spans[response_id].args
    assert sum(s.args.get("usage_known") is False for s in spans.values()) == len(expected)
    (row,) = json.loads(runner.invoke(app, ["summary", str(path), "--json"]).stdout)
    assert row["responses_without_usage"] == len(expected)
    assert row["calls"] == len(spans) - len(expected)


def opencode_case(tmp: Path) -> tuple[Path, set[str]]:
    """The corpus export with zeroed steps, else a bundled one with a step zeroed the way
    such a provider writes it."""
    if OPENCODE_CORPUS.exists():
        export = json.loads(gzip.decompress(OPENCODE_CORPUS.read_bytes()))
        expected = opencode_zero_usage(export)
        assert expected
        return OPENCODE_CORPUS, expected
    export = json.loads((OPENCODE / "ses_fd4c895f0ffe6gKgxHiEgiQCcd.export.json").read_text())
    for message in export["messages"]:
        finish = [p for p in message["parts"] if p.get("type") == "step-finish"]
        if finish:
            finish[0]["tokens"] = {"input": 0, "output": 0, "reasoning": 0}
            finish[0]["tokens"]["cache"] = {"read": 0, "write": 0}
            break
    path = tmp / "ses_zero.export.json"
    path.write_text(json.dumps(export))
    return path, opencode_zero_usage(export)


def test_opencode_zero_usage_steps_are_spans_with_usage_unknown(
    tmp_path: Path, export_trace
) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a real OpenCode export with a finished step whose usage is all 0
    path, expected = opencode_case(tmp_path)
    # WHEN exported and summarised
    view = export_trace(path, require_addition=False).view
    unknown = {
        s.args["response_id"]
        for s in view.slices_of_kind("assistant-message")
        if s.args.get("usage_known") is False
    }
    # THEN those steps are response spans with usage unknown
    assert unknown == expected
    rows = json.loads(runner.invoke(app, ["summary", str(path), "--json"]).stdout)
    assert sum(row["responses_without_usage"] for row in rows) == len(expected)


def test_a_claude_models_window_is_assumed_where_the_journal_states_none() -> None:
    """Pi and OpenCode record no window, so a Claude Code session on claude-opus-4-5 had a
    fill and the Pi session on the same model, which compacted at 175k and 185k, had none:
    a Claude model's default is assumed and labelled so; any other model gets none."""
    from agent_profiler.adapters.common import assumed_model_window
    from agent_profiler.model import Response, Usage

    def served(*models: str) -> list[Response]:
        return [Response(f"r{i}", 0, 1, m, Usage(1)) for i, m in enumerate(models)]

    said = "assumed: {}'s default window (as Claude Code gives it), not in journal"
    for models, window, name in (
        (("claude-opus-4-5",), 200_000, "claude-opus-4-5"),
        (("anthropic/claude-opus-4.6",), 200_000, "anthropic/claude-opus-4.6"),
        (("claude-opus-4-8", "gpt-5.5", "claude-opus-4-8"), 1_000_000, "claude-opus-4-8"),
        (("us.anthropic.claude-opus-5-v1:0",), 1_000_000, "us.anthropic.claude-opus-5-v1:0"),
    ):
        assert assumed_model_window(served(*models)) == (window, said.format(name)), models
    for models in ((), ("gpt-5.5",), ("gpt-5.5", "claude-opus-4-5", "gpt-5.5"), ("",)):
        assert assumed_model_window(served(*models)) == (None, None), models
