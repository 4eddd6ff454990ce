"""The one pass inside an export: what it writes depends on nothing but the journal (the
same bytes twice, and with worker processes), says no more of the machine than the model
path (no user's path), and a journal the pass is unsure of (a v1 header written after its
first entries, the cwd not known yet) comes out as the model path's."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from test_pi_stream_cases import both
from typer.testing import CliRunner

from agent_profiler import stream
from agent_profiler.cli import app
from samples import CLAUDE_SMALL, CODEX_SMALL
from shared_paths import TESTS
from traceview import load_trace

sys.path.insert(0, str(TESTS / "adapters" / "pi"))
from test_pi import Journal

FIRST_25 = TESTS / "data" / "journals" / "pi" / "pi-mono_large-session_v1_first-25-lines.jsonl"


def session_with_paths(
    cwd: str, session_id: str = "11111111-2222-4333-8444-555555555555"
) -> Journal:
    j = Journal()
    j.lines[0]["cwd"] = cwd
    j.lines[0]["id"] = session_id
    u1 = j.user(None, "read the parser")
    a1 = j.assistant(u1, "", 2_000, calls=(("c1", "read"), ("c2", "read")))
    j.lines[-1]["message"]["content"][0]["arguments"] = {"path": f"{cwd}/src/parser.py"}
    j.lines[-1]["message"]["content"][1]["arguments"] = {"path": "/home/alice/.ssh/config"}
    r1 = j.result(a1, "c1", "x" * 3_000)
    r2 = j.result(r1, "c2", "y" * 100)
    j.assistant(r2, "done", 3_000)
    return j


def test_no_user_path_in_the_pass_trace(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = session_with_paths("/home/alice/work/demo").write(tmp_path / "private.jsonl")
    assert both(journal, export_trace, monkeypatch)
    monkeypatch.setenv(stream.SWITCH, "1")
    got = export_trace(journal, args=("--no-compress",), require_addition=False)
    assert b"alice" not in got.path.read_bytes()
    assert any("parser.py" in str(s.args) for s in got.view.slices)


def test_a_v1_header_dated_after_the_first_entries(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a v1 file whose header (with the cwd) was written at the first save, dated
    # after its first prompt and request, whose call reads a file under the cwd
    j = Journal(version=1)
    j.lines[0]["cwd"] = "/home/alice/work/demo"
    j.user(None, "read it")
    j.assistant(None, "", 2_000, calls=(("c1", "read"),))
    j.lines[-1]["message"]["content"][0]["arguments"] = {"path": "/home/alice/work/demo/a.py"}
    j.result(None, "c1", "x" * 300)
    j.assistant(None, "done", 2_100)
    j.lines[0]["timestamp"] = j.lines[3]["timestamp"]
    # THEN the pass writes what the model path writes (the session starts at its first entry)
    assert both(j.write(tmp_path / "late-header.jsonl"), export_trace, monkeypatch)


def run_export(folder: Path, out: Path, *args: str) -> bytes:
    result = CliRunner().invoke(app, ["export", str(folder), "-o", str(out), "--force", *args])
    assert result.exit_code == 0, result.output
    return out.read_bytes()


def test_the_same_bytes_twice_and_with_worker_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copy(FIRST_25, folder / FIRST_25.name)
    session_with_paths("/work/a", "aaaaaaaa-2222-4333-8444-555555555555").write(folder / "a.jsonl")
    session_with_paths("/work/b", "bbbbbbbb-2222-4333-8444-555555555555").write(folder / "b.jsonl")
    monkeypatch.setenv(stream.SWITCH, "1")
    once = run_export(folder, tmp_path / "1.pftrace", "--jobs", "1")
    again = run_export(folder, tmp_path / "2.pftrace", "--jobs", "1")
    workers = run_export(folder, tmp_path / "3.pftrace", "--jobs", "2")
    assert once == again == workers
    view = load_trace(tmp_path / "1.pftrace")
    assert len(view.captures()) == 3


def test_a_bug_in_the_pass_costs_nothing(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_profiler.stream import pi as stream_pi

    def broken(self: Any, *args: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(stream_pi.PiPass, "_write", broken)
    journal = session_with_paths("/work/demo").write(tmp_path / "bug.jsonl")
    # THEN the model path writes the group, as without the switch
    assert not both(journal, export_trace, monkeypatch)


def test_a_damaged_line_is_said_the_same_way(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = session_with_paths("/work/demo").write(tmp_path / "damaged.jsonl")
    lines = journal.read_text().splitlines(keepends=True)
    lines.insert(3, '{"type": "message", "timestamp": \n')
    journal.write_text("".join(lines))
    # THEN the same warning, the same trace
    assert both(journal, export_trace, monkeypatch)


def test_the_pass_deflates_on_a_thread_only_into_the_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As the model path's writer (writers/chunks.py): a group read by a folder's worker
    (its bytes sent back, `out` None) deflates where it is encoded, every core being
    busy; a group written into the output may use a thread."""
    import io

    from agent_profiler.loader import LoadResult, plan_inputs
    from agent_profiler.options import ReadOptions
    from agent_profiler.pipeline import EncodeTrace, GroupTask
    from agent_profiler.stream.group import try_group
    from agent_profiler.writers import TraceFacts, chunks

    made: list[bool] = []
    init = chunks.PacketSink.__init__

    def spied(sink: Any, *args: Any, **keywords: Any) -> None:
        init(sink, *args, **keywords)
        made.append(sink.threaded)

    monkeypatch.setattr(chunks.PacketSink, "__init__", spied)
    (group,) = plan_inputs([FIRST_25], None, LoadResult())
    task = GroupTask(0, group, ReadOptions())
    for out, threaded in ((io.BytesIO(), True), (None, False)):
        made.clear()
        outcome = try_group(task, EncodeTrace(TraceFacts()), {}, out, None)
        assert outcome is not None, "the pass took the group"
        assert made == [threaded, threaded]  # the requests' sink and the head's


@pytest.mark.parametrize(
    ("kind", "journal"),
    [
        ("PiPass", FIRST_25),
        ("CodexPass", CODEX_SMALL),
        ("ClaudePass", CLAUDE_SMALL),
    ],
)
def test_a_pass_is_let_go_once_its_group_is_written(
    kind: str, journal: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass holds its own bound methods (its calls' bookkeeping): a cycle, which kept its
    whole state (the reader's entries, the log's items) until the cycle collector's next
    full collection, group after group of a folder. It is let go as its group ends."""
    import gc
    import weakref

    from agent_profiler.stream import claude, codex, pi

    cls = {"PiPass": pi.PiPass, "CodexPass": codex.CodexPass, "ClaudePass": claude.ClaudePass}[kind]
    passes: list[weakref.ref[Any]] = []
    init = cls.__init__

    def spied(self: Any, *args: Any, **keywords: Any) -> None:
        init(self, *args, **keywords)
        passes.append(weakref.ref(self))

    monkeypatch.setattr(cls, "__init__", spied)
    monkeypatch.setenv(stream.SWITCH, "1")
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        run_export(journal, tmp_path / "t.pftrace", "--jobs", "1")
        assert len(passes) == 1
        assert passes[0]() is None  # freed without a collection
        # and nothing of the reading it did is left for the collector: no builder, no
        # draft, no log item in a cycle
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = {
            type(thing).__qualname__
            for thing in gc.garbage
            if type(thing).__module__.startswith(
                ("agent_profiler.stream", "agent_profiler.adapters")
            )
            or type(thing).__qualname__ in {"Item", "Response", "Usage"}
        }
        assert not left
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()


@pytest.mark.parametrize(
    "option",
    [
        ("--previews",),
        ("--redact",),
        ("--estimate", "calibrated"),
        ("--harness", "pi"),
        ("--align", "start"),
    ],
)
def test_an_option_the_pass_does_not_write_is_read_the_usual_way(
    option: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a Pi session with tool calls (which the pass takes by default)
    folder = tmp_path / "sessions"
    folder.mkdir()
    session_with_paths("/work/a").write(folder / "a.jsonl")
    monkeypatch.setenv(stream.SWITCH, "0")
    model = run_export(folder, tmp_path / "model.pftrace", "--jobs", "1", *option)
    model_default = run_export(folder, tmp_path / "model-default.pftrace", "--jobs", "1")
    monkeypatch.setenv(stream.SWITCH, "1")
    # (without the option the pass takes it: its bytes differ from the model path's, at
    # least in their order)
    assert run_export(folder, tmp_path / "default.pftrace", "--jobs", "1") != model_default
    # WHEN exported with an option the pass does not write (stream/group.py `handles`)
    got = run_export(folder, tmp_path / "got.pftrace", "--jobs", "1", *option)
    # THEN the model path's bytes
    assert got == model
