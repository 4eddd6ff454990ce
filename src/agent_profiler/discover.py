"""Find the journals on this machine, in each harness's default folders: each adapter's
`locate` says where its harness keeps them (honouring the harness's environment
variable); this module only loops over the adapters, filters and sorts.

Only the first records of each file are read (for its project and start time),
so listing is cheap; paths found here can be passed straight to `export`.
Subagent files are not listed on their own: exporting the main journal picks them up.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from agent_profiler.adapters import ADAPTERS
from agent_profiler.model import Harness, frozen


@frozen
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


def discover(
    *,
    harness: Harness | None = None,
    since_ns: int | None = None,
    project: str | None = None,
    env: Mapping[str, str] | None = None,
) -> list[FoundJournal]:
    """Journals newest first (by start time, else modification time)."""
    found: list[FoundJournal] = []
    environment = os.environ if env is None else env
    for adapter in ADAPTERS:
        if harness is not None and adapter.harness is not harness:
            continue
        for located in adapter.locate(environment):
            try:
                stat = located.path.stat()
            except OSError:
                continue
            if not stat.st_size:  # nothing in it yet: no session to export
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
