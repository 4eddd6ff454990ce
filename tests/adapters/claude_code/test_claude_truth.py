"""What a Claude Code transcript says about a request's price and its window, read as the
newest versions write it: fast mode (`usage.speed`), an output count that is final when a
record carries the stop reason, and the window Claude Code gives a model no `/context` run
names. Hand-made edits of a real 2.1.14 journal, and the corpus's 2.1.179 session."""

from __future__ import annotations

import copy
import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.adapters.claude_context import DEFAULT_WINDOW, assumed_window
from agent_profiler.cli import app
from rules_spy import record, sessions, write
from samples import CLAUDE_E4B
from shared_paths import CORPUS, SHARED_REASON, TESTS

E4B = CLAUDE_E4B
P179 = (
    CORPUS
    / "claude-code"
    / "transcripts"
    / "planetfall-39648afe5b-4_v2.1.179_queued-commands.jsonl"
)
FIRST = "msg_01Xoo2GzARUu4weag5sCWRoF"  # lines 5-8 of E4B: one response, four records


def edited(tmp_path: Path, edit: Any) -> Path:
    """E4B's first eight lines, `edit` applied to the message of each record of FIRST."""
    lines = [copy.deepcopy(record(E4B, n)) for n in range(1, 9)]
    for line in lines[4:8]:
        edit(line["message"])
    return write(tmp_path, lines)


def _first_response(tmp_path: Path, edit: Any) -> Any:
    (session,) = sessions(edited(tmp_path, edit))
    return next(r for r in session.responses if r.id == FIRST), session


def test_fast_mode_is_the_requests_price_variant(tmp_path: Path) -> None:
    def fast(message: dict[str, Any]) -> None:
        message["usage"]["speed"] = "fast"

    def standard(message: dict[str, Any]) -> None:
        message["usage"]["speed"] = "standard"

    assert _first_response(tmp_path, fast)[0].price_context == "speed=fast"
    assert _first_response(tmp_path, standard)[0].price_context == ""
    assert _first_response(tmp_path, lambda m: None)[0].price_context == ""


def test_an_output_count_is_final_when_a_record_carries_the_stop_reason(tmp_path: Path) -> None:
    """2.1.14 wrote streaming snapshots (no stop_reason, 8 output tokens here); 2.1.16x and
    later write the final usage with the stop reason on every record of the response, and
    the receipt then need not call its output a lower bound."""
    streaming, _ = _first_response(tmp_path, lambda m: None)
    assert streaming.output_tokens_reliable is False

    def last_has_stop(message: dict[str, Any]) -> None:
        message["stop_reason"] = "end_turn"

    final, _ = _first_response(tmp_path, last_has_stop)
    assert final.output_tokens_reliable is True


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-opus-4-8", 1_000_000),  # /context: "claude-opus-4-8 … 62.5k / 1m" (2.1.207)
        ("claude-opus-5", 1_000_000),  # "claude-opus-5 … 22k / 1m" (2.1.222-2.1.232)
        ("claude-opus-4-6", DEFAULT_WINDOW),  # "85k/200k" (2.1.34)
        ("claude-sonnet-4-6", DEFAULT_WINDOW),  # "50.3k/200k" (2.1.123), 1m only with [1m]
        ("claude-opus-4-5-20251101", DEFAULT_WINDOW),
    ],
)
def test_the_assumed_window_is_claude_codes_for_the_model(
    tmp_path: Path, model: str, window: int
) -> None:
    def named(message: dict[str, Any]) -> None:
        message["model"] = model

    _, session = _first_response(tmp_path, named)
    assert session.window_tokens == window
    assert session.window_source == assumed_window(model)[1]
    assert session.window_source.startswith("assumed")
    request = next(s for s in session.snapshots if s.anchor_id == FIRST)
    assert request.window_tokens == window


@pytest.mark.skipif(not P179.exists(), reason=SHARED_REASON)
def test_the_fast_mode_session_costs_what_its_fast_rates_say() -> None:
    """Every request of the 2.1.179 session says `"speed": "fast"`: claude-opus-4-8 at
    $10 / $1 / $20 / $50 per million (input, cache read, 1-hour write, output) in
    genai-prices 0.2.3, not $5 / $0.5 / $10 / $25. Its counts are final (a stop reason on
    each record), and its window is Claude Code's 1M for the model."""
    result = CliRunner().invoke(app, ["summary", "--json", "--cost", str(P179)])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    billed = row["cost"]["billed"]
    tokens = {c: billed[c]["tokens"] for c in ("input", "cache_read", "cache_write_1h", "output")}
    assert tokens == {
        "input": 5_879,
        "cache_read": 3_846_087,
        "cache_write_1h": 99_604,
        "output": 45_373,
    }
    rates = {"input": 10, "cache_read": 1, "cache_write_1h": 20, "output": 50}
    expected = sum(tokens[c] * rates[c] for c in rates) / 1_000_000
    assert billed["total_usd"] == pytest.approx(expected, abs=1e-6)  # $8.165607
    assert row["cost"]["models"] == {
        "claude-opus-4-8 (speed=fast)": "anthropic/claude-opus-4-8 (speed=fast)"
    }
    assert row["cost"]["output_lower_bound"] is False
    assert (row["window_tokens"], row["window_source"]) == (1_000_000, "assumed")


def test_server_side_web_searches_are_the_responses(tmp_path: Path) -> None:
    """`usage.server_tool_use.web_search_requests` (billed per search), merged over the
    response's records with max as its other counts are."""

    def searched(message: dict[str, Any]) -> None:
        searched.calls += 1  # type: ignore[attr-defined]
        count = 2 if searched.calls == 4 else 1  # type: ignore[attr-defined]
        message["usage"]["server_tool_use"] = {"web_search_requests": count}

    searched.calls = 0  # type: ignore[attr-defined]
    response, _ = _first_response(tmp_path, searched)
    assert response.web_searches == 2
    assert _first_response(tmp_path, lambda m: None)[0].web_searches == 0


SPOTTER = TESTS / "data" / "journals" / "claude-code" / "spotter-2.1.39-subagents-compaction"
SPOTTER_ID = "258c7280-ae70-4798-800f-63464d01a85d"


def _agent_usage(main: Path) -> dict[str, dict[str, Any]]:
    """agentId → the parent's toolUseResult.usage of it, read with plain json."""
    found = {}
    with gzip.open(main, "rt", encoding="utf-8") as journal:
        for line in journal:
            result = json.loads(line).get("toolUseResult")
            if isinstance(result, dict) and "agentId" in result and "usage" in result:
                found[result["agentId"]] = result["usage"]
    return found


def test_a_subagents_last_output_is_the_one_its_parent_was_told(tmp_path: Path) -> None:
    """2.1.39 wrote a subagent's output as a streaming count (3); the parent's tool result
    says the last request's final usage (997, FORMATS §1.4). Its last request takes it, when
    the input side agrees, and its output count is final then."""
    main = SPOTTER / f"{SPOTTER_ID}.jsonl.gz"
    usage = _agent_usage(main)["a881341"]
    by_id = {s.session_id: s for s in sessions(SPOTTER)}
    child = by_id[f"{SPOTTER_ID}/a881341"]
    last = max(child.responses, key=lambda r: r.end_ns)
    assert last.usage.output_tokens == usage["output_tokens"] == 997
    assert last.output_tokens_reliable is True
    assert last.usage.prompt_tokens == (
        usage["input_tokens"]
        + usage["cache_creation_input_tokens"]
        + usage["cache_read_input_tokens"]
    )
    # A usage whose input side is another request's is not merged.
    copied = tmp_path / "spotter"
    shutil.copytree(SPOTTER, copied)
    with gzip.open(copied / main.name, "rt", encoding="utf-8") as journal:
        lines = journal.read().splitlines()
    edited_lines = []
    for line in lines:
        value = json.loads(line)
        result = value.get("toolUseResult")
        if isinstance(result, dict) and result.get("agentId") == "a881341":
            result["usage"]["cache_read_input_tokens"] += 1
        edited_lines.append(json.dumps(value))
    with gzip.open(copied / main.name, "wt", encoding="utf-8") as out:
        out.write("\n".join(edited_lines) + "\n")
    other = {s.session_id: s for s in sessions(copied)}[f"{SPOTTER_ID}/a881341"]
    kept = max(other.responses, key=lambda r: r.end_ns)
    assert kept.usage.output_tokens < 997 and kept.output_tokens_reliable is False
