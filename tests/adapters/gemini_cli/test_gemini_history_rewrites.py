"""How Gemini CLI ≥0.44 writes its history again, read from its source (google-gemini/
gemini-cli @5411f113; no journal of the corpus is that new): `setHistory` given plain
turns (tool output masking, once a session holds about 80k tokens of tool output)
records every turn anew, one line each and without a model, then lists them in
`$set.messages`; the turns carry their calls and results as `functionCall` and
`functionResponse` parts only. Those lines are the list's turns: no prompts, no requests,
no compaction; the calls' arguments and results stay in the context, a masked result at
its new size. Hand-made recordings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_profiler.model import Category, ChangeKind
from rules_spy import sessions

HEADER = {"sessionId": "rewrites", "projectHash": "ab", "startTime": "2026-01-01T00:00:00Z"}
OUTPUT = "line of the file\n" * 250  # 4,250 characters: 1,063 tokens at chars/4
MASKED = "<tool_output_masked>a.py: 250 lines</tool_output_masked>"


def _at(second: float) -> str:
    return f"2026-01-01T00:00:{second:06.3f}Z"


def _response(call_id: str, output: str) -> dict[str, Any]:
    return {"id": call_id, "name": "read_file", "response": {"output": output}}


def _live() -> list[dict[str, Any]]:
    """A prompt, its request with a read_file call (result embedded), the next request."""
    call = {
        "id": "c1",
        "name": "read_file",
        "args": {"path": "a.py"},
        "result": [{"functionResponse": _response("c1", OUTPUT)}],
        "status": "success",
        "timestamp": _at(3),
    }
    tokens = {"output": 5, "cached": 0, "thoughts": 0}
    return [
        {"id": "u1", "timestamp": _at(1), "type": "user", "content": [{"text": "read a.py"}]},
        {
            "id": "g1",
            "timestamp": _at(2),
            "type": "gemini",
            "content": "",
            "model": "gemini-2.5-pro",
            "tokens": {"input": 1_000, **tokens},
            "toolCalls": [call],
        },
        {
            "id": "g2",
            "timestamp": _at(4),
            "type": "gemini",
            "content": "It reads lines.",
            "model": "gemini-2.5-pro",
            "tokens": {"input": 2_100, **tokens},
        },
    ]


def _written_again(second: float, output: str) -> list[dict[str, Any]]:
    """The four turns of `_live` as `setHistory` records them again, then the list."""
    turns = [
        ("user", [{"text": "read a.py"}]),
        ("gemini", [{"functionCall": {"id": "c1", "name": "read_file", "args": {"path": "a.py"}}}]),
        ("user", [{"functionResponse": _response("c1", output)}]),
        ("gemini", [{"text": "It reads lines."}]),
    ]
    records: list[dict[str, Any]] = []
    for index, (kind, parts) in enumerate(turns):
        record = {"id": f"s{index}", "timestamp": _at(second + index / 1000), "type": kind}
        record["content"] = parts
        if kind == "gemini":
            record |= {"thoughts": [], "tokens": None}  # (recordMessage: no model)
        records.append(record)
    return [*records, {"$set": {"messages": records, "lastUpdated": _at(second + 0.01)}}]


def _next() -> list[dict[str, Any]]:
    return [
        {"id": "u3", "timestamp": _at(6), "type": "user", "content": [{"text": "and b.py?"}]},
        {
            "id": "g3",
            "timestamp": _at(7),
            "type": "gemini",
            "content": "Let me look.",
            "model": "gemini-2.5-pro",
            "tokens": {"input": 1_200, "output": 5, "cached": 0, "thoughts": 0},
        },
    ]


def _read(tmp_path: Path, lines: list[dict[str, Any]]) -> Any:
    path = tmp_path / "session-2026-01-01T00-00-rewrites.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [HEADER, *lines]))
    (session,) = sessions(path)
    return session


def test_a_masked_history_written_again_is_no_prompts_requests_or_compaction(
    tmp_path: Path,
) -> None:
    session = _read(tmp_path, [*_live(), *_written_again(5, MASKED), *_next()])
    assert [p.id for p in session.prompts] == ["u1", "u3"]
    assert [r.id for r in session.responses] == ["g1", "g2", "g3"]
    assert (session.failed_requests, session.compactions) == ((), ())
    before, last = session.snapshots[-2:]
    assert (before.anchor_id, last.anchor_id) == ("g2", "g3")
    # The call's arguments stay as they were (no change); its result is replaced by the
    # masked one; the turns' text left and came back under the new ids (u1's prompt as
    # s0's, g2's answer as s3's, in the context from the next request on).
    changes = {c.id: (c.change, c.tokens) for c in last.changes}
    masked = -(-len(MASKED) // 4)
    assert changes.pop("result:c1") == (ChangeKind.REPLACED, masked)
    assert changes == {
        "u1:0": (ChangeKind.REMOVED, 0),
        "s0:0": (ChangeKind.ADDED, 3),
        "s3:text": (ChangeKind.ADDED, 4),
        "u3:0": (ChangeKind.ADDED, 3),
    }
    arguments = next(c.tokens for c in before.changes if c.id == "call:c1")
    categories = dict(last.categories)
    assert (categories[Category.RESULTS], categories[Category.ASSISTANT]) == (
        masked,
        arguments + 4,
    )


def test_the_turns_written_again_keep_the_results_size_when_nothing_was_masked(
    tmp_path: Path,
) -> None:
    """The same bytes written again: the context after is the context before (the last
    request before and the one after differ only by the new prompt and the answer)."""
    session = _read(tmp_path, [*_live(), *_written_again(5, OUTPUT), *_next()])
    before, after = (dict(s.categories) for s in session.snapshots[-2:])
    assert after[Category.RESULTS] == before[Category.RESULTS] == -(-len(OUTPUT) // 4)
    assert after[Category.ASSISTANT] > before[Category.ASSISTANT]  # (g2's text, now in)


def test_a_resumed_history_is_not_taken_for_turns_written_again(tmp_path: Path) -> None:
    """A resumed session writes its history as the list (`initialize`): its turns were
    written over time, its model turns with their model. They stay prompts and requests."""
    live = _live()
    session = _read(tmp_path, [*live, {"$set": {"messages": live}}, *_next()])
    assert [p.id for p in session.prompts] == ["u1", "u3"]
    assert [r.id for r in session.responses] == ["g1", "g2", "g3"]


def test_a_model_turn_gemini_cli_wrote_itself_is_no_request(tmp_path: Path) -> None:
    """≥0.44 writes a model turn of its own when a tool returns binary content
    (`addHistory` → `recordSyntheticMessage`: no model, no tokens). It is history, not a
    request that failed: every real model turn names its model, a cancelled one too."""
    synthetic = {
        "id": "b1",
        "timestamp": _at(5),
        "type": "gemini",
        "content": [{"text": "Binary content received."}],
        "thoughts": [],
        "tokens": None,
    }
    cancelled = {**synthetic, "id": "x1", "timestamp": _at(8), "model": "gemini-2.5-pro"}
    session = _read(tmp_path, [*_live(), synthetic, *_next(), cancelled])
    assert [r.id for r in session.responses] == ["g1", "g2", "g3"]
    assert [r.id for r in session.failed_requests] == ["x1"]
    last = next(s for s in session.snapshots if s.anchor_id == "g3")
    assert "b1:text" in {c.id for c in last.changes}  # (its text is in the history)


def test_a_compressions_kept_turns_keep_their_calls_and_results(tmp_path: Path) -> None:
    """A compression gives every turn of the new history a new id (client.ts
    `tryCompressChat` → `startChat(newHistory)` with plain turns) and lists them in
    `$set.messages`: the summary, the model's "Got it", then the turns kept, whose call
    and result are parts only. The call's items left with the old turns; they come back
    with the kept ones, and the compaction is the list's."""
    turns = [
        ("user", [{"text": "<state_snapshot>read a.py, asked what it holds</state_snapshot>"}]),
        ("gemini", [{"text": "Got it. Thanks for the additional context!"}]),
        ("gemini", [{"functionCall": {"id": "c1", "name": "read_file", "args": {"path": "a.py"}}}]),
        ("user", [{"functionResponse": _response("c1", OUTPUT)}]),
    ]
    kept = [
        {"id": f"k{i}", "timestamp": _at(5), "type": kind, "content": content}
        for i, (kind, content) in enumerate(turns)
    ]
    more = [  # (prompts the compression summarised: more turns left than came)
        {"id": f"u2{i}", "timestamp": _at(4.5), "type": "user", "content": [{"text": "more"}]}
        for i in range(3)
    ]
    session = _read(tmp_path, [*_live(), *more, {"$set": {"messages": kept}}, *_next()])
    (compaction,) = session.compactions
    assert compaction.trigger == "history replaced ($set.messages)"
    # At the compaction: the prompt left, the summary and "Got it" came; the call and its
    # result left with their turn and came back with the kept ones, unchanged.
    (after,) = [s for s in session.snapshots if s.anchor_id == compaction.id]
    changes = {c.id: c.change for c in after.changes}
    assert changes == {
        "u1:0": ChangeKind.REMOVED,
        "k0:0": ChangeKind.ADDED,
        "k1:text": ChangeKind.ADDED,
    }
    arguments = next(c.tokens for c in session.snapshots[1].changes if c.id == "call:c1")
    categories = dict(after.categories)
    assert (categories[Category.RESULTS], categories[Category.ASSISTANT]) == (
        -(-len(OUTPUT) // 4),
        arguments + -(-len("Got it. Thanks for the additional context!") // 4),
    )


def _turn(mid: str, second: float, kind: str = "user") -> dict[str, Any]:
    record: dict[str, Any] = {"id": mid, "timestamp": _at(second), "type": kind}
    if kind == "gemini":
        tokens = {"input": 1_000 + int(second), "output": 5, "cached": 0, "thoughts": 0}
        return record | {"content": f"answer {mid}", "model": "gemini-2.5-pro", "tokens": tokens}
    return record | {"content": [{"text": f"prompt {mid}"}]}


def test_rollbacks_are_told_by_the_turns_alone(tmp_path: Path) -> None:
    """The list `updateMessagesFromHistory` writes holds turns only: the notices around
    them (Gemini CLI's "Request cancelled.", an error) are in no list. Two cancelled
    requests are two rollbacks; a list of every turn, a notice after them, none."""
    cancelled = {"id": "i1", "timestamp": _at(4), "type": "info", "content": "Request cancelled."}
    u1, g1 = _turn("u1", 1), _turn("g1", 2, "gemini")
    u3, g3 = _turn("u3", 5), _turn("g3", 6, "gemini")
    lines = [u1, g1, _turn("u2", 3), {"$set": {"messages": [u1, g1]}}, cancelled]
    lines += [u3, g3, _turn("u4", 7), {"$set": {"messages": [u1, g1, u3, g3]}}]
    session = _read(tmp_path, lines)
    assert session.compactions == ()
    rollbacks = [m.value for m in session.markers if m.kind == "rollback"]
    assert rollbacks == ["rolled back 1 message", "rolled back 1 message"]  # (u2; u4)
    resumed = _read(tmp_path, [u1, g1, cancelled, {"$set": {"messages": [u1, g1]}}])
    assert [m.kind for m in resumed.markers] == ["info"]
    assert resumed.compactions == ()


def test_a_tools_binary_output_is_sent_media_and_no_request(tmp_path: Path) -> None:
    """A tool returns an image (geminiChat.ts, binary injections): Gemini CLI records the
    cleaned tool response, a model turn of its own ("Binary content received", a thought,
    no model) and the image as an `info` record, which the model receives as the next
    user turn. The image is listed as unmeasured media; no request, no blank notice."""
    image = {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}
    thought = {"text": "Binary content received. Proceeding with analysis.", "thought": True}
    lines = [
        *_live()[:2],
        {"id": "t1", "timestamp": _at(3), "type": "user", "content": [
            {"functionResponse": _response("c1", "Binary content provided (1 item(s)).")}
        ]},
        {"id": "b1", "timestamp": _at(3), "type": "gemini", "content": [thought],
         "thoughts": [], "tokens": None},
        {"id": "i1", "timestamp": _at(3), "type": "info", "content": [image]},
        *_next(),
    ]  # fmt: skip
    session = _read(tmp_path, lines)
    assert [r.id for r in session.responses] == ["g1", "g3"]
    assert session.failed_requests == ()
    assert dict(session.unmeasured).get("media-part") == 1
    assert [m.kind for m in session.markers] == []
