"""Muse rules the twelfth session's mutation sample found untested (`muse_runs.py`): the real
1.4.2 session of tests/data/journals, edited where it has no example (each docstring says how)."""

from __future__ import annotations

import copy
from pathlib import Path

from test_rules_muse import GOAL_CHILD, GOAL_TASK, HCN

from rules_spy import raw_lines, record, sessions, write

LINK = 78  # the goal-reminder task's memory_reminder_child_session_linked


def test_a_reminder_task_linked_again_stays_the_call_of_its_first_child(tmp_path: Path) -> None:
    """Line 78 links the goal-reminder task to its child; a second link of the same task to
    another child (written right after it, as a relaunch would be) does not move the call:
    the reminder call is made at the first link, with that link's child
    (muse_runs.on_reminder_linked__mutmut_44 gave the reminder no child of its own, so the
    call took whichever child the task was linked to last)."""
    lines = [record(HCN, n) for n in range(1, len(raw_lines(HCN))) if raw_lines(HCN)[n - 1]]
    again = copy.deepcopy(lines[LINK - 1])
    again["id"] = "3c2d8685-0000-0000-0000-000000000078"
    again["payload"]["event"]["child_session_id"] = "second-child"
    assert lines[LINK - 1]["payload"]["event"]["child_session_id"] == GOAL_CHILD
    lines.insert(LINK, again)
    (session,) = sessions(write(tmp_path, lines))
    (goal,) = (t for t in session.tool_calls if t.call_id == GOAL_TASK)
    assert goal.child_session == GOAL_CHILD
