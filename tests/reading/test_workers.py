"""Worker processes going wrong (pipeline.py), in a real process tree: a worker killed
mid-export leaves the trace as one process writes it, and Ctrl-C stops the whole tree at
once with one line, no traceback and no file left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from samples import DATA, PI_LARGE

pytestmark = [
    pytest.mark.slow,  # worker processes and signals: `make check` leaves them out
    pytest.mark.skipif(
        not Path("/proc/self/status").exists(), reason="needs /proc to find the worker processes"
    ),
]


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


def _catches_sigint(pid: int, signum: int = signal.SIGINT) -> bool:
    """Whether `pid` has a handler for the signal now (/proc's SigCgt mask): a worker once
    its initializer ran, the parent once it stopped ignoring Ctrl-C while starting workers
    (or, for SIGTERM, once the console script set its handler)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(caught, 16) & (1 << (signum - 1)))


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


def _gone(workers: list[int], within: float = 10.0) -> bool:
    """Whether every worker process has ended within `within` seconds (a worker told to
    stop takes a moment to go, longer on a loaded machine)."""
    deadline = time.monotonic() + within
    while [w for w in workers if Path(f"/proc/{w}").exists()]:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _many_groups(tmp_path: Path, copies: int = 8) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    # Each with other bytes (one more blank line): a file with the very bytes of another
    # is read once (repeats.py), and these must be groups of their own
    data = PI_LARGE.read_bytes()
    for index in range(copies):
        (folder / f"pi-{index}.jsonl").write_bytes(data + b"\n" * index)
    return folder


def test_a_killed_worker_costs_nothing_but_time(tmp_path: Path) -> None:
    folder = _many_groups(tmp_path)
    # GIVEN an export read by two workers (-j 3: and the parent), one of which is killed
    # (as the OOM killer would)
    with _started(["export", str(folder), "-j", "3", "-o", "killed.pftrace"], tmp_path) as process:
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
    # GIVEN an export of every harness's journals by two workers (-j 3: and the parent),
    # with enough more groups that it is still under way when the signal comes (tests/data
    # alone was once read whole first, exit 0, on a loaded machine)
    folder = _many_groups(tmp_path, copies=24)
    (tmp_path / "out").mkdir()
    args = ["export", str(DATA), str(folder), "-j", "3", "-o", "out/t.pftrace"]
    with _started(args, tmp_path) as process:
        workers = _wait_for_workers(process, 2)
        # WHEN the terminal sends SIGINT to the whole job
        os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    # THEN one line, exit 130, no worker left running and no file left behind
    assert process.returncode == 130, stderr.decode(errors="replace")
    assert stderr.decode().strip() == "interrupted"
    assert _gone(workers)
    assert list((tmp_path / "out").iterdir()) == []


def test_sigterm_to_the_export_alone_stops_its_workers_and_leaves_no_file(
    tmp_path: Path,
) -> None:
    # (enough groups that three readers are still at it when the signal comes)
    folder = _many_groups(tmp_path, copies=24)
    for jobs in ("3", "1"):
        out = tmp_path / "out"
        out.mkdir()
        # GIVEN an export under way (with two workers, then in one process)
        with _started(["export", str(folder), "-j", jobs, "-o", "out/t.pftrace"], tmp_path) as p:
            workers = _wait_for_workers(p, 2) if jobs == "3" else []
            while not _catches_sigint(p.pid, signal.SIGTERM) and p.poll() is None:
                time.sleep(0.002)
            time.sleep(0.2)  # into the reading
            # WHEN only the parent gets SIGTERM (`timeout`, a CI runner, `kill`)
            os.kill(p.pid, signal.SIGTERM)
            _, err = p.communicate(timeout=60)
        # THEN it exits as a terminated process does, its workers with it, nothing left
        assert p.returncode == 143, err.decode(errors="replace")
        assert _gone(workers)
        assert list(out.iterdir()) == []
        out.rmdir()


def test_sigterm_stops_workers_in_the_middle_of_a_long_group(tmp_path: Path) -> None:
    # GIVEN two long groups (a Pi session replayed 40 times: ≈ 3 s each to read)
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("a", "b"):
        blank = b"\n" if name == "b" else b""  # other bytes: each its own group
        (folder / f"{name}.jsonl").write_bytes(PI_LARGE.read_bytes() * 40 + blank)
    out = tmp_path / "out"
    out.mkdir()
    with _started(["export", str(folder), "-j", "2", "-o", "out/t.pftrace"], tmp_path) as p:
        _wait_for_workers(p, 1)
        time.sleep(0.3)  # the worker and the parent each inside a group
        # WHEN the parent alone is terminated
        sent = time.monotonic()
        os.kill(p.pid, signal.SIGTERM)
        p.communicate(timeout=60)
        # THEN it does not wait for the groups under way: the workers are stopped
        assert time.monotonic() - sent < 1.5
    assert p.returncode == 143
    assert list(out.iterdir()) == []


def test_a_worker_killed_before_it_is_handed_a_group_costs_nothing_but_time() -> None:
    """A worker that died while idle is met by the parent's send, not by its receive: the
    send hits a closed pipe (BrokenPipeError). That is a dead worker too, never an error of
    the export's output: every group not brought back is read in the parent."""
    from agent_profiler.loader import LoadResult, plan_inputs
    from agent_profiler.options import ReadOptions
    from agent_profiler.pipeline import EncodeTrace, GroupTask, _Workers
    from agent_profiler.writers import TraceFacts

    groups = plan_inputs([DATA / "codex", DATA / "pi"], None, LoadResult())
    tasks = [GroupTask(i, g, ReadOptions()) for i, g in enumerate(groups)]
    assert len(tasks) >= 3
    pool: _Workers[object] = _Workers(EncodeTrace(TraceFacts()), 2)
    try:
        # GIVEN both workers killed before the first group is handed out
        for process, _ in pool.workers:
            os.kill(process.pid, signal.SIGKILL)
            process.join(timeout=10)
        # WHEN the parent hands out the groups
        outcomes = list(pool.outcomes(tasks))
    finally:
        pool.close()
    # THEN it says none was brought back (the caller reads them itself), in order
    assert outcomes == [(i, None) for i in range(len(tasks))]


class _Marking:
    """A group's use that leaves a file named after the process that read it (a worker's
    reading is seen from the parent without timing it)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def __call__(self, sessions: object, diagnostics: object, task: Any, out: object) -> bytes:
        (self.folder / f"{os.getpid()}-{task.index}").touch()
        return b""


def test_a_worker_goes_on_while_the_parent_reads_a_long_group(tmp_path: Path) -> None:
    """A worker is handed several groups at a time (pipeline.IN_FLIGHT), so it keeps
    reading while the parent reads a group of its own, however long that one takes: with
    two, the worker waited for the parent a tenth of the bench's folder export."""
    from agent_profiler.loader import LoadResult, plan_inputs
    from agent_profiler.options import ReadOptions
    from agent_profiler.pipeline import GroupTask, _Workers, run_group

    groups = plan_inputs([_many_groups(tmp_path, copies=8)], None, LoadResult())
    tasks = [GroupTask(i, g, ReadOptions()) for i, g in enumerate(groups)]
    marks = tmp_path / "marks"
    marks.mkdir()
    use = _Marking(marks)
    by_worker: list[int] = []

    def local(task: GroupTask) -> Any:
        # GIVEN the parent's own group lasts until the worker has read three groups (or
        # 20 s: a worker handed two waits for the parent all that time)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            done = [m for m in marks.iterdir() if not m.name.startswith(f"{os.getpid()}-")]
            if len(done) >= 3:
                break
            time.sleep(0.005)
        by_worker.append(len(done))
        return run_group(task, use)

    pool: _Workers[bytes] = _Workers(use, 1)
    try:
        # WHEN one worker and the parent read the groups
        outcomes = list(pool.outcomes(tasks, local))
    finally:
        pool.close()
    # THEN the worker read more than two groups while the parent read its first
    assert by_worker and by_worker[0] >= 3, by_worker
    # AND every group was read once, in order
    assert [index for index, _ in outcomes] == list(range(len(tasks)))
    assert len(list(marks.iterdir())) == len(tasks)


class _AfterTheParent:
    """A group's use that, in a worker, waits until the parent has read a group of its own
    (or 20 s), then leaves a file named after the process that read it."""

    def __init__(self, folder: Path, parent: int) -> None:
        self.folder = folder
        self.parent = parent

    def __call__(self, sessions: object, diagnostics: object, task: Any, out: object) -> bytes:
        if os.getpid() == self.parent:
            (self.folder / "parent-read").touch()
        else:
            deadline = time.monotonic() + 20
            while not (self.folder / "parent-read").exists() and time.monotonic() < deadline:
                time.sleep(0.005)
        (self.folder / f"{os.getpid()}-{task.index}").touch()
        return b""


@pytest.mark.parametrize("copies", [3, 5])
def test_few_groups_are_shared_among_the_workers_and_the_parent(
    tmp_path: Path, copies: int
) -> None:
    """With no more groups than the workers hold at a time, each worker is handed one at a
    time and the parent reads the others: one worker handed them all read them one after
    the other while the others and the parent waited (the first handing filled each
    worker in turn)."""
    from agent_profiler.loader import LoadResult, plan_inputs
    from agent_profiler.options import ReadOptions
    from agent_profiler.pipeline import GroupTask, _Workers, run_group

    groups = plan_inputs([_many_groups(tmp_path, copies=copies)], None, LoadResult())
    tasks = [GroupTask(i, g, ReadOptions()) for i, g in enumerate(groups)]
    marks = tmp_path / "marks"
    marks.mkdir()
    use = _AfterTheParent(marks, os.getpid())
    # GIVEN two workers (three processes, as `--jobs 3`)
    pool: _Workers[bytes] = _Workers(use, 2)
    try:
        outcomes = list(pool.outcomes(tasks, lambda task: run_group(task, use)))
    finally:
        pool.close()
    readers: dict[str, list[int]] = {}
    for mark in marks.iterdir():
        if mark.name != "parent-read":
            pid, index = mark.name.split("-")
            readers.setdefault(pid, []).append(int(index))
    # THEN every process read a group (the parent one the workers were not handed), each
    # group once, in order
    assert [index for index, _ in outcomes] == list(range(len(tasks)))
    assert sorted(i for found in readers.values() for i in found) == list(range(len(tasks)))
    assert len(readers) == 3, readers
    assert str(os.getpid()) in readers, readers


class _Counted:
    """The parent's end of a worker's pipe, noting each group sent with how many the worker
    held then (sent and not brought back)."""

    def __init__(self, connection: Any, sent: list[tuple[int, int]]) -> None:
        self.connection = connection
        self.sent = sent
        self.held = 0

    def send(self, task: Any) -> None:
        if task is not None:
            self.sent.append((task.index, self.held))
            self.held += 1
        self.connection.send(task)

    def recv(self) -> Any:
        answer = self.connection.recv()
        self.held -= 1
        return answer

    def fileno(self) -> int:
        return int(self.connection.fileno())

    def poll(self, timeout: float = 0.0) -> bool:
        return bool(self.connection.poll(timeout))

    def close(self) -> None:
        self.connection.close()


def test_near_the_end_a_worker_with_a_group_in_hand_is_handed_no_other(tmp_path: Path) -> None:
    """Six groups, one worker. Once no more than IN_FLIGHT are left, a group is sent to the
    worker only when it holds none. The parent's own reads past the third wait until a
    group has come back, so the parent takes it in while groups are still left (handed one
    at every answer, the worker is sent one while it holds one)."""
    from agent_profiler.loader import LoadResult, plan_inputs
    from agent_profiler.options import ReadOptions
    from agent_profiler.pipeline import IN_FLIGHT, GroupTask, _Workers, run_group

    groups = plan_inputs([_many_groups(tmp_path, copies=6)], None, LoadResult())
    tasks = [GroupTask(i, g, ReadOptions()) for i, g in enumerate(groups)]
    marks = tmp_path / "marks"
    marks.mkdir()
    use = _Marking(marks)
    sent: list[tuple[int, int]] = []
    pool: _Workers[bytes] = _Workers(use, 1)
    process, connection = pool.workers[0]
    counted = _Counted(connection, sent)
    pool.workers[0] = (process, counted)

    def local(task: GroupTask) -> Any:
        if task.index >= 3:  # (a group of the worker's back first: at most 20 s)
            counted.poll(20)
        return run_group(task, use)

    try:
        outcomes = list(pool.outcomes(tasks, local))
    finally:
        pool.close()
    assert [index for index, _ in outcomes] == list(range(len(tasks)))
    assert len(list(marks.iterdir())) == len(tasks)
    assert [index for index, _ in sent][:2] == [0, 1]  # (dealt while more than four left)
    near_the_end = [(index, held) for index, held in sent if len(tasks) - index <= IN_FLIGHT]
    assert all(held == 0 for _, held in near_the_end), sent
