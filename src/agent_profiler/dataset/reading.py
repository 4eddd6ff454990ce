"""Journal groups read into the staging rows of a version being built (collect.py): each
group's rows appended by the process that read it, stamped with that reading's number, and
what the collect needs of each group sent back (`Read`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import orjson

from agent_profiler.adapters import JournalGroup
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.model import Session, frozen
from agent_profiler.options import ReadOptions

from . import TABLES
from .parquet import READING


@frozen
class WriteRows:
    """A group's rows appended to `<table>/harness=…/month=…/<pid>.jsonl` in the staging
    folder (one file per process, table and partition, so nothing interleaves, and each
    partition's Parquet file is one streaming copy: `parquet.write_table`), each stamped with this
    reading's number; sends back only counts, and the number (`READING`)."""

    staging: str
    group_ids: dict[int, str]  # task index → group id

    def __call__(
        self,
        sessions: list[Session],
        diagnostics: Diagnostics,
        task: Any,
        out: IO[bytes] | None,
    ) -> dict[str, int]:
        from .rows import session_rows

        group_id = self.group_ids[task.index]
        reading = int.from_bytes(os.urandom(7), "big")
        stamp = b'{"%s":%d,' % (READING.encode(), reading)
        tables: dict[tuple[str, str], list[bytes]] = {}
        counts = dict.fromkeys(TABLES, 0)
        for session in sessions:
            for name, rows in session_rows(session, group_id).items():
                if not rows:
                    continue
                # A row is never empty: it holds its group, session and partition at least.
                part = f"harness={rows[0]['harness']}/month={rows[0]['month']}"
                lines = tables.setdefault((name, part), [])
                lines += [stamp + orjson.dumps(row)[1:] for row in rows]
                counts[name] += len(rows)
        pid = os.getpid()
        for (name, part), lines in tables.items():
            # (plain strings: pathlib's objects, made per group and table, were a sixth of
            # this call)
            folder = os.path.join(self.staging, name, part)
            _append(folder, os.path.join(folder, f"{pid}.jsonl"), b"\n".join(lines) + b"\n")
        return {READING: reading, **counts}


def _append(folder: str, path: str, data: bytes) -> None:
    """`data` appended to the file at `path`, its folder made on its first rows only:
    `mkdir(exist_ok=True)` raised and caught FileExistsError for each group's rows of each
    table (5,000 sessions: 3% of collect in one process)."""
    try:
        with open(path, "ab") as handle:
            handle.write(data)
    except FileNotFoundError:
        os.makedirs(folder, exist_ok=True)
        with open(path, "ab") as handle:
            handle.write(data)


@frozen
class Read:
    """One group read: its id in the dataset (the hash of its main file's path) and the
    reading's outcome (pipeline.GroupOutcome, its value WriteRows's counts)."""

    group: JournalGroup
    group_id: str
    outcome: Any


def lead(group: JournalGroup) -> Path:
    """The file a group is known by (its id, the hash of its path; its stem): its main
    journal, or, without one (a Gemini CLI session's files, orphan subagents), the
    shallowest of its files, the first by name of equals: not the first given, so that a
    group's id does not depend on the order its files were given in (a Gemini CLI subagent
    given before its session's file)."""
    return group.main or min(group.extras, key=lambda p: (len(p.parts), str(p)))


@frozen
class Reader:
    """Reads groups into the staging folder, in one process per core (`jobs`)."""

    staging: str
    options: ReadOptions
    notice: Callable[[str], None] | None
    progress: Callable[[int, int, JournalGroup], None] | None
    on_bytes: Callable[[str, int, int], None] | None
    key_of: Callable[[Path], str]
    # Called with the groups before they are read (beside.Beside.note).
    before: Callable[[list[JournalGroup]], None] | None = None

    def __call__(self, groups: list[JournalGroup]) -> list[Read]:
        from agent_profiler.pipeline import GroupTask, jobs_for, run_groups

        if self.before is not None:
            self.before(groups)
        group_ids = {i: self.key_of(lead(g)) for i, g in enumerate(groups)}
        tasks = [GroupTask(i, g, self.options) for i, g in enumerate(groups)]
        outcomes = run_groups(tasks, WriteRows(self.staging, group_ids),
                              jobs_for(self.options.jobs, groups),
                              notice=self.notice, progress=self.progress,
                              on_progress=self.on_bytes)  # fmt: skip
        return [Read(groups[o.index], group_ids[o.index], o) for o in outcomes]


def stem(group: JournalGroup) -> str:
    """The group's lead journal's name without its suffix (the manifest's `stem`)."""
    name = lead(group).name
    for suffix in (".jsonl.gz", ".jsonl.zst", ".jsonl", ".json"):
        name = name.removesuffix(suffix)
    return name
