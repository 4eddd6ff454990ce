"""An output that cannot be written, said in one line that names the right place (review
outfail D8): output paths shown as inputs are (no absolute path with the user's name in it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from samples import CLAUDE_SMALL

runner = CliRunner()


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
