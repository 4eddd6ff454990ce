"""`event_msg/thread_rolled_back {num_turns}` (review C5): Codex drops the last N user turns
from the model's context (`Op::ThreadRollback`: "drop the last N user turns from in-memory
context"; its history rebuild truncates the effective rollout at the N-th last user-turn
boundary, a real prompt's user message or an inter-agent message, openai/codex
`codex-rs/core` rollout reconstruction, `user_boundaries` … `effective.truncate(cut)`).
The newest `rollout/src/policy.rs` persists it in every history mode.

Rollouts are the real 2026-05-11 rollout (tests/data/journals/codex): turn 1 (lines 1-19,
prompt "show tools", two commands and an answer) and the start of turn 2 (lines 20-28, up
to its first request), with the rollback line (its payload as the source's
`ThreadRolledBackEvent {num_turns}`) between them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_profiler.layout import TraceFacts, build_layout
from agent_profiler.model import Category, ContextSnapshot
from rules_spy import record, write
from samples import CODEX_PLAIN, read_single

PLAIN = CODEX_PLAIN
NAME = "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"


def _rolled_back(turns: object) -> dict[str, Any]:
    return {
        "timestamp": record(PLAIN, 19)["timestamp"],
        "type": "event_msg",
        "payload": {"type": "thread_rolled_back", "num_turns": turns},
    }


def _read(tmp_path: Path, *between: dict[str, Any]) -> tuple[ContextSnapshot, Any]:
    """The rollout with `between` after turn 1; the context at turn 2's first request."""
    lines = [record(PLAIN, n) for n in range(1, 20)]
    lines += [*between, *(record(PLAIN, n) for n in range(20, 29))]
    session, _ = read_single(write(tmp_path, lines, NAME))
    last = session.snapshots[-1]
    assert last.anchor_id == session.responses[-1].id
    return last, session


def _tokens(snapshot: ContextSnapshot) -> dict[Category, int]:
    return dict(snapshot.categories)


def test_a_rollback_takes_the_rolled_back_turn_out_of_the_context(tmp_path: Path) -> None:
    kept, _ = _read(tmp_path)
    rolled, session = _read(tmp_path, _rolled_back(1))
    before, after = _tokens(kept), _tokens(rolled)
    # Turn 1's command outputs (lines 11, 15) are all the results there were.
    assert before[Category.RESULTS] > 0 and Category.RESULTS not in after
    # Its prompt "show tools" (line 6) left; turn 2's prompt (line 22) is the only one.
    assert after[Category.PROMPTS] < before[Category.PROMPTS]
    # Its answer, calls and reasoning too: turn 2's request has no assistant input yet.
    assert before[Category.ASSISTANT] > 0 and Category.ASSISTANT not in after
    # The head before turn 1 (developer message, AGENTS.md, environment) stays.
    for category in (Category.SYSTEM, Category.SKILLS, Category.RULES, Category.ENVIRONMENT):
        assert after[category] == before[category]
    (marker,) = session.markers
    assert (marker.kind, marker.value) == ("rollback", "rolled back 1 turn")
    assert session.prompts[0].start_ns < marker.time_ns < session.prompts[1].start_ns


def test_more_turns_than_there_are_cut_at_the_first_and_zero_cuts_nothing(
    tmp_path: Path,
) -> None:
    """Codex cuts at the first boundary when num_turns exceeds the turns (`or_else(first)`)
    and skips a rollback of 0 turns."""
    one, _ = _read(tmp_path, _rolled_back(1))
    many, _ = _read(tmp_path, _rolled_back(5))
    kept, _ = _read(tmp_path)
    assert many.categories == one.categories != kept.categories
    none, session = _read(tmp_path, _rolled_back(0))
    assert none.categories == kept.categories and session.markers == ()


def test_a_rollback_without_a_count_is_a_bad_shape_warning(tmp_path: Path) -> None:
    kept, _ = _read(tmp_path)
    lines = [record(PLAIN, n) for n in range(1, 20)]
    lines += [_rolled_back("one"), *(record(PLAIN, n) for n in range(20, 29))]
    session, diagnostics = read_single(write(tmp_path, lines, NAME))
    assert session.snapshots[-1].categories == kept.categories
    assert any("num_turns" in w.message for w in diagnostics.warnings)


def test_the_rollback_is_an_instant_on_the_events_track(tmp_path: Path) -> None:
    """As Gemini CLI's rewinds are: not a configuration change."""
    _, session = _read(tmp_path, _rolled_back(2))
    (laid,) = build_layout([session], TraceFacts()).sessions
    (marker,) = [s for s in laid.slices if s.track == "Events"]
    assert marker.instant and marker.name == "rollback: rolled back 2 turns"
    assert not [s for s in laid.slices if s.track == "Configuration" and s.instant]


def _message(at: int, role: str, text: str) -> dict[str, Any]:
    content = [{"type": "input_text", "text": text}]
    payload = {"type": "message", "role": role, "content": content}
    return {
        "timestamp": record(PLAIN, at)["timestamp"],
        "type": "response_item",
        "payload": payload,
    }


def test_the_context_updates_above_a_rolled_back_turn_go_with_it(tmp_path: Path) -> None:
    """Codex trims the context updates written right above the rolled-back turn (a
    developer message, an environment block: `trim_pre_turn_context_updates`), never past
    the first turn: turn 2 with two updates before its prompt, rolled back, then a third
    turn's request sends what it would have sent without turn 2 and its updates."""
    updates = [
        _message(21, "developer", "<collaboration_mode>plan</collaboration_mode>" * 20),
        _message(21, "user", "<environment_context><cwd>/srv/b</cwd></environment_context>" * 9),
    ]
    turn_2 = [record(PLAIN, n) for n in (20, 21, 22, 23, 24, 26, 28)]
    later = record(PLAIN, 29)["timestamp"]
    turn_3 = [_message(29, "user", "start over"), record(PLAIN, 26), record(PLAIN, 28)]
    for line in turn_3:
        line["timestamp"] = later
    info = turn_3[2]["payload"]["info"]  # (a request of its own: not line 28's usage again)
    info["last_token_usage"]["input_tokens"] += 7
    info["total_token_usage"]["input_tokens"] += 7
    rollback = {**_rolled_back(1), "timestamp": later}

    def last(*inserted: dict[str, Any], name: str) -> ContextSnapshot:
        lines = [record(PLAIN, n) for n in range(1, 20)]
        lines += [*inserted, *turn_2, rollback, *turn_3]
        session, _ = read_single(write(tmp_path / name, lines, NAME))
        return session.snapshots[-1]

    (tmp_path / "plain").mkdir()
    (tmp_path / "updates").mkdir()
    plain, updated = last(name="plain"), last(*updates, name="updates")
    assert plain.anchor_id == updated.anchor_id == "request-5"  # (turn 3's)
    assert updated.categories == plain.categories
