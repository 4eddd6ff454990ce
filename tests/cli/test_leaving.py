"""The console script's end (leaving.py): what the command built is not freed object by
object, and the process still ends as the interpreter's own exit would have ended it for
anyone watching: its output flushed, the exit functions run, its code; and it ends the
usual way where that is not safe."""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_profiler import collector, leaving, pipeline
from agent_profiler.exporting import run_export
from agent_profiler.layout import SessionPlan
from agent_profiler.loader import GroupRead
from agent_profiler.options import ReadOptions
from samples import CLAUDE_SMALL, CODEX_SMALL, PI_FORK, SPOTTER_TRANSCRIPT
from shared_paths import TESTS

# A Python program run before leaving.leave(code) in a fresh interpreter: a witness whose
# freeing is said on stderr, kept; a line left in stdout's buffer (a pipe: block-buffered);
# an exit function that says it ran.
PROLOGUE = """
import atexit, sys, threading, time
from agent_profiler import leaving

class Witness:
    def __del__(self):
        sys.stderr.write("freed\\n")
        sys.stderr.flush()

leaving.start()
leaving.keep("group", Witness())
atexit.register(lambda: print("exit function ran"))
sys.stdout.write("in the buffer;")
"""


def run_python(program: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False, timeout=60
    )


@pytest.mark.parametrize(("code", "status"), [(3, 3), (0, 0), (None, 0)])
def test_it_leaves_with_its_code_output_flushed_exit_functions_run_and_nothing_freed(
    code: int | None, status: int
) -> None:
    done = run_python(PROLOGUE + f"leaving.leave({code!r})\nprint('not left')\n")
    assert done.returncode == status, done.stderr
    assert done.stdout == "in the buffer;exit function ran\n"
    assert "freed" not in done.stderr
    assert done.stderr == ""


def test_the_usual_end_frees_what_was_kept() -> None:
    """The witness says it was freed when the process ends the usual way: so its silence
    above means the objects were not freed, not that the witness cannot speak."""
    done = run_python(PROLOGUE + "sys.exit(3)\n")
    assert done.returncode == 3
    assert done.stdout == "in the buffer;exit function ran\n"
    assert "freed" in done.stderr


def test_nothing_is_kept_and_nothing_left_early_unless_started() -> None:
    program = PROLOGUE.replace("leaving.start()\n", "")
    done = run_python(program + "leaving.leave(0)\nprint('went on')\n")
    assert done.returncode == 0
    # the witness was freed at once (not kept), and leave returned
    assert done.stderr.startswith("freed")
    assert done.stdout == "in the buffer;went on\nexit function ran\n"


def test_a_thread_still_running_gets_the_usual_end_which_waits_for_it() -> None:
    program = PROLOGUE + (
        "def late():\n"
        "    time.sleep(0.3)\n"
        "    print('thread done', flush=True)\n"
        "threading.Thread(target=late).start()\n"
        "leaving.leave(4)\n"
        "print('returned;', end='')\n"
        "sys.exit(4)\n"
    )
    done = run_python(program)
    assert done.returncode == 4
    assert done.stdout.startswith("in the buffer;returned;")
    assert "thread done\n" in done.stdout and "exit function ran\n" in done.stdout


def test_an_exit_function_that_starts_a_thread_gets_the_usual_end() -> None:
    program = PROLOGUE + (
        "def late():\n"
        "    time.sleep(0.3)\n"
        "    print('thread done', flush=True)\n"
        "atexit.register(lambda: threading.Thread(target=late).start())\n"
        "leaving.leave(0)\n"
        "print('returned')\n"
    )
    done = run_python(program)
    assert done.returncode == 0
    assert "returned\n" in done.stdout and done.stdout.endswith("thread done\n")


def test_a_message_for_sys_exit_gets_the_usual_end() -> None:
    done = run_python(PROLOGUE + "leaving.leave('error: a message')\nsys.exit('a message')\n")
    assert done.returncode == 1
    assert "a message" in done.stderr


def test_a_stream_that_cannot_be_flushed_gets_the_usual_end() -> None:
    program = PROLOGUE + (
        "import io\n"
        "class Full(io.RawIOBase):\n"
        "    def writable(self): return True\n"
        "    def write(self, data): raise OSError(28, 'No space left on device')\n"
        "sys.stdout = io.TextIOWrapper(io.BufferedWriter(Full()))\n"
        "sys.stdout.write('lost')\n"
        "leaving.leave(0)\n"
        "sys.stderr.write('returned\\n')\n"
    )
    done = run_python(program)
    assert "returned\n" in done.stderr


# --- the same rules in this process (where a mutation run sees them) --------------------


class Left(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


@pytest.fixture
def exits(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """os._exit raises `Left`; the exit functions run are said, pytest's own kept."""
    said: list[str] = []

    def leave(code: int) -> None:
        said.append(f"exit {code}")
        raise Left(code)

    monkeypatch.setattr(leaving.os, "_exit", leave)
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: said.append("exit functions"))
    monkeypatch.setattr(leaving, "_keeping", [True])
    return said


@pytest.mark.parametrize(("code", "status"), [(3, 3), (0, 0), (None, 0)])
def test_leave_runs_the_exit_functions_then_leaves_with_the_code(
    exits: list[str], code: int | None, status: int
) -> None:
    with pytest.raises(Left):
        leaving.leave(code)
    assert exits == ["exit functions", f"exit {status}"]


def test_leave_flushes_stdout_and_stderr_first(
    exits: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Stream:
        """The stream it stands in for, its flushes said (what the test process's own
        tools write meanwhile, pytest's and mutmut's, still goes through)."""

        def __init__(self, name: str) -> None:
            self.name = name
            self.stream = getattr(sys, name)

        def write(self, text: str) -> int:
            return int(self.stream.write(text))

        def flush(self) -> None:
            exits.append(f"flushed {self.name}")

    names = ("stdout", "stderr", "__stdout__", "__stderr__")
    for name in names:
        monkeypatch.setattr(sys, name, Stream(name))
    with pytest.raises(Left):
        leaving.leave(0)
    # (the streams a command wrapped stdout and stderr around too: console.whole_writes)
    assert exits == [f"flushed {name}" for name in names] + ["exit functions", "exit 0"]


@pytest.mark.parametrize("error", [OSError(32, "Broken pipe"), ValueError("closed file")])
def test_leave_returns_where_a_stream_cannot_be_flushed(
    exits: list[str], monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    class Broken:
        def flush(self) -> None:
            raise error

    monkeypatch.setattr(sys, "stderr", Broken())
    leaving.leave(0)
    assert exits == []


def test_leave_returns_unless_started_for_a_message_or_beside_a_thread(
    exits: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    leaving.leave("a message")
    monkeypatch.setattr(leaving, "_keeping", [False])
    leaving.leave(0)
    assert exits == []
    monkeypatch.setattr(leaving, "_keeping", [True])
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        leaving.leave(0)
    finally:
        stop.set()
        thread.join()
    assert exits == []


def test_leave_returns_where_the_interpreter_goes_on_to_its_prompt(
    exits: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -i` (sys.flags.inspect) or PYTHONINSPECT: the prompt comes after the command."""
    import types

    monkeypatch.setenv("PYTHONINSPECT", "1")
    leaving.leave(0)
    monkeypatch.delenv("PYTHONINSPECT")
    monkeypatch.setattr(sys, "flags", types.SimpleNamespace(inspect=1))
    leaving.leave(0)
    assert exits == []
    monkeypatch.setattr(sys, "flags", types.SimpleNamespace(inspect=0))
    with pytest.raises(Left):
        leaving.leave(0)
    assert exits == ["exit functions", "exit 0"]


def test_leave_returns_where_the_exit_functions_cannot_be_run_first(
    exits: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interpreter without atexit's `_run_exitfuncs` (not CPython): the usual end."""
    monkeypatch.delattr(atexit, "_run_exitfuncs")
    leaving.leave(0)
    assert exits == []


def test_leave_returns_where_an_exit_function_started_a_thread(
    exits: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stop = threading.Event()
    started: list[threading.Thread] = []

    def exit_functions() -> None:
        exits.append("exit functions")
        started.append(threading.Thread(target=stop.wait))
        started[0].start()

    monkeypatch.setattr(atexit, "_run_exitfuncs", exit_functions)
    try:
        leaving.leave(0)
    finally:
        stop.set()
        for thread in started:
            thread.join()
    assert exits == ["exit functions"]


def test_keep_holds_the_last_of_each_kind_and_release_lets_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(leaving, "_kept", {})
    leaving.keep("group", "nothing held: not started")
    assert leaving._kept == {}
    monkeypatch.setattr(leaving, "_keeping", [False])
    leaving.start()
    assert leaving._keeping[0]
    leaving.keep("group", "a")
    leaving.keep("plan", "p")
    leaving.keep("group", "b")
    assert leaving._kept == {"group": "b", "plan": "p"}
    leaving.release()
    assert leaving._kept == {}


# --- what the export keeps -------------------------------------------------------------------


def _export(journals: list[Path], out: Path, jobs: int | None = None) -> int:
    """`export JOURNALS -o OUT` through the library (exporting.run_export)."""
    return run_export(
        journals,
        output=out,
        options=ReadOptions(jobs=jobs),
        force=False,
        strict=False,
        format_name=None,
        stdout_is_terminal=lambda: False,
        open_ui=None,
    )


@pytest.fixture
def keeping(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, object]]:
    monkeypatch.setattr(leaving, "_keeping", [True])
    monkeypatch.setattr(leaving, "_kept", {})
    yield leaving._kept
    # An export's last group ends with what exists frozen (collector.none_for_the_last):
    # pytest's own objects too, given back to the collector here
    collector.let_go()


def test_an_export_keeps_the_last_groups_model_and_plan_and_one_group_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keeping: dict[str, object]
) -> None:
    held_at_each_read: list[dict[str, object]] = []
    read_group = pipeline.read_group

    def spy(*args: Any, **kwargs: Any) -> GroupRead:
        held_at_each_read.append(dict(keeping))
        return read_group(*args, **kwargs)

    monkeypatch.setattr(pipeline, "read_group", spy)
    out = tmp_path / "two.pftrace"
    code = _export([CLAUDE_SMALL, CODEX_SMALL], out, jobs=1)
    assert code == 0 and out.stat().st_size > 0
    # each group was read with nothing held: the group before was let go first
    assert held_at_each_read == [{}, {}]
    group, plan = keeping["group"], keeping["plan"]
    assert isinstance(group, GroupRead) and isinstance(plan, SessionPlan)
    # the last group's (the Codex rollout's) model and its session's plan
    assert [s.harness.value for s in group.sessions] == ["codex"]
    assert group.paths == (CODEX_SMALL,)


def test_a_group_of_the_one_pass_starts_with_nothing_held_and_plans_are_kept_once_a_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keeping: dict[str, object]
) -> None:
    """A Pi journal takes the one pass (stream/), not `read_group`: the group before it is
    let go before it too. A group of several sessions (a transcript and its subagent) keeps
    its last session's plan only, once it is written: each plan before it was let go as
    the next one was made."""
    from agent_profiler.stream import group

    held_at_each_pass: list[dict[str, object]] = []
    try_group = group.try_group

    def spy(*args: Any, **kwargs: Any) -> Any:
        held_at_each_pass.append(dict(keeping))
        return try_group(*args, **kwargs)

    kept: list[str] = []
    keep = leaving.keep

    def keeps(kind: str, value: object) -> None:
        kept.append(kind)
        keep(kind, value)

    monkeypatch.setattr(group, "try_group", spy)
    monkeypatch.setattr(leaving, "keep", keeps)
    monkeypatch.setattr("agent_profiler.writers.perfetto.keep", keeps)
    out = tmp_path / "three.pftrace"
    code = _export([SPOTTER_TRANSCRIPT.parent, PI_FORK], out, jobs=1)
    assert code == 0
    assert held_at_each_pass == [{}]  # (the Pi group's: the spotter's was let go first)
    # the spotter group (two sessions): its last plan, then its model; the Pi group's pass
    # keeps nothing
    assert kept == ["plan", "group"]
    assert keeping == {}


def test_an_export_keeps_nothing_outside_the_console_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(leaving, "_kept", {})
    out = tmp_path / "one.pftrace"
    code = _export([CLAUDE_SMALL], out, jobs=1)
    assert code == 0 and leaving._kept == {}


# Put first on PYTHONPATH, it makes os._exit say that it ended the process.
SITECUSTOMIZE = """
import os, sys
_exit = os._exit
def _said(code):
    sys.stderr.write(f"left through os._exit({code})\\n")
    sys.stderr.flush()
    _exit(code)
os._exit = _said
"""


def _run_with_exit_said(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
    source = str(TESTS.parent / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), source])}
    return subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, check=False, env=env, timeout=120
    )


def test_the_console_script_and_python_dash_m_leave_through_os_exit(tmp_path: Path) -> None:
    out = tmp_path / "t.pftrace"
    export = ["export", str(CLAUDE_SMALL), "-o", str(out), "--force"]
    console_script = "import sys\nfrom agent_profiler.entry import console\nconsole()\n"
    for argv in (["-c", console_script, *export], ["-m", "agent_profiler", *export]):
        done = _run_with_exit_said(tmp_path, *argv)
        assert done.returncode == 0, done.stderr
        assert done.stderr.splitlines()[-1] == "left through os._exit(0)", argv
        assert done.stdout.startswith(f"wrote {out} (")
    done = _run_with_exit_said(tmp_path, "-m", "agent_profiler", "summary", str(tmp_path / "x"))
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == "left through os._exit(1)"


def test_python_dash_i_dash_m_goes_on_to_the_prompt(tmp_path: Path) -> None:
    out = tmp_path / "t.pftrace"
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
    source = str(TESTS.parent / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), source])}
    done = subprocess.run(
        [sys.executable, "-i", "-m", "agent_profiler", "export", str(CLAUDE_SMALL), "-o", str(out)],
        input="print('the prompt came')\n",
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=120,
    )
    assert "the prompt came" in done.stdout
    assert "os._exit" not in done.stderr and out.stat().st_size > 0


def test_python_dash_m_run_by_another_program_returns_to_it(tmp_path: Path) -> None:
    """`-m cProfile -m agent_profiler`, `coverage run -m`, an embedder's runpy: the program
    around it goes on when the command is done (its profile written, its `finally` run)."""
    summary = ["summary", str(CLAUDE_SMALL)]
    profile = tmp_path / "p.prof"
    done = _run_with_exit_said(
        tmp_path, "-m", "cProfile", "-o", str(profile), "-m", "agent_profiler", *summary
    )
    assert done.returncode == 0, done.stderr
    assert "os._exit" not in done.stderr and profile.stat().st_size > 0
    embedder = (
        "import runpy, sys\n"
        "sys.argv = ['agent-profiler', *sys.argv[1:]]\n"
        "try:\n"
        "    runpy.run_module('agent_profiler', run_name='__main__')\n"
        "except SystemExit as end:\n"
        "    print('the embedder goes on after', end.code)\n"
    )
    done = _run_with_exit_said(tmp_path, "-c", embedder, *summary)
    assert done.stdout.endswith("the embedder goes on after 0\n")
    assert "os._exit" not in done.stderr


def test_the_installed_command_is_the_console_script() -> None:
    scripts = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"agent-profiler": "agent_profiler.entry:console"}


def test_the_console_export_writes_what_the_library_writes_and_says_it(tmp_path: Path) -> None:
    """Through `python -m agent_profiler` (console, leaving through os._exit): the trace is
    whole, byte for byte the library's, and the `wrote` line and the notes reached the
    pipes they were buffered for."""
    fast, slow = tmp_path / "fast.pftrace", tmp_path / "slow.pftrace"
    command = ["export", str(CLAUDE_SMALL), str(CODEX_SMALL), "-o", str(fast)]
    done = subprocess.run(
        [sys.executable, "-m", "agent_profiler", *command],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {fast} (") and "2 sessions" in done.stdout
    assert "open it:" in done.stderr.splitlines()[-1]
    code = _export([CLAUDE_SMALL, CODEX_SMALL], slow)
    assert code == 0
    assert fast.read_bytes() == slow.read_bytes()
