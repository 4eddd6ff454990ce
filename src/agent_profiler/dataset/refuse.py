"""A journal a collect cannot use (collect.py): a new or changed file that is not a journal
or cannot be read is left out of the manifest (`Refuse`), and a journal collected before
that is unusable or damaged now keeps its session's rows (`Refuse.keep`): the dataset is
an archive, and a journal that became garbage (a sync conflict, a bad disk) or was cut
short did worse than one deleted, whose rows are kept (review-bad finding 20). A journal
its group's reading could not read (gone or unreadable when read: `unread`) is refused
too, so that the next collect reads it (review-motion finding 3)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_profiler.errors import JournalError
from agent_profiler.records import record

from .changes import unopenable
from .locate import said

if TYPE_CHECKING:
    from agent_profiler.diagnostics import Diagnostics

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
    # Journals found beside those given that changed (beside.py): as a changed journal,
    # one that stops at damage now keeps its group's rows collected before.
    beside: set[str] = field(default_factory=set)
    notice: Callable[[str], None] | None = None
    # The journals of the old groups read again that are not found now (not given, nor
    # beside those given, nor taken by a plan), by group, with the journal given that
    # names them: out of the manifest once their group is read again (`settle`), kept with
    # it when it is kept (`keep`), and said then. (Said before the group's fate was known,
    # "its session is read again without it, its rows dropped" came before the closing
    # line's "its rows collected before are kept", which they were.)
    lost: dict[str, tuple[str, list[str]]] = field(default_factory=dict)

    def __call__(self, key: str, why: JournalError | None, *, own: bool = True) -> None:
        """Refuse `key` (`why`: its error, said already); `own` False: a journal not read
        for its group's reading failed whole on another (a subagent of a session whose
        file is gone): not collected either, and counted apart (`withheld`), for no error
        names it. An unchanged journal keeps its entry and its group: when that group is
        dropped, its id is looked up nowhere; when it is kept, its rows are the journal's
        (its group was emptied, and the journal "unchanged (not read)" from then on)."""
        result = self.result
        if own:
            self.copies_refused(key, why)
        else:
            for _ in self.copies.pop(key, []):
                result.copies -= 1
                result.withheld += 1
        if key not in self.fresh:
            return
        if self.entries.pop(key, None) is None:
            return
        result.journals -= 1
        if own:
            result.refused += 1
        else:
            result.withheld += 1
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
            if (lost := self.lost.pop(group_id, None)) is not None:
                # As collected, as every journal no longer found is (counted `missing`).
                self._say(*lost, "kept, with its session's rows collected before")
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

    def settle(self) -> None:
        """The journals lost of the groups read again (none kept): left out of the manifest
        (found again, each is new), no longer counted as collected and kept, and said."""
        for anchor, gone in self.lost.values():
            for key in gone:
                self.result.missing -= self.entries.pop(key, None) is not None
            them = "them, their" if len(gone) > 1 else "it, its"
            self._say(anchor, gone, f"its session is read again without {them} rows dropped")
        self.lost.clear()

    def _say(self, anchor: str, gone: list[str], what: str) -> None:
        if self.notice is not None:
            self.notice(f"{anchor}: {said(len(gone))} of its session collected before not "
                        f"found now (not given, nor beside it): {what}")  # fmt: skip

    def spoilt(
        self, members: list[str], carried: dict[str, Any], broken: bool, failed: Iterable[str]
    ) -> dict[str, Any]:
        """The old groups a reading covers (not `carried` already), kept as they were when
        the reading is of a changed journal collected before and could not use it or
        stopped at damage (`broken`: a cut `.gz`, a read error), or could not read a
        journal collected before (`failed`: gone or unreadable when read); none otherwise
        (a journal damaged already when it was collected is read as it is)."""
        old = self.old
        changed = [k for k in members if k in self.fresh | self.beside and k in old["files"]]
        changed = [k for k in changed if k not in self.reread]  # the same bytes as collected
        if not (changed and broken) and all(k not in old["files"] for k in failed):
            return {}
        covered = {
            group_id: entry
            for group_id, entry in old["groups"].items()
            if group_id not in carried and not set(entry["files"]).isdisjoint(members)
        }
        if covered:
            self.keep(covered, members)
        return covered


def unread(outcome: Any, paths: tuple[Path, ...], members: list[str],
           entries: dict[str, dict[str, Any]]) -> dict[str, JournalError]:  # fmt: skip
    """The journals of a group read (`paths`, their keys `members`) that its reading could
    not read, by key, each with its error: its failures (a file given that the adapter could
    not read beside the others: `Diagnostics.failed`), those an `unreadable` warning names
    (a file found beside those given, gone or not permitted when read: the adapters warn
    and read on) and, when the reading holds no session, those that changed while they were
    read (cut to nothing, replaced): they were sessions when planned. Entered as collected,
    such a journal was never read again (review-motion finding 3): "unchanged" once
    readable, its `.zst` "a copy"."""
    diagnostics = outcome.diagnostics
    named = {w.path: w for w in diagnostics.warnings if w.kind == "unreadable"}
    failed = {
        key: JournalError(str(path), named[str(path)].message, named[str(path)].line)
        for path, key in zip(paths, members, strict=True)
        if str(path) in named
    }
    if diagnostics.warning_counts["unreadable"] > len(named):
        # Some not listed (a group's first warnings only are): each journal that cannot be
        # opened now is taken for one; if none, every journal, to be read again.
        for path, key in zip(paths, members, strict=True):
            try:
                os.close(os.open(path, os.O_RDONLY))
            except OSError as error:
                failed.setdefault(key, unopenable(path, error))
        if len(named) == len(failed):
            why = (
                "a journal of its session could not be read (an `unreadable` warning): not "
                "collected (the next collect reads it again)"
            )
            every = {k: JournalError(str(p), why) for p, k in zip(paths, members, strict=True)}
            failed = every | failed
    own = {failure.path: failure for failure in outcome.failures}
    failed |= {key: own[str(p)] for p, key in zip(paths, members, strict=True) if str(p) in own}
    if outcome.paths and not outcome.value["sessions"]:
        for path, key in zip(paths, members, strict=True):
            entry = entries.get(key)
            if entry is None or key in failed:
                continue
            try:
                stat = os.stat(path)
            except OSError as error:
                failed[key] = unopenable(path, error)
                continue
            if (stat.st_size, stat.st_mtime_ns) != (entry["size"], entry["mtime_ns"]):
                failed[key] = JournalError(str(path), MOVED)
    return failed


MOVED = (
    "changed while it was read, and held no session then: not collected (the next collect "
    "reads it again)"
)


def forget(diagnostics: Diagnostics, failed: Iterable[JournalError]) -> None:
    """The warnings about the files `failed` names, now each said on its own `error:` line:
    that it could not be read (`unreadable`), and that it held nothing (`no-session`)."""
    paths = {error.path for error in failed}
    kept = [w for w in diagnostics.warnings if not (w.kind in FORGOTTEN and w.path in paths)]
    for warning in diagnostics.warnings:
        if warning.kind in FORGOTTEN and warning.path in paths:
            diagnostics.warning_counts[warning.kind] -= 1
            if diagnostics.warning_counts[warning.kind] <= 0:
                del diagnostics.warning_counts[warning.kind]
    diagnostics.warnings = kept


FORGOTTEN = ("unreadable", "no-session")
