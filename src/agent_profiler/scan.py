"""A long journal's skippable lines told on another core while this process reads the
rest (`jsonl.LineSkip`'s byte test, run by a forked helper over the same file).

Claude Code's progress records are 70% of a long transcript's lines, and telling each by
its bytes (`LineSkip.matches`: a few searches of the line) took 82 ms of reading the
100 MB bench journal, whose export takes 0.9 s; meanwhile the machine's second core
waited (a long session's second run of events is encoded on it only later,
writers/runs.py). Here a helper reads the file on its own and tests every line, and
sends this process a verdict per line through a pipe: the line's length and where its
record's type is for a line the test takes, 0 for one it does not (its length, if it
tells an answer for it: `Told`, below); it stops at a line without its newline (one
still being written). This process then takes a line only if its verdict says so and
its length and type's place agree: a file appended to while it
is read (a live transcript) reads the same either way; one rewritten in place between
the two reads is checked no further than that. Looking a verdict up costs a third of the
test. A line the helper has not told (it is behind: this process never waits for it; it
failed; it stopped before a line appended since) is tested here, as without a helper,
and a part the reader added to the test's `unless` since is looked for here.

A reader may also ask the helper to work something out of the lines that hold a marker
(`Told`, given with the test): Claude Code's tool calls, whose arguments are measured
(serialised, their digest, their target, their previews) by the same function the reader
runs. The helper sends each such line's answer through a second pipe, ahead of the
verdicts of the lines it holds, and the line's verdict says it has one and its length;
the reader takes it for that line if the verdict has come and the line it read has that
length (`Told.take`), and otherwise works it out itself, as without a helper. The answer
is a function of the line's bytes and of what the reading had set when the helper was
forked (the options, the estimator), so the records read and what is made of them are
the same either way; a `compute` that fails leaves that line to the reader.

Only where a helper may run (`allowed`: an export in one process, as a long session's
writing helper; writers/runs.py's rules: Linux, one thread, a second core, a small
resident set, SIGCHLD not ignored) and for a plain file of at least `SCAN_AFTER` bytes.

Where a one pass's reading runs in a forked helper (stream/forked.py), the two cores
are busy already, and a third process lost time: there the export that forked the
helper works the verdicts out itself, a few hundred lines at a time while it waits for
the helper's batches (`Scanning`), and the helper reads them from the pipe it was
handed (`given`) as from a scanning helper of its own."""

from __future__ import annotations

import contextlib
import io
import marshal
import os
import signal
import stat
from array import array
from collections import deque
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING

from agent_profiler.children import leave_with, worker_signals

if TYPE_CHECKING:
    from agent_profiler.jsonl import LineSkip

SCAN_AFTER = 8 * 2**20  # bytes; below, the test runs here (a fork and a pipe cost ~2 ms)
_BATCH = 4096  # verdicts per write to the pipe
_PIPE = 2**20  # the pipe's capacity asked for: a long transcript's verdicts in one
_AHEAD = 256  # lines tested here when the helper is behind, before its pipe is read again
_WINDOW = 2048  # a verdict is (length << 11) | (place of the type + 1): SKIP_WINDOW < 2047;
# a line not taken is 0, or (length << 11) when its answer is told (`Told`)
_PLACE = _WINDOW - 1  # a verdict's bits for the place of the type
_FRAME = 4  # bytes of a told batch's length (little-endian), before its marshalled data

_allowed: list[bool] = [False]
# A verdicts' pipe this process was handed (`given`): the reading of a one pass's helper,
# whose lines the export that forked it tells (stream/forked.py `Scanning`)
_given: list[int] = []
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


def is_allowed() -> bool:
    """Whether a helper may run beside this process's reading now (`allowed`)."""
    return _allowed[0]


def given(fd: int) -> None:
    """The verdicts of the next long plain file read here come through `fd` (the read
    end of a pipe whose other end another process writes, `Scanning`), whether or not a
    helper may run: the first `LineScan.start` takes it."""
    _given[:] = [fd]


class Told:
    """What a reader asks the helper to work out of each line holding one of `markers`
    (and not skipped): `compute(raw)`, a value `marshal` can carry or None, the same
    function the reader would run on those bytes. `take(number)` is the helper's value
    for line `number`, the line just read, if it has come and is of that line's bytes
    (`LineScan.told`), else None: the reader then works it out itself. Lines are taken in
    order: asking for a line lets go of the values of earlier ones."""

    __slots__ = ("compute", "markers", "scan")

    def __init__(self, markers: tuple[bytes, ...], compute: Callable[[bytes], object]) -> None:
        self.markers = markers
        self.compute = compute
        self.scan: LineScan | None = None  # the helper's, while one reads the file

    def take(self, number: int) -> object:
        scan = self.scan
        return scan.told(number) if scan is not None else None


class LineScan:
    """The helper's verdicts as they arrive; `matches(number, raw)` stands in for
    `skip.matches(raw)` for line `number` (1-based, physical) of the file; `told(number)`
    is the helper's answer for that line, where the reader asked for one (`Told`)."""

    __slots__ = (
        "_fd",
        "_later",
        "_pid",
        "_rest",
        "_told",
        "_told_fd",
        "_told_rest",
        "answered",
        "marker",
        "skip",
        "unless",
        "values",
    )

    def __init__(self, pid: int | None, fd: int, skip: LineSkip, told_fd: int = -1) -> None:
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
        # The answers asked for (`Told`): their pipe's end, the bytes of a batch not read
        # whole yet, and (line, answer) in line order.
        self._told_fd = told_fd
        if told_fd >= 0:
            os.set_blocking(told_fd, False)
        self._told_rest = bytearray()
        self._told: deque[tuple[int, object]] = deque()
        # The last line whose answer was told with its length, and read here with that
        # length (`matches`): the only line `told` answers for.
        self.answered = 0
        told = skip.told
        if told is not None and told_fd >= 0:
            told.scan = self

    @classmethod
    def start(cls, stream: object, skip: LineSkip) -> LineScan | None:
        """A helper scanning `stream`'s file (a plain one, read from its start), or None
        where none may or can run."""
        handed = _given.pop() if _given else -1
        raw = stream.raw if isinstance(stream, _BUFFERED) else None
        if not isinstance(raw, _FILE):
            if handed >= 0:  # (its teller then finds no one reading: it stops)
                os.close(handed)
            return None  # gzip, zstd: this process's test
        if handed >= 0:  # (told by the process that forked this one)
            return cls(None, handed, skip)
        if not _allowed[0]:
            return None
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
        ends: list[int] = []
        try:
            ends += os.pipe2(os.O_CLOEXEC)
            if skip.told is not None:  # (the answers asked for: a pipe of their own)
                ends += os.pipe2(os.O_CLOEXEC)
        except OSError:
            for end in (source, *ends):
                os.close(end)
            return None
        with contextlib.suppress(OSError, AttributeError):
            import fcntl

            for write_end in ends[1::2]:
                fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, _PIPE)
        return cls._fork(os.getpid(), held, source, ends, skip)

    @classmethod
    def _fork(
        cls,
        parent: int,
        held: set[int | signal.Signals] | None,
        source: int,
        ends: list[int],
        skip: LineSkip,
    ) -> LineScan | None:
        """The helper forked (its file and pipes' write ends closed here), or None.
        `ends`: the verdicts' pipe's read and write ends, then the answers' (`Told`)."""
        try:
            pid = os.fork()
        except OSError:  # (no pid to keep: none is made up)
            for end in (source, *ends):
                os.close(end)
            return None
        if pid == 0:  # the helper: it ends here, whatever happens
            code = 1
            try:
                import gc

                gc.disable()  # (it makes no cycles; a collection would copy pages)
                leave_with(parent, ends[0::2])
                worker_signals(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)
                if held is not None:
                    signal.pthread_sigmask(signal.SIG_SETMASK, held)
                _scan(source, ends[1], skip, *ends[3:])
                code = 0
            finally:
                os._exit(code)
        os.close(source)
        for write_end in ends[1::2]:
            os.close(write_end)
        return cls(pid, ends[0], skip, ends[2] if len(ends) > 2 else -1)

    def matches(self, number: int, raw: bytes) -> bool:
        """Whether line `number` (`raw`) is taken unparsed, as `skip.matches(raw)` while
        `skip.active`; asked of every line, so that a line whose answer was told is
        known to be the line the helper read (`answered`) while the test is off too."""
        values = self.values
        if number > len(values) and (number < self._later or not self._more(number)):
            return self.skip.active and self.skip.matches(raw)
        value = values[number - 1]
        place = value & _PLACE
        if not place:  # a line it did not take: parsed, whatever `unless` is
            if value and value >> 11 == len(raw):
                self.answered = number  # (its answer is of these bytes: `told` gives it)
            return False
        if (
            value >> 11 != len(raw)
            or not self.skip.active
            or not raw.startswith(self.marker, place - 1)
        ):
            return False
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

    def told(self, number: int) -> object:
        """The helper's answer for line `number`, the line read last, or None: it has none
        (no marker, or `compute` gave None), its verdict has not come, or the line read
        here is not the one it read (another length: a file rewritten in place). Its
        verdict came after it, so an answer told is in the pipe already. Never waits."""
        if number != self.answered:
            return None
        queue = self._told
        while True:
            while queue and queue[0][0] < number:
                queue.popleft()  # (lines are asked for in order: an earlier one is done)
            if queue:
                line, answer = queue[0]
                return answer if line == number else None
            if not self._more_told():
                return None

    def _more_told(self) -> bool:
        """Read the answers sent so far. False: none came (none yet, or no more)."""
        if self._told_fd < 0:
            return False
        try:
            chunk = os.read(self._told_fd, 1 << 16)
        except BlockingIOError:
            return False
        except OSError:
            chunk = b""
        if not chunk:
            self._close_told()
            return False
        data = self._told_rest
        data += chunk  # (a batch may come in many reads: kept in one growing buffer)
        start = 0
        while len(data) - start >= _FRAME:
            size = int.from_bytes(data[start : start + _FRAME], "little")
            end = start + _FRAME + size
            if end > len(data):
                break
            self._told.extend(marshal.loads(memoryview(data)[start + _FRAME : end]))
            start = end
        del data[:start]
        return True

    def _close_told(self) -> None:
        if self._told_fd >= 0:
            os.close(self._told_fd)
            self._told_fd = -1
        told = self.skip.told
        if told is not None and told.scan is self:
            told.scan = None

    def close(self) -> None:
        """Stop reading verdicts; the helper ended (killed if it had not) and reaped.
        Signals wait meanwhile (one raised halfway left the helper unreaped)."""
        from agent_profiler.writers.runs import signals_held

        with signals_held():
            self._later = 2**62  # (every line from now on: `_more` has nothing to read)
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
            self._close_told()
            self._told.clear()
            if self._pid is not None:
                with contextlib.suppress(ProcessLookupError, ChildProcessError):
                    os.kill(self._pid, signal.SIGKILL)
                    os.waitpid(self._pid, 0)
                self._pid = None


def _scan(source: int, out: int, skip: LineSkip, told_out: int = -1) -> None:
    """The helper's work: every line of `source` tested, verdicts written to `out`; the
    answers asked for (`skip.told`) to `told_out`, each batch before the verdicts of its
    lines."""
    told = skip.told if told_out >= 0 else None
    answers: list[tuple[int, object]] = []
    with open(source, "rb", buffering=2**20) as lines:
        for batch in _verdicts(lines, skip, _BATCH, answers if told is not None else None):
            if told is not None:
                _tell(told_out, answers)
            _write_all(out, batch)


def _verdicts(
    lines: Iterator[bytes], skip: LineSkip, size: int, answers: list[tuple[int, object]] | None
) -> Iterator[bytes]:
    """Each line's verdict (`LineScan`), `size` lines' at a time; where `answers` is
    given, the answers asked for (`skip.told`) are added to it before the verdicts of
    their lines are yielded."""
    from agent_profiler.jsonl import SKIP_WINDOW

    matches, marker = skip.matches, skip.marker
    told = skip.told if answers is not None else None
    markers = told.markers if told is not None else ()
    compute = told.compute if told is not None else None
    batch = array("Q")
    for number, raw in enumerate(lines, start=1):
        if raw[-1] != 10:
            # The end as it is now (a line still being written): read on, its rest
            # would be a line of its own here, and every verdict after it one off.
            break
        if matches(raw):
            batch.append(len(raw) << 11 | raw.find(marker, 0, SKIP_WINDOW) + 1)
        else:
            batch.append(0)
            if compute is not None and answers is not None:
                for part in markers:
                    if part in raw:
                        try:
                            answer = compute(raw)
                        except Exception:  # (the reader works it out, or says why not)
                            answer = None
                        if answer is not None:
                            answers.append((number, answer))
                            batch[-1] = len(raw) << 11  # (told with its length)
                        break
        if len(batch) == size:
            yield batch.tobytes()
            del batch[:]
    yield batch.tobytes()


class Scanning:
    """The verdicts of a file's lines worked out a few hundred lines at a time (`step`),
    by a process that has other work and waits between it (a one pass's export, while
    its reading helper reads: stream/forked.py), and written to `out` without waiting
    (the reader takes a verdict only once it has come, `LineScan`). Ends at the file's
    end, or once the reader is gone (a write to a pipe no one reads fails)."""

    __slots__ = ("_file", "_out", "_pending", "_verdicts")

    STEP = 512  # lines a step (the export looks at its own pipe between steps)
    HELD = 2**20  # bytes of verdicts held here, the pipe full, before steps pause

    def __init__(self, path: str, out: int, *, skip: LineSkip) -> None:
        self._out = out
        self._pending = bytearray()
        self._file: IO[bytes] | None = None
        self._verdicts: Iterator[bytes] | None = None
        try:
            os.set_blocking(out, False)
            self._file = open(path, "rb", buffering=2**20)  # noqa: SIM115  (`close`)
        except OSError:  # (the reader tests every line itself, as without a helper)
            self.close()
            return
        self._verdicts = _verdicts(self._file, skip, self.STEP, None)

    @property
    def done(self) -> bool:
        return self._out < 0

    def step(self) -> None:
        """Some lines' verdicts, and what the pipe takes of those waiting."""
        verdicts = self._verdicts
        if verdicts is not None and len(self._pending) < self.HELD:
            try:
                self._pending += next(verdicts)
            except StopIteration:
                self._verdicts = None
        if self._pending:
            try:
                del self._pending[: os.write(self._out, self._pending)]
            except BlockingIOError:
                pass  # (the pipe is full: the reader is behind)
            except OSError:  # (the reader is gone: nothing more to tell)
                self.close()
                return
        if self._verdicts is None and not self._pending:
            self.close()

    def close(self) -> None:
        if self._out >= 0:
            with contextlib.suppress(OSError):
                os.close(self._out)
            self._out = -1
        self._verdicts = None
        if self._file is not None:
            self._file.close()
            self._file = None


def _tell(out: int, answers: list[tuple[int, object]]) -> None:
    """A batch of answers, (line, answer) each, framed with its length."""
    data = marshal.dumps(answers)
    _write_all(out, len(data).to_bytes(_FRAME, "little") + data)
    answers.clear()


def _write_all(out: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(out, view) :]
