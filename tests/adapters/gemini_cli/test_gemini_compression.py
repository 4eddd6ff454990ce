"""Gemini CLI compression notices (gemini_compression.py): the three spellings, a `/compress`
that compressed nothing, and the turns a ≤0.43 compression keeps verbatim.

The corpus holds no compressed 0.18–0.43 file: as in the review that found these
(rev-attr2 findings 1, 7), one `info` record is inserted into the real myflix 0.29.5
session after its 21st request; hand-made documents pin the rules on their own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_profiler.model import Category, Session
from rules_spy import sessions
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
def test_both_automatic_notices_are_compactions(tmp_path: Path, text: str) -> None:
    """0.15–0.32 "IMPORTANT: … (compressed from: X to Y tokens)." and ≥0.33 "Context
    compressed from X% to Y%.": a compaction each (the first with Gemini CLI's own counts
    before and after); the journal's turns before it leave."""
    session = _myflix(tmp_path, text)
    (compaction,) = session.compactions
    assert (compaction.id, compaction.trigger) == ("notice", "auto")
    if text == OLD_AUTO:
        assert (compaction.pre_tokens, compaction.post_tokens) == (60_000, 9_000)
    else:
        assert (compaction.pre_tokens, compaction.post_tokens) == (13_974, None)
    assert compaction.removed_items > 0
    assert not [m for m in session.markers if m.kind == "info" and "compress" in m.value]


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
