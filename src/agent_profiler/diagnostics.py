"""Warnings about single records, collected per run and summarised for the user.

A warning never stops reading: the record is skipped (or partly used) and the
run goes on. The CLI prints a count per kind plus the first few with `path:line`.

What a journal names (a record type, a block type, an id) reaches stderr and the trace's
accounting only through `journal_name`: escaped (no escape code, no forged line), capped,
a home folder in it shown as `~`. A warning's place is shown by `shown_path`: the path as
given when relative, else without the home folder or the folders above the current one.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import field

from agent_profiler.console import counted, escaped, printable
from agent_profiler.errors import JournalError
from agent_profiler.model import frozen
from agent_profiler.privacy import private_path
from agent_profiler.records import record

# How a listed warning says that the file's later ones of its kind are counted, not listed.
LATER = "each later one is counted, not listed"
NAME_CHARS = 60  # the most of a journal's name a warning or a count's key shows
_KEY_CHARS = 80  # a count's key: our prefix (`claude:system/`) and the journal's name
# A path inside a journal's name: from a separator at the start of a word to its end.
_PATH_IN_NAME = re.compile(r"(?<![^\s'\"=:(\[])(?:[A-Za-z]:)?[\\/][^\s'\"]*")
# A home folder anywhere in it (`x./home/alice/…`), which the word rule above misses.
_HOME_IN_NAME = re.compile(
    r"(?:/home/|/Users/|/var/home/|[A-Za-z]:[\\/]+Users[\\/]+)[^\\/\s'\"]+|/root\b",
    re.IGNORECASE,
)


def journal_name(value: object, limit: int = NAME_CHARS) -> str:
    """A name a journal gave (a record or block type, an id, a value), as stderr and a
    trace may show it: control and format characters escaped as `repr` does (`\\x1b`,
    `\\n`: no escape code reaches a terminal and no line is forged), an absolute path in
    it shown as `privacy.private_path` shows one, and at most `limit` characters, the
    rest `…`. A number, `None` or a bool is shown by its repr; a list or an object only by
    its kind (its content is the journal's)."""
    if isinstance(value, str):
        text = value
    elif value is None or isinstance(value, bool | float):
        text = repr(value)
    elif isinstance(value, int):
        text = repr(value) if abs(value) < 10**40 else "a number of 40+ digits"
    else:  # a list or an object: its kind, never its content
        text = "a list" if isinstance(value, list) else f"a {type(value).__name__}"
    if "/" in text or "\\" in text:
        text = _PATH_IN_NAME.sub(lambda m: private_path(m.group()), text)
        text = _HOME_IN_NAME.sub("~", text)
    if not text.isprintable() or "\\" in text:
        text = escaped(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# The keys counted (`claude:progress`, `muse:task/started`): a few kinds, met on every
# record, so each is made safe once.
_SAFE_KEYS: dict[str, str] = {}


def _safe_key(kind: str) -> str:
    safe = _SAFE_KEYS.get(kind)
    if safe is None:
        if len(_SAFE_KEYS) > 4096:  # a journal of endless made-up types
            _SAFE_KEYS.clear()
        safe = _SAFE_KEYS[kind] = journal_name(kind, _KEY_CHARS)
    return safe


def shown_path(path: str) -> str:
    """A journal's path as a warning shows it: a relative path as given (a Claude Code
    project folder in it shown by `privacy.input_name`); an absolute one relative to the
    current folder when it is inside it, else `~/…` under this machine's home, else as
    `privacy.private_path` shows it (a home folder as `~`, else its name). A pipe's
    temporary copy is left to the console, which names it as given. A control or format
    character in it (a file named with an escape code or a newline) is escaped as `repr`
    escapes it: no escape code reaches the terminal, no line is forged."""
    return printable(_shortened_path(path))


def error_text(error: BaseException) -> str:
    """An unexpected error as a line may say it: an OS error's file names shown as a
    warning shows a path (`shown_path`), not the absolute path `str(error)` spells, with
    the home folder and the user's name in it."""
    if isinstance(error, OSError) and error.strerror and error.filename is not None:
        names = [error.filename, error.filename2]
        shown = ", ".join(shown_path(os.fsdecode(n)) for n in names if n is not None)
        return f"[Errno {error.errno}] {error.strerror}: {shown}"
    return str(error)


def _shortened_path(path: str) -> str:
    if not os.path.isabs(path):
        return private_path(path)
    if _is_copy(path):
        return path
    for folder, shown in ((os.getcwd(), ""), (os.path.expanduser("~"), "~/")):
        # Below the current folder, then the home folder: never `../..` up to a shared
        # parent (`/tmp`), which would spell out the folders beside it.
        if len(folder) > 1 and path.startswith(folder.rstrip(os.sep) + os.sep):
            return shown + private_path(path[len(folder.rstrip(os.sep)) + 1 :])
    return private_path(path)


def shown_error(error: JournalError) -> str:
    """A journal's error as stderr says it: its file named as a warning names one
    (`shown_path`: no home folder, no `-home-<user>-…` project folder, a control character
    in its name escaped), then its line and its message (escaped the same way)."""
    where = shown_path(error.path)
    where = f"{where}:{error.line}" if error.line is not None else where
    return f"{where}: {printable(error.message)}"


def _is_copy(path: str) -> bool:
    """A pipe's or stdin's copy (loader._copy_of): `<tmp>/agent-profiler-*/<folder>/<name>`."""
    return is_folder_of_ours(os.path.dirname(os.path.dirname(path)))


def is_folder_of_ours(folder: str) -> bool:
    """A folder this tool made in the temporary folder (`<tmp>/agent-profiler-*`): a pipe's
    copy's, `open`'s trace's."""
    if not os.path.basename(folder).startswith("agent-profiler-"):
        return False  # (most paths: tempfile, and shutil with it, not imported for them)
    from agent_profiler.output_errors import temporary_dir

    temporary = temporary_dir()
    if temporary is None:
        return False  # (no temporary folder: none of ours in it)
    return os.path.dirname(folder) in {temporary, os.path.realpath(temporary)}


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

    def shown(self) -> str:
        """The warning as stderr shows it: its place by `shown_path`."""
        where = shown_path(self.path)
        return (
            f"{where}:{self.line}: {self.message}"
            if self.line is not None
            else f"{where}: {self.message}"
        )


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
    # Parsed records warned about and not read at all (a line that is JSON but not an
    # object, a record without its session): neither used nor skipped on purpose.
    records_rejected: int = 0
    # (kind, path) of the warnings `warn_each` listed: a file's first of each kind.
    listed: set[tuple[str, str]] = field(default_factory=set)
    # Called now and then while a file is read: (path, bytes read so far, file size).
    on_progress: Callable[[str, int, int], None] | None = None
    # Files of a group that could not be read while the others were (`failed`): each is
    # the run's `error:` line, as a file given alone is, not a warning.
    failures: list[JournalError] = field(default_factory=list)

    def failed(self, error: JournalError) -> None:
        """A file the user gave that cannot be read, beside others of its group that are:
        `loader.read_group` hands it on as the group's failure (one `error:` line, exit 1),
        and the rest of the group is still read."""
        self.failures.append(error)

    def warn(self, path: str, line: int | None, kind: str, message: str) -> None:
        """One warning about the record at `path:line`. Its message is ours, but may hold
        a name from the journal: a control character in it is escaped all the same."""
        self.warning_counts[kind] += 1
        if len(self.warnings) < self.keep_first:
            if not message.isprintable():
                message = escaped(message)
            self.warnings.append(Warning(path, line, kind, message))

    def warn_again(self, kind: str) -> None:
        """One more warning of `kind` in a file whose first one of that kind is listed (its
        message says later ones are counted): counted truly, not listed again, so one
        damaged file does not push every other warning out of the first few shown."""
        self.warning_counts[kind] += 1

    def warn_each(self, path: str, line: int | None, kind: str, message: str) -> None:
        """A warning that may repeat on many records of a file (a bad usage): each one is
        counted; the file's first of its kind is listed, saying that later ones are
        counted, and the others are not listed (`warn_again`)."""
        if (kind, path) in self.listed:
            self.warn_again(kind)
            return
        self.listed.add((kind, path))
        self.warn(path, line, kind, f"{message} (the first in this file; {LATER})")

    def reject(self, path: str, line: int | None, message: str, records: int = 1) -> None:
        """A parsed record not read at all, for its shape (JSON but not an object, an
        object without what every record has): a `bad-shape` warning, and the record (or
        the `records` counted for it: an OpenCode message with its parts) is not counted
        as used."""
        self.records_rejected += records
        self.warn(path, line, "bad-shape", message)

    def skip(self, kind: str) -> None:
        """Count a whole record that is understood and deliberately not used."""
        self.skipped[_safe_key(kind)] += 1

    def not_recognised(self, kind: str, path: str | None = None, line: int | None = None) -> None:
        """Count a whole record of a type this adapter does not know (so it was not read),
        and remember where the first of its kind is (`path:line`, when given, its path as
        `shown_path` shows it). `kind` holds the journal's name: made safe here."""
        kind = _safe_key(kind)
        self.unrecognised[kind] += 1
        if path is not None and kind not in self.unrecognised_at:
            where = shown_path(path)
            self.unrecognised_at[kind] = f"{where}:{line}" if line is not None else where

    def note(self, kind: str) -> None:
        """Count something unusual inside a record that is still used (e.g. a tool
        result whose call is not in the journal)."""
        self.notes[_safe_key(kind)] += 1

    def forget_failed(self, failures: list[JournalError]) -> None:
        """Drop the `unreadable` warnings about files that `failures` name: a file said on
        its own `error:` line (a damaged subagent file, refused when planned and then
        warned about when its session read it) is said once."""
        failed = {error.path for error in failures}
        kept = [w for w in self.warnings if not (w.kind == "unreadable" and w.path in failed)]
        dropped = len(self.warnings) - len(kept)
        if dropped:
            self.warnings = kept
            self.warning_counts["unreadable"] -= dropped
            if self.warning_counts["unreadable"] <= 0:
                del self.warning_counts["unreadable"]

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
        self.records_rejected += other.records_rejected
        self.failures += other.failures
        # (a file's first warning of a kind listed there stays its only one listed here)
        self.listed |= other.listed

    @property
    def records_used(self) -> int:
        """Parsed records not skipped: every non-blank line is used, skipped (by kind),
        not recognised, or warned about (not parseable, or rejected for its shape)."""
        return (
            self.records_parsed
            - self.skipped_total
            - self.unrecognised_total
            - self.records_rejected
        )

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
        listed = self.warnings[:first]
        lines += [f"  {w.shown()}" for w in listed]
        if self.warning_total > len(listed):
            lines.append(f"  … and {self.warning_total - len(listed):,} more")
        return lines
