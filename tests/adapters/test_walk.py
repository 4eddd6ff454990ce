"""`adapters.walk.matching` finds what `Path.glob` / `Path.rglob` find (the walks it
replaced in the adapters' `locate` and in Claude Code's plan), on a tree with hidden
names, folders that match, a symlinked folder, a symlink loop and a symlink to itself, and
opens no folder below the depth asked; what it adds, passing over a folder that vanishes,
is tested with `discover` (tests/cli/test_discover_vanishing)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters.walk import matching


def _tree(root: Path) -> None:
    for name in (
        "a/x.jsonl",
        "a/.hidden.jsonl",
        "a/b/y.jsonl",
        "a/b/c/z.jsonl.gz",
        ".dot/w.jsonl",
        "top.jsonl",
        "other/readme.md",
    ):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("{}\n")
    (root / "a" / "folder.jsonl").mkdir()  # a folder with a journal's name
    (root / "linked").symlink_to(root / "a", target_is_directory=True)
    (root / "a" / "b" / "loop").symlink_to(root / "a", target_is_directory=True)
    # A symlink to itself, listed before the folders: asked whether it is a folder, it
    # raises (ELOOP), and the walk goes on to the entries after it.
    (root / "0-self").symlink_to(root / "0-self")


@pytest.mark.parametrize("pattern", ["*.jsonl", "*.jsonl*", "y.jsonl", "*"])
def test_matching_finds_what_glob_and_rglob_find(tmp_path: Path, pattern: str) -> None:
    _tree(tmp_path)
    assert sorted(matching(tmp_path, pattern)) == sorted(tmp_path.rglob(pattern))
    for depth in (0, 1, 2):
        glob = "*/" * depth + pattern
        assert sorted(matching(tmp_path, pattern, depth)) == sorted(tmp_path.glob(glob)), glob


def test_a_root_that_is_no_folder_has_nothing(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    assert matching(tmp_path / "missing", "*") == []
    assert matching(tmp_path / "file", "*", 0) == []


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_a_walk_to_a_depth_opens_no_folder_below_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, depth: int
) -> None:
    """`root.glob("*/" * depth + pattern)` lists the folders down to `depth` only: a walk
    that went on below (finding nothing more there) would read the whole of a harness's
    tree, every session's subagent folders, for a one-level pattern."""
    _tree(tmp_path)
    opened: list[Path] = []
    real = os.scandir

    def scandir(path: Any) -> Any:
        opened.append(Path(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    matching(tmp_path, "*.jsonl", depth)
    assert opened and all(len(p.relative_to(tmp_path).parts) <= depth for p in opened)
