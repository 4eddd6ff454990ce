"""Worker processes going wrong (pipeline.py), in a real process tree: a worker killed
mid-export leaves the trace as one process writes it, and Ctrl-C stops the whole tree at
once with one line, no traceback and no file left behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from samples import DATA, PI_LARGE

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="needs /proc to find the worker processes"
)


def _workers(pid: int) -> list[int]:
    """The pool's worker processes under `pid` (not multiprocessing's resource tracker)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    workers = []
    for child in children:
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"resource_tracker" not in command:
            workers.append(int(child))
    return workers


def _default_sigint() -> None:
    # As a terminal starts a job: a suite run in the background (`make test &`, CI) has
    # SIGINT ignored, and a child would inherit that.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextmanager
def _started(args: list[str], cwd: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The tool in a process group of its own, as a terminal's job is; killed and its
    pipes closed whatever the test found."""
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_profiler", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=_default_sigint,
    )
    with process:
        try:
            yield process
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()


def _catches_sigint(pid: int) -> bool:
    """Whether `pid` has a handler for SIGINT now (/proc's SigCgt mask): a worker once its
    initializer ran, the parent once it stopped ignoring Ctrl-C while starting workers."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught, 16) & (1 << (signal.SIGINT - 1)))


def _wait_for_workers(process: subprocess.Popen[bytes], count: int) -> list[int]:
    """The workers, once `count` of them and the parent all answer Ctrl-C."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        workers = _workers(process.pid)
        if len(workers) >= count and all(map(_catches_sigint, [process.pid, *workers])):
            return workers
        time.sleep(0.002)
    state = {pid: _catches_sigint(pid) for pid in [process.pid, *_workers(process.pid)]}
    raise AssertionError(f"no {count} workers answering Ctrl-C (pid: catches SIGINT): {state}")


def _many_groups(tmp_path: Path, copies: int = 8) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    for index in range(copies):
        shutil.copy(PI_LARGE, folder / f"pi-{index}.jsonl")
    return folder


def test_a_killed_worker_costs_nothing_but_time(tmp_path: Path) -> None:
    folder = _many_groups(tmp_path)
    # GIVEN an export read by two workers, one of which is killed (as the OOM killer would)
    with _started(["export", str(folder), "-j", "2", "-o", "killed.pftrace"], tmp_path) as process:
        os.kill(_wait_for_workers(process, 2)[0], signal.SIGKILL)
        _, stderr = process.communicate(timeout=120)
    # THEN it still succeeds, says so, and writes what one process writes
    assert process.returncode == 0, stderr.decode()
    assert b"note: a worker process stopped before it was done" in stderr
    with _started(["export", str(folder), "-j", "1", "-o", "single.pftrace"], tmp_path) as single:
        single.communicate(timeout=120)
    assert (tmp_path / "killed.pftrace").read_bytes() == (tmp_path / "single.pftrace").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "killed.pftrace", "single.pftrace"]


def test_ctrl_c_stops_every_process_with_one_line(tmp_path: Path) -> None:
    # GIVEN an export of every harness's journals by two workers
    with _started(["export", str(DATA), "-j", "2", "-o", "t.pftrace"], tmp_path) as process:
        workers = _wait_for_workers(process, 2)
        # WHEN the terminal sends SIGINT to the whole job
        os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    # THEN one line, exit 130, no worker left running and no file left behind
    assert process.returncode == 130
    assert stderr.decode().strip() == "interrupted"
    time.sleep(0.2)
    assert not [w for w in workers if Path(f"/proc/{w}").exists()]
    assert list(tmp_path.iterdir()) == []
