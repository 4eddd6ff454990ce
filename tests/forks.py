"""What the tests of forked helpers share (writers/runs.py's and scan.py's): the pids
forked from now on, and a helper's death with a parent killed outright."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

# A driver script's lines (`assert_helper_dies_with_its_parent`): each process it forks from
# then on has its pid printed, the helper's first.
FORK_TOLD = """fork = os.fork
def told():
    pid = fork()
    if pid:
        print(pid, flush=True)
    return pid
os.fork = told"""


def count_forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the processes forked from now on (in this process)."""
    forks: list[int] = []
    fork = os.fork

    def counted() -> int:
        pid = fork()
        if pid:
            forks.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counted)
    return forks


def gone(pid: int) -> bool:
    """The process has ended (no entry, or a zombie left for its new parent to reap)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return True
    return fields[0] in ("Z", "X")


def assert_helper_dies_with_its_parent(driver: Path) -> None:
    """Run `driver` (a script printing its helper's pid, then keeping it alive), kill it
    outright once the helper is set up, and wait for the helper to end with it."""
    parent = subprocess.Popen([sys.executable, str(driver)], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        helper = int(parent.stdout.readline())
        time.sleep(0.3)  # (its set-up done)
        assert not gone(helper)
    finally:
        parent.kill()
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    deadline = time.monotonic() + 10
    while not gone(helper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(helper)
