"""A reading helper (stream/forked.py) whose process is killed outright (SIGKILL, the OOM
killer) ends too, without Linux being asked to kill it (`fork_helper(signalled=False)`):
its pipes end it, at its next message while it reads, or at its wait for the calls the
end reads. It runs with Ctrl-C and SIGTERM no longer held back, and once it is closed what
was frozen for it is thawed, unless a read had frozen it before. (Workers and the other
helpers: tests/dataset/test_orphan_workers.py.)"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from test_codex_forked import forks as forks  # (the fixture)
from test_orphan_workers import _alive, _wait_gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, fork")

# A process that forks a reading helper, says its pid, whether the helper loaded ctypes
# (what asking Linux to kill it would take, 5 ms of its start) and the signals it holds
# back, and is killed. The reading reads forever (a batch every 10 ms) or ends at once (its
# helper then waits for the calls).
PARENT = """
import os, signal, sys, time
from pathlib import Path
from types import SimpleNamespace
from agent_profiler import scan
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.stream import forked
from agent_profiler.writers import runs

def said():
    held = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    return SimpleNamespace(
        entries=[], ctypes="ctypes" in sys.modules, held=",".join(sorted(map(str, map(int, held))))
    )

class Reading:
    def batches(self):
        while sys.argv[2] == "forever":
            time.sleep(0.01)
            yield said()
        yield said()

    def ending(self):
        return "the end"

    def check(self):
        pass

    def finish(self, told):
        raise AssertionError("never asked")

runs.HELPER_MEMORY = 2**40  # (whatever this interpreter holds)
forked.FORK_AFTER = 0
assert "ctypes" not in sys.modules  # (nor does the helper inherit it)
with scan.allowed(True):
    reading = forked.fork_reading(Reading, Path(sys.argv[1]), Diagnostics())
assert reading is not None, "no helper may run here"
batch = next(reading.batches())  # the helper is at work
print(reading.pid, batch.ctypes, batch.held or "none", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("reading", ["forever", "ended"])
def test_the_reading_helper_ends_when_its_process_is_killed(tmp_path: Path, reading: str) -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("no helper can run here (one core)")
    journal = tmp_path / "journal.jsonl"
    journal.write_text("{}\n")
    said = tmp_path / "pid"
    with said.open("w") as out:  # a file, not a pipe: the orphan would hold it open
        parent = subprocess.run(
            [sys.executable, "-c", PARENT, str(journal), reading],
            stdout=out,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            timeout=60,
        )
    assert parent.returncode == -9
    pid, loaded, held = said.read_text().split()
    helper = int(pid)
    assert helper > 0
    left = _wait_gone([helper])
    if left:  # not to leave it behind when the test fails
        os.kill(helper, 9)
    assert left == []
    assert not _alive(helper)
    assert loaded == "False"  # (its pipes end it: no PR_SET_PDEATHSIG asked)
    assert held == "none"  # (held while it was forked: runs.signals_held)


class _Ended:
    """A reading of one batch, which says the signals the helper holds back."""

    def batches(self) -> Any:
        yield SimpleNamespace(entries=[], held=signal.pthread_sigmask(signal.SIG_BLOCK, []))

    def ending(self) -> str:
        return "the end"

    def check(self) -> None:
        pass


@pytest.mark.usefixtures("forks")  # (wherever a helper may run, of any size)
@pytest.mark.parametrize("frozen_before", [False, True])
def test_what_was_frozen_for_the_helper_is_thawed_when_it_is_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, frozen_before: bool
) -> None:
    """Neither process's collector walks what both share while the helper runs (all of it
    frozen at the fork); closed, the helper's reading thaws it, unless a long read had frozen
    it before (collector.let_go thaws that, once the group is used). The helper holds back
    the signals this process did, not the ones held while it was forked (in this process:
    mutmut's runs cannot see a subprocess's helper)."""
    from agent_profiler import collector, scan
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.stream import forked

    monkeypatch.setattr(collector, "_FROZEN", [True] if frozen_before else [])
    monkeypatch.setattr(collector, "_INHERITED", [])
    gc.unfreeze()
    journal = tmp_path / "journal.jsonl"
    journal.write_text("{}\n")
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    with scan.allowed(True):
        reading = forked.fork_reading(_Ended, journal, Diagnostics())
    assert reading is not None
    try:
        (batch,) = reading.batches()
        assert batch.held == mask
        assert reading.ending() == "the end"
        assert gc.get_freeze_count() > 0  # (frozen at the fork)
    finally:
        reading.close()
    assert (gc.get_freeze_count() > 0) is frozen_before
    gc.unfreeze()
