"""loader.py's own rules, in this process (the command-line tests that also reach them run
the tool in a subprocess, where a mutation run cannot see): what a folder walk counts, the
failures of inputs that are not journals, and the warning for a subagent without its parent."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import LoadResult, expand, load, plan, warn_missing_parents
from samples import CLAUDE_SMALL, CODEX_SMALL, DATA


def test_a_folder_walk_reads_journals_counts_other_files_and_skips_members(
    tmp_path: Path,
) -> None:
    # GIVEN a folder with a journal, two unrelated files, a sidecar, and an OpenCode
    # database with its write-ahead log (a member: read with the database, not counted)
    shutil.copy(CLAUDE_SMALL, tmp_path / "a.jsonl")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "image.png").write_bytes(b"x")
    (tmp_path / "a.meta.json").write_text("{}")
    (tmp_path / "opencode.db").write_bytes(b"")
    (tmp_path / "opencode.db-wal").write_bytes(b"")
    files, failures, ignored, logs, _ = expand([tmp_path])
    assert [f.name for f in files] == ["a.jsonl", "opencode.db"]
    assert failures == []
    assert ignored == 2  # notes.txt and image.png: the sidecar and the member are not others
    assert logs == 1  # notes.txt, which could be a saved stream-json run


def test_inputs_that_are_not_journals_fail_by_name(tmp_path: Path) -> None:
    missing = tmp_path / "gone.jsonl"
    empty_folder = tmp_path / "empty"
    empty_folder.mkdir()
    files, failures, _, _, _ = expand([missing, empty_folder])
    assert files == []
    assert [(f.path, f.message) for f in failures] == [
        (str(missing), "no such file or directory"),
        (
            str(empty_folder),
            "no journals found (*.jsonl, *.jsonl.gz, *.jsonl.zst, Gemini CLI sessions, "
            "OpenCode files)",
        ),
    ]
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n\n")
    groups, failures = plan([blank], None)
    assert groups == []
    assert [(f.path, f.message) for f in failures] == [(str(blank), "empty journal (no records)")]


def test_a_subagent_whose_parent_is_not_exported_is_one_warning_naming_it() -> None:
    diagnostics = Diagnostics()
    warn_missing_parents(
        [
            ("child", "parent", "c.jsonl"),
            ("parent-here", None, "p.jsonl"),
            ("kid", "parent-here", "k"),
        ],
        diagnostics,
    )
    assert [(w.path, w.kind, w.message) for w in diagnostics.warnings] == [
        (
            "c.jsonl",
            "parent-not-exported",
            "subagent child: its parent session is not among the journals read (pass the parent "
            "journal or its folder to link them)",
        )
    ]


def test_load_reads_every_group_and_names_what_it_could_not(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json at all\n")
    result = load([DATA / "codex", bad], Diagnostics())
    assert len(result.sessions) == 4
    assert {p.name for p in result.files} == {p.name for p in (DATA / "codex").iterdir()} - {
        "SOURCES.md"
    }
    assert [f.path for f in result.failures] == [str(bad)]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_pipe_named_as_an_input_is_read_whole_from_a_copy(tmp_path: Path) -> None:
    """A pipe gives its bytes once, and a journal is opened more than once (sniffed, then
    read): `export <(zcat x.jsonl.gz)` read nothing ("no session records"). It is now
    copied once to a temporary file, and read as the file it came from is."""
    # GIVEN a named pipe that a writer fills with a Claude Code journal
    fifo = tmp_path / "journal-pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(
        target=lambda: fifo.write_bytes(CLAUDE_SMALL.read_bytes()), daemon=True
    )
    writer.start()
    # WHEN it is loaded (in a thread: read twice, a pipe blocks the second open for good)
    results: list[LoadResult] = []
    reader = threading.Thread(target=lambda: results.append(load([fifo], Diagnostics())))
    reader.daemon = True
    reader.start()
    reader.join(timeout=30)
    assert not reader.is_alive(), "reading the pipe hung: it was opened a second time"
    (result,) = results
    # THEN it holds what the journal holds, read from a copy that keeps the pipe's name
    (copy,) = result.files
    assert result.copies == [(str(fifo), copy)]
    assert copy.name == "journal-pipe" and copy.read_bytes() == CLAUDE_SMALL.read_bytes()
    from_file = load([CLAUDE_SMALL], Diagnostics())
    assert [len(s.responses) for s in result.sessions] == [6]
    assert [s.responses for s in result.sessions] == [s.responses for s in from_file.sessions]
    assert [s.snapshots for s in result.sessions] == [s.snapshots for s in from_file.sessions]


def test_stdin_as_an_input_is_read_and_its_copy_removed_at_the_end(tmp_path: Path) -> None:
    # GIVEN `cat journal | agent-profiler export /dev/stdin`, the journal ending in a bad
    # line, with its own temporary folder
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    out = tmp_path / "t.pftrace"
    run = subprocess.run(
        [sys.executable, "-m", "agent_profiler", "export", "/dev/stdin", "-o", str(out)],
        input=CLAUDE_SMALL.read_bytes() + b"{bad\n",
        capture_output=True,
        env={**os.environ, "TMPDIR": str(temporary)},
        timeout=60,
    )
    # THEN the trace holds the session, the warning names the input as the user did (not
    # its copy), and the copy is gone
    assert run.returncode == 0, run.stderr
    assert b"1 session (0 subagents)" in run.stdout and b"6 responses" in run.stdout
    warnings = run.stderr.decode().splitlines()
    assert (
        "  /dev/stdin:21: not JSON (unexpected character, expected a string key at column 2)"
        in (warnings)
    )
    assert not any(str(temporary) in line for line in warnings)
    assert out.stat().st_size > 0
    assert list(temporary.iterdir()) == []


def test_a_dash_reads_standard_input_once_into_a_trace_named_after_it(tmp_path: Path) -> None:
    # GIVEN `cat journal | agent-profiler export - -` (the dash twice), run in an empty folder
    run = subprocess.run(
        [sys.executable, "-m", "agent_profiler", "export", "-", "-"],
        input=CLAUDE_SMALL.read_bytes() + b"{bad\n",
        capture_output=True,
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        timeout=60,
    )
    # THEN standard input is read once (the second dash adds nothing), the trace is named
    # after it, its warning says `<stdin>`, and the copy is gone
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(b"wrote stdin.pftrace (") and b" 1 session " in run.stdout
    assert b"  <stdin>:21: not JSON" in run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stdin.pftrace"]


def test_a_dash_twice_is_one_copy_of_standard_input_named_stdin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(CLAUDE_SMALL.read_bytes())))
    files, failures, _, _, copies = expand([Path("-"), Path("-")])
    (copy,) = files
    assert failures == [] and copies == [("<stdin>", copy)]
    assert copy.name == "stdin" and copy.read_bytes() == CLAUDE_SMALL.read_bytes()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_two_pipes_of_one_name_are_two_copies(tmp_path: Path) -> None:
    # GIVEN two named pipes called `pipe`, in two folders, giving different journals
    given = {}
    for folder, source in (("a", CLAUDE_SMALL), ("b", CODEX_SMALL)):
        (tmp_path / folder).mkdir()
        fifo = tmp_path / folder / "pipe"
        os.mkfifo(fifo)
        given[fifo] = source.read_bytes()
        threading.Thread(target=fifo.write_bytes, args=(given[fifo],), daemon=True).start()
    # WHEN both are expanded THEN each has a copy of its own, holding what it gave
    files, failures, _, _, copies = expand(list(given))
    assert failures == [] and [given_name for given_name, _ in copies] == list(map(str, given))
    assert [f.read_bytes() for f in files] == list(given.values())


def test_what_is_not_a_journal_on_standard_input_is_named_stdin(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "agent_profiler", "export", "-", "-o", str(tmp_path / "t")],
        input=b"hello\n",
        capture_output=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        timeout=60,
    )
    assert run.returncode == 1
    assert run.stderr.decode().splitlines() == [
        "error: <stdin>:1: not a JSONL journal (first line is not JSON)",
        "error: nothing to export (no readable sessions)",
    ]
    assert list(tmp_path.iterdir()) == []
