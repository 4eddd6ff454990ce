"""The package's errors, all in one place: every error agent-profiler raises on purpose.

    AgentProfilerError              root: the CLI turns it into one line on stderr (exit 1)
    ├── UsageError                  the command line asks for something impossible (exit 2)
    ├── JournalError                a whole input cannot be used (not a journal, unreadable);
    │   │                           carries `path` and `line`
    │   ├── DamagedJournalError     reading stopped in the middle (a cut or corrupt gzip);
    │   │                           also an OSError, so every `except OSError` handles it
    │   └── muse_journal.ApprovalReviewLogError
    │                               a Muse approval-review log, which is no session timeline:
    │                               skipped beside its session, refused when named alone
    ├── OutputError                 the trace cannot be written
    ├── DatasetError                a dataset `collect` wrote is damaged (a file cut short,
    │                               missing, or not what it should be): fleet and collect
    │                               name the file and stop
    └── ServeError                  `open` cannot serve the trace (port busy, file unreadable)

Errors that never leave the package: `adapters.claude_context.ContextParseError` (a ValueError:
a `/context` text in a layout the parser does not know) is caught by the
`ContextCommandTracker` and becomes a `context-command` warning on the transcript.
`estimate.calibrated`'s ValueError (a table lacking a class) is a programming error of
the scripts that pass their own calibration table.

Every one of them survives pickling (a worker process sends its groups' failures back to
the parent, pipeline.py): an error whose `__init__` takes more than its message says how it
is rebuilt (`__reduce__`), and a test round-trips each.

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

    def __reduce__(self) -> tuple[type[JournalError], tuple[str, str, int | None]]:
        """Rebuilt from its own arguments: the default, `type(self)(*self.args)`, called
        it with the one joined message, and a worker's failure ended the run."""
        return type(self), (self.path, self.message, self.line)


class DamagedJournalError(JournalError, OSError):
    """A journal whose bytes stopped making sense while being read (a gzip stream cut
    short or corrupt). Raised by the streams `jsonl.open_journal` returns instead of
    `EOFError` or `zlib.error`, which no caller expects and which used to end the run."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        JournalError.__init__(self, path, message, line)


class OutputError(AgentProfilerError):
    """The trace could not be written."""


class DatasetError(AgentProfilerError):
    """A dataset's file is damaged or missing (dataset/integrity.py)."""


class ServeError(AgentProfilerError):
    """The trace could not be served (port busy, file unreadable)."""
