"""OpenCode sessions (sst/opencode, `opencode.ai`): the SQLite database, the JSON
storage folder and `opencode export` documents (read by `opencode_storage`),
mapped onto the model by `opencode_session` (FORMATS-gemini-opencode.md §2); this
module detects the files, chooses which stored sessions are read together and links
children to their `task` calls.

Format facts these modules rely on, with the surprise each one holds:
- one request = one `step-start` … `step-finish` pair of an assistant message
  (one per message in every real file; older SDKs allowed several), its usage in
  the `step-finish` (equal to the message's `tokens` when there is one step);
- `tokens.input` EXCLUDES the cache: the request's prompt is
  `input + cache.read + cache.write`; `output` is the completion, `reasoning`
  the thinking (inside `output` for some providers, beside it for others);
- a tool part holds the call and its result (`state.input`, `state.output` or
  `state.error`, `state.time.start/end` in epoch ms): the output is what the
  model saw, and is in every later prompt until OpenCode's prune (after a turn,
  on by default) sets `state.time.compacted`: requests from then on send
  "[Old tool result content cleared]" instead (the input is still sent);
- compaction: a user message with a `compaction` part, then an assistant message
  with `summary: true` (agent `compaction`) whose tokens are the summarisation
  request; later prompts hold that summary and what follows it (from
  `tail_start_id` on, when set). The old messages stay in storage;
- a `task` call creates a child session (`parentID`); the call's
  `state.metadata.sessionId` names it;
- the system prompt and tool schemas are not stored (≥1.0.65): the inferred head;
  `patch` and `snapshot` parts are file-state bookkeeping, not prompt content.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agent_profiler.adapters import opencode_storage as storage
from agent_profiler.adapters.common import is_damaged_gzip, text_field
from agent_profiler.adapters.opencode_session import HARNESS, SessionBuilder
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import JournalError
from agent_profiler.model import Session

if TYPE_CHECKING:
    from agent_profiler.adapters import JournalGroup, Located, SniffedFile


def detect(values: list[object]) -> bool:
    """A one-line `opencode export` document: `info` with a `ses_` id, `messages`."""
    first = values[0] if values else None
    if not isinstance(first, dict) or not isinstance(first.get("messages"), list):
        return False
    info = first.get("info")
    return isinstance(info, dict) and (text_field(info, "id") or "").startswith("ses_")


def claim(path: Path) -> bool:
    return storage.kind_of(path) != ""


def role(path: Path) -> str:
    name = path.name
    if name.startswith("opencode") and name.endswith((".db-wal", ".db-shm", ".db-journal")):
        return "member"
    if name.startswith("opencode") and name.endswith(".db"):
        return "read"
    if "storage" in path.parts[:-1]:
        # By name: a storage folder holds thousands of message and part files.
        at = len(path.parts) - 1 - path.parts[::-1].index("storage")
        if (Path(*path.parts[: at + 1]) / "session").is_dir():
            is_session = path.parent.parent.name == "session" and name.startswith("ses_")
            return "read" if is_session and name.endswith(".json") else "member"
    if name.endswith((".json", ".json.gz")) and storage.kind_of(path) == "export":
        return "read"
    # A gzipped export too damaged to show its head: read, so the damage is named (15.1).
    return "read" if name.endswith(".json.gz") and is_damaged_gzip(path) else ""


def read_stored(paths: list[Path], diagnostics: Diagnostics) -> list[storage.StoredSession]:
    """Every session the given files point at: a database first. A session of the JSON
    storage that a database holds too is left out (the storage is left on disk after the
    migration; the database is the newer copy). Two exports or two databases holding one
    session (a copy, a backup) are both read: the loader gives the copy its own id
    (`#2`), as for every harness (issue 15.2).

    A database or export that cannot be read (locked, damaged, gone) costs itself, not
    the group (review-motion 7): its own `error:` line (`Diagnostics.failed`, exit 1), as
    for a file given alone, and the other files are read."""
    kinds = [(storage.kind_of(p) or "export", p) for p in paths]
    rank = {"db": 0, "storage": 1, "export": 2}
    kinds.sort(key=lambda kp: rank.get(kp[0], 3))
    seen: set[str] = set()
    result: list[storage.StoredSession] = []
    roots: dict[Path, set[str]] = {}
    for kind, path in kinds:
        if kind == "storage":
            root = storage.storage_root(path)
            if root is not None:
                roots.setdefault(root, set()).add(path.stem)
            continue
        try:
            found = (
                storage.read_db(path, diagnostics)
                if kind == "db"
                else (storage.read_export(path, diagnostics))
            )
        except JournalError as error:
            diagnostics.failed(error)
            continue
        seen.update(session.id for session in found)
        result += found
    for root, wanted in roots.items():
        result += _unseen(storage.read_storage(root, wanted, diagnostics), seen, diagnostics)
    return result


def _unseen(
    found: list[storage.StoredSession], seen: set[str], diagnostics: Diagnostics
) -> list[storage.StoredSession]:
    kept = []
    for session in found:
        if session.id in seen:
            diagnostics.note("opencode:session-read-twice")
            continue
        seen.add(session.id)
        kept.append(session)
    return kept


def read_group(group: JournalGroup, diagnostics: Diagnostics) -> list[Session]:
    sessions = []
    for stored in read_stored(list(group.paths), diagnostics):
        builder = SessionBuilder(stored, diagnostics)
        builder.run()
        session = builder.finish()
        if session is not None:
            sessions.append(session)
    # Link each child to the `task` call that launched it (its metadata names the child).
    # A child not read keeps its id on the call: links.with_unread_children counts it.
    launcher = {
        t.child_session: t.call_id for s in sessions for t in s.tool_calls if t.child_session
    }
    return [
        dataclasses.replace(session, parent_call_id=launcher.get(session.session_id))
        for session in sessions
    ]


def plan(files: list[SniffedFile]) -> list[JournalGroup]:
    """One group: children link to their parent's `task` call only when read together."""
    from agent_profiler.adapters import JournalGroup

    return [JournalGroup(HARNESS, None, tuple(f.path for f in files))]


def read(group: JournalGroup, diagnostics: Diagnostics) -> list[Session]:
    return read_group(group, diagnostics)


# --------------------------------------------------------------------------- discover


def locate(env: Mapping[str, str]) -> Iterator[Located]:
    """`$XDG_DATA_HOME/opencode` (default `~/.local/share/opencode`): the database(s)
    `opencode*.db` (or `$OPENCODE_DB`), else the JSON storage's session files."""
    from agent_profiler.adapters import Located

    home = Path(env.get("HOME") or Path.home())
    data = Path(env["XDG_DATA_HOME"]) if env.get("XDG_DATA_HOME") else home / ".local" / "share"
    root = data / "opencode"
    override = env.get("OPENCODE_DB")
    databases = sorted(root.glob("opencode*.db"))
    if override and override != ":memory:":
        databases.append(Path(override) if Path(override).is_absolute() else root / override)
    for database in dict.fromkeys(databases):
        if database.is_file():
            yield Located(database)
    if not databases:
        for path in storage.storage_sessions(root / "storage"):
            yield Located(path)


# Tools that can change the workspace: a repeated call after one of these is not a repeat.
MUTATING_TOOLS = frozenset({"bash", "edit", "write", "patch", "apply_patch", "multiedit"})
NATIVE_COMPOSITION: tuple[str, ...] = ()  # OpenCode reports totals only
