"""Gemini CLI compression notices (gemini_compression.py): the three spellings, a `/compress`
that compressed nothing, and the turns a ≤0.43 compression keeps verbatim.

The corpus holds no compressed 0.18–0.43 file: as in the review that found these
(rev-attr2 findings 1, 4, 7), one `info` record is inserted into the real myflix 0.29.5
session after its 21st request; hand-made documents pin the rules on their own."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.model import Category, Session
from rules_spy import sessions, write
from shared_paths import CORPUS

SHARED = CORPUS / "gemini-cli"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f"no shared corpus at {SHARED}")
MYFLIX = SHARED / "myflix-0.29.5/jules/chats/session-2026-02-25T07-36-c8af175c.json"
OLD_AUTO = (
    "IMPORTANT: This conversation exceeded the compress threshold. A compressed context will"
    " be sent for future messages (compressed from: 60000 to 9000 tokens)."
)
JOURNAL = (Category.PROMPTS, Category.ASSISTANT, Category.RESULTS)


def _myflix(tmp_path: Path, text: str | None, next_input: int | None = None) -> Session:
    """myflix with an `info` `text` after its 21st request (none: unmodified), and the
    request after it reporting `next_input` when given."""
    value = json.loads(MYFLIX.read_text(encoding="utf-8"))
    messages = value["messages"]
    requests = [i for i, m in enumerate(messages) if m["type"] == "gemini" and m.get("tokens")]
    at = requests[20]
    if text is not None:
        notice = {"id": "notice", "timestamp": messages[at]["timestamp"], "type": "info"}
        messages.insert(at + 1, {**notice, "content": text})
    if next_input is not None:
        messages[requests[21] + 1]["tokens"]["input"] = next_input
    path = tmp_path / MYFLIX.name
    path.write_text(json.dumps(value), encoding="utf-8")
    return next(s for s in sessions(path) if s.session_id == value["sessionId"])


def _at(session: Session, response_id: str) -> dict[Category, int]:
    return dict(next(s for s in session.snapshots if s.anchor_id == response_id).categories)


@needs_shared
@pytest.mark.parametrize("text", [OLD_AUTO, "Context compressed from 6% to 1%."])
def test_both_automatic_notices_are_compactions_that_keep_the_last_turns(
    tmp_path: Path, text: str
) -> None:
    """0.15–0.32 "IMPORTANT: … (compressed from: X to Y tokens)." and ≥0.33 "Context
    compressed from X% to Y%.": a compaction each (the first with Gemini CLI's own counts).
    The last ~30% of the history by Gemini CLI's split rule stays in its categories (704
    tokens here; the review's independent recount of the rule found ≈706); the rest
    leaves, and the head is measured again (system, tools, the unrecorded summary)."""
    session = _myflix(tmp_path, text)
    (compaction,) = session.compactions
    assert (compaction.id, compaction.trigger) == ("notice", "auto")
    if text == OLD_AUTO:
        assert (compaction.pre_tokens, compaction.post_tokens) == (60_000, 9_000)
    else:
        assert (compaction.pre_tokens, compaction.post_tokens) == (13_974, None)
    first = next(r for r in session.responses if r.start_ns >= compaction.end_ns)
    assert first.id.startswith("93a25dee")
    after = _at(session, first.id)
    kept = sum(after.get(c, 0) for c in JOURNAL)
    before = _at(_myflix(tmp_path, None), first.id)
    assert kept == 704 < sum(before.get(c, 0) for c in JOURNAL) // 5
    assert after[Category.UNATTRIBUTED] == first.usage.prompt_tokens - kept
    assert compaction.removed_items > 0


@needs_shared
def test_a_compress_command_that_compressed_nothing_is_no_compaction(tmp_path: Path) -> None:
    """`/compress` writes its empty `info` also when Gemini CLI compressed nothing (NOOP,
    or a failed compression); then the next request is no smaller (13,974 before it,
    14,099 after): a marker, and every breakdown as without it. With a drop it is one."""
    plain = _myflix(tmp_path, None)
    session = _myflix(tmp_path, "")
    assert session.compactions == ()
    assert [m.value for m in session.markers if m.value.startswith("/compress")] == [
        "/compress: nothing compressed (the next request is no smaller)"
    ]
    assert [s.categories for s in session.snapshots] == [s.categories for s in plain.snapshots]
    (compaction,) = _myflix(tmp_path, "", next_input=9_000).compactions
    assert (compaction.trigger, compaction.pre_tokens) == ("manual", 13_974)


# --------------------------------------------------------------------------- hand-made


def _turn(mid: str, second: int, kind: str, content: str, tokens: int = 0) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": mid,
        "timestamp": f"2026-01-01T00:00:{second:02d}.000Z",
        "type": kind,
        "content": content,
    }
    if tokens:
        record |= {"model": "gemini-2.5-pro", "tokens": {"input": tokens, "output": 1}}
    return record


TURNS = [
    _turn("u1", 1, "user", "a" * 4_000),
    _turn("g1", 2, "gemini", "b" * 4_000, 2_100),
    _turn("u2", 3, "user", "c" * 100),
    _turn("g2", 4, "gemini", "d" * 1_000, 2_400),
]


def _document(tmp_path: Path, messages: list[dict[str, Any]]) -> Session:
    header = {"sessionId": "hand-made", "projectHash": "ab", "startTime": "2026-01-01T00:00:00Z"}
    path = tmp_path / "session-2026-01-01T00-00-handmade.json"
    path.write_text(json.dumps({**header, "messages": messages}), encoding="utf-8")
    (session,) = sessions(path)
    return session


def test_the_turns_from_the_split_point_on_stay(tmp_path: Path) -> None:
    """u1 and g1 hold ~87% of the history's JSON characters: Gemini CLI's split falls
    before u2 (the first user turn with ≥70% before it), so u2 and g2 are sent again
    verbatim and stay; u1 and g1 leave. A `/compress` with a drop after it, the same."""
    notice = _turn("n", 5, "info", "Context compressed from 1% to 0%.")
    later = [_turn("u3", 6, "user", "next"), _turn("g3", 7, "gemini", "ok", 900)]
    for content in ("Context compressed from 1% to 0%.", ""):
        session = _document(
            tmp_path, [*copy.deepcopy(TURNS), {**notice, "content": content}, *later]
        )
        (compaction,) = session.compactions
        assert compaction.removed_items == 2
        after = _at(session, "g3")
        # u2 (100 chars) + u3 ("next"), g2 (1,000 chars): chars/4 each; g3's own answer
        # is not in its request
        assert (after[Category.PROMPTS], after[Category.ASSISTANT]) == (25 + 1, 250)
        assert after[Category.UNATTRIBUTED] == 900 - 26 - 250


def test_a_history_ending_in_a_model_answer_past_the_split_is_all_compressed(
    tmp_path: Path,
) -> None:
    """No user turn after 70%, and the last turn the model's without calls: Gemini CLI
    compresses everything; every recorded turn leaves."""
    turns = copy.deepcopy(TURNS)
    turns[3]["content"] = "d" * 40_000
    notice = _turn("n", 5, "info", "Context compressed from 1% to 0%.")
    session = _document(tmp_path, [*turns, notice, _turn("g3", 7, "gemini", "ok", 900)])
    assert session.compactions[0].removed_items == 4
    assert _at(session, "g3") == {Category.UNATTRIBUTED: 900}


def test_a_notice_after_a_checkpoint_is_that_compaction_not_another(tmp_path: Path) -> None:
    """≥0.44 writes the compressed history (`$set.messages`, summary included) before the
    notice: one compaction, and the summary stays."""
    header = {"sessionId": "s", "projectHash": "ab", "startTime": "2026-01-01T00:00:00Z"}
    snapshot = _turn("s", 5, "user", "<state_snapshot>" + "s" * 80)
    session = sessions(
        write(
            tmp_path,
            [
                header,
                *copy.deepcopy(TURNS),
                {"$set": {"messages": [snapshot, TURNS[2], TURNS[3]]}},
                _turn("n", 6, "info", "Context compressed from 1% to 0%."),
                _turn("g3", 7, "gemini", "ok", 900),
            ],
            "session-2026-01-01T00-00-s.jsonl",
        )
    )[0]
    assert [c.trigger for c in session.compactions] == ["history replaced ($set.messages)"]
    assert _at(session, "g3")[Category.SUMMARIES] == 24
