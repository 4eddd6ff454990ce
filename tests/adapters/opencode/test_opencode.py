"""The OpenCode adapter on every session of the shared corpus (`<repo>/../shared`, skipped when
absent: one SQLite database and four `opencode export` documents) and on the copies in
tests/data/journals/opencode, re-laid out as the JSON storage folder. Expected requests come
from a plain json/sqlite3 reading of each file (FORMATS-gemini-opencode.md §2.6), not from the
adapter: one request per `step-finish` with a reported prompt (input + cache.read + cache.write)."""

from __future__ import annotations

import gzip
import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.adapters import SniffedFile, opencode
from agent_profiler.cli import app
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.discover import discover
from agent_profiler.model import Harness
from shared_paths import CORPUS, TESTS
from traceview import TraceView, load_trace

DATA = TESTS / "data" / "journals" / "opencode"
EXPLORE = DATA / "ses_2bef25635ffe8EzID0I1Oeymal.export.json"
DOCS_CHILD = DATA / "ses_fd4c895f0ffe6gKgxHiEgiQCcd.export.json"
SHARED = CORPUS / "opencode"
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason=f"shared corpus not found at {SHARED} (outside the repository)"
)
runner = CliRunner()


def prompt_of(tokens: dict[str, Any] | None) -> int:
    tokens = tokens or {}
    cache = tokens.get("cache") or {}
    return int(tokens.get("input", 0) + cache.get("read", 0) + cache.get("write", 0))


def load_export(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if path.suffix == ".gz" else data)  # type: ignore[no-any-return]


def raw_db(path: Path) -> dict[str, list[tuple[dict[str, Any], list[dict[str, Any]]]]]:
    # immutable: the test must not create -wal/-shm beside the corpus copy either
    connection = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    sessions: dict[str, list[tuple[dict[str, Any], list[dict[str, Any]]]]] = {}
    parts: dict[str, list[dict[str, Any]]] = {}
    for message_id, data in connection.execute("SELECT message_id, data FROM part ORDER BY id"):
        parts.setdefault(message_id, []).append(json.loads(data))
    for message_id, session_id, data in connection.execute(
        "SELECT id, session_id, data FROM message ORDER BY time_created, id"
    ):
        sessions.setdefault(session_id, []).append((json.loads(data), parts.get(message_id, [])))
    connection.close()
    return sessions


def raw_requests(messages: list[tuple[dict[str, Any], list[dict[str, Any]]]]) -> Counter[int]:
    """Reported prompt sizes of a session's requests (a multiset)."""
    sizes: Counter[int] = Counter()
    for info, parts in messages:
        if info.get("role") != "assistant":
            continue
        finishes = [p for p in parts if p.get("type") == "step-finish"]
        for tokens in [p.get("tokens") for p in finishes] if finishes else [info.get("tokens")]:
            if prompt_of(tokens) > 0:
                sizes[prompt_of(tokens)] += 1
    return sizes


def corpus_sessions() -> dict[str, Counter[int]]:
    expected: dict[str, Counter[int]] = {}
    for session_id, messages in raw_db(SHARED / "monkeycode-v1.16.0-sqlite/opencode.db").items():
        expected[session_id] = raw_requests(messages)
    for path in sorted(SHARED.rglob("*.export.json*")):
        document = load_export(path)
        pairs = [(m["info"], m["parts"]) for m in document["messages"]]
        expected[document["info"]["id"]] = raw_requests(pairs)
    return expected


def requests_in(view: TraceView) -> dict[str, Counter[int]]:
    found: dict[str, Counter[int]] = {}
    for capture in view.captures():
        profile = view.profile_of(capture.uuid)
        assert profile is not None
        sizes = Counter(
            s.args["context_tokens"]
            for kind in ("assistant-message", "compaction-response")
            for s in view.slices_of_kind(kind, capture.uuid)
            if s.args.get("usage_known")
            is not False  # all-zero usage: tests/adapters/test_zero_usage.py
        )
        found[profile.args["session_id"]] = sizes
    return found


# --------------------------------------------------------------------------- corpus


@pytest.mark.slow  # corpus-wide
@needs_shared
def test_every_corpus_session_has_one_response_per_reported_request(
    export_trace: Any, tmp_path: Path
) -> None:
    # GIVEN the database and the exports (the explore child's parent was not published, so
    # it goes alone: a dangling parent_session fails the contract checklist on purpose),
    orphan = SHARED / "session-bridge-1.3.7-explore-subagent"
    linked = [p for p in sorted(SHARED.iterdir()) if p != orphan]
    exported = export_trace(*linked)
    found = requests_in(exported.view)
    alone = runner.invoke(app, ["export", str(orphan), "-o", str(tmp_path / "o.pftrace")])
    assert alone.exit_code == 0 and "parent-not-exported: 1" in alone.stderr
    found.update(requests_in(load_trace(tmp_path / "o.pftrace")))
    expected = corpus_sessions()
    # THEN each session holds exactly its requests, each with the reported prompt size.
    assert found == expected
    assert sum(sum(c.values()) for c in expected.values()) == 26 + 69 + 3 + 146 + 4
    # AND no sidecar file was created beside the corpus database.
    assert sorted(p.name for p in (SHARED / "monkeycode-v1.16.0-sqlite").iterdir()) == [
        "opencode.db"
    ]


@needs_shared
def test_corpus_subagent_link_compaction_and_additions(export_trace: Any) -> None:
    view = export_trace(SHARED / "dhc-dashboard-1.18.21-task-subagent").view
    captures = {view.profile_of(c.uuid).args["session_id"]: c.uuid for c in view.captures()}  # type: ignore[union-attr]
    parent, child = "ses_fd4e13d58ffetoIsfha64XDWNj", "ses_fd4c895f0ffe6gKgxHiEgiQCcd"
    tasks = [s for s in view.slices_of_kind("tool-execution", captures[parent]) if s.name == "task"]
    assert len(tasks) == 4 and sum(s.args["is_error"] for s in tasks) == 2
    # Both completed tasks name their child; the first one's child was not exported: its
    # id stays on the call (no flow), counted on the parent's profile
    assert [s.args.get("child_session") for s in tasks if s.args.get("child_session")] == [
        "ses_fd4d960f6ffeE5qGihIRAIrfoz",
        child,
    ]
    assert view.profile_of(captures[parent]).args["unavailable_child_sessions"] == 1  # type: ignore[union-attr]
    assert view.profile_of(captures[child]).args["parent_session"] == parent  # type: ignore[union-attr]
    calls = {s.args["call_id"] for s in view.slices_of_kind("tool-execution", captures[parent])}
    linked = [
        change
        for snapshot in view.snapshots(captures[parent])
        if not snapshot.args["context"]["baseline"]
        for change in snapshot.args["context"]["changes"]
        if change["delta_tokens"] > 0 and change.get("source_id", "") in calls
    ]
    assert linked
    categories = view.snapshots(captures[parent])[-1].args["context"]["categories"]
    assert {"prompts", "assistant", "results", "unattributed"} <= set(categories)

    compacted = export_trace(SHARED / "session-bridge-1.4.3-compaction").view
    (compaction,) = compacted.slices_of_kind("compaction")
    assert compaction.args["trigger"] == "auto"
    (summary_request,) = compacted.slices_of_kind("compaction-response")
    assert (
        summary_request.args["context_tokens"]
        == 98_608
        + summary_request.args["cache_read_tokens"]
        + summary_request.args["cache_write_tokens"]
    )
    after = compaction.args["context"]
    assert after["stage"] == "post-compaction" and "summaries" in after["categories"]


@needs_shared
def test_the_database_reads_the_same_as_its_rows() -> None:
    path = SHARED / "monkeycode-v1.16.0-sqlite/opencode.db"
    (session,) = opencode.read(opencode.plan([SniffedFile(path, [])])[0], Diagnostics())
    assert session.harness is Harness.OPENCODE and session.harness_version == "1.16.0"
    assert session.provider == "monkeycode-ai" and len(session.tool_calls) == 21
    # The last assistant message is still streaming: no step-finish, no usage.
    assert len(session.failed_requests) == 1


# --------------------------------------------------------------------------- storage layout


def as_storage(export: Path, root: Path) -> Path:
    """Lay an export out as OpenCode ≤1.1 storage: session/<project>/, message/<ses>/,
    part/<msg>/ (one JSON file per object, ids stripped as OpenCode does not)."""
    document = load_export(export)
    info = document["info"]
    storage = root / "storage"
    (storage / "session" / "proj").mkdir(parents=True, exist_ok=True)
    (storage / "session" / "proj" / f"{info['id']}.json").write_text(json.dumps(info, indent=2))
    for message in document["messages"]:
        m = message["info"]
        folder = storage / "message" / info["id"]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{m['id']}.json").write_text(json.dumps(m, indent=2))
        for part in message["parts"]:
            parts = storage / "part" / m["id"]
            parts.mkdir(parents=True, exist_ok=True)
            (parts / f"{part['id']}.json").write_text(json.dumps(part, indent=2))
    return storage


def export_child(path: Path, out: Path) -> TraceView:
    """Export a subagent read without its parent (not through `export_trace`: the
    checklist rejects the dangling parent_session on purpose)."""
    result = runner.invoke(app, ["export", str(path), "-o", str(out)])
    assert result.exit_code == 0 and "parent-not-exported: 1" in result.stderr, result.stderr
    return load_trace(out)


def test_the_storage_folder_reads_like_the_export(tmp_path: Path) -> None:
    storage = as_storage(DOCS_CHILD, tmp_path)
    from_storage = requests_in(export_child(storage, tmp_path / "a.pftrace"))
    from_export = requests_in(export_child(DOCS_CHILD, tmp_path / "b.pftrace"))
    pairs = [(m["info"], m["parts"]) for m in load_export(DOCS_CHILD)["messages"]]
    assert from_storage == from_export == {"ses_fd4c895f0ffe6gKgxHiEgiQCcd": raw_requests(pairs)}
    # One session file pointed at directly reads that session from its storage folder.
    (one,) = storage.glob("session/proj/ses_*.json")
    assert requests_in(export_child(one, tmp_path / "c.pftrace")) == from_export


def test_usage_semantics_input_excludes_cache() -> None:
    (session,) = opencode.read(opencode.plan([SniffedFile(EXPLORE, [])])[0], Diagnostics())
    messages = {m["info"]["id"]: m["info"] for m in load_export(EXPLORE)["messages"]}
    for response in session.responses:
        tokens = messages[response.id]["tokens"]
        assert response.usage.input_tokens == tokens["input"]
        assert response.usage.prompt_tokens == prompt_of(tokens)
        assert response.usage.reasoning_tokens == tokens["reasoning"]
        # the whole completion: total − prompt (reasoning beside or inside output)
        assert response.usage.output_tokens == tokens["total"] - prompt_of(tokens)
    assert session.parent_session == "ses_2bef27598ffe7m6Lx2BIiN92bh"
    assert session.prompts[0].source == "agent"
    assert all(t.end_ns >= t.start_ns for t in session.tool_calls)


def test_discover_honours_xdg_data_home(tmp_path: Path) -> None:
    as_storage(EXPLORE, tmp_path / "opencode")
    found = discover(harness=Harness.OPENCODE, env={"XDG_DATA_HOME": str(tmp_path)})
    assert [j.path.name for j in found] == ["ses_2bef25635ffe8EzID0I1Oeymal.json"]
    database = tmp_path / "opencode" / "opencode.db"
    connection = sqlite3.connect(database)
    connection.execute("CREATE TABLE session (id TEXT)")  # a database, not an empty file
    connection.commit()
    connection.close()
    found = discover(harness=Harness.OPENCODE, env={"XDG_DATA_HOME": str(tmp_path)})
    assert [j.path.name for j in found] == ["opencode.db"]


def test_summary_and_report(tmp_path: Path) -> None:
    summary = runner.invoke(app, ["summary", str(DOCS_CHILD), "--json"])
    assert summary.exit_code == 0, summary.stderr
    (row,) = json.loads(summary.stdout)
    assert row["harness"] == "opencode" and row["calls"] == 4
    report = runner.invoke(app, ["report", str(DOCS_CHILD), "-o", str(tmp_path / "r.html")])
    assert report.exit_code == 0, report.stderr
    assert "OpenCode" in (tmp_path / "r.html").read_text()
