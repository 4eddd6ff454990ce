"""Writes hidden.jsonl, a SYNTHETIC Claude Code 2.1.179-shaped transcript for the golden of
issue 28: signature-only thinking with final usage, a screenshot in a tool result and a
pasted image (PNG headers only), attachments (hook messages, skill and deferred-tool
listings, a queued prompt, an empty task reminder, command permissions) and the UI records
(`mode`, `permission-mode`, `ai-title`). Run from this folder: python make_hidden.py; change
this script, not the .jsonl, and refresh the goldens. Listed in ../SOURCES.md."""

import base64
import json
import struct
import zlib

SESSION = "33333333-4444-4555-8666-777777777777"
records: list[dict[str, object]] = [
    {"type": "last-prompt", "leafUuid": "u3", "sessionId": SESSION},
    {"type": "mode", "mode": "normal", "sessionId": SESSION},
    {"type": "permission-mode", "permissionMode": "default", "sessionId": SESSION},
]


def png(width: int, height: int) -> str:
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + header
    data = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk
    return base64.b64encode(data + struct.pack(">I", zlib.crc32(chunk))).decode()


def rec(kind: str, uuid: str, parent: str | None, second: int, **fields: object) -> None:
    records.append(
        {
            "parentUuid": parent,
            "isSidechain": False,
            "type": kind,
            "uuid": uuid,
            "timestamp": f"2026-06-17T17:00:{second:02d}.000Z",
            "sessionId": SESSION,
            "version": "2.1.179",
            "cwd": "/home/USER/demo",
            "userType": "external",
            **fields,
        }
    )


def attachment(uuid: str, parent: str, second: int, body: dict[str, object]) -> None:
    rec("attachment", uuid, parent, second, attachment=body)


def assistant(
    uuid: str, parent: str, second: int, mid: str, block: object, usage: dict[str, int]
) -> None:
    message = {
        "model": "claude-opus-4-8",
        "id": mid,
        "type": "message",
        "role": "assistant",
        "content": [block],
        "stop_reason": "tool_use" if mid == "msg_A" else "end_turn",
        "usage": usage,
    }
    rec("assistant", uuid, parent, second, requestId="req_" + mid, message=message)


attachment(
    "h1",
    "",
    1,
    {
        "type": "hook_success",
        "hookName": "SessionStart:startup",
        "content": "",
        "stdout": "{}",
        "exitCode": 0,
    },
)
attachment("h2", "h1", 1, {"type": "hook_system_message", "content": "Linked to your next commit."})
rec(
    "user",
    "u1",
    "h2",
    2,
    message={"role": "user", "content": "Why is the page blank? Look at the screenshot."},
)
attachment(
    "t1",
    "u1",
    2,
    {
        "type": "deferred_tools_delta",
        "addedNames": ["WebFetch", "WebSearch", "NotebookEdit"],
        "addedLines": [],
        "removedNames": [],
    },
)
attachment(
    "t2",
    "t1",
    2,
    {
        "type": "skill_listing",
        "content": (
            "- review: Review a change for bugs and style.\n"
            "- init: Write a CLAUDE.md for this repository."
        ),
        "skillCount": 2,
        "isInitial": True,
    },
)
records.append({"type": "ai-title", "aiTitle": "Blank page", "sessionId": SESSION})
usage_a = {
    "input_tokens": 3,
    "cache_creation_input_tokens": 9000,
    "cache_read_input_tokens": 0,
    "output_tokens": 640,
}
thinking = {"type": "thinking", "thinking": "", "signature": "RXFrZWQ" * 40}
assistant("a1", "t2", 4, "msg_A", thinking, usage_a)
assistant(
    "a2",
    "a1",
    4,
    "msg_A",
    {"type": "text", "text": "I will take a screenshot of the page."},
    usage_a,
)
call = {
    "type": "tool_use",
    "id": "toolu_shot",
    "name": "Screenshot",
    "input": {"url": "http://localhost:3000"},
}
assistant("a3", "a2", 5, "msg_A", call, usage_a)
image = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "data": png(1280, 800)},
}
rec(
    "user",
    "u2",
    "a3",
    7,
    message={
        "role": "user",
        "content": [{"tool_use_id": "toolu_shot", "type": "tool_result", "content": [image]}],
    },
)
attachment(
    "q1",
    "u2",
    7,
    {"type": "queued_command", "prompt": "also check the console errors", "commandMode": "prompt"},
)
attachment("r1", "q1", 7, {"type": "task_reminder", "content": [], "itemCount": 0})
attachment("c1", "r1", 7, {"type": "command_permissions", "allowedTools": []})
usage_b = {
    "input_tokens": 3,
    "cache_creation_input_tokens": 2200,
    "cache_read_input_tokens": 9000,
    "output_tokens": 30,
}
assistant(
    "a4",
    "c1",
    9,
    "msg_B",
    {"type": "text", "text": "The page renders; the console shows one error."},
    usage_b,
)
records.append({"type": "mode", "mode": "normal", "sessionId": SESSION})

with open("hidden.jsonl", "w", encoding="utf-8") as out:
    for record in records:
        out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
