"""A one pass's reading side in a forked process, while this process writes: the two
sides of stream/codex.py or stream/claude.py on two cores.

The reading side (`CodexReading`, `ClaudeReading`) hands the writing side data only: a
`Batch` every few hundred lines, the `Ending`, and, once told which calls the end reads,
the session. Here
the same is made in a helper forked before the reading starts (while this process is
small: the two processes' resident sets are each their own work's, not the model's
twice, as with a helper forked after it, writers/runs.py) and sent through a pipe,
pickled, each message after its length; the helper's `Diagnostics` (its warnings,
counts, lines read) come back with the session and become this process's. What is
handed over is what one process would hand over, so the trace is the same bytes either
way. The helper bounds the pair (this process waits for its batches), so where its
reading runs a byte test on each line (Claude Code's), this process works the verdicts
out in its waits and tells the helper (scan.py `Scanning`).

The helper ends with the pass, whatever happens: what it cannot do (`NotHandled`) or
fails at is sent as such and the pass falls back to the model path as in one process
(which reads the file again and says what is wrong with it); if this process stops
first (a `NotHandled` of the writing side, an interruption), it kills and reaps the
helper. Only where a helper may run (scan.py's `allowed`, writers/runs.py's
`helper_can_run`: Linux, one thread, a second core, a small resident set) and for a
journal of at least `FORK_AFTER` bytes."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
from collections.abc import Callable, Iterator
from dataclasses import fields, replace
from functools import cache, partial
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from agent_profiler import scan
from agent_profiler.children import fork_helper
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.model import Session
from agent_profiler.records import field_values
from agent_profiler.stream.log import NotHandled, ReadAgain

if TYPE_CHECKING:
    from agent_profiler.jsonl import LineSkip

# Bytes of journal below which the pass reads in this process (a fork, its pipes and
# the hand-over cost more than they save on a small rollout).
FORK_AFTER = 8 * 2**20
_PIPE = 2**20  # the pipe's capacity asked for: a few batches ahead
_BUFFER = 2**16
_FRAME = 8  # bytes of a message's length (little-endian), before it


class Reading(Protocol):
    """What a pass's reading side offers its writing side (stream/codex_reading.py)."""

    def batches(self) -> Iterator[Any]: ...

    def ending(self) -> Any: ...

    def finish(self, told: Any) -> tuple[Session, list[Any]]: ...


class HelpedReading(Reading, Protocol):
    """A reading side a helper runs: it checks what it can while the writing side ends."""

    def check(self) -> None: ...

    def let_go(self) -> None: ...


def read_with(
    forked: ForkedReading | None,
    make: Callable[[], HelpedReading],
    read: Callable[[Reading], Session],
) -> Session:
    """`read` of the reading side a helper runs (`forked`: ended and reaped after), or of
    one made in this process (`make()`: its state let go after, not at the cycle
    collector's next full collection)."""
    if forked is None:
        here = make()
        try:
            return read(here)
        finally:
            here.let_go()
    try:
        return read(forked)
    finally:
        forked.close()


def may_fork(path: Path, *, allowed: bool | None = None) -> bool:
    """Whether the reading of `path` would run in a helper: where one may run (`allowed`,
    None: scan.py's), on a plain file of at least `FORK_AFTER` bytes."""
    from agent_profiler.writers.runs import helper_can_run

    if not (scan.is_allowed() if allowed is None else allowed) or not helper_can_run():
        return False
    try:
        return path.is_file() and path.stat().st_size >= FORK_AFTER
    except OSError:
        return False


def fork_reading(
    make: Callable[[], HelpedReading],
    path: Path,
    diagnostics: Diagnostics,
    skip: Callable[[], LineSkip] | None = None,
) -> ForkedReading | None:
    """The reading side (`make()`, in the helper) forked, or None where none may run.
    `skip`: the byte test the reading runs on each line (jsonl.LineSkip), made afresh:
    this process then tells the helper each line's verdict in its waits for batches
    (scan.py `Scanning`), as a scanning helper of its own would."""
    from agent_profiler.writers.runs import signals_held

    if not may_fork(path):
        return None
    for stream in (sys.stdout, sys.stderr):  # (a buffered line is not written twice)
        with contextlib.suppress(Exception):
            stream.flush()
    made: ForkedReading | None = None
    try:
        # Held from the pipes' making to the helper held here (a signal then: the helper
        # killed and reaped, its pipes closed, on the way out).
        with signals_held() as held:
            scanned = None if skip is None else partial(scan.Scanning, str(path), skip=skip())
            made = _fork(make, diagnostics, held, scanned)
    except BaseException:
        if made is not None:
            made.close()
        raise
    return made


def _fork(
    make: Callable[[], HelpedReading],
    diagnostics: Diagnostics,
    held: set[int | signal.Signals] | None,
    scanned: Callable[[int], scan.Scanning] | None = None,
) -> ForkedReading | None:
    """The pipes made and the helper forked (its ends closed here), or None. `scanned`:
    what tells the helper its lines' verdicts, given the write end of a third pipe."""
    try:
        ends = [*os.pipe2(os.O_CLOEXEC), *os.pipe2(os.O_CLOEXEC)]
        if scanned is not None:
            ends += os.pipe2(os.O_CLOEXEC)
    except OSError:
        for end in ends:
            os.close(end)
        return None
    with contextlib.suppress(OSError, AttributeError):
        import fcntl

        for end in ends[1::4]:  # (the batches' and the verdicts' write ends)
            fcntl.fcntl(end, fcntl.F_SETPIPE_SZ, _PIPE)
    told = ends[4] if scanned is not None else -1
    # (not asked to die with this process: its pipes end it as surely, `_serve`)
    forked = fork_helper(
        partial(_serve, make, diagnostics, ends[1], ends[2], told),
        [ends[0], ends[3], *ends[5:]],
        held,
        collect=True,
        signalled=False,
    )
    if forked is None:
        for end in ends:
            os.close(end)
        return None
    pid, frozen = forked
    os.close(ends[1])
    os.close(ends[2])
    made = ForkedReading(pid, ends[0], ends[3], frozen, diagnostics)
    if scanned is not None:
        os.close(ends[4])
        made.scanning = scanned(ends[5])
    return made


def _serve(
    make: Callable[[], HelpedReading], diagnostics: Diagnostics, out: int, into: int, told: int
) -> None:
    """The helper's work: the reading side's batches, its ending and its session sent
    through `out` (the calls the end reads come through `into`; its lines' verdicts
    through `told`, where the export tells them). Once this process is gone, the helper
    ends at its next message (a write to a pipe no one reads fails) or at its wait for
    the calls (an end of file): at most a batch's records later."""
    sent = os.fdopen(out, "wb", buffering=_BUFFER)
    if told >= 0:
        scan.given(told)
    try:
        # (no scanning helper of its own, scan.py: a third process on two cores took
        # longer than the reading's own byte test, 100 MB Claude Code transcript; the
        # export tells the verdicts in its waits instead, `Scanning`)
        with scan.allowed(False):
            reading = make()
            for batch in reading.batches():
                _send(sent, ("batch", batch))
            _send(sent, ("ending", reading.ending()))
        # (while the writing side ends; a call changed after it was written is said with
        # the session, after the writing side's own checks, as in one process)
        reading.check()
        import pickle

        with os.fdopen(into, "rb", buffering=_BUFFER) as said:
            told = pickle.load(said)
        session, ops = reading.finish(told)
        diagnostics.on_progress = None  # (this process's: not sent)
        # (its responses are those of the batches: not sent again)
        _send(sent, ("session", (replace(session, responses=()), ops, diagnostics)))
    except ReadAgain as again:
        _send(sent, ("again", str(again)))
    except NotHandled as stop:
        _send(sent, ("stop", str(stop)))
    except Exception as error:  # (a bug, or a file it cannot read: the model path says)
        _send(sent, ("failed", f"{type(error).__name__}: {error}"))
    finally:
        with contextlib.suppress(OSError):
            sent.close()


def _send(out: IO[bytes], message: tuple[str, Any]) -> None:
    """A message pickled, after its length (`_FRAME` bytes): the export then knows a
    whole one has come without waiting for it (`ForkedReading._receive`)."""
    import io
    import pickle  # (only where a helper runs: a plain export imports no pickle)

    data = io.BytesIO()
    pickler = pickle.Pickler(data, pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _reducers()
    pickler.dump(message)
    out.write(len(data.getbuffer()).to_bytes(_FRAME, "little"))
    out.write(data.getbuffer())
    out.flush()


@cache
def _reducers() -> dict[type, Any]:
    """The records a batch is made of, pickled as their class and their fields' values
    in order (the class is called with them): a slots dataclass's default pickling makes
    a dict of its state for each object and sets each field from it, three times the
    cost, and the reading side's time is the pass's."""
    import copyreg

    from agent_profiler import attribution, model

    table: dict[type, Any] = dict(copyreg.dispatch_table)
    kinds = [
        attribution.Item,
        attribution._Remove,
        attribution._Clear,
        attribution.Observation,
        model.Usage,
        model.Response,
        model.ToolCall,
        model.Compaction,
        model.ContextSnapshot,
        model.ContextChange,
    ]
    for kind in kinds:
        assert all(f.init for f in fields(kind)), kind  # (made again from its fields)
        table[kind] = partial(_reduce, kind, field_values(tuple(f.name for f in fields(kind))))
    return table


def _reduce(kind: type, values: Callable[[Any], tuple[Any, ...]], made: Any) -> tuple[Any, ...]:
    return kind, values(made)


class ForkedReading:
    """The writing side's end of a reading side run by a forked helper: `batches`,
    `ending` and `finish` as the reading side's own (`Reading`); `close` ends it."""

    def __init__(
        self, pid: int, read_end: int, write_end: int, frozen: bool, diagnostics: Diagnostics
    ) -> None:
        self.pid = pid
        self.read_end = read_end
        self.received = bytearray()  # what came of the messages not taken yet
        self.write_end = write_end
        self.scanning: scan.Scanning | None = None
        self.frozen = frozen  # a read froze what existed before (collector.fewer_collections)
        self.diagnostics = diagnostics
        self._ending: Any = None
        self.responses: list[Any] = []  # the batches' (the session's, in order)

    def batches(self) -> Iterator[Any]:
        responses = self.responses
        while True:
            kind, value = self._receive()
            if kind != "batch":
                self._ending = value
                self._stop_scanning()  # (the helper has read every line)
                return
            for entry in value.entries:
                if entry[0]:  # (None: a compaction; False: a response that was no request)
                    responses.append(entry[0])
            yield value

    def ending(self) -> Any:
        return self._ending

    def finish(self, told: Any) -> tuple[Session, list[Any]]:
        import pickle

        with os.fdopen(self.write_end, "wb") as said:
            self.write_end = -1
            pickle.dump(told, said, protocol=pickle.HIGHEST_PROTOCOL)
        kind, value = self._receive()
        if kind != "session":
            raise RuntimeError(f"the reading helper sent {kind} for the session")
        session, ops, diagnostics = value
        for field in fields(diagnostics):  # (the helper's are this process's now)
            if field.name != "on_progress":
                setattr(self.diagnostics, field.name, getattr(diagnostics, field.name))
        return replace(session, responses=tuple(self.responses)), ops

    def _receive(self) -> tuple[str, Any]:
        """The helper's next message; while none has come whole, the verdicts of some
        more lines worked out and told (`scanning`), until there are no more."""
        import pickle

        received = self.received
        while True:
            if len(received) >= _FRAME:
                end = _FRAME + int.from_bytes(received[:_FRAME], "little")
                if len(received) >= end:
                    break
            scanning = self.scanning
            if scanning is not None and not _readable(self.read_end):
                scanning.step()
                if scanning.done:
                    self.scanning = None
                continue
            try:
                chunk = os.read(self.read_end, _BUFFER)
            except OSError as error:
                raise RuntimeError(f"the reading helper's pipe failed: {error}") from None
            if not chunk:
                raise RuntimeError("the reading helper ended without a word")
            received += chunk
        kind, value = pickle.loads(memoryview(received)[_FRAME:end])
        del received[:end]
        if kind == "stop":
            raise NotHandled(value)
        if kind == "again":
            raise ReadAgain(value)
        if kind == "failed":
            raise RuntimeError(f"the reading helper failed: {value}")
        return kind, value

    def _stop_scanning(self) -> None:
        """No more verdicts told (`scanning`): its pipe closed."""
        if self.scanning is not None:
            self.scanning.close()
            self.scanning = None

    def close(self) -> None:
        """End the helper (killed if it has not ended) and reap it; let the pipes go."""
        try:
            if self.pid > 0:  # (0 or below would signal a whole process group)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(self.pid, 0)
                self.pid = 0
        finally:
            self._stop_scanning()
            if self.read_end >= 0:
                with contextlib.suppress(OSError):
                    os.close(self.read_end)
                self.read_end = -1
            if self.write_end >= 0:
                with contextlib.suppress(OSError):
                    os.close(self.write_end)
                self.write_end = -1
            if not self.frozen:
                gc.unfreeze()
                self.frozen = True


def _readable(fd: int) -> bool:
    """Whether a read of `fd` would not wait."""
    import select

    return bool(select.select([fd], [], [], 0)[0])
