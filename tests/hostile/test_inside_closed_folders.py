"""A journal named inside a folder without search permission (`closed/x.jsonl`, mode 000 on
`closed`): Python 3.11's `is_dir` and `exists` raise PermissionError there. It is one
`cannot open` line, the other inputs are read and written, and an output named in such a
folder is refused in one line (report, summary and collect ended in an internal error,
exit 70; export blamed its own output and wrote nothing)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from samples import CLAUDE_SMALL


def _as_owner(closed: Path) -> list[str] | None:
    """The command prefix under which `closed` (mode 000) cannot be searched, or None (root
    keeps its files open unless CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH are dropped)."""
    prefixes: list[list[str]] = [[]]
    if os.geteuid() == 0 and shutil.which("setpriv"):
        drop = "-dac_override,-dac_read_search"
        prefixes.insert(0, ["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}"])
    for prefix in prefixes:
        probe = [*prefix, sys.executable, "-c", f"import os; os.stat({str(closed / 'x')!r})"]
        done = subprocess.run(probe, capture_output=True, text=True)
        if "PermissionError" in done.stderr:
            return prefix
    return None


@pytest.fixture
def closed(tmp_path: Path) -> Iterator[list[str]]:
    """`closed/` (mode 000) beside `good.jsonl`, in tmp_path; the prefix that makes the
    permissions count."""
    shutil.copy(CLAUDE_SMALL, tmp_path / "good.jsonl")
    (tmp_path / "closed").mkdir()
    os.chmod(tmp_path / "closed", 0)
    prefix = _as_owner(tmp_path / "closed")
    if prefix is None:
        os.chmod(tmp_path / "closed", 0o755)
        pytest.skip("permissions are not enforced here (root without setpriv)")
    yield prefix
    os.chmod(tmp_path / "closed", 0o755)  # so that pytest can remove it


def _run(prefix: list[str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [*prefix, sys.executable, "-m", "agent_profiler", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(("error", "internal"))]


@pytest.mark.parametrize(
    ("args", "written"),
    [
        (["export", "closed/x.jsonl", "good.jsonl", "-o", "t.pftrace"], "t.pftrace"),
        (["report", "closed/x.jsonl", "good.jsonl", "-o", "r.html"], "r.html"),
        (["summary", "closed/x.jsonl", "good.jsonl", "--json"], None),
    ],
    ids=["export", "report", "summary"],
)
def test_a_journal_in_a_closed_folder_is_one_line_and_the_rest_is_read(
    closed: list[str], tmp_path: Path, args: list[str], written: str | None
) -> None:
    result = _run(closed, tmp_path, *args)
    assert result.returncode == 1, result.stderr
    assert _errors(result.stderr) == ["error: closed/x.jsonl: cannot open: permission denied"]
    if written is not None:
        assert (tmp_path / written).stat().st_size > 0
    else:
        assert '"requests": 6' in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["export", "good.jsonl", "-o", "closed/t.pftrace"],
        ["report", "good.jsonl", "-o", "closed/r.html"],
    ],
    ids=["export", "report"],
)
def test_an_output_in_a_closed_folder_is_refused_in_one_line(
    closed: list[str], tmp_path: Path, args: list[str]
) -> None:
    result = _run(closed, tmp_path, *args)
    assert result.returncode == 1, result.stderr
    assert _errors(result.stderr) == [f"error: {args[-1]}: cannot write here (permission denied)"]
