"""Tests that kill the survivors of `pi_messages.py`'s sample (mutation round 3, fourteenth
session; tests/mutation-survivors.md): small v3 sessions written as Pi's source writes
them (`test_pi_system.py`'s Journal; no real journal with these messages is in the
corpus)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_pi_system import Journal

from agent_profiler.model import Category, SourceKind
from rules_spy import spy

IMAGE = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}


def test_an_image_in_developer_instructions_is_seen_not_measured(tmp_path: Path) -> None:
    journal = Journal()
    journal.message(
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}, IMAGE]}
    )
    journal.user("Hi.")
    journal.assistant(1000)
    session = journal.read(tmp_path)
    assert dict(session.unmeasured) == {"image": 1}


def test_thinking_is_the_output_of_the_request_that_thought_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thinking block enters the context as that response's output (its source), as its
    text does: the next request's context holds both, each named by the response."""
    journal = Journal()
    journal.user("Hi.")
    thought = journal.message(
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "The user greets me."},
                {"type": "text", "text": "Hello."},
            ],
            "provider": "anthropic",
            "model": "claude-opus-4-8",
            "usage": {"input": 1000, "output": 20, "cacheRead": 0, "cacheWrite": 0},
            "stopReason": "stop",
        }
    )
    journal.user("Again.")
    journal.assistant(1100)
    added = spy(monkeypatch)
    journal.read(tmp_path)
    output = [
        (a.label, a.source_id, a.source_kind) for a in added if a.category is Category.ASSISTANT
    ]
    assert output == [
        ("Thinking", thought, SourceKind.RESPONSE),
        ("Assistant text", thought, SourceKind.RESPONSE),
    ]
