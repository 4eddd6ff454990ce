"""What changed since the dataset's last collect (collect.py): which of the journals given
are new, changed or unchanged, by their manifest entries (size, mtime, the hash of their
bytes), which are copies of a journal collected, which cannot even be looked at (`scan`);
and, once read, which changed journals no longer hold what was collected from them
(`replaced`)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from agent_profiler.errors import JournalError
from agent_profiler.jsonl import open_journal
from agent_profiler.records import record

if TYPE_CHECKING:
    from .collect import CollectResult


def file_key(path: Path, folders: dict[str, str] | None = None) -> str:
    """A journal's key in the manifest: a hash of its path with its folder resolved (no
    path is kept). `folders` caches the folders resolved (one system call per folder,
    not per journal)."""
    folders = {} if folders is None else folders
    folder, name = os.path.split(path)
    parent = folders.get(folder)
    if parent is None:
        parent = folders[folder] = str(Path(folder or ".").resolve())
    return hashlib.blake2b(os.path.join(parent, name).encode(), digest_size=12).hexdigest()


def content_hash(path: Path) -> str:
    """The journal's content: a `.gz` or `.zst` file's is its decompressed bytes, so that
    `x.jsonl` and a compressed copy of it are one journal, not two sessions (a damaged one
    is hashed as it is: it is reported when read)."""
    if path.name.endswith((".gz", ".zst")):
        try:
            return _hash(open_journal(path))
        except (OSError, JournalError):
            pass
    return _hash(path.open("rb"))


def _hash(stream: IO[bytes]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    with stream as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def unopenable(path: Path, error: OSError) -> JournalError:
    """A journal that cannot be stat-ed or hashed (deleted, or compressed by Codex, since
    the folder walk; unreadable): one line, as a read that cannot open it says."""
    from agent_profiler.inputs import os_reason

    return JournalError(str(path), f"cannot open: {os_reason(error)}")


@record
class Changes:
    """The journals a collect reads (`fresh`: new, changed, or read again), those read again
    unchanged (`reread`), the files set aside as copies (a journal's key → files with its
    bytes), and those that could not be looked at (`unusable`, among `fresh`: refused as
    a new or changed file that cannot be used is, and not planned)."""

    fresh: list[str]
    reread: set[str]
    copies: dict[str, list[Path]]
    unusable: dict[str, JournalError]


def scan(
    files: dict[str, Path],
    old: dict[str, Any],
    entries: dict[str, dict[str, Any]],
    result: CollectResult,
    outdated: bool,
) -> Changes:
    """Each journal given against its manifest entry (`old`): counted in `result`, its new
    entry in `entries`. A journal whose size and mtime are those collected is not read (nor
    hashed); one whose bytes hash the same is not read either, unless the dataset's tables
    are `outdated` or it is marked stale."""
    changes = Changes([], set(), {}, {})
    held = {entry["hash"]: key for key, entry in old["files"].items() if "hash" in entry}
    for key, path in files.items():
        known = old["files"].get(key)
        reread_it = outdated or bool(known and known.get("stale"))
        try:
            stat = os.stat(path)
            same = known and (known["size"], known["mtime_ns"]) == (stat.st_size, stat.st_mtime_ns)
            if same and not reread_it:
                result.unchanged += 1
                continue
            digest = known["hash"] if known and same else content_hash(path)
        except OSError as error:
            # Gone since the walk (Codex compressed it, Claude Code's clean-up) or unreadable:
            # refused with the other unusable files (collect.py): not kept, tried next time.
            changes.unusable[key] = unopenable(path, error)
            result.changed += known is not None
            result.new += known is None
            # Until it is refused: an entry no collect takes for the journal's bytes.
            entries[key] = known or {"size": -1, "mtime_ns": -1}
            changes.fresh.append(key)
            continue
        if known and known.get("hash") == digest:
            kept = {k: v for k, v in known.items() if k != "stale"}
            entries[key] = kept | {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
            if reread_it:
                result.reread += 1
                changes.reread.add(key)
                changes.fresh.append(key)
            else:
                result.unchanged += 1
            continue
        if known is None and held.get(digest, key) != key:
            # The same bytes as a journal collected (now or before): one session, not
            # two (`#2`, every figure of its sessions counted twice). Not kept, so it
            # is said again at the next collect.
            changes.copies.setdefault(held[digest], []).append(path)
            result.copies += 1
            result.journals -= 1
            continue
        held.setdefault(digest, key)
        result.changed += known is not None
        result.new += known is None
        entries[key] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "hash": digest}
        changes.fresh.append(key)
    return changes


def replaced(
    old: dict[str, Any],
    entries: dict[str, dict[str, Any]],
    read: list[tuple[str, Path]],
    fresh: set[str],
    read_ids: set[str],
) -> list[str]:
    """What the journals of a group `read` now (key, path) that changed (among `fresh` and
    collected before) no longer hold of what was collected from them: a journal that
    shrank, and the sessions its old group held that no reading of this collect holds now
    (when the old group's journals are all read now: one not found is said apart).
    Their rows are replaced, as every changed journal's: said, for a file rewritten in
    place (a rewind, a backup restored, a name reused) loses them from the archive."""
    from agent_profiler.diagnostics import journal_name, shown_path

    lines: list[str] = []
    said: set[str] = set()
    members = {key for key, _ in read}
    for key, path in read:
        if key not in fresh or key not in old["files"]:
            continue
        before, now = old["files"][key], entries[key]
        losses = []
        if now["size"] < before["size"]:
            losses.append(f"it shrank ({before['size']:,} → {now['size']:,} bytes)")
        group = old["groups"].get(group_id := before.get("group"))
        if group is not None and group_id not in said and members.issuperset(group["files"]):
            said.add(group_id)
            if gone := [journal_name(i) for i in group.get("ids", []) if i not in read_ids]:
                s = "s" if len(gone) > 1 else ""
                losses.append(f"it no longer holds session{s} {', '.join(gone)}")
        if losses:
            lines.append(f"{shown_path(str(path))}: {'; '.join(losses)}: its earlier rows "
                         "were replaced by what it holds now")  # fmt: skip
    return lines
