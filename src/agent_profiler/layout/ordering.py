"""Which session goes where, and the layout of a set of them: `ordered_sessions` (top-level
sessions by start, each followed by its subagents), `iter_layout` (each session's group
track and plan, one at a time, with the flows from parents' tool calls to their children)
and `build_layout` (the same, every slice kept)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from operator import attrgetter

from agent_profiler.annotations import TraceFacts
from agent_profiler.layout import tracks as table_module
from agent_profiler.layout.plan import plan_session
from agent_profiler.layout.planning import TrackIds
from agent_profiler.layout.types import (
    TRACE_ROOT_UUID,
    Layout,
    Merge,
    SessionLayout,
    SessionPlan,
    Track,
    TrackKind,
    start_rank,
)
from agent_profiler.model import Session
from agent_profiler.sorting import by_first
from agent_profiler.views import (
    Launchers,
    session_label,
    session_span,
    session_title,
)

_START = attrgetter("start_ns")
_CALL_ORDER = attrgetter("start_ns", "call_id")


def build_layout(sessions: Sequence[Session], facts: TraceFacts) -> Layout:
    """The layout of these sessions, in ordered_sessions' order; a subagent whose
    launching tool call is in the set gets a flow from that call to its first input."""
    groups: list[Track] = []
    laid: list[SessionLayout] = []
    for group, plan in iter_layout(sessions, facts):
        groups.append(group)
        laid.append(plan.laid_out())
    return Layout(tuple(groups), tuple(laid))


def ordered_sessions(sessions: Sequence[Session], spans: Spans | None = None) -> list[Session]:
    """The order sessions are laid out and written in: top-level sessions by (start,
    session id), each followed by its subagents in the same order (theirs after each).
    A start is the session's span's (views.session_span: its capture's start); `spans`
    keeps the spans worked out, for the caller to use again."""
    known = Spans() if spans is None else spans

    def _start_key(session: Session) -> tuple[int, str]:
        """Where a session starts as the trace shows it (its capture's start), then its id."""
        return known.of(session)[0], session.session_id

    by_id = {s.session_id: s for s in sessions}
    children: dict[str, list[Session]] = {}
    roots: list[Session] = []
    for session in sessions:
        parent = session.parent_session
        if parent is not None and parent in by_id and parent != session.session_id:
            children.setdefault(parent, []).append(session)
        else:
            roots.append(session)
    order: list[Session] = []
    seen: set[int] = set()
    # Depth first with a stack of its own (a chain of thousands of subagents, each launched
    # by the one before, is no recursion): each session's children pushed last first, so
    # they come out in (start, id) order, each followed by its own.
    stack = sorted(roots, key=_start_key)[::-1]
    while stack:
        session = stack.pop()
        if id(session) in seen:  # a damaged journal's cycle of parents
            continue
        seen.add(id(session))
        order.append(session)
        stack += reversed(sorted(children.get(session.session_id, ()), key=_start_key))
    # Sessions only reachable through a cycle of parents: by (start, id) at the end.
    order += sorted((s for s in sessions if id(s) not in seen), key=_start_key)
    return order


class Spans:
    """Each session's span (views.session_span: a pass over all its items), worked out
    once however often it is asked for."""

    def __init__(self) -> None:
        self.spans: dict[int, tuple[int, int]] = {}

    def of(self, session: Session) -> tuple[int, int]:
        span = self.spans.get(id(session))
        if span is None:
            span = self.spans[id(session)] = session_span(session)
        return span


def iter_layout(
    sessions: Sequence[Session], facts: TraceFacts, group: int = 0
) -> Iterator[tuple[Track, SessionPlan]]:
    """The sessions' plans one at a time, in their order: each session's plan with its
    group track (declared before the plan's tracks), so a writer can encode a session and
    let it go before the next is planned (build_layout keeps each plan's slices). Sessions
    are independent but for the flow from a parent's launching tool to its child's first
    input, whose two ends are worked out from the model alone (the child's first input and
    the tool's start). `group` picks the block of track uuids (UUID_BLOCK) these sessions
    are numbered in."""
    table = table_module.TABLE  # read here, so a test can lay out with a table of its own
    spans = Spans()
    ordered = ordered_sessions(sessions, spans)
    by_id = {s.session_id: s for s in ordered}
    # Parent → child links in the order a whole-trace pass would make them.
    links_out: dict[str, list[tuple[str, Session]]] = {}
    links_in: dict[str, list[tuple[Session, str, int]]] = {}
    for session in ordered:
        starts: dict[str, int] | None = None
        for call in session.tool_calls:
            child = by_id.get(call.child_session) if call.child_session else None
            if child is None:
                continue
            if starts is None:
                # The tool slice a call id names: the last of that id in start order.
                starts = {
                    c.call_id: c.start_ns for c in by_first(session.tool_calls, _START, _CALL_ORDER)
                }
            links_out.setdefault(session.session_id, []).append((call.call_id, child))
            links_in.setdefault(child.session_id, []).append(
                (session, call.call_id, starts[call.call_id])
            )
    # No process track: journals do not record the agent's pid, and the UI names a process
    # `<name> <pid>` (docs/traces.md). Each session has a group track named for it: a
    # top-level one under the trace's root (ranked by its real start), a subagent's under
    # its parent's group (after the parent's capture, in start order).
    ids = TrackIds(group)
    child_rank: dict[str, int] = {}
    parents = [by_id.get(s.parent_session) if s.parent_session else None for s in ordered]
    parents = [None if p is s else p for s, p in zip(ordered, parents, strict=True)]
    # A subagent's title names its launching call: each parent's calls are indexed once
    # (views.Launchers), not sorted again per subagent, and let go after its last subagent.
    waiting = Counter(id(p) for p in parents if p is not None)
    launchers: dict[int, Launchers] = {}
    for session, parent in zip(ordered, parents, strict=True):
        indexed = None
        if parent is None:
            real_start = spans.of(session)[0] - session.shifted_ns  # profile (1)'s start
            parent_uuid, rank = TRACE_ROOT_UUID, start_rank(real_start)
        else:
            parent_uuid = ids.get(f"session:{parent.session_id}")
            rank = child_rank[parent.session_id] = child_rank.get(parent.session_id, 0) + 1
            indexed = launchers.get(id(parent))
            if indexed is None:
                indexed = launchers[id(parent)] = Launchers(parent)
            waiting[id(parent)] -= 1
            if not waiting[id(parent)]:
                del launchers[id(parent)]
        title = session_title(session, parent, indexed)
        group_track = Track(
            ids.get(f"session:{session.session_id}"),
            title,
            TrackKind.GROUP,
            parent=parent_uuid,
            order_rank=rank,
            explicit_child_order=True,
            merge=Merge.NONE,
            description=f"{session_label(session)}: its capture (agentprof.capture), then "
            "its subagents in start order.",
        )
        plan = plan_session(
            session,
            group_track.uuid,
            facts,
            ids,
            table,
            links_out.get(session.session_id, ()),
            links_in.get(session.session_id, ()),
            spans.of(session),
        )
        yield group_track, plan
        del plan
