"""Where a journal group's packets go: straight to the stream, or deflated into
`compressed_packets` from a writer thread (the default: docs/traces.md, "The wire").

A `compressed_packets` packet (TracePacket field 50) holds a zlib stream of `Trace.packet`
records, whole packets only. Trace Processor inflates it (zlib or gzip header) and reads
each packet inside as if it stood in its place in the file: its own sequence id, flags,
interning and clocks, so a group's incremental state runs on across chunks
(proto_trace_reader.cc ParseCompressedPackets; tests/importer_rules.py checks the same).
The chunking depends on the group's packets alone, so groups deflated in worker processes
join into the bytes one process writes, and the same input gives the same bytes.

Chunk size and level, measured on the bench journals (trace as a share of the input,
deflate CPU seconds for the whole trace): 64 KB, 256 KB and 1 MB chunks at level 6 give
Codex 50 MB 7.35 / 7.06 / 6.98% (0.4 s), Pi 50 MB 8.35 / 8.02 / 7.94%, Claude Code
100 MB 1.60 / 1.55 / 1.54%: past 256 KB a chunk gains 0.1 point while the importer holds
four times as much at once. In 256 KB chunks, levels 1 / 2 / 3 / 6 (CPU best of 3):
Codex 8.08 / 7.80 / 7.59 / 7.06% in 0.100 / 0.106 / 0.125 / 0.300 s, Pi 9.00 / 8.77 /
8.57 / 8.00% in 0.119 / 0.121 / 0.156 / 0.378 s, Claude Code 1.73 / 1.69 / 1.65 / 1.55%
in 0.046 / 0.048 / 0.059 / 0.126 s. Level 3 takes 40% of level 6's time for traces 3–7%
larger, well inside the size targets; level 9 is twice level 6's time for 0.1 point.

Where the deflating runs: on a thread of its own (zlib releases the GIL) where a core
would otherwise wait and the group is long (`threaded`, from its `THREAD_AFTER`-th chunk
on); else here, inline. On the bench's journals (wall, runs alternating with a thread per
group from its first chunk, as before): one 50 MB Codex session keeps its thread (2.49–
2.54 s against 2.49–2.58; all inline it took 2.59–2.62 against 2.41–2.43); 50 Codex
sessions of 1 MB, two chunks each, with `--jobs 1` 2.63–2.67 s against 2.68–2.77 (a
group's last chunks were deflated while this thread waited at `close`), on two workers
1.46–1.51 against 1.48–1.54 (every core busy: a thread only competes), the folder of 300
6.38–6.47 against 6.47–6.57; Claude Code 100 MB, whose second run a helper encodes on the
other core, 0.88–0.93 against 0.89–0.92. The bytes are the same either way: the chunks
are cut by size alone."""

from __future__ import annotations

import queue
import threading
import zlib
from typing import IO

from agent_profiler.writers.wire import varint

CHUNK = 256 * 1024  # uncompressed bytes of packets per compressed_packets packet (at least)
LEVEL = 3
_COMPRESSED_PACKETS = b"\x92\x03"  # TracePacket field 50, length-delimited
_QUEUED = 4  # chunks waiting for the thread, at most (memory stays flat on a slow disk)
# A group's first chunks are deflated inline; a thread starts at this one (a group of 1 MB
# of packets or less never starts one).
THREAD_AFTER = 4


def compressed_record(packets: bytes | bytearray, level: int = LEVEL) -> bytes:
    """One Trace record holding `packets` (whole Trace.packet records) deflated."""
    data = zlib.compress(packets, level)
    packet = _COMPRESSED_PACKETS + varint(len(data)) + data
    return b"\x0a" + varint(len(packet)) + packet


class PacketSink:
    """A group's packet records, written in runs of at least `chunk` bytes: as they are,
    or (compress) each run as one compressed_packets packet. With `threaded` (a core would
    otherwise wait: this process is no folder's worker and no helper runs beside it),
    from the `THREAD_AFTER`-th run on they are deflated and written by a thread while the
    next run is encoded; before, and without `threaded`, here. `close` writes the rest and
    joins the thread; an error of the thread's (a full disk) is raised here, in the
    caller's thread. `threaded` may be switched between runs (`stop` first)."""

    def __init__(
        self,
        stream: IO[bytes],
        *,
        compress: bool,
        chunk: int | None = None,
        threaded: bool = True,
    ) -> None:
        self.stream = stream
        self.chunk = CHUNK if chunk is None else chunk
        self.buffer = bytearray()
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None
        self.queue: queue.Queue[bytes | None] = queue.Queue(_QUEUED)
        self.compress = compress
        self.threaded = threaded
        self.inline = 0  # chunks deflated here so far

    def add(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) >= self.chunk:
            self._flush()

    def _flush(self) -> None:
        if not self.buffer:
            return
        if not self.compress:
            self.stream.write(self.buffer)
            self.buffer.clear()
            return
        if self.error is not None:
            raise self.error
        if self.thread is None and (not self.threaded or self.inline < THREAD_AFTER - 1):
            self.inline += 1
            self.stream.write(compressed_record(self.buffer))
            self.buffer.clear()
            return
        if self.thread is None:
            thread = threading.Thread(target=self._deflate, name="deflate", daemon=True)
            # Kept once started: a signal raised while `start` waits for the thread (SIGTERM
            # is an exception here, entry.py) left a thread `stop` could not join, and its
            # RuntimeError ended the export as an internal error instead of `terminated`.
            thread.start()
            self.thread = thread
        self.queue.put(bytes(self.buffer))
        self.buffer.clear()

    def _deflate(self) -> None:
        while (packets := self.queue.get()) is not None:
            if self.error is not None:
                continue  # drain: the caller raises it
            try:
                self.stream.write(compressed_record(packets))
            except BaseException as error:
                self.error = error

    def close(self) -> None:
        """Write what is left and wait for the thread."""
        try:
            if self.compress and self.thread is None and self.buffer:
                # a group smaller than a chunk: no thread for it
                self.stream.write(compressed_record(bytes(self.buffer)))
                self.buffer.clear()
            self._flush()
        finally:
            self.stop()
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        """End the thread (after the chunks queued so far); nothing more is written."""
        if self.thread is not None:
            self.queue.put(None)
            self.thread.join()
            self.thread = None
