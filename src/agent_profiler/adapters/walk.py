"""Folder walks of the adapters (`locate`, and the files a plan finds beside those given)
that a folder vanishing in the middle of cannot end.

A harness's folders change while they are walked: Codex compresses and moves rollouts, a
user or a clean-up removes a day's or a session's folder. Python 3.11's `Path.glob` and
`Path.rglob` let only a `PermissionError` pass: a folder listed in its parent and gone
when it was opened raised `FileNotFoundError`, and `discover` (or an export's plan) ended
in an internal error. Here a folder that cannot be listed, for any reason, is skipped:
`discover` lists, it does not diagnose, and a plan names the files it reads, not those
it could not find."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from fnmatch import fnmatchcase
from pathlib import Path


def matching(root: Path, pattern: str, depth: int | None = None) -> list[Path]:
    """The entries whose names match `pattern` (case-sensitive, `*` matching a leading dot
    too, as `Path.glob`), `depth` folders below `root` (`root.glob("*/" * depth +
    pattern)`) or, with `depth` None, at any depth (`root.rglob(pattern)`), each folder's
    entries in name order. As those walks do, a depth-limited walk follows symlinked folders and
    a walk at any depth does not (a symlink loop cannot hang it), and a match may be a
    folder or anything else: the callers keep the files. A stack, not recursion: a tree
    thousands of folders deep is walked as any other."""
    found: list[Path] = []
    entries = _listing(root)
    if entries is None:
        return found
    stack = [(iter(entries), root, depth)]
    while stack:
        pending, folder, depth = stack[-1]
        entry = next(pending, None)
        if entry is None:
            stack.pop()
            continue
        path = folder / entry.name
        if depth is None or depth == 0:
            if fnmatchcase(entry.name, pattern):
                found.append(path)
            if depth == 0:
                continue
        try:
            into = entry.is_dir(follow_symlinks=depth is not None)
        except OSError:
            continue
        if into and (inner := _listing(path)) is not None:
            stack.append((iter(inner), path, None if depth is None else depth - 1))
    return found


def _listing(folder: Path) -> list[os.DirEntry[str]] | None:
    """A folder's entries in name order; None when it cannot be listed (gone since its
    parent was listed, or it cannot be opened: skipped)."""
    try:
        with os.scandir(folder) as listing:
            return sorted(listing, key=lambda entry: entry.name)
    except OSError:
        return None


def walk_tree(
    top: str | Path, onerror: Callable[[OSError], object]
) -> Iterator[tuple[str, list[str], list[str]]]:
    """`os.walk(top, followlinks=False, onerror=onerror)`, top-down, in the same order (a
    folder, then each of its `dirs` as the caller left them, depth first), with a stack:
    Python 3.11's os.walk recurses once per level, so a tree about a thousand folders deep
    ended in a RecursionError."""
    stack = [os.fspath(top)]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as error:
            onerror(error)
            continue
        dirs: list[str] = []
        names: list[str] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirs if is_dir else names).append(entry.name)
        yield folder, dirs, names
        for name in reversed(dirs):
            inner = os.path.join(folder, name)
            if not os.path.islink(inner):
                stack.append(inner)
