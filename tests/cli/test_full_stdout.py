"""A stdout that cannot take what is written (`> /dev/full`, a full disk, a quota): one
line naming stdout and exit 1, as `-o /dev/full` says it, never an internal error (it was
`internal error: OSError: [Errno 28] …`, exit 70), and no "Exception ignored" when the
interpreter flushes stdout on its way out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from samples import CLAUDE_SMALL

pytestmark = pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
FULL = "error: stdout: No space left on device"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("full") / "ds"
    result = CliRunner().invoke(app, ["collect", str(CLAUDE_SMALL), "--to", str(folder)])
    assert result.exit_code == 0, result.output + result.stderr
    return folder


def _to_full(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    with open("/dev/full", "w") as full:
        return subprocess.run(
            [sys.executable, "-m", "agent_profiler", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            # discover looks in the home folder: an empty one finds nothing (`[]`)
            env={**os.environ, "HOME": str(cwd)},
            timeout=120,
        )


@pytest.mark.parametrize(
    "args",
    [
        ("summary", str(CLAUDE_SMALL)),
        ("summary", str(CLAUDE_SMALL), "--json"),
        ("export", str(CLAUDE_SMALL), "-o", "-"),
        ("export", str(CLAUDE_SMALL), "--format", "json", "-o", "-"),
        ("report", str(CLAUDE_SMALL), "-o", "-"),
        ("fleet", "DS"),
        ("fleet", "DS", "--html", "-"),
        ("discover", "--json"),
        ("--version",),
        ("--help",),  # written by Click
    ],
    ids=" ".join,
)
def test_a_full_stdout_is_one_line_and_exit_1(
    args: tuple[str, ...], dataset: Path, tmp_path: Path
) -> None:
    args = tuple(str(dataset) if arg == "DS" else arg for arg in args)
    result = _to_full(*args, cwd=tmp_path)
    assert (result.returncode, result.stderr.splitlines()[-1:]) == (1, [FULL]), result.stderr
    assert "internal error" not in result.stderr and "Exception ignored" not in result.stderr
    assert list(tmp_path.iterdir()) == []  # no spool or temporary file left


def test_a_full_output_file_is_still_said_by_its_name() -> None:
    # (stdout a pipe: with stdout on /dev/full too, `-o /dev/full` names stdout)
    command = [sys.executable, "-m", "agent_profiler", "export", str(CLAUDE_SMALL)]
    result = subprocess.run([*command, "-o", "/dev/full"], capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == "error: /dev/full: No space left on device"
