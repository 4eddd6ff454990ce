"""What a Codex `response_item` does to the rollout being read (`codex_items.py`): what the
twelfth session's second mutation sample found no test reading. The redacted 2026-02-23
rollout of tests/data (one compaction, its replacement history of messages), edited where
no rollout of tests/data or the corpus has the case (each test says how)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_rules_codex import REDACTED, _compacted_line

from rules_spy import raw_lines, record, sessions, write


def _with_replayed(tmp_path: Path, item: dict[str, Any]) -> Path:
    """The rollout with `item` in its compaction's replacement history, before the
    encrypted compaction summary that ends it."""
    records = [json.loads(text) for text in raw_lines(REDACTED) if text]
    history = records[_compacted_line() - 1]["payload"]["replacement_history"]
    history.insert(len(history) - 1, item)
    return write(tmp_path, records)


@pytest.mark.parametrize("encrypted", [True, False])
def test_a_replayed_encrypted_reasoning_is_counted_unmeasured(
    tmp_path: Path, encrypted: bool
) -> None:
    """Line 14's reasoning item (a redacted summary and encrypted content) replayed in the
    compaction's history (no rollout of tests/data or the corpus replays one): no usage
    comes with a replayed item, so its encrypted part is counted as not measured, once; a
    replayed reasoning without encrypted content adds nothing to that count
    (codex_items._on_reasoning__mutmut_37 read the content under the key None: never)."""
    (plain,) = sessions(REDACTED)
    assert dict(plain.unmeasured) == {"encrypted-compaction-summary": 1, "image": 13}
    reasoning = record(REDACTED, 14)["payload"]
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"]
    if not encrypted:
        reasoning.pop("encrypted_content")
    (session,) = sessions(_with_replayed(tmp_path, reasoning))
    expected = {**dict(plain.unmeasured), **({"encrypted-reasoning": 1} if encrypted else {})}
    assert dict(session.unmeasured) == expected
