"""A parent killed outright (SIGKILL, the OOM killer) takes its workers with it (review-bad
finding 5): a forked worker kept the parent's end of its own pipe open, so its `recv`
never saw the end of file; it waited forever, holding what it inherited, among which
`collect`'s lock on the dataset (every later collect: "another collect is writing this
dataset")."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, fork")

PARENT = """
import fcntl, os, signal, sys
from agent_profiler.pipeline import _Workers

lock = open(sys.argv[1], "a")
fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as collect holds the dataset's
workers = _Workers(None, 2)
print(" ".join(str(process.pid) for process, _ in workers.workers), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status  # a zombie has left; its reaper is another matter


def _wait_gone(pids: list[int], seconds: float = 10.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (alive := [p for p in pids if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def test_workers_leave_when_their_parent_is_killed(tmp_path: Path) -> None:
    lock = tmp_path / ".lock"
    said = tmp_path / "pids"
    with said.open("w") as out:  # a file, not a pipe: the orphans would hold it open
        parent = subprocess.run(
            [sys.executable, "-c", PARENT, str(lock)],
            stdout=out,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            timeout=60,
        )
    assert parent.returncode == -9
    pids = [int(p) for p in said.read_text().split()]
    assert len(pids) == 2
    left = _wait_gone(pids)
    for pid in left:  # not to leave them behind when the test fails
        os.kill(pid, 9)
    assert left == []
    with lock.open("a") as handle:  # the lock died with its holders
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_a_worker_whose_parent_died_before_it_started_leaves(tmp_path: Path) -> None:
    """The parent gone before the worker asked to die with it: it sees another parent."""
    from agent_profiler import children

    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        os.close(read)
        try:
            children.leave_with(os.getpid() + 10**6, [write])  # not its parent
        finally:
            os._exit(3)
    os.close(write)
    _, status = os.waitpid(child, 0)
    os.close(read)
    assert os.WEXITSTATUS(status) == 0
