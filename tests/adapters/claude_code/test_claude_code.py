"""The Claude Code adapter on real journals (tests/data/journals/claude-code, copied from the
shared corpus) and on the hand-made one. Expected numbers come from an independent reading
of each file with the standard library's json module, not from the adapter."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from agent_profiler.attribution import INFERRED_HEAD_ID
from agent_profiler.model import AnchorKind, Category, ChangeKind, Session, Stage
from samples import read
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "claude-code"
SPOTTER_DIR = DATA / "spotter-2.1.39-subagents-compaction"
SPOTTER = SPOTTER_DIR / "258c7280-ae70-4798-800f-63464d01a85d.jsonl.gz"
SPOTTER_ID = "258c7280-ae70-4798-800f-63464d01a85d"
ENTIRE_4B = DATA / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"
ENTIRE_51 = DATA / "entire-51-0c10bf7b7a-0_v2.0.76_parallel-task-subagents.jsonl"
LEGACY = DATA / "codemie-2.0.64-legacy-agent-files" / "-tmp-private"
SMALL = DATA / "handmade" / "small.jsonl"
STREAM_BG = DATA / "trackgentic-mpa014m2_v2.1.143_bg-tasks-result.jsonl"
STREAM_INIT_ONLY = DATA / "trackgentic-mp9r3tbb_v2.1.143_init-only-no-result.jsonl"
STREAM_GHAW = DATA / "gh-aw_sample_claude_log_new_format.txt"


def lines(path: Path) -> list[dict[str, object]]:
    """The journal's lines that are JSON objects, in order (others, such as the stderr
    noise between a stream-json file's frames, left out)."""
    opener = gzip.open if path.suffix == ".gz" else open
    out = []
    with opener(path, "rt", encoding="utf-8") as handle:
        for text in handle.read().split("\n"):
            try:
                value = json.loads(text)
            except ValueError:
                continue
            if isinstance(value, dict):
                out.append(value)
    return out


def independent_prompts(path: Path, *, sidechain: bool | None = None) -> dict[str, int]:
    """message id → prompt tokens (input + cache creation + cache read, max per field),
    for ids whose merged usage is not all zero."""
    merged: dict[str, dict[str, int]] = defaultdict(dict)
    for record in lines(path):
        if record.get("type") != "assistant":
            continue
        if sidechain is not None and bool(record.get("isSidechain")) != sidechain:
            continue
        message = record["message"]
        assert isinstance(message, dict)
        usage = message.get("usage") or {}
        fields = merged[message["id"]]
        for key in (
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
        ):
            fields[key] = max(fields.get(key, 0), usage.get(key) or 0)
    return {
        mid: u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
        for mid, u in merged.items()
        if any(u.values())
    }


def by_id(sessions: list[Session]) -> dict[str, Session]:
    return {s.session_id: s for s in sessions}


# --------------------------------------------------------------------------- spotter


def test_spotter_session_subagent_and_compaction() -> None:
    sessions, diagnostics = read(SPOTTER_DIR)
    found = by_id(sessions)
    # GIVEN the spotter folder (main transcript + subagents/ with a subagent and the
    # compaction request) THEN: the main session and one subagent, nothing else
    assert set(found) == {SPOTTER_ID, f"{SPOTTER_ID}/a881341"}
    main, child = found[SPOTTER_ID], found[f"{SPOTTER_ID}/a881341"]
    assert diagnostics.warning_total == 0

    # one response per message id with non-zero usage, Context size = journal usage
    expected = independent_prompts(SPOTTER)
    assert len(expected) == 152
    assert {r.id: r.usage.prompt_tokens for r in main.responses} == expected
    assert main.responses[0].usage.prompt_tokens == 25_882  # FORMATS §1.5: 3 + 8037 + 17842
    assert main.model == "claude-opus-4-6"
    assert main.window_tokens == 200_000 and "assumed" in (main.window_source or "")

    # the compaction, with its summarisation request from agent-acompact-fffbd0.jsonl
    (compaction,) = main.compactions
    assert (compaction.kind, compaction.trigger, compaction.pre_tokens) == (
        "compaction",
        "auto",
        167_094,
    )
    assert compaction.request is not None
    assert compaction.request.usage.prompt_tokens == 3 + 2487 + 166_758
    assert compaction.start_ns <= compaction.request.start_ns < compaction.end_ns
    # the request starts at its own trigger, not at the replayed reminders that open
    # the acompact file 20 minutes earlier: the compaction took 87 s
    assert 80 * 10**9 < compaction.end_ns - compaction.start_ns < 100 * 10**9
    post = [s for s in main.snapshots if s.stage is Stage.POST_COMPACTION]
    assert len(post) == 1 and post[0].anchor_id == compaction.id
    kinds = [c.change for c in post[0].changes]
    assert kinds.count(ChangeKind.ADDED) == 1  # the summary
    assert kinds.count(ChangeKind.REMOVED) == 63 and post[0].omitted_changes > 0
    # everything the previous snapshot held left, except the inferred head; items that
    # came and went between two snapshots never show up as changes
    before = next(s for s in reversed(main.snapshots) if s.time_ns < compaction.end_ns)
    assert 63 + post[0].omitted_changes <= compaction.removed_items
    assert (
        dict(post[0].categories)[Category.UNATTRIBUTED]
        == dict(before.categories)[Category.UNATTRIBUTED]
    )
    assert dict(post[0].categories)[Category.SUMMARIES] > 0
    assert Category.RESULTS not in dict(post[0].categories)

    # the subagent: its own session, linked both ways to the Task call that launched it
    assert child.parent_session == SPOTTER_ID and child.agent_id == "a881341"
    assert child.parent_call_id == "toolu_01VmaERAwhb19LGUwu9GenaK"
    launcher = next(t for t in main.tool_calls if t.call_id == child.parent_call_id)
    assert launcher.name == "Task" and launcher.child_session == child.session_id
    assert launcher.start_ns <= child.start_ns and child.end_ns <= launcher.end_ns
    assert {r.id: r.usage.prompt_tokens for r in child.responses} == independent_prompts(
        SPOTTER_DIR / SPOTTER_ID / "subagents" / "agent-a881341.jsonl"
    )
    assert child.model == "claude-sonnet-4-5-20250929"
    # FORMATS §1.4: the child's last prompt + its final output (997, in the parent's
    # toolUseResult.usage) = the parent's totalTokens (43,179)
    assert child.responses[-1].usage.prompt_tokens == 43_179 - 997
    assert child.prompts and child.prompts[0].source == "agent"


def test_every_response_gets_a_transcript_observed_snapshot_with_reported_tokens() -> None:
    sessions, _ = read(SPOTTER_DIR)
    for session in sessions:
        snapshots = {s.anchor_id: s for s in session.snapshots if s.anchor is AnchorKind.RESPONSE}
        assert set(snapshots) == {r.id for r in session.responses}
        for response in session.responses:
            snap = snapshots[response.id]
            assert snap.stage is Stage.TRANSCRIPT_OBSERVED
            assert snap.reported_tokens == response.usage.prompt_tokens
            assert snap.time_ns == response.start_ns
            assert snap.estimated_tokens == sum(t for _, t in snap.categories)
        first = session.snapshots[0]
        assert first.baseline
        head = next(c for c in first.changes if c.id == INFERRED_HEAD_ID)
        assert head.category is Category.UNATTRIBUTED and "nferred" in head.label


def test_largest_additions_name_their_tool_call() -> None:
    sessions, _ = read(SPOTTER_DIR)
    main = by_id(sessions)[SPOTTER_ID]
    calls = {t.call_id for t in main.tool_calls}
    results = [
        c
        for s in main.snapshots
        if not s.baseline
        for c in s.changes
        if c.change is ChangeKind.ADDED and c.category is Category.RESULTS
    ]
    assert results and all(c.source_id in calls for c in results)
    assert all(c.id == f"result:{c.source_id}" for c in results)


# --------------------------------------------------------------------------- other files


def test_parallel_task_calls_with_results_out_of_order() -> None:
    (session,), _ = read(ENTIRE_51)
    tasks = [t for t in session.tool_calls if t.name == "Task"]
    assert len(tasks) == 6
    assert len({t.response_id for t in tasks}) == 1  # six records of one message id
    ends = [t.end_ns for t in sorted(tasks, key=lambda t: t.start_ns)]
    assert ends != sorted(ends)  # results arrive in completion order
    # the subagent files are not in this checkpoint: each Task call names the child its
    # result's toolUseResult.agentId gives (the id its file would have), none read
    agents = {
        block["tool_use_id"]: record["toolUseResult"]["agentId"]  # type: ignore[index]
        for record in lines(ENTIRE_51)
        if isinstance(record.get("toolUseResult"), dict) and "agentId" in record["toolUseResult"]  # type: ignore[operator]
        for block in record["message"]["content"]  # type: ignore[index]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    }
    assert len(agents) == 6
    assert {t.call_id: t.child_session for t in tasks} == {
        call: f"{session.session_id}/{agent}" for call, agent in agents.items()
    }
    assert dict(session.facts)["unavailable_child_sessions"] == 6
    assert {r.id: r.usage.prompt_tokens for r in session.responses} == independent_prompts(
        ENTIRE_51
    )
    assert session.responses[0].usage.prompt_tokens == 40_360


def test_compaction_boundary_in_a_resumed_session() -> None:
    (session,), _ = read(ENTIRE_4B)
    (compaction,) = session.compactions
    assert compaction.pre_tokens is not None and compaction.request is None
    assert {r.id: r.usage.prompt_tokens for r in session.responses} == independent_prompts(
        ENTIRE_4B
    )
    # the journal starts mid-session: the head inferred at request 1 holds history that
    # the compaction drops, so it is measured again (never left above the reported size)
    after = [s for s in session.snapshots if s.time_ns > compaction.end_ns and s.reported_tokens]
    assert after and all(s.estimated_tokens <= 1.5 * (s.reported_tokens or 0) for s in after)


def test_legacy_flat_agent_files_are_subagents_without_a_launching_call() -> None:
    sessions, _ = read(LEGACY)
    found = by_id(sessions)
    main_id = "4c2ddfdc-b619-4525-8d03-1950fb1b0257"
    assert set(found) == {main_id, f"{main_id}/36541525", f"{main_id}/50243ee8"}
    for agent in ("36541525", "50243ee8"):
        child = found[f"{main_id}/{agent}"]
        assert child.parent_session == main_id and child.parent_call_id is None
        assert child.prompts[0].source == "agent"


def test_passing_only_the_main_file_finds_its_subagents_folder() -> None:
    sessions, _ = read(SPOTTER)
    assert {s.session_id for s in sessions} == {SPOTTER_ID, f"{SPOTTER_ID}/a881341"}
    assert by_id(sessions)[SPOTTER_ID].compactions[0].request is not None


# --------------------------------------------------------------------------- hand-made


def test_handmade_journal_rules() -> None:
    (session,), _ = read(SMALL)
    responses = {r.id: r for r in session.responses}
    # the all-zero usage message is not a request; the sparse later block of msg_A did
    # not zero its prompt (per-field max merge)
    assert list(responses) == ["msg_A", "msg_B", "msg_C", "msg_D", "msg_E", "msg_F"]
    assert responses["msg_A"].usage.prompt_tokens == 15_003
    assert responses["msg_A"].usage.output_tokens == 90
    # request start = the triggering record (the prompt), end = its last record
    prompt = session.prompts[0]
    assert responses["msg_A"].start_ns == prompt.start_ns
    tools = {t.call_id: t for t in session.tool_calls}
    assert responses["msg_B"].start_ns == tools["toolu_read1"].end_ns  # the last result
    assert tools["toolu_edit"].is_error and not tools["toolu_read1"].is_error
    assert tools["toolu_read2"].end_ns < tools["toolu_read1"].end_ns
    assert tools["toolu_read1"].response_id == "msg_A"
    # a manual compaction with postTokens, then a microcompaction
    full, micro = session.compactions
    assert (full.kind, full.trigger, full.pre_tokens, full.post_tokens) == (
        "compaction",
        "manual",
        18_300,
        2_100,
    )
    assert (micro.kind, micro.pre_tokens, micro.post_tokens, micro.removed_items) == (
        "microcompaction",
        12_131,
        12_131 - 225,
        1,
    )
    micro_snap = next(s for s in session.snapshots if s.anchor_id == micro.id)
    (gone,) = [c for c in micro_snap.changes if c.change is ChangeKind.REMOVED]
    assert (gone.id, gone.change, gone.source_id) == (
        "result:toolu_bash",
        ChangeKind.REMOVED,
        "toolu_bash",
    )
    # two user turns
    assert [p.chars for p in session.prompts] == [
        len("Fix the bug in parser.py please"),
        len("Now run the tests"),
        len("Thanks, commit it"),
    ]


# --------------------------------------------------------------------------- stream-json


def test_stream_json_all_zero_usage_gives_no_requests_but_the_window() -> None:
    (session,), _ = read(STREAM_BG)
    # only some frames carry a timestamp: the undated ones before the first dated one
    # are placed just before it, not at the Unix epoch
    assert session.start_ns > 1_767_225_600 * 10**9  # 2026-01-01
    assert session.end_ns - session.start_ns < 3600 * 10**9
    assert session.responses == ()  # glm backend: every usage snapshot is zero
    assert session.window_tokens == 200_000 and session.window_source == "journal"
    assert session.model == "glm-5.1"
    assert len(session.tool_calls) > 0


def test_stream_json_with_stderr_lines_warns_per_line_and_keeps_the_frames() -> None:
    (session,), diagnostics = read(STREAM_GHAW)
    assert diagnostics.warning_counts == {"not-json": 8}
    assert all(w.path.endswith(".txt") and w.line is not None for w in diagnostics.warnings)
    expected = independent_prompts(STREAM_GHAW)
    assert {r.id: r.usage.prompt_tokens for r in session.responses} == expected
    # no timestamps at all: a synthetic clock from result.duration_ms (issue 15.4), said
    # so, and the frames end at the file's modification time
    assert session.timing.startswith("synthetic") and session.clock == "synthetic"
    assert 0 < STREAM_GHAW.stat().st_mtime_ns - session.end_ns < 10**9


def test_stream_json_init_only_file_is_a_session_without_requests() -> None:
    (session,), _ = read(STREAM_INIT_ONLY)
    assert session.responses == ()
    # the SessionStart hook's additionalContext is all the context there is: one
    # end-of-session snapshot, no reported size, no inferred head
    (snapshot,) = session.snapshots
    assert snapshot.anchor is AnchorKind.SESSION and snapshot.reported_tokens is None
    assert set(dict(snapshot.categories)) == {Category.ENVIRONMENT}


def test_appended_stream_json_runs_are_separate_sessions(tmp_path: Path) -> None:
    first = STREAM_GHAW.read_bytes()
    second = first.replace(
        b"15b818fc-d93c-45e7-b7f2-89bad9ba54f7", b"25b818fc-d93c-45e7-b7f2-89bad9ba54f7"
    )
    appended = tmp_path / "runs.jsonl"
    appended.write_bytes(first + second)
    sessions, _ = read(appended)
    assert [s.session_id for s in sessions] == [
        "15b818fc-d93c-45e7-b7f2-89bad9ba54f7",
        "25b818fc-d93c-45e7-b7f2-89bad9ba54f7",
    ]
    assert all(len(s.responses) == len(independent_prompts(STREAM_GHAW)) for s in sessions)


def test_stream_json_subagent_frames_are_kept_apart(tmp_path: Path) -> None:
    # GIVEN a synthetic stream with an Agent call whose frames carry parent_tool_use_id
    def frame(**kw: object) -> str:
        return json.dumps({"session_id": "s1", **kw})

    usage = {"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 5}
    child_usage = {"input_tokens": 7, "cache_creation_input_tokens": 3, "output_tokens": 1}
    text = (
        "\n".join(
            [
                frame(type="system", subtype="init", model="claude-x", tools=["Agent"]),
                frame(
                    type="assistant",
                    parent_tool_use_id=None,
                    message={
                        "id": "m1",
                        "model": "claude-x",
                        "usage": usage,
                        "content": [
                            {
                                "type": "tool_use",
                                "id": "call_agent",
                                "name": "Agent",
                                "input": {"prompt": "look"},
                            }
                        ],
                    },
                ),
                frame(
                    type="user",
                    parent_tool_use_id="call_agent",
                    message={"role": "user", "content": "look"},
                ),
                frame(
                    type="assistant",
                    parent_tool_use_id="call_agent",
                    message={
                        "id": "c1",
                        "model": "claude-x",
                        "usage": child_usage,
                        "content": [{"type": "text", "text": "done"}],
                    },
                ),
                frame(
                    type="user",
                    parent_tool_use_id=None,
                    message={
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": "call_agent", "content": "done"}
                        ],
                    },
                ),
                frame(
                    type="result",
                    subtype="success",
                    modelUsage={"claude-x": {"contextWindow": 1_000_000}},
                ),
            ]
        )
        + "\n"
    )
    path = tmp_path / "agent.jsonl"
    path.write_text(text)
    sessions, _ = read(path)
    main, child = sessions
    assert [r.id for r in main.responses] == ["m1"]
    assert [r.id for r in child.responses] == ["c1"]
    assert child.parent_session == "s1" and child.parent_call_id == "call_agent"
    assert main.tool_calls[0].child_session == child.session_id
    assert main.window_tokens == child.window_tokens == 1_000_000


@pytest.mark.parametrize("path", [SPOTTER, ENTIRE_4B, ENTIRE_51, SMALL, STREAM_GHAW])
def test_reading_twice_gives_equal_sessions(path: Path) -> None:
    assert read(path)[0] == read(path)[0]


def test_a_compaction_request_file_given_alone_is_said_for_what_it_is(tmp_path: Path) -> None:
    """An `agent-acompact-*` file holds a compaction's summarisation request, shown on its
    session's compaction: given without the session (alone, or its subagents/ folder) it
    said "no session records (nothing to show)". Real (the spotter's) and hand-made."""
    from typer.testing import CliRunner

    from agent_profiler.cli import app

    real = SPOTTER_DIR / SPOTTER_ID / "subagents" / "agent-acompact-fffbd0.jsonl"
    made = tmp_path / "agent-acompact-1a2b3c.jsonl"
    made.write_text(
        json.dumps(
            {
                "type": "user",
                "isSidechain": True,
                "sessionId": "s-1",
                "agentId": "acompact-1a2b3c",
                "uuid": "u1",
                "parentUuid": None,
                "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {"role": "user", "content": "Summarise the conversation."},
            }
        )
        + "\n"
    )
    for given, session in ((real, SPOTTER_ID), (made, "s-1")):
        result = CliRunner().invoke(app, ["summary", str(given)])
        assert result.exit_code == 1
        assert (
            f"{given.name}: the compaction request of session {session}: pass the session's "
            "file (its request is shown on the session's compaction)"
        ) in result.stderr
        assert "no session records" not in result.stderr
    # Its folder given: the compaction file said so, the subagent read as an orphan
    folder = CliRunner().invoke(app, ["summary", str(real.parent)])
    assert f"{real.name}: the compaction request of session {SPOTTER_ID}" in folder.stderr
    assert "no session records" not in folder.stderr
