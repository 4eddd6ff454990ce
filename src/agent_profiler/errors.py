"""The package's errors, all in one place.

    AgentProfilerError            root: the CLI turns it into one line on stderr
    ├── UsageError                the command line asks for something impossible (exit 2)
    ├── JournalError              a whole input cannot be used (not a journal, unreadable)
    └── OutputError               the trace cannot be written

Problems that cost one record, not a whole file, are not errors: they are
`Warning`s collected in `diagnostics.Diagnostics`, and reading goes on.
"""

from __future__ import annotations


class AgentProfilerError(Exception):
    """Root of every error this package raises on purpose."""


class UsageError(AgentProfilerError):
    """The command line is wrong (unknown harness, output exists without --force, ...)."""


class JournalError(AgentProfilerError):
    """An input file cannot be used at all; `path` and optional `line` say where."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        self.message = message
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")


class OutputError(AgentProfilerError):
    """The trace could not be written."""
