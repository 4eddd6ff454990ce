"""The dataset's rows of one session (dataset/rows.py), read without DuckDB: what each
table's row says of the model, on every journal of tests/data/journals (all six harnesses,
the large Claude Code, Codex and Pi sessions whose snapshots leave changes out) and on
hand-made sessions. `fleet`'s figures are sums and shares of these rows, so a request's
duration, a session's final prompt or an item's residence that is off here is off there."""

from __future__ import annotations

from collections import Counter
from functools import cache
from typing import Any

import pytest

from agent_profiler.dataset import SCHEMA, TABLES
from agent_profiler.dataset.rows import mcp_server, month_of, session_rows
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.model import AnchorKind, Session, SourceKind
from samples import DATA

Rows = dict[str, list[dict[str, Any]]]


@cache
def _sessions() -> tuple[tuple[Session, Rows], ...]:
    result = load([DATA], Diagnostics())
    assert result.failures == []
    return tuple((s, session_rows(s, "group-1")) for s in result.sessions)


@pytest.fixture(scope="module")
def sessions() -> tuple[tuple[Session, Rows], ...]:
    found = _sessions()
    assert len(found) > 30 and {s.harness.value for s, _ in found} >= {
        "claude-code", "codex", "gemini-cli", "muse", "opencode", "pi",
    }  # fmt: skip
    return found


def test_every_row_has_its_tables_columns_and_the_sessions_key(
    sessions: tuple[tuple[Session, Rows], ...],
) -> None:
    for session, rows in sessions:
        assert tuple(rows) == TABLES
        for table, table_rows in rows.items():
            for row in table_rows:
                assert set(row) == {name for name, _ in SCHEMA[table]}, (table, row)
                assert (row["group_id"], row["session_id"]) == ("group-1", session.session_id)
                assert row["harness"] == session.harness.value


def test_each_request_row_is_its_response_in_start_order(
    sessions: tuple[tuple[Session, Rows], ...],
) -> None:
    checked = 0
    for session, rows in sessions:
        ordered = sorted(session.responses, key=lambda r: (r.start_ns, r.end_ns, r.id))
        requests = rows["requests"]
        assert [r["response_id"] for r in requests] == [r.id for r in ordered]
        assert [r["turn"] for r in requests] == list(range(1, len(ordered) + 1))
        for row, response in zip(requests, ordered, strict=True):
            assert row["start_ns"] == response.start_ns
            assert row["duration_ns"] == max(0, response.end_ns - response.start_ns)
            assert row["prompt_tokens"] == response.usage.prompt_tokens
            # the prompt split into what was read, written and new, nothing counted twice
            parts = ("input", "cache_read", "cache_write_5m", "cache_write_1h")
            assert sum(row[f"{p}_tokens"] for p in parts) == row["prompt_tokens"]
            assert row["cache_read_tokens"] == min(
                response.usage.cache_read_tokens, response.usage.prompt_tokens
            )
            checked += 1
    assert checked > 1000
    durations = [r["duration_ns"] for _, rows in sessions for r in rows["requests"]]
    assert 0 < sum(durations) < 10**9 * 3600 * 24 * 30  # what the requests took, not two clocks


def test_a_sessions_row_sums_its_requests(sessions: tuple[tuple[Session, Rows], ...]) -> None:
    measured = 0
    for session, rows in sessions:
        (row,) = rows["sessions"]
        requests = rows["requests"]
        assert row["requests"] == len(requests)
        assert row["start_ns"] <= row["end_ns"]
        assert all(row["start_ns"] <= r["start_ns"] for r in requests)
        assert row["project"] == session.project
        assert row["prompts"] == sum(1 for p in session.prompts if p.source == "user")
        assert row["tool_calls"] == len(rows["tool_calls"])
        assert row["compactions"] == len(rows["compactions"]) == len(session.compactions)
        prompts = [r["prompt_tokens"] for r in requests]
        assert (
            row["first_prompt_tokens"],
            row["peak_prompt_tokens"],
            row["final_prompt_tokens"],
        ) == ((prompts[0], max(prompts), prompts[-1]) if prompts else (None, None, None))
        for part in ("input", "cache_read", "cache_write_5m", "cache_write_1h", "output"):
            assert row[f"{part}_tokens"] == sum(r[f"{part}_tokens"] for r in requests), part
        expected_window = session.window_tokens if session.window_from_journal else None
        assert row["window_tokens"] == expected_window
        # the context at the end: the last request's estimate, and its results' share
        assert row["end_estimated_tokens"] == (
            requests[-1]["estimated_tokens"] if requests else None
        )
        last = [c for c in rows["request_categories"] if c["is_last"]]
        assert {c["turn"] for c in last} <= {len(requests)}
        total = sum(c["tokens"] for c in last)
        if total:
            results = sum(c["tokens"] for c in last if c["category"] == "results")
            assert row["end_results_share"] == pytest.approx(results / total, abs=1e-6)
            measured += results > 0
        elif not any(s.anchor is AnchorKind.RESPONSE and s.categories for s in session.snapshots):
            assert row["end_results_share"] is None
    assert measured > 15


def test_a_context_items_residence_is_its_first_to_its_last_request(
    sessions: tuple[tuple[Session, Rows], ...],
) -> None:
    kinds: Counter[str | None] = Counter()
    for session, rows in sessions:
        calls = {c.call_id: c for c in session.tool_calls}
        turns = len(rows["requests"])
        for item in rows["context_items"]:
            kinds[item["source_kind"]] += 1
            assert 1 <= item["first_turn"] <= item["last_turn"]
            assert item["requests_resident"] == item["last_turn"] - item["first_turn"] + 1
            assert item["last_turn"] <= max(turns, 1)
            if item["baseline"]:  # there before the first request
                assert item["first_turn"] == 1
            if item["source_kind"] == SourceKind.TOOL.value and item["call_id"] in calls:
                assert item["tool"] == calls[item["call_id"]].name
        # the journal's first request already held the session's baseline and its prompt
        firsts = [i for i in rows["context_items"] if i["first_turn"] == 1]
        assert bool(firsts) == bool(rows["context_items"])
    # each item says what made it: a tool, a response, a prompt, or nothing (a baseline)
    assert set(kinds) == {"tool", "response", "prompt", None}
    assert min(kinds.values()) > 10


def test_an_item_open_when_a_snapshot_left_changes_out_may_have_ended_unseen(
    sessions: tuple[tuple[Session, Rows], ...],
) -> None:
    unknown = 0
    for session, rows in sessions:
        items = rows["context_items"]
        assert all(isinstance(i["end_known"], bool) for i in items)
        if not any(s.omitted_changes for s in session.snapshots):
            assert all(i["end_known"] for i in items)
            continue
        assert all(i["end_known"] for i in items if i["removed"])  # seen leaving
        unknown += sum(not i["end_known"] for i in items)
    assert unknown > 100  # Claude Code, Codex and Pi sessions of 150 requests and more


def test_a_tool_calls_result_tokens_are_its_results_items(
    sessions: tuple[tuple[Session, Rows], ...],
) -> None:
    checked = 0
    for _, rows in sessions:
        tokens: Counter[str] = Counter()
        for item in rows["context_items"]:
            # What the tool returned: not the call's arguments (Assistant history)
            returned = item["category"] != "assistant"
            if item["source_kind"] == "tool" and item["call_id"] and returned:
                tokens[item["call_id"]] += item["tokens"]
        for call in rows["tool_calls"]:
            if call["result_tokens"] is None:
                assert call["call_id"] not in tokens
                continue
            assert 0 < call["result_tokens"] <= tokens[call["call_id"]]
            checked += call["result_tokens"] == tokens[call["call_id"]]
    assert checked > 500


def test_a_tool_calls_and_compactions_rows(sessions: tuple[tuple[Session, Rows], ...]) -> None:
    seen: Counter[str] = Counter()
    for session, rows in sessions:
        by_model = {c.call_id: c for c in session.tool_calls if c.by_model}
        assert {r["call_id"] for r in rows["tool_calls"]} == set(by_model)
        for row in rows["tool_calls"]:
            call = by_model[row["call_id"]]
            assert (row["tool"], row["arg_bytes"], row["result_chars"]) == (
                call.name,
                call.arg_bytes,
                call.result_chars,
            )
            assert row["duration_ns"] == max(0, call.end_ns - call.start_ns)
        compactions = sorted(session.compactions, key=lambda c: (c.start_ns, c.id))
        for row, compaction in zip(rows["compactions"], compactions, strict=True):
            assert (row["compaction_id"], row["kind"], row["trigger"]) == (
                compaction.id,
                compaction.kind,
                compaction.trigger,
            )
            ends = [r["start_ns"] + r["duration_ns"] for r in rows["requests"]]
            assert row["after_turn"] == sum(1 for end in ends if end <= compaction.start_ns)
            seen[compaction.kind] += 1
            seen[compaction.trigger or ""] += 1
    assert len(seen) >= 3


def test_month_of_is_the_utc_year_and_month() -> None:
    assert month_of(0) == "1970-01"
    assert month_of(-5) == "1970-01"  # a clock before 1970 is kept in the first month
    # 2026-01-31T23:59:30Z, and half a minute later the next month
    assert month_of(1_769_903_970 * 10**9) == "2026-01"
    assert month_of(1_769_904_030 * 10**9) == "2026-02"


def test_mcp_server_is_the_name_between_the_prefix_and_the_tool() -> None:
    assert mcp_server("mcp__docs__search") == "docs"
    assert mcp_server("mcp__github") == "github"
    assert mcp_server("mcp____search") is None  # no server's name
    assert mcp_server("MCP__docs__search") is None  # the prefix is lower case
    assert mcp_server("Read") is None
