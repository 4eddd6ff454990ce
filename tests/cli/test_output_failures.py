"""An output that cannot be written, or could not, said in one line that names the right
place (review outfail D6, D8): an output's name of up to 255 bytes, and output paths shown
as inputs are (no absolute path with the user's name in it)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler import outputs
from agent_profiler.cli import app
from samples import CLAUDE_SMALL

runner = CliRunner()


# D6 ------------------------------------------------------------------------------------


def _refuse_unnamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A filesystem without O_TMPFILE: the output goes through a named temporary file."""
    real_open = os.open
    unnamed = getattr(os, "O_TMPFILE", 0)

    def open_(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
        if unnamed and flags & unnamed == unnamed:
            raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP), str(path))
        return real_open(path, flags, mode, **kw)

    monkeypatch.setattr(os, "open", open_)


@pytest.mark.parametrize("how", ["over-an-old-one", "named-fallback"])
def test_an_output_named_with_255_bytes_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A valid name of 255 bytes was refused `File name too long`: the temporary name
    beside it held the whole name and 30 bytes more."""
    name = "b" * (255 - len(".pftrace")) + ".pftrace"
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["export", str(CLAUDE_SMALL), "-o", "short.pftrace"]).exit_code == 0
    if how == "over-an-old-one":
        Path(name).write_bytes(b"old")
    else:
        _refuse_unnamed(monkeypatch)
    result = runner.invoke(app, ["export", str(CLAUDE_SMALL), "-o", name, "--force"])
    assert result.exit_code == 0, result.stderr
    assert Path(name).read_bytes() == Path("short.pftrace").read_bytes()  # the same bytes
    assert sorted(os.listdir(tmp_path)) == sorted([name, "short.pftrace"])  # nothing left


def test_a_temporary_name_is_short_and_ours() -> None:
    for kind in ("", "packets-"):
        name = outputs.temporary_name(kind)
        assert name.startswith(".agent-profiler-") and name.endswith(".tmp")
        assert len(name.encode()) < 64


# D8 ------------------------------------------------------------------------------------


def test_an_output_path_is_shown_as_an_input_path_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`error: /home/alice/nodir/x.pftrace: …` beside `error: ~/nope.jsonl: …`: the
    output's path was absolute, with the user's name."""
    home = tmp_path / "home-alice"
    (home / "a-file").parent.mkdir()
    (home / "a-file").write_text("")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir("/")
    written = runner.invoke(app, ["export", str(CLAUDE_SMALL), "-o", f"{home}/nodir/x.pftrace"])
    assert written.exit_code == 1
    assert written.stderr.splitlines() == [
        "error: ~/nodir/x.pftrace: cannot write here (No such file or directory)"
    ]
    collected = runner.invoke(app, ["collect", str(CLAUDE_SMALL), "--to", f"{home}/a-file/ds"])
    assert collected.exit_code == 1
    assert collected.stderr.splitlines()[-1].startswith("error: ~/a-file/ds: ")
    assert str(tmp_path) not in written.stderr + collected.stderr
