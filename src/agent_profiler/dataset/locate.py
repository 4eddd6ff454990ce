"""Where the journals of an old group that a collect reads again are, when they are not
given to it (collect.py): `collect FILE` of a subagent, or of a parent that grew, reads
its group again whole, not as the files given alone (review-diff finding 1: the parent's
whole session was dropped, or its subagents).

The manifest keeps no path, only each journal's key (a hash of its resolved path), so a
journal is found by the keys of the files beside the journals given: in their folder and
the two above it (a Claude Code session's `<id>/subagents/agent-….jsonl` is two folders
below its `<id>.jsonl`, a Gemini CLI subagent's `chats/<id>/….json` one below its
session's file, Claude Code's legacy `agent-*.jsonl` beside it). A plan of the group's
main journal takes the rest from its folder, as the first collect's did."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

UP = 3  # the folders looked in: each given journal's, and the two above it


def locate(
    wanted: set[str], anchors: Iterable[Path], key_of: Callable[[Path], str]
) -> dict[str, Path]:
    """The files, by key, among `wanted` found in the folders of `anchors` (the journals
    given that belong to the groups read again) and the folders above them."""
    found: dict[str, Path] = {}
    if not wanted:
        return found
    seen: set[Path] = set()
    for anchor in anchors:
        folder = anchor.parent.resolve()
        for place in [folder, *folder.parents][:UP]:
            if place in seen:
                continue
            seen.add(place)
            try:
                entries = list(os.scandir(place))
            except OSError:
                continue
            for entry in entries:
                try:
                    if not entry.is_file():
                        continue
                except OSError:
                    continue
                path = Path(entry.path)
                key = key_of(path)
                if key in wanted:
                    found.setdefault(key, path)
            if wanted <= found.keys():
                return found
    return found


def whole(
    groups: dict[str, dict[str, Any]],
    stale: dict[str, set[str]],
    files: dict[str, Path],
    key_of: Callable[[Path], str],
) -> tuple[dict[str, Path], dict[str, tuple[str, list[str]]]]:
    """The journals of the old groups read again (`stale`: each with the keys of the
    journals given that made it so) that are not given, found beside those given; and,
    by group, those not found (no longer there), with the first journal given of the
    group (that names them)."""
    lost: dict[str, tuple[str, list[str]]] = {}
    found: dict[str, Path] = {}
    for group_id, triggers in stale.items():
        members: list[str] = groups[group_id]["files"]
        wanted = {k for k in members if k not in files and k not in found}
        if not wanted:
            continue
        anchors = [files[k] for k in (*triggers, *members) if k in files]
        found |= locate(wanted, anchors, key_of)
        if gone := sorted(wanted - found.keys()):
            lost[group_id] = (str(anchors[0]) if anchors else group_id, gone)
    return found, lost


def said(count: int) -> str:
    return f"{count:,} journal" + ("" if count == 1 else "s")
