"""A long journal's skippable lines told on another core while this process reads the
rest (`jsonl.LineSkip`'s byte test, run by a forked helper over the same file).

Claude Code's progress records are 70% of a long transcript's lines, and telling each by
its bytes (`LineSkip.matches`: a few searches of the line) took 82 ms of reading the
100 MB bench journal, whose export takes 0.9 s; meanwhile the machine's second core
waited (a long session's second run of events is encoded on it only later,
writers/runs.py). Here a helper reads the file on its own and tests every line, and
sends this process a verdict per line through a pipe: the line's length and where its
record's type is for a line the test takes, 0 for one it does not; it stops at a line
without its newline (one still being written). This process then takes a line only if
its verdict says so and its length and type's place agree: a file appended to while it
is read (a live transcript) reads the same either way; one rewritten in place between
the two reads is checked no further than that. Looking a verdict up costs a third of the
test. A line the helper has not told (it is behind: this process never waits for it; it
failed; it stopped before a line appended since) is tested here, as without a helper,
and a part the reader added to the test's `unless` since is looked for here.

Only where a helper may run (`allowed`: an export in one process, as a long session's
writing helper; writers/runs.py's rules: Linux, one thread, a second core, a small
resident set, SIGCHLD not ignored) and for a plain file of at least `SCAN_AFTER` bytes."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import stat
from array import array
from collections.abc import Iterator
from typing import TYPE_CHECKING

from agent_profiler.children import leave_with, worker_signals

if TYPE_CHECKING:
    from agent_profiler.jsonl import LineSkip

SCAN_AFTER = 8 * 2**20  # bytes; below, the test runs here (a fork and a pipe cost ~2 ms)
_BATCH = 4096  # verdicts per write to the pipe
_PIPE = 2**20  # the pipe's capacity asked for: a long transcript's verdicts in one
_AHEAD = 256  # lines tested here when the helper is behind, before its pipe is read again
_WINDOW = 2048  # a verdict is (length << 11) | (place of the type + 1): SKIP_WINDOW < 2047

_allowed: list[bool] = [False]
_BUFFERED, _FILE = io.BufferedReader, io.FileIO  # (as jsonl_open.open_stream makes a file)


@contextlib.contextmanager
def allowed(flag: bool) -> Iterator[None]:
    """Journals read meanwhile may be scanned by a helper (pipeline: an export in one
    process, where no worker keeps the second core busy)."""
    before, _allowed[0] = _allowed[0], flag
    try:
        yield
    finally:
        _allowed[0] = before


class LineScan:
    """The helper's verdicts as they arrive; `matches(number, raw)` stands in for
    `skip.matches(raw)` for line `number` (1-based, physical) of the file."""

    __slots__ = ("_fd", "_later", "_pid", "_rest", "marker", "skip", "unless", "values")

    def __init__(self, pid: int | None, fd: int, skip: LineSkip) -> None:
        # None once reaped (or for none): never an int to signal, as 0 or -1 would signal
        # a whole process group, or every process this one may
        self._pid = pid if pid is not None and pid > 0 else None
        self._fd = fd  # the pipe's end, read without waiting
        os.set_blocking(fd, False)
        self._later = 0  # a line not told yet before this one is tested here, at once
        self._rest = b""
        self.skip = skip
        self.marker = skip.marker
        self.unless = skip.unless  # the test the helper ran (the reader may change it)
        self.values = array("Q")  # one verdict per line, from line 1

    @classmethod
    def start(cls, stream: object, skip: LineSkip) -> LineScan | None:
        """A helper scanning `stream`'s file (a plain one, read from its start), or None
        where none may or can run."""
        if not _allowed[0] or not isinstance(stream, _BUFFERED):
            return None
        raw = stream.raw
        if not isinstance(raw, _FILE):
            return None  # gzip, zstd: this process's test
        from agent_profiler.writers.runs import helper_can_run, signals_held

        try:
            status = os.fstat(raw.fileno())
            if not stat.S_ISREG(status.st_mode) or status.st_size < SCAN_AFTER:
                return None
            if not helper_can_run():
                return None
        except OSError:
            return None
        made: LineScan | None = None
        try:
            # Held from the file's opening to the helper held here (a signal then: its
            # descriptors closed, the helper killed and reaped, on the way out).
            with signals_held() as held:
                made = cls._open(raw.fileno(), held, skip)
        except BaseException:
            if made is not None:
                made.close()
            raise
        return made

    @classmethod
    def _open(
        cls, fd: int, held: set[int | signal.Signals] | None, skip: LineSkip
    ) -> LineScan | None:
        """The file opened again, the pipe made, the helper forked; or None."""
        try:
            source = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            read_end, write_end = os.pipe2(os.O_CLOEXEC)
        except OSError:
            os.close(source)
            return None
        with contextlib.suppress(OSError, AttributeError):
            import fcntl

            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, _PIPE)
        return cls._fork(os.getpid(), held, source, read_end, write_end, skip)

    @classmethod
    def _fork(
        cls,
        parent: int,
        held: set[int | signal.Signals] | None,
        source: int,
        read_end: int,
        write_end: int,
        skip: LineSkip,
    ) -> LineScan | None:
        """The helper forked (its file and pipe's ends closed here), or None."""
        try:
            pid = os.fork()
        except OSError:  # (no pid to keep: none is made up)
            for end in (source, read_end, write_end):
                os.close(end)
            return None
        if pid == 0:  # the helper: it ends here, whatever happens
            code = 1
            try:
                import gc

                gc.disable()  # (it makes no cycles; a collection would copy pages)
                leave_with(parent, [read_end])
                worker_signals(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)
                if held is not None:
                    signal.pthread_sigmask(signal.SIG_SETMASK, held)
                _scan(source, write_end, skip)
                code = 0
            finally:
                os._exit(code)
        os.close(source)
        os.close(write_end)
        return cls(pid, read_end, skip)

    def matches(self, number: int, raw: bytes) -> bool:
        values = self.values
        if number > len(values) and (number < self._later or not self._more(number)):
            return self.skip.matches(raw)
        value = values[number - 1]
        if (
            value == 0
            or value >> 11 != len(raw)
            or not raw.startswith(self.marker, (value & (_WINDOW - 1)) - 1)
        ):
            return False  # (a line it did not take is parsed, whatever `unless` is now)
        unless = self.skip.unless
        if unless is not self.unless:  # parts the reader added since: looked for here
            for part in unless:
                if part not in self.unless and part in raw:
                    return False
        return True

    def _more(self, number: int) -> bool:
        """Read the verdicts sent so far, until line `number` has one. False: none for it
        yet (this process never waits for the helper: the next `_AHEAD` lines are tested
        here before it looks again), or the helper sent no more."""
        values = self.values
        while len(values) < number:
            if self._fd < 0:
                return False
            try:
                chunk = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                self._later = number + _AHEAD
                return False
            except OSError:
                chunk = b""
            if not chunk:
                self.close()
                return False
            data = self._rest + chunk
            whole = len(data) - len(data) % 8
            values.frombytes(data[:whole])
            self._rest = data[whole:]
        return True

    def close(self) -> None:
        """Stop reading verdicts; the helper ended (killed if it had not) and reaped.
        Signals wait meanwhile (one raised halfway left the helper unreaped)."""
        from agent_profiler.writers.runs import signals_held

        with signals_held():
            self._later = 2**62  # (every line from now on: `_more` has nothing to read)
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
            if self._pid is not None:
                with contextlib.suppress(ProcessLookupError, ChildProcessError):
                    os.kill(self._pid, signal.SIGKILL)
                    os.waitpid(self._pid, 0)
                self._pid = None


def _scan(source: int, out: int, skip: LineSkip) -> None:
    """The helper's work: every line of `source` tested, verdicts written to `out`."""
    from agent_profiler.jsonl import SKIP_WINDOW

    matches, marker = skip.matches, skip.marker
    batch = array("Q")
    with open(source, "rb", buffering=2**20) as lines:
        for raw in lines:
            if raw[-1] != 10:
                # The end as it is now (a line still being written): read on, its rest
                # would be a line of its own here, and every verdict after it one off.
                break
            if matches(raw):
                batch.append(len(raw) << 11 | raw.find(marker, 0, SKIP_WINDOW) + 1)
            else:
                batch.append(0)
            if len(batch) == _BATCH:
                _write_all(out, batch.tobytes())
                del batch[:]
    _write_all(out, batch.tobytes())


def _write_all(out: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(out, view) :]
