"""Output writers, one module per format, in an explicit tuple. The format is
chosen from the output file name (`.pftrace`/`.perfetto-trace` → Perfetto
protobuf, `.json` → Chrome JSON) unless given with `--format`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import IO, Protocol

from agent_profiler.errors import UsageError
from agent_profiler.model import Session
from agent_profiler.writers.chrome_json import ChromeJsonWriter
from agent_profiler.writers.perfetto import ContentMode, PerfettoWriter, TraceFacts

__all__ = [
    "WRITERS",
    "ChromeJsonWriter",
    "ContentMode",
    "PerfettoWriter",
    "TraceFacts",
    "Writer",
    "writer_class",
]


class Writer(Protocol):
    name: str
    extension: str
    binary: bool

    def write(self, sessions: Sequence[Session], stream: IO[bytes]) -> int: ...


WRITERS: tuple[type[PerfettoWriter] | type[ChromeJsonWriter], ...] = (
    PerfettoWriter,
    ChromeJsonWriter,
)
_SUFFIXES = {
    ".pftrace": "perfetto",
    ".perfetto-trace": "perfetto",
    ".pb": "perfetto",
    ".json": "json",
}


def writer_class(
    format_name: str | None, output: Path | None
) -> type[PerfettoWriter] | type[ChromeJsonWriter]:
    """The writer named by --format, else the one the output file name implies
    (Perfetto protobuf when the name says nothing)."""
    name = format_name or (_SUFFIXES.get(output.suffix.lower()) if output else None) or "perfetto"
    for writer in WRITERS:
        if writer.name == name:
            return writer
    known = ", ".join(w.name for w in WRITERS)
    raise UsageError(f"unknown format {name!r} (known: {known})")
