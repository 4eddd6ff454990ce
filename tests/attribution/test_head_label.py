"""The inferred head's item, measured again after a compaction, is labelled for what it then
holds (review-attr finding 3): besides the system prompt and tool schemas, what the harness
restored that the journal does not show (Claude Code 2.1.39's re-read files and todos:
spotter's head 25,876 → 30,330 tokens). The trace's `context` change carries the label; a
session without a compaction keeps the first request's label."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test_trace import capture_for

from agent_profiler.attribution import (
    INFERRED_HEAD_AFTER_COMPACTION_LABEL,
    INFERRED_HEAD_ID,
    INFERRED_HEAD_LABEL,
    ContextLog,
    Observation,
)
from agent_profiler.model import Category, Session
from rules_spy import sessions
from samples import DATA

SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
SPOTTER_ID = "258c7280-ae70-4798-800f-63464d01a85d"


def no_compaction(tmp_path: Path) -> Path:
    """A hand-made Claude Code transcript: one prompt, two requests, no compaction."""
    records: list[dict[str, Any]] = [
        {
            "type": "user",
            "sessionId": "hand-1",
            "uuid": "u1",
            "timestamp": "2026-01-01T10:00:00Z",
            "parentUuid": None,
            "message": {"role": "user", "content": "Say hello to the head."},
        },
    ]
    for second, (mid, cached) in enumerate((("m1", 4_000), ("m2", 4_000)), start=1):
        records.append(
            {
                "type": "assistant",
                "sessionId": "hand-1",
                "uuid": f"a{second}",
                "parentUuid": "u1" if second == 1 else "a1",
                "timestamp": f"2026-01-01T10:00:0{second}Z",
                "message": {
                    "id": mid,
                    "model": "claude-x",
                    "role": "assistant",
                    "usage": {
                        "input_tokens": 10 * second,
                        "cache_read_input_tokens": cached,
                        "output_tokens": 5,
                    },
                    "content": [{"type": "text", "text": "Hello, head." * second}],
                },
            }
        )
    path = tmp_path / "hand-1.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def head_labels(session: Session) -> list[str]:
    return [
        change.label
        for snapshot in sorted(session.snapshots, key=lambda x: x.time_ns)
        for change in snapshot.changes
        if change.id == INFERRED_HEAD_ID
    ]


def _spotter() -> tuple[Session, Session]:
    main, sub = sessions(SPOTTER)
    assert (main.session_id, len(main.compactions), len(sub.compactions)) == (SPOTTER_ID, 1, 0)
    return main, sub


# --------------------------------------------------------------------------- attribution


def test_the_head_item_measured_again_after_a_compaction_is_labelled_so() -> None:
    log = ContextLog()
    log.add("p", Category.PROMPTS, 400)  # 100 tokens
    log.observe(Observation.request(1, "r1", model="m", reported_tokens=1_000))  # head 900
    log.observe(Observation.request(2, "r2", model="m", reported_tokens=1_000))
    log.clear()
    log.add("s", Category.SUMMARIES, 80)  # 20 tokens
    log.observe(Observation.request(3, "r3", model="m", reported_tokens=1_200))  # head 1,180
    first, same, after = log.replay()
    (head,) = [c for c in first.changes if c.id == INFERRED_HEAD_ID]
    assert (head.tokens, head.label) == (900, INFERRED_HEAD_LABEL)
    assert not any(c.id == INFERRED_HEAD_ID for c in same.changes)  # held until a compaction
    (again,) = [c for c in after.changes if c.id == INFERRED_HEAD_ID]
    assert (again.tokens, again.label) == (1_180, INFERRED_HEAD_AFTER_COMPACTION_LABEL)
    assert "restored context" in again.label and "not in the journal" in again.label


def test_spotters_head_item_after_its_compaction_is_labelled_so() -> None:
    main, sub = _spotter()
    assert head_labels(main) == [INFERRED_HEAD_LABEL, INFERRED_HEAD_AFTER_COMPACTION_LABEL]
    assert head_labels(sub) == [INFERRED_HEAD_LABEL]


def test_the_traces_context_change_says_so(export_trace: Any, tmp_path: Path) -> None:
    view = export_trace(SPOTTER).view
    labels = [
        change["label"]
        for slice_ in sorted(view.snapshots(capture_for(view, SPOTTER_ID)), key=lambda s: s.ts)
        for change in slice_.args["context"]["changes"] or ()
        if change["id"] == INFERRED_HEAD_ID
    ]
    assert labels == [INFERRED_HEAD_LABEL, INFERRED_HEAD_AFTER_COMPACTION_LABEL]
    plain = export_trace(no_compaction(tmp_path)).view
    labels = [
        change["label"]
        for slice_ in plain.snapshots()
        for change in slice_.args["context"]["changes"] or ()
        if change["id"] == INFERRED_HEAD_ID
    ]
    assert labels == [INFERRED_HEAD_LABEL]
