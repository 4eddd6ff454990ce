"""The same journal given twice (a `.jsonl` beside its `.jsonl.gz`, a copy in another
folder, an export and its gzip): read once, as `collect` does (dataset/collect.py), not
shown and counted twice as `<id>#2`.

Two files are one journal when their decompressed bytes are equal. Hashing every input
would read each one twice; so files are compared by their decompressed size first (a
plain file's size, a gzip's own record of it: the last 4 bytes), then, among files of one
size, by a hash of their first 64 KiB, and only files alike that far are hashed whole. A
folder of 300 synthetic sessions with 262 files sharing a size costs 262 reads of 64 KiB;
a real copy costs one more read of itself (and spares its whole reading as a session).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable
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


def distinct(files: Iterable[Path]) -> tuple[list[Path], list[tuple[Path, Path]]]:
    """The files without those whose decompressed bytes equal an earlier one's, in their
    order; and (repeat, the earlier file it repeats) for each left out."""
    files = list(files)
    by_size: dict[int, list[int]] = {}
    for index, path in enumerate(files):
        size = _content_size(path)
        if size is not None:
            by_size.setdefault(size, []).append(index)
    repeats: dict[int, int] = {}  # index of a repeat → index of the file it repeats
    for indices in by_size.values():
        if len(indices) < 2:
            continue
        by_head: dict[bytes, list[int]] = {}
        for index in indices:
            head = _digest(files[index], HEAD_BYTES)
            if head is not None:
                by_head.setdefault(head, []).append(index)
        for alike in by_head.values():
            if len(alike) < 2:
                continue
            first: dict[bytes, int] = {}
            for index in alike:
                whole = _digest(files[index], None)
                if whole is None:
                    continue
                repeats[index] = first.setdefault(whole, index)
    kept = [p for i, p in enumerate(files) if repeats.get(i, i) == i]
    return kept, [(files[i], files[j]) for i, j in sorted(repeats.items()) if i != j]


def _content_size(path: Path) -> int | None:
    """The size of the file's decompressed bytes modulo 2³² (what gzip records), or None
    for a file not compared (a database, a storage member, one that cannot be opened)."""
    name = path.name
    if "storage" in path.parts[:-1]:
        # An OpenCode storage folder is one with a `session` folder (adapters/opencode.py's
        # `role`); a journal in any other folder named storage (/mnt/storage/…) is compared.
        at = len(path.parts) - 1 - path.parts[::-1].index("storage")
        if (Path(*path.parts[: at + 1]) / "session").is_dir():
            return None
    if name.endswith(".db") and any(os.path.exists(f"{path}{member}") for member in _DB_MEMBERS):
        return None
    try:
        if not name.endswith(".gz"):
            return os.stat(path).st_size % (1 << 32)
        with open(path, "rb") as stream:
            stream.seek(-4, os.SEEK_END)
            return int.from_bytes(stream.read(4), "little")
    except OSError:  # unreadable, or a gzip shorter than its trailer: read, not compared
        return None


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
