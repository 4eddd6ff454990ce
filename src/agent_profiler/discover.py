"""Find the journals on this machine, in each harness's default folders.

Folders (each honours its harness's environment variable):
- Claude Code: `$CLAUDE_CONFIG_DIR` or `~/.claude` → `projects/<project>/<session>.jsonl`
- Codex: `$CODEX_HOME` or `~/.codex` → `sessions/YYYY/MM/DD/rollout-*.jsonl`
  (and `archived_sessions/`)
- Pi: `$PI_CODING_AGENT_DIR` or `~/.pi/agent` → `sessions/--<cwd>--/*.jsonl`
- Muse Code: `${XDG_DATA_HOME:-~/.local/share}/muse/sessions/YYYY/MM/DD/<id>/session.jsonl`
- harnesses whose adapter has `locate` (Gemini CLI, OpenCode): where that says

Only the first records of each file are read (for its project and start time),
so listing is cheap; paths found here can be passed straight to `export`.
Subagent files are not listed on their own: exporting the main journal picks them up.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from agent_profiler.adapters import ADAPTERS
from agent_profiler.adapters.common import timestamp_ns
from agent_profiler.errors import JournalError
from agent_profiler.jsonl import sniff
from agent_profiler.model import Harness


@dataclass(frozen=True, slots=True)
class FoundJournal:
    harness: Harness
    path: Path
    project: str | None
    start_ns: int | None
    size: int
    modified_ns: int

    def to_json(self) -> dict[str, object]:
        return {
            "harness": self.harness.value,
            "path": str(self.path),
            "project": self.project,
            "start": _iso(self.start_ns),
            "size": self.size,
            "modified": _iso(self.modified_ns),
        }


def _iso(ns: int | None) -> str | None:
    if ns is None:
        return None
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat(timespec="seconds")


def roots(env: Mapping[str, str] | None = None) -> dict[Harness, Path]:
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home())
    data = Path(env["XDG_DATA_HOME"]) if env.get("XDG_DATA_HOME") else home / ".local" / "share"
    return {
        Harness.CLAUDE_CODE: Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude"),
        Harness.CODEX: Path(env.get("CODEX_HOME") or home / ".codex"),
        Harness.PI: Path(env.get("PI_CODING_AGENT_DIR") or home / ".pi" / "agent"),
        Harness.MUSE: data / "muse",
    }


def _candidates(harness: Harness, root: Path) -> Iterator[Path]:
    if harness is Harness.CLAUDE_CODE:
        for pattern in ("*/*.jsonl", "*/*.jsonl.gz"):
            yield from (
                p for p in (root / "projects").glob(pattern) if not p.name.startswith("agent-")
            )
    elif harness is Harness.CODEX:
        for folder in ("sessions", "archived_sessions"):
            yield from (root / folder).rglob("rollout-*.jsonl*")
    elif harness is Harness.PI:
        for pattern in ("*/*.jsonl", "*/*.jsonl.gz"):
            yield from (root / "sessions").glob(pattern)
    else:
        yield from (
            p for p in (root / "sessions").rglob("session.jsonl") if "subagent" not in p.parts
        )


def _facts(head: list[object]) -> tuple[str | None, int | None]:
    """Project folder and first timestamp from a journal's first records."""
    project: str | None = None
    start: int | None = None
    for value in head:
        if not isinstance(value, dict):
            continue
        payload = value.get("payload")
        for source in (value, payload if isinstance(payload, dict) else {}):
            cwd = source.get("cwd")
            if project is None and isinstance(cwd, str):
                project = cwd
        if start is None:
            start = timestamp_ns(value.get("timestamp"))
    return project, start


def discover(
    *,
    harness: Harness | None = None,
    since_ns: int | None = None,
    project: str | None = None,
    env: Mapping[str, str] | None = None,
) -> list[FoundJournal]:
    """Journals newest first (by start time, else modification time)."""
    found: list[FoundJournal] = []
    for kind, root in roots(env).items():
        if harness is not None and kind is not harness:
            continue
        if not root.is_dir():
            continue
        for path in _candidates(kind, root):
            try:
                stat = path.stat()
                head = sniff(path, max_lines=20)
            except (OSError, JournalError):
                continue
            where, start = _facts(head)
            when = start if start is not None else stat.st_mtime_ns
            if since_ns is not None and when < since_ns:
                continue
            if project is not None and project.lower() not in (where or str(path)).lower():
                continue
            found.append(FoundJournal(kind, path, where, start, stat.st_size, stat.st_mtime_ns))
    for adapter in ADAPTERS:
        if adapter.locate is None or (harness is not None and adapter.harness is not harness):
            continue
        for located in adapter.locate(os.environ if env is None else env):
            try:
                stat = located.path.stat()
            except OSError:
                continue
            when = located.start_ns if located.start_ns is not None else stat.st_mtime_ns
            if since_ns is not None and when < since_ns:
                continue
            where = located.project
            if project is not None and project.lower() not in (where or str(located.path)).lower():
                continue
            found.append(
                FoundJournal(
                    adapter.harness,
                    located.path,
                    where,
                    located.start_ns,
                    stat.st_size,
                    stat.st_mtime_ns,
                )
            )
    found.sort(key=lambda j: (-(j.start_ns or j.modified_ns), str(j.path)))
    return found
