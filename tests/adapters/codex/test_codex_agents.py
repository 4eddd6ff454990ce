"""Messages between agent threads are this model's input (review C2, and C4's
`encrypted_content` part). openai/codex `InterAgentCommunication {author, recipient,
other_recipients, content, encrypted_content?, trigger_turn}`; `to_model_input_item` turns
it into `ResponseItem::AgentMessage {author, recipient, content}` (one `input_text` part,
or a "Message Type: NEW_TASK|MESSAGE / Task name / Sender / Payload:" header part and an
`encrypted_content` part) that goes into the model's history. One build persisted the
communication as an `inter_agent_communication` line; newer ones persist
`inter_agent_communication_metadata {trigger_turn}` and the `response_item` itself. A
MultiAgentV2 child gets its assignment this way (`trigger_turn: true`), not as a user
message.

Rollouts are the real 2026-05-11 rollout (tests/data/journals/codex) as a v2 child: its
line 1 with a `thread_spawn` source, the developer and AGENTS.md messages (lines 3, 4),
the agent's message where the typed prompt was (lines 6, 7), then the first request
(reasoning, a call and its token_count: lines 8-10). The lines' payloads are the source's
serialisations (serde field names as in the structs); no rollout with them was available."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_profiler.model import Category, ContextSnapshot, Session
from rules_spy import Added, record, spy, write
from samples import CODEX_PLAIN, read_single

PLAIN = CODEX_PLAIN
TASK = "Read the adapters and list every record type they skip. " * 660  # 37,620 chars


def _child(tmp_path: Path, *message: dict[str, Any]) -> tuple[Session, Any]:
    meta = record(PLAIN, 1)
    meta["payload"]["source"] = {
        "subagent": {"thread_spawn": {"parent_thread_id": "parent-1", "agent_path": "/root/w"}}
    }
    lines = [meta, record(PLAIN, 3), record(PLAIN, 4), *message]
    lines += [record(PLAIN, n) for n in (8, 9, 10)]
    return read_single(write(tmp_path, lines, "rollout-child.jsonl"))


def _line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": record(PLAIN, 6)["timestamp"], "type": kind, "payload": payload}


def _communication(**fields: Any) -> dict[str, Any]:
    payload = {
        "author": "/root",
        "recipient": "/root/w",
        "other_recipients": [],
        "content": TASK,
        "trigger_turn": True,
        **fields,
    }
    return _line("inter_agent_communication", payload)


def _first(session: Session) -> ContextSnapshot:
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == session.responses[0].id]
    return snapshot


def _prompts(added: list[Added]) -> list[tuple[str, int]]:
    return [(a.label, a.chars) for a in added if a.category is Category.PROMPTS]


def test_a_childs_task_is_a_prompt_from_its_parent_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    without, _ = _child(tmp_path)
    added = spy(monkeypatch)
    session, diagnostics = _child(tmp_path, _communication())
    assert _prompts(added) == [("Task from /root", len(TASK))]
    # In the first request's context, not in the inferred head.
    grown = dict(_first(session).categories)
    assert grown[Category.PROMPTS] >= len(TASK) // 5
    assert grown.get(Category.UNATTRIBUTED, 0) < dict(_first(without).categories).get(
        Category.UNATTRIBUTED, 0
    )
    # The thread's one prompt, from an agent (its parent), starting the turn.
    (prompt,) = session.prompts
    assert (prompt.source, prompt.chars) == ("agent", len(TASK))
    assert prompt.preview.startswith("Read the adapters")
    assert session.responses[0].prompt_id == prompt.id
    assert "codex:inter_agent_communication" not in dict(diagnostics.skipped)


def test_a_message_between_agents_is_labelled_by_its_author_and_starts_no_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    added = spy(monkeypatch)
    message = _communication(author="/root/peer", content="status?", trigger_turn=False)
    session, _ = _child(tmp_path, message)
    assert _prompts(added) == [("Message from /root/peer", 7)]
    assert session.prompts == ()


def test_an_encrypted_message_is_its_header_and_an_unmeasured_payload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    added = spy(monkeypatch)
    session, _ = _child(tmp_path, _communication(content="", encrypted_content="gAAAA" * 400))
    header = "Message Type: NEW_TASK\nTask name: /root/w\nSender: /root\nPayload:\n"
    assert _prompts(added) == [("Task from /root", len(header))]
    assert dict(session.unmeasured)["encrypted-agent-message"] == 1


def test_the_newest_response_item_agent_message_is_input_not_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`inter_agent_communication_metadata` (skipped) then the `response_item` the newest
    builds write: its `encrypted_content` part is no unknown part but an unmeasured payload,
    and the item is in the first request's input (it starts no request: no output)."""
    header = "Message Type: NEW_TASK\nTask name: /root/w\nSender: /root\nPayload:\n"
    item = {
        "type": "agent_message",
        "author": "/root",
        "recipient": "/root/w",
        "content": [
            {"type": "input_text", "text": header},
            {"type": "encrypted_content", "encrypted_content": "gAAAA" * 400},
        ],
    }
    metadata = _line("inter_agent_communication_metadata", {"trigger_turn": True})
    added = spy(monkeypatch)
    session, diagnostics = _child(tmp_path, metadata, _line("response_item", item))
    assert _prompts(added) == [("Task from /root", len(header))]
    assert dict(session.unmeasured)["encrypted-agent-message"] == 1
    assert [w.message for w in diagnostics.warnings if w.kind == "unknown-block"] == []
    assert dict(diagnostics.skipped)["codex:inter_agent_communication_metadata"] == 1
    assert dict(_first(session).categories)[Category.PROMPTS] > 0
    (prompt,) = session.prompts
    assert prompt.source == "agent" and session.responses[0].prompt_id == prompt.id
