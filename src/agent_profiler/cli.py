"""The command line. The only module that knows about Typer, stdout/stderr and
exit codes: 0 success, 1 some input could not be used (the output is still
written for the rest), 2 usage error."""

from __future__ import annotations

import functools
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar

import orjson
import typer

from agent_profiler import __version__
from agent_profiler.adapters.common import timestamp_ns
from agent_profiler.align import AlignChoice
from agent_profiler.discover import discover as find_journals
from agent_profiler.errors import AgentProfilerError, UsageError
from agent_profiler.estimate import EstimateChoice, named, use_estimator
from agent_profiler.exporting import (
    EXIT_INPUT,
    EXIT_OK,
    EXIT_USAGE,
    PROGRESS_BYTES,
    _default_output,
    _human_size,
    _load,
    check_target,
    export_perfetto,
    failure,
    read_groups,
    refuse_read_files,
    run_export,
    write_atomically,
)
from agent_profiler.loader import STDIN, is_stream
from agent_profiler.model import Harness
from agent_profiler.writers import ContentMode, TraceFacts

__all__ = ["EXIT_INPUT", "EXIT_OK", "EXIT_USAGE", "PROGRESS_BYTES", "app", "main"]

# `report`, `serve`, `summary` and the writers' modules are imported inside the commands
# that use them: an export of a small journal is mostly start-up (issue 17).
# report.DEFAULT_TITLE, said here so that `report --help` needs no import (a test checks).
REPORT_TITLE = "Agent Profiler report"

P = ParamSpec("P")
R = TypeVar("R")


def _errors_to_exit_codes(command: Callable[P, R]) -> Callable[P, R]:
    """The package's root error (and a closed stdout) becomes one line on stderr and an
    exit code (`failure`); the rest is left to `main`."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except (AgentProfilerError, BrokenPipeError) as error:
            raise typer.Exit(failure(error)) from None

    return wrapper


def _stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def serve_once(trace: Path, **kwargs: Any) -> bool:
    """serve.serve_once, imported when a trace is opened (http.server is ≈ 10 ms)."""
    from agent_profiler.serve import serve_once as serve

    return serve(trace, **kwargs)


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
JobsOption = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        min=1,
        help="Processes that read the journals (default: every core when there are several "
        "session trees and ≥ 4 MB of input). The output is the same whatever the number.",
    ),
]
PreviewsOption = Annotated[
    bool,
    typer.Option(
        "--previews",
        help="Add length-capped prompt and argument previews "
        "(off by default so the output is safe to attach to a bug report).",
    ),
]
RedactOption = Annotated[
    bool,
    typer.Option(
        "--redact",
        help="Leave out what each tool call acted on too (a file relative to the project, "
        "a program, a host), which a default output shows.",
    ),
]
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
    jobs: JobsOption = None,
    redact: RedactOption = False,
    align: Annotated[
        AlignChoice | None,
        typer.Option(
            "--align",
            help="start: lay every session (with its subagents) out from one origin, to "
            "compare sessions side by side; each keeps its real start in profile (1). "
            "Default: real time.",
        ),
    ] = None,
) -> None:
    """Export journals to one Perfetto trace (open it in https://ui.perfetto.dev).

    The harness is detected from each file's content. A directory is searched
    for journals; Claude Code subagent files are attached to their parent
    session. Exit code 1 means some input could not be used (the trace still
    holds everything that could).
    """
    code = run_export(
        journals,
        output=output,
        harness=harness,
        force=force,
        previews=previews,
        strict=strict,
        format_name=format_name,
        estimate=estimate,
        stdout_is_terminal=_stdout_is_terminal,
        open_ui=_open_in_ui if open_ui else None,
        jobs=jobs,
        align=None if align is None else align.value,
        redact=redact,
    )
    if code:
        raise typer.Exit(code)


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
    jobs: JobsOption = None,
) -> None:
    """Compare sessions side by side: calls, first/peak/final prompt size, growth,
    fill, compactions, tool calls, failures, repeats, result size and the largest
    context categories at the end.

    Subagents get their own rows, indented under their parent, and are never added
    to the parent's numbers. An unreadable file is reported on stderr and the others
    are still summarised (exit code 1 at the end).
    """
    from agent_profiler.pipeline import SummariseRows
    from agent_profiler.summary import render_calls, render_table

    result, diagnostics, outcomes = read_groups(
        journals, harness, estimate, SummariseRows(window), jobs, previews=False
    )
    rows = [row for outcome in outcomes for row in outcome.value]
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
    previews: PreviewsOption = False,
    redact: RedactOption = False,
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
        outcome = export_perfetto(
            inputs,
            target,
            harness=harness,
            estimate=EstimateChoice.CHARS4,
            facts=TraceFacts(
                inputs=tuple(p.name for p in inputs),
                content=ContentMode.PREVIEWS if previews else ContentMode.NONE,
                redact=redact,
            ),
            jobs=None,
        )
        if outcome is None:
            typer.echo("error: nothing to open (no readable sessions)", err=True)
            raise typer.Exit(EXIT_INPUT)
        result = outcome[0]
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
    # A Trace starts with field 1 (packet), length-delimited: 0x0a, which is also the line
    # feed a journal may start with. The packets' varints hold control bytes; text does not.
    if head[:1] == b"\x0a" and any(byte < 0x20 and byte not in b"\t\n\r" for byte in head):
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
    title: Annotated[str, typer.Option("--title", help="The page's title.")] = REPORT_TITLE,
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
    previews: PreviewsOption = False,
    redact: RedactOption = False,
) -> None:
    """Write one self-contained HTML page: an Overview of every session and, per session,
    its context composition over time with the largest additions.

    The page needs no network (no scripts, fonts or images are fetched), so it opens from
    file://, can be attached to a bug report, and prints. Exit code 1 means some input
    could not be used (the page still holds everything that could).
    """
    target = output or _default_output(journals, ".html")
    check_target(target, force, journals, ".html")
    from agent_profiler.adapters.drafts import argument_previews

    # Argument previews are kept only for a page made with --previews (its additions table
    # shows them); tool targets unless --redact.
    with use_estimator(named(estimate)), argument_previews(previews):
        result, diagnostics = _load(journals, harness)
    if not result.sessions:
        typer.echo("error: nothing to report (no readable sessions)", err=True)
        raise typer.Exit(EXIT_INPUT)
    if redact:
        from agent_profiler.targets import without_targets

        result.sessions = without_targets(result.sessions)
    from agent_profiler.report import HtmlReportWriter

    inputs = ["<stdin>" if str(p) == STDIN else p.name for p in journals]
    writer = HtmlReportWriter(title=title, window=window, inputs=inputs, previews=previews)
    refuse_read_files(target, result.files)
    size = write_atomically(target, lambda stream: writer.write(result.sessions, stream))
    subagents = sum(1 for s in result.sessions if s.is_subagent)
    typer.echo(
        f"wrote {target} ({_human_size(size)}): {len(result.sessions)} session(s)"
        f" ({subagents} subagent)" + ("" if is_stream(target) else "; open it in any browser")
    )
    if result.failures or diagnostics.damaged:
        raise typer.Exit(EXIT_INPUT)


def main() -> None:
    """Console entry point. Typer prints usage errors itself (exit 2); anything
    unexpected is a bug, reported in one line rather than a traceback."""
    try:
        app()
    except (Exception, KeyboardInterrupt) as error:
        sys.exit(failure(error))
