"""Which journal groups of the dataset a collect reads again with its new files, so that
the dataset is the one a fresh collect of the same files makes, whatever the order and
the collects in which they came.

A group is one session tree (loader.plan), planned from the files given together. A
subagent collected in one run and its parent in another were two groups for good: the
child an orphan, its launching call without `child_session`, its last request's output
(which Claude Code writes only into the parent's tool result) short. Planning cannot be
redone from the manifest (a plan reads the files' first records, and the folders beside
them), so the manifest keeps what reading a group told of it instead: the session ids it
holds (`ids`, as the journals spell them) and the parent sessions its subagents name that
it does not hold (`parents`). After the new files' groups are read, every old group that
shares an id with them, holds a parent they name or names one of theirs as its parent
(in both directions, and on through the old groups so joined) is planned and read again
together with them, its old rows dropped (or only dropped, when the groups read now hold
all its files: a plan takes a subagent from its parent's folder). A group with a file
neither given to this collect nor read by it cannot be read whole, and is left as it is;
the group read now that relates to it is marked (UNJOINED), and the first collect given
both joins them, though nothing is new."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from agent_profiler.errors import JournalError
from agent_profiler.model import Harness

from .parquet import literal
from .reading import Read, Reader

Node = int | str  # a group read by this collect (its index), or an old one (its id)
_RENAMED = re.compile(r"#\d+$")  # `<id>#2`: a repeated id, as loader._rename makes it


def facts(
    journal_ids: Iterable[str], links: Iterable[tuple[str, str | None, str]]
) -> dict[str, Any]:
    """A group's manifest entry's `ids` and `parents`, from a reading's outcome
    (pipeline.GroupOutcome: `journal_ids`, and `links`: (id, parent id, source) with ids
    made unique)."""
    ids = {session_id for session_id in journal_ids if session_id}
    links = list(links)
    held = ids | {session_id for session_id, _, _ in links}
    parents = {parent for _, parent, _ in links if parent is not None and parent not in held}
    return {"ids": sorted(ids), "parents": sorted(parents)}


def legacy_facts(target: Path, groups: Iterable[str]) -> dict[str, dict[str, Any]]:
    """`ids` and `parents` of groups a collect from before they were kept wrote, from the
    current version's `sessions` table (its ids made unique: `#2` left off)."""
    import duckdb

    wanted = sorted(groups)
    files = sorted((target / "current" / "sessions").rglob("*.parquet"))
    if not files:
        return {group_id: {"ids": [], "parents": []} for group_id in wanted}
    listed = "[" + ", ".join(literal(p) for p in files) + "]"
    connection = duckdb.connect(":memory:")
    try:
        rows = connection.execute(
            f"SELECT group_id, session_id, parent_session FROM read_parquet({listed}, "
            "hive_partitioning = false, union_by_name = true) WHERE group_id IN "
            "(SELECT unnest(?::VARCHAR[]))",
            [wanted],
        ).fetchall()
    finally:
        connection.close()
    links: dict[str, list[tuple[str, str | None, str]]] = {}
    for group_id, session_id, parent in rows:
        base = _RENAMED.sub("", parent) if parent else None
        links.setdefault(group_id, []).append((_RENAMED.sub("", session_id), base, ""))
    # A group without a session row has none to relate by (and is not asked again).
    return {g: facts((s for s, _, _ in links.get(g, ())), links.get(g, ())) for g in wanted}


UNJOINED = "unjoined"  # a group that relates to one this collect could not read again


def pending(groups: Mapping[str, Mapping[str, Any]], files: Mapping[str, Path]) -> bool:
    """Whether a group marked UNJOINED has every file given to this collect: then it is
    looked at again, though nothing is new."""
    return any(e.get(UNJOINED) and all(k in files for k in e["files"]) for e in groups.values())


def _index(nodes: Mapping[Node, Mapping[str, Any]]) -> tuple[dict[str, list[Node]], ...]:
    """The nodes by each id they hold, and by each parent they name."""
    by_id: dict[str, list[Node]] = {}
    by_parent: dict[str, list[Node]] = {}
    for node, entry in nodes.items():
        for session_id in entry["ids"]:
            by_id.setdefault(session_id, []).append(node)
        for parent in entry["parents"]:
            by_parent.setdefault(parent, []).append(node)
    return by_id, by_parent


def _near(entry: Mapping[str, Any], index: tuple[dict[str, list[Node]], ...]) -> Iterator[Node]:
    """The nodes related to a group: holding one of its ids or a parent it names, or
    naming one of its ids as their parent."""
    by_id, by_parent = index
    for session_id in (*entry["ids"], *entry["parents"]):
        yield from by_id.get(session_id, ())
    for session_id in entry["ids"]:
        yield from by_parent.get(session_id, ())


def joined(
    old_groups: Mapping[str, Mapping[str, Any]],
    new: Mapping[int, Mapping[str, Any]],
    readable: set[str],
) -> tuple[set[int], set[str]]:
    """The new groups (by index) and old groups (by id) to plan and read again together:
    every connected set of groups, related by their `ids` and `parents`, that holds an old
    group and a new one, or an old group marked UNJOINED and another. `readable`: the old
    groups that can be read again (not read by this collect already, and every file of
    theirs given to it or read by it)."""
    nodes: dict[Node, Mapping[str, Any]] = {i: entry for i, entry in new.items()}
    nodes |= {g: old_groups[g] for g in readable if "ids" in old_groups[g]}
    index = _index(nodes)
    starts = [*new, *(g for g in readable if old_groups[g].get(UNJOINED))]
    seen: set[Node] = set()
    new_joined: set[int] = set()
    old_joined: set[str] = set()
    for start in starts:
        if start in seen or start not in nodes:
            continue
        component = {start}
        todo = [start]
        while todo:
            for node in _near(nodes[todo.pop()], index):
                if node not in component:
                    component.add(node)
                    todo.append(node)
        seen |= component
        old = {node for node in component if isinstance(node, str)}
        if old and len(component) > 1:
            new_joined |= {node for node in component if isinstance(node, int)}
            old_joined |= old
    return new_joined, old_joined


def regroup(
    target: Path,
    files: Mapping[str, Path],
    reads: list[Read],
    carried: dict[str, dict[str, Any]],
    reader: Reader,
    refuse: Callable[[str, JournalError | None], None],
    harness: Harness | None,
) -> tuple[list[Read], set[str], set[str]]:
    """The groups read (`reads`, of the new and changed files) once the old groups they
    relate to (`carried`: the dataset's groups not read again yet; `files`: the journals
    given, by key) are planned and read again with them; the old groups so read again,
    whose entries and rows are dropped; and the groups read that relate to an old group
    not given whole to this collect (to be marked UNJOINED: the first collect given both
    reads them again together)."""
    from agent_profiler.loader import plan

    taken = {r.group_id for r in reads}
    # The journals the groups read now hold, given or not (a plan takes a Claude Code
    # session's subagents, a Gemini CLI session's `chats/<id>/`, from their folder).
    where = dict(files)
    for path in (p for r in reads if r.outcome.paths for p in r.group.paths):
        where.setdefault(reader.key_of(path), path)
    readable = {
        group_id
        for group_id, entry in carried.items()
        if group_id not in taken and entry["files"] and all(k in where for k in entry["files"])
    }
    if not reads and not any(carried[g].get(UNJOINED) for g in readable):
        return reads, set(), set()
    if unknown := {g for g in readable if "ids" not in carried[g]}:
        # Written before the manifest kept them: once, from the sessions table.
        for group_id, found in legacy_facts(target, unknown).items():
            carried[group_id] = carried[group_id] | found  # not the old manifest's
    new = {i: _facts(r) for i, r in enumerate(reads) if r.outcome.paths}
    new_joined, old_joined = joined(carried, new, readable)
    # And an old group a file of which a group read now holds (a plan takes a Claude Code
    # session's subagents from its folder): a compaction file had no session to relate by.
    # Not one whose reading failed whole (its main journal gone since the plan): it holds
    # nothing, so the old group it would replace is kept as it is (it was dropped, and the
    # subagent's rows collected before with it).
    member = {
        reader.key_of(p): i for i, r in enumerate(reads) if r.outcome.paths for p in r.group.paths
    }
    for group_id in readable - old_joined:
        if held := {member[k] for k in carried[group_id]["files"] if k in member}:
            old_joined.add(group_id)
            new_joined |= held
    read_now = {reader.key_of(p) for i in new_joined for p in reads[i].group.paths}
    # An old group whose files were all read now (a plan takes a Claude Code session's
    # subagents from its folder) is only dropped: no group needs reading again.
    if any(not read_now.issuperset(carried[g]["files"]) for g in old_joined):
        wanted = read_now | {k for g in old_joined for k in carried[g]["files"]}
        groups, failures = plan([where[k] for k in where if k in wanted], harness)
        for failed in failures:
            refuse(reader.key_of(Path(failed.path)), failed)
        again = reader(groups)
        # A reading that failed whole (a journal gone since this plan) replaces nothing:
        # the old groups whose files it held are kept as they are, as `member` keeps them.
        lost = {reader.key_of(p) for r in again if not r.outcome.paths for p in r.group.paths}
        old_joined -= {g for g in old_joined if lost.intersection(carried[g]["files"])}
        reads = [read for i, read in enumerate(reads) if i not in new_joined] + again
    # The old groups left out for a file not given: a group read now that relates to one
    # is marked, so that a collect given both joins them.
    blocked: dict[Node, Mapping[str, Any]] = {
        g: entry
        for g, entry in carried.items()
        if "ids" in entry and g not in readable and g not in taken
    }
    index = _index(blocked)
    unjoined = {r.group_id for r in reads if r.outcome.paths and any(_near(_facts(r), index))}
    return reads, old_joined, unjoined


def _facts(read: Read) -> dict[str, Any]:
    return facts(read.outcome.journal_ids, read.outcome.links)
