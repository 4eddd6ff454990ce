"""The command line, in-process: exit codes, the one-line report, errors on stderr,
atomic output, and that a bad input costs only itself."""

from __future__ import annotations

import functools
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler import __version__
from agent_profiler.cli import app
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "claude-code"
SMALL = DATA / "handmade" / "small.jsonl"
SPOTTER_DIR = DATA / "spotter-2.1.39-subagents-compaction"

runner = CliRunner()


def test_export_writes_the_trace_and_reports_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "small.pftrace"
    result = runner.invoke(app, ["export", str(SMALL), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.stat().st_size > 0
    (report,) = [line for line in result.stdout.splitlines() if line.startswith("wrote")]
    assert "1 session (0 subagents)" in report and "6 responses" in report
    assert "2 compactions" in report and "0 warnings" in report
    assert not list(tmp_path.glob(".*.tmp"))  # the temporary file was renamed


def test_existing_output_needs_force(tmp_path: Path) -> None:
    out = tmp_path / "t.pftrace"
    out.write_bytes(b"good trace")
    result = runner.invoke(app, ["export", str(SMALL), "-o", str(out)])
    assert result.exit_code == 2
    assert "exists" in result.stderr and "--force" in result.stderr
    assert out.read_bytes() == b"good trace"
    assert runner.invoke(app, ["export", str(SMALL), "-o", str(out), "--force"]).exit_code == 0
    assert out.read_bytes() != b"good trace"


def test_one_bad_file_among_several_exits_1_and_keeps_the_rest(tmp_path: Path) -> None:
    bad = tmp_path / "notes.jsonl"
    bad.write_text("this is not a journal\nnor is this\n")
    out = tmp_path / "t.pftrace"
    result = runner.invoke(app, ["export", str(bad), str(SMALL), "-o", str(out)])
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: {bad.name}:1: not a JSONL journal (first line is not JSON)"]
    assert out.exists() and "1 session " in result.stdout


def test_nothing_readable_exits_1_without_writing(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    out = tmp_path / "t.pftrace"
    result = runner.invoke(
        app, ["export", str(empty), str(tmp_path / "missing.jsonl"), "-o", str(out)]
    )
    assert result.exit_code == 1
    assert "empty journal" in result.stderr and "no such file" in result.stderr
    assert "nothing to export" in result.stderr
    assert not out.exists()


def test_bad_lines_are_summarised_with_path_and_line(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    text = SMALL.read_text().splitlines()
    text.insert(3, "{not json")
    text.insert(5, "[1, 2")
    journal.write_text("\n".join(text) + "\n")
    result = runner.invoke(app, ["export", str(journal), "-o", str(tmp_path / "t.pftrace")])
    assert result.exit_code == 0
    assert "2 warnings (not-json: 2)" in result.stderr
    # named as given (here: absolute, so by its name), never by its absolute path
    assert f"  {journal.name}:4: not JSON" in result.stderr
    assert f"  {journal.name}:6: not JSON" in result.stderr


def test_directory_export_attaches_subagents(tmp_path: Path) -> None:
    out = tmp_path / "s.pftrace"
    result = runner.invoke(app, ["export", str(SPOTTER_DIR), "-o", str(out)])
    assert result.exit_code == 0
    assert "2 sessions (1 subagent), 155 responses, 1 compaction" in result.stdout


def test_unknown_harness_is_a_usage_error() -> None:
    result = runner.invoke(app, ["export", str(SMALL), "--harness", "nope"])
    assert result.exit_code == 2


@pytest.mark.parametrize("command", ["export", "summary", "report", "open", "collect"])
def test_an_unknown_harness_is_named_with_the_choices(command: str, tmp_path: Path) -> None:
    """It said `Value error, 'claude' is not one of …` (pydantic's words)."""
    args = [command, str(SMALL), "--harness", "claude"]
    result = runner.invoke(
        app, args + (["--to", str(tmp_path / "ds")] if command == "collect" else [])
    )
    assert result.exit_code == 2
    assert (
        "Invalid value for '--harness': 'claude' is not a harness (claude-code, codex, pi, "
        "muse, gemini-cli, opencode)"
    ) in result.output
    assert "Value error" not in result.output


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["discover", "--harness", "claude"],
            "Invalid value for '--harness': 'claude' is not a harness (claude-code, codex, ",
        ),
        (
            ["export", str(SMALL), "--estimate", "tiktoken"],
            "Invalid value for '--estimate': 'tiktoken' is not an estimate (chars/4, calibrated)",
        ),
        (
            ["export", str(SMALL), "--align", "end"],
            "Invalid value for '--align': 'end' is not an alignment (start)",
        ),
        (
            ["summary", str(SMALL), "--jobs", "0"],
            "Invalid value for '--jobs' / '-j': '0' is not a number of processes (1 or more)",
        ),
        (
            ["collect", str(SMALL), "--to", "ds", "-j", "two"],
            "Invalid value for '--jobs' / '-j': 'two' is not a number of processes (1 or more)",
        ),
        (
            ["open", str(SMALL), "--timeout", "0"],
            "Invalid value for '--timeout': '0' is not a number of seconds (1 or more)",
        ),
        (
            ["open", str(SMALL), "--timeout", "soon"],
            "Invalid value for '--timeout': 'soon' is not a number of seconds (1 or more)",
        ),
    ],
    ids=[
        "discover-harness",
        "estimate",
        "align",
        "summary-jobs",
        "collect-jobs",
        "timeout",
        "timeout-word",
    ],
)
def test_a_bad_option_value_is_said_in_the_tools_words(args: list[str], said: str) -> None:
    """Not Typer's validation wording: `Value error, 'claude' is not one of …`, `Input
    should be greater than or equal to 1`, `Input should be a valid integer, unable to
    parse string as an integer`."""
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert said in result.output
    assert "Value error" not in result.output and "Input should" not in result.output


def test_default_output_name_is_the_journal_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["export", str(SMALL)])
    assert result.exit_code == 0
    assert (tmp_path / "small.pftrace").exists()


def test_python_dash_m_and_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agent_profiler", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout.strip() == f"agent-profiler {__version__}"


def test_console_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent_profiler",
            "export",
            str(tmp_path / "none.jsonl"),
            "-o",
            str(tmp_path / "x.pftrace"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "error: none.jsonl: no such file or directory" in done.stderr


def test_same_session_twice_keeps_each_copys_subagent_linked(tmp_path: Path) -> None:
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.loader import load

    copy = tmp_path / "copy"
    import gzip
    import shutil

    shutil.copytree(SPOTTER_DIR, copy)
    # A longer copy of each file (other bytes: the very same bytes are read once)
    for path in copy.rglob("*.jsonl*"):
        data = path.read_bytes()
        gz = path.name.endswith(".gz")
        data = (gzip.decompress(data) if gz else data) + b"\n"
        path.write_bytes(gzip.compress(data) if gz else data)
    sessions = {s.session_id: s for s in load([SPOTTER_DIR, copy], Diagnostics()).sessions}
    main = "258c7280-ae70-4798-800f-63464d01a85d"
    assert set(sessions) == {main, f"{main}/a881341", f"{main}#2", f"{main}/a881341#2"}
    assert sessions[f"{main}/a881341#2"].parent_session == f"{main}#2"
    launcher = next(t for t in sessions[f"{main}#2"].tool_calls if t.child_session)
    assert launcher.child_session == f"{main}/a881341#2"


def test_notes_for_ignored_files_skipped_kinds_and_orphan_subagents(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "notes.txt").write_text("not a journal")
    (folder / "small.jsonl").write_bytes(SMALL.read_bytes())
    result = runner.invoke(app, ["export", str(folder), "-o", str(tmp_path / "t.pftrace")])
    assert result.exit_code == 0
    assert "note: 1 other file in the given folders is not *.jsonl" in result.stderr
    # A .txt file may be a saved `claude -p` stream-json run: read only when named.
    assert "(name a stream-json .txt or .log file directly)" in result.stderr
    # A picture is no such run: the note says only that it was not read.
    (folder / "notes.txt").unlink()
    (folder / "shot.png").write_bytes(b"x")
    picture = runner.invoke(app, ["export", str(folder), "-o", str(tmp_path / "p.pftrace")])
    assert picture.exit_code == 0
    assert (
        "1 other file in the given folders is not *.jsonl, *.jsonl.gz or *.jsonl.zst and was "
        "not read\n"
    ) in picture.stderr, picture.stderr
    # Two: the note counts them in the plural.
    (folder / "shot2.png").write_bytes(b"x")
    two = runner.invoke(app, ["export", str(folder), "-o", str(tmp_path / "q.pftrace")])
    assert two.exit_code == 0
    assert (
        "note: 2 other files in the given folders are not *.jsonl, *.jsonl.gz or *.jsonl.zst and "
        "were not read\n"
    ) in two.stderr, two.stderr
    assert "skipped on purpose (not model input): claude:summary 1" in result.stderr
    agent = (
        SPOTTER_DIR / "258c7280-ae70-4798-800f-63464d01a85d" / "subagents" / "agent-a881341.jsonl"
    )
    alone = runner.invoke(app, ["export", str(agent), "-o", str(tmp_path / "a.pftrace")])
    assert alone.exit_code == 0
    assert "1 warning (parent-not-exported: 1)" in alone.stderr


def test_a_json_document_is_named_for_what_it_is(tmp_path: Path) -> None:
    gemini = tmp_path / "session.json"
    gemini.write_text(json.dumps({"sessionId": "s", "projectHash": "ab", "messages": []}, indent=2))
    other = tmp_path / "config.json"
    other.write_text(json.dumps({"a": [1, 2]}, indent=2))
    result = runner.invoke(
        app, ["export", str(gemini), str(other), "-o", str(tmp_path / "t.pftrace")]
    )
    assert result.exit_code == 1
    # Gemini CLI documents are read now: an empty one has nothing to show.
    assert f"  {gemini.name}: no session records (nothing to show)" in result.stderr
    assert f"error: {other.name}: one JSON document, not a JSONL journal" in result.stderr


def test_a_json_array_on_one_line_is_named_for_what_it_is(tmp_path: Path) -> None:
    """A JSON array of journal records on one line (what `json.dump(records)` writes) was
    `not a journal of a supported harness; try --harness`, and no --harness reads it; a
    pretty-printed one was already `one JSON document, not a JSONL journal`."""
    records = [json.loads(line) for line in SMALL.read_text().splitlines()[:5]]
    array = tmp_path / "array.jsonl"
    array.write_text(json.dumps(records) + "\n")
    result = runner.invoke(app, ["export", str(array), "-o", str(tmp_path / "t.pftrace")])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        f"error: {array.name}: a JSON array, not a JSONL journal (one JSON object per line)"
    )


def test_the_report_title_default_is_the_report_s() -> None:
    """cli says the report's default title itself so that it need not import report."""
    from agent_profiler import cli, report

    assert cli.REPORT_TITLE == report.DEFAULT_TITLE


def _flat(parsed: dict[str, Any] | None) -> dict[str, Any] | None:
    """The fast parser's values as Typer's parameters: its ReadOptions spread out."""
    from agent_profiler.align import AlignChoice

    if parsed is None:
        return None
    options = parsed.pop("options")
    compress = parsed.pop("compress")
    return {
        **parsed,
        "no_compress": not compress,
        "harness": options.harness,
        "estimate": options.estimate,
        "previews": options.previews,
        "jobs": options.jobs,
        "align": AlignChoice.START if options.align else None,
    }


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["a.jsonl", "--open"],
        ["a.jsonl", "--harness", "nope"],
        ["a.jsonl", "--estimate", "nope"],
        ["a.jsonl", "-o"],
        ["a.jsonl", "-o", "x", "-o", "y"],
        ["a.jsonl", "--force", "--force"],
        ["a.jsonl", "--jobs", "0"],
        ["a.jsonl", "-j", "two"],
        ["a.jsonl", "-j", "\u00b3"],  # a digit to str.isdigit(), not to int(): was a traceback
        ["a.jsonl", "--"],
        ["-o", "x.pftrace"],
        [],
    ],
)
def test_the_fast_export_path_leaves_what_it_does_not_know_to_typer(args: list[str]) -> None:
    from agent_profiler.entry import _parse_export

    assert _parse_export(args) is None


def test_the_fast_export_path_parses_like_typer() -> None:
    from agent_profiler.entry import _parse_export
    from agent_profiler.estimate import EstimateChoice
    from agent_profiler.model import Harness

    got = _flat(
        _parse_export(
            ["a.jsonl", "--output=t.json", "b", "--harness", "codex", "--force", "--format", "json"]
        )
    )
    assert got == {
        "journals": [Path("a.jsonl"), Path("b")],
        "output": Path("t.json"),
        "harness": Harness.CODEX,
        "force": True,
        "previews": False,
        "strict": False,
        "format_name": "json",
        "estimate": EstimateChoice.CHARS4,
        "jobs": None,
        "align": None,
        "redact": False,
        "no_compress": False,
    }
    assert _parse_export(["a.jsonl", "--no-compress"])["compress"] is False  # type: ignore[index]
    assert _parse_export(["a.jsonl", "-j", "3"])["options"].jobs == 3  # type: ignore[index]
    assert _parse_export(["a.jsonl", "--jobs=2"])["options"].jobs == 2  # type: ignore[index]
    assert _parse_export(["a.jsonl", "-j", "1"])["options"].jobs == 1  # type: ignore[index]
    # A value may hold "=": the option's name ends at the first one.
    assert _parse_export(["a.jsonl", "--output=a=b.json"])["output"] == Path("a=b.json")  # type: ignore[index]


# The console script's entry point, run as a program: it ends with a line on stderr of its
# exit code and whether Typer was imported.
CONSOLE_SCRIPT = (
    "import sys\n"
    "from agent_profiler.entry import main\n"
    "try:\n"
    "    main()\n"
    "except SystemExit as done:\n"
    "    print('code', done.code, 'typer' in sys.modules, file=sys.stderr)\n"
)


def test_the_console_script_exports_without_typer_and_writes_the_same_bytes(
    tmp_path: Path,
) -> None:
    # GIVEN a plain export run through the console script's entry point
    fast = tmp_path / "fast.pftrace"
    done = subprocess.run(
        [sys.executable, "-c", CONSOLE_SCRIPT, "export", str(SMALL), "-o", str(fast), "--force"],
        capture_output=True,
        text=True,
        check=False,
    )
    # THEN Typer was never imported, and the trace is the Typer command's, byte for byte
    assert done.stderr.splitlines()[-1] == "code 0 False", done.stdout + done.stderr
    assert done.stdout.startswith("wrote ")
    slow = tmp_path / "slow.pftrace"
    assert runner.invoke(app, ["export", str(SMALL), "-o", str(slow)]).exit_code == 0
    assert fast.read_bytes() == slow.read_bytes()


# Tokens an `export` command line is made of: journals (one spelled like a value), every
# option and flag the fast parser knows in both spellings, with values Typer takes and values
# it refuses (a digit that is not ASCII, a zero, an empty value), and words only Typer knows.
_ARGV_TOKENS = [
    "a.jsonl",
    "-",  # standard input (as a journal) or stdout (as -o's value)
    "dir/b",
    "codex",
    "-o",
    "--output",
    "--output=t.json",
    "--output=",
    "x.pftrace",
    "",
    "--harness",
    "--harness=pi",
    "--harness=nope",
    "--estimate",
    "--estimate=calibrated",
    "calibrated",
    "--format",
    "--format=json",
    "json",
    "--jobs",
    "-j",
    "--jobs=2",
    "--jobs=\u0661",  # ARABIC-INDIC DIGIT ONE: str.isdigit() says yes, Typer says no
    "--jobs=\u00b3",  # SUPERSCRIPT THREE: str.isdigit() says yes, int() raises
    "--jobs=0",
    "07",
    "\u0663",
    "--force",
    "--previews",
    "--strict",
    "--no-compress",
    "--open",
    "--",
]


# Tokens a `summary` command line is made of, as _ARGV_TOKENS for `export`.
_SUMMARY_TOKENS = [
    "a.jsonl",
    "-",
    "dir/b",
    "--window",
    "--window=200000",
    "--window=0",
    "--window=\u0661",
    "--window=200k",
    "--window=1.5M",
    "--window=2,000",
    "200000",
    "--calls",
    "--json",
    "--cost",
    "--harness",
    "--harness=codex",
    "--harness=nope",
    "--estimate=calibrated",
    "-j",
    "--jobs=2",
    "--jobs=0",
    "",
    "-o",
    "--force",
    "--",
]


def _flat_summary(parsed: dict[str, Any] | None) -> dict[str, Any] | None:
    """The fast summary parser's values as Typer's parameters."""
    if parsed is None:
        return None
    options = parsed.pop("options")
    assert not options.previews and not options.align  # summary has neither
    return {
        **parsed,
        "harness": options.harness,
        "estimate": options.estimate,
        "jobs": options.jobs,
    }


@functools.cache
def _typer_group() -> Any:
    import typer

    return typer.main.get_command(app)


def _typer_parse(argv: list[str], name: str = "export") -> dict[str, object] | None:
    """What Typer makes of `NAME ARGV`: its parameters, or None when it refuses them."""
    group = _typer_group()
    parent = group.make_context("agent-profiler", [name, *argv])
    command = group.get_command(parent, name)  # type: ignore[attr-defined]
    assert command is not None
    try:
        return dict(command.make_context(name, list(argv), parent=parent).params)
    except Exception:  # its usage errors (the classes are Typer's private copy of Click's)
        return None


@pytest.mark.slow
@pytest.mark.parametrize("command", ["export", "summary"])
def test_the_fast_path_takes_only_what_typer_takes_and_reads_it_the_same(command: str) -> None:
    """Every command line of up to two tokens after a journal, and a sample of three,
    that the fast parser takes, Typer takes too, with the same values: the fast path may
    leave a line to Typer, but never reads one differently or accepts one Typer refuses."""
    import itertools

    from agent_profiler.entry import _parse_export, _parse_summary

    parse, flat, tokens, every = {
        "export": (_parse_export, _flat, _ARGV_TOKENS, 7),
        "summary": (_parse_summary, _flat_summary, _SUMMARY_TOKENS, 5),
    }[command]
    taken = 0
    lines = itertools.chain(
        *(itertools.product(tokens, repeat=n) for n in range(3)),
        itertools.islice(itertools.product(tokens, repeat=3), 0, None, every),
    )
    for tail in lines:
        argv = ["a.jsonl", *tail]
        fast = flat(parse(argv))
        if fast is None:
            continue
        taken += 1
        typer_values = _typer_parse(argv, command)
        assert typer_values is not None, f"Typer refuses {command} {argv!r}, the fast path took it"
        assert typer_values.pop("open_ui", False) is False  # export's --open is Typer's
        assert fast == typer_values, argv
    assert taken > 300  # the fast path was exercised, not just left to Typer


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["a.jsonl", "--window", "0"],
        ["a.jsonl", "--window", "lots"],
        ["a.jsonl", "--window"],
        ["a.jsonl", "--json", "--json"],
        ["a.jsonl", "-o", "x"],  # an export's option
        ["a.jsonl", "--previews"],
        [],
    ],
)
def test_the_fast_summary_path_leaves_what_it_does_not_know_to_typer(args: list[str]) -> None:
    from agent_profiler.entry import _parse_summary

    assert _parse_summary(args) is None


@pytest.mark.parametrize(
    ("given", "expected"),
    [("200000", 200_000), ("200_000", 200_000), ("200,000", 200_000), ("200k", 200_000),
     ("200K", 200_000), ("1m", 1_000_000), ("1.5M", 1_500_000), (" 8k ", 8_000)],
)  # fmt: skip
def test_window_takes_tokens_as_people_write_them(given: str, expected: int) -> None:
    from agent_profiler.options import tokens

    assert tokens(given) == expected
    result = runner.invoke(app, ["summary", str(SMALL), "--json", "--window", given])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[0]["window_tokens"] == expected


@pytest.mark.parametrize("given", ["0", "-5", "lots", "k", "1.5", "1e6", "\u0661", "", "0.0001k"])
def test_a_window_that_is_no_number_of_tokens_is_one_usage_line(given: str) -> None:
    from agent_profiler.options import tokens

    with pytest.raises(ValueError, match="is not a number of tokens"):
        tokens(given)
    for command in ("summary", "report"):
        result = runner.invoke(app, [command, str(SMALL), "--window", given])
        assert result.exit_code == 2
        assert "is not a number of tokens (e.g. 200000 or 200k)" in result.output


CODEX_ROLLOUT = TESTS / "data" / "journals" / "codex"


@pytest.mark.parametrize(
    "flags", [[], ["--json"], ["--calls", "--window", "200000"], ["--cost"], ["--json", "--cost"]]
)
def test_the_console_script_summarises_without_typer_and_says_what_typer_says(
    flags: list[str],
) -> None:
    """`summary` through the console script's entry point never imports Typer, and prints
    what the Typer command prints, on stdout and stderr, with the same exit code: on a
    journal and on one that cannot be read (exit 1, still a row for the other)."""
    missing = str(SMALL.with_name("no-such-journal.jsonl"))
    for journals in ([str(SMALL)], [str(SMALL), missing]):
        done = subprocess.run(
            [sys.executable, "-c", CONSOLE_SCRIPT, "summary", *journals, *flags],
            capture_output=True,
            text=True,
            check=False,
        )
        *said, last = done.stderr.splitlines()
        expected_code = 0 if len(journals) == 1 else 1
        assert last == f"code {expected_code} False", done.stderr
        typer_run = runner.invoke(app, ["summary", *journals, *flags])
        assert typer_run.exit_code == expected_code
        assert done.stdout == typer_run.stdout
        assert said == typer_run.stderr.splitlines()
        assert "session" in done.stdout


def _drain(fifo: Path, into: list[bytes]) -> threading.Thread:
    """A reader at the other end of a named pipe, keeping what it read."""
    reader = threading.Thread(target=lambda: into.append(fifo.read_bytes()), daemon=True)
    reader.start()
    return reader


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize("command", [["export"], ["export", "--format", "json"], ["report"]])
def test_a_pipe_or_device_as_the_output_is_written_in_place(
    tmp_path: Path, command: list[str]
) -> None:
    """`-o /dev/null` replaced /dev/null itself with a regular file (as root: the write to
    a temporary file beside it, then a rename over it). A pipe or a device is now written
    in place, without --force, and stays what it was. (A named pipe stands in for
    /dev/null here: the same path through the code, and no harm if it broke again.)"""
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _drain(fifo, got)
    result = runner.invoke(app, [*command, str(SMALL), "-o", str(fifo)])
    reader.join(timeout=30)
    assert result.exit_code == 0, result.output + result.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # still the pipe
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary file left
    (written,) = got
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("wrote")]
    assert line.startswith(f"wrote {fifo} (") and len(written) > 1000
    assert "open it" not in result.output + result.stderr  # nothing to open afterwards
    if command == ["export"]:
        assert written[:1] == b"\x0a"  # a TracePacket, as to a file


@pytest.mark.skipif(not Path("/dev/stdout").is_symlink(), reason="needs /dev/stdout")
@pytest.mark.parametrize("command", ["export", "report"])
def test_dev_stdout_as_the_output_is_stdout(tmp_path: Path, command: str) -> None:
    """`-o /dev/stdout` with stdout redirected to a file was refused as an existing file;
    with --force it renamed the output over /dev/stdout itself (as root: the system's
    symlink became a regular file) and the file the shell opened stayed empty. Given to a
    pipe or a terminal, the closing `wrote …` line landed inside the output. It is now
    written as `-o -` is, with the closing line on stderr. (No --force here: a regression
    is a refusal, never a replaced /dev/stdout.)"""
    captured = tmp_path / "captured"
    with captured.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "agent_profiler", command, str(SMALL), "-o", "/dev/stdout"],
            stdout=stdout,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert Path("/dev/stdout").is_symlink()
    written = captured.read_bytes()
    assert b"wrote" not in written
    assert done.stderr.decode().startswith("wrote stdout: 1 session (0 subagents)")
    if command == "export":
        assert written[:1] == b"\x0a" and len(written) > 1000  # a TracePacket, whole
    else:
        assert written.rstrip().endswith(b"</html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["captured"]


@pytest.mark.skipif(not Path("/dev/stderr").is_symlink(), reason="needs /dev/stderr")
def test_dev_stderr_as_the_output_is_refused(tmp_path: Path) -> None:
    """`-o /dev/stderr --force` with stderr in a file renamed the trace over /dev/stderr
    itself (as root). It is refused now, by name. (No --force: a regression is the
    `exists` refusal, never a replaced /dev/stderr.)"""
    log = tmp_path / "err.log"
    with log.open("wb") as stderr:
        done = subprocess.run(
            [sys.executable, "-m", "agent_profiler", "export", str(SMALL), "-o", "/dev/stderr"],
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=tmp_path,
            check=False,
        )
    assert done.returncode == 2
    assert Path("/dev/stderr").is_symlink()
    assert log.read_text() == (
        "error: /dev/stderr is this command's standard input or error: name a file "
        "(or -o - for stdout)\n"
    )


def test_dev_null_as_the_output_is_written_when_it_is_also_stdin(tmp_path: Path) -> None:
    """`export … -o /dev/null < /dev/null` (a script, cron, CI) was refused as "this
    command's standard input"; the null device is harmless under any name."""
    with open(os.devnull, "rb") as null:
        done = subprocess.run(
            [sys.executable, "-m", "agent_profiler", "export", str(SMALL), "-o", "/dev/null"],
            stdin=null,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("wrote /dev/null")
    assert list(tmp_path.iterdir()) == []


def test_report_and_fleet_write_dash_to_stdout(tmp_path: Path, monkeypatch: Any) -> None:
    """`report -o -` and `fleet --html -` wrote a file named `-` (export's `-o -` is
    stdout); a folder given to --html was `h: Is a directory` (exit 1) where every other
    command names the file to give."""
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["report", str(SMALL), "-o", "-"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("<!") and result.stdout.rstrip().endswith("</html>")
    assert result.stderr == "wrote stdout: 1 session (0 subagents)\n"
    dataset = tmp_path / "ds"
    assert runner.invoke(app, ["collect", str(SMALL), "--to", str(dataset)]).exit_code == 0
    result = runner.invoke(app, ["fleet", str(dataset), "--html", "-"])
    assert result.exit_code == 0, result.stderr
    assert "<svg" in result.stdout and result.stdout.rstrip().endswith("</html>")
    assert result.stderr.startswith("wrote stdout (")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]
    both = runner.invoke(app, ["fleet", str(dataset), "--html", "-", "--json"])
    assert both.exit_code == 2 and "both write to stdout" in both.stderr
    folder = runner.invoke(app, ["fleet", str(dataset), "--html", str(dataset)])
    assert folder.exit_code == 2
    assert folder.stderr == (
        f"error: {dataset} is a folder: name the file to write, e.g. --html "
        f"{dataset / 'fleet.html'}\n"
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_pipe_inside_a_folder_is_named_not_waited_on(tmp_path: Path) -> None:
    """A named pipe in a walked folder (`x.jsonl`, or `x.json`, which is opened to see
    whose session it is) was opened like a journal and the export waited for a writer
    forever. A pipe named on the command line is still read; one in a folder is now an
    error naming it, and the folder's journals are exported."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copy(SMALL, folder / "small.jsonl")
    for name in ("pipe.jsonl", "pipe.json", "control"):
        os.mkfifo(folder / name)
    done = subprocess.run(
        [sys.executable, "-m", "agent_profiler", "export", str(folder), "-o", "t.pftrace"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    why = "not a regular file (a pipe, a socket or a device): not read in a folder walk"
    assert [line for line in done.stderr.splitlines() if why in line] == [
        f"error: sessions/{name}: {why}" for name in ("pipe.json", "pipe.jsonl")
    ]
    assert "note: 1 other file in" in done.stderr  # `control`: not a journal's name
    assert done.stdout.startswith("wrote t.pftrace")


def test_the_open_hint_is_quoted_for_the_shell(tmp_path: Path, monkeypatch: Any) -> None:
    """`open it: agent-profiler open my #1 run.pftrace` was printed bare: pasted into a
    shell, `#` began a comment and the command opened `my`."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(SMALL, tmp_path / "my #1 run.jsonl")
    result = runner.invoke(app, ["export", "my #1 run.jsonl"])
    assert result.exit_code == 0, result.stderr
    assert "open it: agent-profiler open 'my #1 run.pftrace'  (or drag" in result.stderr


def test_a_folder_as_the_output_is_refused_by_name(tmp_path: Path) -> None:
    for command, written in (("export", "small.pftrace"), ("report", "small.html")):
        result = runner.invoke(app, [command, str(SMALL), "-o", str(tmp_path)])
        assert result.exit_code == 2
        assert result.stderr == (
            f"error: {tmp_path} is a folder: name the file to write, e.g. -o {tmp_path / written}\n"
        )
        assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_open_needs_a_trace_file(tmp_path: Path) -> None:
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    for output in (str(fifo), "-"):
        result = runner.invoke(app, ["export", str(SMALL), "-o", output, "--open"])
        assert result.exit_code == 2
        assert result.stderr == (
            f"error: --open needs a trace file, and {output} is a pipe or a device\n"
        )


def test_a_journal_being_read_is_never_the_output_even_with_force(tmp_path: Path) -> None:
    """`export x.jsonl -o x.jsonl --force` wrote the trace over the journal: the one copy
    of the session, gone. A journal the command reads (named, or found in a named folder)
    is refused as its output, --force or not; other files in that folder are not."""
    journal = tmp_path / "a.jsonl"
    journal.write_bytes(SMALL.read_bytes())
    for command, inputs, output in (
        ("export", [journal], journal),
        ("export", [tmp_path], journal),
        ("export", [tmp_path], tmp_path / ".." / tmp_path.name / "a.jsonl"),
        ("report", [journal], journal),
    ):
        result = runner.invoke(app, [command, *map(str, inputs), "-o", str(output), "--force"])
        assert result.exit_code == 2, (command, inputs, output)
        assert result.stderr == (
            f"error: {output} is a journal this reads: write the output somewhere else\n"
        )
        assert journal.read_bytes() == SMALL.read_bytes()
    # a file in the folder that is not a journal may still be overwritten with --force
    other = tmp_path / "old.pftrace"
    other.write_bytes(b"an older trace")
    result = runner.invoke(app, ["export", str(tmp_path), "-o", str(other), "--force"])
    assert result.exit_code == 0, result.output + result.stderr
    assert other.read_bytes()[:1] == b"\x0a"


@pytest.mark.parametrize("command", [["export"], ["export", "--format", "json"], ["report"]])
def test_a_subagent_file_read_with_its_session_is_never_the_output(
    tmp_path: Path, command: list[str]
) -> None:
    # GIVEN a Claude Code session whose subagent file is found beside it (not named)
    shutil.copytree(SPOTTER_DIR, tmp_path / "s")
    (main,) = (tmp_path / "s").glob("*.jsonl*")
    (subagent,) = (tmp_path / "s").rglob("agent-a881341.jsonl")
    before = subagent.read_bytes()
    # WHEN it is named as the output, with --force
    result = runner.invoke(app, [*command, str(main), "-o", str(subagent), "--force"])
    # THEN it is refused after reading, and the subagent's journal is as it was
    assert result.exit_code == 2, result.output + result.stderr
    assert result.stderr.endswith(
        f"error: {subagent} is a journal this reads: write the output somewhere else\n"
    )
    assert subagent.read_bytes() == before


def test_an_output_named_like_an_option_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`export x.jsonl -o --force` wrote a trace named `--force`, `fleet ds --html -o
    page.html` a page named `-o`: the output's name was left out and the next word taken
    for it. Each is one usage line now, and nothing is written; `fleet -o` writes the page,
    as every other command's -o does; a dash-named file given by its path is written."""
    monkeypatch.chdir(tmp_path)
    dataset = tmp_path / "ds"
    assert runner.invoke(app, ["collect", str(SMALL), "--to", str(dataset)]).exit_code == 0
    for argv, said in (
        (["export", str(SMALL), "-o", "--force"], "-o --force: --force looks like an option"),
        (["report", str(SMALL), "-o", "--cost"], "-o --cost: --cost looks like an option"),
        (["open", str(SMALL), "-o", "--no-browser"], "-o --no-browser: --no-browser looks"),
        (["fleet", str(dataset), "--html", "-o"], "--html -o: -o looks like an option"),
        (["collect", str(SMALL), "--to", "--jobs"], "--to --jobs: --jobs looks like an option"),
    ):
        result = runner.invoke(app, argv)
        assert result.exit_code == 2, (argv, result.stderr)
        assert result.stderr.startswith(f"error: {said}"), result.stderr
        assert "give its full path" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]
    page = runner.invoke(app, ["fleet", str(dataset), "-o", "p.html"])
    assert page.exit_code == 0, page.stderr
    assert (tmp_path / "p.html").read_text().startswith("<!doctype html>")
    named = runner.invoke(app, ["export", str(SMALL), "-o", str(tmp_path / "--force")])
    assert named.exit_code == 0 and (tmp_path / "--force").stat().st_size > 0
