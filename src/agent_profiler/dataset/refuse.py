"""A journal a collect cannot use (collect.py): a new or changed file that is not a journal
or cannot be read is left out of the manifest (`Refuse`), and a journal collected before
that is unusable or damaged now keeps its session's rows (`Refuse.keep`): the dataset is
an archive, and a journal that became garbage (a sync conflict, a bad disk) or was cut
short did worse than one deleted, whose rows are kept (review-bad finding 20)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_profiler.errors import JournalError
from agent_profiler.records import record

if TYPE_CHECKING:
    from .collect import CollectResult


@record
class Refuse:
    """A new or changed file that cannot be used (not a journal, unreadable) is no journal
    of the dataset: it is not counted as one and not kept in the manifest, so the next
    collect tries it again and says so again (kept, it was "unchanged" from then on and
    never named again). A changed file's old rows go with its group, read again. An
    unchanged file read with it stays, outside any group, as before. Its copies (the same
    bytes, set aside) are as unusable, and said so by name."""

    fresh: set[str]
    entries: dict[str, dict[str, Any]]
    old: dict[str, Any]
    result: CollectResult
    reread: set[str]
    copies: dict[str, list[Path]]
    outdated: bool = False  # the dataset's tables of another revision: every journal read again

    def __call__(self, key: str, why: JournalError | None) -> None:
        result = self.result
        self.copies_refused(key, why)
        if key not in self.fresh:
            if key in self.entries:
                self.entries[key]["group"] = None
            return
        if self.entries.pop(key, None) is None:
            return
        result.journals -= 1
        result.refused += 1
        if key in self.reread:
            result.reread -= 1
        elif key in self.old["files"]:
            result.changed -= 1
        else:
            result.new -= 1

    def copies_refused(self, key: str, why: JournalError | None) -> None:
        """The files with the bytes of `key`, which cannot be used: as unusable as it."""
        result = self.result
        for path in self.copies.pop(key, []):
            result.copies -= 1
            result.refused += 1
            if why is not None:
                result.failures.append(JournalError(str(path), why.message, why.line))

    def keep(self, groups: Iterable[str], members: Iterable[str]) -> set[str]:
        """Keep the old `groups` as they were (their rows, their journals' entries), for
        their journals collected before are unusable or damaged now; `members`: the new
        or changed journals read with them, left for the next collect (a changed one as
        it was collected, a new one out of the manifest). The keys of every journal so
        held back."""
        old, result = self.old, self.result
        held: set[str] = set()
        for group_id in groups:
            result.kept += 1
            held.update(old["groups"][group_id]["files"])
        held.update(members)
        for key in held:
            # Marked to be read again (its tables' columns changed): still, once it reads.
            stale = self.outdated or bool(self.entries.get(key, {}).get("stale"))
            if key in self.fresh:
                self.fresh.discard(key)
                if key in self.reread:
                    result.reread -= 1
                elif key in old["files"]:
                    result.changed -= 1
                else:
                    result.new -= 1
                    result.journals -= 1
            if key in old["files"]:
                self.entries[key] = dict(old["files"][key]) | ({"stale": True} if stale else {})
            else:
                self.entries.pop(key, None)
        return held

    def spoilt(self, outcome: Any, members: list[str], carried: dict[str, Any]) -> dict[str, Any]:
        """The old groups a reading covers (not `carried` already), kept as they were when
        the reading is of a changed journal collected before and could not use it or
        stopped at damage (a cut `.gz`, a read error); none otherwise (a journal damaged
        already when it was collected is read as it is)."""
        old = self.old
        changed = [k for k in members if k in self.fresh and k in old["files"]]
        changed = [k for k in changed if k not in self.reread]  # the same bytes as collected
        if not changed or (outcome.paths and not outcome.diagnostics.damaged):
            return {}
        covered = {
            group_id: entry
            for group_id, entry in old["groups"].items()
            if group_id not in carried and not set(entry["files"]).isdisjoint(members)
        }
        if covered:
            self.keep(covered, members)
        return covered
