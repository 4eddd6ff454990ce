"""A head first measured after a compaction (the first request left nothing unexplained, or
the head was dropped and measured again) is named the after-compaction head in the trace,
as summary and report name it (views.head_measured_after): the label follows "measured
after a compaction", not "a head item was there already" (review-d14 finding 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test_head_label import head_labels

from agent_profiler.attribution import (
    INFERRED_HEAD_AFTER_COMPACTION_LABEL,
    INFERRED_HEAD_ID,
    ContextLog,
    Observation,
)
from agent_profiler.model import Category
from agent_profiler.views import head_label, head_measured_after
from rules_spy import sessions


def test_no_head_at_the_first_request_then_one_after_a_compaction() -> None:
    log = ContextLog()
    log.add("p", Category.PROMPTS, 4_000)  # 1,000 tokens: above the reported 900, no head
    log.observe(Observation.request(1, "r1", model="m", reported_tokens=900))
    log.clear()
    log.add("s", Category.SUMMARIES, 80)  # 20 tokens
    log.observe(Observation.request(3, "r3", model="m", reported_tokens=1_200))
    first, after = log.replay()
    assert not any(c.id == INFERRED_HEAD_ID for c in first.changes)
    (again,) = [c for c in after.changes if c.id == INFERRED_HEAD_ID]
    assert (again.tokens, again.label) == (1_180, INFERRED_HEAD_AFTER_COMPACTION_LABEL)


def test_a_head_dropped_after_one_compaction_and_measured_after_the_next() -> None:
    log = ContextLog()
    log.add("p", Category.PROMPTS, 4_000)
    log.observe(Observation.request(1, "r1", model="m", reported_tokens=900))  # no head
    log.clear()
    log.add("s", Category.SUMMARIES, 4_000)  # 1,000 tokens: above the reported 900 again
    log.observe(Observation.request(2, "r2", model="m", reported_tokens=900))  # no head
    log.clear()
    log.add("t", Category.SUMMARIES, 80)
    log.observe(Observation.request(3, "r3", model="m", reported_tokens=500))
    labels = [c.label for s in log.replay() for c in s.changes if c.id == INFERRED_HEAD_ID]
    assert labels == [INFERRED_HEAD_AFTER_COMPACTION_LABEL]


def _turn(mid: str, second: int, kind: str, content: str, tokens: int = 0) -> dict[str, Any]:
    turn: dict[str, Any] = {
        "id": mid,
        "timestamp": f"2026-01-01T00:00:{second:02d}.000Z",
        "type": kind,
        "content": content,
    }
    if tokens:
        turn |= {"model": "gemini-2.5-pro", "tokens": {"input": tokens, "output": 1}}
    return turn


def test_a_gemini_session_names_it_alike_in_trace_and_summary(tmp_path: Path) -> None:
    """u1 of 4,000 characters reported at 100 tokens (no head), a compression notice, then
    g3 reported at 2,000: the head is measured after compaction 1 only."""
    messages = [
        _turn("u1", 1, "user", "a" * 4_000),
        _turn("g1", 2, "gemini", "ok", 100),
        _turn("u2", 3, "user", "b" * 40),
        _turn("g2", 4, "gemini", "ok", 150),
        _turn("n", 5, "info", "Context compressed from 1% to 0%."),
        _turn("u3", 6, "user", "next"),
        _turn("g3", 7, "gemini", "ok", 2_000),
    ]
    doc = {"sessionId": "hand-made", "projectHash": "ab", "startTime": "2026-01-01T00:00:00Z"}
    path = tmp_path / "session-2026-01-01T00-00-handmade.json"
    path.write_text(json.dumps(doc | {"messages": messages}))
    (session,) = sessions(path)
    assert len(session.compactions) == 1
    after = head_measured_after(session)
    assert after == 1
    assert head_labels(session) == [INFERRED_HEAD_AFTER_COMPACTION_LABEL]
    assert head_label(after) != head_label(None)  # the summary's name is the after-compaction one
