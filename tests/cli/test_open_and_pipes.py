"""`open` accepts any trace this tool writes, no error message suggests an option its command
lacks, and a closed pipe ends a command quietly (issue 15, point 8)."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler import cli, console
from agent_profiler.cli import app
from shared_paths import TESTS

DATA = TESTS / "data" / "journals"
SMALL = DATA / "claude-code" / "handmade" / "small.jsonl"
PI = DATA / "pi" / "pi-mono_large-session_v1.jsonl"
runner = CliRunner()


@pytest.mark.parametrize(
    "name", ["t.pftrace", "t.json", "t.trace.json", "renamed.bin", "pretty.json"]
)
def test_open_serves_every_trace_export_writes(name: str, tmp_path: Path, monkeypatch: Any) -> None:
    # GIVEN a trace written by export, Perfetto or Chrome JSON (a renamed one too, and one
    # pretty-printed as `python -m json.tool` or `jq .` write it: it was read as a journal
    # and refused with "open it with `agent-profiler open pretty.json`", the command run)
    fmt = "json" if "json" in name else "perfetto"
    trace = tmp_path / name
    made = runner.invoke(app, ["export", str(SMALL), "-o", str(trace), "--format", fmt])
    assert made.exit_code == 0, made.stderr
    if name == "renamed.bin":
        json_trace = tmp_path / "j.json"
        runner.invoke(app, ["export", str(SMALL), "-o", str(json_trace)])
        trace.write_bytes(json_trace.read_bytes())
    if name == "pretty.json":
        trace.write_text(json.dumps(json.loads(trace.read_bytes()), indent=4))
    served: list[Path] = []

    def serve_once(path: Path, *, timeout_s: float, on_ready: Any) -> bool:
        served.append(path)
        on_ready(f"https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/{path.name}")
        return True

    monkeypatch.setattr(cli, "serve_once", serve_once)
    # WHEN it is opened
    result = runner.invoke(app, ["open", str(trace), "--no-browser"])
    # THEN it is served as it is, not read as a journal
    assert result.exit_code == 0, result.stderr
    assert served == [trace]
    assert "not a journal" not in result.stderr


def test_open_takes_one_trace_not_a_trace_among_others(tmp_path: Path, monkeypatch: Any) -> None:
    """Two traces, or a trace and a journal: each trace was read as a journal and refused
    with "open it with `agent-profiler open <it>`" (the command just run), and a journal
    beside it was served under the trace's name (`t.pftrace.pftrace`). Now one line, exit 2,
    nothing served."""
    served: list[Path] = []
    monkeypatch.setattr(cli, "serve_once", lambda path, **_: served.append(path) or True)
    trace = tmp_path / "t.pftrace"
    assert runner.invoke(app, ["export", str(SMALL), "-o", str(trace)]).exit_code == 0
    for given in ([trace, trace], [trace, SMALL], [SMALL, trace]):
        result = runner.invoke(app, ["open", *map(str, given), "--no-browser"])
        assert result.exit_code == 2, result.output
        assert result.stderr == (
            f"error: {trace} is a trace: open takes one trace, or journals to export and open "
            f"(open it alone: agent-profiler open {trace})\n"
        )
    assert served == []


def test_open_keeps_its_trace_only_where_export_would_write(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """`open JOURNAL -o FILE` wrote over an existing file without a word (open had no
    --force, and no check), a folder was `Is a directory` (exit 1), and `-o -` wrote a
    file named `-` and served it. It now refuses as export does, and takes --force."""
    served: list[Path] = []

    def serve_once(path: Path, *, timeout_s: float, on_ready: Any) -> bool:
        served.append(path)
        return True

    monkeypatch.setattr(cli, "serve_once", serve_once)
    monkeypatch.chdir(tmp_path)
    kept = tmp_path / "notes.txt"
    kept.write_text("mine\n")
    refused = runner.invoke(app, ["open", str(SMALL), "-o", str(kept), "--no-browser"])
    assert refused.exit_code == 2
    assert refused.stderr == f"error: {kept} exists; pass --force to overwrite it\n"
    assert kept.read_text() == "mine\n"
    folder = runner.invoke(app, ["open", str(SMALL), "-o", str(tmp_path), "--no-browser"])
    assert folder.exit_code == 2
    assert folder.stderr == (
        f"error: {tmp_path} is a folder: name the file to write, "
        f"e.g. -o {tmp_path / 'small.pftrace'}\n"
    )
    dash = runner.invoke(app, ["open", str(SMALL), "-o", "-", "--no-browser"])
    assert dash.exit_code == 2
    assert "open serves a trace file, not stdout" in dash.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert served == []
    forced = runner.invoke(app, ["open", str(SMALL), "-o", str(kept), "--no-browser", "--force"])
    assert forced.exit_code == 0, forced.stderr
    assert served == [kept] and kept.read_bytes()[:1] == b"\x0a"  # a trace now


def test_a_trace_open_could_not_serve_is_kept_to_drag_into_the_ui(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """With port 9001 busy, `open JOURNAL` said "drag /tmp/agent-profiler-…/small.pftrace
    into https://ui.perfetto.dev", a file it deleted as it exited; a trace never fetched in
    time was lost too. Each is kept in the current folder now (never over a file there),
    and said; with -o the trace is where -o put it, and nothing else is written."""
    from agent_profiler.errors import ServeError
    from agent_profiler.serve import ServeError as served_error

    assert served_error is ServeError

    def busy(path: Path, **_: Any) -> bool:
        raise ServeError("port 9001 on 127.0.0.1 is busy")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "serve_once", busy)
    result = runner.invoke(app, ["open", str(SMALL), "--no-browser"])
    assert result.exit_code != 0
    # The cause first, then what is kept of the trace (it was the other way round).
    assert result.stderr.splitlines() == [
        "error: port 9001 on 127.0.0.1 is busy",
        "the trace is kept as small.pftrace: drag it into https://ui.perfetto.dev",
    ]
    kept = tmp_path / "small.pftrace"
    assert kept.read_bytes()[:1] == b"\x0a"  # the trace
    assert "the trace is kept as small.pftrace: drag it into https://ui.perfetto.dev" in (
        result.stderr
    )
    # never over a file of that name: the second try keeps nothing and says nothing of it
    kept.write_text("mine\n")
    again = runner.invoke(app, ["open", str(SMALL), "--no-browser"])
    assert again.exit_code != 0 and "kept as" not in again.stderr
    assert "the trace is not kept: small.pftrace exists here (export it with -o FILE" in (
        again.stderr
    )
    assert kept.read_text() == "mine\n"
    kept.unlink()
    monkeypatch.setattr(cli, "serve_once", lambda path, **_: False)  # not fetched in time
    late = runner.invoke(app, ["open", str(SMALL), "--no-browser", "--timeout", "1"])
    assert late.exit_code == 1 and "kept as small.pftrace" in late.stderr
    assert kept.read_bytes()[:1] == b"\x0a"
    kept.unlink()
    chosen = tmp_path / "chosen.pftrace"
    named = runner.invoke(app, ["open", str(SMALL), "--no-browser", "-o", str(chosen)])
    assert named.exit_code == 1 and "kept as" not in named.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chosen.pftrace"]


def test_summary_names_a_piped_journal_as_given() -> None:
    """`… | summary - --json` gave `source` as the temporary copy's path
    (`../agent-profiler-x1y2/tmpab/stdin`), a file gone when the command ended."""
    result = runner.invoke(app, ["summary", "-", "--json"], input=SMALL.read_bytes())
    assert result.exit_code == 0, result.stderr
    (row,) = json.loads(result.stdout)
    assert row["source"] == "<stdin>"


def test_no_error_message_suggests_an_option_its_command_lacks(tmp_path: Path) -> None:
    # GIVEN inputs that make each command suggest something (an unknown JSONL, an
    # existing output)
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"hello": "world"}\n')
    existing = tmp_path / "exists.pftrace"
    existing.write_bytes(b"x")
    runs = {
        "export": ["export", str(odd), "-o", str(tmp_path / "a.pftrace")],
        "summary": ["summary", str(odd)],
        "report": ["report", str(odd), "-o", str(tmp_path / "a.html")],
        "open": ["open", str(odd), "--no-browser", "--timeout", "1"],
        "export-exists": ["export", str(SMALL), "-o", str(existing)],
        "report-exists": ["report", str(SMALL), "-o", str(existing)],
        "discover": ["discover", "--since", "yesterday"],
    }
    for name, args in runs.items():
        result = runner.invoke(app, args)
        command = args[0]
        options = runner.invoke(app, [command, "--help"]).stdout
        # THEN every --option an error line names is one of that command's options
        for line in result.stderr.splitlines():
            for option in re.findall(r"(?<![\w-])--[a-z][a-z-]*", line):
                assert option in options, f"{name}: {line!r} suggests {option}"


@pytest.mark.parametrize(
    "journal",
    [
        DATA / "gemini-cli" / "entire-ab-2b9748b105-0_session.json",
        DATA
        / "gemini-cli"
        / "tp-tutor-0.39.1-jsonl"
        / "anthonyguera"
        / "chats"
        / "session-2026-04-24T23-16-c8b2cbd9.jsonl",
        DATA / "opencode" / "ses_2bef25635ffe8EzID0I1Oeymal.export.json",
        "opencode.export.json.gz",
    ],
    ids=["gemini-document", "gemini-jsonl", "opencode-export", "opencode-export-gz"],
)
def test_open_exports_gemini_and_opencode_journals(
    journal: Path | str, tmp_path: Path, monkeypatch: Any
) -> None:
    # GIVEN a Gemini CLI session (a JSON document, a JSONL log) or an OpenCode export (a
    # `.json` that is no trace, gzipped too)
    if isinstance(journal, str):
        source = DATA / "opencode" / "ses_2bef25635ffe8EzID0I1Oeymal.export.json"
        journal = tmp_path / journal
        journal.write_bytes(gzip.compress(source.read_bytes()))
    served: list[Path] = []

    def serve_once(path: Path, *, timeout_s: float, on_ready: Any) -> bool:
        served.append(path)
        return True

    monkeypatch.setattr(cli, "serve_once", serve_once)
    # WHEN it is opened
    result = runner.invoke(app, ["open", str(journal), "--no-browser"])
    # THEN it is exported first (not served as if it were a trace), and the trace is served
    assert result.exit_code == 0, result.stderr
    assert len(served) == 1 and served[0] != journal and served[0].suffix == ".pftrace"


def test_open_reads_a_journal_as_a_forced_harness(tmp_path: Path, monkeypatch: Any) -> None:
    # `try --harness` in the loader's message must hold for `open` too
    monkeypatch.setattr(cli, "serve_once", lambda path, **_: True)
    result = runner.invoke(app, ["open", str(PI), "--harness", "pi", "--no-browser"])
    assert result.exit_code == 0, result.stderr


@pytest.mark.slow  # a subprocess per case
@pytest.mark.parametrize(
    "args",
    [
        ["export", str(PI), str(SMALL), "-o", "-"],
        ["export", str(PI), str(SMALL), "-o", "-", "--format", "json"],
        ["summary", str(PI), str(SMALL), "--calls"],
    ],
    ids=["perfetto", "json", "summary"],
)
def test_a_closed_pipe_ends_quietly(args: list[str]) -> None:
    # GIVEN a reader that is gone before anything is written (`| head -c 0`), and stdout
    # buffered as in a user's shell (PYTHONUNBUFFERED, set on some CI runners, would hide
    # the interpreter's last flush into the closed pipe: "Exception ignored", exit 120)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    process = subprocess.Popen(
        [sys.executable, "-m", "agent_profiler", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    stderr = process.stderr.read().decode()
    process.stderr.close()
    code = process.wait(timeout=120)
    # THEN no traceback, no "Exception ignored", no report of a trace written, and the
    # shell's code for a broken pipe (128 + SIGPIPE)
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    assert "wrote stdout" not in stderr
    assert code == console.EXIT_BROKEN_PIPE == 141, (code, stderr)


def test_open_writes_only_a_perfetto_trace(tmp_path: Path, monkeypatch: Any) -> None:
    """`open JOURNAL -o x.json` wrote a protobuf trace into x.json (export would write JSON
    there): refused now, and nothing written."""
    monkeypatch.setattr(cli, "serve_once", lambda path, **_: True)
    for name in ("x.json", "x.trace.json.gz", "x.html"):  # names of other formats
        target = tmp_path / name
        result = runner.invoke(app, ["open", str(SMALL), "-o", str(target), "--no-browser"])
        assert result.exit_code == 2
        assert "open writes a Perfetto trace (-o FILE.pftrace); for Chrome JSON, use export" in (
            result.stderr
        )
        assert list(tmp_path.iterdir()) == []


def test_ctrl_c_while_serving_says_so(tmp_path: Path, monkeypatch: Any) -> None:
    """Ctrl-C while `open` served ended with exit 130 and not a word (Click's own handling);
    every Typer command now says `interrupted`, as export does."""

    def interrupted(path: Path, **_: Any) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "serve_once", interrupted)
    trace = tmp_path / "t.pftrace"
    trace.write_bytes(b"\x0a\x00")
    result = runner.invoke(app, ["open", str(trace), "--no-browser"])
    assert (result.exit_code, result.stderr.splitlines()[-1]) == (130, "interrupted")


def test_a_missing_trace_is_said_as_a_missing_journal_is(tmp_path: Path) -> None:
    result = runner.invoke(app, ["open", str(tmp_path / "nope.pftrace"), "--no-browser"])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'nope.pftrace'}: no such file or directory"
    ]


def test_ctrl_c_while_serving_a_journals_trace_keeps_it(tmp_path: Path, monkeypatch: Any) -> None:
    """The serving line says "Ctrl-C stops", and a trace not fetched is kept: Ctrl-C
    deleted it with the temporary folder, without a word."""

    def interrupted(path: Path, **_: Any) -> bool:
        raise KeyboardInterrupt

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "serve_once", interrupted)
    result = runner.invoke(app, ["open", str(SMALL), "--no-browser"])
    assert result.exit_code == 130
    assert result.stderr.splitlines()[-2:] == [
        "interrupted",
        "the trace is kept as small.pftrace: drag it into https://ui.perfetto.dev",
    ]
    assert (tmp_path / "small.pftrace").read_bytes()[:1] == b"\x0a"
