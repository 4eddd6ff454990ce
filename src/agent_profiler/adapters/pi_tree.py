"""Pi's session tree: entries linked by `parentId`, and which of them the model sees.

Owns the active branch of a session (`buildSessionContext`: the path from a leaf to the
root, cut at the latest compaction) and the context parts each entry contributes.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent_profiler.attribution import Item
from agent_profiler.estimate import text_tokens
from agent_profiler.model import Category, SourceKind
from agent_profiler.records import record


def measured_part(
    item_id: str,
    category: Category,
    text: str,
    label: str,
    source_id: str = "",
    source_kind: SourceKind = SourceKind.NONE,
) -> Item:
    """A part measured by the shared estimator; its text is not kept. The same object
    enters the context log each time its entry is on the branch (`ContextLog.enter`)."""
    return Item(item_id, category, len(text), text_tokens(text), label, source_id, source_kind)


@record
class Entry:
    id: str
    parent: str | None
    kind: str
    time_ns: int
    parts: tuple[Item, ...] = ()  # what it contributes while in the context
    first_kept: str | None = None  # compaction: where the history it keeps starts
    prompt_id: str | None = None  # the nearest user prompt on its branch (itself for one)
    thinking_level: str | None = None  # the level in force on its branch
    # Where the active path has it (-1: not on it) and whether the model sees it: the
    # Branch's own state, kept on the entry rather than in a dict and a set beside the
    # tree (a long session's tree held both for every entry).
    position: int = -1
    visible: bool = False
    # A `context_edit` (v1.6): the entry it edits (its parts: the replacement, none when
    # it takes the entry out); an edited entry: its edits, in the order they were made.
    target: str | None = None
    edits: list[str] | None = None


class Branch:
    """The active path of the session tree (root first) and which of its entries
    the model sees, per `buildSessionContext`.

    Moving to another leaf costs the part of the path that changes, plus the
    entries between the old and the new compaction cut, not the whole path: a
    session is read in time linear in its length, however many requests it has.
    """

    def __init__(self, entries: dict[str, Entry]) -> None:
        self.entries = entries
        self.path: list[str] = []  # an entry on it has its `position` here
        self.compactions: list[int] = []  # positions of the compaction entries on the path
        self.cut = 0  # entries before this position were compacted away
        self.edited = False  # whether any entry was edited (`context_edit`)

    def move_to(self, leaf: str | None) -> tuple[list[str], list[str]]:
        """Make the path end at `leaf` (None: empty); returns the entries that left
        the context and those that entered it, each in path order."""
        entries = self.entries
        path = self.path
        compactions = self.compactions
        tail: list[Entry] = []
        node = entries[leaf] if leaf is not None else None
        while node is not None and node.position < 0:
            tail.append(node)
            node = entries[node.parent] if node.parent is not None else None
        keep = node.position + 1 if node is not None else 0
        grows = keep == len(path)
        if grows:  # (a loop, not all() over a generator: once a request)
            for entry in tail:
                if entry.kind == "compaction" or entry.target is not None:
                    grows = False
                    break
        if grows:
            # Nearly every move: the path only grows, by entries that are no compaction,
            # so the active compaction and the cut stay as they are, and only the new
            # entries can enter (the general case below, without what cannot change).
            cut = self.cut
            entering: list[str] = []
            for entry in reversed(tail):
                position = entry.position = len(path)
                path.append(entry.id)
                if entry.parts and position >= cut:  # `_wanted`; a new entry is not visible
                    entry.visible = True
                    entering.append(entry.id)
            return [], entering
        old_active = compactions[-1] if compactions else None
        old_cut = min(self.cut, keep)
        leaving: list[str] = []
        gone: list[Entry] = []  # the edits that left the path
        if keep < len(path):  # (nearly every move only adds to the path)
            for entry_id in path[keep:]:
                off = entries[entry_id]
                if off.visible:
                    off.visible = False
                    leaving.append(entry_id)
                off.position = -1
                if off.target is not None:
                    gone.append(off)
            del path[keep:]
            while compactions and compactions[-1] >= keep:
                compactions.pop()
        for entry in reversed(tail):
            entry.position = len(path)
            if entry.kind == "compaction":
                compactions.append(len(path))
            path.append(entry.id)
        active = compactions[-1] if compactions else None
        self.cut = self._cut(active)
        # Only these positions can have changed: the new tail, the span between the
        # old and the new cut, and the compactions whose summary came or went.
        positions: Iterable[int] = range(keep, len(path))
        if old_cut != self.cut or old_active != active:
            # Otherwise (nearly every move: no compaction came or went) the tail alone:
            # the one before the tail that could change is the active compaction,
            # which stays in the context as it was.
            candidates = set(positions)
            candidates.update(range(min(old_cut, self.cut), max(old_cut, self.cut)))
            candidates.update(p for p in (old_active, active) if p is not None and p < len(path))
            positions = sorted(candidates)
        if self.edited:  # an edited entry and its edits change together
            positions = self._with_edits(positions, gone)
        entering = []
        cut = self.cut
        for position in positions:
            entry_id = path[position]
            entry = entries[entry_id]
            wanted = _wanted(entry, position, active, cut, entries)
            if wanted and not entry.visible:
                entry.visible = True
                entering.append(entry_id)
            elif not wanted and entry.visible:
                entry.visible = False
                leaving.append(entry_id)
        return leaving, entering

    def _with_edits(self, positions: Iterable[int], gone: list[Entry]) -> list[int]:
        """`positions`, with those of every entry edited by or editing an entry at one of
        them, or edited by an edit that left the path."""
        entries, path = self.entries, self.path
        found = set(positions)
        for entry in [*(entries[path[p]] for p in found), *gone]:
            edited = entries[entry.target] if entry.target is not None else entry
            for member in (edited.id, *(edited.edits or ())):
                if (at := entries[member].position) >= 0:
                    found.add(at)
        return sorted(found)

    def _cut(self, active: int | None) -> int:
        if active is None:
            return 0
        first = self.entries[self.path[active]].first_kept
        kept = self.entries.get(first) if first is not None else None
        at = kept.position if kept is not None else -1
        return at if 0 <= at < active else active


def _wanted(
    entry: Entry, position: int, active: int | None, cut: int, entries: dict[str, Entry]
) -> bool:
    """Whether the model sees `entry`, at `position` on the path, when the active
    compaction is at `active` and the entries before `cut` were compacted away. An entry
    edited in the context is seen as its latest edit there has it (buildSessionProjection:
    the edits among the context's entries, the last of each target's in force)."""
    if not entry.parts:
        return False
    if entry.kind == "compaction":
        return position == active  # only the latest compaction's summary is sent
    if position < cut:
        return False
    if entry.target is not None:  # an edit's replacement, while it is in force
        edited = entries.get(entry.target)
        return (
            edited is not None
            and edited.position >= cut
            and _in_force(edited, cut, entries) is entry
        )
    return not entry.edits or _in_force(entry, cut, entries) is None


def _in_force(edited: Entry, cut: int, entries: dict[str, Entry]) -> Entry | None:
    """The last edit of `edited` in the context (on the path, not compacted away)."""
    for edit_id in reversed(edited.edits or ()):
        edit = entries[edit_id]
        if edit.position >= cut:
            return edit
    return None
