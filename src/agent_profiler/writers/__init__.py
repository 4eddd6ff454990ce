"""Output writers, one module per format, in an explicit table. The format is
chosen from the output file name (`.pftrace`/`.perfetto-trace` → Perfetto
protobuf, `.json` → Chrome JSON) unless given with `--format`.

A writer's module is imported when it is asked for (the Perfetto schema alone is ≈ 25 ms
of start-up, and `summary` needs no writer at all)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from agent_profiler.annotations import ContentMode, TraceFacts
from agent_profiler.errors import UsageError
from agent_profiler.model import Session

if TYPE_CHECKING:
    from agent_profiler.writers.chrome_json import ChromeJsonWriter
    from agent_profiler.writers.perfetto import PerfettoWriter

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
    by_group: bool  # encodes each journal group on its own (else: every session at once)

    def write(self, sessions: Sequence[Session], stream: IO[bytes]) -> int: ...


# (format name, module, class), in the order `--format` lists them.
_TABLE = (
    ("perfetto", "agent_profiler.writers.perfetto", "PerfettoWriter"),
    ("json", "agent_profiler.writers.chrome_json", "ChromeJsonWriter"),
)
_SUFFIXES = {
    ".pftrace": "perfetto",
    ".perfetto-trace": "perfetto",
    ".pb": "perfetto",
    ".json": "json",
}


def _class(module: str, name: str) -> Any:
    return getattr(importlib.import_module(module), name)


def writer_class(
    format_name: str | None, output: Path | None
) -> type[PerfettoWriter] | type[ChromeJsonWriter]:
    """The writer named by --format, else the one the output file name implies
    (Perfetto protobuf when the name says nothing)."""
    name = format_name or (_SUFFIXES.get(output.suffix.lower()) if output else None) or "perfetto"
    for known, module, class_name in _TABLE:
        if known == name:
            writer: type[PerfettoWriter] | type[ChromeJsonWriter] = _class(module, class_name)
            return writer
    known_names = ", ".join(known for known, _, _ in _TABLE)
    raise UsageError(f"unknown format {name!r} (known: {known_names})")


def __getattr__(name: str) -> Any:
    """`WRITERS`, `PerfettoWriter` and `ChromeJsonWriter`, imported on first use."""
    for _, module, class_name in _TABLE:
        if name == class_name:
            return _class(module, class_name)
    if name == "WRITERS":
        return tuple(_class(module, class_name) for _, module, class_name in _TABLE)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
