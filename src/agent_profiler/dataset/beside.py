"""The journals a plan finds beside those given (collect.py): a Claude Code subagent's file
beside its session's given alone, a Codex child rollout in its parent's date folder or the
next day's. A group reads them, so the manifest keeps them as it keeps the journals given
(`note`, then collect.py enters those of each group it keeps): the same key, size, mtime and
hash of its bytes, so that a `touch` is no change, a copy of one is a copy, and one given
later is "unchanged". Those a group could not read (unreadable when read, or when hashed)
have no entry; the group's `unread` lists them (its journals without one).

A later collect given a group's journals, unchanged, plans them again when the group holds a
journal not given that the manifest keeps or lists as unread (`look`), and reads the group
again when one its plan finds beside them changed, is new to it, or was not read last time:
a Codex child keeps writing while its parent waits, and its rows were those first read. A
group of a manifest from before (its journals found beside have no entry, and it lists none
as unread) is not planned again: it is read again when a journal given changes, and kept
from then on."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import field
from pathlib import Path
from typing import Any

from agent_profiler.adapters import JournalGroup
from agent_profiler.errors import JournalError
from agent_profiler.model import Harness
from agent_profiler.records import record

from .changes import content_hash, unopenable

UNREAD = "unread"  # a group's journals that have no entry: not read, to be read again


@record
class Beside:
    """What a collect knows of the journals found beside those given: `given`, the keys of
    the journals given; `entries`, the manifest's journals as this collect has them; by
    key, the entries of the journals found beside noted before their group was read
    (`noted`); and, found by `look`: those in their place (`found`), those that make their
    group read again, by group, and how many of them changed, are new or were not read;
    and those not read last time that still cannot be opened (`failures`: said again, as a
    file given that cannot be used is at every collect, without reading their group)."""

    given: set[str]
    entries: dict[str, dict[str, Any]]
    key_of: Callable[[Path], str]
    noted: dict[str, dict[str, Any]]
    found: dict[str, Path]
    groups: dict[str, set[str]]
    changed: set[str]
    failures: list[JournalError] = field(default_factory=list)
    new: int = 0
    unread: int = 0
    read_again: int = 0  # journals given, unchanged, read again with those found beside

    def note(self, groups: Iterable[JournalGroup]) -> None:
        """The entry of each journal of `groups` not given, as its bytes are before it is
        read (bytes added while it is read are read again next time, never lost): its hash
        is the one kept when its size and mtime are; none when it cannot be looked at."""
        for path in (p for group in groups for p in group.paths):
            key = self.key_of(path)
            if key in self.given:
                continue
            known = self.entries.get(key, {})
            try:
                stat = os.stat(path)
                same = (known.get("size"), known.get("mtime_ns")) == (
                    stat.st_size,
                    stat.st_mtime_ns,
                )
                digest = known["hash"] if same and "hash" in known else content_hash(path)
            except OSError:
                self.noted.pop(key, None)
                continue
            self.noted[key] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "hash": digest}

    def enter(self, members: list[str], group_id: str, failed: Iterable[str]) -> list[str]:
        """The entries of a group kept, for its journals not given: each as noted before
        the group was read; one `failed` (not read) or not noted has none. Its journals
        without an entry (to list as UNREAD)."""
        not_read = set(failed)
        for key in members:
            if key in self.given:
                continue
            if key in self.noted and key not in not_read:
                self.entries[key] = self.noted[key] | {"group": group_id}
            else:
                self.entries.pop(key, None)
        return sorted(k for k in members if k not in self.entries)

    def said(self) -> str:
        """Why they were read again: `1 journal found beside them changed`."""
        parts = [(len(self.changed), "changed"), (self.new, "new"),
                 (self.unread, "not read last time")]  # fmt: skip
        parts = [(n, why) for n, why in parts if n]
        total = sum(n for n, _ in parts)
        head = f"{total:,} journal{'' if total == 1 else 's'} found beside them"
        if len(parts) == 1:
            return f"{head} {parts[0][1]}"
        return f"{head}: " + ", ".join(f"{n:,} {why}" for n, why in parts)


def _refused(path: Path) -> JournalError | None:
    """What its read would say again of a journal found beside that a read refused last
    time, told from its head (it cannot be opened, UTF-16, not JSONL at all, a stream too
    damaged to give a head: `jsonl.read_jsonl` refuses those before its first record,
    an unopenable one as `changes.unopenable` says it), or None when its head reads now:
    then its group is read again."""
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.jsonl import read_jsonl

    records = read_jsonl(path, Diagnostics())
    try:
        next(records, None)
    except JournalError as error:
        return error
    finally:
        records.close()
    return None


def look(
    old: dict[str, Any],
    files: dict[str, Path],
    stale: dict[str, set[str]],
    beside: Beside,
    harness: Harness | None,
) -> None:
    """The old groups to read again for the journals found beside their journals given
    (`files`), into `beside`: of the groups not read again already (`stale`), those with a
    journal given and one not given that the manifest keeps or lists as unread are
    planned again from their journals given; a journal the plan finds beside them that
    changed (by its hash, as `changes.scan`), is new to the group (not a copy of a journal
    kept), or was not read last time and now opens and gives records makes its group read
    again; one not read last time whose head still refuses it is said again (`failures`),
    its group kept as collected."""
    from agent_profiler.loader import plan

    entries = old["files"]
    looked: dict[str, list[str]] = {}
    for group_id, group in old["groups"].items():
        members, unread = group["files"], set(group.get(UNREAD, ()))
        given = [k for k in members if k in files]
        others = [k for k in members if k not in files and (k in entries or k in unread)]
        if group_id not in stale and given and others:
            looked[group_id] = given
    if not looked:
        return
    held: dict[str, str] | None = None
    groups, _ = plan([files[k] for keys in looked.values() for k in keys], harness)
    for group in groups:
        keys = [beside.key_of(p) for p in group.paths]
        owners = {entries[k].get("group") for k in keys if k in files and k in entries}
        owners = {g for g in owners if g in looked}
        for key, path in zip(keys, group.paths, strict=True):
            if key in files or not owners:
                continue
            beside.found[key] = path
            known = entries.get(key)
            why = None
            try:
                if known is not None:
                    stat = os.stat(path)
                    moved = (known["size"], known["mtime_ns"]) != (stat.st_size, stat.st_mtime_ns)
                    if known.get("stale") or (moved and content_hash(path) != known.get("hash")):
                        why = "changed"
                    elif moved:  # the same bytes: its entry as they are now
                        beside.entries[key] = known | {"size": stat.st_size,
                                                       "mtime_ns": stat.st_mtime_ns}  # fmt: skip
                elif any(key in old["groups"][g].get(UNREAD, ()) for g in owners):
                    refused = _refused(path)
                    if refused is not None:  # it would fail again: said, its group kept
                        beside.failures.append(refused)
                        continue
                    why = "unread"
                elif all(key not in old["groups"][g]["files"] for g in owners):
                    if held is None:
                        held = {e["hash"]: k for k, e in entries.items() if "hash" in e}
                    why = None if content_hash(path) in held else "new"
            except OSError as error:
                if known is None:  # not read last time, nor now
                    beside.failures.append(unopenable(path, error))
                continue  # unusable now: its group keeps the rows collected before
            if why is None:
                continue
            if why == "changed":
                beside.changed.add(key)
            beside.new += why == "new"
            beside.unread += why == "unread"
            for group_id in owners:
                if group_id not in beside.groups:
                    beside.read_again += len(looked[group_id])
                beside.groups.setdefault(group_id, set()).add(key)
