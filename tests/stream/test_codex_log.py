"""stream/codex_log.py `CodexLog`, the context log of the Codex and Claude Code passes, on
its own: handles counted from the log's start stay valid across replays, a replay stops
before its cut and hands back every snapshot before it, and what the log cannot do once an
entry is replayed is `NotHandled` with its reason (the pass then falls back)."""

from __future__ import annotations

import pytest

from agent_profiler.attribution import Observation
from agent_profiler.model import Category
from agent_profiler.stream.claude_tools import ClaudeLog
from agent_profiler.stream.codex_log import CodexLog
from agent_profiler.stream.log import NotHandled


def _request(log: CodexLog, at: int, name: str, text: str = "x" * 40) -> int:
    """A request observed at `at` with one item of `text` before it; its handle."""
    log.add(f"{name}-item", Category.RESULTS, text)
    return log.observe(Observation.request(at, name))


def test_a_replay_hands_back_the_snapshots_before_its_cut() -> None:
    log = CodexLog()
    first = _request(log, 10, "r1")
    second = _request(log, 20, "r2")
    log.settle(first, reported_tokens=100)
    made = log.replayed_to(second)
    assert [s.anchor_id for s in made] == ["r1"]
    assert made[0].reported_tokens == 100
    # The cut and what follows wait: settled and replayed at the next call.
    log.settle(second, reported_tokens=200)
    made = log.replayed_to(None)
    assert [(s.anchor_id, s.reported_tokens) for s in made] == [("r2", 200)]
    assert log.replayed_to(None) == []


def test_a_replay_of_one_entry_makes_its_snapshot() -> None:
    """One observation alone since the last replay is replayed, not held back."""
    log = CodexLog()
    _request(log, 10, "r1")
    assert [s.anchor_id for s in log.replayed_to(None)] == ["r1"]
    log.observe(Observation.request(20, "r2"))  # (no item before it: one entry)
    made = log.replayed_to(None)
    assert [s.anchor_id for s in made] == ["r2"]


def test_a_cut_at_the_first_entry_replays_nothing() -> None:
    log = CodexLog()
    first = _request(log, 10, "r1")
    assert [s.anchor_id for s in log.replayed_to(first)] == []  # (its item alone: no snapshot)
    assert log.replayed_to(first) == []  # nothing logged before the cut since
    log.settle(first, reported_tokens=5)  # (its handle still valid: not replayed yet)
    assert [s.reported_tokens for s in log.replayed_to(None)] == [5]


def test_settling_again_after_the_replay() -> None:
    """`finish` settles what the pass settled already: the same facts (or no window in a
    session without one) change nothing; other facts are refused."""
    log = CodexLog()
    handle = _request(log, 10, "r1")
    log.settle_early(handle, reported_tokens=100, window_tokens=1000)
    log.replayed_to(None)
    log.settle(handle, reported_tokens=100, window_tokens=1000)
    log.settle(handle, window_tokens=None)
    with pytest.raises(NotHandled, match=r"^an observation settled after it was replayed$"):
        log.settle(handle, reported_tokens=101, window_tokens=1000)


def test_an_observation_that_makes_no_snapshot_is_refused() -> None:
    log = CodexLog()
    with pytest.raises(NotHandled, match=r"^an observation that makes no snapshot$"):
        log.observe(Observation.request(10, "r1", dropped=True))


def test_evidence_is_settled_until_it_is_replayed() -> None:
    log = CodexLog()
    _request(log, 10, "r1")
    log.replayed_to(None)
    # The first entry after a replay: its handle is the log's, not the batch's.
    handle = log.add_evidence(
        "thinking", Category.ASSISTANT, 0, method="usage", label="Hidden reasoning"
    )
    log.observe(Observation.request(20, "r2"))
    log.settle_evidence(handle, 64)
    (made,) = log.replayed_to(None)
    assert dict(made.categories)[Category.ASSISTANT] == 64
    with pytest.raises(NotHandled, match=r"^an item sized from evidence after it was replayed$"):
        log.settle_evidence(handle, 65)


def test_evidence_that_never_came_is_counted_unmeasured() -> None:
    """A request's reasoning whose size never came (`settle_evidence` with None): the item
    stays at 0, counted as hidden content not measured, as the model path counts it."""
    log = CodexLog()
    handle = log.add_evidence(
        "thinking", Category.ASSISTANT, 0, method="usage", label="Hidden reasoning"
    )
    log.observe(Observation.request(10, "r1"))
    log.settle_evidence(handle, None)
    assert log.unmeasured({}) == (("hidden-content", 1),)
    (made,) = log.replayed_to(None)
    assert dict(made.categories).get(Category.ASSISTANT, 0) == 0


def test_the_claude_code_log_settles_again_only_with_its_window() -> None:
    """stream/claude_tools.py `ClaudeLog`: what the pass settled is not remembered; `finish`
    settling a replayed request again may only say the window the pass guessed."""
    log = ClaudeLog()
    log.window = 200_000
    handle = _request(log, 10, "r1")
    log.settle_early(handle, reported_tokens=100, window_tokens=200_000)
    assert [s.window_tokens for s in log.replayed_to(None)] == [200_000]
    assert log.early == {}  # (not remembered)
    log.settle(handle, reported_tokens=100, window_tokens=200_000)
    with pytest.raises(
        NotHandled, match=r"^an observation settled with another window after its replay$"
    ):
        log.settle(handle, reported_tokens=100, window_tokens=1_000_000)
