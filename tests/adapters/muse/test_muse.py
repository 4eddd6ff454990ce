"""The Muse Code adapter on the three real files of the shared corpus (tests/data/journals/muse)
and on hand-made journals (tests/data/journals/muse/synthetic, each marked synthetic in its
first line). Expected numbers come from an independent json-module reading of each file.

The adapter is not registered in `agent_profiler.adapters.ADAPTERS` by this module: the tests
call its functions directly (detect, plan, read_group / read_files)."""

from __future__ import annotations

import json
from collections import Counter
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters import Adapter, JournalGroup, SniffedFile, claude_code, codex, muse
from agent_profiler.attribution import INFERRED_HEAD_ID
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import JournalError
from agent_profiler.jsonl import sniff
from agent_profiler.model import (
    AnchorKind,
    Basis,
    Category,
    ChangeKind,
    ContextSnapshot,
    Coverage,
    Harness,
    Session,
    SourceKind,
    Stage,
)
from agent_profiler.writers import PerfettoWriter
from contract import check_contract
from shared_paths import TESTS
from traceview import load_trace

DATA = TESTS / "data" / "journals" / "muse"
R142 = DATA / "hcn-1.4.2-R4684.1_meta_single-turn_retained-frame.session.jsonl"
ECHO = DATA / "codeburn-1.1.1-R2514.1_echo-provider_excerpt.session.jsonl"
EXPORT = DATA / "hcn-1.1.1_compaction-records.export-events.json"
DAY = DATA / "synthetic" / "sessions" / "2026" / "10" / "05"
MAIN_ID = "01a20000-0000-7000-8000-00000000a001"
GOAL_ID = "01a20000-0000-7000-8000-00000000c001"
NATIVE_ID = "01a20000-0000-7000-8000-00000000c003"
OLD_ID = "01a20000-0000-7000-8000-00000000b001"
MAIN = DAY / MAIN_ID / "session.jsonl"
OLD = DAY / OLD_ID / "session.jsonl"
REVIEW = DAY / MAIN_ID / "approval-review" / "01a20000-0000-7000-8000-00000000d001.jsonl"
CLAUDE_SMALL = DATA.parent / "claude-code" / "handmade" / "small.jsonl"
CODEX_SMALL = (
    DATA.parent / "codex" / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
)

# The test's own reading of which category each context block belongs to.
BLOCK_CATEGORY = {
    "rules_file": "rules",
    "memory_snapshot": "rules",
    "skills_catalog": "skills",
    "agent_definition_catalog": "skills",
    "workspace_identity": "environment",
    "security_mode": "environment",
    "session_identity": "environment",
    "sandbox_policy": "environment",
    "workflow_choice": "system",
    "workflow_cookbook": "system",
    "subagent_delegation": "system",
    "meta_context_note": "system",
    "future_block": "unattributed",
}
ADAPTER = Adapter(Harness.MUSE, muse.detect, muse.plan, muse.read_group, muse.locate)


# -- an independent reading -------------------------------------------------------------------


def lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().split("\n") if line.strip()]


def envelopes(path: Path) -> list[dict[str, Any]]:
    """Envelopes of the file's own stream, frame children included, in file order."""
    found: list[dict[str, Any]] = []
    for value in lines(path):
        if isinstance(value, dict) and "retained_frame" in value:
            found += [json.loads(child["record_json"]) for child in value["children"]]
        elif isinstance(value, dict) and "payload_type" in value:
            found.append(value)
    own = found[0]["stream"]["id"]
    return [e for e in found if e["stream"]["id"] == own]


def run_events(path: Path, kind: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [
        (e, e["payload"]["event"])
        for e in envelopes(path)
        if e["payload_type"] == "runtime.session"
        and e["payload"].get("kind") == "run"
        and e["payload"]["event"].get("kind") == kind
    ]


def ceil4(count: int) -> int:
    return -(-count // 4)


def expected_lane_bytes(trace: dict[str, Any], blocks: dict[str, int]) -> Counter[str]:
    """Bytes per category: each lane where FORMATS-muse §5.5 puts it, the context lane split
    by block with the join glue as overhead."""
    out: Counter[str] = Counter()
    for aggregate in trace["bounded"]["aggregates"]:
        lane = aggregate["logical_lane"]["value"]
        source = aggregate["source"]["value"]
        destination = aggregate["provider_wire_destination"]["value"]
        size = aggregate["byte_count"]
        if lane == "context":
            for block, block_bytes in blocks.items():
                out[BLOCK_CATEGORY[block]] += block_bytes
            out["overhead"] += size - sum(blocks.values())
        elif lane == "system_base":
            out["system"] += size
        elif lane == "tool_specs":
            out["tools"] += size
        elif lane == "provider_options":
            out["overhead"] += size
        elif lane == "tool_result":
            out["results"] += size
        elif source == "compaction_summary":
            out["summaries"] += size
        elif destination == "message.role:user":
            out["prompts"] += size
        else:
            out["assistant"] += size
    return out


def block_bytes(path: Path) -> dict[str, int]:
    return {
        event["block_id"]: event["text_bytes"]
        for _, event in run_events(path, "context_block_diagnostic")
    }


def read(*paths: Path) -> tuple[list[Session], Diagnostics]:
    diagnostics = Diagnostics()
    return muse.read_files(list(paths), diagnostics), diagnostics


def by_id(sessions: list[Session]) -> dict[str, Session]:
    return {s.session_id: s for s in sessions}


def response_snapshots(session: Session) -> list[ContextSnapshot]:
    return [s for s in session.snapshots if s.anchor is AnchorKind.RESPONSE]


def contract_problems(sessions: list[Session], *, require_addition: bool) -> list[str]:
    buffer = BytesIO()
    PerfettoWriter().write(sessions, buffer)
    return check_contract(
        load_trace(buffer.getvalue()),
        require_addition=require_addition,
        strict=True,
        forward_arrows=True,
    )


# -- detection and planning -------------------------------------------------------------------


@pytest.mark.parametrize("path", [R142, ECHO, MAIN, OLD], ids=lambda p: p.name[:30])
def test_muse_journals_are_detected_and_no_other_adapter_claims_them(path: Path) -> None:
    head = sniff(path)
    assert muse.detect(head)
    assert not claude_code.detect(head) and not codex.detect(head)


def test_other_harnesses_are_not_taken_for_muse(tmp_path: Path) -> None:
    assert not muse.detect(sniff(CLAUDE_SMALL))
    assert not muse.detect(sniff(CODEX_SMALL))
    pi = tmp_path / "pi.jsonl"
    pi.write_text(
        json.dumps({"type": "session", "id": "p1", "timestamp": "2026-01-01T00:00:00Z"})
        + "\n"
        + json.dumps({"type": "message", "message": {"role": "user", "content": "hi"}})
        + "\n"
    )
    assert not muse.detect(sniff(pi))


def test_plan_groups_a_session_with_its_subagent_logs() -> None:
    tree = sorted((DAY / MAIN_ID).rglob("*.jsonl"))
    assert len(tree) == 4  # main, two subagents, one approval-review log
    (group,) = ADAPTER.plan([SniffedFile(p, sniff(p)) for p in [*tree, OLD]][:4])
    assert group.main == MAIN and group.harness is Harness.MUSE
    assert REVIEW in group.extras and len(group.extras) == 3
    # given alone, the main journal still finds its subagent logs on disk
    (alone,) = muse.plan([SniffedFile(MAIN, sniff(MAIN))])
    assert {p.parent.name for p in alone.extras} == {GOAL_ID, NATIVE_ID}
    # two unrelated journals are two groups
    assert len(muse.plan([SniffedFile(p, sniff(p)) for p in (MAIN, OLD)])) == 2


def test_an_approval_review_log_is_never_read_as_a_timeline() -> None:
    tree = sorted((DAY / MAIN_ID).rglob("*.jsonl"))
    sessions, diagnostics = read(*tree)
    assert "01a20000-0000-7000-8000-00000000d001" not in by_id(sessions)
    assert diagnostics.skipped["muse:approval-review-log"] == 1
    (group,) = muse.plan([SniffedFile(REVIEW, sniff(REVIEW))])
    with pytest.raises(JournalError, match="approval-review"):
        ADAPTER.read(group, Diagnostics())


# -- the real 1.4.2 single-turn session -------------------------------------------------------


def test_the_142_single_turn_session_has_native_lanes() -> None:
    (session,), diagnostics = read(R142)
    ((completed_env, completed),) = run_events(R142, "model_completed")
    ((_, trace),) = run_events(R142, "model_input_trace_recorded")
    assert session.harness is Harness.MUSE
    assert session.session_id == completed_env["stream"]["id"]
    assert (session.provider, session.harness_version) == ("meta", "1.4.2")
    assert session.model == "muse-spark-1.3-contributor"
    # one request per model_completed: goal_usage_attribution repeats it and is never added
    (response,) = session.responses
    assert response.usage.prompt_tokens == completed["usage"]["input_tokens"] == 31_979
    assert response.usage.output_tokens == 49 and response.usage.reasoning_tokens == 38
    assert response.end_ns == completed_env["recorded_at"] * 1_000
    assert response.start_ns == (completed_env["recorded_at"] - 4_838_000) * 1_000
    # the lanes: bytes per category from the trace and the blocks' text_bytes
    lane_total = sum(a["byte_count"] for a in trace["bounded"]["aggregates"])
    assert lane_total == trace["bounded"]["total_lane_bytes"] == 96_092
    expected = expected_lane_bytes(trace, block_bytes(R142))
    assert sum(expected.values()) == 96_092
    assert expected["tools"] == 0  # tool_specs says 0 bytes although tools are sent
    (snapshot,) = response_snapshots(session)
    assert snapshot.stage is Stage.REQUEST_INPUT and snapshot.basis is Basis.NATIVE_BYTES
    assert snapshot.item_stage == "transcript-observed" and snapshot.coverage is Coverage.PARTIAL
    assert snapshot.reported_tokens == 31_979 and snapshot.baseline
    categories = {c.value: t for c, t in snapshot.categories}
    lane_tokens = {c: ceil4(b) for c, b in expected.items() if b}
    not_in_lanes = 31_979 - sum(lane_tokens.values())
    assert not_in_lanes == 7_954  # the tool schemas and overhead the lanes leave out
    assert categories == {**lane_tokens, "unattributed": not_in_lanes}
    assert snapshot.estimated_tokens == 31_979  # reported, split by lane, nothing scaled
    residual = next(c for c in snapshot.changes if c.id == muse.NOT_IN_LANES_ID)
    assert residual.tokens == not_in_lanes and "tool schemas" in residual.label
    assert residual.category is Category.UNATTRIBUTED
    assert all(c.id != INFERRED_HEAD_ID for c in snapshot.changes)
    # the retained frame's children are read: the session starts at their time
    child = json.loads(lines(R142)[0]["children"][0]["record_json"])
    assert session.start_ns == child["recorded_at"] * 1_000
    assert dict(session.unmeasured) == {"encrypted-reasoning": 1, "tool-schemas": 31}
    reminders = {t.name: t for t in session.tool_calls}
    assert set(reminders) == {
        "memory-reminder",
        "skill-reminder",
        "goal-reminder",
        "verify-reminder",
    }
    assert all(t.child_session for t in reminders.values())
    assert session.window_tokens == 1_007_997 and session.window_source == muse.WINDOW_SOURCE
    assert diagnostics.warning_total == 0
    assert diagnostics.skipped["muse:run/goal_usage_attribution"] == 1


# -- the real 1.1.1 echo excerpt --------------------------------------------------------------


def test_the_echo_excerpt_with_zero_tokens_invents_no_prompt_size() -> None:
    (session,), diagnostics = read(ECHO)
    ((_, completed),) = run_events(ECHO, "model_completed")
    assert all(v == 0 for v in completed["usage"].values())
    assert session.responses == ()  # a call that reported nothing is not a request
    assert all(s.reported_tokens is None for s in session.snapshots)
    (snapshot,) = session.snapshots
    assert snapshot.anchor is AnchorKind.SESSION and snapshot.stage is Stage.TRANSCRIPT_OBSERVED
    assert all(c.id != INFERRED_HEAD_ID for c in snapshot.changes)
    ((_, started),) = run_events(ECHO, "started")
    (prompt,) = session.prompts
    assert prompt.chars == len(started["prompt"]) == 30
    assert dict(session.facts)["zero_usage_model_completed"].startswith("1 ")
    assert session.provider == "echo" and session.harness_version == "1.1.1"
    assert session.models == () and session.window_tokens is None
    assert diagnostics.skipped["muse:non-envelope-line"] == 1  # the publisher's _provenance
    assert diagnostics.warning_total == 0


# -- the export file --------------------------------------------------------------------------


def test_the_compaction_export_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="muse export"):
        read(EXPORT)
    with pytest.raises(JournalError, match="muse export"):
        muse.read_journal(EXPORT, Diagnostics())
    # the same events on one line still parse as JSONL, and are refused all the same
    one_line = tmp_path / "events.jsonl"
    one_line.write_text(json.dumps(json.loads(EXPORT.read_text())) + "\n")
    assert muse.detect(sniff(one_line))
    with pytest.raises(JournalError, match="muse export") as caught:
        read(one_line)
    assert caught.value.line == 1


@pytest.mark.slow  # corpus-wide
def test_corpus_traces_meet_the_contract() -> None:
    sessions, _ = read(R142, ECHO)
    assert contract_problems(sessions, require_addition=False) == []


# -- hand-made multi-step journals ------------------------------------------------------------


def test_synthetic_multi_step_requests_and_lanes() -> None:
    sessions, diagnostics = read(MAIN)
    main = by_id(sessions)[MAIN_ID]
    completed = run_events(MAIN, "model_completed")
    traces = run_events(MAIN, "model_input_trace_recorded")
    assert len(completed) == len(traces) == 5
    # the mirrored stream's model_completed (77,777 tokens) is not this session's
    assert [r.usage.prompt_tokens for r in main.responses] == [
        e["usage"]["input_tokens"] for _, e in completed
    ]
    assert diagnostics.skipped["muse:other-stream"] == 1
    blocks = block_bytes(MAIN)
    snapshots = response_snapshots(main)
    assert len(snapshots) == 5
    for snapshot, (_, trace), (_, done) in zip(snapshots, traces, completed, strict=True):
        expected = expected_lane_bytes(trace, blocks)
        lane_tokens = {c: ceil4(b) for c, b in expected.items() if b}
        reported = done["usage"]["input_tokens"]
        lane_tokens["unattributed"] = (
            lane_tokens.get("unattributed", 0) + reported - sum(lane_tokens.values())
        )
        assert {c.value: t for c, t in snapshot.categories} == lane_tokens
        assert snapshot.basis is Basis.NATIVE_BYTES and snapshot.reported_tokens == reported
    # later requests: the tool results come in as added items linked to their call
    second = snapshots[1]
    assert not second.baseline
    ((_, batch),) = [
        (e, ev)
        for e, ev in run_events(MAIN, "tool_result_batch_committed")
        if ev["batch_id"] == "msg-s0-calls"
    ]
    text = batch["results"][0]["text"]
    added = next(c for c in second.changes if c.id == "result:call_bash_1")
    assert added.change is ChangeKind.ADDED and added.source_id == "call_bash_1"
    assert added.source_kind is SourceKind.TOOL and added.delta_tokens == ceil4(len(text))
    residual = next(c for c in second.changes if c.id == muse.NOT_IN_LANES_ID)
    assert residual.change is ChangeKind.REPLACED
    # outputs of a request are not part of that request's input
    first_ids = {c.id for c in snapshots[0].changes}
    assert "msg-s0" not in first_ids and "call:call_bash_1" not in first_ids
    assert "msg-s0" in {c.id for c in second.changes}


def test_synthetic_tool_calls_results_and_markers() -> None:
    sessions, diagnostics = read(MAIN)
    main = by_id(sessions)[MAIN_ID]
    tools = {t.call_id: t for t in main.tool_calls}
    calls = [
        c for _, e in run_events(MAIN, "assistant_tool_calls_committed") for c in e["tool_calls"]
    ]
    results = {
        r["tool_call_id"]: r["text"]
        for _, e in run_events(MAIN, "tool_result_batch_committed")
        for r in e["results"]
    }
    for call in calls:
        tool = tools[call["call_id"]]
        assert tool.name == call["name"] and tool.result_chars == len(results[call["call_id"]])
        assert tool.arg_keys == tuple(json.loads(call["args"]))
        assert not tool.incomplete
    bash = tools["call_bash_1"]
    assert bash.is_error  # bash's JSON result says exit_code 1
    assert bash.end_ns - bash.start_ns == 2_500_000_000  # tool_batch.effect started → terminal
    assert bash.response_id == main.responses[0].id
    assert tools["call_spawn_1"].child_session == NATIVE_ID
    assert diagnostics.skipped["muse:retained_marker"] == 2
    assert dict(main.facts)["omitted_live_only"].startswith("2 ")
    assert dict(main.facts)["goal_usage_attribution"].startswith("5 ")
    assert dict(main.facts)["approval_review_tokens"].startswith("1500 in")


def test_synthetic_compaction() -> None:
    sessions, _ = read(MAIN)
    main = by_id(sessions)[MAIN_ID]
    ((installed_env, installed),) = run_events(MAIN, "context_compaction_installed")
    (compaction,) = main.compactions
    assert compaction.end_ns == installed_env["recorded_at"] * 1_000
    assert compaction.trigger == "soft_threshold_async"
    # the summarizer's call is its own request span, not one of the session's responses
    request = compaction.request
    assert request is not None and request.id not in {r.id for r in main.responses}
    usage = installed["summarizer_usage"]
    assert (request.usage.input_tokens, request.usage.output_tokens) == (
        usage["input_tokens"],
        usage["output_tokens"],
    )
    assert request.end_ns - request.start_ns == usage["duration_ms"] * 1_000_000
    # pre/post are reported request sizes; Muse's budgets are labelled estimates
    assert (compaction.pre_tokens, compaction.post_tokens) == (10_300, 9_200)
    estimate = dict(main.facts)["compaction-1_estimated_prompt_tokens"]
    assert "30359 → 22869" in estimate and "estimate" in estimate and "not provider" in estimate
    post = next(s for s in main.snapshots if s.anchor is AnchorKind.COMPACTION)
    assert post.stage is Stage.POST_COMPACTION and post.anchor_id == compaction.id
    summary = next(c for c in post.changes if c.category is Category.SUMMARIES)
    assert summary.tokens == ceil4(len(installed["replacement"]["text"]))
    removed = [c for c in post.changes if c.change is ChangeKind.REMOVED]
    assert {c.id for c in removed} >= {"result:call_bash_1", "msg-s0", "call:call_read_1"}
    # everything of the history before it: run 1's prompt, messages, calls and results
    before = installed_env["sequence"]
    history = [
        e
        for kind in ("started", "assistant_message_committed", "tool_result_batch_committed")
        for e, _ in run_events(MAIN, kind)
        if e["sequence"] < before and e["payload"]["run_id"].endswith("0001")
    ]
    calls = [
        c
        for e, ev in run_events(MAIN, "assistant_tool_calls_committed")
        for c in ev["tool_calls"]
        if e["sequence"] < before
    ]
    assert compaction.removed_items == len(history) + len(calls) == 9
    categories = dict(post.categories)
    assert Category.RESULTS not in categories and Category.SYSTEM in categories
    assert Category.PROMPTS in categories  # the turn being compacted for keeps its prompt


def test_synthetic_children_are_linked_to_their_parent() -> None:
    sessions, _ = read(MAIN)
    found = by_id(sessions)
    assert set(found) == {MAIN_ID, GOAL_ID, NATIVE_ID}
    ((_, linked),) = [
        x
        for x in run_events(MAIN, "memory_reminder_child_session_linked")
        if x[1]["child_session_id"] == GOAL_ID
    ]
    goal = found[GOAL_ID]
    assert goal.parent_session == MAIN_ID and goal.parent_call_id == linked["task_id"]
    assert goal.child_role == "goal-reminder" and goal.prompts[0].source == "agent"
    reminder = next(t for t in found[MAIN_ID].tool_calls if t.call_id == linked["task_id"])
    assert reminder.child_session == GOAL_ID
    native = found[NATIVE_ID]
    assert native.parent_session == MAIN_ID and native.parent_call_id == "call_spawn_1"
    # a child read without its parent still knows its parent from the folder it lives in
    (alone,), _ = read(DAY / MAIN_ID / "subagent" / GOAL_ID / "session.jsonl")
    assert alone.parent_session == MAIN_ID and alone.parent_call_id is None


def test_older_journals_fall_back_to_transcript_items() -> None:
    (session,), diagnostics = read(OLD)
    assert [r.usage.prompt_tokens for r in session.responses] == [6_000, 6_300]
    assert session.model == "muse-spark-1.1"  # from run.model.configured
    assert session.responses[1].usage.cache_read_tokens == 5_900  # cached_tokens, no cache_*
    first, second = response_snapshots(session)
    for snapshot in (first, second):
        assert snapshot.basis is Basis.CHARS and snapshot.stage is Stage.TRANSCRIPT_OBSERVED
        assert snapshot.item_stage is not None
        assert "no model_input_trace_recorded" in snapshot.item_stage
    head = next(c for c in first.changes if c.id == INFERRED_HEAD_ID)
    assert first.estimated_tokens == 6_000 and head.category is Category.UNATTRIBUTED
    assert "call:call_ls_1" in {c.id for c in second.changes}
    assert diagnostics.warning_total == 0


def test_synthetic_traces_meet_the_contract() -> None:
    sessions, _ = read(MAIN, OLD)
    assert len(sessions) == 4
    assert contract_problems(sessions, require_addition=True) == []


# -- shapes that differ: warnings, not crashes ------------------------------------------------


def _envelope(sequence: int, payload_type: str, payload: Any, **extra: Any) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "id": f"id-{sequence}",
        "stream": {"kind": "session", "id": "odd-1"},
        "sequence": sequence,
        "recorded_at": 1_791_000_000_000_000 + sequence * 1_000_000,
        "payload_type": payload_type,
        "payload": payload,
        **extra,
    }


def _run(sequence: int, event: dict[str, Any]) -> dict[str, Any]:
    return _envelope(sequence, "runtime.session", {"kind": "run", "run_id": "r1", "event": event})


def test_unexpected_shapes_cost_warnings_not_crashes(tmp_path: Path) -> None:
    lanes = [
        {
            "logical_lane": {"value": "context"},
            "source": {"value": "run_context"},
            "provider_wire_destination": {"value": "message.role:developer"},
            "byte_count": 100,
        },
        {"logical_lane": {"value": "future_lane"}, "byte_count": 40},
    ]
    records: list[Any] = [
        {"_synthetic": "SYNTHETIC: hand-made odd shapes for test_muse.py"},
        {"retained_frame": "x", "children": [{"child_index": 0, "record_json": "{not json"}]},
        _run(1, {"kind": "started", "prompt": ["not", "text"]}),
        _run(2, {"kind": "context_block_diagnostic", "block_id": "rules_file", "text_bytes": 500}),
        _envelope(3, "runtime.session", "not a payload"),
        _run(4, {"kind": "model_input_trace_recorded", "schema_version": 1, "scope": "bounded"}),
        _run(
            5, {"kind": "model_input_trace_recorded", "schema_version": 2, "scope": "full_request"}
        ),
        _run(
            6,
            {
                "kind": "model_input_trace_recorded",
                "schema_version": 2,
                "scope": "full_request",
                "model_step": 3,
                "bounded": {"aggregates": lanes, "total_lane_bytes": 140},
            },
        ),
        {**_run(7, {"kind": "a_future_event"}), "recorded_at": "yesterday"},
        _envelope(8, "a.future.payload_type", {"kind": "x"}),
        _run(9, {"kind": "assistant_tool_calls_committed", "tool_calls": [{"name": "bash"}]}),
        _run(10, {"kind": "model_completed", "usage": {"input_tokens": 500}, "duration_ms": "x"}),
        _run(11, {"kind": "tool_result_batch_committed", "results": [{"text": {"a": 1}}]}),
        _run(12, {"kind": "model_completed"}),
        _run(13, {"kind": "context_compaction_installed", "replacement": None}),
        _run(14, {"kind": "terminal", "terminal": "failed", "reason": "boom"}),
    ]
    path = tmp_path / "odd" / "session.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + "not json at all\n")
    (session,), diagnostics = read(path)
    kinds = diagnostics.warning_counts
    assert kinds["bad-shape"] >= 3 and kinds["bad-timestamp"] == 1 and kinds["not-json"] == 1
    assert kinds["muse-blocks-exceed-context"] == 1 and kinds["muse-trace-step"] == 1
    (response,) = session.responses
    (snapshot,) = response_snapshots(session)
    # the blocks do not fit the context lane: the lane is unattributed, not scaled
    # (context 100 B + an unknown lane 40 B) / 4 = 35, and 465 not in the lanes
    assert dict(snapshot.categories) == {Category.UNATTRIBUTED: 500}
    assert snapshot.estimated_tokens == 500 and response.usage.prompt_tokens == 500
    assert dict(session.facts)["run_failed"] == "boom"
    # events no Muse build is known to write are not recognised, never skipped on purpose
    assert diagnostics.unrecognised["muse:a.future.payload_type"] == 1
    assert diagnostics.unrecognised["muse:run/a_future_event"] == 1
    assert not any("future" in kind for kind in diagnostics.skipped)
    assert diagnostics.unrecognised_at["muse:a.future.payload_type"].endswith("session.jsonl:10")
    assert contract_problems([session], require_addition=False) == []


def test_read_group_reads_a_group_built_by_hand() -> None:
    group = JournalGroup(Harness.MUSE, R142)
    (session,) = ADAPTER.read(group, Diagnostics())
    assert session.responses[0].usage.prompt_tokens == 31_979


def test_through_the_loader_once_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """What `export` does once `Adapter(Harness.MUSE, ...)` is in ADAPTERS: a session folder
    is expanded to every *.jsonl in it (the approval-review log too) and grouped."""
    import agent_profiler.adapters as adapters
    from agent_profiler import loader

    registered = (*adapters.ADAPTERS, ADAPTER)
    monkeypatch.setattr(adapters, "ADAPTERS", registered)
    monkeypatch.setattr(loader, "ADAPTERS", registered)
    diagnostics = Diagnostics()
    result = loader.load([DAY / MAIN_ID, R142], diagnostics)
    assert result.failures == []
    assert {s.session_id for s in result.sessions} == {
        MAIN_ID,
        GOAL_ID,
        NATIVE_ID,
        "01a10134-76a3-79f0-a7ed-bdad567bda19",
    }
    assert diagnostics.skipped["muse:approval-review-log"] == 1
    # The memory-reminder child the main session launched, whose log is not here: said
    assert dict(diagnostics.warning_counts) == {"subagent-not-read": 1}
