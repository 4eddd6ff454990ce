"""The same journal given twice (a `.jsonl` beside its `.jsonl.gz` or `.jsonl.zst`, a copy
in another folder, an export and its gzip): read once, as `collect` does
(dataset/collect.py), not shown and counted twice as `<id>#2`.

Two files are one journal when their decompressed bytes are equal. Hashing every input
would read each one twice; so files are compared by their decompressed size first (a
plain file's size, a gzip's own record of it: the last 4 bytes; a zstd file's is counted,
as Codex records none, at the cost of decompressing it once more), then, among files of one
size, by a hash of their first 64 KiB, and only files alike that far are hashed whole. A
folder of 300 synthetic sessions with 262 files sharing a size costs 262 reads of 64 KiB;
a real copy costs one more read of itself (and spares its whole reading as a session).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Iterable
from itertools import pairwise
from pathlib import Path

from agent_profiler.digest import blake2b
from agent_profiler.errors import JournalError
from agent_profiler.jsonl import open_journal

HEAD_BYTES = 1 << 16
_CHUNK = 1 << 20
# A database is read with its write-ahead log or rollback journal beside it: compared only
# without one. An OpenCode storage folder's session file is read with the message files
# under its root: never compared.
_DB_MEMBERS = ("-wal", "-journal")
# OpenCode's storage folder (`storage/session/<project>/<id>.json`, its messages and parts):
# its files are read together, by the session's.
_STORAGE = frozenset({"session", "message", "part", "project", "session_diff", "todo"})


def distinct(files: Iterable[Path]) -> tuple[list[Path], list[tuple[Path, Path]]]:
    """The files without those whose decompressed bytes equal an earlier one's, in their
    order; and (repeat, the earlier file it repeats) for each left out."""
    files = list(files)
    repeats: dict[int, int] = {}  # index of a repeat → index of the file it repeats
    folders: dict[Path, list[str]] = {}  # a folder → its folders' names (`_has_companion`)
    # An empty file is left to the reader, which says it is empty.
    for sized in _alike(files, range(len(files)), lambda path: _content_size(path) or None):
        for alike in _alike(files, sized, lambda path: _digest(path, HEAD_BYTES)):
            for same in _alike(files, alike, lambda path: _digest(path, None)):
                # The copy read is the first with its subagents' folder beside it, else the
                # first: the other copies' folders are not looked at.
                keep = next((i for i in same if _has_companion(files[i], folders)), same[0])
                repeats.update((i, keep) for i in same)
    kept = [p for i, p in enumerate(files) if repeats.get(i, i) == i]
    return kept, [(files[i], files[j]) for i, j in sorted(repeats.items()) if i != j]


def _alike(
    files: list[Path], indices: Iterable[int], key: Callable[[Path], object | None]
) -> list[list[int]]:
    """The indices grouped by `key` of their file, in order: only groups of two or more,
    and never a file whose key is None (not compared)."""
    groups: dict[object, list[int]] = {}
    for index in indices:
        value = key(files[index])
        if value is not None:
            groups.setdefault(value, []).append(index)
    return [group for group in groups.values() if len(group) > 1]


def _has_companion(path: Path, folders: dict[Path, list[str]]) -> bool:
    """A folder beside the file that its harness reads with it: Claude Code's `<session>/`
    (its subagents), Gemini CLI's `<session id>/` (named by the id the file name ends with).
    `folders`: the folders in each folder looked at so far (thousands of copies in one
    folder each listed it and looked at every entry: copies × entries)."""
    stem = path.name
    for suffix in (".gz", ".jsonl", ".json"):
        stem = stem.removesuffix(suffix)
    token = stem.rsplit("-", 1)[-1]
    names = folders.get(path.parent)
    if names is None:
        names = folders[path.parent] = _folders_in(path.parent)
    return any(name == stem or name.startswith(token) for name in names)


def _folders_in(folder: Path) -> list[str]:
    """The names of the folders in `folder` (a symlink to one too), in listing order, up to
    an entry that cannot be looked at (none when it cannot be listed)."""
    names: list[str] = []
    try:
        for entry in folder.iterdir():
            if entry.is_dir():
                names.append(entry.name)
    except OSError:
        pass
    return names


def _content_size(path: Path) -> int | None:
    """The size of the file's decompressed bytes modulo 2³² (what gzip records), or None
    for a file not compared (a database, a storage member, one that cannot be opened)."""
    name = path.name
    parts = path.parts
    if any(a == "storage" and b in _STORAGE for a, b in pairwise(parts)):
        return None
    if name.endswith(".db") and any(os.path.exists(f"{path}{member}") for member in _DB_MEMBERS):
        return None
    if name.endswith(".zst"):
        return _counted_size(path)
    try:
        if not name.endswith(".gz"):
            return os.stat(path).st_size % (1 << 32)
        with open(path, "rb") as stream:
            stream.seek(-4, os.SEEK_END)
            return int.from_bytes(stream.read(4), "little")
    except OSError:  # unreadable, or a gzip shorter than its trailer: read, not compared
        return None


def _counted_size(path: Path) -> int | None:
    """The decompressed size of a file that records none, modulo 2³² (as gzip's); None
    when it cannot be read to its end (it is then read, and its damage said, as usual)."""
    size = 0
    try:
        with open_journal(path) as stream:
            while chunk := stream.read(_CHUNK):
                size += len(chunk)
    except (OSError, JournalError):
        return None
    return size % (1 << 32)


def _digest(path: Path, limit: int | None) -> bytes | None:
    """BLAKE2b of the first `limit` decompressed bytes (None: all of them); None when the
    file cannot be read to that point (it is then read, and its damage said, as usual)."""
    digest = blake2b(digest_size=16)
    try:
        with open_journal(path) as stream:
            left = limit
            while left is None or left > 0:
                chunk = stream.read(_CHUNK if left is None else min(left, _CHUNK))
                if not chunk:
                    break
                digest.update(chunk)
                if left is not None:
                    left -= len(chunk)
    except (OSError, EOFError, zlib.error, JournalError):
        return None
    return digest.digest()
