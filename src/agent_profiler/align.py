"""`export --align start`: every top-level session laid out from one origin, so sessions of
different days sit one above the other in ui.perfetto.dev instead of being slivers far
apart on one wall clock.

A session tree (a top-level session and its subagents) moves as one: its earliest moment
goes to ORIGIN and every time in it moves by the same amount, so a subagent keeps its
place inside its parent. Each session keeps its real start (`Session.shifted_ns`: the
amount it moved by), which `profile (1)` says (`clock_alignment`, `real_start`) and by
which the trace root orders the sessions. The shift depends on the tree alone, so journal
groups read apart (worker processes) agree without knowing each other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from agent_profiler.model import Session
from agent_profiler.views import session_span


class AlignChoice(StrEnum):
    """`export --align`: how sessions are laid out in time."""

    START = "start"


# Where every tree starts: the epoch. Any fixed instant would do; the epoch makes a time
# in the aligned trace read as "time since the session tree began".
ORIGIN = 0


def align_start(sessions: Sequence[Session]) -> list[Session]:
    """The sessions with each tree moved so that it starts at ORIGIN (same order)."""
    by_id = {s.session_id: s for s in sessions}
    trees: dict[str, int] = {}  # root id → the tree's earliest moment
    roots = [_root(s, by_id) for s in sessions]
    for session, root in zip(sessions, roots, strict=True):
        start = session_span(session)[0]
        trees[root] = min(trees.get(root, start), start)
    return [
        shifted(session, ORIGIN - trees[root])
        for session, root in zip(sessions, roots, strict=True)
    ]


def _root(session: Session, by_id: dict[str, Session]) -> str:
    seen = {session.session_id}
    while session.parent_session in by_id and session.parent_session not in seen:
        session = by_id[session.parent_session]
        seen.add(session.session_id)
    return session.session_id


def shifted(session: Session, delta: int) -> Session:
    """The session with every time in it moved by `delta` ns (and `shifted_ns` saying so)."""
    if not delta:
        return session

    def move(item: Any, *names: str) -> Any:
        return dataclasses.replace(item, **{n: getattr(item, n) + delta for n in names})

    def span(item: Any) -> Any:
        return move(item, "start_ns", "end_ns")

    compactions = tuple(
        dataclasses.replace(span(c), request=None if c.request is None else span(c.request))
        for c in session.compactions
    )
    return dataclasses.replace(
        session,
        start_ns=session.start_ns + delta,
        end_ns=session.end_ns + delta,
        prompts=tuple(map(span, session.prompts)),
        responses=tuple(map(span, session.responses)),
        tool_calls=tuple(map(span, session.tool_calls)),
        compactions=compactions,
        snapshots=tuple(move(x, "time_ns") for x in session.snapshots),
        failed_requests=tuple(map(span, session.failed_requests)),
        unmetered_responses=tuple(map(span, session.unmetered_responses)),
        markers=tuple(move(m, "time_ns") for m in session.markers),
        shifted_ns=session.shifted_ns + delta,
    )


__all__ = ["ORIGIN", "AlignChoice", "align_start", "shifted"]
