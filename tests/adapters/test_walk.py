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


def test_walk_tree_walks_as_os_walk_does_in_the_same_order(tmp_path: Path) -> None:
    import os

    from agent_profiler.adapters.walk import walk_tree

    _tree(tmp_path)
    (tmp_path / "shut").mkdir()
    errors: list[OSError] = []
    theirs = []
    for root, dirs, names in os.walk(tmp_path, followlinks=False, onerror=errors.append):
        dirs.sort()  # as the loader prunes and orders them, after each folder is given
        theirs.append((root, list(dirs), sorted(names)))
    ours = []
    for root, dirs, names in walk_tree(tmp_path, errors.append):
        dirs.sort()
        ours.append((root, list(dirs), sorted(names)))
    assert ours == theirs
    # a folder that cannot be listed goes to onerror, as os.walk's does
    gone: list[OSError] = []
    assert list(walk_tree(tmp_path / "missing", gone.append)) == []
    assert [e.filename for e in gone] == [str(tmp_path / "missing")]


@pytest.fixture
def deep() -> Any:
    """`deep(root, depth)`: a folder `depth` folders below `root` (one-letter folders: well
    within PATH_MAX), removed level by level once the test ends. Left in place, a later
    pytest run's removal of old temporary folders (`shutil.rmtree`, recursive) met it and
    ended that run in a RecursionError (a fourth bare `pytest`; every `make mutation`)."""
    made: list[Path] = []

    def make(root: Path, depth: int) -> Path:
        folder = root
        folder.mkdir(exist_ok=True)
        made.append(folder)
        for _ in range(depth):  # one mkdir a level: os.makedirs recurses too
            folder = folder / "d"
            folder.mkdir()
            made.append(folder)
        return folder

    yield make
    for folder in reversed(made):  # the deepest first, each emptied of its files
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False):
                continue  # (its own "d", removed already: then the scan found none)
            os.unlink(entry.path)
        if folder != made[0]:
            folder.rmdir()


def test_a_tree_thousands_of_folders_deep_is_walked_without_recursion(
    tmp_path: Path, deep: Any
) -> None:
    from agent_profiler.adapters.walk import walk_tree

    # GIVEN a file 1,500 folders down (Python 3.11's os.walk and a recursive walk: a
    # RecursionError at about a thousand)
    bottom = deep(tmp_path, 1500)
    (bottom / "x.jsonl").write_text("{}\n")
    # WHEN walked both ways THEN the file is found
    assert matching(tmp_path, "*.jsonl") == [bottom / "x.jsonl"]
    files = [os_join(root, n) for root, _, names in walk_tree(tmp_path, print) for n in names]
    assert files == [str(bottom / "x.jsonl")]


def os_join(root: str, name: str) -> str:
    import os

    return os.path.join(root, name)


def test_export_reads_a_journal_1200_folders_down(tmp_path: Path, deep: Any) -> None:
    import shutil

    from typer.testing import CliRunner

    from agent_profiler.cli import app
    from samples import CODEX_SMALL

    # GIVEN a Codex rollout 1,200 folders below the folder given
    bottom = deep(tmp_path / "tree", 1200)
    shutil.copy(CODEX_SMALL, bottom / CODEX_SMALL.name)
    # WHEN the folder is exported THEN the rollout is read (no internal error)
    out = tmp_path / "t.pftrace"
    result = CliRunner().invoke(app, ["export", str(tmp_path / "tree"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "1 session" in result.output + result.stderr
    assert out.stat().st_size > 0


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
