"""OpenCode 2.x (≥2.0.3) databases: messages in `session_message` (one row per message, its
`data` the message without `id` and `type`), sessions in `session` or `session_v2`, read
into the 1.x shape (`adapters/opencode_v2.py`). No real 2.x database is in the corpus: each
test builds a small `opencode.db` at run time with the tables as OpenCode's source declares
them (anomalyco/opencode `packages/core/src/session/sql.ts`; the 2.0.25 `session_v2` layout),
and rows shaped as its `SessionMessage` schema and projector write them."""

from __future__ import annotations

import base64
import copy
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters import opencode_storage as storage
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.model import Category, Session
from rules_spy import Added, by_id, spy
from samples import read

T0 = 1_790_000_000_000  # epoch ms
MS = 1_000_000

SESSION_COLUMNS = (
    "`id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text, `parent_id` text,"
    " `slug` text NOT NULL, `directory` text NOT NULL, `path` text, `title` text,"
    " `version` text NOT NULL, `metadata` text, `cost` real DEFAULT 0 NOT NULL,"
    " `tokens_input` integer DEFAULT 0 NOT NULL, `tokens_output` integer DEFAULT 0 NOT NULL,"
    " `agent` text, `model` text, `time_created` integer NOT NULL,"
    " `time_updated` integer NOT NULL"
)


def build(
    path: Path,
    rows: dict[str, list[tuple[str, dict[str, Any] | str]]],
    *,
    table: str = "session",
    v1: bool = True,
    session_rows: bool = True,
    message_columns: str = "`data` text NOT NULL, `seq` integer NOT NULL",
) -> Path:
    """A database with the session table `table` and `session_message`: for each session
    id, its rows (type, data) in order (`seq` 0, 1, …), each created a second apart."""
    connection = sqlite3.connect(path)
    connection.execute(f"CREATE TABLE `{table}` ({SESSION_COLUMNS})")
    if v1:  # 1.x tables, still there after the upgrade
        if table != "session":
            connection.execute(f"CREATE TABLE `session` ({SESSION_COLUMNS})")
        connection.execute(
            "CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL,"
            " `time_created` integer NOT NULL, `time_updated` integer NOT NULL,"
            " `data` text NOT NULL)"
        )
        connection.execute(
            "CREATE TABLE `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL,"
            " `session_id` text NOT NULL, `time_created` integer NOT NULL,"
            " `time_updated` integer NOT NULL, `data` text NOT NULL)"
        )
    connection.execute(
        "CREATE TABLE `session_message` (`id` text PRIMARY KEY, `session_id` text NOT NULL,"
        " `type` text NOT NULL, `time_created` integer NOT NULL,"
        f" `time_updated` integer NOT NULL, {message_columns})"
    )
    for number, (session_id, messages) in enumerate(rows.items()):
        if session_rows:
            connection.execute(
                f"INSERT INTO `{table}` (id, project_id, slug, directory, title, version, agent,"
                " model, time_created, time_updated) VALUES (?, 'global', ?, '/home/u/proj',"
                " ?, '2.0.12', 'build', ?, ?, ?)",
                (
                    session_id,
                    f"slug-{number}",
                    f"title {number}",
                    json.dumps({"id": "claude-sonnet-4-5", "providerID": "anthropic"}),
                    T0,
                    T0 + 60_000,
                ),
            )
        for seq, (kind, data) in enumerate(messages):
            created = T0 + 1000 * (seq + 1)
            text = data if isinstance(data, str) else json.dumps(data)
            names = "id, session_id, type, time_created, time_updated, seq"
            values: tuple[Any, ...] = (f"msg_{session_id}_{seq}", session_id, kind, created)
            values += (created + 500, seq)
            if "`data`" in message_columns:
                names, values = names + ", data", (*values, text)
            marks = ", ".join("?" * len(values))
            connection.execute(f"INSERT INTO session_message ({names}) VALUES ({marks})", values)
    connection.commit()
    connection.close()
    return path


def at(seq: int) -> int:
    return T0 + 1000 * (seq + 1)


def tokens(fresh: int, output: int, read: int = 0, write: int = 0) -> dict[str, Any]:
    return {
        "input": fresh,
        "output": output,
        "reasoning": 0,
        "cache": {"read": read, "write": write},
    }


def assistant(seq: int, content: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "time": {"created": at(seq), "completed": at(seq) + 400},
        "agent": "build",
        "model": {"id": "claude-sonnet-4-5", "providerID": "anthropic"},
        "content": content,
        "finish": "stop",
        **extra,
    }


PROMPT = "Read README.md and say what the project does."
SYSTEM = "<system-reminder>Plan mode is active.</system-reminder>"
OUTPUT = "# proj\nA small tool that profiles coding agents.\n"
ANSWER = "It profiles coding agents."

# user, a context update, a step that reads a file, a step that answers; markers between.
CONVERSATION: list[tuple[str, dict[str, Any] | str]] = [
    ("user", {"text": PROMPT, "time": {"created": at(0)}}),
    ("agent-switched", {"agent": "plan", "time": {"created": at(1)}}),
    ("system", {"text": SYSTEM, "time": {"created": at(2)}}),
    (
        "assistant",
        assistant(
            3,
            [
                {"type": "reasoning", "id": "r1", "text": "I should read it."},
                {
                    "type": "tool",
                    "id": "call_1",
                    "name": "read",
                    "state": {
                        "status": "completed",
                        "input": {"filePath": "/home/u/proj/README.md"},
                        "content": [{"type": "text", "text": OUTPUT}],
                    },
                    "time": {"created": at(3) + 100, "ran": at(3) + 110, "completed": at(3) + 300},
                },
            ],
            finish="tool-calls",
            cost=0.01,
            tokens=tokens(700, 40, read=12000, write=300),
        ),
    ),
    ("assistant", assistant(4, [{"type": "text", "id": "t1", "text": ANSWER}], cost=0.002)),
    ("model-switched", {"model": {"id": "gpt-5.2", "providerID": "openai"}, "time": {}}),
    ("idle", {"outcome": "succeeded", "time": {"created": at(6)}}),
]
CONVERSATION[4][1]["tokens"] = tokens(50, 9, read=13100)  # type: ignore[index]


def one(path: Path) -> tuple[Session, Diagnostics]:
    sessions, diagnostics = read(path)
    (session,) = sessions
    return session, diagnostics


def test_a_2x_session_is_read_from_its_session_message_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each `assistant` row is one request, its prompt `input + cache.read + cache.write`;
    its `content[]` the assistant's text, reasoning and tool calls (the output a result);
    `user` text the prompt, `system` text a harness message; the markers are skipped on
    purpose. Before reading `session_message`, such a database gave 0 requests."""
    added = spy(monkeypatch)
    session, diagnostics = one(build(tmp_path / "opencode.db", {"ses_v2a": CONVERSATION}))
    assert [r.usage.prompt_tokens for r in session.responses] == [13000, 13150]
    assert [r.usage.output_tokens for r in session.responses] == [40, 9]
    assert [r.stop_reason for r in session.responses] == ["tool-calls", "stop"]
    assert [r.recorded_usd for r in session.responses] == [0.01, 0.002]
    assert session.responses[0].start_ns == at(3) * MS
    assert session.responses[0].end_ns == (at(3) + 400) * MS
    assert session.models == ("claude-sonnet-4-5",) and session.provider == "anthropic"
    assert (session.harness_version, session.project) == ("2.0.12", "proj")
    (call,) = session.tool_calls
    assert (call.name, call.call_id, call.result_chars) == ("read", "call_1", len(OUTPUT))
    assert call.response_id == session.responses[0].id
    items = by_id(added)
    got = {i: (a.category, a.label, a.chars) for i, a in items.items()}
    first = "msg_ses_v2a_0"
    assert got[f"{first}:text"] == (Category.PROMPTS, "User prompt", len(PROMPT))
    assert got["msg_ses_v2a_2:text"][:2] == (Category.OVERHEAD, "Harness message")
    assert got["msg_ses_v2a_2:text"][2] == len(SYSTEM)
    assert any(a.category is Category.RESULTS and a.chars == len(OUTPUT) for a in added)
    assert any(a.category is Category.ASSISTANT and a.chars == len(ANSWER) for a in added)
    assert diagnostics.warning_total == 0 and diagnostics.unrecognised_total == 0
    assert dict(diagnostics.skipped) == {
        "opencode:session_message/agent-switched": 1,
        "opencode:session_message/model-switched": 1,
        "opencode:session_message/idle": 1,
    }
    assert diagnostics.rows_read == len(CONVERSATION) == diagnostics.records_parsed


def _added(added: list[Added], category: Category) -> list[int]:
    return [a.chars for a in added if a.category is category]


def test_session_v2_holds_the_session_and_the_frozen_1x_copy_is_not_read_again(
    tmp_path: Path,
) -> None:
    """2.0.25 keeps sessions in `session_v2`; the upgrade leaves the 1.x rows of the same
    session behind (a copy of its start): read from `session_message` alone, the 1.x rows
    skipped on purpose. A 1.x session the upgrade did not carry on is still read."""
    path = build(tmp_path / "opencode.db", {"ses_v2a": CONVERSATION}, table="session_v2")
    connection = sqlite3.connect(path)
    connection.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created,"
        " time_updated) VALUES ('ses_v2a', 'global', 's', '/home/u/proj', 'old', '1.18.0', ?, ?),"
        " ('ses_old', 'global', 's2', '/home/u/old', 'old', '1.18.0', ?, ?)",
        (T0, T0, T0 - 90_000, T0 - 80_000),
    )
    for session_id in ("ses_v2a", "ses_old"):
        connection.execute(
            "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
            (
                f"msg_{session_id}_v1",
                session_id,
                T0 - 50_000,
                T0 - 50_000,
                json.dumps({"role": "assistant", "tokens": tokens(10, 1, read=5000)}),
            ),
        )
        connection.execute(
            "INSERT INTO part VALUES (?, ?, ?, 0, 0, ?)",
            (f"prt_{session_id}", f"msg_{session_id}_v1", session_id, '{"type": "text"}'),
        )
    connection.commit()
    connection.close()
    sessions, diagnostics = read(path)
    by_session = {s.session_id: s for s in sessions}
    assert [r.usage.prompt_tokens for r in by_session["ses_v2a"].responses] == [13000, 13150]
    assert by_session["ses_v2a"].harness_version == "2.0.12"  # its session_v2 row
    assert [r.usage.prompt_tokens for r in by_session["ses_old"].responses] == [5010]
    assert diagnostics.skipped["opencode:message (1.x copy of a 2.x session)"] == 1
    assert diagnostics.skipped["opencode:part (1.x copy of a 2.x session)"] == 1
    assert diagnostics.warning_total == 0


def test_a_database_with_only_the_2x_tables_is_an_opencode_database(tmp_path: Path) -> None:
    path = build(tmp_path / "opencode.db", {"ses_v2a": CONVERSATION}, table="session_v2", v1=False)
    session, diagnostics = one(path)
    assert len(session.responses) == 2 and diagnostics.warning_total == 0


def test_a_completed_compaction_replaces_what_came_before_with_its_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model gets the rows from the last completed compaction on, the compaction as
    its `summary` and `recent` text: the earlier items leave the context, the summary
    enters it, and the compaction's own usage (when written) is its request's."""
    summary, recent = "We read the README; it profiles agents.", "user asked about README"
    rows = [
        *CONVERSATION[:5],
        (
            "compaction",
            {
                "status": "completed",
                "reason": "auto",
                "summary": summary,
                "recent": recent,
                "time": {"created": at(5)},
                "cost": 0.003,
                "tokens": tokens(200, 80, read=13000),
            },
        ),
        ("compaction", {"status": "running", "reason": "manual", "summary": "", "time": {}}),
        ("user", {"text": "Thanks. Now the tests?", "time": {"created": at(7)}}),
        ("assistant", assistant(8, [{"type": "text", "id": "t", "text": "Sure."}])),
    ]
    rows[-1][1]["tokens"] = tokens(30, 5, read=900)  # type: ignore[index]
    added = spy(monkeypatch)
    session, diagnostics = one(build(tmp_path / "opencode.db", {"ses_c": rows}))
    (compaction,) = session.compactions
    assert compaction.trigger == "auto" and compaction.pre_tokens == 13150
    assert compaction.request is not None and compaction.request.usage.prompt_tokens == 13200
    # The prompt, the system text, the reasoning, the call, its result, the answer.
    assert compaction.removed_items == 6
    assert _added(added, Category.SUMMARIES) == [len(summary), len(recent)]
    assert [r.usage.prompt_tokens for r in session.responses] == [13000, 13150, 930]
    assert diagnostics.skipped["opencode:session_message/compaction (running)"] == 1
    assert diagnostics.warning_total == 0


def test_attachments_shell_synthetic_and_skill_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A text file attached is sent as text ("Attached file: <name>", then its content):
    measured as a Tool result "Attached file", as a 1.x `@file` read is; an image is seen,
    not measured. `synthetic`, `skill` and `shell` rows are
    sent as the user: harness messages ("Shell command: …" and its output)."""
    content = "line one\nline two\n"
    files = [
        {
            "mime": "text/plain",
            "name": "notes.txt",
            "data": base64.b64encode(content.encode()).decode(),
            "source": {"type": "uri", "uri": "file:///home/u/proj/notes.txt"},
        },
        {"mime": "image/png", "name": "shot.png", "data": "iVBORw0KGgo="},
    ]
    rows: list[tuple[str, dict[str, Any] | str]] = [
        ("user", {"text": "See these.", "files": files, "time": {"created": at(0)}}),
        ("synthetic", {"sessionID": "ses_f", "text": "Background job done.", "time": {}}),
        ("skill", {"text": "SKILL: be brief.", "time": {}}),
        ("shell", {"command": "ls", "output": {"output": "a\nb\n"}, "time": {}}),
        ("shell", {"command": "pwd", "output": "/home/u\n", "time": {}}),
        ("assistant", assistant(5, [{"type": "text", "id": "t", "text": "Done."}])),
    ]
    rows[-1][1]["tokens"] = tokens(10, 2, read=100)  # type: ignore[index]
    added = spy(monkeypatch)
    session, diagnostics = one(build(tmp_path / "opencode.db", {"ses_f": rows}))
    items = {a.id: a for a in added}
    attached = items["msg_ses_f_0:file0"]
    text = f"Attached file: notes.txt\n\n{content}"
    assert (attached.chars, attached.category, attached.label) == (
        len(text),
        Category.RESULTS,
        "Attached file",
    )
    assert "msg_ses_f_0:file1" not in items and dict(session.unmeasured) == {"file-part": 1}
    assert items["msg_ses_f_3:text"].chars == len("Shell command: ls\n\na\nb\n")
    assert items["msg_ses_f_4:text"].chars == len("Shell command: pwd\n\n/home/u\n")
    assert {items[f"msg_ses_f_{n}:text"].label for n in (1, 2, 3, 4)} == {"Harness message"}
    assert len(session.responses) == 1 and diagnostics.warning_total == 0


def test_tool_results_of_every_shape_and_a_step_without_usage(tmp_path: Path) -> None:
    """A failed call's error is its result; a call still streaming has none (incomplete);
    a row before the canonical tool results keeps its output in `result`. A step with no
    `tokens` (aborted, failed) is a request that failed, as a 1.x message without usage."""
    calls = [
        {
            "type": "tool",
            "id": "c_err",
            "name": "read",
            "state": {
                "status": "error",
                "input": {},
                "error": {"type": "unknown", "message": "ENOENT"},
            },
            "time": {"created": at(1)},
        },
        {
            "type": "tool",
            "id": "c_old",
            "name": "bash",
            "state": {"status": "completed", "input": {"command": "ls"}, "result": "a b c"},
            "time": {"created": at(1)},
        },
        {
            "type": "tool",
            "id": "c_typing",
            "name": "write",
            "state": {"status": "streaming", "input": '{"filePath": "/x"'},
            "time": {"created": at(1)},
        },
    ]
    rows: list[tuple[str, dict[str, Any] | str]] = [
        ("user", {"text": "go", "time": {"created": at(0)}}),
        ("assistant", assistant(1, calls, tokens=tokens(5, 5, read=50))),
        ("assistant", {**assistant(2, []), "error": {"type": "aborted"}}),
    ]
    session, _ = one(build(tmp_path / "opencode.db", {"ses_t": rows}))
    by_call = {c.call_id: c for c in session.tool_calls}
    assert by_call["c_err"].is_error and by_call["c_err"].result_chars == len("ENOENT")
    assert by_call["c_old"].result_chars == len("a b c")
    assert by_call["c_typing"].incomplete and session.incomplete
    assert len(session.responses) == 1
    (failed,) = session.failed_requests
    assert failed.is_error and failed.stop_reason == "aborted"


def test_rows_that_cannot_be_understood_are_said_in_one_line(tmp_path: Path) -> None:
    """Data that is not a JSON object, an assistant row without `content`: not read, and
    the database says how many in one warning, never 0 requests silently. A type this
    version does not know is named as not recognised."""
    rows: list[tuple[str, dict[str, Any] | str]] = [
        ("user", "not json {"),
        ("assistant", {"time": {"created": at(1)}, "tokens": tokens(1, 1)}),
        ("assistant", "[1, 2]"),
        ("hologram", {"time": {"created": at(3)}}),
    ]
    (session,), diagnostics = read(build(tmp_path / "opencode.db", {"ses_bad": rows}))
    assert session.responses == () == session.failed_requests
    (warning,) = diagnostics.warnings
    assert warning.message == (
        "3 OpenCode 2.x messages (session_message rows) could not be understood and were not "
        "read; the first: message msg_ses_bad_0: its data is not a JSON object"
    )
    assert dict(diagnostics.unrecognised) == {"opencode:session_message/hologram": 1}
    assert diagnostics.records_parsed == 2 and diagnostics.records_rejected == 1


def test_a_session_message_table_of_an_unknown_layout_is_said_not_read(tmp_path: Path) -> None:
    path = build(
        tmp_path / "opencode.db",
        {"ses_x": CONVERSATION},
        message_columns="`payload` text, `seq` integer",
    )
    diagnostics = Diagnostics()
    assert storage.read_db(path, diagnostics)[0].messages == []
    (warning,) = diagnostics.warnings
    assert warning.message == (
        "7 OpenCode 2.x messages not read: table session_message has no column data "
        "(a layout this version does not know)"
    )


def test_messages_of_a_session_with_no_session_row_are_read_and_said(tmp_path: Path) -> None:
    path = build(tmp_path / "opencode.db", {"ses_lost": CONVERSATION}, session_rows=False)
    session, diagnostics = one(path)
    assert session.session_id == "ses_lost" and len(session.responses) == 2
    (warning,) = diagnostics.warnings
    assert warning.message == (
        "1 OpenCode 2.x session in session_message has no row in session or session_v2: "
        "read without title, folder, version or parent"
    )


def test_a_subagent_call_links_its_child_session_as_2x_names_it(tmp_path: Path) -> None:
    """The shape a 2.0.26 database has (rows captured from OpenCode by a third party,
    re-made here by hand): sessions in `session_v2` only; the `subagent` tool's metadata
    names its child `sessionID`, and the child's row has `parent_id`. Read together,
    the child is linked to the call that launched it."""
    child_id = "ses_child2x"
    call = {
        "type": "tool",
        "id": "call_sub",
        "name": "subagent",
        "executed": False,
        "state": {
            "status": "completed",
            "input": {"agent": "general", "prompt": "Look around."},
            "content": [
                {"type": "text", "text": f'<subagent sessionID="{child_id}">ok</subagent>'}
            ],
            "metadata": {"sessionID": child_id, "status": "completed", "truncated": False},
        },
        "time": {"created": at(1) + 10, "ran": at(1) + 20, "completed": at(1) + 300},
    }
    parent_rows: list[tuple[str, dict[str, Any] | str]] = [
        ("user", {"text": "Use a subagent.", "files": [], "time": {"created": at(0)}}),
        ("assistant", assistant(1, [call], finish="tool-calls", tokens=tokens(1000, 34, 200))),
        ("idle", {"outcome": "succeeded", "time": {"created": at(2)}}),
    ]
    child_rows: list[tuple[str, dict[str, Any] | str]] = [
        ("user", {"text": "You are a subagent.\nLook around.", "time": {"created": at(0)}}),
        ("assistant", assistant(1, [{"type": "text", "text": "Looked."}], tokens=tokens(900, 5))),
    ]
    path = build(
        tmp_path / "opencode.db",
        {"ses_parent2x": parent_rows, child_id: child_rows},
        table="session_v2",
        v1=False,
    )
    connection = sqlite3.connect(path)
    connection.execute("UPDATE session_v2 SET parent_id = 'ses_parent2x' WHERE id = ?", (child_id,))
    connection.commit()
    connection.close()
    sessions, diagnostics = read(path)
    by_id = {s.session_id: s for s in sessions}
    (launch,) = by_id["ses_parent2x"].tool_calls
    assert launch.child_session == child_id
    child = by_id[child_id]
    assert (child.parent_session, child.parent_call_id) == ("ses_parent2x", "call_sub")
    assert [r.usage.prompt_tokens for r in child.responses] == [900]
    assert diagnostics.warning_total == 0


def test_a_failed_message_is_sent_again_by_2_x(tmp_path: Path) -> None:
    """OpenCode 2.x sends a message that failed again (`to-llm-message.ts`: no error filter;
    its reasoning as text), where 1.x leaves it out (test_rules_opencode): the request
    after it carries what it wrote, as without the error."""

    def last_changes(error: dict[str, Any] | None, name: str) -> set[str]:
        conversation = copy.deepcopy(CONVERSATION)
        if error is not None:
            conversation[3][1]["error"] = error
        (tmp_path / name).mkdir()
        session, _ = one(build(tmp_path / name / "opencode.db", {"ses_a": conversation}))
        return {c.id for c in session.snapshots[-1].changes}

    kept = last_changes(None, "kept")
    assert kept  # (the third row's answer and call, in the fourth's request)
    assert last_changes({"type": "provider", "message": "overloaded"}, "failed") == kept
