"""Writes small.jsonl, the SYNTHETIC Claude Code transcript used by the tests.

Run from this folder: python make_small.py. Every edge case it holds is listed in
../SOURCES.md; change this script, not the .jsonl, and refresh the goldens.
"""

import json

SESSION = "11111111-2222-4333-8444-555555555555"
records: list[dict[str, object]] = []


def rec(**fields: object) -> None:
    base: dict[str, object] = {
        "sessionId": SESSION,
        "version": "2.1.99",
        "cwd": "/home/USER/demo",
        "isSidechain": False,
        "userType": "external",
    }
    base.update(fields)
    records.append(base)


def assistant(
    uuid: str, parent: str, ts: str, mid: str, content: list[object], usage: dict[str, int]
) -> None:
    rec(
        type="assistant",
        uuid=uuid,
        parentUuid=parent,
        timestamp=ts,
        requestId="req_" + mid,
        message={
            "model": "claude-sonnet-4-5",
            "id": mid,
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": None,
            "usage": usage,
        },
    )


def result(uuid: str, parent: str, ts: str, call: str, content: object, **extra: object) -> None:
    block = {"type": "tool_result", "tool_use_id": call, "content": content, **extra}
    rec(
        type="user",
        uuid=uuid,
        parentUuid=parent,
        timestamp=ts,
        message={"role": "user", "content": [block]},
    )


def usage(inp: int, write: int, read: int, out: int) -> dict[str, int]:
    return {
        "input_tokens": inp,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "output_tokens": out,
    }


records.append(
    {
        "type": "summary",
        "leafUuid": "u0",
        "summary": "SYNTHETIC test journal written by hand for agent-profiler's tests",
    }
)
rec(
    type="user",
    uuid="u1",
    parentUuid=None,
    timestamp="2026-01-01T10:00:00.000Z",
    message={"role": "user", "content": "Fix the bug in parser.py please"},
)
UA = usage(3, 5000, 10000, 5)
assistant(
    "a1",
    "u1",
    "2026-01-01T10:00:02.000Z",
    "msg_A",
    [{"type": "text", "text": "I will read both files."}],
    UA,
)
assistant(
    "a2",
    "a1",
    "2026-01-01T10:00:02.500Z",
    "msg_A",
    [
        {
            "type": "tool_use",
            "id": "toolu_read1",
            "name": "Read",
            "input": {"file_path": "/home/USER/demo/parser.py"},
        }
    ],
    UA,
)
# A later block of the same message with sparse usage must not zero the prompt (seed 001).
assistant(
    "a3",
    "a2",
    "2026-01-01T10:00:02.700Z",
    "msg_A",
    [
        {
            "type": "tool_use",
            "id": "toolu_read2",
            "name": "Read",
            "input": {"file_path": "/home/USER/demo/test_parser.py"},
        }
    ],
    {"output_tokens": 90},
)
# Results out of order.
result(
    "u2",
    "a3",
    "2026-01-01T10:00:03.000Z",
    "toolu_read2",
    "def test_parse():\n" + "    assert parse('x') == 'x'\n" * 40,
)
result(
    "u3",
    "u2",
    "2026-01-01T10:00:03.200Z",
    "toolu_read1",
    [
        {
            "type": "text",
            "text": "SECRET_BODY_MARKER def parse(s):\n" + "    return s.strip()\n" * 400,
        }
    ],
)
assistant(
    "a4",
    "u3",
    "2026-01-01T10:00:05.000Z",
    "msg_B",
    [
        {
            "type": "tool_use",
            "id": "toolu_edit",
            "name": "Edit",
            "input": {
                "file_path": "/home/USER/demo/parser.py",
                "old_string": "strip()",
                "new_string": "strip().lower()",
            },
        }
    ],
    usage(4, 3000, 15003, 7),
)
result(
    "u4", "a4", "2026-01-01T10:00:06.000Z", "toolu_edit", "File has no such string", is_error=True
)
# All-zero usage: not a request.
assistant(
    "a5",
    "u4",
    "2026-01-01T10:00:06.500Z",
    "msg_zero",
    [{"type": "text", "text": "(synthetic reply)"}],
    {"input_tokens": 0, "output_tokens": 0},
)
assistant(
    "a6",
    "a5",
    "2026-01-01T10:00:08.000Z",
    "msg_C",
    [{"type": "text", "text": "The edit failed; the test file shows parse must lowercase."}],
    usage(2, 200, 18007, 12),
)
rec(
    type="system",
    subtype="compact_boundary",
    uuid="c1",
    parentUuid=None,
    logicalParentUuid="a6",
    timestamp="2026-01-01T10:01:00.000Z",
    content="Conversation compacted",
    compactMetadata={"trigger": "manual", "preTokens": 18300, "postTokens": 2100},
)
rec(
    type="user",
    uuid="u5",
    parentUuid="c1",
    timestamp="2026-01-01T10:01:00.100Z",
    isCompactSummary=True,
    isVisibleInTranscriptOnly=True,
    message={
        "role": "user",
        "content": "This session is being continued from a previous "
        "conversation. Summary: " + "parser work. " * 60,
    },
)
rec(
    type="user",
    uuid="u6",
    parentUuid="u5",
    timestamp="2026-01-01T10:01:10.000Z",
    message={"role": "user", "content": "Now run the tests"},
)
assistant(
    "a7",
    "u6",
    "2026-01-01T10:01:12.000Z",
    "msg_D",
    [{"type": "tool_use", "id": "toolu_bash", "name": "Bash", "input": {"command": "pytest -q"}}],
    usage(5, 1800, 10000, 3),
)
result("u7", "a7", "2026-01-01T10:01:20.000Z", "toolu_bash", "1 passed " * 100)
assistant(
    "a8",
    "u7",
    "2026-01-01T10:01:22.000Z",
    "msg_E",
    [{"type": "text", "text": "All tests pass."}],
    usage(6, 300, 11805, 20),
)
# Microcompaction: the Bash result leaves the context but stays in the file.
rec(
    type="system",
    subtype="microcompact_boundary",
    uuid="m1",
    parentUuid="a8",
    timestamp="2026-01-01T10:01:30.000Z",
    content="Context microcompacted",
    microcompactMetadata={
        "trigger": "auto",
        "preTokens": 12131,
        "tokensSaved": 225,
        "compactedToolIds": ["toolu_bash"],
        "clearedAttachmentUUIDs": [],
    },
)
rec(
    type="user",
    uuid="u8",
    parentUuid="m1",
    timestamp="2026-01-01T10:01:40.000Z",
    message={"role": "user", "content": "Thanks, commit it"},
)
assistant(
    "a9",
    "u8",
    "2026-01-01T10:01:42.000Z",
    "msg_F",
    [{"type": "text", "text": "Committed."}],
    usage(3, 40, 11870, 4),
)

with open("small.jsonl", "w", encoding="utf-8") as out:
    for record in records:
        out.write(json.dumps(record, separators=(",", ":")) + "\n")
