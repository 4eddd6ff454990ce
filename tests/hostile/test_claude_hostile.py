"""Hostile and damaged Claude Code journals, built in tmp_path, each with its exact
expected outcome. Every export here goes through the contract checklist too.

Most cases come from a review of the foundation: each one crashed the export, lost
records silently, or broke the trace before its fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.model import Category, Session

S = "11111111-2222-4333-8444-555555555555"


def rec(kind: str, uuid: str, second: int, **fields: Any) -> dict[str, Any]:
    record = {
        "type": kind,
        "uuid": uuid,
        "sessionId": S,
        "parentUuid": None,
        "timestamp": f"2026-01-01T00:00:{second:02d}.000Z",
    }
    record.update(fields)
    return record


def user(uuid: str, second: int, content: object, **fields: Any) -> dict[str, Any]:
    return rec("user", uuid, second, message={"role": "user", "content": content}, **fields)


def usage(prompt: int, output: int = 1) -> dict[str, int]:
    return {
        "input_tokens": 3,
        "cache_creation_input_tokens": 7,
        "cache_read_input_tokens": prompt - 10,
        "output_tokens": output,
    }


def assistant(
    uuid: str, second: int, mid: str, content: list[Any], use: object, **fields: Any
) -> dict[str, Any]:
    return rec(
        "assistant",
        uuid,
        second,
        message={"id": mid, "model": "claude-x", "content": content, "usage": use},
        **fields,
    )


BASE = [
    user("u1", 0, "hello"),
    assistant(
        "a1",
        1,
        "m1",
        [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "x"}}],
        usage(1000),
    ),
    user("u2", 2, [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * 4000}]),
    assistant("a2", 3, "m2", [{"type": "text", "text": "done"}], usage(2100)),
]


def write(path: Path, records: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def read(*paths: Path) -> tuple[list[Session], Diagnostics, list[str]]:
    diagnostics = Diagnostics()
    result = load(list(paths), diagnostics)
    return result.sessions, diagnostics, [str(f) for f in result.failures]


def test_wrong_shapes_at_every_level_cost_only_themselves(
    tmp_path: Path, export_trace: Any
) -> None:
    journal = write(
        tmp_path / "shapes.jsonl",
        [
            BASE[0],
            rec(["user"], "ux", 0),  # type as a list
            rec("system", "sx", 0, subtype={"x": 1}),  # subtype as a dict
            rec("user", "uy", 0, message=[1, 2]),  # message as a list
            rec("user", "uz", 0, message={"content": 42}),  # content as a number
            rec(
                "assistant",
                "az",
                0,
                message={
                    "id": "mz",
                    "content": 7,
                    "usage": {
                        "input_tokens": "5",
                        "cache_read_input_tokens": 1.5,
                        "cache_creation_input_tokens": -3,
                        "output_tokens": True,
                    },
                },
            ),
            rec(
                "assistant",
                "aw",
                0,
                message={
                    "id": "mw",
                    "content": [
                        {"type": ["tool_use"]},
                        {
                            "type": "tool_use",
                            "id": "deep",
                            "name": "X",
                            "input": {"a": json.loads("[" * 300 + "]" * 300)},
                        },
                    ],
                    "usage": usage(500),
                },
            ),
            rec(
                "system",
                "mc",
                0,
                subtype="microcompact_boundary",
                microcompactMetadata={"compactedToolIds": 7},
            ),
            assistant("huge", 0, "mh", [], {"input_tokens": 10**30, "output_tokens": 2**70}),
            *BASE[1:],
        ],
    )
    sessions, diagnostics, failures = read(journal)
    assert failures == []
    (session,) = sessions
    assert [r.id for r in session.responses] == ["mw", "m1", "m2"]
    assert diagnostics.warning_counts["bad-shape"] == 2  # the two unreadable user records
    assert diagnostics.warning_counts["bad-usage"] == 2  # each bad record's: mz's and mh's
    export_trace(journal)


def test_unknown_content_blocks_are_said_with_their_place(tmp_path: Path) -> None:
    """A content block of a type the adapter does not know (a server tool's result, a
    newer version's block) was dropped without a word: the context lost it and nothing
    said so. It is now a warning naming the block type and its path:line, and the blocks
    beside it are still read."""
    journal = write(
        tmp_path / "blocks.jsonl",
        [
            user("u1", 0, [{"type": "text", "text": "hello"}, {"type": "search_result"}]),
            assistant(
                "a1",
                1,
                "m1",
                [
                    {"type": "text", "text": "found"},
                    {"type": "code_execution_tool_result", "tool_use_id": "s1", "content": []},
                ],
                usage(1000),
            ),
        ],
    )
    sessions, diagnostics, failures = read(journal)
    assert failures == []
    (session,) = sessions
    assert [p.chars for p in session.prompts] == [5]
    assert [r.id for r in session.responses] == ["m1"]
    assert diagnostics.warning_counts["unknown-block"] == 2
    assert [str(w) for w in diagnostics.warnings if w.kind == "unknown-block"] == [
        f"{journal}:1: content block of type 'search_result' not recognised (not read)",
        f"{journal}:2: content block of type 'code_execution_tool_result' not recognised "
        "(not read)",
    ]


def test_one_crashing_group_does_not_cost_the_others(tmp_path: Path, monkeypatch: Any) -> None:
    from agent_profiler.adapters import claude_code

    good = write(tmp_path / "good.jsonl", BASE)
    other = tmp_path / "other"
    other.mkdir()
    bad = write(other / "bad.jsonl", [dict(r, sessionId="bad-session") for r in BASE])
    real = claude_code.read_group

    def explode(main: Path | None, *args: Any, **kwargs: Any) -> list[Session]:
        if main == bad:
            raise RuntimeError("boom")
        return real(main, *args, **kwargs)

    monkeypatch.setattr(claude_code, "read_group", explode)
    sessions, _, failures = read(good, bad)
    assert [s.session_id for s in sessions] == [S]
    assert failures == [
        f"{bad}: could not be read (RuntimeError: boom); please report this "
        "with the harness and its version"
    ]


def test_two_files_with_one_session_id_are_both_read(tmp_path: Path) -> None:
    first = write(tmp_path / "a.jsonl", BASE)
    second = write(tmp_path / "b.jsonl", BASE[:2])
    sessions, _, failures = read(first, second)
    assert failures == []
    assert [s.session_id for s in sessions] == [S, f"{S}#2"]
    assert [len(s.responses) for s in sessions] == [2, 1]


def test_missing_first_timestamp_and_other_formats(tmp_path: Path, export_trace: Any) -> None:
    records = [dict(r) for r in BASE]
    records[0]["timestamp"] = 1735689600000  # epoch ms: not ISO
    records[2]["timestamp"] = "2026-01-01T05:00:02+05:00"  # an offset, same instant
    journal = write(tmp_path / "times.jsonl", records)
    (session,), diagnostics, _ = read(journal)
    assert diagnostics.warning_counts["bad-timestamp"] == 1
    # the undated first record sits 1 ms before the first dated one, not in 1970
    assert session.start_ns == 1_767_225_601 * 10**9 - 1_000_000
    assert session.tool_calls[0].end_ns == 1_767_225_602 * 10**9
    export_trace(journal)


def test_timestamps_out_of_order_keep_cumulative_counters_rising(
    tmp_path: Path, export_trace: Any
) -> None:
    records = [dict(r) for r in BASE]
    records[1]["timestamp"] = "2026-01-01T00:00:05.000Z"
    records[3]["timestamp"] = "2026-01-01T00:00:01.000Z"
    export_trace(write(tmp_path / "backwards.jsonl", records))  # the checklist verifies


def test_duplicate_prompt_ids_keep_flows_paired(tmp_path: Path, export_trace: Any) -> None:
    journal = write(tmp_path / "dup.jsonl", [BASE[0], BASE[0], *BASE[1:]])
    exported = export_trace(journal)
    assert all(len(ends) == 2 for ends in exported.view.flows.values())


def test_lone_surrogate_escape_keeps_the_record(tmp_path: Path) -> None:
    records = [json.dumps(r) for r in BASE]
    records[2] = records[2].replace('"content": "xxxx', '"content": "\\ud83dxxxx', 1)
    (session,), diagnostics, _ = read(write(tmp_path / "emoji.jsonl", records))
    assert diagnostics.warning_total == 0
    assert session.tool_calls[0].result_chars == 4001
    snapshot = session.snapshots[-1]
    assert dict(snapshot.categories)[Category.RESULTS] == 1001


def test_summary_only_file_in_a_folder_is_not_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    write(folder / "stub.jsonl", [{"type": "summary", "summary": "A title", "leafUuid": "x"}])
    write(folder / "real.jsonl", BASE)
    sessions, diagnostics, failures = read(folder)
    assert failures == [] and len(sessions) == 1
    assert diagnostics.warning_counts["no-session"] == 1


def test_nested_subagent_follows_parent_agent_id(tmp_path: Path) -> None:
    main = write(
        tmp_path / f"{S}.jsonl",
        [
            BASE[0],
            assistant(
                "a1",
                1,
                "m1",
                [{"type": "tool_use", "id": "tA", "name": "Task", "input": {"prompt": "go"}}],
                usage(1000),
            ),
            user("u2", 9, [{"type": "tool_result", "tool_use_id": "tA", "content": "ok"}]),
        ],
    )
    folder = tmp_path / S / "subagents"
    folder.mkdir(parents=True)
    write(
        folder / "agent-aaa.jsonl",
        [
            user("x1", 2, "go", isSidechain=True, agentId="aaa"),
            assistant(
                "x2",
                3,
                "ma",
                [{"type": "tool_use", "id": "tB", "name": "Task", "input": {"prompt": "deeper"}}],
                usage(500),
                isSidechain=True,
                agentId="aaa",
            ),
            user(
                "x3",
                6,
                [{"type": "tool_result", "tool_use_id": "tB", "content": "ok"}],
                isSidechain=True,
                agentId="aaa",
            ),
        ],
    )
    (folder / "agent-aaa.meta.json").write_text(json.dumps({"toolUseId": "tA"}))
    write(
        folder / "agent-bbb.jsonl",
        [
            user("y1", 4, "deeper", isSidechain=True, agentId="bbb"),
            assistant(
                "y2",
                5,
                "mb",
                [{"type": "text", "text": "done"}],
                usage(300),
                isSidechain=True,
                agentId="bbb",
            ),
        ],
    )
    (folder / "agent-bbb.meta.json").write_text(
        json.dumps({"toolUseId": "tB", "parentAgentId": "aaa"})
    )
    sessions, _, _ = read(main)
    found = {s.session_id: s for s in sessions}
    assert found[f"{S}/bbb"].parent_session == f"{S}/aaa"
    assert found[f"{S}/aaa"].tool_calls[0].child_session == f"{S}/bbb"
    assert found[S].tool_calls[0].child_session == f"{S}/aaa"


def frame(**fields: Any) -> dict[str, Any]:
    return {"session_id": "s1", **fields}


def stream_assistant(
    mid: str, text: str, parent: str | None = None, session: str = "s1"
) -> dict[str, Any]:
    return {
        "type": "assistant",
        "session_id": session,
        "parent_tool_use_id": parent,
        "message": {
            "id": mid,
            "model": "claude-x",
            "usage": usage(200),
            "content": [{"type": "text", "text": text}],
        },
    }


def test_stream_json_runs_threads_and_hooks(tmp_path: Path, export_trace: Any) -> None:
    hook = json.dumps({"hookSpecificOutput": {"additionalContext": "y" * 4000}})
    journal = write(
        tmp_path / "runs.jsonl",
        [
            frame(type="system", subtype="init", model="claude-x"),
            stream_assistant("m1", "hi"),
            frame(type="result", subtype="success"),
            # the next run's SessionStart hook comes before its init
            {"type": "system", "subtype": "hook_response", "session_id": "s1", "output": hook},
            frame(type="system", subtype="init", model="claude-x"),  # same session id again
            {
                "type": "assistant",
                "session_id": "s1",
                "parent_tool_use_id": None,
                "message": {
                    "id": "m2",
                    "model": "claude-x",
                    "usage": usage(5000),
                    "content": [
                        {"type": "tool_use", "id": "tA", "name": "Agent", "input": {"prompt": "p"}}
                    ],
                },
            },
            stream_assistant("m3", "a"),
            stream_assistant("m3", "b", parent="tA"),  # same id on another thread: one call
            stream_assistant("c1", "child", parent="tA"),
        ],
    )
    sessions, _, _ = read(journal)
    found = {s.session_id: s for s in sessions}
    assert set(found) == {"s1", "s1#2", "s1#2/tA"}
    assert dict(found["s1#2"].snapshots[0].categories)[Category.ENVIRONMENT] == 1000
    assert Category.ENVIRONMENT not in dict(found["s1"].snapshots[-1].categories)
    assert [r.id for r in found["s1#2"].responses] == ["m2", "m3"]
    assert [r.id for r in found["s1#2/tA"].responses] == ["c1"]
    assert found["s1#2/tA"].parent_session == "s1#2"
    export_trace(journal)
