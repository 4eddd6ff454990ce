"""The Gemini CLI adapter on every session of the shared corpus (`<repo>/../shared`, skipped
when absent) and on the copies in tests/data/journals/gemini-cli. Expected requests come from a
plain json-module reading of each file (FORMATS-gemini-opencode.md §1.15), not from the
adapter: one request per `gemini` record with a reported `tokens.input`, last version per id."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.adapters import gemini_cli
from agent_profiler.cli import app
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.discover import discover
from agent_profiler.loader import load
from agent_profiler.model import Category, Harness, Stage
from shared_paths import CORPUS, TESTS
from traceview import TraceView, load_trace

DATA = TESTS / "data" / "journals" / "gemini-cli"
SHARED = CORPUS / "gemini-cli"
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason=f"shared corpus not found at {SHARED} (outside the repository)"
)
runner = CliRunner()
ORPHAN = "session-2026-02-25T12-46-7740a707.json"  # its parent holds credentials: not copied


def sessions_in(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*") if p.suffix in {".json", ".jsonl"} and p.name != "logs.json"
    )


def raw_requests(path: Path) -> dict[str, int]:
    """Message id → reported prompt (`tokens.input`, cached included), by plain replay."""
    text = path.read_text(encoding="utf-8")
    final: dict[str, dict[str, Any]] = {}
    if path.suffix == ".jsonl":
        for line in text.split("\n"):
            if not line.strip():
                continue
            value = json.loads(line)
            if "$set" in value:
                for message in value["$set"].get("messages", []):
                    final[message["id"]] = message
            elif "id" in value:
                final[value["id"]] = value
    else:
        for message in json.loads(text)["messages"]:
            final[message["id"]] = message
    return {
        message_id: m["tokens"]["input"]
        for message_id, m in final.items()
        if m.get("type") == "gemini"
        and isinstance(m.get("tokens"), dict)
        and m["tokens"].get("input", 0) > 0
    }


def responses_by_session(view: TraceView) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {}
    for capture in view.captures():
        profile = view.profile_of(capture.uuid)
        assert profile is not None
        found[profile.args["session_id"]] = {
            s.args["response_id"]: s.args["context_tokens"]
            for s in view.slices_of_kind("assistant-message", capture.uuid)
            if s.args.get("usage_known")
            is not False  # all-zero tokens: tests/adapters/test_zero_usage.py
        }
    return found


def own_id(path: Path) -> str:
    """The session id the adapter gives a file, read from the file itself."""
    text = path.read_text(encoding="utf-8")
    header = json.loads(text.split("\n", 1)[0]) if path.suffix == ".jsonl" else json.loads(text)
    session_id = header["sessionId"]
    if path.parent.parent.name == "chats":  # ≥0.37 nested subagent
        return f"{path.parent.name}/{session_id}"
    first = next((m for m in header.get("messages", []) if m.get("type") == "user"), {})
    content = first.get("content", "")
    prompt = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
    if header.get("kind") != "main" and prompt.lstrip().startswith("Your task is to"):
        return f"{session_id}/{path.name.split('.')[0]}"  # ≤0.35 sibling subagent
    return session_id


# --------------------------------------------------------------------------- corpus


@pytest.mark.slow  # corpus-wide
@needs_shared
def test_every_corpus_session_has_one_response_per_reported_request(
    export_trace: Any, tmp_path: Path
) -> None:
    # GIVEN every Gemini CLI session file of the corpus, WHEN exported together (the
    # subagent whose parent was not published separately: a trace with a dangling
    # parent_session fails the contract checklist on purpose),
    files = sessions_in(SHARED)
    orphan = [p for p in files if p.name == ORPHAN]
    exported = export_trace(*[p for p in files if p.name != ORPHAN])
    found = responses_by_session(exported.view)
    alone = runner.invoke(app, ["export", *map(str, orphan), "-o", str(tmp_path / "o.pftrace")])
    assert alone.exit_code == 0 and "parent-not-exported: 1" in alone.stderr
    found.update(responses_by_session(load_trace(tmp_path / "o.pftrace")))
    assert len(files) == 15
    total = 0
    for path in files:
        expected = raw_requests(path)
        total += len(expected)
        session = found.get(own_id(path), {})
        # THEN each session has exactly its requests, each with the reported prompt size.
        assert session == expected, path
    assert total == 219  # = the token records of corpus/SOURCES.md, all-zero ones left out
    assert "Traceback" not in exported.stderr


@pytest.mark.slow  # corpus-wide
@needs_shared
def test_corpus_categories_additions_and_subagent_links(export_trace: Any) -> None:
    view = export_trace(*[p for p in sessions_in(SHARED) if p.name != ORPHAN]).view
    sessions = {view.profile_of(c.uuid).args["session_id"]: c.uuid for c in view.captures()}  # type: ignore[union-attr]
    parent = sessions["01b2c62e-cba4-4088-8755-b240504efb70"]
    calls = {s.args["call_id"]: s for s in view.slices_of_kind("tool-execution", parent)}
    # The two cli_help calls launched the two nested subagents (time window, ≤0.38).
    launched = {s.args.get("child_session") for s in calls.values() if s.name == "cli_help"}
    assert launched == {
        "01b2c62e-cba4-4088-8755-b240504efb70/ngzcxj",
        "01b2c62e-cba4-4088-8755-b240504efb70/shcg5o",
    }
    for child in ("ngzcxj", "shcg5o"):
        profile = view.profile_of(sessions[f"01b2c62e-cba4-4088-8755-b240504efb70/{child}"])
        assert profile is not None
        assert profile.args["parent_session"] == "01b2c62e-cba4-4088-8755-b240504efb70"
    # Categories from what the journal holds; the head it lacks is the inferred head.
    last = view.snapshots(parent)[-1].args["context"]
    assert {"prompts", "assistant", "results", "unattributed"} <= set(last["categories"])
    # Largest additions: non-baseline changes whose source_id is a tool call of the session.
    linked = [
        change
        for snapshot in view.snapshots(parent)
        if not snapshot.args["context"]["baseline"]
        for change in snapshot.args["context"]["changes"]
        if change["delta_tokens"] > 0 and change.get("source_id", "") in calls
    ]
    assert linked and max(c["delta_tokens"] for c in linked) > 1_000


@needs_shared
def test_the_044_session_context_turn_is_environment_and_rules() -> None:
    path = SHARED / "damini-ai-a2a-jsonl/m09-tapan/chats/session-2026-07-05T12-27-a2a-serv.jsonl"
    group = gemini_cli.plan([gemini_cli_sniffed(path)])[0]
    (session,) = gemini_cli.read(group, Diagnostics())
    categories = dict(session.snapshots[-1].categories)
    assert categories[Category.ENVIRONMENT] > 0 and categories[Category.RULES] > 0
    assert not session.responses and not session.prompts


def gemini_cli_sniffed(path: Path) -> Any:
    from agent_profiler.adapters import SniffedFile

    return SniffedFile(path, [])


# --------------------------------------------------------------------------- local copies


def read_one(path: Path) -> Any:
    sessions = gemini_cli.read(gemini_cli.plan([gemini_cli_sniffed(path)])[0], Diagnostics())
    assert len(sessions) == 1
    return sessions[0]


def test_usage_semantics_input_includes_cached() -> None:
    session = read_one(DATA / "entire-ab-2b9748b105-0_session.json")
    raw = {
        m["id"]: m
        for m in json.loads((DATA / "entire-ab-2b9748b105-0_session.json").read_text())["messages"]
    }
    assert session.harness is Harness.GEMINI_CLI
    for response in session.responses:
        tokens = raw[response.id]["tokens"]
        assert response.usage.prompt_tokens == tokens["input"]
        assert response.usage.cache_read_tokens == tokens["cached"] <= tokens["input"]
        assert response.usage.output_tokens == tokens["output"] + tokens["thoughts"]
        assert response.usage.reasoning_tokens == tokens["thoughts"]
    # Its one all-zero record only holds the calls of the response before it, written
    # after an update notice: no request at all (test_gemini_late_calls.py).
    assert not session.unmetered_responses and not session.failed_requests
    assert session.window_tokens == 1_048_576 and session.window_source.startswith("model:")


def test_tool_calls_carry_results_and_durations() -> None:
    path = DATA / "entire-ab-2b9748b105-0_session.json"
    session = read_one(path)
    raw_calls = [
        c for m in json.loads(path.read_text())["messages"] for c in m.get("toolCalls", [])
    ]
    assert [t.call_id for t in session.tool_calls] == [c["id"] for c in raw_calls]
    for tool, raw in zip(session.tool_calls, raw_calls, strict=True):
        assert tool.end_ns >= tool.start_ns and not tool.incomplete
        assert tool.result_chars == len(raw["result"][0]["functionResponse"]["response"]["output"])
        assert tool.is_error == (raw["status"] != "success")


def test_cancelled_calls_are_errors_of_the_responses_that_made_them() -> None:
    path = DATA / "tp-tutor-0.39.1-jsonl/anthonyguera/chats/session-2026-04-24T23-16-c8b2cbd9.jsonl"
    session = read_one(path)
    # The two usage-less records only hold cancelled calls written after "Request
    # cancelled.": no requests of their own.
    assert len(session.responses) == 5 and not session.failed_requests
    statuses = Counter(t.is_error for t in session.tool_calls)
    assert statuses == Counter({True: 2, False: 1})
    assert dict(session.facts)["recording_format"] == "jsonl"


def test_the_first_format_and_a_warning_only_file() -> None:
    session = read_one(DATA / "magi-ui-0.4_session-2025-09-10T04-48-e7b3ecf2.json")
    assert len(session.responses) == 3 and len(session.prompts) == 3
    assert session.project is None  # a sha256 project dir says nothing
    warning = read_one(DATA / "entire-ec-38b74f08e3-2_session-warning-only.json")
    assert not warning.responses and [m.kind for m in warning.markers] == ["warning"]


def test_jsonl_replay_last_version_wins_checkpoint_and_rewind(tmp_path: Path) -> None:
    header = {"sessionId": "s1", "projectHash": "ab", "startTime": "2026-01-01T00:00:00.000Z"}

    def gemini(mid: str, ts: str, prompt: int, **extra: Any) -> dict[str, Any]:
        tokens = {"input": prompt, "output": 5, "cached": 0, "thoughts": 0, "tool": 0}
        return {
            "id": mid,
            "timestamp": ts,
            "type": "gemini",
            "content": "ok",
            "tokens": tokens,
            "model": "gemini-2.5-pro",
            **extra,
        }

    user = {
        "id": "u1",
        "timestamp": "2026-01-01T00:00:01.000Z",
        "type": "user",
        "content": [{"text": "x" * 400}],
    }
    lines = [
        header,
        user,
        gemini("g1", "2026-01-01T00:00:02.000Z", 0),  # streaming: no usage yet
        {"$set": {"lastUpdated": "2026-01-01T00:00:02.000Z"}},
        gemini("g1", "2026-01-01T00:00:02.000Z", 1_000),  # the same id again: last wins
        gemini("g2", "2026-01-01T00:00:03.000Z", 1_200),
        {
            "$set": {
                "messages": [
                    user,
                    {
                        "id": "s",
                        "timestamp": "2026-01-01T00:00:04.000Z",
                        "type": "user",
                        "content": "summary " * 10,
                    },
                ]
            }
        },
        gemini("g3", "2026-01-01T00:00:05.000Z", 300),
        {"$rewindTo": "g3"},
    ]
    path = tmp_path / "session-2026-01-01T00-00-s1.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    session = read_one(path)
    assert [(r.id, r.usage.prompt_tokens) for r in session.responses] == [
        ("g1", 1_000),
        ("g2", 1_200),
        ("g3", 300),
    ]
    assert [c.trigger for c in session.compactions] == ["history replaced ($set.messages)"]
    assert [m.kind for m in session.markers] == ["rewind"]


def test_a_cut_short_document_keeps_its_complete_messages(tmp_path: Path) -> None:
    data = (DATA / "entire-ab-2b9748b105-0_session.json").read_bytes()
    path = tmp_path / "session-cut.json"
    path.write_bytes(data[: len(data) // 2])
    diagnostics = Diagnostics()
    sessions = gemini_cli.read(gemini_cli.plan([gemini_cli_sniffed(path)])[0], diagnostics)
    assert diagnostics.warning_counts == Counter({"truncated-document": 1})
    assert 0 < len(sessions[0].responses) < 10


def test_discover_honours_gemini_cli_home(tmp_path: Path) -> None:
    chats = tmp_path / ".gemini" / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    (chats.parent / ".project_root").write_text("/work/proj\n")
    source = DATA / "entire-ab-2b9748b105-0_session.json"
    (chats / "session-2026-01-15T20-51-f7633853.json").write_bytes(source.read_bytes())
    (chats / "session-2026-01-15T20-51-f7633853.jsonl").write_text(
        json.dumps(
            {"sessionId": "f7633853", "projectHash": "x", "startTime": "2026-01-16T00:00:00Z"}
        )
        + "\n"
    )
    found = discover(harness=Harness.GEMINI_CLI, env={"GEMINI_CLI_HOME": str(tmp_path)})
    # The legacy .json beside its resumed .jsonl is not listed twice.
    assert [(j.path.name, j.project) for j in found] == [
        ("session-2026-01-15T20-51-f7633853.jsonl", "/work/proj")
    ]


def test_summary_report_and_export_of_a_folder(tmp_path: Path, export_trace: Any) -> None:
    folder = DATA / "expenses-tracker-0.37.1-subagents"
    exported = export_trace(folder)
    assert len(exported.view.captures()) == 3
    for slice_ in exported.view.slices_of_kind("assistant-message"):
        assert slice_.category == "agentprof.activity"
    summary = runner.invoke(app, ["summary", str(folder), "--json"])
    assert summary.exit_code == 0, summary.stderr
    rows = json.loads(summary.stdout)
    assert sorted(r["calls"] for r in rows) == [5, 11, 58]
    report = runner.invoke(app, ["report", str(folder), "-o", str(tmp_path / "r.html")])
    assert report.exit_code == 0, report.stderr
    assert "Gemini CLI" in (tmp_path / "r.html").read_text()


@needs_shared
def test_a_folder_walk_finds_every_session_document() -> None:
    # Copies named anything (entire-*.json) are recognised by content, not only session-*.json.
    result = load([SHARED], Diagnostics())
    assert not result.failures
    assert len(result.sessions) == 14  # 15 files; the header-only one holds no session
    assert {s.harness for s in result.sessions} == {Harness.GEMINI_CLI}


def test_history_sync_under_new_ids_is_not_a_compaction(tmp_path: Path) -> None:
    # ≥0.44 history sync may re-write the same turns with hex ids: no new prompts, no
    # requests without usage, no compaction; a shorter list with a <state_snapshot> is one.
    def line(value: dict[str, Any]) -> str:
        return json.dumps(value) + "\n"

    user = {"id": "u1", "timestamp": "2026-01-01T00:00:01.000Z", "type": "user", "content": "hi"}
    model = {
        "id": "g1",
        "timestamp": "2026-01-01T00:00:02.000Z",
        "type": "gemini",
        "content": "hello " * 50,
        "model": "gemini-2.5-pro",
        "tokens": {"input": 900, "output": 5, "cached": 0, "thoughts": 0, "tool": 0},
    }
    resync = [{**user, "id": "a" * 32}, {**model, "id": "b" * 32, "tokens": None}]
    snapshot = {**user, "id": "c" * 32, "content": "<state_snapshot>" + "s" * 80}
    path = tmp_path / "session-2026-01-01T00-00-s2.jsonl"
    path.write_text(
        line({"sessionId": "s2", "projectHash": "ab", "startTime": "2026-01-01T00:00:00Z"})
        + line(user)
        + line(model)
        + line({"$set": {"messages": resync}})
        + line({"$set": {"messages": [snapshot]}})
    )
    session = read_one(path)
    assert len(session.prompts) == 1 and not session.failed_requests
    assert [c.trigger for c in session.compactions] == ["history replaced ($set.messages)"]
    after = session.snapshots[-1]
    assert after.stage is Stage.POST_COMPACTION
    # the summary replaces the conversation; the inferred head (system, tools) stays
    assert dict(after.categories) == {Category.SUMMARIES: 24, Category.UNATTRIBUTED: 900 - 1}
