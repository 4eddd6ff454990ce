"""A dataset that cannot be written (a full disk) or read (a file cut short, deleted, a
manifest that is not one): one `error:` line naming the folder or the file, exit 1, and
nothing of the failed collect left behind. A full disk was exit 70 with the version being
built and its staging rows left in `versions/`; a Parquet file cut short was DuckDB's
"No magic bytes found" and a SQL excerpt (exit 70); a deleted one, figures silently short
of its rows; a manifest that is not JSON, `internal error: JSONDecodeError`."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.dataset import collect as collecting
from agent_profiler.diagnostics import shown_path
from samples import CLAUDE_SMALL, CODEX_SMALL

duckdb = pytest.importorskip("duckdb")
runner = CliRunner()
HINT = "collect into a new folder to make the dataset again from its journals"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current folder: a journal folder `J` (one Claude Code session), and `more` (a
    Codex rollout): the messages name the dataset as given, `ds`."""
    monkeypatch.chdir(tmp_path)
    for name, source in (("J", CLAUDE_SMALL), ("more", CODEX_SMALL)):
        Path(name).mkdir()
        shutil.copy(source, Path(name) / source.name)
    return tmp_path


def _run(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    assert "internal error" not in result.stderr and "Traceback" not in result.output
    return result


def _collected() -> None:
    assert _run("collect", "J", "--to", "ds").exit_code == 0


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _enospc(*_: Any, **__: Any) -> Any:
    raise OSError(errno.ENOSPC, "No space left on device")


def _duckdb_full(*_: Any, **__: Any) -> Any:
    raise duckdb.IOException('IO Error: Could not write file "x.parquet": No space left on device')


# Where a full disk stops a collect: staging a group's rows, DuckDB writing Parquet, the
# manifest's listing of the files written.
FULL_AT = {
    "rows": ("WriteRows.__call__", _enospc),
    "parquet": ("write_table", _duckdb_full),
    "manifest": ("listing", _enospc),
}


@pytest.mark.parametrize("where", FULL_AT)
def test_a_full_disk_is_one_line_and_leaves_nothing_of_the_collect(here: Path, where: str) -> None:
    name, failing = FULL_AT[where]
    owner: Any = collecting.WriteRows if name.startswith("WriteRows") else collecting
    said = "error: ds: cannot write the dataset (No space left on device); nothing of this "
    # A first collect: no folder is left (no `.lock` and `versions/` skeleton for fleet).
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(owner, name.rpartition(".")[2], failing)
        first = _run("collect", "J", "--to", "ds", "-j", "1")
    assert (first.exit_code, first.stderr) == (1, said + "collect was kept\n")
    assert not Path("ds").exists()
    # A collect into a dataset: the dataset as it was, and no version being built.
    _collected()
    before = _tree(here / "ds")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(owner, name.rpartition(".")[2], failing)
        second = _run("collect", "more", "--to", "ds", "-j", "1")
    assert (second.exit_code, second.stderr) == (1, said + "collect was kept\n")
    assert _tree(here / "ds") == before
    assert _run("fleet", "ds", "--json").exit_code == 0


def test_a_full_tmpfs_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    """The real thing, where a mount namespace may be made (root, or unprivileged user
    namespaces): a 100 KB tmpfs, too small for the dataset of a Pi session."""
    if not shutil.which("unshare"):
        pytest.skip("no unshare")
    small = tmp_path / "small"
    small.mkdir()
    journals = tmp_path / "J"
    journals.mkdir()
    shutil.copy(CLAUDE_SMALL, journals)
    shutil.copy(CODEX_SMALL, journals)
    probe = subprocess.run(
        ["unshare", "-m", "-r", "sh", "-c", f"mount -t tmpfs -o size=16k none {small}"],
        capture_output=True,
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {probe.stderr.decode().strip()}")
    command = f"{sys.executable} -m agent_profiler collect {journals} --to {small}/ds"
    script = f"mount -t tmpfs -o size=16k none {small} && {command}; echo $?; ls -A {small}"
    done = subprocess.run(
        ["unshare", "-m", "-r", "sh", "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.split("\n")[-2:] == ["1", ""], done.stdout + done.stderr  # nothing left
    assert done.stderr.endswith(
        f"error: {shown_path(f'{small}/ds')}: cannot write the dataset (No space left on device); "
        "nothing of this collect was kept\n"
    ), done.stderr


def _parquet(table: str) -> Path:
    return next(Path("ds/current", table).rglob("*.parquet"))


def _shown(path: Path) -> str:
    """A file of the current version as the messages name it: under `ds/versions/000001`."""
    return str(Path("ds/versions/000001") / path.relative_to("ds/current"))


def test_a_parquet_file_cut_short_is_named_by_fleet_and_collect(here: Path) -> None:
    _collected()
    cut = _parquet("sessions")
    size = cut.stat().st_size
    os.truncate(cut, 200)
    fleet = _run("fleet", "ds")
    assert fleet.exit_code == 1
    damaged = f"error: {_shown(cut)}: damaged dataset file (200 bytes, written as {size:,})"
    assert fleet.stderr == f"{damaged}; {HINT}\n"
    before = _tree(here / "ds")
    again = _run("collect", "more", "--to", "ds")
    assert (again.exit_code, again.stderr) == (
        1,
        f"{damaged}; the dataset was not changed; {HINT}\n",
    )
    assert _tree(here / "ds") == before


def test_a_parquet_file_deleted_is_named_not_left_out_of_the_figures(here: Path) -> None:
    _collected()
    gone = _parquet("requests")
    gone.unlink()
    for command in (("fleet", "ds", "--json"), ("collect", "more", "--to", "ds")):
        result = _run(*command)
        assert result.exit_code == 1, result.stdout
        assert result.stderr.startswith(
            f"error: {_shown(gone)}: missing from the dataset (its manifest lists it); "
        )
        assert result.stdout == ""


def test_a_file_cut_short_in_a_dataset_without_a_listing_is_named(here: Path) -> None:
    """A dataset collected before the manifest listed its files: the cut is found by the
    Parquet magic bytes it lacks, once DuckDB fails on it."""
    _collected()
    manifest = Path("ds/current/manifest.json")
    data = json.loads(manifest.read_text())
    del data["parquet"]
    manifest.write_text(json.dumps(data))
    cut = _parquet("sessions")
    os.truncate(cut, 200)
    fleet = _run("fleet", "ds")
    damaged = f"error: {_shown(cut)}: damaged dataset file (not a whole Parquet file)"
    assert (fleet.exit_code, fleet.stderr) == (1, f"{damaged}; {HINT}\n")
    collect = _run("collect", "more", "--to", "ds")
    assert (collect.exit_code, collect.stderr) == (
        1,
        f"{damaged}; the dataset was not changed; {HINT}\n",
    )


@pytest.mark.parametrize(
    ("listed", "footer"),
    [(True, 0), (True, 1 << 30), (False, 0)],
)
def test_a_parquet_footer_of_no_length_or_past_its_file_is_named(
    here: Path, listed: bool, footer: int
) -> None:
    """A flipped byte in the footer's length (written before the last magic bytes) leaves
    the file its listed size; with a length of 0, or more than the file holds, DuckDB
    fails with its plain `Error` ("Footer length error"), which was an internal error (exit
    70). The file is named, as one cut short is; and in a dataset from before the listing,
    a whole file of 12 bytes (magic, a footer length of 0, magic) is no Parquet file."""
    _collected()
    if not listed:
        manifest = Path("ds/current/manifest.json")
        data = json.loads(manifest.read_text())
        del data["parquet"]
        manifest.write_text(json.dumps(data))
    damaged = _parquet("sessions")
    if listed:
        with damaged.open("r+b") as handle:
            handle.seek(-8, os.SEEK_END)
            handle.write(footer.to_bytes(4, "little"))
    else:
        damaged.write_bytes(b"PAR1" + footer.to_bytes(4, "little") + b"PAR1")
    fleet = _run("fleet", "ds")
    said = f"error: {_shown(damaged)}: damaged dataset file (not a whole Parquet file)"
    assert (fleet.exit_code, fleet.stderr) == (1, f"{said}; {HINT}\n")


@pytest.mark.parametrize(
    ("text", "reason"),
    [("{bad", "not JSON"), ("[1]", "not a manifest"), ('{"files": 3}', "not a manifest")],
)
def test_a_manifest_that_is_not_one_is_named(here: Path, text: str, reason: str) -> None:
    _collected()
    Path("ds/versions/000001/manifest.json").write_text(text)
    said = f"error: ds/versions/000001/manifest.json: damaged dataset file ({reason}); "
    collect = _run("collect", "more", "--to", "ds")
    assert (collect.exit_code, collect.stderr) == (
        1,
        said + f"the dataset was not changed; {HINT}\n",
    )
    fleet = _run("fleet", "ds")
    assert (fleet.exit_code, fleet.stderr) == (1, said + HINT + "\n")


def test_a_current_version_gone_is_named(here: Path) -> None:
    _collected()
    shutil.rmtree("ds/versions/000001")
    said = "error: ds/versions/000001: missing from the dataset (its `current` version); "
    fleet = _run("fleet", "ds")
    assert (fleet.exit_code, fleet.stderr) == (1, said + HINT + "\n")
    collect = _run("collect", "more", "--to", "ds")
    assert collect.exit_code == 1 and collect.stderr.startswith(said)
    assert os.path.islink("ds/current") and not list(Path("ds/versions").iterdir())


def test_the_manifest_lists_every_parquet_file_with_its_size(here: Path) -> None:
    """And its BLAKE2b hash: a byte changed inside a file is found (test_dataset_files)."""
    _collected()
    assert _run("collect", "more", "--to", "ds").exit_code == 0
    listed = json.loads(Path("ds/current/manifest.json").read_text())["parquet"]
    root = Path("ds/current")
    assert listed == {
        p.relative_to(root).as_posix(): [
            p.stat().st_size,
            hashlib.blake2b(p.read_bytes(), digest_size=16).hexdigest(),
        ]
        for p in root.rglob("*.parquet")
    }
    assert any(name.startswith("requests/harness=codex/") for name in listed)


def test_collect_into_someone_elses_folder_is_refused_without_force(here: Path) -> None:
    Path("notes").mkdir()
    Path("notes/todo.txt").write_text("mine\n")
    refused = _run("collect", "J", "--to", "notes")
    assert (refused.exit_code, refused.stderr) == (
        2,
        "error: --to notes: a folder that is neither empty nor a dataset; name a new folder "
        "(or pass --force to collect into it)\n",
    )
    assert _tree(here / "notes") == ["todo.txt"]
    assert _run("collect", "J", "--to", "notes", "--force").exit_code == 0
    assert _run("collect", "more", "--to", "notes").exit_code == 0  # a dataset now
    Path("empty").mkdir()
    assert _run("collect", "J", "--to", "empty").exit_code == 0


def test_a_first_collect_that_fails_in_a_folder_that_was_there_leaves_its_files_alone(
    here: Path,
) -> None:
    """`collect --force` into a folder of someone's files that then collected nothing (or
    was stopped) left `.lock` and `versions/` among them; the folder's own files stay."""
    Path("notes").mkdir()
    Path("notes/todo.txt").write_text("mine\n")
    Path("nothing").mkdir()
    Path("nothing/x.txt").write_text("not a journal\n")
    failed = _run("collect", "nothing", "--to", "notes", "--force")
    assert failed.exit_code != 0
    assert _tree(here / "notes") == ["todo.txt"]

    def interrupt() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        collecting.collect([Path("J")], Path("notes"), force=True, after_rows=interrupt)
    assert _tree(here / "notes") == ["todo.txt"]


def test_an_interrupted_first_collect_leaves_no_skeleton_for_fleet(here: Path) -> None:
    def interrupt() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        collecting.collect([Path("J")], Path("ds"), after_rows=interrupt)
    assert not Path("ds").exists()  # no `.lock` and empty `versions/` fleet misreads
    fleet = _run("fleet", "ds")
    assert (fleet.exit_code, fleet.stderr) == (
        2,
        "error: ds: no dataset here (make one with `collect … --to ds`)\n",
    )
