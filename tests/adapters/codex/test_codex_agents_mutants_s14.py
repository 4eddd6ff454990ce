"""Tests that kill the survivors of `codex_agents.py`'s sample (mutation round 3,
fourteenth session; tests/mutation-survivors.md). The rollout is the real 2026-05-11 one
(tests/data/journals/codex) made a v2 child, as in `test_codex_agents.py`: its line 1 with a
`thread_spawn` source, the developer and AGENTS.md messages, the agent's message where the
typed prompt was, then the first request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_profiler.model import Category, Session
from rules_spy import Added, record, spy, write
from samples import CODEX_PLAIN, read_single

PLAIN = CODEX_PLAIN


def _child(tmp_path: Path, *message: dict[str, Any]) -> Session:
    meta = record(PLAIN, 1)
    meta["payload"]["source"] = {
        "subagent": {"thread_spawn": {"parent_thread_id": "parent-1", "agent_path": "/root/w"}}
    }
    lines = [meta, record(PLAIN, 3), record(PLAIN, 4), *message]
    lines += [record(PLAIN, n) for n in (8, 9, 10)]
    session, _ = read_single(write(tmp_path, lines, "rollout-child.jsonl"))
    return session


def _line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": record(PLAIN, 6)["timestamp"], "type": kind, "payload": payload}


def _item(content: object, author: object = "/root") -> dict[str, Any]:
    item = {"type": "agent_message", "author": author, "recipient": "/root/w", "content": content}
    return _line("response_item", item)


def _prompts(added: list[Added]) -> list[tuple[str, int]]:
    return [(a.label, a.chars) for a in added if a.category is Category.PROMPTS]


def test_a_plain_agent_message_first_in_a_child_is_its_task_and_its_first_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newest builds write a plain (unencrypted) task as a `response_item`
    `agent_message` without the NEW_TASK header (its `trigger_turn` is in the metadata line,
    not read): as the first input of a child with no prompt it is the child's task, the
    prompt `turn-1` its first request answers."""
    added = spy(monkeypatch)
    session = _child(tmp_path, _item([{"type": "input_text", "text": "List the skips."}]))
    assert _prompts(added) == [("Task from /root", len("List the skips."))]
    (prompt,) = session.prompts
    assert (prompt.id, prompt.source, prompt.preview) == ("turn-1", "agent", "List the skips.")
    assert session.responses[0].prompt_id == "turn-1"


def test_a_part_that_is_not_an_object_does_not_hide_the_parts_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    added = spy(monkeypatch)
    session = _child(tmp_path, _item(["junk", 7, {"type": "input_text", "text": "status?"}]))
    assert _prompts(added) == [("Task from /root", 7)]
    assert [p.chars for p in session.prompts] == [7]


@pytest.mark.parametrize("author", [7, {"path": "/root"}, "", None])
def test_an_author_that_is_no_name_is_another_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, author: object
) -> None:
    added = spy(monkeypatch)
    message = {
        "author": author,
        "recipient": "/root/w",
        "content": "status?",
        "trigger_turn": False,
    }
    _child(tmp_path, _line("inter_agent_communication", message))
    assert _prompts(added) == [("Message from another agent", 7)]
