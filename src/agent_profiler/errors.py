"""The package's errors, all in one place.

    AgentProfilerError            root: the CLI turns it into one line on stderr
    ├── UsageError                the command line asks for something impossible (exit 2)
    ├── JournalError              a whole input cannot be used (not a journal, unreadable)
    │   └── DamagedJournalError   reading stopped in the middle (a cut or corrupt gzip);
    │                             also an OSError, so every `except OSError` handles it
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


class DamagedJournalError(JournalError, OSError):
    """A journal whose bytes stopped making sense while being read (a gzip stream cut
    short or corrupt). Raised by the streams `jsonl.open_journal` returns instead of
    `EOFError` or `zlib.error`, which no caller expects and which used to end the run."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        JournalError.__init__(self, path, message, line)


class OutputError(AgentProfilerError):
    """The trace could not be written."""
