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
from fnmatch import fnmatchcase
from pathlib import Path


def matching(root: Path, pattern: str, depth: int | None = None) -> list[Path]:
    """The entries whose names match `pattern` (case-sensitive, `*` matching a leading dot
    too, as `Path.glob`), `depth` folders below `root` (`root.glob("*/" * depth +
    pattern)`) or, with `depth` None, at any depth (`root.rglob(pattern)`), each folder's
    entries in name order. As those walks do, a depth-limited walk follows symlinked folders and
    a walk at any depth does not (a symlink loop cannot hang it), and a match may be a
    folder or anything else: the callers keep the files."""
    found: list[Path] = []
    _walk(root, pattern, depth, found)
    return found


def _walk(folder: Path, pattern: str, depth: int | None, found: list[Path]) -> None:
    try:
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError:
        return  # gone since its parent was listed, or it cannot be opened: skipped
    deeper = None if depth is None else depth - 1
    for entry in entries:
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
        if into:
            _walk(path, pattern, deeper, found)
