"""The rules of `claude -p --output-format stream-json` output (adapters/claude_stream.py),
pinned on the real stream-json journals in tests/data/journals/claude-code: gh-aw (no
timestamps at all, six frames between stderr noise), trackgentic bg-tasks (undated assistant
frames, dated tool results, a SessionStart hook) and trackgentic init-only. Runs appended to
one file are made by concatenating real files; subagent frames (`parent_tool_use_id`) have no
example in the corpus and are hand-made (said so where they are)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from test_claude_code import lines  # the JSON frames, in order (stderr noise left out)

from agent_profiler.adapters.common import timestamp_ns
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.model import Category, Harness, Session
from rules_spy import record, spy
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "claude-code"
GHAW = DATA / "gh-aw_sample_claude_log_new_format.txt"
BG = DATA / "trackgentic-mpa014m2_v2.1.143_bg-tasks-result.jsonl"
INIT_ONLY = DATA / "trackgentic-mp9r3tbb_v2.1.143_init-only-no-result.jsonl"
GHAW_ID = "15b818fc-d93c-45e7-b7f2-89bad9ba54f7"
BG_ID = "80848d88-ed9d-40c4-8407-1ecd6c2fb130"
MS = 1_000_000
MTIME = 1_800_000_000 * 10**9  # 2027-01-15: a fixed modification time for undated files
SYNTHETIC_TIMING = (
    "synthetic: no timestamps in the journal; each run's frames are spaced evenly over its "
    "result.duration_ms (1 ms per frame without one), the last run ending at the file's "
    "modification time"
)


def write_frames(path: Path, values: list[Any], mtime_ns: int | None = MTIME) -> Path:
    path.write_text("".join(json.dumps(v) + "\n" for v in values), encoding="utf-8")
    if mtime_ns is not None:
        os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def read(path: Path) -> tuple[list[Session], Diagnostics]:
    """Read as Claude Code (some edited files no longer say which harness wrote them)."""
    diagnostics = Diagnostics()
    result = load([path], diagnostics, harness=Harness.CLAUDE_CODE)
    assert result.failures == []
    return list(result.sessions), diagnostics


def env_tokens(session: Session) -> int:
    """ENVIRONMENT tokens of the session's last snapshot."""
    return dict(session.snapshots[-1].categories).get(Category.ENVIRONMENT, 0)


# --------------------------------------------------------------------------- synthetic clock


def test_an_undated_stream_is_spread_over_its_result_duration(tmp_path: Path) -> None:
    """gh-aw: six frames, no timestamp, `result.duration_ms` 10,857. The frames are spaced
    10,857 ms / 5 = 2,171.4 ms apart and the last one (the result) is placed just before the
    file's modification time: 1 ms per frame before it, as for any undated head."""
    values = lines(GHAW)
    assert len(values) == 6 and values[-1]["duration_ms"] == 10_857
    (session,), _ = read(write_frames(tmp_path / "ghaw.jsonl", values))
    step = 10_857 * MS // 5
    assert step == 2_171_400_000
    assert session.end_ns == MTIME - 6 * MS
    assert session.start_ns == session.end_ns - 5 * step
    first, second = session.responses
    # Frames 2–3 are the first response; frame 4 (a tool result) triggers the second (5).
    assert (first.start_ns, first.end_ns) == (session.start_ns + step, session.start_ns + 2 * step)
    assert (second.start_ns, second.end_ns) == (
        session.start_ns + 3 * step,
        session.start_ns + 4 * step,
    )
    (call,) = session.tool_calls
    assert (call.start_ns, call.end_ns) == (first.end_ns, second.start_ns)
    assert session.timing == SYNTHETIC_TIMING
    assert ("clock", "synthetic") in session.facts and session.clock == "synthetic"


def test_a_run_without_a_duration_is_one_ms_per_frame(tmp_path: Path) -> None:
    """gh-aw with `duration_ms` removed from its result (and, apart, set to 0): nothing to
    spread over, so 1 ms per frame."""
    for name, edit in (("none", None), ("zero", 0)):
        values = lines(GHAW)
        if edit is None:
            del values[-1]["duration_ms"]
        else:
            values[-1]["duration_ms"] = edit
        (session,), _ = read(write_frames(tmp_path / f"{name}.jsonl", values))
        assert session.end_ns == MTIME - 6 * MS
        assert session.end_ns - session.start_ns == 5 * MS
        assert session.clock == "synthetic"


def test_a_short_duration_still_leaves_a_ms_between_frames(tmp_path: Path) -> None:
    """A run of six frames whose result says 3 ms: 3 ms / 5 is under 1 ms, so the frames stay
    1 ms apart (never two frames at one time)."""
    values = lines(GHAW)
    values[-1]["duration_ms"] = 3
    (session,), _ = read(write_frames(tmp_path / "short.jsonl", values))
    assert session.end_ns - session.start_ns == 5 * MS


def test_a_two_frame_run_spans_its_whole_duration(tmp_path: Path) -> None:
    """gh-aw's last answer (frame 5) and its result (10,857 ms): two frames, one step of the
    whole duration between them."""
    (session,), _ = read(write_frames(tmp_path / "two.jsonl", lines(GHAW)[-2:]))
    assert session.end_ns == MTIME - 2 * MS
    assert session.end_ns - session.start_ns == 10_857 * MS
    assert session.clock == "synthetic"


def test_two_undated_runs_are_each_spread_over_their_own_duration(tmp_path: Path) -> None:
    """gh-aw appended to itself with the second run's id changed and its duration set to
    2,000 ms: the first run's frames are 2,171.4 ms apart, the second run's 400 ms."""
    first = lines(GHAW)
    second = [{**v, "session_id": "second"} for v in lines(GHAW)]
    second[-1]["duration_ms"] = 2_000
    (one, two), _ = read(write_frames(tmp_path / "runs.jsonl", first + second))
    assert (one.session_id, two.session_id) == (GHAW_ID, "second")
    assert one.end_ns - one.start_ns == 5 * 2_171_400_000
    assert two.end_ns - two.start_ns == 5 * 400 * MS
    # The second run's init comes one of its own steps after the first run's result.
    assert two.start_ns - one.end_ns == 400 * MS
    assert [r.end_ns - r.start_ns for r in two.responses] == [400 * MS, 400 * MS]
    assert one.clock == two.clock == "synthetic"


def test_one_dated_frame_means_the_journal_clock_is_used(tmp_path: Path) -> None:
    """gh-aw with one real time on its tool result (frame 4): the times are read, not made
    up; the frames before it go 1 ms apart just before it, those after it 1 ms after."""
    values = lines(GHAW)
    values[3]["timestamp"] = "2025-09-16T01:26:30.000Z"
    (session,), _ = read(write_frames(tmp_path / "dated.jsonl", values))
    dated = int(datetime(2025, 9, 16, 1, 26, 30, tzinfo=UTC).timestamp()) * 10**9
    assert (session.start_ns, session.end_ns) == (dated - 3 * MS, dated + 2 * MS)
    assert session.timing == "journal-timestamps"
    assert ("clock", "synthetic") not in session.facts and session.clock == "journal"


# --------------------------------------------------------------------------- runs


def test_appended_dated_runs_of_one_session_are_numbered_and_keep_their_hooks(
    tmp_path: Path,
) -> None:
    """bg-tasks appended to itself (a resumed `-p` run writes the same session id again): the
    second run is `<id>#2`, a third `<id>#3`. The second copy's SessionStart hook frames
    (lines 1–2) come after the first run's `result`: they open the next run, so each run has
    its own hook context and the first run ends at its result (line 46)."""
    text = BG.read_text(encoding="utf-8")
    path = tmp_path / "resumed.jsonl"
    path.write_text(text * 3, encoding="utf-8")
    runs, _ = read(path)
    assert [s.session_id for s in runs] == [BG_ID, f"{BG_ID}#2", f"{BG_ID}#3"]
    hook = json.loads(record(BG, 2)["output"])["hookSpecificOutput"]["additionalContext"]
    (single,), _ = read(BG)
    assert env_tokens(single) == -(-len(hook) // 4) > 0
    assert [env_tokens(s) for s in runs] == [env_tokens(single)] * 3
    # Lines 44–46 are undated, 1 ms apart after line 43's time; the next copy's hook frames
    # (undated too) are not the first run's.
    last_dated = record(BG, 43)["timestamp"]
    assert last_dated == "2026-05-17T16:39:27.806Z"
    assert runs[0].end_ns == single.end_ns == timestamp_ns(last_dated) + 3 * MS


def test_a_second_init_without_a_result_between_starts_a_new_run(tmp_path: Path) -> None:
    """init-only (hook_started, hook_response, init) appended to itself: no result between
    them, yet the second `system/init` is a new run of its own."""
    text = INIT_ONLY.read_text(encoding="utf-8")
    path = tmp_path / "twice.jsonl"
    path.write_text(text + text, encoding="utf-8")
    first_id = record(INIT_ONLY, 3)["session_id"]
    runs, _ = read(path)
    assert [s.session_id for s in runs] == [first_id, f"{first_id}#2"]
    assert [dict(s.facts)["init_tools"] for s in runs] == [len(record(INIT_ONLY, 3)["tools"])] * 2


def test_frames_without_a_session_id_are_named_by_their_run(tmp_path: Path) -> None:
    """gh-aw, then gh-aw again with every `session_id` removed: the second run is `run-2`.
    With only the init's id removed, the run takes the id of its next frame."""
    bare = [{k: v for k, v in f.items() if k != "session_id"} for f in lines(GHAW)]
    runs, _ = read(write_frames(tmp_path / "bare.jsonl", lines(GHAW) + bare + bare))
    assert [s.session_id for s in runs] == [GHAW_ID, "run-2", "run-3"]
    late = lines(GHAW)
    del late[0]["session_id"]
    (session,), _ = read(write_frames(tmp_path / "late.jsonl", late))
    assert session.session_id == GHAW_ID


def test_a_frame_that_is_not_an_object_is_warned_about_with_its_line(tmp_path: Path) -> None:
    """gh-aw with a JSON array as its third line: warned about, and not a frame of the
    synthetic clock either (the six frames still share the run's 10,857 ms)."""
    values: list[Any] = lines(GHAW)
    values.insert(2, [1, 2])
    path = write_frames(tmp_path / "array.jsonl", values)
    (session,), diagnostics = read(path)
    assert [(w.path, w.line, w.kind, w.message) for w in diagnostics.warnings] == [
        (str(path), 3, "bad-shape", "frame is not a JSON object")
    ]
    assert len(session.responses) == 2
    assert session.end_ns - session.start_ns == 10_857 * MS


def test_frames_not_read_are_counted_by_kind() -> None:
    """bg-tasks: the hook_started frame, three task_started and three task_notification
    frames and one notification are understood and hold no model input."""
    _, diagnostics = read(BG)
    assert dict(diagnostics.skipped) == {
        "claude-stream:system/hook_started": 1,
        "claude-stream:system/task_started": 3,
        "claude-stream:system/task_notification": 3,
        "claude-stream:system/notification": 1,
    }
    assert dict(diagnostics.unrecognised) == {}


def test_a_frame_without_a_subtype_is_counted_by_its_type(tmp_path: Path) -> None:
    """bg-tasks' notification frame (line 45) without its subtype and retyped as a
    `rate_limit_event` (a frame type newer builds write)."""
    values = lines(BG)
    values[44] = {k: v for k, v in values[44].items() if k != "subtype"}
    values[44]["type"] = "rate_limit_event"
    _, diagnostics = read(write_frames(tmp_path / "rate.jsonl", values, mtime_ns=None))
    assert diagnostics.skipped["claude-stream:rate_limit_event"] == 1
    assert "claude-stream:system/notification" not in diagnostics.skipped


# --------------------------------------------------------------------------- init and result


def test_init_facts_of_a_real_init(tmp_path: Path) -> None:
    """gh-aw line 8: four tools, two MCP servers, no skills/agents/commands/plugins lists."""
    (session,), _ = read(GHAW)
    facts = dict(session.facts)
    assert facts["init_tools"] == 4
    assert facts["init_mcp_servers"] == "safe_outputs,github"
    assert not {"init_skills", "init_agents", "init_slash_commands", "init_plugins"} & set(facts)
    assert session.models == ("claude-sonnet-4-20250514",)


def test_the_main_model_of_a_result_without_a_context_window(tmp_path: Path) -> None:
    """gh-aw's result (2025-09) names two models in modelUsage, neither with a
    contextWindow: no window from the journal, the Claude default is assumed."""
    (session,), _ = read(GHAW)
    assert (session.window_tokens, session.window_source) == (
        200_000,
        "assumed: Claude default window, not in journal",
    )
    values = lines(GHAW)
    usage = values[-1]["modelUsage"]
    usage["claude-3-5-haiku-20241022"]["contextWindow"] = 100_000
    usage["claude-sonnet-4-20250514"]["contextWindow"] = 1_000_000
    usage["broken"] = "not a dict"
    (session,), _ = read(write_frames(tmp_path / "windows.jsonl", values))
    # The init's model is the main one: its window, not the first listed.
    assert (session.window_tokens, session.window_source) == (1_000_000, "journal")
    assert {s.window_tokens for s in session.snapshots} == {1_000_000}


def test_a_result_without_model_usage_entries_gives_no_window(tmp_path: Path) -> None:
    """gh-aw's result with an empty modelUsage (and, apart, none at all): the window is the
    assumed Claude default, not a number from the journal."""
    for name, usage in (("empty", {}), ("none", None)):
        values = lines(GHAW)
        values[-1]["modelUsage"] = usage
        (session,), _ = read(write_frames(tmp_path / f"{name}.jsonl", values))
        assert (session.window_tokens, session.window_source) == (
            200_000,
            "assumed: Claude default window, not in journal",
        )


def test_a_compaction_inside_a_stream(tmp_path: Path) -> None:
    """Hand-made (the corpus has no stream-json compaction): E4B line 71's boundary in
    stream-json spelling (`compact_metadata`, `pre_tokens`) between gh-aw's two turns."""
    values = lines(GHAW)
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "session_id": GHAW_ID,
        "uuid": "boundary-1",
        "compact_metadata": {"trigger": "auto", "pre_tokens": 153_739},
    }
    (session,), _ = read(
        write_frames(tmp_path / "compact.jsonl", [*values[:4], boundary, *values[4:]])
    )
    (compaction,) = session.compactions
    assert (compaction.id, compaction.trigger, compaction.pre_tokens) == (
        "boundary-1",
        "auto",
        153_739,
    )


def test_a_result_whose_subtype_is_not_text_adds_no_result_fact(tmp_path: Path) -> None:
    values = lines(GHAW)
    values[-1]["subtype"] = ["error_max_turns"]
    (session,), _ = read(write_frames(tmp_path / "subtype.jsonl", values))
    assert "result" not in dict(session.facts)
    values[-1]["subtype"] = "error_max_turns"
    (session,), _ = read(write_frames(tmp_path / "error.jsonl", values))
    assert dict(session.facts)["result"] == "error_max_turns"


# --------------------------------------------------------------------------- subagent frames


def _agent_stream(tmp_path: Path, runs: int = 1, **child: Any) -> list[Session]:
    """Hand-made (the corpus has no stream-json subagent): gh-aw's run with its
    `mcp__safe_outputs__missing-tool` call turned into an Agent call whose frames carry
    `parent_tool_use_id`; the child's response is split over two frames, the second one
    without a parent (as it arrives in some builds)."""
    values = lines(GHAW)
    init, text, call, result, answer, end = values
    call_id = call["message"]["content"][0]["id"]
    base = {"session_id": GHAW_ID, **child}
    child_prompt = {
        **base,
        "type": "user",
        "parent_tool_use_id": call_id,
        "uuid": "child-user",
        "message": {"role": "user", "content": "draw it"},
    }
    reply = {
        "type": "assistant",
        "session_id": GHAW_ID,
        "uuid": "child-reply",
        "parent_tool_use_id": call_id,
        "message": {
            "id": "msg_child",
            "model": "claude-3-5-haiku-20241022",
            "usage": {"input_tokens": 50, "cache_read_input_tokens": 950, "output_tokens": 3},
            "content": [{"type": "text", "text": "no pelican"}],
        },
        **child,
    }
    tail = {**reply, "uuid": "child-reply-2", "parent_tool_use_id": None}
    tail["message"] = {**reply["message"], "content": [{"type": "text", "text": "sorry"}]}
    return read(
        write_frames(
            tmp_path / "agent.jsonl",
            [init, text, call, child_prompt, reply, tail, result, answer, end] * runs,
        )
    )[0]


def test_subagent_frames_are_a_child_session_named_by_agent(tmp_path: Path) -> None:
    main, child = _agent_stream(tmp_path, agent_id="a1b2")
    call_id = lines(GHAW)[2]["message"]["content"][0]["id"]
    assert child.session_id == f"{GHAW_ID}/a1b2"
    assert (child.parent_session, child.parent_call_id, child.agent_id, child.child_role) == (
        GHAW_ID,
        call_id,
        "a1b2",
        "subagent",
    )
    assert main.tool_calls[0].child_session == child.session_id
    # One response per message id, on the thread of its first frame.
    assert [r.id for r in child.responses] == ["msg_child"]
    assert [r.id for r in main.responses] == [
        "msg_01G74UPFuoYP6mNpwBdJKs7e",
        "msg_011wmKmFC5t8MQjkYjcxYfMq",
    ]
    assert child.responses[0].usage.prompt_tokens == 1_000
    assert child.clock == "synthetic" and child.timing == SYNTHETIC_TIMING
    # Every frame of the thread is the child's: its prompt (frame 4) opens it, and it is
    # the agent's task, not a prompt of the user's (the parent is known from the first frame).
    assert [(p.id, p.source) for p in child.prompts] == [("child-user", "agent")]
    assert child.start_ns == child.prompts[0].start_ns == main.start_ns + 3 * 10_857 * MS // 8
    # The child has no result of its own: it shares the run's window and lies inside it.
    assert (child.window_tokens, child.window_source) == (main.window_tokens, main.window_source)
    assert main.start_ns <= child.start_ns <= child.end_ns <= main.end_ns


def test_the_subagent_of_a_resumed_run_belongs_to_that_run(tmp_path: Path) -> None:
    """The hand-made agent run written twice with one session id (a resumed `-p` run): the
    second run is `<id>#2` and its subagent is `<id>#2/a1b2`, a child of the second run and
    of its own Agent call, not of the first run."""
    main, child, main2, child2 = _agent_stream(tmp_path, runs=2, agent_id="a1b2")
    assert [s.session_id for s in (main, child, main2, child2)] == [
        GHAW_ID,
        f"{GHAW_ID}/a1b2",
        f"{GHAW_ID}#2",
        f"{GHAW_ID}#2/a1b2",
    ]
    assert (child.parent_session, child2.parent_session) == (GHAW_ID, f"{GHAW_ID}#2")
    assert main2.tool_calls[0].child_session == child2.session_id
    assert main.tool_calls[0].child_session == child.session_id


def test_subagent_frames_without_an_agent_id_are_named_by_the_call(tmp_path: Path) -> None:
    main, child = _agent_stream(tmp_path, agent_id=7)
    call_id = lines(GHAW)[2]["message"]["content"][0]["id"]
    assert child.session_id == f"{GHAW_ID}/{call_id}"
    assert child.agent_id is None
    assert main.tool_calls[0].child_session == child.session_id


def test_a_run_lasts_as_long_as_its_subagent(tmp_path: Path) -> None:
    """Hand-made: the subagent's frames come last (after the run's result): the run's
    session still ends with them."""
    values = lines(GHAW)
    call_id = values[2]["message"]["content"][0]["id"]
    late = {
        "type": "assistant",
        "session_id": GHAW_ID,
        "uuid": "late",
        "parent_tool_use_id": call_id,
        "message": {"id": "msg_late", "content": [{"type": "text", "text": "late"}]},
    }
    main, child = read(write_frames(tmp_path / "late.jsonl", [*values, late]))[0]
    # Seven frames: the last one 7 ms before the file's modification time.
    assert child.end_ns == MTIME - 7 * MS
    assert main.end_ns == child.end_ns


def test_a_child_with_a_window_of_its_own_keeps_it(tmp_path: Path) -> None:
    """Hand-made: a `result` frame inside the subagent (parent_tool_use_id set) with its own
    modelUsage window; the run's window does not replace it."""
    values = lines(GHAW)
    init, text, call, result, answer, end = values
    call_id = call["message"]["content"][0]["id"]
    child_result = {
        "type": "result",
        "subtype": "success",
        "session_id": GHAW_ID,
        "parent_tool_use_id": call_id,
        "modelUsage": {"claude-3-5-haiku-20241022": {"contextWindow": 100_000}},
    }
    end = {**end, "modelUsage": {"claude-sonnet-4-20250514": {"contextWindow": 1_000_000}}}
    main, child = read(
        write_frames(
            tmp_path / "child.jsonl", [init, text, call, child_result, result, answer, end]
        )
    )[0]
    assert main.window_tokens == 1_000_000
    assert child.window_tokens == 100_000
    assert dict(child.facts)["result"] == "success"


def test_an_init_only_run_holds_its_hook_context(tmp_path: Path) -> None:
    """init-only: the hook's additionalContext (line 2) is the whole context, as one
    `hook:<uuid>` Environment item; the model is known from the init alone (glm-5.1). The
    same hook frame without uuid and hook_id is named by its place in the run (frame 2)."""
    hook = record(INIT_ONLY, 2)
    text = json.loads(hook["output"])["hookSpecificOutput"]["additionalContext"]
    with pytest.MonkeyPatch.context() as mp:
        added = spy(mp)
        (session,), _ = read(INIT_ONLY)
    assert [(a.id, a.category, a.chars) for a in added] == [
        (f"hook:{hook['uuid']}", Category.ENVIRONMENT, len(text))
    ]
    assert session.session_id == hook["session_id"]
    assert session.models == ("glm-5.1",) == (record(INIT_ONLY, 3)["model"],)
    values = lines(INIT_ONLY)
    values[1] = {k: v for k, v in values[1].items() if k not in {"uuid", "hook_id"}}
    with pytest.MonkeyPatch.context() as mp:
        added = spy(mp)
        read(write_frames(tmp_path / "anonymous.jsonl", values))
    assert [(a.id, a.chars) for a in added] == [("hook:hook@2", len(text))]


def test_a_user_frame_without_readable_content_is_warned_about(tmp_path: Path) -> None:
    """gh-aw's tool-result frame (line 4 of the frames) with its content removed: a warning
    naming the file and line, as in a transcript."""
    values = lines(GHAW)
    values[3]["message"] = {"role": "user"}
    path = write_frames(tmp_path / "nocontent.jsonl", values)
    (session,), diagnostics = read(path)
    assert [(w.path, w.line, w.kind, w.message) for w in diagnostics.warnings] == [
        (str(path), 4, "bad-shape", "user record without a readable message content")
    ]
    (call,) = session.tool_calls
    assert call.incomplete is True


# ---------------------------------------------------------------------- where a run starts


@pytest.mark.parametrize("source", ["bundled", "corpus"])
def test_a_dated_run_starts_at_its_first_timestamp_whatever_the_files_mtime(
    source: str, tmp_path: Path
) -> None:
    """bg-tasks (bundled copy and the corpus's): frames 1–7 are undated, frame 8 is the first
    dated one. The run starts 7 ms before it — from the records — and a copy of the file
    touched years later starts at the same time (the modification time is not used)."""
    from shared_paths import CORPUS, SHARED_REASON

    original = BG if source == "bundled" else CORPUS / "claude-code" / "stream-json" / BG.name
    if not original.is_file():
        pytest.skip(SHARED_REASON)
    copy = tmp_path / BG.name
    copy.write_bytes(original.read_bytes())
    os.utime(copy, ns=(MTIME, MTIME))
    first_dated = next(v["timestamp"] for v in lines(original) if v.get("timestamp"))
    assert first_dated == record(original, 8)["timestamp"] == "2026-05-17T16:38:10.636Z"
    for path in (original, copy):
        (session,), _ = read(path)
        assert session.clock == "journal" and session.timing == "journal-timestamps"
        assert session.start_ns == timestamp_ns(first_dated) - 7 * MS


def test_an_undated_run_says_its_date_is_the_files_mtime() -> None:
    """gh-aw and init-only carry no timestamp in any frame (every stream-json journal we
    hold but bg-tasks): the run ends at the file's modification time, and says so."""
    for path in (GHAW, INIT_ONLY):
        assert not [v for v in lines(path) if "timestamp" in v]
        sessions, _ = read(path)
        for session in sessions:
            assert session.clock == "synthetic"
            assert "the file's modification time" in session.timing


def _agent_run(where: str) -> list[dict[str, Any]]:
    """A hand-made run (no corpus example): the main thread launches an Agent call whose
    subagent's first frame (a user one) has no `agent_id`; its assistant frame has one
    (`in-frame`), or the parent's tool result alone names it (`agentId`: `in-result`), or
    only the subagent's first frame does (`in-first-frame-only`)."""
    run = "11111111-2222-3333-4444-555555555555"
    at = "2026-06-01T10:00:0{}.000Z".format
    usage = {"input_tokens": 5, "cache_creation_input_tokens": 800, "output_tokens": 30}

    def frame(kind: str, second: int, parent: str | None, **fields: Any) -> dict[str, Any]:
        base = {"type": kind, "session_id": run, "parent_tool_use_id": parent}
        return base | {"timestamp": at(second)} | fields

    call = {"type": "tool_use", "id": "toolu_A", "name": "Agent", "input": {"prompt": "look"}}
    reply = {"role": "assistant", "content": [{"type": "text", "text": "found"}]}
    child = frame("assistant", 3, "toolu_A", message={"id": "m2", "model": "m", **reply})
    child["message"]["usage"] = usage
    if where == "in-frame":
        child["agent_id"] = "agx1"
    first = frame("user", 2, "toolu_A", message={"role": "user", "content": "look"})
    named = {"status": "completed", "agentId": "agx1", "usage": usage}
    if where == "in-first-frame-only":
        first["agent_id"] = "agx1"
        del named["agentId"]
    result = {"type": "tool_result", "tool_use_id": "toolu_A", "content": "found"}
    return [
        {"type": "system", "subtype": "init", "session_id": run, "timestamp": at(0)},
        frame("user", 1, None, message={"role": "user", "content": "investigate"}),
        frame(
            "assistant",
            2,
            None,
            message={"id": "m1", "role": "assistant", "content": [call], "usage": usage},
        ),
        first,
        child,
        frame(
            "user",
            4,
            None,
            message={"role": "user", "content": [result]},
            tool_use_result=named,
        ),
    ]


@pytest.mark.parametrize("where", ["in-frame", "in-result", "in-first-frame-only"])
def test_a_subagent_is_named_by_its_agent_id_wherever_the_run_says_it(
    tmp_path: Path, where: str
) -> None:
    """Named by its call id (`…/toolu_A`) before: only the thread's first frame was asked.
    In the first frame only (no later frame, nor the parent's result, says it) it names the
    child too."""
    sessions, _ = read(write_frames(tmp_path / "r.jsonl", _agent_run(where)))
    (child,) = [s for s in sessions if s.parent_session is not None]
    assert child.agent_id == "agx1"
    assert child.session_id.endswith("/agx1")
    (main,) = [s for s in sessions if s.parent_session is None]
    (launch,) = [t for t in main.tool_calls if t.call_id == "toolu_A"]
    assert launch.child_session == child.session_id
