"""The files of ours a command's output waits in, each with no name a kill could leave
behind: the spool a trace's packets wait in until the last group is read (beside the
target: `spool`), a private temporary file (a report's sections: `temporary_file`), and
bytes held in memory up to a limit, then in such a file (`SpooledBytes`: the one pass's
requests). Their failures are OutputErrors naming where they are (`_Spool`)."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, cast

from agent_profiler.errors import OutputError
from agent_profiler.loader import is_stream
from agent_profiler.output_errors import cannot_write, temporary_failed
from agent_profiler.outputs import beside, unnamed


class _Spool:
    """A temporary file of ours whose failures (a full disk, a lost mount) are each one
    OutputError naming where it is (`failed`): the output's folder beside it, or the
    temporary folder for stdout, a pipe and a report's sections. A write, a read, a seek
    (which writes what is buffered) or the close may be the one that fails."""

    def __init__(self, stream: IO[bytes], failed: Callable[[OSError], OutputError]) -> None:
        self.stream = stream
        self.failed = failed

    def write(self, data: bytes | bytearray | memoryview) -> int:
        try:
            return self.stream.write(data)
        except OSError as error:
            raise self.failed(error) from error

    def read(self, size: int = -1) -> bytes:
        try:
            return self.stream.read(size)
        except OSError as error:
            raise self.failed(error) from error

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        try:
            return self.stream.seek(offset, whence)
        except OSError as error:
            raise self.failed(error) from error

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as error:
            raise self.failed(error) from error

    def close(self, *, failing: bool = False) -> None:
        """Closed: what is still buffered written, whose failure is said, unless the
        command is `failing` already (a full disk: the flush fails again, and its error
        took the place of the one that said which output could not be written)."""
        try:
            self.stream.close()
        except OSError as error:
            if not failing:
                raise self.failed(error) from error

    def __getattr__(self, name: str) -> object:
        return getattr(self.stream, name)


def temporary_file() -> _Spool:
    """A private file with no name in the temporary folder (tempfile.TemporaryFile: unlinked
    once made, or O_TMPFILE), whose failures name that folder (`temporary_failed`)."""
    import tempfile

    try:
        stream = tempfile.TemporaryFile()  # noqa: SIM115 (the caller closes it)
    except OSError as error:
        raise temporary_failed(error) from error
    return _Spool(cast(IO[bytes], stream), temporary_failed)


_TEMPORARY_NAMES = ("TMPDIR", "TEMP", "TMP")  # tempfile's, in its order


def unnamed_temporary_file() -> _Spool:
    """`temporary_file` without importing tempfile (≈ 0.7 MB of modules) where it can:
    an O_TMPFILE file in the folder tempfile tries first (TMPDIR, TEMP or TMP, else /tmp),
    else `temporary_file` (which tries the others)."""
    named = (os.environ.get(name) for name in _TEMPORARY_NAMES)
    folder = Path(next((value for value in named if value), "/tmp"))
    handle = unnamed(folder / "spool", os.O_RDWR | os.O_EXCL)
    if handle is None:
        return temporary_file()
    return _Spool(os.fdopen(handle, "w+b"), temporary_failed)


class SpooledBytes:
    """Bytes that wait to be copied on: in memory up to `limit`, then in a file with no
    name in the temporary folder (`unnamed_temporary_file`)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.memory: io.BytesIO | None = io.BytesIO()
        self.file: _Spool | None = None

    def write(self, data: bytes | bytearray) -> int:
        memory = self.memory
        if memory is not None:
            if memory.tell() + len(data) <= self.limit:
                return memory.write(data)
            self.file = unnamed_temporary_file()
            with memory.getbuffer() as held:
                self.file.write(held)
            self.memory = None
        assert self.file is not None
        return self.file.write(data)

    def copy_to(self, stream: IO[bytes]) -> None:
        """Everything written, onto `stream`, in pieces of 64 KiB."""
        if self.memory is not None:
            with self.memory.getbuffer() as held:
                stream.write(held)
            return
        assert self.file is not None
        self.file.seek(0)
        while piece := self.file.read(1 << 16):
            stream.write(piece)

    def getvalue(self) -> bytes:
        """Everything written, as one bytes object."""
        if self.memory is not None:
            return self.memory.getvalue()
        assert self.file is not None
        self.file.seek(0)
        return self.file.read()

    def close(self) -> None:
        """Let go: nothing written is wanted any more (`copy_to` and `getvalue` read it
        all), so a close that fails to write what is still buffered (a full temporary
        folder, whose error the pass falls back from) is no failure."""
        self.memory = None
        if self.file is not None:
            self.file.close(failing=True)


def spool_failed(target: Path | None, error: OSError) -> OutputError:
    """A failure of the spool of a trace to `target` (a full disk): the target named, its
    folder holds the spool; for stdout or a pipe, the temporary folder, which holds it."""
    if target is None or is_stream(target):
        return temporary_failed(error)
    return cannot_write(target, error)


@contextmanager
def spool(target: Path | None) -> Iterator[IO[bytes]]:
    """A private temporary file for the packets of a trace being read (pipeline.py),
    beside the target (same disk: it may hold gigabytes) or, for stdout or a pipe, in the
    temporary folder. It never has a name a kill could leave behind: made unnamed
    (O_TMPFILE), else unlinked once made; where an open file cannot be unlinked (Windows),
    removed at the end. Its failures are OutputErrors naming the target, or the temporary
    folder (`_Spool`), never stdout or a pipe, which had room."""
    name = None
    if target is None or is_stream(target):  # stdout, a pipe, a device: nothing beside it
        stream = temporary_file()
    else:
        handle = unnamed(target, os.O_RDWR | os.O_EXCL)  # O_EXCL: never to be linked
        if handle is None:
            handle, name = beside(target, "packets-")
            try:
                os.unlink(name)
                name = None
            except OSError:
                pass  # removed at the end instead
        beside_target = target
        stream = _Spool(os.fdopen(handle, "w+b"), lambda error: spool_failed(beside_target, error))
    try:
        yield cast(IO[bytes], stream)
    except BaseException:
        stream.close(failing=True)
        raise
    else:
        stream.close()
    finally:
        if name is not None:
            Path(name).unlink(missing_ok=True)
