"""Warnings about single records, collected per run and summarised for the user.

A warning never stops reading: the record is skipped (or partly used) and the
run goes on. The CLI prints a count per kind plus the first few with `path:line`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import field

from agent_profiler.console import counted
from agent_profiler.model import frozen
from agent_profiler.records import record

# Warnings that mean the rest of a file was lost (not one line): the run goes on, but
# its exit code says some input could not be used.
DAMAGE_KINDS = frozenset({"bad-gzip", "read-error"})


@frozen
class Warning:
    path: str
    line: int | None
    kind: str  # short stable key, e.g. "not-json", "bad-utf8", "unknown-record"
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.message}"


@record
class Diagnostics:
    """Collects warnings and per-kind counts of records skipped on purpose."""

    keep_first: int = 20
    warnings: list[Warning] = field(default_factory=list)
    warning_counts: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    # Records of a type the adapter does not know: not read, and never called "skipped on
    # purpose" (a new harness version, or a file read with the wrong --harness).
    unrecognised: Counter[str] = field(default_factory=Counter)
    # Where each kind not recognised was first met (`path:line`), to show the user one.
    unrecognised_at: dict[str, str] = field(default_factory=dict)
    notes: Counter[str] = field(default_factory=Counter)
    lines_read: int = 0  # non-blank lines of JSONL (and stream-json) journals
    # Whole JSON documents read as one: an OpenCode storage or export file, a Gemini CLI
    # session document. Not lines: a document of 300 messages is one document.
    documents_read: int = 0
    rows_read: int = 0  # rows of an OpenCode database, each holding one JSON value
    records_parsed: int = 0
    # Called now and then while a file is read: (path, bytes read so far, file size).
    on_progress: Callable[[str, int, int], None] | None = None

    def warn(self, path: str, line: int | None, kind: str, message: str) -> None:
        self.warning_counts[kind] += 1
        if len(self.warnings) < self.keep_first:
            self.warnings.append(Warning(path, line, kind, message))

    def skip(self, kind: str) -> None:
        """Count a whole record that is understood and deliberately not used."""
        self.skipped[kind] += 1

    def not_recognised(self, kind: str, path: str | None = None, line: int | None = None) -> None:
        """Count a whole record of a type this adapter does not know (so it was not read),
        and remember where the first of its kind is (`path:line`, when given)."""
        self.unrecognised[kind] += 1
        if path is not None and kind not in self.unrecognised_at:
            self.unrecognised_at[kind] = f"{path}:{line}" if line is not None else path

    def note(self, kind: str) -> None:
        """Count something unusual inside a record that is still used (e.g. a tool
        result whose call is not in the journal)."""
        self.notes[kind] += 1

    def absorb(self, other: Diagnostics) -> None:
        """Add what `other` counted (a journal group read on its own) after this one's."""
        room = self.keep_first - len(self.warnings)
        if room > 0:
            self.warnings += other.warnings[:room]
        self.warning_counts.update(other.warning_counts)
        self.skipped.update(other.skipped)
        self.unrecognised.update(other.unrecognised)
        for kind, where in other.unrecognised_at.items():
            self.unrecognised_at.setdefault(kind, where)
        self.notes.update(other.notes)
        self.lines_read += other.lines_read
        self.documents_read += other.documents_read
        self.rows_read += other.rows_read
        self.records_parsed += other.records_parsed

    @property
    def records_used(self) -> int:
        """Parsed records not skipped: every non-blank line is used, skipped (by kind)
        or warned about (not parseable)."""
        return self.records_parsed - self.skipped_total - self.unrecognised_total

    @property
    def unrecognised_total(self) -> int:
        return sum(self.unrecognised.values())

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    def read_text(self) -> str:
        """What was read, in the units read: `12 lines read`, `1 JSON document read`,
        `3 JSON documents and 40 database rows read` (a whole document is not a line)."""
        parts = [
            counted(count, unit)
            for count, unit in (
                (self.lines_read, "line"),
                (self.documents_read, "JSON document"),
                (self.rows_read, "database row"),
            )
            if count
        ]
        listed = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)
        return f"{listed or '0 lines'} read"

    def accounting(self) -> tuple[tuple[str, object], ...]:
        """The reading costs as trace metadata: every line is used, skipped on purpose
        (by kind), or warned about (by kind). Whole JSON documents and database rows are
        counted apart from lines, when there are any."""
        facts: tuple[tuple[str, object], ...] = (("lines_read", self.lines_read),)
        if self.documents_read:
            facts += (("documents_read", self.documents_read),)
        if self.rows_read:
            facts += (("rows_read", self.rows_read),)
        facts += (
            ("records_used", self.records_used),
            ("records_skipped", dict(sorted(self.skipped.items()))),
        )
        if self.unrecognised:
            facts += (("records_not_recognised", dict(sorted(self.unrecognised.items()))),)
        return (*facts, ("warnings", dict(sorted(self.warning_counts.items()))))

    @property
    def damaged(self) -> int:
        """Files whose reading stopped early (a cut or corrupt gzip, an I/O error)."""
        return sum(self.warning_counts[kind] for kind in DAMAGE_KINDS)

    @property
    def warning_total(self) -> int:
        return sum(self.warning_counts.values())

    def summary_lines(self, first: int = 5) -> list[str]:
        """`N warnings (kind: n, ...)` then the first few with path:line."""
        if not self.warning_counts:
            return []
        kinds = ", ".join(f"{k}: {n}" for k, n in sorted(self.warning_counts.items()))
        lines = [f"{counted(self.warning_total, 'warning')} ({kinds})"]
        lines += [f"  {w}" for w in self.warnings[:first]]
        if self.warning_total > first:
            lines.append(f"  … and {self.warning_total - first} more")
        return lines
