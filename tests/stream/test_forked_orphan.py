"""A reading helper (stream/forked.py) whose process is killed outright (SIGKILL, the OOM
killer) ends too, without Linux being asked to kill it (`fork_helper(signalled=False)`):
its pipes end it, at its next message while it reads, or at its wait for the calls the
end reads. (Workers and the other helpers: tests/dataset/test_orphan_workers.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_orphan_workers import _alive, _wait_gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, fork")

# A process that forks a reading helper, says its pid and whether the helper loaded ctypes
# (what asking Linux to kill it would take, 5 ms of its start), and is killed. The reading
# reads forever (a batch every 10 ms) or ends at once (its helper then waits for the calls).
PARENT = """
import os, signal, sys, time
from pathlib import Path
from types import SimpleNamespace
from agent_profiler import scan
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.stream import forked
from agent_profiler.writers import runs

class Reading:
    def batches(self):
        while sys.argv[2] == "forever":
            time.sleep(0.01)
            yield SimpleNamespace(entries=[], ctypes="ctypes" in sys.modules)
        yield SimpleNamespace(entries=[], ctypes="ctypes" in sys.modules)

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
print(reading.pid, batch.ctypes, flush=True)
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
    pid, loaded = said.read_text().split()
    helper = int(pid)
    assert helper > 0
    left = _wait_gone([helper])
    if left:  # not to leave it behind when the test fails
        os.kill(helper, 9)
    assert left == []
    assert not _alive(helper)
    assert loaded == "False"  # (its pipes end it: no PR_SET_PDEATHSIG asked)
