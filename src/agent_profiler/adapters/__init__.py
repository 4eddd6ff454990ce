"""The harness adapters, in one explicit tuple. Adding a harness is one module
plus one line here: an `Adapter` that detects its journals by content, groups
files that form one session tree, and reads a group into model `Session`s.
Harnesses whose sessions are not JSONL (a JSON document, a database) also say
which such files they read (`claim`, `role`), and each may say where its
sessions live on this machine (`locate`, for `discover`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from agent_profiler.adapters import claude_code, codex, gemini_cli, muse, opencode, pi
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.model import Harness, Session


@dataclass(frozen=True, slots=True)
class SniffedFile:
    path: Path
    head: list[object]  # the first parsed records, for detection and grouping


@dataclass(frozen=True, slots=True)
class JournalGroup:
    """Files read together: a main journal and the files attached to it
    (subagents, compaction requests). `main` is None for orphan subagent files."""

    harness: Harness
    main: Path | None
    extras: tuple[Path, ...] = ()
    variant: str = ""  # e.g. "stream-json"

    @property
    def paths(self) -> tuple[Path, ...]:
        return ((self.main,) if self.main else ()) + self.extras


@dataclass(frozen=True, slots=True)
class Located:
    """A session file found on this machine, with what its first bytes tell."""

    path: Path
    project: str | None = None
    start_ns: int | None = None


@dataclass(frozen=True, slots=True)
class Adapter:
    harness: Harness
    detect: Callable[[list[object]], bool]
    plan: Callable[[list[SniffedFile]], list[JournalGroup]]
    read: Callable[[JournalGroup, Diagnostics], list[Session]]
    # Says what a file this harness knows, but cannot read, is (e.g. an export).
    explain: Callable[[Path], str | None] | None = None
    # True for a file the JSONL sniff refuses that this harness reads (a JSON document,
    # a SQLite database): it is planned for this harness without `detect`.
    claim: Callable[[Path], bool] | None = None
    # What a non-JSONL file met while walking a folder is to this harness: "read" (a
    # session file), "member" (read through another file: a part, a -wal), or "".
    role: Callable[[Path], str] | None = None
    # The session files in this harness's default folders (environment → files).
    locate: Callable[[Mapping[str, str]], Iterable[Located]] | None = None


def _claude_plan(files: list[SniffedFile]) -> list[JournalGroup]:
    groups: dict[str, tuple[Path | None, list[Path], str]] = {}
    orphans: list[tuple[str, Path]] = []
    order: list[str] = []
    for file in files:
        if claude_code.is_stream_json(file.head):
            key = f"stream:{file.path}"
            groups[key] = (file.path, [], "stream-json")
            order.append(key)
            continue
        session_id, sidechain = _claude_identity(file.head)
        if sidechain or file.path.name.startswith("agent-"):
            orphans.append((session_id or str(file.path), file.path))
            continue
        key = session_id or str(file.path)
        if key in groups:
            # Another file with the same sessionId (a copy, a resumed session): read it
            # too, as its own group; its subagents attach to the first one.
            key = f"{key}@{file.path}"
        groups[key] = (file.path, list(claude_code.subagent_files(file.path)), "")
        order.append(key)
    for session_id, path in orphans:
        if session_id in groups and groups[session_id][2] == "":
            extras = groups[session_id][1]
            if path not in extras:
                extras.append(path)
        else:
            key = f"orphan:{path}"
            groups[key] = (None, [path], "")
            order.append(key)
    return [
        JournalGroup(Harness.CLAUDE_CODE, groups[k][0], tuple(groups[k][1]), groups[k][2])
        for k in order
    ]


def _claude_identity(head: list[object]) -> tuple[str | None, bool]:
    for value in head:
        if isinstance(value, dict) and isinstance(value.get("sessionId"), str):
            return value["sessionId"], bool(value.get("isSidechain"))
    return None, False


def _claude_read(group: JournalGroup, diagnostics: Diagnostics) -> list[Session]:
    return claude_code.read_group(
        group.main, list(group.extras), diagnostics, stream_json=group.variant == "stream-json"
    )


def _codex_plan(files: list[SniffedFile]) -> list[JournalGroup]:
    # One group: subagent rollouts link to their parent's spawn call only when read together.
    return [JournalGroup(Harness.CODEX, None, tuple(f.path for f in files))]


def _codex_read(group: JournalGroup, diagnostics: Diagnostics) -> list[Session]:
    return codex.read_rollouts(list(group.paths), diagnostics)


ADAPTERS: tuple[Adapter, ...] = (
    Adapter(Harness.CLAUDE_CODE, claude_code.detect, _claude_plan, _claude_read),
    Adapter(Harness.CODEX, codex.detect, _codex_plan, _codex_read),
    Adapter(Harness.PI, pi.detect, pi.plan, pi.read),
    Adapter(Harness.MUSE, muse.detect, muse.plan, muse.read_group, muse.explain_rejected),
    Adapter(
        Harness.GEMINI_CLI,
        gemini_cli.detect,
        gemini_cli.plan,
        gemini_cli.read,
        None,
        gemini_cli.claim,
        gemini_cli.role,
        gemini_cli.locate,
    ),
    Adapter(
        Harness.OPENCODE,
        opencode.detect,
        opencode.plan,
        opencode.read,
        None,
        opencode.claim,
        opencode.role,
        opencode.locate,
    ),
)


def adapter_for(harness: Harness) -> Adapter | None:
    return next((a for a in ADAPTERS if a.harness is harness), None)
