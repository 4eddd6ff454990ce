"""The commands' one read-and-write path, without the command line around it: read the
journals (every group with the same `ReadOptions`, in worker processes when it pays), say
on stderr what could not be used, and write one output through `outputs.deliver` (or, for
`summary`, the rows on stdout). `export` and `summary` (from cli.py's Typer app and from
entry.py's fast path), `report` and `open` all run here, so they read, refuse and report
alike."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING

import orjson

from agent_profiler import console
from agent_profiler.console import EXIT_INPUT, EXIT_OK, echo, printable, tell
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import UsageError
from agent_profiler.loader import STDIN, LoadResult, is_stream, load
from agent_profiler.options import ReadOptions
from agent_profiler.outputs import (
    check_target,
    default_output,
    deliver,
    is_stdout,
    is_terminal,
)
from agent_profiler.pipeline import EncodeTrace, GroupOutcome, SessionCounts, T, Use, write_joined
from agent_profiler.privacy import input_name, private_path
from agent_profiler.spools import spool, spool_failed
from agent_profiler.writers import ContentMode, TraceFacts, writer_class

if TYPE_CHECKING:
    from agent_profiler.writers.chrome_json import ChromeJsonWriter
    from agent_profiler.writers.perfetto import PerfettoWriter


LARGE_PAGE = 25 * 2**20  # a report past this size is said to open slowly


def load_sessions(journals: list[Path], options: ReadOptions) -> tuple[LoadResult, Diagnostics]:
    """Read every journal in this process, the whole model at once (a writer that needs
    every session together: Chrome JSON, the report); what could not be used goes to
    stderr."""
    diagnostics = Diagnostics(on_progress=console.byte_progress())
    with options.applied():
        result = load(
            journals,
            diagnostics,
            harness=options.harness,
            progress=console.group_progress(journals),
        )
    if options.align:
        from agent_profiler.align import align_start

        result.sessions = align_start(result.sessions)
    console.tell_reading(result, diagnostics)
    return result, diagnostics


def read_groups(
    journals: list[Path],
    options: ReadOptions,
    use: Use[T],
    out: IO[bytes] | None = None,
) -> tuple[LoadResult, Diagnostics, list[GroupOutcome[T]]]:
    """Read every journal group and `use` it (pipeline.py: in worker processes when there
    are several and enough input); what could not be used goes to stderr. Returns what
    was read, the warnings of all groups, and each group's outcome in order."""
    outcomes: list[GroupOutcome[T]] = []
    result, diagnostics = read_each(journals, options, use, outcomes.append, out)
    return result, diagnostics, outcomes


def read_each(
    journals: list[Path],
    options: ReadOptions,
    use: Use[T],
    each: Callable[[GroupOutcome[T]], None],
    out: IO[bytes] | None = None,
) -> tuple[LoadResult, Diagnostics]:
    """`read_groups`, each group's outcome handed to `each` as it comes, in order, and not
    kept here: what was read and the warnings of all groups."""
    from agent_profiler.links import Unread, warn_unread_children
    from agent_profiler.loader import Link, plan_inputs, warn_missing_parents
    from agent_profiler.pipeline import GroupTask, jobs_for, run_groups

    result = LoadResult()
    diagnostics = Diagnostics(on_progress=console.byte_progress())
    groups = plan_inputs(journals, options.harness, result, diagnostics)
    tasks = [GroupTask(i, group, options) for i, group in enumerate(groups)]
    links: list[Link] = []
    unread: list[Unread] = []
    for outcome in run_groups(
        tasks,
        use,
        jobs_for(options.jobs, groups),
        out,
        on_progress=diagnostics.on_progress,
        progress=console.group_progress(journals),
        notice=lambda message: echo(message, err=True),
    ):
        result.failures += outcome.failures
        result.files += outcome.paths
        diagnostics.absorb(outcome.diagnostics)
        links += outcome.links
        unread += outcome.unread
        each(outcome)
    warn_missing_parents(links, diagnostics)
    warn_unread_children(unread, diagnostics, failed=result.failures)
    console.tell_reading(result, diagnostics)
    return result, diagnostics


def export_perfetto(
    journals: list[Path],
    target: Path | None,
    options: ReadOptions,
    facts: TraceFacts,
    *,
    compress: bool = True,
) -> tuple[LoadResult, Diagnostics, SessionCounts, int] | None:
    """Read the journals and write their Perfetto trace to `target` (atomically) or, when
    it is None, to stdout: what was read, the warnings, the counts and the size written
    (0 on stdout). None, and nothing written, when no session could be read. Each group's
    packets wait in a spool beside the target until the last group is read (the clock
    snapshot, which comes first, needs the earliest start of all)."""
    with spool(target) as packets:
        try:
            result, diagnostics, outcomes = read_groups(
                # --jobs 1: one process, no helper for a long session either
                journals,
                options,
                EncodeTrace(facts, compress, helper=options.jobs != 1),
                packets,
            )
        except OSError as error:  # the spool's (its own failures are OutputErrors already)
            raise spool_failed(target, error) from error
        counts = SessionCounts()
        for outcome in outcomes:
            counts.add(outcome.counts)
        first = min((o.first for o in outcomes if o.first is not None), default=None)
        if not counts.sessions or first is None:
            return None
        start = first
        size = deliver(
            target, lambda stream: write_joined(stream, start, packets, counts.header), result.files
        )
        return result, diagnostics, counts, size


def export_whole(
    journals: list[Path],
    target: Path | None,
    options: ReadOptions,
    facts: TraceFacts,
    writer: type[PerfettoWriter] | type[ChromeJsonWriter],
) -> tuple[LoadResult, Diagnostics, SessionCounts, int] | None:
    """What `export_perfetto` does, for a writer that takes every session at once (Chrome
    JSON): the whole model read in this process."""
    result, diagnostics = load_sessions(journals, options)
    if not result.sessions:
        return None
    whole = replace(facts, accounting=diagnostics.accounting())
    sessions = result.sessions
    size = deliver(target, lambda stream: writer(whole).write(sessions, stream), result.files)
    return result, diagnostics, SessionCounts.of(sessions), size


def run_export(
    journals: list[Path],
    *,
    output: Path | None,
    options: ReadOptions,
    force: bool,
    strict: bool,
    format_name: str | None,
    stdout_is_terminal: Callable[[], bool],
    open_ui: Callable[..., None] | None,
    redact: bool = False,
    compress: bool = True,
) -> int:
    """`agent-profiler export`; returns the exit code (errors are raised). `redact`: leave
    out each tool call's target too. `options.align`: every session tree laid out from one
    origin (align.py) instead of real time. `compress`: a Perfetto trace's packets
    deflated (writers/chunks.py)."""
    writer = writer_class(format_name, output)
    to_stdout = is_stdout(output)
    if to_stdout and writer.binary and stdout_is_terminal():
        raise UsageError(
            "refusing to write a binary trace to a terminal: use -o FILE, redirect stdout, "
            "or --format json"
        )
    if not to_stdout and writer.binary and output is not None and is_terminal(output):
        # `-o /dev/tty`, `-o /dev/pts/3`: as `-o -` on a terminal, never a screen of bytes.
        raise UsageError(
            f"refusing to write a binary trace to a terminal ({output}): use -o FILE or "
            "--format json"
        )
    target = output or default_output(journals, writer.extension)
    streamed = to_stdout or is_stream(target)  # nothing to open afterwards
    if not to_stdout:
        check_target(target, force, journals, writer.extension)
    if streamed and open_ui is not None:
        raise UsageError(f"--open needs a trace file, and {target} is a pipe or a device")
    facts = TraceFacts(
        inputs=tuple(input_name(p.name) for p in journals),
        content=ContentMode.PREVIEWS if options.previews else ContentMode.NONE,
        redact=redact,
    )
    destination = None if to_stdout else target
    # A writer that encodes group by group streams them (worker processes, a spool);
    # one that needs every session at once takes the whole model.
    if writer.by_group:
        outcome = export_perfetto(journals, destination, options, facts, compress=compress)
    else:
        outcome = export_whole(journals, destination, options, facts, writer)
    if outcome is None:
        echo("error: nothing to export (no readable sessions)", err=True)
        return EXIT_INPUT
    result, diagnostics, counts, size = outcome
    where = "stdout" if to_stdout else f"{printable(str(target))} ({console.human_size(size)})"
    tell(  # the trace is in place: a stdout that cannot take this line is no failure
        f"wrote {where}: {console.sessions_line(counts.sessions, counts.subagents)},"
        f" {console.counted(counts.responses, 'response')}"
        + (f" (+{counts.unmetered:,} without usage)" if counts.unmetered else "")
        + f", {console.counted(counts.compactions, 'compaction')},"
        f" {diagnostics.read_text()}, {console.counted(diagnostics.records_used, 'record')} used,"
        f" {diagnostics.skipped_total:,} skipped,"
        f" {console.counted(diagnostics.warning_total, 'warning')}",
        err=to_stdout,
    )
    if diagnostics.skipped:
        echo(
            f"skipped on purpose (not model input): {console.kinds(diagnostics.skipped)}",
            err=True,
        )
    if streamed:
        pass
    elif open_ui is not None:
        open_ui(target, browser=True, timeout=300.0)
    else:
        import shlex  # here: start-up does not pay for it

        echo(
            # Quoted for the shell when it must be (`my #1.pftrace`: `#` began a comment).
            f"open it: agent-profiler open {printable(shlex.quote(str(target)))}  "
            "(or drag it into https://ui.perfetto.dev)",
            err=True,
        )
    # --strict: every record read as meant, so a record of a type not recognised (not
    # read) fails the run too, as a warning does.
    unclean = diagnostics.warning_total or diagnostics.unrecognised
    if result.failures or diagnostics.damaged or (strict and unclean):
        return EXIT_INPUT
    return EXIT_OK


def run_report(
    journals: list[Path],
    *,
    output: Path | None,
    options: ReadOptions,
    force: bool,
    title: str,
    window: int | None,
    cost: bool = False,
    redact: bool = False,
) -> int:
    """`agent-profiler report`; returns the exit code (errors are raised). `cost`: each
    session's receipt at list prices; `redact`: leave out each tool call's target too."""
    to_stdout = is_stdout(output)  # `-o -`, as for export, not a file named "-"
    target = output or default_output(journals, ".html")
    if not to_stdout:
        check_target(target, force, journals, ".html")
    from agent_profiler.report.page import Assembly, ReportParts

    # A journal group at a time, in worker processes when there are several: each group's
    # Overview rows and Context views are made where it is read, the views spooled, so
    # no more than a group's model is held (the whole model of 1,200 sessions was 1.5 GB).
    # Their anchors are numbered after one the journals cannot hold, then renumbered.
    anchor = f"agent-profiler-{os.urandom(8).hex()}-"
    parts = ReportParts(window, cost, options.previews, redact, anchor)
    with Assembly(anchor, cost) as page:
        result, diagnostics = read_each(
            journals, options, parts, lambda outcome: page.add(outcome.value)
        )
        if not page.sessions:
            echo("error: nothing to report (no readable sessions)", err=True)
            return EXIT_INPUT
        inputs = ["<stdin>" if str(p) == STDIN else input_name(p.name) for p in journals]
        destination = None if to_stdout else target
        size = deliver(
            destination,
            lambda stream: page.write(stream, title=title, inputs=inputs),
            result.files,
        )
    where = "stdout" if to_stdout else f"{printable(str(target))} ({console.human_size(size)})"
    tell(  # the page is in place: a stdout that cannot take this line is no failure
        f"wrote {where}: {console.sessions_line(page.sessions, page.subagents)}"
        + ("" if to_stdout or is_stream(target) else "; open it in any browser"),
        err=to_stdout,
    )
    if size > LARGE_PAGE and page.sessions > 1:
        # A page of every snapshot of hundreds of sessions (300 long ones: 38 MB) opens
        # slowly; the figures over many sessions are what `fleet` is for.
        echo(
            f"note: a page of {console.human_size(size)} opens slowly; for many sessions, "
            "`agent-profiler collect` them and read `agent-profiler fleet DIR --html FILE`",
            err=True,
        )
    if result.failures or diagnostics.damaged:
        return EXIT_INPUT
    return EXIT_OK


def run_summary(
    journals: list[Path],
    options: ReadOptions,
    *,
    window: int | None,
    calls: bool,
    as_json: bool,
    cost: bool,
) -> int:
    """`agent-profiler summary`: one row per session on stdout (a table, or a JSON list
    with `as_json`); returns the exit code (errors are raised). `calls`: the per-call series
    and every compaction too; `cost`: each session's receipt at list prices."""
    from agent_profiler.pipeline import SummariseRows
    from agent_profiler.summary_text import render_calls, render_table

    result, diagnostics, outcomes = read_groups(journals, options, SummariseRows(window, cost))
    rows = [row for outcome in outcomes for row in outcome.value]
    for given, copy in result.copies:
        # A piped journal is read from a temporary copy: its row names it as given
        # (`<stdin>`), not by the copy's path, gone when the command ends.
        shown = private_path(str(copy), str(Path.cwd()))
        for row in rows:
            row.source = row.source.replace(shown, given)
    if as_json:
        json_rows = [row.to_json(calls) for row in rows]
        echo(orjson.dumps(json_rows, option=orjson.OPT_INDENT_2).decode())
    elif rows:
        echo(render_table(rows))
        if calls:
            echo(render_calls(rows))
        if cost:
            from agent_profiler.cost_text import render_receipt

            for row in rows:
                if row.cost is not None:
                    echo("\n" + render_receipt(row.session, row.cost))
    if not rows:
        echo("error: no readable sessions", err=True)
    if result.failures or diagnostics.damaged or not rows:
        return EXIT_INPUT
    return EXIT_OK
