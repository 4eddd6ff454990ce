"""The command line. The only module that knows about Typer, stdout/stderr and
exit codes: 0 success, 1 some input could not be used (the output is still
written for the rest), 2 usage error."""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, ParamSpec, TypeVar

import orjson
import typer

from agent_profiler import __version__
from agent_profiler.adapters import JournalGroup
from agent_profiler.adapters.common import timestamp_ns
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.discover import discover as find_journals
from agent_profiler.errors import AgentProfilerError, OutputError, UsageError
from agent_profiler.estimate import EstimateChoice, named, use_estimator
from agent_profiler.loader import LoadResult, load
from agent_profiler.model import Harness, Session
from agent_profiler.report import DEFAULT_TITLE, HtmlReportWriter
from agent_profiler.serve import serve_once
from agent_profiler.summary import render_calls, render_table, summarise_all
from agent_profiler.writers import ContentMode, PerfettoWriter, TraceFacts, Writer, writer_class

EXIT_OK, EXIT_INPUT, EXIT_USAGE = 0, 1, 2
# The reader of our stdout went away (`export -o - | head`): what a process killed by
# SIGPIPE reports (128 + 13), as `cat big | head` does, so `set -o pipefail` sees it.
EXIT_BROKEN_PIPE = 141
PROGRESS_BYTES = 20 * 1024 * 1024  # show a progress bar from this input size on

P = ParamSpec("P")
R = TypeVar("R")


def _errors_to_exit_codes(command: Callable[P, R]) -> Callable[P, R]:
    """The package's root error becomes one line on stderr and an exit code."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except UsageError as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(EXIT_USAGE) from None
        except AgentProfilerError as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(EXIT_INPUT) from None
        except BrokenPipeError:
            _quiet_stdout()
            raise typer.Exit(EXIT_BROKEN_PIPE) from None

    return wrapper


def _quiet_stdout() -> None:
    """Point stdout at /dev/null: the interpreter flushes it at exit, and a flush into
    the closed pipe would print "Exception ignored ... BrokenPipeError" after we are done."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real stdout (an in-process test runner)
        pass


app = typer.Typer(
    add_completion=True,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="Export coding-agent session journals as Perfetto traces of what filled the "
    "model's context window, request by request. Offline: no network, no model calls.",
)


# Arguments and options shared by several commands.
JournalsArgument = Annotated[
    list[Path],
    typer.Argument(help="Journal files or directories (.jsonl, .jsonl.gz).", show_default=False),
]
HarnessOption = Annotated[
    Harness | None,
    typer.Option("--harness", help="Skip auto-detection and read every input as this harness."),
]
ForceOption = Annotated[bool, typer.Option("--force", help="Overwrite an existing output.")]
EstimateOption = Annotated[
    EstimateChoice,
    typer.Option(
        "--estimate",
        help="How journal text becomes tokens: chars/4 (the trace contract's estimate) or "
        "calibrated (per-content-class ratios fitted on real sessions; basis "
        "chars/calibrated-v2). Never a tokenizer count; never scaled to the reported size.",
    ),
]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"agent-profiler {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """agent-profiler: context-window profiles of coding-agent sessions."""


def _human_size(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    raise AssertionError  # pragma: no cover


def _stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def _default_output(journals: list[Path], extension: str = ".pftrace") -> Path:
    first = journals[0]
    stem = first.name
    for suffix in (".gz", ".jsonl", ".json", ".txt"):
        stem = stem.removesuffix(suffix)
    return Path(f"{stem or 'trace'}{extension}")


def write_atomically(path: Path, sessions: list[Session], writer: Writer) -> int:
    """Write to a temporary file beside the target and rename it into place, so an
    interrupted export never leaves a partial trace or clobbers a good one."""
    directory = path.parent if str(path.parent) else Path(".")
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as error:
        raise OutputError(f"{path}: cannot write here ({error.strerror})") from error
    try:
        with os.fdopen(handle, "wb") as stream:
            writer.write(sessions, stream)
        # mkstemp creates the file private (0600); give it the usual umask-based mode.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise OutputError(f"{path}: {error.strerror or error}") from error
        raise
    return path.stat().st_size


def _load(journals: list[Path], harness: Harness | None) -> tuple[LoadResult, Diagnostics]:
    """Read the journals; every unusable input and the warning summary go to stderr."""
    diagnostics = Diagnostics(on_progress=_byte_progress() if sys.stderr.isatty() else None)
    result = load(journals, diagnostics, harness=harness, progress=_progress_reporter(journals))
    if diagnostics.on_progress is not None:
        sys.stderr.write("\r\033[K")  # clear a progress line left below 100%
    for failure in result.failures:
        typer.echo(f"error: {failure}", err=True)
    for line in diagnostics.summary_lines():
        typer.echo(line, err=True)
    if diagnostics.unrecognised:
        # Every command says so: these records were not read, which is not a choice.
        kinds = sorted(diagnostics.unrecognised.items(), key=lambda kv: (-kv[1], kv[0]))
        listed = ", ".join(f"{kind} {count}" for kind, count in kinds[:6])
        more = f", … {len(kinds) - 6} more kinds" if len(kinds) > 6 else ""
        typer.echo(f"not recognised (not read): {listed}{more}", err=True)
    if result.ignored:
        typer.echo(
            f"note: {result.ignored} other file(s) in the given folders are not *.jsonl or "
            "*.jsonl.gz and were not read (name a stream-json .txt file directly)",
            err=True,
        )
    return result, diagnostics


def _byte_progress() -> Callable[[str, int, int], None]:
    """Progress inside one large file (TTY only): percent of its bytes read."""

    def report(path: str, done: int, size: int) -> None:
        if size < PROGRESS_BYTES:
            return
        name = Path(path).name[:50]
        share = min(100, 100 * done // max(size, 1))
        sys.stderr.write(f"\r\033[Kreading {name}: {share}% of {_human_size(size)}")
        if share >= 100:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return report


def _progress_reporter(journals: list[Path]) -> Callable[[int, int, JournalGroup], None] | None:
    """A one-line progress display on stderr (TTY only) when there is more than one
    input, a directory, or a large file."""
    sizes = [p.stat().st_size for p in journals if p.is_file()]
    many = len(journals) > 1 or any(p.is_dir() for p in journals)
    if not sys.stderr.isatty() or not (many or sum(sizes) >= PROGRESS_BYTES):
        return None
    if not many:
        return None  # one large file: _byte_progress shows how far into it reading is

    def report(done: int, total: int, group: JournalGroup) -> None:
        name = (group.main or group.extras[0]).name
        end = "\n" if done == total else ""
        sys.stderr.write(f"\r\033[Kreading journals: {done}/{total} {name[:60]}{end}")
        sys.stderr.flush()

    return report


@app.command()
@_errors_to_exit_codes
def export(
    journals: JournalsArgument,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Trace file to write (default: <journal>.pftrace)."),
    ] = None,
    harness: HarnessOption = None,
    force: ForceOption = False,
    previews: Annotated[
        bool,
        typer.Option(
            "--previews",
            help="Add length-capped prompt and argument previews "
            "(off by default so the trace is safe to attach to a bug report).",
        ),
    ] = False,
    open_ui: Annotated[
        bool, typer.Option("--open", help="Open the trace in ui.perfetto.dev when written.")
    ] = False,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict", help="Exit 1 when any record was warned about (the trace is still written)."
        ),
    ] = False,
    format_name: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="perfetto (protobuf) or json (Chrome Trace Event "
            "Format); default: from the output name (.json → json), else perfetto.",
        ),
    ] = None,
    estimate: EstimateOption = EstimateChoice.CHARS4,
) -> None:
    """Export journals to one Perfetto trace (open it in https://ui.perfetto.dev).

    The harness is detected from each file's content. A directory is searched
    for journals; Claude Code subagent files are attached to their parent
    session. Exit code 1 means some input could not be used (the trace still
    holds everything that could).
    """
    writer = writer_class(format_name, output)
    to_stdout = output is not None and str(output) == "-"
    if to_stdout and writer.binary and _stdout_is_terminal():
        raise UsageError(
            "refusing to write a binary trace to a terminal: use -o FILE, redirect stdout, "
            "or --format json"
        )
    target = output or _default_output(journals, writer.extension)
    if not to_stdout and target.exists() and not force:
        raise UsageError(f"{target} exists; pass --force to overwrite it")
    with use_estimator(named(estimate)):
        result, diagnostics = _load(journals, harness)
    if not result.sessions:
        typer.echo("error: nothing to export (no readable sessions)", err=True)
        raise typer.Exit(EXIT_INPUT)
    facts = TraceFacts(
        inputs=tuple(p.name for p in journals),
        content=ContentMode.PREVIEWS if previews else ContentMode.NONE,
        accounting=diagnostics.accounting(),
    )
    if to_stdout:
        writer(facts).write(result.sessions, sys.stdout.buffer)
        sys.stdout.buffer.flush()
        size = 0
    else:
        size = write_atomically(target, result.sessions, writer(facts))
    sessions = result.sessions
    subagents = sum(1 for s in sessions if s.is_subagent)
    responses = sum(len(s.responses) for s in sessions)
    unmetered = sum(len(s.unmetered_responses) for s in sessions)
    compactions = sum(len(s.compactions) for s in sessions)
    where = "stdout" if to_stdout else f"{target} ({_human_size(size)})"
    typer.echo(
        f"wrote {where}: {len(sessions)} session(s)"
        f" ({subagents} subagent), {responses} response(s)"
        + (f" (+{unmetered} without usage)" if unmetered else "")
        + f", {compactions} compaction(s),"
        f" {diagnostics.lines_read} line(s) read, {diagnostics.records_used} record(s) used,"
        f" {diagnostics.skipped_total} skipped, {diagnostics.warning_total} warning(s)",
        err=to_stdout,
    )
    if diagnostics.skipped:
        kinds = sorted(diagnostics.skipped.items(), key=lambda kv: (-kv[1], kv[0]))
        listed = ", ".join(f"{kind} {count}" for kind, count in kinds[:6])
        more = f", … {len(kinds) - 6} more kinds" if len(kinds) > 6 else ""
        typer.echo(f"skipped on purpose (not model input): {listed}{more}", err=True)
    if to_stdout:
        pass
    elif open_ui:
        _open_in_ui(target, browser=True, timeout=300.0)
    else:
        typer.echo(
            f"open it: agent-profiler open {target}  (or drag it into https://ui.perfetto.dev)",
            err=True,
        )
    if result.failures or diagnostics.damaged or (strict and diagnostics.warning_total):
        raise typer.Exit(EXIT_INPUT)


@app.command()
@_errors_to_exit_codes
def summary(
    journals: Annotated[
        list[Path],
        typer.Argument(help="Journal files or directories.", show_default=False),
    ],
    window: Annotated[
        int | None,
        typer.Option(
            "--window",
            min=1,
            help="Context window in tokens, for the fill column "
            "when the journal does not state it (e.g. 200000).",
        ),
    ] = None,
    calls: Annotated[
        bool, typer.Option("--calls", help="Add the per-call series and every compaction.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a JSON list, one object per session.")
    ] = False,
    harness: HarnessOption = None,
    estimate: EstimateOption = EstimateChoice.CHARS4,
) -> None:
    """Compare sessions side by side: calls, first/peak/final prompt size, growth,
    fill, compactions, tool calls, failures, repeats, result size and the largest
    context categories at the end.

    Subagents get their own rows, indented under their parent, and are never added
    to the parent's numbers. An unreadable file is reported on stderr and the others
    are still summarised (exit code 1 at the end).
    """
    with use_estimator(named(estimate)):
        result, diagnostics = _load(journals, harness)
    rows = summarise_all(result.sessions, window=window)
    if as_json:
        typer.echo(
            orjson.dumps([row.to_json(calls) for row in rows], option=orjson.OPT_INDENT_2).decode()
        )
    elif rows:
        typer.echo(render_table(rows))
        if calls:
            typer.echo(render_calls(rows))
    if result.failures or diagnostics.damaged or not rows:
        if not rows:
            typer.echo("error: no readable sessions", err=True)
        raise typer.Exit(EXIT_INPUT)


TRACE_SUFFIXES = (".pftrace", ".perfetto-trace", ".pb", ".trace")
# How a Chrome JSON trace (ours: `export --format json`) starts: an object whose first key is
# `traceEvents`, or the bare array form other tools write.
JSON_TRACE_HEADS = (b'{"traceEvents"', b'[{"')


def _open_in_ui(trace: Path, *, browser: bool, timeout: float) -> None:
    def ready(url: str) -> None:
        if browser:
            import webbrowser

            typer.echo(f"opening {url}", err=True)
            if not webbrowser.open(url):
                typer.echo(f"no browser found: open {url} yourself", err=True)
        else:
            typer.echo(url)
        typer.echo(
            f"serving {trace.name} on 127.0.0.1:9001 until it is fetched "
            f"(at most {timeout:.0f} s; Ctrl-C stops)",
            err=True,
        )

    if not serve_once(trace, timeout_s=timeout, on_ready=ready):
        typer.echo(f"not fetched within {timeout:.0f} s; stopped serving", err=True)
        raise typer.Exit(EXIT_INPUT)
    typer.echo("trace fetched by the UI; server stopped", err=True)


@app.command("open")
@_errors_to_exit_codes
def open_(
    inputs: Annotated[
        list[Path],
        typer.Argument(
            help="A trace this tool wrote (.pftrace, or .json from --format json), or "
            "journals to export first.",
            show_default=False,
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Where to keep the trace exported from journals (default: a temporary file).",
        ),
    ] = None,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the URL instead of opening a browser.")
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", min=1, help="Seconds to wait for the UI to fetch it.")
    ] = 300.0,
    harness: HarnessOption = None,
) -> None:
    """Open a trace in ui.perfetto.dev in one command.

    Journals are exported first. The trace is then served once on 127.0.0.1:9001
    (the local address ui.perfetto.dev accepts) and the browser opens
    https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/<name>. Nothing is uploaded:
    the UI runs in your browser and fetches the file from your machine.
    """
    if len(inputs) == 1 and _is_trace(inputs[0]):
        _open_in_ui(inputs[0], browser=not no_browser, timeout=timeout)
        return
    with tempfile.TemporaryDirectory(prefix="agent-profiler-") as folder:
        target = output or Path(folder) / _default_output(inputs).name
        result, _ = _load(inputs, harness)
        if not result.sessions:
            typer.echo("error: nothing to open (no readable sessions)", err=True)
            raise typer.Exit(EXIT_INPUT)
        write_atomically(target, result.sessions, PerfettoWriter())
        _open_in_ui(target, browser=not no_browser, timeout=timeout)
    if result.failures:
        raise typer.Exit(EXIT_INPUT)


def _is_trace(path: Path) -> bool:
    """Any trace this tool writes: Perfetto protobuf (by name or its first byte) or
    Chrome JSON (by its head: a JSONL journal never starts with `{"traceEvents"`)."""
    if path.suffix in TRACE_SUFFIXES:
        return True
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    if head[:1] == b"\x0a":  # a Trace starts with field 1 (packet), length-delimited
        return True
    text = head.lstrip().replace(b" ", b"")
    return text.startswith(JSON_TRACE_HEADS[0]) or (
        path.suffix == ".json" and text.startswith(JSON_TRACE_HEADS[1]) and b'"ph":' in text
    )


@app.command()
@_errors_to_exit_codes
def discover(
    harness: Annotated[
        Harness | None, typer.Option("--harness", help="Only this harness's journals.")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Only sessions started on or after this date (YYYY-MM-DD or an ISO time).",
        ),
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="Only projects whose path contains this.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """List the agent journals on this machine, newest first.

    Looks in each harness's default folders (~/.claude/projects, ~/.codex/sessions,
    ~/.pi/agent/sessions, ~/.local/share/muse/sessions, ~/.gemini/tmp/*/chats,
    ~/.local/share/opencode), honouring CLAUDE_CONFIG_DIR, CODEX_HOME,
    PI_CODING_AGENT_DIR, GEMINI_CLI_HOME, OPENCODE_DB and XDG_DATA_HOME. Any listed
    path can be passed to `export`, `summary` or `open`.
    """
    since_ns = None
    if since is not None:
        since_ns = timestamp_ns(since if "T" in since else f"{since}T00:00:00")
        if since_ns is None:
            raise UsageError(f"--since {since!r} is not a date (use YYYY-MM-DD)")
    found = find_journals(harness=harness, since_ns=since_ns, project=project)
    if as_json:
        typer.echo(orjson.dumps([j.to_json() for j in found], option=orjson.OPT_INDENT_2).decode())
        return
    if not found:
        typer.echo("no journals found", err=True)
        return
    for journal in found:
        start = journal.to_json()["start"] or "-"
        typer.echo(
            f"{journal.harness.value:<11}  {start:<25}  {_human_size(journal.size):>9}  "
            f"{journal.project or '-'}\n  {journal.path}"
        )


@app.command()
@_errors_to_exit_codes
def report(
    journals: JournalsArgument,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="HTML file to write (default: <journal>.html)."),
    ] = None,
    title: Annotated[str, typer.Option("--title", help="The page's title.")] = DEFAULT_TITLE,
    window: Annotated[
        int | None,
        typer.Option(
            "--window",
            min=1,
            help="Context window in tokens, for the fill and the chart's window line "
            "when the journal does not state it (e.g. 200000).",
        ),
    ] = None,
    harness: HarnessOption = None,
    force: ForceOption = False,
    estimate: EstimateOption = EstimateChoice.CHARS4,
) -> None:
    """Write one self-contained HTML page: an Overview of every session and, per session,
    its context composition over time with the largest additions.

    The page needs no network (no scripts, fonts or images are fetched), so it opens from
    file://, can be attached to a bug report, and prints. Exit code 1 means some input
    could not be used (the page still holds everything that could).
    """
    target = output or _default_output(journals, ".html")
    if target.exists() and not force:
        raise UsageError(f"{target} exists; pass --force to overwrite it")
    with use_estimator(named(estimate)):
        result, diagnostics = _load(journals, harness)
    if not result.sessions:
        typer.echo("error: nothing to report (no readable sessions)", err=True)
        raise typer.Exit(EXIT_INPUT)
    writer = HtmlReportWriter(title=title, window=window, inputs=[p.name for p in journals])
    size = write_atomically(target, result.sessions, writer)
    subagents = sum(1 for s in result.sessions if s.is_subagent)
    typer.echo(
        f"wrote {target} ({_human_size(size)}): {len(result.sessions)} session(s)"
        f" ({subagents} subagent); open it in any browser"
    )
    if result.failures or diagnostics.damaged:
        raise typer.Exit(EXIT_INPUT)


def main() -> None:
    """Console entry point. Typer prints usage errors itself (exit 2); anything
    unexpected is a bug, reported in one line rather than a traceback."""
    try:
        app()
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
    except Exception as error:
        typer.echo(
            f"internal error: {type(error).__name__}: {error} (please report this with the "
            "harness name and version)",
            err=True,
        )
        sys.exit(70)
