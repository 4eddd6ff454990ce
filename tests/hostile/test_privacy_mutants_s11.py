"""Privacy rules the eleventh session's mutation sample found untested (`privacy.py`):
hand-made names, under a home folder set for the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_profiler.privacy import input_name, private_path


def test_the_project_folder_of_the_home_written_with_a_separator_at_its_end_is_unnamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code's project folder for the cwd `/home/alice/` (the home itself, written with
    a separator at its end) is `-home-alice-`: nothing follows the home in it, so it is
    shown as `…`, in a path given from `~/.claude/projects` as alone
    (privacy.input_name__mutmut_40 showed `XX…XX`); a project below the home keeps what
    follows it."""
    monkeypatch.setenv("HOME", "/home/alice")
    assert input_name("-home-alice-") == "…"
    assert private_path("-home-alice-/0f2c.jsonl") == "…/0f2c.jsonl"
    assert input_name("-home-alice-src-app") == "src-app"
