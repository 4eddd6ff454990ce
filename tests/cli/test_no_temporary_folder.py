"""A machine where no temporary folder can be written (tempfile finds none: TMPDIR, TEMP,
TMP, /tmp, /var/tmp, /usr/tmp and the current folder all refused). Every command that
needs one said `internal error: FileNotFoundError: No usable temporary directory found in
[…]` (the folders it lists, the current one with the user's name in its path); it is one
line saying what to do, and a command that needs none still works."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler import output_errors, spools
from agent_profiler.cli import app
from samples import CLAUDE_SMALL

runner = CliRunner()
SAID = f"error: {output_errors.NO_TEMPORARY_FOLDER}"


def _none_usable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """tempfile finds no usable folder (as `_get_default_tempdir` raises where each refuses
    a file), and TMPDIR names a folder that is not there (no O_TMPFILE file either)."""

    def none() -> str:
        listed = ["/nope", "/tmp", "/var/tmp", "/usr/tmp", str(tmp_path)]
        raise FileNotFoundError(errno.ENOENT, f"No usable temporary directory found in {listed}")

    monkeypatch.setattr(tempfile, "_get_default_tempdir", none)
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setattr("agent_profiler.inputs._copies_folder", None)  # (none made yet)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "nope"))
    monkeypatch.setenv("BROWSER", "true")


@pytest.mark.parametrize(
    "command",
    [
        ["summary", "-"],  # a piped journal is copied there first
        ["export", str(CLAUDE_SMALL), "-o", "-"],  # the packets wait there
        ["report", str(CLAUDE_SMALL), "-o", "{out}", "--force"],  # the sections wait there
        ["open", "--no-browser", "--timeout", "1", str(CLAUDE_SMALL)],  # its trace is there
    ],
    ids=["stdin", "stdout", "report", "open"],
)
def test_no_usable_temporary_folder_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    out = tmp_path / "r.html"
    out.write_text("PREVIOUS")
    _none_usable(monkeypatch, tmp_path)
    args = [part.replace("{out}", str(out)) for part in command]
    result = runner.invoke(app, args, input=CLAUDE_SMALL.read_bytes())
    assert result.exit_code == 1, result.stderr
    assert result.stderr.splitlines() == [SAID], result.stderr
    assert out.read_text() == "PREVIOUS"  # (the report's: nothing half written)
    assert sorted(os.listdir(tmp_path)) == ["r.html"]


def test_an_export_to_a_file_needs_no_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _none_usable(monkeypatch, tmp_path)
    out = tmp_path / "t.pftrace"
    result = runner.invoke(app, ["export", str(CLAUDE_SMALL), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert out.stat().st_size > 0
    assert output_errors.temporary_folder() == "none can be written"


@pytest.mark.parametrize("name", ["TMPDIR", "TEMP", "TMP"])
def test_an_unnamed_temporary_file_is_where_tempfile_looks_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The packets waiting for stdout, and the one pass's, go to the folder tempfile
    would use (its first of TMPDIR, TEMP and TMP), not /tmp when only TEMP is set; that
    folder is the one a failure names."""
    for each in ("TMPDIR", "TEMP", "TMP"):
        monkeypatch.delenv(each, raising=False)
    monkeypatch.setenv(name, str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    spool = spools.unnamed_temporary_file()
    try:
        where = os.readlink(f"/proc/self/fd/{spool.stream.fileno()}")
    except OSError:
        pytest.skip("no /proc/self/fd to tell where a file with no name is")
    finally:
        spool.close()
    assert where.startswith(f"{tmp_path}/"), where
    assert tempfile.gettempdir() == str(tmp_path)


def test_a_journal_in_a_folder_named_like_ours_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path in a folder named `agent-profiler-*` is asked whether it is one of ours in
    the temporary folder (a pipe's copy is shown as `<stdin>`; an output there is not
    synced): with no temporary folder it is not, and the command goes on (the question
    raised FileNotFoundError)."""
    folder = tmp_path / "agent-profiler-notes" / "copy"
    folder.mkdir(parents=True)
    journal = folder / CLAUDE_SMALL.name
    journal.write_bytes(CLAUDE_SMALL.read_bytes())
    _none_usable(monkeypatch, tmp_path)
    out = folder.parent / "t.pftrace"  # (in the folder named like ours)
    result = runner.invoke(app, ["export", str(journal), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert out.stat().st_size > 0
