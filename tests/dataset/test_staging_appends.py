"""A collect's staging files stay open across the groups a process reads
(dataset/reading.py `_append`): the rows are the same however few may be open at once, and
no descriptor of them is left open once the groups are read."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from dsfiles import journals, run

from agent_profiler.dataset import reading

pytest.importorskip("duckdb")


def _open_under(folder: Path) -> list[str]:
    """The files under `folder` this process has open (Linux's /proc)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(folder.resolve())):
            found.append(target)
    return found


def _collect(dataset: str) -> None:
    result = run("collect", "J", "more", "--to", dataset, "--jobs", "1")
    assert result.exit_code == 0, result.output


def _figures(dataset: str) -> Any:
    result = run("fleet", dataset, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs Linux's /proc")
def test_the_rows_are_the_same_however_few_files_stay_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a Claude Code session and a Codex rollout (two harnesses: two partitions of
    # each table), read in this process
    monkeypatch.chdir(tmp_path)
    journals(tmp_path)
    staged: list[str] = []
    original = reading._append

    def append(folder: str, path: str, data: bytes) -> None:
        original(folder, path, data)
        staged.append(path)

    monkeypatch.setattr(reading, "_append", append)
    # WHEN it is collected with every staging file kept open, then with one at a time
    _collect("all")
    assert len(set(staged)) > 2  # (more files than one may hold open below)
    assert _open_under(tmp_path) == []
    monkeypatch.setattr(reading, "_MAX_OPEN", 1)
    _collect("one")
    # THEN the same dataset, and no staging file left open either way
    assert _open_under(tmp_path) == []
    assert _figures("one") == _figures("all")
