"""A long session's events in two runs on its group's sequence, the second encoded by a
helper process beside the first, on a second core.

The writing of one long session was one core's work while the machine's others waited:
the events are swept and encoded in time order on one sequence, and the encoder's state
(interning, the delta clock) runs from packet to packet. Here the session's sweep is cut
at a slice begin (`second_run_at`): the first run is encoded as ever; the second by a
fresh encoder on the same sequence, whose first packet clears the sequence's incremental
state (SEQ_INCREMENTAL_STATE_CLEARED: Trace Processor starts its interning afresh there,
proto_trace_reader.cc HandleIncrementalStateCleared) and starts a clock id of its own (a
clock's snapshots must not go back: events.py DeltaClock). The session after it starts
afresh the same way. So each run depends on the plan alone: a forked helper encodes the
second run into a file of its own while this process encodes the first, and its bytes
follow the first run's. Where no helper can run (not Linux, one core, a thread besides
this one, inside a folder's worker, `--jobs 1`, a fork or a file refused, the helper
failed), this process encodes the second run after the first: the same bytes.

The helper sweeps the first run's events again without encoding them (a sweep costs
about a third of an event's encoding), so the first run is the larger share
(`FIRST_SHARE`). On the 100 MB Claude Code bench journal, with the first run at 55% the
helper ended 4-8 ms before it (six runs); at 54%, within 0-4 ms after it, and the export
ended 3 ms sooner.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import signal
import struct
import sys
import threading
from collections.abc import Callable, Iterator
from itertools import chain
from typing import IO, Any, cast

from agent_profiler.children import fork_helper
from agent_profiler.layout import SessionPlan
from agent_profiler.writers.chunks import PacketSink
from agent_profiler.writers.events import EventEncoder
from agent_profiler.writers.perfetto import BEGIN, END, Event, encode_events, session_events

# A session of at least this many slices is written in two runs. Below it the helper's
# start (a fork, the pages both processes then copy) costs about what it saves: measured
# on slices of the bench journals (docs/performance.md, "A second core").
SECOND_RUN_SLICES = 4096
# A helper runs only while this process holds at most this much (`helper_can_run`).
HELPER_MEMORY = 50 * 2**20
# The first run's share of the slice begins, as a fraction (numerator, denominator).
FIRST_SHARE = (27, 50)
_COUNT = struct.Struct("<QQ")  # the helper's packet count and clock ids used, at its end
_COPY = 1 << 20


def second_run_at(plan: SessionPlan) -> int | None:
    """How many slice begins the first run of this session's events takes (the second
    starts at the next one), or None: the session is written in one run."""
    count = plan.slice_count
    if count < SECOND_RUN_SLICES:
        return None
    numerator, denominator = FIRST_SHARE
    return count * numerator // denominator


def write_in_two_runs(
    encoder: EventEncoder,
    sink: PacketSink,
    stream: IO[bytes],
    plan: SessionPlan,
    at: int,
    *,
    helper: bool,
) -> tuple[EventEncoder, int]:
    """Encode `plan`'s events in two runs: the first with `encoder` into `sink`, the
    second after it in `stream` (by a helper process when `helper` and one can run).
    Returns the encoder for the group's next session and the packets the encoders before
    it wrote (`encoder`'s and the second run's)."""
    sequence = encoder.sequence
    # The first run may start a clock at its first event (the session starts before the
    # last event written): the second run takes the id after that one.
    second_clocks = encoder.clock.used + 1
    sink.stop()  # its thread ended (its chunks written): a fork copies no other thread
    helper_run: _Helper | None = None
    threaded = sink.threaded
    try:
        if helper:
            with signals_held() as held:  # (not between the fork and `helper_run` set)
                helper_run = _Helper.start(plan, at, sequence, second_clocks, sink.compress, held)
        # Beside a helper no core waits: this run's chunks are deflated here (a thread
        # only competed with the helper: chunks.PacketSink).
        sink.threaded = threaded and helper_run is None
        events = session_events(plan)
        first = _first_run(encoder, sink.add, plan.activity, events, at)
        sink.close()  # the first run's packets before the second run's
        packets = encoder.packets
        if encoder.clock.used > second_clocks:
            # The first run started more than one clock (its times went back: a sweep's
            # never do): the second run goes on after them, here, in either case.
            second_clocks = encoder.clock.used
            if helper_run is not None:
                helper_run.kill()
                helper_run = None
        second = helper_run.join(stream) if helper_run is not None else None
        helper_run = None
        if second is None:  # encoded here: the same bytes the helper would have written
            second = _second_run(
                plan,
                chain((first,), events),
                sequence,
                second_clocks,
                stream,
                sink.compress,
                threaded=threaded,
            )
    finally:
        sink.threaded = threaded
        if helper_run is not None:
            helper_run.kill()
    encoder.close()  # (the group's next session has one of its own; the caller's if it failed)
    written, clocks_used = second
    return EventEncoder(sequence, clocks_used=clocks_used), packets + written


@contextlib.contextmanager
def signals_held() -> Iterator[set[int | signal.Signals] | None]:
    """Ctrl-C and SIGTERM held back (the mask before yielded, None where there is none):
    one that came between the fork and the helper's own handlers ran this process's
    handler in the helper (a second "interrupted", the spool's buffer flushed twice), and
    one between the fork and `helper_run` set left the helper unkilled. It is raised once
    the mask is lifted, as any other."""
    if not hasattr(signal, "pthread_sigmask"):
        yield None
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield before
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _first_run(
    encoder: EventEncoder,
    add: Callable[[bytes], None],
    activity: str,
    events: Iterator[Event],
    at: int,
) -> Event:
    """Encode the events before the (at + 1)-th slice begin (encode_events' loop, which
    stops there); returns that begin."""
    end, begin, counters = encoder.end, encoder.begin, encoder.counters
    taken = 0
    for event in events:
        ts, _, _, what, part = event
        if part == END:
            add(end(ts, what.track_uuid))  # type: ignore[union-attr]
        elif part == BEGIN:
            taken += 1
            if taken > at:
                return event
            add(begin(ts, what))  # type: ignore[arg-type]
        else:
            add(counters(ts, activity, what))  # type: ignore[arg-type]
    raise ValueError("the plan has fewer slices than its count")


def _skip_first_run(events: Iterator[Event], at: int) -> Event:
    """The (at + 1)-th slice begin of `events`, those before it read and dropped."""
    taken = 0
    for event in events:
        if event[4] == BEGIN:
            taken += 1
            if taken > at:
                return event
    raise ValueError("the plan has fewer slices than its count")


def _second_run(
    plan: SessionPlan,
    events: Iterator[Event],
    sequence: int,
    clocks_used: int,
    stream: IO[bytes],
    compress: bool,
    *,
    threaded: bool,
) -> tuple[int, int]:
    """Encode the second run's events (from its first begin on) into `stream`, in chunks
    of their own; returns the packets written and the sequence's clock ids used after.
    (`threaded`: chunks.PacketSink's; not in the helper, beside this process's first run.)"""
    encoder = EventEncoder(sequence, clocks_used=clocks_used)
    sink = PacketSink(stream, compress=compress, threaded=threaded)
    try:
        encode_events(encoder, sink.add, plan.activity, events)
        sink.close()
    finally:
        sink.stop()
        encoder.close()
    return encoder.packets, encoder.clock.used


def helper_can_run() -> bool:
    """A forked helper is safe and useful: Linux (macOS's system libraries are not
    fork-safe), this process's only thread, a second core to run on, and memory: a helper
    copies most of the pages it shares with this process (it and this process touch each
    object the plan refers to, and a reference count is a write), so it runs only while
    this process holds at most `HELPER_MEMORY`, the two together staying within the
    export's target of 100 MB (docs/performance.md)."""
    if not sys.platform.startswith("linux") or threading.active_count() != 1:
        return False
    if signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN:
        return False  # (children reaped by the kernel: no helper's outcome to wait for)
    try:
        if len(os.sched_getaffinity(0)) < 2:
            return False
        return _resident() <= HELPER_MEMORY
    except (AttributeError, OSError, ValueError, IndexError):
        return False


def _resident() -> int:
    """This process's resident set now, in bytes (Linux's /proc/self/statm)."""
    with open("/proc/self/statm", "rb") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


class _Helper:
    """A forked process encoding the second run into a file with no name, its packet
    count and the clock ids used after its packets."""

    def __init__(self, pid: int, spool: Any, frozen: bool) -> None:  # a spools._Spool
        self.pid = pid
        self.spool = spool
        self.frozen = frozen  # a read froze what existed before (collector.fewer_collections)

    @classmethod
    def start(
        cls,
        plan: SessionPlan,
        at: int,
        sequence: int,
        clocks_used: int,
        compress: bool,
        held: set[int | signal.Signals] | None,
    ) -> _Helper | None:
        """Fork the helper (signals held: `held` is the mask to restore in it), or None
        where none can run."""
        if not helper_can_run():
            return None
        from agent_profiler.errors import OutputError
        from agent_profiler.spools import unnamed_temporary_file

        try:
            spool = unnamed_temporary_file()
        except OutputError:
            return None  # no temporary folder: this process writes the second run

        def second_run() -> None:
            events = session_events(plan)
            first = _skip_first_run(events, at)
            into = cast(IO[bytes], spool)  # (its writes' failures are OutputErrors)
            count, used = _second_run(
                plan, chain((first,), events), sequence, clocks_used, into, compress, threaded=False
            )
            spool.write(_COUNT.pack(count, used))
            spool.flush()

        # (it makes no cycles: its collector is off)
        forked = fork_helper(second_run, [], held, collect=False)
        if forked is None:
            spool.close()
            return None
        pid, frozen = forked
        return cls(pid, spool, frozen)

    def join(self, stream: IO[bytes]) -> tuple[int, int] | None:
        """Wait for the helper and copy its packets to `stream`: their number and the clock
        ids used after them, or None when it failed (nothing copied)."""
        spool = self.spool
        try:
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:  # reaped by someone else (SIGCHLD ignored after all)
                self.pid = 0
                return None
            self.pid = 0  # reaped: its pid may be another process's now, never to be killed
            self._thaw()
            if os.waitstatus_to_exitcode(status) != 0:
                return None
            size = spool.seek(0, os.SEEK_END) - _COUNT.size
            if size < 0:
                return None
            spool.seek(size)
            count, used = _COUNT.unpack(spool.read(_COUNT.size))
            spool.seek(0)
            while size > 0:
                chunk = spool.read(min(size, _COPY))
                if not chunk:  # (cannot be: the helper wrote it all, then ended)
                    raise spool.failed(OSError(errno.EIO, "the helper's file is cut short"))
                stream.write(chunk)
                size -= len(chunk)
            return int(count), int(used)
        finally:
            self._thaw()
            spool.close()

    def kill(self) -> None:
        """End the helper (this process failed or was interrupted) and reap it."""
        try:
            if self.pid > 0:  # (0 or below would signal a whole process group)
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                self.pid = 0
        except (ProcessLookupError, ChildProcessError):
            self.pid = 0
        finally:
            self._thaw()
            self.spool.close()

    def _thaw(self) -> None:
        """What the fork froze given back to the collector once the helper has ended
        (earlier, unfreezing wrote every object's header: a copy of each page), unless a
        read had frozen the model before (collector.frozen: `let_go` thaws it). Objects
        frozen by no read of ours (CPython 3.12's immortal ones, an embedding program's)
        are thawed with them, as `let_go` thaws them. Unasked, as `let_go`: counting the
        frozen objects walks each of them."""
        if not self.frozen:
            gc.unfreeze()
        self.frozen = True  # (once)
