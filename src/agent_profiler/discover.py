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
from agent_profiler.console import echo, human_size, printable
from agent_profiler.model import Harness, frozen

# The variables that move a harness's journals (each adapter's `locate` reads them), and
# whether each names a folder or a file: one that names nothing of the kind is said, or
# `discover` answered "no journals found in the default folders" and left the user to
# guess that the variable was wrong.
PLACES: dict[Harness, tuple[tuple[str, bool], ...]] = {
    Harness.CLAUDE_CODE: (("CLAUDE_CONFIG_DIR", True),),
    Harness.CODEX: (("CODEX_HOME", True),),
    Harness.PI: (("PI_CODING_AGENT_DIR", True),),
    Harness.MUSE: (("XDG_DATA_HOME", True),),
    Harness.GEMINI_CLI: (("GEMINI_CLI_HOME", True),),
    Harness.OPENCODE: (("XDG_DATA_HOME", True), ("OPENCODE_DB", False)),
}


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


def misplaced(harness: Harness | None, env: Mapping[str, str]) -> list[str]:
    """A note for each harness variable (PLACES) that is set and names no folder (or, for
    a database, no file), with the harnesses it moves; its value shown as a warning shows
    a path (no home folder)."""
    from agent_profiler.diagnostics import shown_path

    moved: dict[tuple[str, bool], list[str]] = {}
    for owner, places in PLACES.items():
        if harness is None or owner is harness:
            for place in places:
                moved.setdefault(place, []).append(owner.value)
    notes = []
    for (variable, is_folder), owners in moved.items():
        value = env.get(variable)
        if not value:
            continue
        wrong = _wrong(Path(value), is_folder)
        if wrong:
            notes.append(
                f"note: {variable} ({shown_path(value)}) {wrong}: "
                f"{', '.join(owners)} journals were looked for there"
            )
    return notes


def _wrong(path: Path, is_folder: bool) -> str | None:
    """What is wrong with a harness variable's place: no folder (or not one), no file, a
    file that is no SQLite database (OPENCODE_DB naming a JSONL journal was listed as an
    OpenCode database); None when it fits."""
    from agent_profiler.inputs import os_reason

    try:
        if is_folder:
            if path.is_dir():
                return None
            return "is not a folder" if path.exists() else "names no folder"
        if not path.is_file():
            return "names no file"
        with path.open("rb") as stream:
            sqlite = stream.read(16) == b"SQLite format 3\x00"
        return None if sqlite else "is not a SQLite database"
    except OSError as error:  # a folder above it that cannot be opened
        return f"cannot be opened ({os_reason(error)})"


def run_discover(
    *, harness: Harness | None, since: str | None, project: str | None, as_json: bool
) -> None:
    """`agent-profiler discover`: the journals found, as a list or JSON on stdout; on
    stderr, a harness variable that points at no folder, and an empty answer's reasons."""
    import orjson

    from agent_profiler.options import moment_ns

    for note in misplaced(harness, os.environ):
        echo(note, err=True)
    since_ns = moment_ns(since) if since is not None else None
    found = discover(harness=harness, since_ns=since_ns, project=project)
    if as_json:
        echo(orjson.dumps([j.to_json() for j in found], option=orjson.OPT_INDENT_2).decode())
        return
    if not found:
        # Where it looked and what it asked, so that an empty answer can be acted on.
        owner = f"{harness.value}'s" if harness is not None else "each harness's"
        asked = [f"--{k} {v}" for k, v in (("since", since), ("project", project)) if v]
        matching = f" matching {' '.join(asked)}" if asked else ""
        echo(
            f"no journals found{matching} in {owner} default folders (`agent-profiler "
            "discover --help` lists them, and the variables that move them)",
            err=True,
        )
        return
    for journal in found:
        start = journal.to_json()["start"] or "-"
        # A file name or project with an escape code or a newline is shown escaped: a
        # folder someone else filled cannot clear the screen or forge a line.
        shown = [printable(text) for text in (journal.project or "-", str(journal.path))]
        echo(
            f"{journal.harness.value:<11}  {start:<25}  {human_size(journal.size):>9}  "
            f"{shown[0]}\n  {shown[1]}"
        )
