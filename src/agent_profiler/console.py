"""The console: what a command says on stdout and stderr, its progress display, and the
exit code it ends in. Every command, under Typer (cli.py) or the console script's fast
export (entry.py), speaks through here, so they say the same things the same way."""

from __future__ import annotations

import errno
import io
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from agent_profiler.errors import AgentProfilerError, JournalError, OutputError, UsageError

if TYPE_CHECKING:
    from agent_profiler.adapters import JournalGroup
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.loader import LoadResult

EXIT_OK, EXIT_INPUT, EXIT_USAGE = 0, 1, 2
# The reader of our stdout went away (`export -o - | head`): what a process killed by
# SIGPIPE reports (128 + 13), as `cat big | head` does, so `set -o pipefail` sees it.
EXIT_BROKEN_PIPE = 141
EXIT_INTERRUPTED = 130  # 128 + SIGINT: Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM, as a process killed by it reports
EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug of ours, reported in one line
PROGRESS_BYTES = 20 * 1024 * 1024  # show a progress bar from this input size on


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def escaped(text: str) -> str:
    """`text` with each control or format character (and the backslash) escaped as `repr`
    writes it: `\\x1b[2J` prints as those characters, and `\\n` cannot start a line."""
    return "".join(
        c if c.isprintable() and c != "\\" else _ESCAPES.get(c) or repr(c)[1:-1] for c in text
    )


def printable(text: str) -> str:
    """`text` as it is when every character prints, else `escaped`: a name from a disk or
    a journal (a file named with an escape code) said on a terminal."""
    return text if text.isprintable() else escaped(text)


def echo(message: str, err: bool = False) -> None:
    """One line on stdout or stderr, flushed (what typer.echo does for plain text). A
    stdout that cannot take it (a full disk) is an OutputError naming stdout; a stderr
    that cannot is given up (`lose_stderr`): the line is lost, never the command."""
    stream = sys.stderr if err else sys.stdout
    try:
        stream.write(message + "\n")
        stream.flush()
    except OSError as error:
        if err:
            lose_stderr()
        elif isinstance(error, BrokenPipeError):
            raise
        else:
            raise stdout_failed(error) from error


def tell(message: str, err: bool = False) -> None:
    """`echo` for a line about an output already in place (`wrote t.pftrace …`, collect's
    `version 2; …`): a stdout that cannot take it (closed, `>&-`; full; its reader gone)
    loses the line, not the command. The output is whole, and the exit code says so: it
    was `error: stdout: not open`, exit 1, after the file had replaced the previous one.
    What a command writes to stdout as its output (`-o -`, summary's table) still fails."""
    try:
        echo(message, err)
    except (OutputError, BrokenPipeError):
        quiet_stdout()  # (stdout_failed did already for an OutputError)


class Closed:
    """What stands for a standard stream the process was started without (`<&-`, `>&-`),
    where Python leaves None and every use was an AttributeError, exit 70: writing to it
    (its text or its bytes) or reading from it is an OSError, "not open", which the usual
    paths make one line naming it (`error: stdout: not open`); stderr's takes what is
    said and drops it, there being nowhere else to say it."""

    closed = False
    encoding = "utf-8"

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def buffer(self) -> Closed:
        return self

    def write(self, data: object) -> int:
        if self.name == "stderr":
            return 0
        raise OSError(errno.EBADF, "not open")

    def read(self, size: int = -1) -> bytes:
        raise OSError(errno.EBADF, "standard input is closed")

    readline = read

    def flush(self) -> None:
        """Nothing is held: the interpreter's flush at exit passes."""

    def isatty(self) -> bool:
        return False

    def __enter__(self) -> Closed:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "not open")


def stand_in_for_closed() -> None:
    """A `Closed` for each standard stream Python found closed at start, its descriptor
    held by /dev/null: a file opened later (an output, a spool) would take the lowest free
    number, 1 for one, and a worker's stray print would land in it."""
    for fd, name, mode in (
        (0, "stdin", os.O_RDONLY),
        (1, "stdout", os.O_WRONLY),
        (2, "stderr", os.O_WRONLY),
    ):
        if getattr(sys, name) is not None:
            continue
        try:
            os.fstat(fd)
        except OSError:
            try:
                held = os.open(os.devnull, mode)
                if held != fd:
                    os.dup2(held, fd)
                    os.close(held)
            except OSError:
                pass
        setattr(sys, name, Closed(name))


def steady_streams() -> None:
    """Set stdout and stderr up for a command, once at start (entry.main, cli.main): a
    stand-in for each one the process was started without (`stand_in_for_closed`),
    stdout and stderr made to write all they are given (`whole_writes`), and stderr
    made unable to end the run (`Stderr`). A few microseconds: no import."""
    if sys.stdin is None or sys.stdout is None or sys.stderr is None:  # `<&-`, `>&-`
        stand_in_for_closed()
    sys.stdout = whole_writes(sys.stdout)
    if not isinstance(sys.stderr, Closed | Stderr):
        sys.stderr = Stderr(whole_writes(sys.stderr))


def whole_writes(stream: TextIO) -> TextIO:
    """`stream`, or a stream over the same descriptor that writes all it is given. Under
    PYTHONUNBUFFERED=1 or `python -u` (set in many containers and CI runners, and here)
    Python's stdout and stderr write straight to the descriptor, and a write the system
    took only part of (a disk filling up, a reader leaving the pipe) lost the rest without
    a word: a cut trace or JSON, and exit 0. A BufferedWriter writes the rest, whose
    error (No space left on device, a broken pipe: 141) is then raised. Flushed at each
    line, as the unbuffered stream was; its own FileIO leaves the descriptor open."""
    raw = getattr(stream, "buffer", None)
    if type(raw) is not io.FileIO:  # buffered already, or a stand-in, a test's capture
        return stream
    return io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(raw.fileno(), "w", closefd=False)),
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=True,
        write_through=True,
    )


class Stderr:
    """sys.stderr for a command: a write or flush that fails (`2>/dev/full`, a full log
    disk, the reader of `2> >(…)` gone) gives stderr up (`lose_stderr`) instead of raising:
    warnings and errors are what stderr carries, and losing them must not lose the
    output. It was an uncaught exception at the first warning (summary printed nothing,
    export wrote its file and ended in 1). The command then ends as with `2>&-`: its
    output, and the exit code it would have had (coreutils too goes on after a diagnostic
    it could not write, though it then exits 1; here a lost line changes nothing the
    output or the code says). Anything else is the stream's."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except OSError:
            lose_stderr()
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError:
            lose_stderr()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def lose_stderr() -> None:
    """Stderr failed: it becomes a `Closed` stand-in, which drops what it is given (as
    for `2>&-`), and descriptor 2 points at /dev/null, where the interpreter's last flush
    and a worker's stray line go without an error."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
    except OSError:
        pass
    if isinstance(sys.stderr, Stderr):
        sys.stderr.stream = Closed("stderr")  # type: ignore[assignment]
    else:
        sys.stderr = Closed("stderr")


def stdout_failed(error: OSError) -> OutputError:
    """A write to stdout that failed (`> /dev/full`, a full disk, a quota): one line naming
    stdout and exit 1, as `-o FILE` says it (it was an internal error, exit 70). Stdout then
    points at /dev/null: the interpreter's last flush of what is still buffered would fail
    again, print "Exception ignored" and end in exit 120."""
    quiet_stdout()
    return OutputError(f"stdout: {error.strerror or error}")


def failure(error: BaseException) -> int:
    """What a command that raised `error` ends in: one line on stderr (never a traceback)
    and its exit code. Both entry points (entry.py's fast export and the Typer app) end
    their commands here, so they say the same."""
    if isinstance(error, UsageError):
        echo(f"error: {error}", err=True)
        return EXIT_USAGE
    if isinstance(error, JournalError):  # its file named as every line names one
        from agent_profiler.diagnostics import shown_error

        echo(f"error: {shown_error(error)}", err=True)
        return EXIT_INPUT
    if isinstance(error, OutputError) and isinstance(error.__cause__, BrokenPipeError):
        # The reader of a pipe named as the output left (`-o fifo`, `-o >(head -c 10)`):
        # what its reader leaving stdout ends in, silently (it said `error: fifo: Broken
        # pipe`, exit 1). The reader says its own trouble, if any.
        return EXIT_BROKEN_PIPE
    if isinstance(error, AgentProfilerError):
        echo(f"error: {error}", err=True)
        return EXIT_INPUT
    if isinstance(error, BrokenPipeError):
        quiet_stdout()
        return EXIT_BROKEN_PIPE
    if isinstance(error, OSError) and _writing_stdout(error):
        return failure(stdout_failed(error))
    if isinstance(error, KeyboardInterrupt) or _query_interrupted(error):
        forget_unhandled_interrupt()
        echo("interrupted", err=True)
        return EXIT_INTERRUPTED
    from agent_profiler.diagnostics import error_text  # (imported here: a bug's path only)

    echo(
        f"internal error: {type(error).__name__}: {error_text(error)} (please report this "
        "with the harness name and version)",
        err=True,
    )
    return EXIT_INTERNAL


def _query_interrupted(error: BaseException) -> bool:
    """DuckDB's word for a Ctrl-C that came while it ran a query (`fleet`, `collect`): a
    RuntimeError, which ended the run as an internal error (exit 70)."""
    return type(error) is RuntimeError and str(error) == "Query interrupted"


def _writing_stdout(error: OSError) -> bool:
    """Whether `error` came from a write to stdout by another hand than ours (Click's
    `--help`, written in one piece): the frame it was raised in held stdout."""
    last = error.__traceback__
    while last is not None and last.tb_next is not None:
        last = last.tb_next
    if last is None:
        return False
    streams = [sys.stdout, getattr(sys.stdout, "buffer", None)]
    return any(any(v is s for s in streams) for v in last.tb_frame.f_locals.values())


def forget_unhandled_interrupt() -> None:
    """Let `python -m agent_profiler` end in the exit code we return after Ctrl-C.

    CPython notes a KeyboardInterrupt that leaves an `exec` of source text (dataclasses
    and namedtuple make their methods that way, so an import is enough) in a flag that
    only the next such `exec` clears; under `-m` the interpreter then ends by killing
    itself with SIGINT, whatever code we exit with (run_eval_code_obj's
    _Py_UnhandledKeyboardInterrupt, checked in Py_RunMain). The interrupt is handled
    here, so clear the flag the way CPython does: one more `exec` that ends normally."""
    exec("None")  # constant source, run for what it does to that flag


def quiet_stdout() -> None:
    """Point stdout at /dev/null: the interpreter flushes it at exit, and a flush into
    the closed pipe would print "Exception ignored ... BrokenPipeError" after we are done."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real stdout (an in-process test runner)
        pass


def human_size(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    raise AssertionError  # pragma: no cover


def counted(count: int, word: str, plural: str | None = None) -> str:
    """`1 session`, `0 sessions`, `2,000 sessions`: a count with its word agreeing
    (`plural` when adding an s is wrong: `process` → `processes`)."""
    return f"{count:,} {word if count == 1 else plural or word + 's'}"


def sessions_line(sessions: int, subagents: int) -> str:
    """`3 sessions (1 subagent)`: how every closing line and page heading counts the
    sessions it shows, subagents among them."""
    return f"{counted(sessions, 'session')} ({counted(subagents, 'subagent')})"


def kinds(counts: Mapping[str, int], shown: int = 6) -> str:
    """`kind count, …`: the most frequent first (then by name), `shown` at most, then how
    many kinds more."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    listed = ", ".join(f"{kind} {count}" for kind, count in ranked[:shown])
    return listed + (f", … {len(ranked) - shown} more kinds" if len(ranked) > shown else "")


def tell_reading(result: LoadResult, diagnostics: Diagnostics) -> None:
    """What reading could not use, on stderr: failures, warnings, unknown records."""
    if diagnostics.on_progress is not None:
        sys.stderr.write("\r\033[K")  # clear a progress line left below 100%

    def as_given(line: str) -> str:
        """The line with each piped journal named as the user named it, not by its copy."""
        for given, copy in result.copies:
            line = line.replace(str(copy), given)
        return line

    from agent_profiler.diagnostics import shown_error

    diagnostics.forget_failed(result.failures)  # each file said once: its error line
    for failed in result.failures:
        # Named as the warnings below name a file (shown_path), not by its raw path.
        echo(as_given(f"error: {shown_error(failed)}"), err=True)
    for line in diagnostics.summary_lines():
        echo(as_given(line), err=True)
    if diagnostics.unrecognised:
        # Every command says so: these records were not read, which is not a choice.
        echo(f"not recognised (not read): {kinds(diagnostics.unrecognised)}", err=True)
        # Where the first record of each kind listed is, so the user can look at one.
        counts = diagnostics.unrecognised
        for kind in sorted(counts, key=lambda k: (-counts[k], k))[:6]:
            if kind in diagnostics.unrecognised_at:
                echo(as_given(f"  first {kind}: {diagnostics.unrecognised_at[kind]}"), err=True)
    if result.ignored:
        echo(
            f"note: {counted(result.ignored, 'other file')} in the given folders "
            f"{'is' if result.ignored == 1 else 'are'} not *.jsonl, *.jsonl.gz or *.jsonl.zst and "
            f"{'was' if result.ignored == 1 else 'were'} not read"
            # A saved `claude -p` stream-json run is read when named, never in a walk.
            + (" (name a stream-json .txt or .log file directly)" if result.ignored_logs else ""),
            err=True,
        )


def byte_progress() -> Callable[[str, int, int], None] | None:
    """Progress inside one large file (on a terminal only): percent of its bytes read."""
    if not sys.stderr.isatty():
        return None

    def report(path: str, done: int, size: int) -> None:
        if size < PROGRESS_BYTES:
            return
        name = printable(Path(path).name[:50])
        share = min(100, 100 * done // max(size, 1))
        sys.stderr.write(f"\r\033[Kreading {name}: {share}% of {human_size(size)}")
        if share >= 100:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return report


def group_progress(journals: list[Path]) -> Callable[[int, int, JournalGroup], None] | None:
    """A one-line progress display on stderr (on a terminal only), journal group by group,
    when there is more than one input or a directory. Inside one large file
    `byte_progress` shows how far reading is."""
    from agent_profiler.inputs import is_folder

    many = len(journals) > 1 or any(is_folder(p) for p in journals)
    if not many or not sys.stderr.isatty():
        return None

    def report(done: int, total: int, group: JournalGroup) -> None:
        name = printable((group.main or group.extras[0]).name)
        end = "\n" if done == total else ""
        sys.stderr.write(f"\r\033[Kreading journals: {done}/{total} {name[:60]}{end}")
        sys.stderr.flush()

    return report
