"""Paths that cannot be opened, found in a folder or named: a symlink loop named like a
journal, a broken symlink, a folder without read permission. Each is one `error:` line
naming it as given, the other inputs are still read, and the exit code is 1 (a loop was an
internal error with its absolute path, a closed folder inside a given one was skipped
without a word, and named, an internal PermissionError)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from samples import CLAUDE_SMALL, CODEX_SMALL
from shared_paths import TESTS

runner = CliRunner()


@pytest.fixture
def looped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`L/a.jsonl` → `b.jsonl` → `a.jsonl`, beside a good journal, in the current folder."""
    monkeypatch.chdir(tmp_path)
    folder = Path("L")
    folder.mkdir()
    os.symlink("b.jsonl", folder / "a.jsonl")
    os.symlink("a.jsonl", folder / "b.jsonl")
    shutil.copy(CLAUDE_SMALL, folder / "ok.jsonl")
    return folder


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(("error", "internal"))]


def test_a_symlink_loop_in_a_folder_is_one_line_and_the_rest_is_read(looped: Path) -> None:
    result = runner.invoke(app, ["summary", str(looped), "--json"])
    assert result.exit_code == 1, result.output + result.stderr
    assert _errors(result.stderr) == [
        "error: L/a.jsonl: symlink loop",
        "error: L/b.jsonl: symlink loop",
    ]
    assert '"requests": 6' in result.stdout


def test_a_symlink_loop_named_is_called_so_not_missing(looped: Path) -> None:
    out = Path("t.pftrace")
    out.write_bytes(b"")  # an existing output: the check that it is no input resolves them
    result = runner.invoke(app, ["export", "L/a.jsonl", "L/ok.jsonl", "-o", str(out), "--force"])
    assert result.exit_code == 1, result.output + result.stderr
    assert _errors(result.stderr) == ["error: L/a.jsonl: symlink loop"]
    assert out.stat().st_size > 0


def test_a_broken_symlink_is_called_so(looped: Path) -> None:
    os.symlink("gone.jsonl", looped / "c.jsonl")
    result = runner.invoke(app, ["summary", "L/c.jsonl", str(looped / "ok.jsonl")])
    assert result.exit_code == 1, result.output + result.stderr
    assert _errors(result.stderr) == ["error: L/c.jsonl: broken symlink (nothing at its target)"]


def test_collect_of_a_folder_with_a_symlink_loop_collects_the_rest(looped: Path) -> None:
    result = runner.invoke(app, ["collect", str(looped), "--to", "ds"])
    assert result.exit_code == 1, result.output + result.stderr
    assert len(_errors(result.stderr)) == 2
    assert "1 session in the dataset" in result.stdout
    assert sorted(p.name for p in Path("ds").iterdir()) == [".lock", "current", "versions"]


def test_collect_to_a_symlink_loop_is_refused(looped: Path) -> None:
    os.symlink("to2", "to1")
    os.symlink("to1", "to2")
    result = runner.invoke(app, ["collect", str(looped / "ok.jsonl"), "--to", "to1"])
    assert result.exit_code == 2, result.output + result.stderr
    assert _errors(result.stderr) == ["error: --to to1: symlink loop"]


# --------------------------------------------------------------------------- no permission
# Root reads every folder: the tool runs as a child with the two capabilities that let it
# (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) dropped, as root's own files stay its own.


def _as_owner(closed: Path) -> list[str] | None:
    """The command prefix under which `closed` (mode 000) cannot be opened, or None."""
    prefixes: list[list[str]] = [[]]
    if os.geteuid() == 0 and shutil.which("setpriv"):
        drop = "-dac_override,-dac_read_search"
        prefixes.insert(0, ["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}"])
    for prefix in prefixes:
        probe = [*prefix, sys.executable, "-c", f"import os; os.listdir({str(closed)!r})"]
        if subprocess.run(probe, capture_output=True).returncode != 0:
            return prefix
    return None


@pytest.fixture
def closed(tmp_path: Path) -> Iterator[tuple[Path, list[str]]]:
    """`d/closed` (mode 000, a journal in it) beside `d/open/x.jsonl`; and the prefix that
    makes the permissions count."""
    (tmp_path / "d" / "open").mkdir(parents=True)
    (tmp_path / "d" / "closed").mkdir()
    shutil.copy(CLAUDE_SMALL, tmp_path / "d" / "open" / "x.jsonl")
    shutil.copy(CODEX_SMALL, tmp_path / "d" / "closed" / "y.jsonl")
    os.chmod(tmp_path / "d" / "closed", 0)
    prefix = _as_owner(tmp_path / "d" / "closed")
    if prefix is None:
        os.chmod(tmp_path / "d" / "closed", 0o755)
        pytest.skip("permissions are not enforced here (root without setpriv)")
    yield tmp_path, prefix
    os.chmod(tmp_path / "d" / "closed", 0o755)  # so that pytest can remove it


def _run(prefix: list[str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [*prefix, sys.executable, "-m", "agent_profiler", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_a_closed_folder_inside_a_given_one_is_said_and_the_rest_read(
    closed: tuple[Path, list[str]],
) -> None:
    cwd, prefix = closed
    result = _run(prefix, cwd, "summary", "d", "--json")
    assert result.returncode == 1, result.stderr
    assert _errors(result.stderr) == ["error: d/closed: cannot open: permission denied"]
    assert '"requests": 6' in result.stdout


def test_a_closed_folder_named_is_said_and_the_rest_read(closed: tuple[Path, list[str]]) -> None:
    cwd, prefix = closed
    result = _run(prefix, cwd, "summary", "d/closed", "d/open", "--json")
    assert result.returncode == 1, result.stderr
    assert _errors(result.stderr) == ["error: d/closed: cannot open: permission denied"]
    assert '"requests": 6' in result.stdout


def test_a_journal_of_another_harness_is_named_with_its_article(tmp_path: Path) -> None:
    """ "it looks like a opencode journal": the article follows the harness's name."""
    opencode = (
        TESTS / "data" / "journals" / "opencode" / "ses_2bef25635ffe8EzID0I1Oeymal.export.json"
    )
    result = runner.invoke(app, ["summary", str(opencode), "--harness", "codex"])
    assert "(it looks like an opencode journal; drop --harness)" in result.stderr
