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


ADAPTERS: tuple[Adapter, ...] = (
    Adapter(Harness.CLAUDE_CODE, claude_code.detect, claude_code.plan, claude_code.read),
    Adapter(Harness.CODEX, codex.detect, codex.plan, codex.read),
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
