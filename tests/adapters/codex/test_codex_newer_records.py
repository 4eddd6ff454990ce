"""Record types newer Codex builds write that were "not recognised" (review C4) and the
events that replace those the newest persistence policy no longer writes (review C3).

- `event_msg/injected_message` — openai/codex `InjectedMessageEvent {content, source}`
  (`InjectedMessage::event`: a timer's message, source "timer <id>", or an external
  program's); the model sees the message as a user `message` (`prompt_input_item`);
- `rollout_reference` — `RolloutReferenceItem {rollout_id?, rollout_path, thread_id?,
  rollout_timestamp?, segment_id?, max_depth, nth_user_message?, …}` (`thread-store`
  `segment_writer.rs`: a rotated rollout starts with a reference to its sealed predecessor;
  forks reference their base): the history it continues is not in this file.

Rollouts are lines of the real 2026-05-11 rollout (tests/data/journals/codex) with the new
lines put where Codex writes them; their payloads follow the source's structs (serde field
names); no real rollout with them was available."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_profiler.model import MID_CONVERSATION
from agent_profiler.views import starts_mid_conversation, unattributed_is_head
from rules_spy import record, write
from samples import read_single
from shared_paths import TESTS

PLAIN = (
    TESTS
    / "data"
    / "journals"
    / "codex"
    / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz"
)
THREAD = record(PLAIN, 1)["payload"]["id"]


def _line(at: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": record(PLAIN, at)["timestamp"], "type": kind, "payload": payload}


def test_an_injected_message_is_a_prompt_from_the_harness(tmp_path: Path) -> None:
    """A timer's message in place of the typed prompt (line 7's `user_message`): its
    user `message` item (line 6, as `prompt_input_item` renders it) is context as before;
    the event is the turn's prompt, from the harness."""
    event = _line(
        7, "event_msg", {"type": "injected_message", "content": "ping", "source": "timer t-1"}
    )
    lines = [record(PLAIN, n) for n in (1, 2, 3, 4, 5, 6)] + [event]
    lines += [record(PLAIN, n) for n in (8, 9, 10)]
    session, diagnostics = read_single(write(tmp_path, lines, "rollout-injected.jsonl"))
    assert dict(diagnostics.unrecognised) == {}
    (prompt,) = session.prompts
    assert (prompt.source, prompt.chars, prompt.preview) == ("harness", 4, "ping")
    assert session.responses[0].prompt_id == prompt.id


def test_a_rollout_reference_marks_the_inherited_history_it_does_not_read(
    tmp_path: Path,
) -> None:
    """A rotated segment: session_meta, the reference to its predecessor (same thread),
    then the turn. The inherited turns are in the first request's inferred head, so the
    session says it starts mid-conversation and names what it continues."""
    reference = _line(
        1,
        "rollout_reference",
        {
            "rollout_id": THREAD,
            "rollout_path": f"/home/u/.codex/rollout_segments/{THREAD}/s-1/rollout-x.jsonl",
            "thread_id": THREAD,
            "segment_id": "s-1",
            "max_depth": 2,
        },
    )
    lines = [record(PLAIN, 1), reference] + [record(PLAIN, n) for n in range(2, 11)]
    session, diagnostics = read_single(write(tmp_path, lines, "rollout-segment.jsonl"))
    assert dict(diagnostics.unrecognised) == {}
    facts = dict(session.facts)
    assert facts["rollout_reference"] == "an earlier segment of this thread (rollout-x.jsonl)"
    assert "rollout_reference, not read" in str(facts[MID_CONVERSATION])
    assert starts_mid_conversation(session) and not unattributed_is_head(session)
    # A fork names its base thread and how far it inherits.
    fork = dict(reference["payload"], thread_id="base-1", nth_user_message=3)
    lines[1] = _line(1, "rollout_reference", fork)
    forked, _ = read_single(write(tmp_path, lines, "rollout-fork.jsonl"))
    said = dict(forked.facts)["rollout_reference"]
    assert said == "thread base-1 (rollout-x.jsonl), up to its user message 3"
