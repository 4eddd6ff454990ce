"""Opening a journal file for `jsonl`: plain, gzip or zstd, told apart by magic bytes,
and each read failure of a compressed stream made ours (an `OSError`, `EOFError`,
`zlib.error`, never a decompressor's own exception that ended the run).

Apart from `jsonl` so that the reader's rules (lines, probe, warnings) and the bytes
under them are each one module: the reader asks only for a stream, its compression and
how to name a failure."""

from __future__ import annotations

import gzip
import io
import sys
import zlib
from collections.abc import Callable
from typing import Any, TypeAlias

import orjson

from agent_profiler.errors import DamagedJournalError, JournalError

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # Codex's cold rollouts (`rollout-*.jsonl.zst`)

# The head peeked at before reading lines, for the encoding and binary checks.
HEAD_BYTES = 64 * 1024

# gzip.BadGzipFile is an OSError; a truncated stream raises EOFError (zstd too); a corrupt
# deflate block raises zlib.error; corrupt zstd data is raised as an OSError (`ZstdBytes`).
READ_ERRORS = (OSError, EOFError, zlib.error)

REASON_LIMIT = 80

NO_ZSTD = "zstd-compressed, and this Python has no zstd decompressor: pip install backports.zstd"


class GzipJournal(gzip.GzipFile):
    """A GzipFile that also closes the file it reads: `GzipFile(fileobj=...)` leaves
    it open. Built on the already-open file so a pipe is not opened twice."""

    def __init__(self, raw: io.BufferedReader[io.FileIO]) -> None:
        super().__init__(fileobj=raw, mode="rb")
        self._raw = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


class ZstdBytes(io.RawIOBase):
    """A zstd stream's decompressed bytes, with corrupt data raised as an OSError (the
    decompressor's own ZstdError is no OSError: escaped, it ended the run) and a cut one
    as EOFError, as gzip does. The decompressor is imported here, when a zstd file is met
    (start-up does not pay): Python 3.14's `compression.zstd`, else its backport."""

    def __init__(self, raw: io.BufferedReader[io.FileIO]) -> None:
        super().__init__()
        # Set before the decompressor is imported, which may fail: a stream half made is
        # closed too when it is collected, and Python 3.13 reports what `close` raises
        # there ("Exception ignored in …" on stderr).
        self.raw = raw
        self.stream: Any = None
        if sys.version_info >= (3, 14):  # (ImportError: one built without libzstd)
            from compression import zstd
        else:
            from backports import zstd
        self.stream = zstd.ZstdFile(raw)
        self.error = zstd.ZstdError

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            read: int = self.stream.readinto(buffer)
        except self.error as error:
            raise OSError(str(error)) from error
        return read

    def close(self) -> None:
        try:
            if self.stream is not None:
                self.stream.close()
        finally:
            self.raw.close()
            super().close()


Stream: TypeAlias = "io.BufferedReader[Any] | GzipJournal"


class Guarded(io.RawIOBase):
    """A journal's bytes with every read failure turned into `DamagedJournalError`."""

    def __init__(self, name: str, stream: Stream) -> None:
        super().__init__()
        self.name = name
        self.stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            return self.stream.readinto(buffer)
        except READ_ERRORS as error:
            what = damage(compression(self.stream))
            raise DamagedJournalError(self.name, f"{what} ({reason(error)})") from error

    def close(self) -> None:
        try:
            self.stream.close()
        finally:
            super().close()


def open_stream(name: str) -> Stream:
    """The file's bytes, decompressed if need be; `JournalError` when it cannot be opened."""
    try:
        # A buffer as large as the head, so one peek sees the whole head.
        raw = io.BufferedReader(io.FileIO(name, "rb"), buffer_size=HEAD_BYTES)
    except OSError as error:
        raise JournalError(name, f"cannot open: {os_reason(error)}") from error
    try:
        # peek, not read+seek: a pipe (e.g. /dev/stdin) cannot seek.
        magic = raw.peek(len(ZSTD_MAGIC))[: len(ZSTD_MAGIC)]
        if magic.startswith(GZIP_MAGIC):
            return GzipJournal(raw)
        if magic == ZSTD_MAGIC:  # read by lines and peeks as a plain file is
            return io.BufferedReader(ZstdBytes(raw), HEAD_BYTES)
    except ImportError as error:
        raw.close()
        raise JournalError(name, NO_ZSTD) from error
    except OSError as error:
        raw.close()
        raise JournalError(name, f"cannot read: {os_reason(error)}") from error
    return raw


def position_of(stream: Stream) -> Callable[[], int]:
    """How far into the file on disk reading has got (compressed bytes for gzip, zstd)."""
    if isinstance(stream, GzipJournal):
        return stream._raw.tell
    return stream.raw.raw.tell if isinstance(stream.raw, ZstdBytes) else stream.tell


def compression(stream: object) -> str:
    """The stream's compression: "gzip", "zstd", or "" (none)."""
    if isinstance(stream, gzip.GzipFile):
        return "gzip"
    return "zstd" if isinstance(getattr(stream, "raw", None), ZstdBytes) else ""


def damage(kind: str) -> str:
    return f"corrupt or truncated {kind} stream" if kind else "read error"


def os_reason(error: OSError) -> str:
    text = error.strerror or str(error) or type(error).__name__
    return text[:1].lower() + text[1:]


def reason(error: BaseException) -> str:
    """A short reason for a warning: orjson's message and column, no doc dump."""
    if isinstance(error, orjson.JSONDecodeError):
        text = f"{error.msg} at column {error.colno}"
    else:
        text = str(error) or type(error).__name__
    return text if len(text) <= REASON_LIMIT else text[: REASON_LIMIT - 1] + "…"
