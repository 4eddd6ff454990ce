"""The hostile-input table: each case builds files in tmp_path, runs `export` in-process,
and states the exact outcome — exit code, warning kinds with counts, the first warning's
`path:line`, and what the trace still holds (sessions, responses). Every trace written
here also passes the contract checklist (through `export_trace`)."""

from __future__ import annotations

import gzip
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from contract import check_contract
from traceview import load_trace

DATA = Path(__file__).resolve().parents[1] / "data" / "journals"
SMALL = DATA / "claude-code" / "handmade" / "small.jsonl"
CODEX = DATA / "codex" / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
PI = DATA / "pi" / "pi-mono_large-session_v1.jsonl"
MUSE = DATA / "muse" / "hcn-1.4.2-R4684.1_meta_single-turn_retained-frame.session.jsonl"
SMALL_LINES = SMALL.read_bytes().split(b"\n")[:-1]  # 20 records, 6 requests
runner = CliRunner()


def small_with(*replacements: tuple[int, bytes]) -> bytes:
    lines = list(SMALL_LINES)
    for index, text in replacements:
        lines[index] = text
    return b"\n".join(lines) + b"\n"


@dataclass
class Case:
    name: str
    build: Callable[[Path], list[Path]]
    exit_code: int
    warnings: dict[str, int] = field(default_factory=dict)
    sessions: int = 1
    responses: int | None = None
    first_warning_line: int | None = None
    stderr_has: str = ""


def one(name: str, data: bytes) -> Callable[[Path], list[Path]]:
    def build(tmp: Path) -> list[Path]:
        path = tmp / name
        path.write_bytes(data)
        return [path]

    return build


def copy(source: Path, name: str | None = None) -> Callable[[Path], list[Path]]:
    return one(name or source.name, source.read_bytes())


def with_good(builder: Callable[[Path], list[Path]]) -> Callable[[Path], list[Path]]:
    def build(tmp: Path) -> list[Path]:
        return [*builder(tmp), *copy(SMALL)(tmp)]

    return build


def deep_nesting(tmp: Path) -> list[Path]:
    return one("deep.jsonl", small_with((3, b"[" * 100_000 + b"]" * 100_000)))(tmp)


def huge_line(tmp: Path) -> list[Path]:
    text = "x" * (50 * 1024 * 1024)
    record = {
        "type": "user",
        "sessionId": "11111111-2222-4333-8444-555555555555",
        "uuid": "big",
        "timestamp": "2026-01-01T10:00:05.500Z",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_read1", "content": text}],
        },
    }
    return one("huge.jsonl", small_with((4, json.dumps(record).encode())))(tmp)


def symlink_loop(tmp: Path) -> list[Path]:
    folder = tmp / "loop"
    folder.mkdir()
    (folder / "small.jsonl").write_bytes(SMALL.read_bytes())
    os.symlink(folder, folder / "again")
    return [folder]


def empty_folder(tmp: Path) -> list[Path]:
    folder = tmp / "nothing"
    folder.mkdir()
    (folder / "notes.txt").write_text("no journals here")
    return [folder]


def unreadable(tmp: Path) -> list[Path]:
    path = tmp / "locked.jsonl"
    path.write_bytes(SMALL.read_bytes())
    path.chmod(0)
    return [path]


def appended(tmp: Path) -> list[Path]:
    # a journal still being written: the last record is cut in the middle
    return one("live.jsonl", SMALL.read_bytes() + b'{"type":"assistant","sessionId":"1111')(tmp)


def usage_line(index: int, uuid: str, usage: object, mid: str = "msg_X") -> tuple[int, bytes]:
    record = {
        "type": "assistant",
        "sessionId": "11111111-2222-4333-8444-555555555555",
        "uuid": uuid,
        "timestamp": "2026-01-01T10:00:09.000Z",
        "message": {
            "id": mid,
            "model": "claude-sonnet-4-5",
            "usage": usage,
            "content": [{"type": "text", "text": "x"}],
        },
    }
    return index, json.dumps(record).encode()


CASES = [
    Case(
        "u2028-u2029-u0085 inside strings",
        one(
            "sep.jsonl",
            small_with((1, SMALL_LINES[1].replace(b"please", "please\u2028\u2029\u0085".encode()))),
        ),
        0,
        responses=6,
    ),
    Case("UTF-8 BOM", one("bom.jsonl", b"\xef\xbb\xbf" + SMALL.read_bytes()), 0, responses=6),
    Case(
        "UTF-16 file",
        one("u16.jsonl", SMALL.read_text().encode("utf-16")),
        1,
        sessions=0,
        stderr_has="UTF-16",
    ),
    Case(
        "a stray non-UTF-8 byte",
        one("byte.jsonl", small_with((1, SMALL_LINES[1].replace(b"please", b"pl\xffase")))),
        0,
        {"bad-utf8": 1},
        responses=6,
        first_warning_line=2,
    ),
    Case(
        "Infinity and NaN",
        one("inf.jsonl", small_with((3, b'{"a": Infinity}'), (5, b'{"a": NaN}'))),
        0,
        {"not-json": 2},
        responses=6,
        first_warning_line=4,
    ),
    Case(
        "a 5,000-digit integer",
        one("int.jsonl", small_with((3, b'{"n": ' + b"9" * 5000 + b"}"))),
        0,
        {"not-json": 1},
        responses=6,
        first_warning_line=4,
    ),
    Case(
        "100,000 nested brackets",
        deep_nesting,
        0,
        {"not-json": 1},
        responses=6,
        first_warning_line=4,
    ),
    Case(
        "repeated message id with empty and partial usage",
        one(
            "sparse.jsonl",
            small_with(
                usage_line(3, "s1", {}, "msg_A"), usage_line(5, "s2", {"output_tokens": 5}, "msg_A")
            ),
        ),
        0,
        responses=6,
    ),
    Case(
        "all-zero usage",
        one("zero.jsonl", small_with(usage_line(3, "z1", {"input_tokens": 0, "output_tokens": 0}))),
        0,
        responses=6,
    ),
    Case(
        "init-only stream-json",
        copy(DATA / "claude-code" / "trackgentic-mp9r3tbb_v2.1.143_init-only-no-result.jsonl"),
        0,
        responses=0,
    ),
    Case(
        "assistant-only stream-json",
        one(
            "asst.jsonl",
            json.dumps(
                {
                    "type": "assistant",
                    "session_id": "s",
                    "parent_tool_use_id": None,
                    "message": {
                        "id": "m",
                        "model": "claude-x",
                        "usage": {"input_tokens": 9},
                        "content": [{"type": "text", "text": "hi"}],
                    },
                }
            ).encode()
            + b"\n",
        ),
        0,
        responses=1,
    ),
    Case("'|' in a file name", copy(SMALL, "a|b c.jsonl"), 0, responses=6),
    Case(
        "one bad file among several",
        with_good(one("bad.jsonl", b"\x00\x01\x02")),
        1,
        responses=6,
        stderr_has="not a JSONL journal",
    ),
    Case(
        "an empty file",
        with_good(one("empty.jsonl", b"")),
        1,
        responses=6,
        stderr_has="empty journal",
    ),
    Case(
        "a binary file",
        one("bin.jsonl", bytes(range(256)) * 4),
        1,
        sessions=0,
        stderr_has="not a JSONL journal",
    ),
    Case(
        "a directory with no journals",
        with_good(empty_folder),
        1,
        responses=6,
        stderr_has="no journals",
    ),
    Case(
        "a journal still being appended to",
        appended,
        0,
        {"truncated-last-line": 1},
        responses=6,
        first_warning_line=21,
    ),
    Case(
        "CRLF line endings",
        one("crlf.jsonl", SMALL.read_bytes().replace(b"\n", b"\r\n")),
        0,
        responses=6,
    ),
    Case(
        "valid JSON, wrong shape at every level",
        one(
            "shape.jsonl",
            small_with(
                (3, b'"just a string"'),
                (5, b"[1, 2, 3]"),
                (
                    7,
                    json.dumps(
                        {
                            "type": "assistant",
                            "sessionId": "11111111-2222-4333-8444-555555555555",
                            "message": "text",
                            "timestamp": 5,
                        }
                    ).encode(),
                ),
            ),
        ),
        0,
        {"bad-shape": 3, "bad-timestamp": 1},
        responses=5,  # line 8 was msg_B's only record
    ),
    Case(
        "negative and float token counts",
        one(
            "neg.jsonl",
            small_with(
                usage_line(
                    3,
                    "n1",
                    {"input_tokens": -5, "cache_read_input_tokens": 2.5, "output_tokens": 1},
                )
            ),
        ),
        0,
        {"bad-usage": 1},
        responses=7,
    ),
    Case(
        "duplicate uuids",
        one(
            "dup.jsonl",
            b"\n".join(line.replace(b'"uuid":"u', b'"uuid":"same-u') for line in SMALL_LINES)
            + b"\n",
        ),
        0,
        responses=6,
    ),
    Case(
        "timestamps missing, out of order, other formats",
        one(
            "ts.jsonl",
            small_with(
                (1, SMALL_LINES[1].replace(b'"timestamp":"2026-01-01T10:00:00.000Z"', b'"x":1')),
                (2, SMALL_LINES[2].replace(b"10:00:02.000Z", b"09:00:02.000+00:00")),
                (4, SMALL_LINES[4].replace(b'"2026-01-01T10:00:03.000Z"', b"1767261603000")),
            ),
        ),
        0,
        {"bad-timestamp": 1},
        responses=6,
    ),
    Case(
        "a tool result without its call and a call without its result",
        one(
            "orphan.jsonl",
            small_with((4, SMALL_LINES[5]), (5, SMALL_LINES[4])).replace(
                b'"tool_use_id":"toolu_bash"', b'"tool_use_id":"toolu_gone"'
            ),
        ),
        0,
        responses=6,
    ),
    Case("a 50 MB single line", huge_line, 0, responses=6),
    Case("a symlink loop in a directory", symlink_loop, 0, responses=6),
    Case(
        "a gzipped journal cut short",
        one("cut.jsonl.gz", gzip.compress(SMALL.read_bytes())[:-40]),
        1,  # the rest of the file is lost: kept records are exported, the exit code says so
        {"bad-gzip": 1},
        responses=None,
    ),
    Case(
        "a Codex rollout with a damaged line",
        one("rollout-x.jsonl", CODEX.read_bytes().replace(b"\n", b"\n{damaged\n", 1)),
        0,
        {"not-json": 1},
        responses=6,
        first_warning_line=2,
    ),
    Case(
        "a Pi session with a damaged line",
        one("pi.jsonl", PI.read_bytes().replace(b"\n", b"\n{damaged\n", 1)),
        0,
        {"not-json": 1},
        responses=439,
        first_warning_line=2,
    ),
    Case(
        "a Muse journal with a damaged line",
        one("session.jsonl", MUSE.read_bytes().replace(b"\n", b"\n{damaged\n", 1)),
        0,
        # (its reminder children's logs are not given: one line for the run)
        {"not-json": 1, "subagent-not-read": 1},
        responses=1,
        first_warning_line=2,
    ),
    Case(
        "a Muse export array",
        copy(DATA / "muse" / "hcn-1.1.1_compaction-records.export-events.json"),
        1,
        sessions=0,
        stderr_has="muse export",
    ),
    Case(
        "every harness at once",
        lambda tmp: [*copy(SMALL)(tmp), *copy(CODEX)(tmp), *copy(PI)(tmp), *copy(MUSE)(tmp)],
        0,
        {"subagent-not-read": 1},  # the Muse session's reminder children, not given
        sessions=4,
        responses=6 + 6 + 439 + 1,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_case(case: Case, tmp_path: Path) -> None:
    inputs = case.build(tmp_path)
    out = tmp_path / "out.pftrace"
    result = runner.invoke(app, ["export", *map(str, inputs), "-o", str(out)])
    assert result.exit_code == case.exit_code, result.output + result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    if case.stderr_has:
        assert case.stderr_has in result.stderr
    summary = next(
        (line for line in result.stderr.splitlines() if re.match(r"[\d,]+ warnings? \(", line)),
        "",
    )
    listed = summary.split(" (", 1)[1].rstrip(")") if summary else ""
    counts = dict(part.split(": ") for part in listed.split(", ")) if listed else {}
    assert {k: int(v) for k, v in counts.items()} == case.warnings
    if case.first_warning_line is not None:
        first = result.stderr.splitlines()[result.stderr.splitlines().index(summary) + 1]
        assert f".jsonl:{case.first_warning_line}: " in first or (
            f":{case.first_warning_line}: " in first
        )
    if case.sessions == 0:
        assert not out.exists()
        return
    view = load_trace(out)
    assert check_contract(view, require_addition=False, forward_arrows=True) == []
    assert len(view.captures()) == case.sessions
    if case.responses is not None:
        # `responses` counts metered ones; a response without usage (issue 15.6) is apart
        metered = [
            s for s in view.slices_of_kind("assistant-message") if "usage_known" not in s.args
        ]
        assert len(metered) == case.responses


def test_a_file_without_read_permission(tmp_path: Path, monkeypatch: Any) -> None:
    path = unreadable(tmp_path)[0]
    if os.access(path, os.R_OK):  # root reads everything: simulate the refusal
        import io

        real_file_io = io.FileIO

        def refuse(file: Any, *args: Any, **kwargs: Any) -> Any:
            if str(file) == str(path):
                raise PermissionError(13, "Permission denied")
            return real_file_io(file, *args, **kwargs)

        monkeypatch.setattr(io, "FileIO", refuse)
    result = runner.invoke(
        app, ["export", str(path), str(SMALL), "-o", str(tmp_path / "t.pftrace")]
    )
    assert result.exit_code == 1
    assert f"error: {path.name}: cannot open" in result.stderr
    assert (tmp_path / "t.pftrace").exists()


# --------------------------------------------------------------------------- Gemini CLI, OpenCode
# A separate block (issue 18), so that edits to the table above and to this one do not collide.
# The same checks as `test_hostile_case`; a database lock is held by a child process, reaped
# after each case.

import sqlite3  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

GEMINI = DATA / "gemini-cli" / "entire-ab-2b9748b105-0_session.json"  # 10 requests
GEMINI_JSONL = (
    DATA / "gemini-cli/tp-tutor-0.39.1-jsonl/anthonyguera/chats/"
    "session-2026-04-24T23-16-c8b2cbd9.jsonl"
)  # 5 requests
OPENCODE = DATA / "opencode" / "ses_fd4c895f0ffe6gKgxHiEgiQCcd.export.json"  # 4 requests
_HOLDERS: list[subprocess.Popen[bytes]] = []


def gemini_with(change: Callable[[list[dict[str, Any]]], None]) -> bytes:
    document = json.loads(GEMINI.read_text())
    change(document["messages"])
    return json.dumps(document, indent=2).encode()


def odd_gemini_tokens(messages: list[dict[str, Any]]) -> None:
    measured = [m for m in messages if m["type"] == "gemini" and m["tokens"]["input"]]
    measured[0]["tokens"]["input"] = "12207"  # a string
    measured[1]["tokens"] = [1, 2, 3]  # not an object
    measured[2]["tokens"]["input"] = -5  # negative
    measured[3]["tokens"]["input"] = 1e30  # a float beyond any count
    del measured[4]["tokens"]


def a_message_not_an_object(messages: list[dict[str, Any]]) -> None:
    """messages[6] of a Gemini CLI document replaced by a number: it was dropped without a
    word, counted as used."""
    messages[6] = 17  # type: ignore[call-overload]


def opencode_document(change: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The @docs child export, made a root session (a dangling parent fails the checklist)."""
    document = json.loads(OPENCODE.read_text())
    del document["info"]["parentID"]
    if change is not None:
        change(document)
    return document


def opencode_json(change: Callable[[dict[str, Any]], None] | None = None) -> bytes:
    return json.dumps(opencode_document(change), indent=2).encode()


def unknown_parts(document: dict[str, Any]) -> None:
    for index, message in enumerate(document["messages"]):
        message["parts"].insert(0, {"id": f"prt_0future{index}", "type": "hologram", "x": 1})


def odd_opencode_tokens(document: dict[str, Any]) -> None:
    assistants = [m for m in document["messages"] if m["info"]["role"] == "assistant"]
    finishes = [p for m in assistants for p in m["parts"] if p["type"] == "step-finish"]
    finishes[0]["tokens"] = {"input": "9", "cache": "lots"}  # strings: no usage
    finishes[1]["tokens"] = None
    finishes[2]["tokens"]["cache"] = [1, 2]  # cache not an object: input alone counts


def opencode_db(tmp: Path, *, wal: bool) -> Path:
    """A small OpenCode-shaped database built from the export (the real schema's columns
    that the adapter reads)."""
    document = opencode_document()
    path = tmp / "opencode.db"
    connection = sqlite3.connect(path)
    if wal:
        connection.execute("PRAGMA journal_mode=WAL")
    connection.executescript(
        "CREATE TABLE session (id TEXT PRIMARY KEY, parent_id TEXT, directory TEXT, title TEXT,"
        " version TEXT, agent TEXT, model TEXT, time_created INTEGER, time_updated INTEGER);"
        "CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER,"
        " time_updated INTEGER, data TEXT);"
        "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT,"
        " time_created INTEGER, time_updated INTEGER, data TEXT);"
    )
    info = document["info"]
    connection.execute(
        "INSERT INTO session VALUES (?, NULL, ?, ?, ?, NULL, NULL, ?, ?)",
        (
            info["id"],
            info["directory"],
            info["title"],
            info["version"],
            info["time"]["created"],
            info["time"]["updated"],
        ),
    )
    for message in document["messages"]:
        m = message["info"]
        connection.execute(
            "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
            (m["id"], info["id"], m["time"]["created"], m["time"]["created"], json.dumps(m)),
        )
        for part in message["parts"]:
            connection.execute(
                "INSERT INTO part VALUES (?, ?, ?, 0, 0, ?)",
                (part["id"], m["id"], info["id"], json.dumps(part)),
            )
    connection.commit()
    connection.close()
    return path


def held_db(mode: str) -> Callable[[Path], list[Path]]:
    """A database another process holds: `exclusive` (rollback journal, an EXCLUSIVE lock:
    readers must wait) or `writing` (WAL, an uncommitted write: readers go on)."""

    def build(tmp: Path) -> list[Path]:
        path = opencode_db(tmp, wal=mode == "writing")
        statement = (
            "BEGIN EXCLUSIVE" if mode == "exclusive" else "BEGIN IMMEDIATE; DELETE FROM part"
        )
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sqlite3, sys, time\n"
                f"c = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
                f"c.executescript({statement!r})\n"
                "print('ready', flush=True)\n"
                "time.sleep(20)\n",
            ],
            stdout=subprocess.PIPE,
        )
        _HOLDERS.append(holder)
        assert holder.stdout is not None and holder.stdout.readline() == b"ready\n"
        return [path]

    return build


def corrupt_db(tmp: Path) -> list[Path]:
    path = opencode_db(tmp, wal=False)
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # the schema page: header intact, content gone
    path.write_bytes(bytes(data))
    return [path]


def storage_without_parts(tmp: Path) -> list[Path]:
    document = opencode_document()
    export = tmp / "x.export.json"
    export.write_text(json.dumps(document))
    from test_opencode import as_storage

    storage = as_storage(export, tmp)
    export.unlink()
    assistant = next(m for m in document["messages"] if m["info"]["role"] == "assistant")
    for part in (storage / "part" / assistant["info"]["id"]).iterdir():
        part.unlink()
    return [storage]


def storage_with_damaged_message(tmp: Path) -> list[Path]:
    export = tmp / "x.export.json"
    export.write_text(json.dumps(opencode_document()))
    from test_opencode import as_storage

    storage = as_storage(export, tmp)
    export.unlink()
    user = next(iter(sorted((storage / "message").rglob("msg_*.json"))))
    user.write_text('{"id": "msg_cut", "role": "us')
    return [storage]


GEMINI_OPENCODE_CASES = [
    Case(
        "a Gemini CLI document cut short",
        one("session-cut.json", GEMINI.read_bytes()[: len(GEMINI.read_bytes()) // 2]),
        0,
        {"truncated-document": 1},
        responses=4,  # the complete gemini records in the first half, all-zero one aside
    ),
    Case(
        "a Gemini CLI JSONL with a damaged line",
        one("session-x.jsonl", GEMINI_JSONL.read_bytes().replace(b"\n", b"\n{damaged\n", 1)),
        0,
        {"not-json": 1},
        responses=5,
        first_warning_line=2,
    ),
    Case(
        "a Gemini CLI JSONL that lost its header line",
        one("session-z.jsonl", GEMINI_JSONL.read_bytes().split(b"\n", 1)[1]),
        0,
        {"no-header": 1},
        responses=5,
        first_warning_line=1,
    ),
    Case(
        "a Gemini CLI document without messages",
        one("session-y.json", b'{\n  "sessionId": "s",\n  "projectHash": "ab"\n}\n'),
        1,
        sessions=0,
        stderr_has="not a Gemini CLI session",
    ),
    Case(
        "odd Gemini CLI token shapes",
        one("session-odd.json", gemini_with(odd_gemini_tokens)),
        0,
        {"bad-usage": 4},  # the string, the list, the negative, the float: each read as 0, said
        responses=10 - 5,
    ),
    Case(
        "a Gemini CLI message that is not an object",
        one("session-n.json", gemini_with(a_message_not_an_object)),
        0,
        {"bad-shape": 1},
        stderr_has="session-n.json: messages[6] is not a JSON object; not read",
    ),
    Case(
        # Its complete messages kept, as a Gemini CLI document's (review-bad 8: all were lost)
        "an OpenCode export cut short",
        one("ses_cut.export.json", opencode_json()[: len(opencode_json()) * 3 // 4]),
        0,
        {"truncated-document": 1},
        responses=2,  # of 4: those in the complete messages
        first_warning_line=352,  # where the first message not kept starts
        stderr_has="cut short or damaged in messages[3]; the first 3 complete messages kept",
    ),
    Case(
        "an OpenCode export damaged in its info",
        one("ses_cut.export.json", opencode_json().replace(b'"title":', b'"title"', 1)),
        1,
        {},  # one error line naming the file, no warning repeating it (issue 15.1)
        sessions=0,
        stderr_has="cut short or damaged",
    ),
    Case(
        "unknown OpenCode part types",
        one("ses_u.export.json", opencode_json(unknown_parts)),
        0,
        responses=4,
    ),
    Case(
        "odd OpenCode token shapes",
        one("ses_t.export.json", opencode_json(odd_opencode_tokens)),
        0,
        {"bad-usage": 1},  # the string "9": a count that is no count, read as 0 and said
        responses=4 - 2,
    ),
    Case(
        "an OpenCode database locked by another process",
        held_db("exclusive"),
        1,
        sessions=0,
        stderr_has="locked by another process",
    ),
    Case(
        "an OpenCode database another process is writing (WAL)",
        held_db("writing"),
        0,
        responses=4,
    ),
    Case(
        "a corrupt OpenCode database",
        corrupt_db,
        1,
        sessions=0,
        stderr_has="corrupt",
    ),
    Case(
        "an OpenCode storage folder with missing part files",
        storage_without_parts,
        0,
        {"missing-parts": 1},
        responses=4,
    ),
    Case(
        "an OpenCode storage folder with a damaged message file",
        storage_with_damaged_message,
        0,
        {"not-json": 1},
        responses=4,
    ),
    Case(
        "every harness at once, Gemini CLI and OpenCode included",
        lambda tmp: [
            *copy(SMALL)(tmp),
            *copy(CODEX)(tmp),
            *copy(PI)(tmp),
            *copy(MUSE)(tmp),
            *copy(GEMINI)(tmp),
            *one("ses_r.export.json", opencode_json())(tmp),
        ],
        0,
        {"subagent-not-read": 1},  # the Muse session's reminder children, not given
        sessions=6,
        responses=6 + 6 + 439 + 1 + 10 + 4,
    ),
]


@pytest.mark.slow  # a database locked by another process; every harness at once
@pytest.mark.parametrize("case", GEMINI_OPENCODE_CASES, ids=[c.name for c in GEMINI_OPENCODE_CASES])
def test_gemini_opencode_hostile_case(case: Case, tmp_path: Path) -> None:
    try:
        test_hostile_case(case, tmp_path)
    finally:
        while _HOLDERS:
            holder = _HOLDERS.pop()
            holder.kill()
            holder.wait()
            if holder.stdout is not None:
                holder.stdout.close()
