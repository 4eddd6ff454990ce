"""`codex.plan`: one group per session tree, found from the sniffed heads (so that
independent trees can be read in parallel). Rollouts are small edits of the real
2026-05-11 rollout (tests/data/journals/codex): its line 1 (`session_meta`) with another
id or a `thread_spawn` source (FORMATS §3.6; the corpus has no subagent rollout), and its
line 6 (the typed prompt "show tools")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters import SniffedFile, codex
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.jsonl import sniff
from agent_profiler.loader import load
from agent_profiler.model import Harness
from rules_spy import record, write
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "codex"
PLAIN = DATA / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz"
DESKTOP = DATA / "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"


def _meta(thread: object, parent: object = None) -> dict[str, Any]:
    """Line 1 without its 21k-character base instructions, as thread `thread`; a subagent
    of `parent` when one is given."""
    meta = record(PLAIN, 1)
    payload = meta["payload"]
    payload.pop("base_instructions")
    payload["id"] = thread
    if thread is None:
        payload.pop("id")
    if parent is not None:
        payload["source"] = {"subagent": {"thread_spawn": {"parent_thread_id": parent}}}
    return meta


def _rollout(tmp_path: Path, name: str, thread: object, parent: object = None) -> Path:
    return write(tmp_path, [_meta(thread, parent), record(PLAIN, 6)], f"rollout-{name}.jsonl")


def _plan(*paths: Path) -> list[tuple[str, ...]]:
    groups = codex.plan([SniffedFile(path, sniff(path)) for path in paths])
    for group in groups:
        # The rollouts given come first; a group with others found beside them says how
        # many were given, so that its reader tells a given one that cannot be read now
        # (an error) from one found beside (a warning).
        given = sum(path in paths for path in group.paths)
        assert all(path in paths for path in group.paths[:given])
        assert (group.harness, group.main) == (Harness.CODEX, None)
        assert group.variant == ("" if given == len(group.paths) else f"given:{given}")
    return [tuple(path.name for path in group.paths) for group in groups]


def _spawn(child: str, line: int) -> list[dict[str, Any]]:
    """Line 9's call as a `spawn_agent` call, and the `collab_agent_spawn_end` naming
    `child` that follows it (FORMATS §3.6), both dated `line`'s time."""
    call = record(PLAIN, 9)
    call["payload"].update(name="spawn_agent", arguments='{"message": "look"}')
    end = {
        "timestamp": record(PLAIN, line)["timestamp"],
        "type": "event_msg",
        "payload": {
            "type": "collab_agent_spawn_end",
            "call_id": call["payload"]["call_id"],
            "new_thread_id": child,
        },
    }
    return [call, end]


def _padding(count: int) -> list[dict[str, Any]]:
    """Lines the reader skips (`world_state`), to push what follows out of the head."""
    skipped = {"timestamp": record(PLAIN, 6)["timestamp"], "type": "world_state", "payload": {}}
    return [skipped] * count


def test_unrelated_rollouts_are_groups_of_their_own_in_input_order(tmp_path: Path) -> None:
    a = _rollout(tmp_path, "a", "thread-a")
    b = _rollout(tmp_path, "b", "thread-b")
    c = _rollout(tmp_path, "c", "thread-c")
    assert _plan(a, b, c) == [("rollout-a.jsonl",), ("rollout-b.jsonl",), ("rollout-c.jsonl",)]
    assert _plan(c, a, b) == [("rollout-c.jsonl",), ("rollout-a.jsonl",), ("rollout-b.jsonl",)]


def test_a_child_that_names_its_parent_joins_it_in_input_order(tmp_path: Path) -> None:
    parent = _rollout(tmp_path, "parent", "thread-p")
    child = _rollout(tmp_path, "child", "thread-c", parent="thread-p")
    other = _rollout(tmp_path, "other", "thread-o")
    assert _plan(parent, other, child) == [
        ("rollout-parent.jsonl", "rollout-child.jsonl"),
        ("rollout-other.jsonl",),
    ]
    assert _plan(child, other, parent) == [
        ("rollout-child.jsonl", "rollout-parent.jsonl"),
        ("rollout-other.jsonl",),
    ]
    assert _plan(other, child, parent) == [
        ("rollout-other.jsonl",),
        ("rollout-child.jsonl", "rollout-parent.jsonl"),
    ]


def test_a_grandchild_joins_its_grandparents_tree(tmp_path: Path) -> None:
    """The grandchild comes first and its parent last: the tree is tied transitively."""
    top = _rollout(tmp_path, "top", "thread-t")
    middle = _rollout(tmp_path, "middle", "thread-m", parent="thread-t")
    bottom = _rollout(tmp_path, "bottom", "thread-b", parent="thread-m")
    other = _rollout(tmp_path, "other", "thread-o")
    sibling = _rollout(tmp_path, "sibling", "thread-s", parent="thread-t")
    assert _plan(bottom, other, top, sibling, middle) == [
        (
            "rollout-bottom.jsonl",
            "rollout-top.jsonl",
            "rollout-sibling.jsonl",
            "rollout-middle.jsonl",
        ),
        ("rollout-other.jsonl",),
    ]


def test_children_of_a_parent_not_given_share_its_tree(tmp_path: Path) -> None:
    """Two children naming the same absent parent are one tree (read together, as before)."""
    one = _rollout(tmp_path, "one", "thread-1", parent="thread-p")
    other = _rollout(tmp_path, "other", "thread-o")
    two = _rollout(tmp_path, "two", "thread-2", parent="thread-p")
    assert _plan(one, other, two) == [
        ("rollout-one.jsonl", "rollout-two.jsonl"),
        ("rollout-other.jsonl",),
    ]


def test_copies_of_one_session_are_one_group(tmp_path: Path) -> None:
    """A copy, or a resumed session with the same id: read together, so that the loader
    names the second copy `#2`."""
    first = _rollout(tmp_path, "first", "thread-a")
    other = _rollout(tmp_path, "other", "thread-b")
    copy = _rollout(tmp_path, "copy", "thread-a")
    assert _plan(first, other, copy) == [
        ("rollout-first.jsonl", "rollout-copy.jsonl"),
        ("rollout-other.jsonl",),
    ]


def test_a_session_is_named_by_its_first_session_meta(tmp_path: Path) -> None:
    """A second session_meta naming another thread (as a resumed rollout may) does not tie
    the rollout to that thread: `RolloutBuilder` names the session by the first one."""
    resumed = write(
        tmp_path, [_meta("thread-a"), _meta("thread-b"), record(PLAIN, 6)], "rollout-r.jsonl"
    )
    b = _rollout(tmp_path, "b", "thread-b")
    a = _rollout(tmp_path, "a", "thread-a")
    assert _plan(resumed, b, a) == [("rollout-r.jsonl", "rollout-a.jsonl"), ("rollout-b.jsonl",)]


def test_a_rollout_without_a_session_id_is_a_group_of_its_own(tmp_path: Path) -> None:
    """No session_meta in the head, a session_meta without id, with an empty or a numeric
    id (even one naming a parent that is given): each is alone. A parent id that is not a
    string ties nothing; the other rollouts are still grouped."""
    parent = _rollout(tmp_path, "parent", "thread-p")
    bare = write(tmp_path, [record(PLAIN, 6)], "rollout-bare.jsonl")
    no_id = _rollout(tmp_path, "no-id", None, parent="thread-p")
    empty = _rollout(tmp_path, "empty", "", parent="thread-p")
    numeric = _rollout(tmp_path, "numeric", 42)
    bad_parent = _rollout(tmp_path, "bad-parent", "thread-x", parent=42)
    child = _rollout(tmp_path, "child", "thread-c", parent="thread-p")
    not_meta = write(tmp_path, [{**_meta("thread-p"), "payload": "thread-p"}], "rollout-s.jsonl")
    assert _plan(bare, parent, no_id, empty, numeric, bad_parent, not_meta, child) == [
        ("rollout-bare.jsonl",),
        ("rollout-parent.jsonl", "rollout-child.jsonl"),
        ("rollout-no-id.jsonl",),
        ("rollout-empty.jsonl",),
        ("rollout-numeric.jsonl",),
        ("rollout-bad-parent.jsonl",),
        ("rollout-s.jsonl",),
    ]


def test_a_spawn_in_the_parents_head_ties_a_child_that_names_no_parent(tmp_path: Path) -> None:
    """A child whose session_meta names no parent (a Desktop rollout) is tied to the rollout
    whose head holds its `collab_agent_spawn_end`, so that `read_rollouts` still links it to
    the spawn call. A spawn end without its call id ties nothing (it links nothing either),
    and a spawn after the head (50 records) is not seen: those two are read apart."""
    child = _rollout(tmp_path, "child", "thread-c")
    parent = write(
        tmp_path, [_meta("thread-p"), record(PLAIN, 6), *_spawn("thread-c", 10)], "rollout-p.jsonl"
    )
    no_call = _spawn("thread-n", 10)
    no_call[1]["payload"].pop("call_id")
    orphan = _rollout(tmp_path, "orphan", "thread-n")
    callless = write(tmp_path, [_meta("thread-q"), *no_call], "rollout-q.jsonl")
    late = write(
        tmp_path, [_meta("thread-l"), *_padding(60), *_spawn("thread-k", 10)], "rollout-l.jsonl"
    )
    kid = _rollout(tmp_path, "kid", "thread-k")
    assert _plan(child, orphan, late, parent, callless, kid) == [
        ("rollout-child.jsonl", "rollout-p.jsonl"),
        ("rollout-orphan.jsonl",),
        ("rollout-l.jsonl",),
        ("rollout-q.jsonl",),
        ("rollout-kid.jsonl",),
    ]


# -- end to end, through the loader -------------------------------------------------------


def test_a_child_given_first_is_still_linked_to_its_parents_spawn_call(tmp_path: Path) -> None:
    """The parent's spawn is out of its head (after 60 skipped lines): only the child's
    session_meta ties the two, and read in one group the child gets the spawn call too."""
    parent_id = record(PLAIN, 1)["payload"]["id"]
    parent = write(
        tmp_path,
        [_meta(parent_id), record(PLAIN, 6), *_padding(60), *_spawn("thread-c", 10)],
        "rollout-parent.jsonl",
    )
    child = _rollout(tmp_path, "child", "thread-c", parent=parent_id)
    diagnostics = Diagnostics()
    result = load([child, parent], diagnostics)
    assert result.failures == []
    found = {s.session_id: s for s in result.sessions}
    assert sorted(found) == sorted([parent_id, "thread-c"])
    kid = found["thread-c"]
    assert (kid.parent_session, kid.parent_call_id, kid.child_role) == (
        parent_id,
        record(PLAIN, 9)["payload"]["call_id"],
        "subagent",
    )
    (spawn,) = found[parent_id].tool_calls
    assert (spawn.name, spawn.child_session) == ("spawn_agent", "thread-c")
    assert [w.kind for w in diagnostics.warnings if w.kind == "parent-not-exported"] == []


def test_two_unrelated_real_rollouts_load_as_two_sessions() -> None:
    assert _plan(DESKTOP, PLAIN) == [(DESKTOP.name,), (PLAIN.name,)]
    result = load([DESKTOP, PLAIN], Diagnostics())
    assert result.failures == []
    assert [(s.session_id, s.parent_session) for s in result.sessions] == [
        ("019c8a70-dda7-7f33-98ea-f30553347322", None),
        ("019e1625-789d-76c0-80ab-3724b5ddb799", None),
    ]


def test_copies_of_one_session_still_get_their_own_ids(tmp_path: Path) -> None:
    """The real rollout and an edited copy (same id), an unrelated rollout between them: the
    copies are read in one group and the second is renamed `#2`."""
    copy = write(tmp_path, [_meta(record(PLAIN, 1)["payload"]["id"]), record(PLAIN, 6)])
    result = load([PLAIN, DESKTOP, copy], Diagnostics())
    assert result.failures == []
    assert [(s.session_id, s.sources) for s in result.sessions] == [
        ("019e1625-789d-76c0-80ab-3724b5ddb799", (str(PLAIN),)),
        ("019e1625-789d-76c0-80ab-3724b5ddb799#2", (str(copy),)),
        ("019c8a70-dda7-7f33-98ea-f30553347322", (str(DESKTOP),)),
    ]


# -- a rollout given alone is read with its subagents, found where Codex writes them -----


def _day(tmp_path: Path, day: str) -> Path:
    folder = tmp_path / "sessions" / "2026" / "12" / day
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_a_rollout_given_alone_is_read_with_its_subagents_beside_it(tmp_path: Path) -> None:
    """A child in the parent's date folder and a grandchild in the next day's (started after
    midnight) are read with it; a rollout of another session, and another child of a parent
    that was not given, are not."""
    today = _day(tmp_path, "31")
    nextday = tmp_path / "sessions" / "2027" / "01" / "01"  # the day after 2026/12/31
    nextday.mkdir(parents=True)
    parent = _rollout(today, "parent", "thread-p")
    _rollout(today, "child", "thread-c", parent="thread-p")
    _rollout(nextday, "grandchild", "thread-g", parent="thread-c")
    _rollout(today, "other", "thread-o")
    _rollout(today, "cousin", "thread-k", parent="thread-absent")
    assert _plan(parent) == [
        ("rollout-parent.jsonl", "rollout-child.jsonl", "rollout-grandchild.jsonl")
    ]


def test_a_child_given_alone_brings_in_neither_its_parent_nor_its_siblings(
    tmp_path: Path,
) -> None:
    today = _day(tmp_path, "04")
    _rollout(today, "parent", "thread-p")
    child = _rollout(today, "child", "thread-c", parent="thread-p")
    _rollout(today, "sibling", "thread-s", parent="thread-p")
    assert _plan(child) == [("rollout-child.jsonl",)]


def test_a_child_found_beside_and_given_elsewhere_is_read_once(tmp_path: Path) -> None:
    """Given too (as it is, or as a copy elsewhere: the same thread), the child is read
    from the file given only."""
    today = _day(tmp_path, "04")
    parent = _rollout(today, "parent", "thread-p")
    child = _rollout(today, "child", "thread-c", parent="thread-p")
    assert _plan(parent, child) == [("rollout-parent.jsonl", "rollout-child.jsonl")]
    elsewhere = tmp_path / "copies"
    elsewhere.mkdir()
    same = elsewhere / "rollout-copy.jsonl"
    same.write_bytes(child.read_bytes())
    assert _plan(parent, same) == [("rollout-parent.jsonl", "rollout-copy.jsonl")]


def test_what_is_not_a_readable_child_beside_it_is_left_alone(tmp_path: Path) -> None:
    """An empty rollout, a folder named like one, a non-rollout file naming the parent, a
    date folder that is no date: none is read, and the parent is planned as before."""
    bogus = tmp_path / "sessions" / "2026" / "02" / "31"
    bogus.mkdir(parents=True)
    parent = _rollout(bogus, "parent", "thread-p")
    (bogus / "rollout-empty.jsonl").write_bytes(b"")
    (bogus / "rollout-dir.jsonl").mkdir()
    _rollout(bogus, "child", "thread-c", parent="thread-p").rename(bogus / "notes-child.jsonl")
    assert _plan(parent) == [("rollout-parent.jsonl",)]


def test_a_parent_exported_alone_links_its_subagent_and_says_nothing_is_missing(
    tmp_path: Path,
) -> None:
    today = _day(tmp_path, "04")
    parent_id = record(PLAIN, 1)["payload"]["id"]
    parent = write(
        today,
        [_meta(parent_id), record(PLAIN, 6), *_padding(60), *_spawn("thread-c", 10)],
        "rollout-parent.jsonl",
    )
    _rollout(today, "child", "thread-c", parent=parent_id)
    diagnostics = Diagnostics()
    result = load([parent], diagnostics)
    assert result.failures == []
    found = {s.session_id: s for s in result.sessions}
    assert sorted(found) == sorted([parent_id, "thread-c"])
    assert found["thread-c"].parent_session == parent_id
    (spawn,) = found[parent_id].tool_calls
    assert spawn.child_session == "thread-c"
    assert "subagent-not-read" not in diagnostics.warning_counts


def test_a_cold_child_rollout_beside_it_is_read_and_its_plain_copy_wins(tmp_path: Path) -> None:
    """Codex compresses a rollout a week old to `.jsonl.zst` (and makes a plain copy again
    when the thread grows): a compressed child is found as a plain one is, and of a child
    in both forms only the plain file is read, as Codex reads it."""
    zstd = pytest.importorskip("backports.zstd")
    today = _day(tmp_path, "04")
    parent = _rollout(today, "parent", "thread-p")
    cold = _rollout(today, "cold", "thread-c", parent="thread-p")
    (today / "rollout-cold.jsonl.zst").write_bytes(zstd.compress(cold.read_bytes()))
    cold.unlink()
    both = _rollout(today, "both", "thread-b", parent="thread-p")
    (today / "rollout-both.jsonl.zst").write_bytes(zstd.compress(both.read_bytes()))
    assert _plan(parent) == [
        ("rollout-parent.jsonl", "rollout-both.jsonl", "rollout-cold.jsonl.zst"),
    ]
