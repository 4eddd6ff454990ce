"""The derived views of a session (views.py) that the trace, the summary and the report share,
pinned on real sessions: how a path is named, and the edge cases of the span, the Context size
series, the model runs and the largest additions that the whole-trace tests do not reach."""

from __future__ import annotations

import pytest

from agent_profiler.model import ContextSnapshot, Session
from agent_profiler.summary import largest_addition_per_snapshot
from agent_profiler.views import (
    INFERRED_HEAD_ID,
    basename,
    largest_additions,
)
from rules_spy import record, sessions
from samples import DATA
from shared_paths import CORPUS, SHARED_REASON

CODEX = DATA / "codex" / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl.gz"
# A Claude Code session recorded on Windows (its records' cwd is `C:\Users\danil\.claude`).
WINDOWS = (
    CORPUS
    / "claude-code"
    / "context-command"
    / "aueidog-claude_v2.1.4_2b2a4297_markdown-in-user-record.jsonl"
)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=SHARED_REASON)
def test_a_path_written_on_any_os_is_named_by_its_last_component() -> None:
    """Journals come from any OS: the trace's `sources`, the report's inputs and the project
    label name a path by its last folder or file. The Windows path is a real record's cwd; the
    trailing separators (a folder as typed) and the folder ending in X are hand-made."""
    cwd = record(WINDOWS, 1)["cwd"]
    assert cwd == "C:\\Users\\danil\\.claude"
    assert basename(cwd) == ".claude"
    assert basename(cwd + "\\") == ".claude"
    assert basename(str(WINDOWS)) == WINDOWS.name
    assert basename(str(WINDOWS.parent) + "/") == "context-command"
    assert basename("/home/dev/LaTeX") == "LaTeX"
    assert basename("LaTeX") == "LaTeX"  # a project name is already a last component


def test_largest_additions_list_every_growth_largest_first_then_by_time_and_id() -> None:
    """Codex 0.104 (localpush, 1,498 growths after the first request, 189 of them encrypted
    reasoning sized from reasoning_output_tokens, issue 28): every change that grew
    the context outside a baseline is an addition, a 1-token one too (three short user
    messages, the smallest, in time order), but the inferred head measured again after the
    compaction (a re-fit of the estimate: nothing entered the context, no one put it there);
    the report lists them all in this order and the summary takes the first of each request."""
    (session,) = sessions(CODEX)
    additions = largest_additions(session)
    grown = [
        (c.id, s.time_ns)
        for s in session.snapshots
        if not s.baseline
        for c in s.changes
        if c.delta_tokens > 0
    ]
    assert [g for g in grown if g[0] == INFERRED_HEAD_ID] != []
    grown = [g for g in grown if g[0] != INFERRED_HEAD_ID]
    assert len(additions) == len(grown) == 1470
    assert sum(a.change.id.startswith("reasoning-hidden") for a in additions) == 189
    assert sorted((a.change.id, a.snapshot.time_ns) for a in additions) == sorted(grown)
    assert not [a for a in additions if a.snapshot.baseline]
    keys = [(-a.change.delta_tokens, a.snapshot.time_ns, a.change.id) for a in additions]
    assert keys == sorted(keys)
    assert [(a.change.id, a.change.delta_tokens) for a in additions[-3:]] == [
        ("item-user:370:0", 1),
        ("item-user:420:0", 1),
        ("item-user:811:0", 1),
    ]
    # the two largest are two MCP outputs sent truncated to the same 48,000 bytes (their
    # markers 83,556 and 48,153 characters long): a tie, the earlier first
    top = additions[:2]
    assert [a.change.delta_tokens for a in top] == [12006, 12006]
    assert top[0].snapshot.time_ns < top[1].snapshot.time_ns
    assert additions[1].change.delta_tokens > additions[2].change.delta_tokens
    firsts = largest_addition_per_snapshot(session)
    for snapshot in session.snapshots:
        mine = [a for a in additions if a.snapshot is snapshot]
        assert firsts.get(id(snapshot)) == (mine[0] if mine else None)


def _prepended(
    session: Session, *made: tuple[str, int, int, str]
) -> tuple[Session, ContextSnapshot]:
    """The session with hand-made changes put first in its first non-baseline snapshot
    that has changes, each (id, tokens, delta_tokens, source_id) of that snapshot's first
    category, added if it grew and replaced if not; and that snapshot as edited."""
    import dataclasses

    from agent_profiler.model import ChangeKind, ContextChange

    index, snapshot = next(
        (i, s) for i, s in enumerate(session.snapshots) if not s.baseline and s.changes
    )
    changes = [
        ContextChange(
            id=item_id,
            category=snapshot.changes[0].category,
            change=ChangeKind.ADDED if delta > 0 else ChangeKind.REPLACED,
            tokens=tokens,
            delta_tokens=delta,
            source_id=source_id,
        )
        for item_id, tokens, delta, source_id in made
    ]
    edited = dataclasses.replace(snapshot, changes=(*changes, *snapshot.changes))
    snapshots = (*session.snapshots[:index], edited, *session.snapshots[index + 1 :])
    return dataclasses.replace(session, snapshots=snapshots), edited


def _with_a_still_change(session: Session, source_id: str = "") -> Session:
    """The session with one hand-made change added to its first non-baseline snapshot that
    has changes: an item whose size stayed the same (a category moved, delta 0), ranked
    first by its size, caused by `source_id`."""
    return _prepended(session, ("still", 10**9, 0, source_id))[0]


def _two_tied(session: Session, source_id: str = "") -> tuple[Session, ContextSnapshot]:
    """Two hand-made additions of one delta larger than any, "zz" then "aa", caused by
    `source_id` (`_prepended`)."""
    return _prepended(session, ("zz", 10**8, 10**8, source_id), ("aa", 10**8, 10**8, source_id))


def test_a_change_that_did_not_grow_is_no_addition() -> None:
    """Codex 0.104 with one hand-made change added to a later snapshot: an item whose size
    stayed the same (a category moved, delta 0) is not an addition, however it ranks."""
    (session,) = sessions(CODEX)
    found = largest_additions(_with_a_still_change(session))
    assert "still" not in {a.change.id for a in found}
    assert len(found) == len(largest_additions(session))


def test_the_tool_additions_are_the_first_of_the_additions_a_tool_call_caused() -> None:
    """The trace's Largest additions instants: largest_additions, cut to those a tool
    call caused, the first `limit` (here all of them). Codex 0.104 with one hand-made
    change by a tool call added that did not grow (delta 0): no instant."""
    from agent_profiler.views import largest_tool_additions, tools_by_call_id

    (session,) = sessions(CODEX)
    session = _with_a_still_change(session, next(iter(tools_by_call_id(session))))
    caused = [a for a in largest_additions(session) if a.tool is not None]
    assert len(caused) > 10
    for limit in (10, len(caused) + 1):
        found = largest_tool_additions(session, limit)
        assert [(a.change, a.snapshot, a.tool) for a in found] == [
            (a.change, a.snapshot, a.tool) for a in caused[:limit]
        ]


def _first_of_each(session: Session) -> dict[int, tuple[object, ...]]:
    """The definition: the first of largest_additions at each snapshot."""
    first: dict[int, tuple[object, ...]] = {}
    for a in largest_additions(session):
        first.setdefault(id(a.snapshot), (a.change, a.snapshot, a.tool))
    return first


def test_a_snapshots_largest_addition_ties_to_the_smallest_item_id() -> None:
    """Codex 0.104 with two hand-made changes of one delta, larger than any, added to a
    snapshot in reverse id order: the smaller id is its largest addition, as the first of
    largest_additions is; every other snapshot's is that first too."""
    (session,) = sessions(CODEX)
    session, edited = _two_tied(session)
    found = largest_addition_per_snapshot(session)
    assert found[id(edited)].change.id == "aa"
    assert {k: (a.change, a.snapshot, a.tool) for k, a in found.items()} == _first_of_each(session)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=SHARED_REASON)
def test_each_snapshots_largest_addition_is_the_first_of_largest_additions_in_the_corpus() -> None:
    """On every session of the corpus's Codex and Claude Code journals."""
    checked = 0
    for folder in ("codex", "claude-code"):
        for session in sessions(CORPUS / folder):
            found = largest_addition_per_snapshot(session)
            assert {k: (a.change, a.snapshot, a.tool) for k, a in found.items()} == (
                _first_of_each(session)
            ), session.session_id
            checked += len(found)
    assert checked > 1000


def test_a_tool_addition_that_ties_the_last_kept_still_ranks_by_its_id() -> None:
    """Codex 0.104 with two hand-made additions by a tool call, of one delta larger than
    any, in one snapshot and in reverse id order: with room for one, the smaller id."""
    from agent_profiler.views import largest_tool_additions, tools_by_call_id

    (session,) = sessions(CODEX)
    session, _ = _two_tied(session, next(iter(tools_by_call_id(session))))
    assert [a.change.id for a in largest_tool_additions(session, 1)] == ["aa"]
    assert [a.change.id for a in largest_tool_additions(session, 2)] == ["aa", "zz"]


@pytest.mark.skipif(not CORPUS.is_dir(), reason=SHARED_REASON)
def test_the_tool_additions_are_the_first_caused_by_a_tool_in_the_corpus() -> None:
    """largest_tool_additions passes over a change smaller than the `limit` largest met so
    far: the same as cutting largest_additions to those a tool caused, on every session of
    the corpus's Codex and Claude Code journals, for every limit up to past their number."""
    from agent_profiler.views import largest_tool_additions

    checked = 0
    for folder in ("codex", "claude-code"):
        for session in sessions(CORPUS / folder):
            caused = [
                (a.change, a.snapshot, a.tool)
                for a in largest_additions(session)
                if a.tool is not None
            ]
            for limit in (0, 1, 2, 3, 10, len(caused) + 1):
                found = largest_tool_additions(session, limit)
                assert [(a.change, a.snapshot, a.tool) for a in found] == caused[:limit]
            checked += len(caused)
    assert checked > 500


SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
MUSE_SYNTHETIC = DATA / "muse" / "synthetic"


def test_a_subagents_title_says_its_role_whose_it_is_and_through_which_call() -> None:
    """The spotter's subagent (Claude Code: role "subagent", not said) and Muse Code's
    goal-reminder child (its role said), as read; then the spotter's child edited: without
    a role, without its call id (the parent's call names it), and with a call id its
    parent does not hold, or without its parent (the end of the call id only)."""
    import dataclasses

    from agent_profiler.views import session_title

    parent, child = sessions(SPOTTER)
    model = " · claude-sonnet-4-5-20250929"
    title = "Subagent a881341 of 258c7280 via Task …9GenaK" + model
    assert session_title(child, parent) == title
    assert session_title(dataclasses.replace(child, child_role=None), parent) == title
    assert session_title(dataclasses.replace(child, parent_call_id=None), parent) == title
    cut = dataclasses.replace(  # the parent's journal cut before the Task call
        parent, tool_calls=tuple(c for c in parent.tool_calls if c.child_session is None)
    )
    lost = dataclasses.replace(child, parent_call_id="toolu_lost_abc123")
    assert session_title(lost, cut) == "Subagent a881341 of 258c7280 via …abc123" + model
    assert session_title(child, None) == "Subagent a881341 of 258c7280 via …9GenaK" + model
    found = {s.session_id: s for s in sessions(MUSE_SYNTHETIC)}
    (goal,) = [s for s in found.values() if s.child_role == "goal-reminder"]
    assert session_title(goal, found[goal.parent_session]) == (
        "Subagent 0000c001 (goal-reminder) of 0000a001 via goal-reminder …0f0002"
        " · muse-spark-1.3-contributor"
    )


def test_a_copys_short_id_is_the_sessions_short_id_and_its_mark() -> None:
    """A second file holding a session id is renamed `<id>#2` by the loader; its short id
    was the last 8 characters of the whole (`01a85d#2` for `258c7280`): now the id is
    shortened without the mark, which is put back."""
    from agent_profiler.views import short_id

    assert short_id("258c7280-ae70-4798-800f-63464d01a85d#2") == "258c7280#2"
    assert short_id("258c7280-ae70-4798-800f-63464d01a85d/a881341#2") == "a881341#2"
    assert short_id("019eef3d-1111-7222-8333-4444259027c5#3") == "259027c5#3"  # version 7
    assert short_id("ses_fd4c895f0ffe6gKgxHiEgiQCcd#2") == "iEgiQCcd#2"
    assert short_id("0000c003#2") == "0000c003#2"
    # A `#` that is not the loader's mark is part of the id.
    assert short_id("run#abc") == "run#abc" and short_id("#2") == "#2"


def test_at_one_time_a_requests_size_is_the_one_kept() -> None:
    """Hand-made: a compaction starting at the very time of a request, its size before
    (500) below the request's (900); the harness's size after it at its end. At that time
    the Context size series keeps the request's own reported size, not the compaction's
    (the trace keeps one sample of a time, the last: the compaction's was drawn, and a
    Claude Code request starting at its microcompaction lost its size)."""
    import dataclasses

    from agent_profiler.model import Compaction, Harness, Response, Session, Usage
    from agent_profiler.views import context_size_series

    s = 1_000_000_000
    t0 = 1_770_000_000 * s
    session = Session(
        Harness.PI,
        "s",
        t0,
        t0 + 10 * s,
        ("s.jsonl",),
        responses=(
            Response("r1", t0 + s, t0 + 2 * s, "m", Usage(900)),
            Response("r2", t0 + 5 * s, t0 + 6 * s, "m", Usage(300)),
        ),
        compactions=(
            Compaction("c", t0 + s, t0 + 3 * s, "compaction", pre_tokens=500, post_tokens=200),
        ),
    )
    assert context_size_series(session) == [(t0 + s, 900), (t0 + 3 * s, 200), (t0 + 5 * s, 300)]
    # The size after at a request's start likewise: that request's own is kept.
    ends_at_r2 = dataclasses.replace(session.compactions[0], end_ns=t0 + 5 * s)
    session = dataclasses.replace(session, compactions=(ends_at_r2,))
    assert context_size_series(session) == [(t0 + s, 900), (t0 + 5 * s, 300)]
