"""A content part of a type the adapter does not know is said, never dropped in silence
(review-bad 14): Pi's user, assistant and tool-result messages (and an extension's
message), and an item of an OpenCode 2.x tool's output (`state.content[]`), were dropped
without a word while Claude Code and Codex say `content part of type 'x' not recognised
(not read)` (an `unknown-block` warning with its place)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from samples import read

LOCAL = Path(__file__).resolve().parents[1] / "data" / "journals"
PI = LOCAL / "pi" / "pi-mono_large-session_v1_first-25-lines.jsonl"
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "adapters" / "opencode"))


def _said(diagnostics: object) -> list[tuple[int | None, str]]:
    return [
        (w.line, w.message)
        for w in diagnostics.warnings  # type: ignore[attr-defined]
        if w.kind == "unknown-block"
    ]


def test_a_pi_content_part_of_an_unknown_type_is_said_with_its_line(tmp_path: Path) -> None:
    # GIVEN a Pi journal whose first user, assistant and tool-result messages each hold
    # one more part, of a type no Pi build writes
    records = [json.loads(line) for line in PI.read_text().splitlines()]
    lines = {}
    for role in ("user", "assistant", "toolResult"):
        number, record = next(
            (n, r)
            for n, r in enumerate(records, 1)
            if r.get("type") == "message" and r["message"].get("role") == role
        )
        record["message"]["content"].append({"type": f"zzz_{role}", "text": "A" * 400})
        lines[role] = number
    records[lines["user"] - 1]["message"]["content"].append("not an object")
    journal = tmp_path / "pi.jsonl"
    journal.write_text("".join(json.dumps(r) + "\n" for r in records))
    # WHEN read
    (session,), diagnostics = read(journal)
    # THEN each is an `unknown-block` warning naming its type and line, and the session
    # is still read as before
    assert _said(diagnostics) == [
        (lines["user"], "content part of type 'zzz_user' not recognised (not read)"),
        (lines["user"], "content part of type 'untyped' not recognised (not read)"),
        (lines["assistant"], "content part of type 'zzz_assistant' not recognised (not read)"),
        (lines["toolResult"], "content part of type 'zzz_toolResult' not recognised (not read)"),
    ]
    (plain,), clean = read(PI)
    assert _said(clean) == [] and clean.warning_total == 0
    assert len(session.responses) == len(plain.responses)


def test_the_known_pi_parts_are_not_said(tmp_path: Path) -> None:
    # Text, images, thinking and tool calls are read: no warning for any of them.
    _, diagnostics = read(LOCAL / "pi" / "pi-mono_large-session_v1.jsonl")
    assert _said(diagnostics) == []


def test_an_opencode_2x_tool_output_item_of_an_unknown_type_is_said(tmp_path: Path) -> None:
    from test_opencode_v2 import CONVERSATION, build

    # GIVEN a 2.x database whose read tool's output holds, beside its text, an item of a
    # type OpenCode is not known to write, and a file (seen, not measured)
    rows = json.loads(json.dumps(CONVERSATION))
    output = rows[3][1]["content"][1]["state"]["content"]
    output += [{"type": "zzz_out", "text": "B" * 400}, {"type": "file", "mime": "image/png"}]
    path = build(tmp_path / "opencode.db", {"ses_a": [tuple(r) for r in rows]})
    # WHEN read
    (session,), diagnostics = read(path)
    # THEN the unknown item is an `unknown-block` warning naming the message; the file is
    # listed as unmeasured as before, and the text is still the result
    assert _said(diagnostics) == [
        (None, "message msg_ses_a_3: tool output item of type 'zzz_out' not recognised (not read)")
    ]
    (call,) = session.tool_calls
    assert call.result_chars == len(output[0]["text"])
    assert dict(session.unmeasured).get("file-part") == 1


def test_a_pi_content_part_whose_type_is_no_string_is_said_as_untyped(tmp_path: Path) -> None:
    # A part's `type` of a list or an object cannot be looked up in the table of known
    # types: it was a TypeError (exit 70) where a damaged part is an `untyped` warning.
    records = [json.loads(line) for line in PI.read_text().splitlines()]
    number, record = next(
        (n, r)
        for n, r in enumerate(records, 1)
        if r.get("type") == "message" and r["message"].get("role") == "toolResult"
    )
    record["message"]["content"] += [{"type": [], "text": "A"}, {"type": {"x": 1}}]
    journal = tmp_path / "pi.jsonl"
    journal.write_text("".join(json.dumps(r) + "\n" for r in records))
    (session,), diagnostics = read(journal)
    untyped = "content part of type 'untyped' not recognised (not read)"
    assert _said(diagnostics) == [(number, untyped), (number, untyped)]
    assert session.responses
