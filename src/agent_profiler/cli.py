"""The command line. The only module that knows about Typer, stdout/stderr and
exit codes: 0 success, 1 some input could not be used (the output is still
written for the rest), 2 usage error."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar

import typer

from agent_profiler import options as spec
from agent_profiler.align import AlignChoice
from agent_profiler.console import (
    EXIT_INPUT,
    EXIT_OK,
    EXIT_USAGE,
    PROGRESS_BYTES,
    echo,
    failure,
    printable,
    steady_streams,
    tell,
)
from agent_profiler.discover import run_discover
from agent_profiler.errors import AgentProfilerError, UsageError
from agent_profiler.estimate import EstimateChoice
from agent_profiler.exporting import export_perfetto, run_export, run_report, run_summary
from agent_profiler.model import Harness
from agent_profiler.options import ReadOptions
from agent_profiler.outputs import default_output
from agent_profiler.privacy import input_name
from agent_profiler.version import __version__
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
    exit code (`failure`), and so does Ctrl-C (Click would end it without a word); the
    rest is left to `main`."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except (AgentProfilerError, BrokenPipeError, KeyboardInterrupt) as error:
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
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="Export coding-agent session journals as Perfetto traces of what filled the "
    "model's context window, request by request. Offline: no network, no model calls.",
)


def option(declared: spec.Spec, **settings: Any) -> Any:
    """The Typer option of a declared one (options.py): its flags and help, unless a
    command says it differently."""
    settings.setdefault("help", declared.help)
    if declared.metavar is not None:
        settings.setdefault("metavar", declared.metavar)
    if declared.parse is not None:
        settings.setdefault("parser", _usage(declared.parse))
    return typer.Option(*declared.flags, **settings)


# Arguments and options shared by several commands (declared in options.py).
JournalsArgument = Annotated[
    list[Path],
    typer.Argument(
        help="Journal files (.jsonl, .jsonl.gz, .jsonl.zst, Gemini CLI and OpenCode .json, "
        "OpenCode's .db; - for stdin) or directories.",
        show_default=False,
        metavar="JOURNAL",
    ),
]
# collect knows each journal by its path: no stdin (its help said "- for stdin").
CollectedArgument = Annotated[
    list[Path],
    typer.Argument(
        help="Journal files (.jsonl, .jsonl.gz, .jsonl.zst, Gemini CLI and OpenCode .json, "
        "OpenCode's .db) or directories; not a pipe: the dataset knows each journal by its path.",
        show_default=False,
        metavar="JOURNAL",
    ),
]


def _usage(parse: Callable[[str], R]) -> Callable[[str], R]:
    """An option's parser (options.py) whose ValueError is a usage error saying why."""

    def parser(text: str) -> R:
        try:
            return parse(text)
        except ValueError as error:
            raise typer.BadParameter(str(error)) from None

    return parser


_tokens = _usage(spec.tokens)
HarnessOption = Annotated[Harness | None, option(spec.HARNESS)]
ForceOption = Annotated[bool, option(spec.FORCE)]
JobsOption = Annotated[int | None, option(spec.JOBS)]
EstimateOption = Annotated[EstimateChoice, option(spec.ESTIMATE)]
PreviewsOption = Annotated[bool, option(spec.PREVIEWS)]


WindowOption = Annotated[int | None, option(spec.WINDOW, parser=_tokens)]
_align = _usage(spec.choice(AlignChoice, "an alignment"))
RedactOption = Annotated[bool, option(spec.REDACT)]


def _version(value: bool) -> None:
    if value:
        echo(f"agent-profiler {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """agent-profiler: context-window profiles of coding-agent sessions."""


@app.command(short_help="Export journals to one Perfetto trace.")
@_errors_to_exit_codes
def export(
    journals: JournalsArgument,
    output: Annotated[
        Path | None,
        option(
            spec.OUTPUT,
            help="Trace file to write (default: ./<journal>.pftrace, or with --format json "
            "./<journal>.json, ./<journal>.trace.json for a .json journal; - for stdout).",
        ),
    ] = None,
    harness: HarnessOption = None,
    force: ForceOption = False,
    previews: PreviewsOption = False,
    open_ui: Annotated[bool, option(spec.OPEN)] = False,
    strict: Annotated[bool, option(spec.STRICT)] = False,
    format_name: Annotated[str | None, option(spec.FORMAT)] = None,
    estimate: EstimateOption = EstimateChoice.CHARS4,
    jobs: JobsOption = None,
    redact: RedactOption = False,
    align: Annotated[
        AlignChoice | None, option(spec.ALIGN, parser=_align, metavar="<start>")
    ] = None,
    no_compress: Annotated[bool, option(spec.NO_COMPRESS)] = False,
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
        options=ReadOptions(harness, estimate, previews, jobs, align is AlignChoice.START),
        force=force,
        strict=strict,
        format_name=format_name,
        stdout_is_terminal=_stdout_is_terminal,
        open_ui=_open_in_ui if open_ui else None,
        redact=redact,
        compress=not no_compress,
    )
    if code:
        raise typer.Exit(code)


@app.command(short_help="Compare sessions side by side, one row each.")
@_errors_to_exit_codes
def summary(
    journals: Annotated[
        list[Path],
        typer.Argument(
            help="Journal files or directories, as export reads them.",
            show_default=False,
            metavar="JOURNAL",
        ),
    ],
    window: WindowOption = None,
    calls: Annotated[bool, option(spec.CALLS)] = False,
    as_json: Annotated[bool, option(spec.JSON)] = False,
    harness: HarnessOption = None,
    estimate: EstimateOption = EstimateChoice.CHARS4,
    jobs: JobsOption = None,
    cost: Annotated[bool, option(spec.RECEIPT)] = False,
) -> None:
    """Compare sessions side by side: calls, first/peak/final prompt size, growth,
    fill, compactions, tool calls, failures, repeats, result size and the largest
    context categories at the end.

    Subagents get their own rows, indented under their parent, and are never added
    to the parent's numbers. An unreadable file is reported on stderr and the others
    are still summarised (exit code 1 at the end).
    """
    code = run_summary(
        journals,
        ReadOptions(harness, estimate, False, jobs),
        window=window,
        calls=calls,
        as_json=as_json,
        cost=cost,
    )
    if code:
        raise typer.Exit(code)


@app.command(short_help="Collect journals into a Parquet dataset, incrementally.")
@_errors_to_exit_codes
def collect(
    journals: CollectedArgument,
    to: Annotated[
        Path,
        typer.Option(
            "--to",
            "-o",
            metavar="DIR",
            help="The dataset's folder (created when absent); -o as for export and report.",
            show_default=False,
        ),
    ],
    harness: HarnessOption = None,
    estimate: EstimateOption = EstimateChoice.CHARS4,
    jobs: JobsOption = None,
    force: Annotated[
        bool, option(spec.FORCE, help="Collect into a folder neither empty nor a dataset.")
    ] = False,
) -> None:
    """Collect journals into a dataset of Parquet tables (sessions, requests, request ×
    category, context items, tool calls, compactions) for `fleet` or any Parquet engine.

    Incremental: a second run reads only journals that are new or changed, and says so.
    Atomic: an interrupted collect leaves the dataset as it was. Holds counts, ids, names
    and safe labels only (docs/dataset.md).
    """
    from agent_profiler.fleet.command import run_collect

    options = ReadOptions(harness, estimate, False, jobs)
    # Its lines tell of the dataset written: a stdout that cannot take them is no failure.
    code = run_collect(journals, to, options=options, echo=tell, force=force)
    if code:
        raise typer.Exit(code)


@app.command(short_help="The article's figures and the cost over a collected dataset.")
@_errors_to_exit_codes
def fleet(
    directory: Annotated[
        Path,
        typer.Argument(
            help="A dataset folder written by `collect`.", show_default=False, metavar="DIR"
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html", "-o", metavar="FILE", help="Write an HTML page with plots (- for stdout)."
        ),
    ] = None,
    split: Annotated[
        str | None,
        typer.Option(
            "--split",
            metavar="DATE",
            help="Also compare sessions started before / from this date.",
            parser=_usage(spec.moment),
        ),
    ] = None,
    since: Annotated[str | None, option(spec.SINCE)] = None,
    before: Annotated[str | None, option(spec.BEFORE)] = None,
    harness: Annotated[  # (checked by run_fleet; the choices shown as every command's)
        str | None,
        typer.Option("--harness", metavar=spec.HARNESS.metavar, help="Only this harness."),
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", metavar="NAME", help="Only this project.")
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            metavar="NAME",
            help="Only sessions whose main model is this (a dated or provider/ name too).",
        ),
    ] = None,
    cost: Annotated[
        bool, typer.Option("--cost/--no-cost", help="Price the requests (genai-prices).")
    ] = True,
    force: ForceOption = False,
) -> None:
    """The article's figures over your sessions: who wrote the end-of-session context,
    context by turn, compactions, tool results by tool, the largest recurring sources and
    what the context cost."""
    from agent_profiler.fleet.command import run_fleet
    from agent_profiler.inputs import is_folder
    from agent_profiler.outputs import check_target, deliver, is_stdout, write_atomically

    if html is not None and not is_stdout(html):
        if is_folder(html):
            raise UsageError(
                f"{html} is a folder: name the file to write, e.g. --html {html / 'fleet.html'}"
            )
        check_target(html, force, [], ".html", "--html")  # --force to overwrite, as any output

    def write(target: Path, text: str) -> int:
        data = text.encode()
        if is_stdout(target):  # `--html -`, as `-o -` elsewhere, not a file named "-"
            deliver(None, lambda stream: stream.write(data), [])
            return len(data)
        return write_atomically(target, lambda stream: stream.write(data))

    run_fleet(
        directory,
        as_json=as_json,
        html=html,
        split=split,
        filters=(harness, project, model, since, before),
        cost=cost,
        echo=echo,
        write=write,
    )


def _open_in_ui(trace: Path, *, browser: bool, timeout: float) -> None:
    def ready(url: str) -> None:
        if browser:
            import webbrowser

            # The URL once (a ~1,500-character line): opened, or to open by hand.
            opened = webbrowser.open(url)
            said = f"opening {url}" if opened else f"no browser found: open {url} yourself"
            echo(said, err=True)
        else:
            echo(url)
        echo(
            f"serving {printable(trace.name)} on 127.0.0.1:9001 until it is fetched "
            f"(at most {timeout:.0f} s; Ctrl-C stops)",
            err=True,
        )

    if not serve_once(trace, timeout_s=timeout, on_ready=ready):
        echo(f"not fetched within {timeout:.0f} s; stopped serving", err=True)
        raise typer.Exit(EXIT_INPUT)
    echo("trace fetched by the UI; server stopped", err=True)


@app.command("open")
@_errors_to_exit_codes
def open_(
    inputs: Annotated[
        list[Path],
        typer.Argument(
            help="A trace this tool wrote (.pftrace, or .json from --format json), or "
            "journals to export first.",
            show_default=False,
            metavar="TRACE_OR_JOURNAL",
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="The trace made of journals (default: a temporary file, kept if not fetched).",
        ),
    ] = None,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Print the URL instead of opening a browser.")
    ] = False,
    timeout: Annotated[float, option(spec.TIMEOUT)] = 300.0,
    harness: HarnessOption = None,
    force: ForceOption = False,
    previews: PreviewsOption = False,
    redact: RedactOption = False,
) -> None:
    """Open a trace in ui.perfetto.dev in one command.

    Journals are exported first. The trace is then served once on 127.0.0.1:9001
    (the local address ui.perfetto.dev accepts) and the browser opens
    https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/<name>. Nothing is uploaded:
    the UI runs in your browser and fetches the file from your machine.
    """
    from agent_profiler.own import is_trace
    from agent_profiler.serve import keep_unserved  # (http.server: open serves anyway)

    if len(inputs) == 1 and is_trace(inputs[0]):
        _open_in_ui(inputs[0], browser=not no_browser, timeout=timeout)
        return
    if traces := [p for p in inputs if is_trace(p)]:
        import shlex  # here: start-up does not pay for it

        # Read as journals, each was refused with "open it with `agent-profiler open …`"
        raise UsageError(
            f"{traces[0]} is a trace: open takes one trace, or journals to export and open "
            f"(open it alone: agent-profiler open {shlex.quote(str(traces[0]))})"
        )
    if output is not None:
        # export's refusals, and a file to serve afterwards (not stdout or a pipe).
        from agent_profiler.loader import is_stream
        from agent_profiler.outputs import check_target, is_stdout

        if is_stdout(output) or is_stream(output):
            raise UsageError(
                f"-o {output}: open serves a trace file, not stdout, a pipe or a device"
            )
        if output.name.lower().endswith((".json", ".json.gz", ".html", ".htm")):
            raise UsageError(
                f"-o {output}: open writes a Perfetto trace (-o FILE.pftrace); for Chrome "
                "JSON, use export --format json"
            )
        check_target(output, force, inputs, ".pftrace")
    from agent_profiler import scratch

    with scratch.folder() as folder:  # (swept by a later run if this one is killed)
        target = output or Path(folder) / default_output(inputs).name
        outcome = export_perfetto(
            inputs,
            target,
            ReadOptions(harness, previews=previews),
            TraceFacts(
                inputs=tuple(input_name(p.name) for p in inputs),
                content=ContentMode.PREVIEWS if previews else ContentMode.NONE,
                redact=redact,
            ),
        )
        if outcome is None:
            echo("error: nothing to open (no readable sessions)", err=True)
            raise typer.Exit(EXIT_INPUT)
        result = outcome[0]
        try:
            _open_in_ui(target, browser=not no_browser, timeout=timeout)
        except (AgentProfilerError, typer.Exit, KeyboardInterrupt) as error:
            # The cause first (a busy port, Ctrl-C), then what is kept of the trace.
            code = error.exit_code if isinstance(error, typer.Exit) else failure(error)
            if output is None and (said := keep_unserved(target, default_output(inputs))):
                typer.echo(printable(said), err=True)
            raise typer.Exit(code) from None
    if result.failures:
        raise typer.Exit(EXIT_INPUT)


@app.command()
@_errors_to_exit_codes
def discover(
    harness: Annotated[
        Harness | None, option(spec.HARNESS, help="Only this harness's journals.")
    ] = None,
    since: Annotated[str | None, option(spec.SINCE)] = None,
    project: Annotated[
        str | None,
        typer.Option("--project", metavar="TEXT", help="Only projects whose path contains this."),
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
    run_discover(harness=harness, since=since, project=project, as_json=as_json)


@app.command(short_help="Write one self-contained HTML page of the sessions.")
@_errors_to_exit_codes
def report(
    journals: JournalsArgument,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="HTML file to write (default: ./<journal>.html; - for stdout).",
        ),
    ] = None,
    title: Annotated[
        str, typer.Option("--title", metavar="TEXT", help="The page's title.")
    ] = REPORT_TITLE,
    window: Annotated[
        int | None,
        option(
            spec.WINDOW,
            parser=_tokens,
            help="Context window in tokens, for the fill and the chart's window line when "
            "the journal does not state it (e.g. 200000 or 200k).",
        ),
    ] = None,
    harness: HarnessOption = None,
    force: ForceOption = False,
    estimate: EstimateOption = EstimateChoice.CHARS4,
    cost: Annotated[
        bool,
        typer.Option("--cost", help="Each session's bill in the Overview and its receipt."),
    ] = False,
    previews: PreviewsOption = False,
    redact: RedactOption = False,
    jobs: JobsOption = None,
) -> None:
    """Write one self-contained HTML page: an Overview of every session and, per session,
    its context composition over time with the largest additions.

    The page needs no network (no scripts, fonts or images are fetched), so it opens from
    file://, can be attached to a bug report, and prints. Exit code 1 means some input
    could not be used (the page still holds everything that could).
    """
    code = run_report(
        journals,
        output=output,
        # Argument previews kept only with --previews (the additions table shows them).
        options=ReadOptions(harness, estimate, previews, jobs),
        force=force,
        title=title,
        window=window,
        cost=cost,
        redact=redact,
    )
    if code:
        raise typer.Exit(code)


def main() -> None:
    """Console entry point. Typer prints usage errors itself (exit 2); anything
    unexpected is a bug, reported in one line rather than a traceback."""
    steady_streams()  # (done already when entry.main is the way in)
    try:
        app()
    except SystemExit as done:
        # Ctrl-C outside a command's body (Typer parsing the line, importing pydantic):
        # Typer ends it in a silent exit 130; it says `interrupted` as every command does.
        stopped = done.__context__
        if isinstance(stopped, typer.Exit) and isinstance(stopped.__cause__, KeyboardInterrupt):
            sys.exit(failure(stopped.__cause__))
        # Click's own ending of a reader gone (`--help | true`, `--version`): exit 1; a
        # command's is 141, as for any process a broken pipe ends.
        if done.code == 1 and isinstance(stopped, BrokenPipeError):
            sys.exit(failure(stopped))
        # Under Click's own usage errors (ours end in typer.Exit, and say it all): a word
        # Click read as an option, or an output option that took one for its file name.
        clicks = done.code == 2 and not isinstance(done.__context__, typer.Exit)
        for hint in spec.usage_hints(sys.argv[1:]) if clicks else ():
            echo(hint, err=True)
        raise
    except (Exception, KeyboardInterrupt) as error:
        sys.exit(failure(error))
