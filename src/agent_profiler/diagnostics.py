"""Warnings about single records, collected per run and summarised for the user.

A warning never stops reading: the record is skipped (or partly used) and the
run goes on. The CLI prints a count per kind plus the first few with `path:line`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Warning:
    path: str
    line: int | None
    kind: str  # short stable key, e.g. "not-json", "bad-utf8", "unknown-record"
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.message}"


@dataclass(slots=True)
class Diagnostics:
    """Collects warnings and per-kind counts of records skipped on purpose."""

    keep_first: int = 20
    warnings: list[Warning] = field(default_factory=list)
    warning_counts: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    lines_read: int = 0
    records_used: int = 0

    def warn(self, path: str, line: int | None, kind: str, message: str) -> None:
        self.warning_counts[kind] += 1
        if len(self.warnings) < self.keep_first:
            self.warnings.append(Warning(path, line, kind, message))

    def skip(self, kind: str) -> None:
        """Count a record that is understood and deliberately not used."""
        self.skipped[kind] += 1

    @property
    def warning_total(self) -> int:
        return sum(self.warning_counts.values())

    def summary_lines(self, first: int = 5) -> list[str]:
        """`N warnings (kind: n, ...)` then the first few with path:line."""
        if not self.warning_counts:
            return []
        kinds = ", ".join(f"{k}: {n}" for k, n in sorted(self.warning_counts.items()))
        lines = [f"{self.warning_total} warning(s) ({kinds})"]
        lines += [f"  {w}" for w in self.warnings[:first]]
        if self.warning_total > first:
            lines.append(f"  … and {self.warning_total - first} more")
        return lines
