"""A manifest of the wrong types, or naming a file outside its version, and a `current`
that links into another dataset (review-bad findings 23 and 24): one line naming it,
exit 1; never `internal error`, never a file outside the dataset read or removed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from dsfiles import HINT, NOT_CHANGED, collected, edit_manifest, journals, run, sessions, tree

pytest.importorskip("duckdb")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    journals(tmp_path)
    return tmp_path


MANIFESTS = {
    "sizes as strings": lambda d: d.update(parquet={k: "x" for k in d["parquet"]}),
    "a group's sessions a string": lambda d: next(iter(d["groups"].values())).update(sessions="x"),
    "a journal's hash a number": lambda d: next(iter(d["files"].values())).update(hash=5),
    "a group's files not names": lambda d: next(iter(d["groups"].values())).update(files=[1]),
    "a group's unread not names": lambda d: next(iter(d["groups"].values())).update(unread=[1]),
    "an absolute path": lambda d: d["parquet"].update({"/etc/passwd": 5}),
    "a path out of the version": lambda d: d["parquet"].update({"../../../etc/x.parquet": 5}),
    "a path that is no Parquet file": lambda d: d["parquet"].update({"sessions/x.txt": 5}),
    "a negative size": lambda d: d["parquet"].update({"sessions/a/b.parquet": -1}),
    "a hash that is no string": lambda d: d["parquet"].update({"sessions/a/b.parquet": [5, 5]}),
}


@pytest.mark.parametrize("case", MANIFESTS)
def test_a_manifest_of_the_wrong_types_is_not_a_manifest(here: Path, case: str) -> None:
    """Sizes as strings were `ValueError: Cannot specify ',' with 's'` (exit 70), a
    group's `sessions` a string a TypeError in collect, and a listed `/etc/passwd` was
    stat-ed and called a damaged dataset file."""
    collected("J")
    edit_manifest(MANIFESTS[case])
    said = "error: ds/versions/000001/manifest.json: damaged dataset file (not a manifest)"
    fleet = run("fleet", "ds")
    assert (fleet.exit_code, fleet.stderr) == (1, f"{said}; {HINT}\n")
    collect = run("collect", "more", "--to", "ds")
    assert (collect.exit_code, collect.stderr) == (1, f"{said}; {NOT_CHANGED}\n")


@pytest.mark.parametrize("relative", [False, True])
def test_a_current_link_into_another_dataset_is_refused(here: Path, relative: bool) -> None:
    """`collect` deleted the other dataset's version (as its own previous one), and
    `fleet` reported the other's figures as this one's."""
    collected("J", "one")
    collected("more", "two")
    theirs = tree(here / "two")
    (here / "one" / "current").unlink()
    target = "../two/versions/000001" if relative else str(here / "two" / "versions" / "000001")
    (here / "one" / "current").symlink_to(target)
    mine = tree(here / "one")
    said = "error: one/current: damaged dataset file (not a link to a version of this dataset"
    fleet = run("fleet", "one")
    assert fleet.exit_code == 1 and fleet.stderr.startswith(said), fleet.output
    collect = run("collect", "J", "--to", "one")
    assert collect.exit_code == 1 and collect.stderr.startswith(said), collect.output
    assert collect.stderr.endswith(f"; {NOT_CHANGED}\n")
    assert (tree(here / "one"), tree(here / "two")) == (mine, theirs)
    assert sessions("two") == 1


def test_a_current_that_is_a_folder_is_refused(here: Path) -> None:
    collected("J")
    (here / "ds" / "current").unlink()
    shutil.copytree(here / "ds" / "versions" / "000001", here / "ds" / "current")
    fleet = run("fleet", "ds")
    assert fleet.exit_code == 1
    assert fleet.stderr.startswith("error: ds/current: damaged dataset file (not a link to ")


def test_a_versions_folder_that_links_into_another_dataset_is_refused(here: Path) -> None:
    """Its `current` into it then looked like its own version, and collect removed the
    other dataset's versions as its own leftovers."""
    collected("J", "one")
    collected("more", "two")
    theirs = tree(here / "two")
    shutil.rmtree(here / "one" / "versions")
    (here / "one" / "versions").symlink_to(here / "two" / "versions")
    said = "error: one/versions: damaged dataset file (a link, not this dataset's own folder"
    for command in (("fleet", "one"), ("collect", "J", "--to", "one")):
        result = run(*command)
        assert result.exit_code == 1 and result.stderr.startswith(said), result.output
    assert tree(here / "two") == theirs
    assert sessions("two") == 1
