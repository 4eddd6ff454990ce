"""Trees of sessions that grow: a parent's subagents are titled without going through the
parent's calls once per subagent (views.Launchers), so many subagents cost each the same.
Counted, not timed: the times of a run are not a test's to keep."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from agent_profiler.layout import TraceFacts, iter_layout
from agent_profiler.model import Session, ToolCall
from rules_spy import sessions
from samples import DATA

SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"


class _Counted(tuple[ToolCall, ...]):
    """A session's tool calls that count each pass over them."""

    passes = 0

    def __iter__(self) -> Iterator[ToolCall]:
        type(self).passes += 1
        return super().__iter__()


def _parent_with(children: int) -> tuple[Session, list[Session]]:
    """Edited real sessions: the spotter's parent with `children` copies of its subagent,
    each launched by a copy of the Task call (its call id, and the copy as its child)."""
    parent, child = sessions(SPOTTER)
    (task,) = [c for c in parent.tool_calls if c.child_session == child.session_id]
    others = [c for c in parent.tool_calls if c is not task]
    calls: list[ToolCall] = []
    copies: list[Session] = []
    for k in range(children):
        call_id, child_id = f"{task.call_id}{k:04d}", f"{child.session_id}{k:04d}"
        calls.append(dataclasses.replace(task, call_id=call_id, child_session=child_id))
        copies.append(dataclasses.replace(child, session_id=child_id, parent_call_id=call_id))
    edited = dataclasses.replace(parent, tool_calls=(*others, *calls))
    # Set after the copy: a Session made anew makes its calls' paths safe in a tuple of
    # its own (model.Session.__post_init__), which counts nothing.
    object.__setattr__(edited, "tool_calls", _Counted(edited.tool_calls))
    return edited, copies


def _passes_over_the_parents_calls(children: int) -> tuple[int, list[str]]:
    parent, copies = _parent_with(children)
    _Counted.passes = 0
    titles = []
    for group, plan in iter_layout([parent, *copies], TraceFacts()):
        titles.append(group.name)
        plan.laid_out()
    return _Counted.passes, titles


def test_a_parents_calls_are_gone_through_as_often_for_40_subagents_as_for_2() -> None:
    """The layout titles each subagent by the call that launched it: with 40 subagents
    the parent's calls are gone through no more often than with 2 (before: sorted again
    for each subagent's title), and each title still names its own call."""
    few, few_titles = _passes_over_the_parents_calls(2)
    many, many_titles = _passes_over_the_parents_calls(40)
    assert many == few
    assert len(many_titles) == 41
    for k, title in enumerate(many_titles[1:]):
        assert title.startswith(f"Subagent a881341{k:04d} of 258c7280 via Task …aK{k:04d} · ")
    assert many_titles[:3] == few_titles


def test_a_counted_tuple_is_still_the_sessions_calls() -> None:
    """The counting wrapper changes nothing the layout sees: the same titles as the
    plain sessions."""
    parent, copies = _parent_with(3)
    plain: Any = dataclasses.replace(parent, tool_calls=tuple(parent.tool_calls))
    counted = [g.name for g, _ in iter_layout([parent, *copies], TraceFacts())]
    assert counted == [g.name for g, _ in iter_layout([plain, *copies], TraceFacts())]
