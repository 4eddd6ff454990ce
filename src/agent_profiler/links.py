"""What ties sessions together across files and journal groups: session ids made unique
(`rename`: a second file holding an id is shown as `<id>#2`, and said), a subagent whose
parent is not read (`warn_missing_parents`), and subagents a parent names that were not read
(`with_unread_children`: a count on the parent's profile; `warn_unread_children`: one line
for the whole run), and a damaged journal's cycle of parents, cut (`cut_cycles`: every
command sees a forest).

The parent process settles what crosses groups from each group's `Link`s and `Unread`s
(small: a worker sends them back), so the warnings are the same with any --jobs."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable

from agent_profiler.console import counted
from agent_profiler.diagnostics import Diagnostics, journal_name
from agent_profiler.errors import JournalError
from agent_profiler.model import UNREAD_CHILDREN, Session
from agent_profiler.views import unread_children

Link = tuple[str, str | None, str]  # (session id, parent id, the session's first source)
# (the session's first source, how many subagents it launched were not read, their ids):
# only > 0
Unread = tuple[str, int, tuple[str, ...]]


def parent_links(sessions: Iterable[Session]) -> list[Link]:
    """What warn_missing_parents needs of each session (small: a worker sends it back); a
    session whose adapter said why its parent is missing (`parent_unknown`) is not warned
    about again."""
    return [
        (
            s.session_id,
            None if any(name == "parent_unknown" for name, _ in s.facts) else s.parent_session,
            s.sources[0] if s.sources else "",
        )
        for s in sessions
    ]


def unread_links(sessions: Iterable[Session]) -> list[Unread]:
    """What warn_unread_children needs of the sessions that launched subagents not read."""
    sessions = list(sessions)
    known = {s.session_id for s in sessions}
    return [
        (
            s.sources[0] if s.sources else "",
            count,
            tuple(
                dict.fromkeys(
                    c.child_session
                    for c in s.tool_calls
                    if c.child_session is not None and c.child_session not in known
                )
            ),
        )
        for s in sessions
        if (count := unread_children(s))
    ]


def with_unread_children(group: list[Session]) -> list[Session]:
    """The group's sessions, each whose tool calls name a child (`child_session`: the id
    the child's session has when read) that is not in the group given the number of such
    children as the fact UNREAD_CHILDREN (TRACE_CONTRACT §3 `unavailable_child_sessions`
    on its profile). A subagent is read in its parent's group whenever both are given
    (each adapter's `plan`), so the group decides. An adapter only names the child on the
    launching call, whether or not its journal is given; the layout draws no flow to a
    child that is not there."""
    known = {s.session_id for s in group}
    marked = []
    for session in group:
        unread = {
            c.child_session: None
            for c in session.tool_calls
            if c.child_session is not None and c.child_session not in known
        }
        if unread:
            facts = (*session.facts, (UNREAD_CHILDREN, len(unread)))
            session = dataclasses.replace(session, facts=facts)
        marked.append(session)
    return marked


def warn_missing_parents(links: Iterable[Link], diagnostics: Diagnostics) -> None:
    """A subagent whose parent is not in the export: (session id, parent id, source)."""
    links = list(links)
    known = {session_id for session_id, _, _ in links}
    for session_id, parent, source in links:
        if parent is not None and parent not in known:
            diagnostics.warn(
                source,
                None,
                "parent-not-exported",
                f"subagent {session_id}: its parent session is not among the journals read "
                "(pass the parent journal or its folder to link them)",
            )


def warn_unread_children(
    unread: Iterable[Unread],
    diagnostics: Diagnostics,
    verb: str = "pass",
    failed: Iterable[JournalError] = (),
) -> None:
    """The subagents parents launched whose journals were not read: one warning for the
    run, at the first such parent's file. `verb`: what to do with their files (`collect`
    says "collect"). `failed`: the files of the run that could not be used, each said on
    its own line: a subagent whose file is among them (its id in the file's name, as every
    harness names a child's file) was given, and asking for it again misled."""
    parents = list(unread)
    if not parents:
        return
    total = sum(count for _, count, _ in parents)
    names = [os.path.basename(error.path) for error in failed]
    tails = [
        tail
        for _, _, children in parents
        for child in children
        if len(tail := child.rpartition("/")[2].partition("#")[0]) >= 4
    ]
    given = min(_found_in(tails, names), total)
    by = "this session" if len(parents) == 1 else f"{len(parents)} sessions (this one first)"
    if given == total:
        what = "its file was" if total == 1 else "their files were"
        hint = f"{what} found but could not be read, as said above"
    else:
        hint = f"{verb} its file or folder" if total == 1 else f"{verb} their files or folder"
        if given:
            hint = f"{given:,} of their files could not be read (said above); {verb} the others'"
    diagnostics.warn(
        parents[0][0],
        None,
        "subagent-not-read",
        f"{counted(total, 'subagent')} named by {by} "
        + ("was" if total == 1 else "were")
        + f" not read: {hint} (the launching call keeps the id, `child_session`)",
    )


def _found_in(tails: list[str], names: list[str]) -> int:
    """How many of `tails` are part of one of `names`. The tails of one length at a time,
    against the set of the names' pieces of that length: each tail looked for in every name
    was thousands × thousands (a parent whose subagent files all failed)."""
    by_length: dict[int, list[str]] = {}
    for tail in tails:
        by_length.setdefault(len(tail), []).append(tail)
    found = 0
    for length, alike in by_length.items():
        if len(alike) == 1:  # one tail: no set of pieces to build
            found += any(alike[0] in name for name in names)
            continue
        pieces = {name[i : i + length] for name in names for i in range(len(name) - length + 1)}
        found += sum(tail in pieces for tail in alike)
    return found


def rename(
    group: list[Session], seen: dict[str, int], diagnostics: Diagnostics | None = None
) -> list[Session]:
    """Session ids name tracks, so they must be unique in one trace: a repeated id (a
    resumed run, a longer copy: a file with the very bytes of another is not read twice,
    repeats.py) gets a `#2`, `#3` suffix, and so do the links of the subagents read with it
    (their parent, the parent's launching call). `seen` counts the ids of the groups
    before this one and is updated. Each session renamed whose parent was not is one
    warning in `diagnostics`.

    The new id belongs to the session, not to its old id: one group may hold two files of
    one session (Codex reads a rollout and its copy as one group), and renaming by id gave
    both copies the same `#2`, so their tracks shared uuids."""
    said = diagnostics if diagnostics is not None else Diagnostics()
    unique: list[Session] = []
    new_ids: list[str] = []
    links: dict[str, str] = {}  # old id -> the id a link to it now means (first copy)
    for session in group:
        count = seen.get(session.session_id, 0) + 1
        seen[session.session_id] = count
        new_id = session.session_id if count == 1 else f"{session.session_id}#{count}"
        new_ids.append(new_id)
        links.setdefault(session.session_id, new_id)
    renamed = {old: new for old, new in links.items() if old != new}
    for session, new_id in zip(group, new_ids, strict=True):
        # (a subagent renamed with its parent: the parent's line says it)
        if new_id != session.session_id and session.parent_session not in renamed:
            said.warn(
                session.sources[0] if session.sources else "",
                None,
                "session-repeated",
                f"another file read holds session {journal_name(session.session_id)} "
                "too (a resumed run, a longer copy?); this one is "
                f"shown as {journal_name(new_id)}",
            )
        if new_id == session.session_id and not renamed:
            unique.append(session)
            continue
        calls = tuple(
            call
            if (child := _child_named(call.child_session, session.session_id, new_id, renamed))
            == call.child_session
            else dataclasses.replace(call, child_session=child)
            for call in session.tool_calls
        )
        unique.append(
            dataclasses.replace(
                session,
                session_id=new_id,
                parent_session=renamed.get(session.parent_session or "", session.parent_session),
                tool_calls=calls,
            )
        )
    return unique


# The fact a session whose parent link was cut keeps: the parent id its journal named.
PARENT_CUT = "parent_cut"
_SHOWN_CYCLE = 6  # a longer cycle is shown by its first sessions and its length


def cut_cycles(group: list[Session], diagnostics: Diagnostics | None = None) -> list[Session]:
    """The group's sessions with each cycle of parents cut (a damaged journal: a session
    naming itself as its parent, or two naming each other), so that every command — the
    trace's order, summary, report, collect, fleet — sees a forest. In each cycle the
    session that starts first (then by id) loses its link: it becomes a top-level session
    (no parent, call or child role), keeping the parent id its journal named as the fact
    PARENT_CUT, and one warning at its file says what was cut. Ids are unique here
    (`rename` came first); one walk up from each session, each session walked once."""
    by_id = {s.session_id: s for s in group}
    state: dict[str, int] = {}  # 1: on the walk now, 2: done
    cut: dict[str, list[str]] = {}  # session id -> its cycle, from it round to it
    for start in by_id:
        path: list[str] = []
        node: str | None = start
        while node is not None and node in by_id and node not in state:
            state[node] = 1
            path.append(node)
            node = by_id[node].parent_session
        if node is not None and state.get(node) == 1:  # round to a session of this walk
            ring = path[path.index(node) :]
            first = min(ring, key=lambda i: (by_id[i].start_ns, i))
            at = ring.index(first)
            cut[first] = ring[at:] + ring[:at]
        for member in path:
            state[member] = 2
    if not cut:
        return group
    said = diagnostics if diagnostics is not None else Diagnostics()
    result = []
    for session in group:
        if (cycle := cut.get(session.session_id)) is None:
            result.append(session)
            continue
        named = session.parent_session or ""
        said.warn(
            session.sources[0] if session.sources else "",
            None,
            "parent-cycle",
            f"session {journal_name(session.session_id)}"
            + (
                " names itself as its parent"
                if len(cycle) == 1
                else f": its parents form a cycle: {_cycle_text(cycle)}"
            )
            + "; its parent link is cut (shown as a top-level session)",
        )
        result.append(
            dataclasses.replace(
                session,
                parent_session=None,
                parent_call_id=None,
                child_role=None,
                facts=(*session.facts, (PARENT_CUT, named)),
            )
        )
    return result


def _cycle_text(cycle: list[str]) -> str:
    """`A → B → A`; a longer cycle by its first sessions and its length."""
    shown = [journal_name(i) for i in cycle[:_SHOWN_CYCLE]]
    if len(cycle) > _SHOWN_CYCLE:
        return " → ".join(shown) + f" → … → {shown[0]} ({len(cycle):,} sessions)"
    return " → ".join([*shown, shown[0]])


def _child_named(child: str | None, old: str, new: str, renamed: dict[str, str]) -> str | None:
    """A launching call's child id once its session `old` is `new`: a renamed child's new
    id; a child not read keeps its parent's new name too (`S#2/a`): it is the renamed copy's
    child, not the first copy's (no flow goes to a child that is not there)."""
    if child is None or child in renamed:
        return renamed.get(child or "", child)
    if new != old and child.startswith(f"{old}/"):
        return new + child[len(old) :]
    return child
