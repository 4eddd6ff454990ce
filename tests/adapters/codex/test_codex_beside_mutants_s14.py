"""Tests that kill the survivors of the draw of `codex.py`'s `_children_beside`,
`_rollouts_in` and `_next_day` (mutation round 3, fourteenth session;
tests/mutation-survivors.md): a rollout given alone is read with the subagent rollouts
Codex wrote beside it. Rollouts are edits of the real 2026-05-11 rollout, as in
`test_codex_plan.py`."""

from __future__ import annotations

from pathlib import Path

from test_codex_plan import PLAIN, _day, _meta, _plan, _rollout

from rules_spy import record, write


def test_an_unreadable_rollout_beside_it_does_not_hide_the_children_after_it(
    tmp_path: Path,
) -> None:
    """A rollout that cannot be read (a broken gzip) or is no rollout (a first line that
    is no JSON), listed before the child: the child after it is still found; the broken one
    is read with the tree so that the reader names it and says why (review-d14 11), the one
    that is no rollout is left alone."""
    today = _day(tmp_path, "04")
    parent = _rollout(today, "parent", "thread-p")
    (today / "rollout-0broken.jsonl.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    (today / "rollout-1broken.jsonl").write_bytes(b"{not json\n")
    _rollout(today, "child", "thread-c", parent="thread-p")
    assert _plan(parent) == [
        ("rollout-parent.jsonl", "rollout-child.jsonl", "rollout-0broken.jsonl.gz")
    ]


def test_only_a_rollouts_first_line_makes_it_a_child(tmp_path: Path) -> None:
    """A rollout beside the given one that spawned it right away (its line 2 the
    `collab_agent_spawn_end` naming the given thread) is its parent, not its child: not
    read with it. A child says it is one in its `session_meta`, line 1."""
    today = _day(tmp_path, "04")
    child = _rollout(today, "child", "thread-c")
    spawned = {
        "timestamp": record(PLAIN, 6)["timestamp"],
        "type": "event_msg",
        "payload": {
            "type": "collab_agent_spawn_end",
            "call_id": "call_1",
            "new_thread_id": "thread-c",
        },
    }
    write(today, [_meta("thread-p"), spawned, record(PLAIN, 6)], "rollout-parent.jsonl")
    assert _plan(child) == [("rollout-child.jsonl",)]


def test_a_child_given_elsewhere_does_not_hide_its_siblings_beside_it(tmp_path: Path) -> None:
    """The parent and a copy of its first child given (the child is read from the copy),
    the child's own file and a second child beside the parent: the second is found."""
    today = _day(tmp_path, "04")
    parent = _rollout(today, "parent", "thread-p")
    first = _rollout(today, "a", "thread-a", parent="thread-p")
    _rollout(today, "b", "thread-b", parent="thread-p")
    elsewhere = tmp_path / "copies"
    elsewhere.mkdir()
    copy = elsewhere / "rollout-copy.jsonl"
    copy.write_bytes(first.read_bytes())
    assert _plan(parent, copy) == [
        ("rollout-parent.jsonl", "rollout-copy.jsonl", "rollout-b.jsonl"),
    ]


def test_a_folder_not_named_as_codex_names_a_day_has_no_next_day(tmp_path: Path) -> None:
    """Codex's date folders are `YYYY/MM/DD`, zero-padded: a rollout in `2026/12/1` is in
    no date folder, and `2026/12/02` is not its next day."""
    odd = tmp_path / "sessions" / "2026" / "12" / "1"
    odd.mkdir(parents=True)
    parent = _rollout(odd, "parent", "thread-p")
    _rollout(_day(tmp_path, "02"), "child", "thread-c", parent="thread-p")
    assert _plan(parent) == [("rollout-parent.jsonl",)]
