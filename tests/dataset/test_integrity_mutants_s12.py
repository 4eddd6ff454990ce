"""A damaged dataset (`dataset/integrity.py`): what the twelfth session's mutation sample found
no test reading. A real dataset collected from the hand-made Claude Code session, then
damaged by hand as each docstring says."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_damaged import HINT, _parquet, _run, _shown

from samples import CLAUDE_SMALL

pytest.importorskip("duckdb")


@pytest.fixture
def collected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`ds`, collected in the current folder from a folder `J` holding one session."""
    monkeypatch.chdir(tmp_path)
    Path("J").mkdir()
    shutil.copy(CLAUDE_SMALL, Path("J") / CLAUDE_SMALL.name)
    assert _run("collect", "J", "--to", "ds").exit_code == 0
    return tmp_path


def _manifest(**changed: Any) -> None:
    path = Path("ds/current/manifest.json")
    data = json.loads(path.read_text())
    data.update(changed)
    path.write_text(json.dumps({k: v for k, v in data.items() if v is not None}))


@pytest.mark.parametrize(
    "entry",
    [
        {"size": "12", "mtime_ns": 1},  # a size that is not a number
        {"size": 12, "mtime_ns": "1"},  # nor a time
        "b000001_0.parquet",  # an entry that is not an object
    ],
)
def test_a_manifests_file_entry_needs_a_whole_size_and_time(collected: Path, entry: Any) -> None:
    """The manifest's `files` entry of the session's journal edited: each of its size and its
    modification time must be a number, and the entry an object, or the manifest is named as
    not one, by fleet and by collect (dataset.integrity._shaped__mutmut_27 took an entry with
    either number for one, and failed with an AttributeError, exit 70, on an entry that is
    a string)."""
    data = json.loads(Path("ds/current/manifest.json").read_text())
    (name,) = data["files"]
    _manifest(files={name: entry})
    said = f"error: ds/versions/000001/manifest.json: damaged dataset file (not a manifest); {HINT}"
    for command in (("fleet", "ds"), ("collect", "J", "--to", "ds")):
        result = _run(*command)
        assert result.exit_code == 1
        assert result.stderr.replace("the dataset was not changed; ", "") == said + "\n"


def test_a_parquet_file_that_cannot_be_opened_is_named_with_the_systems_words(
    collected: Path,
) -> None:
    """A dataset from before the manifest listed its files, one of whose Parquet files is a
    symlink to a file since deleted: collect names it and says why it cannot read it
    (dataset.integrity.cut_short__mutmut_26 said `None`)."""
    _manifest(parquet=None)
    gone = _parquet("sessions")
    gone.unlink()
    os.symlink("deleted.parquet", gone)
    result = _run("collect", "J", "--to", "ds")
    assert (result.exit_code, result.stderr) == (
        1,
        f"error: {_shown(gone)}: damaged dataset file (cannot read: No such file or directory); "
        f"the dataset was not changed; {HINT}\n",
    )


@pytest.mark.parametrize(
    "entry",
    [
        {"batch": "1", "files": []},  # a batch that is not a number
        {"batch": 1, "files": "x.jsonl"},  # files that are not a list
    ],
)
def test_a_manifests_group_entry_needs_a_whole_batch_and_a_list_of_files(
    collected: Path, entry: Any
) -> None:
    """The manifest's `groups` entry of the session edited: an object is not enough, its
    batch must be a number and its files a list (dataset.integrity._shaped__mutmut_42, on
    the draw after the footer fix, took any object)."""
    data = json.loads(Path("ds/current/manifest.json").read_text())
    (name,) = data["groups"]
    _manifest(groups={name: entry})
    said = f"error: ds/versions/000001/manifest.json: damaged dataset file (not a manifest); {HINT}"
    result = _run("fleet", "ds")
    assert (result.exit_code, result.stderr) == (1, said + "\n")


def test_a_parquet_file_of_no_rows_is_whole(collected: Path) -> None:
    """DuckDB writes a table of no rows as the magic bytes, its footer and its length: the
    footer is all of the file but its 12 bytes of magic and length. In a dataset from
    before the listing, the sessions' file replaced by such a file of its own columns (as
    DuckDB writes it) is whole: collect goes on (dataset.integrity.cut_short__mutmut_45,
    on the draw after the footer fix, wanted a byte more, and refused the dataset)."""
    import duckdb

    _manifest(parquet=None)
    sessions = _parquet("sessions")
    empty = sessions.with_name("empty.parquet.tmp")
    with duckdb.connect() as connection:
        connection.execute(
            f"COPY (SELECT * FROM read_parquet('{sessions}') WHERE false) "
            f"TO '{empty}' (FORMAT parquet)"
        )
    data = empty.read_bytes()
    assert int.from_bytes(data[-8:-4], "little") == len(data) - 12
    empty.replace(sessions)
    result = _run("collect", "J", "--to", "ds")
    assert result.exit_code == 0, result.stderr
