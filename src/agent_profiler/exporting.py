"""The export command without the command line around it: read journals, write one
trace, say what was done. cli.py (Typer) and entry.py (the console script's fast path
for a plain `export`, which never imports Typer) both run it, so they behave alike."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import IO, cast

from agent_profiler.adapters import JournalGroup
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import AgentProfilerError, OutputError, UsageError
from agent_profiler.estimate import EstimateChoice, named, use_estimator
from agent_profiler.loader import STDIN, LoadResult, is_stream, load, reads
from agent_profiler.model import Harness
from agent_profiler.pipeline import EncodeTrace, GroupOutcome, SessionCounts, T, Use, write_joined
from agent_profiler.writers import ContentMode, TraceFacts, writer_class

EXIT_OK, EXIT_INPUT, EXIT_USAGE = 0, 1, 2
# The reader of our stdout went away (`export -o - | head`): what a process killed by
# SIGPIPE reports (128 + 13), as `cat big | head` does, so `set -o pipefail` sees it.
EXIT_BROKEN_PIPE = 141
EXIT_INTERRUPTED = 130  # 128 + SIGINT: Ctrl-C
EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug of ours, reported in one line
PROGRESS_BYTES = 20 * 1024 * 1024  # show a progress bar from this input size on


def echo(message: str, err: bool = False) -> None:
    """One line on stdout or stderr, flushed (what typer.echo does for plain text)."""
    stream = sys.stderr if err else sys.stdout
    stream.write(message + "\n")
    stream.flush()


def failure(error: BaseException) -> int:
    """What a command that raised `error` ends in: one line on stderr (never a traceback)
    and its exit code. Both entry points (entry.py's fast export and the Typer app) end
    their commands here, so they say the same."""
    if isinstance(error, UsageError):
        echo(f"error: {error}", err=True)
        return EXIT_USAGE
    if isinstance(error, AgentProfilerError):
        echo(f"error: {error}", err=True)
        return EXIT_INPUT
    if isinstance(error, BrokenPipeError):
        quiet_stdout()
        return EXIT_BROKEN_PIPE
    if isinstance(error, KeyboardInterrupt):
        echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    echo(
        f"internal error: {type(error).__name__}: {error} (please report this with the "
        "harness name and version)",
        err=True,
    )
    return EXIT_INTERNAL


def _human_size(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    raise AssertionError  # pragma: no cover


def quiet_stdout() -> None:
    """Point stdout at /dev/null: the interpreter flushes it at exit, and a flush into
    the closed pipe would print "Exception ignored ... BrokenPipeError" after we are done."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real stdout (an in-process test runner)
        pass


def _default_output(journals: list[Path], extension: str = ".pftrace") -> Path:
    first = journals[0]
    stem = "stdin" if str(first) == STDIN else first.name
    for suffix in (".gz", ".jsonl", ".json", ".txt"):
        stem = stem.removesuffix(suffix)
    return Path(f"{stem or 'trace'}{extension}")


def _mkstemp(directory: Path, prefix: str) -> tuple[int, str]:
    """tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory) without importing
    tempfile (with shutil and random, ≈ 8 ms of start-up): a new file, private (0600),
    opened exclusively, under a name no other process picks."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        name = os.path.join(directory, f"{prefix}{os.getpid()}-{os.urandom(6).hex()}.tmp")
        try:
            return os.open(name, flags, 0o600), name
        except FileExistsError:
            continue
    # With its errno, so that strerror (what _beside reports) is this sentence.
    raise FileExistsError(errno.EEXIST, f"no free temporary name in {directory}")


def _beside(path: Path, kind: str) -> tuple[int, str]:
    """A new private temporary file in `path`'s folder (`.<name>.<kind><pid>-<random>.tmp`)."""
    directory = path.parent if str(path.parent) else Path(".")
    try:
        return _mkstemp(directory, f".{path.name}.{kind}")
    except OSError as error:
        raise OutputError(f"{path}: cannot write here ({error.strerror})") from error


def check_target(target: Path, force: bool, journals: list[Path], extension: str) -> None:
    """Refuse an output that is a folder, a journal being read (even with --force: a
    journal cannot be made again), or a file, without --force. A pipe or a device
    (`/dev/null`) is written in place, with or without --force."""
    if target.is_dir():
        suggested = target / _default_output(journals, extension)
        raise UsageError(f"{target} is a folder: name the file to write, e.g. -o {suggested}")
    if not target.exists() or is_stream(target):
        return
    if reads(journals, target):
        raise _journal_as_output(target)
    if not force:
        raise UsageError(f"{target} exists; pass --force to overwrite it")


def refuse_read_files(target: Path, files: list[Path]) -> None:
    """Refuse, after reading, to write over a file that was read: check_target knows the
    inputs as named, and this also the files an adapter found beside them (a Claude Code
    session's subagent files)."""
    if not target.exists() or is_stream(target):
        return
    for read in files:
        try:
            if os.path.samefile(target, read):
                raise _journal_as_output(target)
        except OSError:
            continue


def _journal_as_output(target: Path) -> UsageError:
    return UsageError(f"{target} is a journal this reads: write the trace somewhere else")


class _Counted:
    """A stream that counts the bytes written through it (a pipe or a device has no size
    to ask for afterwards)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self.size = 0

    def write(self, data: bytes) -> int:
        self.size += len(data)
        return self.stream.write(data)

    def __getattr__(self, name: str) -> object:
        return getattr(self.stream, name)


def write_atomically(path: Path, fill: Callable[[IO[bytes]], object]) -> int:
    """Write to a temporary file beside the target (`fill(stream)`) and rename it into
    place, so an interrupted export never leaves a partial trace or clobbers a good one.
    A target that is a pipe or a device (`-o /dev/null`, `-o >(gzip > t.gz)`) is written
    in place: renaming a file over it would replace the device itself."""
    if is_stream(path):
        try:
            with path.open("wb") as stream:
                counted = _Counted(stream)
                fill(cast(IO[bytes], counted))
        except OSError as error:
            raise OutputError(f"{path}: {error.strerror or error}") from error
        return counted.size
    handle, temporary = _beside(path, "")
    try:
        with os.fdopen(handle, "wb") as stream:
            fill(stream)
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


@contextmanager
def _spool(target: Path | None) -> Iterator[IO[bytes]]:
    """A private temporary file for the packets of a trace being read (pipeline.py),
    beside the target (same disk) or, for stdout or a pipe, in the temporary folder; always
    removed."""
    if target is None or is_stream(target):  # stdout, a pipe, a device: nothing beside it
        import tempfile

        with tempfile.TemporaryFile() as stream:
            yield stream
        return
    handle, name = _beside(target, "packets.")
    try:
        with os.fdopen(handle, "w+b") as stream:
            yield stream
    finally:
        Path(name).unlink(missing_ok=True)


def _load(journals: list[Path], harness: Harness | None) -> tuple[LoadResult, Diagnostics]:
    """Read the journals; every unusable input and the warning summary go to stderr."""
    diagnostics = Diagnostics(on_progress=_byte_progress() if sys.stderr.isatty() else None)
    result = load(journals, diagnostics, harness=harness, progress=_progress_reporter(journals))
    _tell_reading(result, diagnostics)
    return result, diagnostics


def _kinds(counts: Mapping[str, int], shown: int = 6) -> str:
    """`kind count, …`: the most frequent first (then by name), `shown` at most, then how
    many kinds more."""
    kinds = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    listed = ", ".join(f"{kind} {count}" for kind, count in kinds[:shown])
    return listed + (f", … {len(kinds) - shown} more kinds" if len(kinds) > shown else "")


def _tell_reading(result: LoadResult, diagnostics: Diagnostics) -> None:
    """What reading could not use, on stderr: failures, warnings, unknown records."""
    if diagnostics.on_progress is not None:
        sys.stderr.write("\r\033[K")  # clear a progress line left below 100%

    def as_given(line: str) -> str:
        """The line with each piped journal named as the user named it, not by its copy."""
        for given, copy in result.copies:
            line = line.replace(str(copy), given)
        return line

    for failure in result.failures:
        echo(as_given(f"error: {failure}"), err=True)
    for line in diagnostics.summary_lines():
        echo(as_given(line), err=True)
    if diagnostics.unrecognised:
        # Every command says so: these records were not read, which is not a choice.
        echo(f"not recognised (not read): {_kinds(diagnostics.unrecognised)}", err=True)
    if result.ignored:
        echo(
            f"note: {result.ignored} other file(s) in the given folders are not *.jsonl or "
            "*.jsonl.gz and were not read (name a stream-json .txt file directly)",
            err=True,
        )


def read_groups(
    journals: list[Path],
    harness: Harness | None,
    estimate: EstimateChoice,
    use: Use[T],
    jobs: int | None,
    out: IO[bytes] | None = None,
    *,
    previews: bool,
    align: bool = False,
) -> tuple[LoadResult, Diagnostics, list[GroupOutcome[T]]]:
    """Read every journal group and `use` it (pipeline.py: in worker processes when there
    are several and enough input); what could not be used goes to stderr. Returns what
    was read, the warnings of all groups, and each group's outcome in order. `previews`:
    whether tool calls keep their argument previews (only a --previews trace shows them)."""
    from agent_profiler.loader import Link, plan_inputs, warn_missing_parents
    from agent_profiler.pipeline import GroupTask, jobs_for, run_groups

    result = LoadResult()
    groups = plan_inputs(journals, harness, result)
    diagnostics = Diagnostics(on_progress=_byte_progress() if sys.stderr.isatty() else None)
    tasks = [
        GroupTask(i, group, harness, estimate, previews, align) for i, group in enumerate(groups)
    ]
    outcomes = list(
        run_groups(
            tasks,
            use,
            jobs_for(jobs, groups),
            out,
            on_progress=diagnostics.on_progress,
            progress=_progress_reporter(journals),
            notice=lambda message: echo(message, err=True),
        )
    )
    links: list[Link] = []
    for outcome in outcomes:
        result.failures += outcome.failures
        result.files += outcome.paths
        diagnostics.absorb(outcome.diagnostics)
        links += outcome.links
    warn_missing_parents(links, diagnostics)
    _tell_reading(result, diagnostics)
    return result, diagnostics, outcomes


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
    """A one-line progress display on stderr (TTY only), journal group by group, when
    there is more than one input or a directory. Inside one large file `_byte_progress`
    shows how far reading is."""
    many = len(journals) > 1 or any(p.is_dir() for p in journals)
    if not many or not sys.stderr.isatty():
        return None

    def report(done: int, total: int, group: JournalGroup) -> None:
        name = (group.main or group.extras[0]).name
        end = "\n" if done == total else ""
        sys.stderr.write(f"\r\033[Kreading journals: {done}/{total} {name[:60]}{end}")
        sys.stderr.flush()

    return report


def export_perfetto(
    journals: list[Path],
    target: Path | None,
    *,
    harness: Harness | None,
    estimate: EstimateChoice,
    facts: TraceFacts,
    jobs: int | None,
    align: bool = False,
) -> tuple[LoadResult, Diagnostics, SessionCounts, int] | None:
    """Read the journals and write their Perfetto trace to `target` (atomically) or, when
    it is None, to stdout: what was read, the warnings, the counts and the size written
    (0 on stdout). None, and nothing written, when no session could be read."""
    with _spool(target) as spool:
        try:
            result, diagnostics, outcomes = read_groups(
                journals,
                harness,
                estimate,
                EncodeTrace(facts),
                jobs,
                spool,
                previews=facts.content is ContentMode.PREVIEWS,
                align=align,
            )
        except OSError as error:  # the spool beside the target: a full disk, a lost mount
            raise OutputError(f"{target or 'stdout'}: {error.strerror or error}") from error
        counts = SessionCounts()
        for outcome in outcomes:
            counts.add(outcome.counts)
        first = min((o.first for o in outcomes if o.first is not None), default=None)
        if not counts.sessions or first is None:
            return None
        start = first

        def fill(stream: IO[bytes]) -> None:
            write_joined(stream, start, spool, counts.header)

        if target is None:
            fill(sys.stdout.buffer)
            sys.stdout.buffer.flush()
            return result, diagnostics, counts, 0
        refuse_read_files(target, result.files)
        return result, diagnostics, counts, write_atomically(target, fill)


def run_export(
    journals: list[Path],
    *,
    output: Path | None,
    harness: Harness | None,
    force: bool,
    previews: bool,
    strict: bool,
    format_name: str | None,
    estimate: EstimateChoice,
    stdout_is_terminal: Callable[[], bool],
    open_ui: Callable[..., None] | None,
    jobs: int | None = None,
    align: str | None = None,
    redact: bool = False,
) -> int:
    """`agent-profiler export`; returns the exit code (errors are raised). `align`:
    "start" lays every session tree out from one origin (align.py), None keeps real time."""
    if align not in (None, "start"):
        raise UsageError(f"--align takes 'start', not {align!r}")
    writer = writer_class(format_name, output)
    to_stdout = output is not None and str(output) == "-"
    if to_stdout and writer.binary and stdout_is_terminal():
        raise UsageError(
            "refusing to write a binary trace to a terminal: use -o FILE, redirect stdout, "
            "or --format json"
        )
    target = output or _default_output(journals, writer.extension)
    streamed = to_stdout or is_stream(target)  # nothing to open afterwards
    if not to_stdout:
        check_target(target, force, journals, writer.extension)
    if streamed and open_ui is not None:
        raise UsageError(f"--open needs a trace file, and {target} is a pipe or a device")
    facts = TraceFacts(
        inputs=tuple(p.name for p in journals),
        content=ContentMode.PREVIEWS if previews else ContentMode.NONE,
        redact=redact,
    )
    if writer.name == "perfetto":
        outcome = export_perfetto(
            journals,
            None if to_stdout else target,
            harness=harness,
            estimate=estimate,
            facts=facts,
            jobs=jobs,
            align=align == "start",
        )
        if outcome is None:
            echo("error: nothing to export (no readable sessions)", err=True)
            return EXIT_INPUT
        result, diagnostics, counts, size = outcome
    else:
        from agent_profiler.adapters.drafts import argument_previews

        with use_estimator(named(estimate)), argument_previews(previews):
            result, diagnostics = _load(journals, harness)
        if not result.sessions:
            echo("error: nothing to export (no readable sessions)", err=True)
            return EXIT_INPUT
        counts = SessionCounts.of(result.sessions)
        facts = replace(facts, accounting=diagnostics.accounting())
        sessions = result.sessions
        if align == "start":
            from agent_profiler.align import align_start

            sessions = align_start(sessions)
        if to_stdout:
            writer(facts).write(sessions, sys.stdout.buffer)
            sys.stdout.buffer.flush()
            size = 0
        else:
            refuse_read_files(target, result.files)
            size = write_atomically(target, lambda stream: writer(facts).write(sessions, stream))
    where = "stdout" if to_stdout else f"{target} ({_human_size(size)})"
    echo(
        f"wrote {where}: {counts.sessions} session(s)"
        f" ({counts.subagents} subagent), {counts.responses} response(s)"
        + (f" (+{counts.unmetered} without usage)" if counts.unmetered else "")
        + f", {counts.compactions} compaction(s),"
        f" {diagnostics.lines_read} line(s) read, {diagnostics.records_used} record(s) used,"
        f" {diagnostics.skipped_total} skipped, {diagnostics.warning_total} warning(s)",
        err=to_stdout,
    )
    if diagnostics.skipped:
        echo(f"skipped on purpose (not model input): {_kinds(diagnostics.skipped)}", err=True)
    if streamed:
        pass
    elif open_ui is not None:
        open_ui(target, browser=True, timeout=300.0)
    else:
        echo(
            f"open it: agent-profiler open {target}  (or drag it into https://ui.perfetto.dev)",
            err=True,
        )
    if result.failures or diagnostics.damaged or (strict and diagnostics.warning_total):
        return EXIT_INPUT
    return EXIT_OK
