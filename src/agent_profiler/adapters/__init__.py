"""The harness adapters, in one explicit tuple. Adding a harness is one module
plus one line here: an `Adapter` that detects its journals by content, groups
files that form one session tree, and reads a group into model `Session`s.
Harnesses whose sessions are not JSONL (a JSON document, a database) also say
which such files they read (`claim`, `role`).

Everything that is one harness's knowledge lives in its module, and every adapter
answers the same questions: where its sessions live on this machine (`locate`, for
`discover`, which only loops over the adapters), which of its tools change the
workspace (`MUTATING_TOOLS`, for `summary`'s repeated calls) and which of its own
composition records it parses (`NATIVE_COMPOSITION`: Claude Code's `/context` screens,
Muse's request lanes; empty for a harness that reports totals only)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from pathlib import Path
from typing import Any

from agent_profiler.diagnostics import Diagnostics
from agent_profiler.model import Harness, Session, frozen


@frozen
class SniffedFile:
    path: Path
    # The first parsed records, slimmed for grouping (loader._slim_head): ids, types and
    # small objects are there; strings over 256 characters and lists are not.
    head: list[object]


@frozen
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


@frozen
class Located:
    """A session file found on this machine, with what its first bytes tell."""

    path: Path
    project: str | None = None
    start_ns: int | None = None


@frozen
class Adapter:
    harness: Harness
    detect: Callable[[list[object]], bool]
    plan: Callable[[list[SniffedFile]], list[JournalGroup]]
    read: Callable[[JournalGroup, Diagnostics], list[Session]]
    # The session files in this harness's default folders (environment → files).
    locate: Callable[[Mapping[str, str]], Iterable[Located]]
    # Says what a file this harness knows, but cannot read, is (e.g. an export).
    explain: Callable[[Path], str | None] | None = None
    # True for a file the JSONL sniff refuses that this harness reads (a JSON document,
    # a SQLite database): it is planned for this harness without `detect`.
    claim: Callable[[Path], bool] | None = None
    # What a non-JSONL file met while walking a folder is to this harness: "read" (a
    # session file), "member" (read through another file: a part, a -wal), or "".
    role: Callable[[Path], str] | None = None
    module: str = ""  # adapters/<module>.py, which holds the harness's constants

    def _constant(self, name: str) -> Any:
        return getattr(import_module(f"{__name__}.{self.module}"), name)

    @property
    def mutating_tools(self) -> frozenset[str]:
        """The tools that can change the workspace (a repeated call after one of these is
        not a repeat): the module's `MUTATING_TOOLS`."""
        tools: frozenset[str] = self._constant("MUTATING_TOOLS")
        return tools

    @property
    def native_composition(self) -> tuple[str, ...]:
        """The harness's own composition records this adapter parses (none: totals only)."""
        names: tuple[str, ...] = self._constant("NATIVE_COMPOSITION")
        return names


def _adapter(harness: Harness, module: str, **names: str) -> Adapter:
    """The `Adapter` of `harness`, whose functions live in `adapters/<module>.py` under the
    default names (`detect`, `plan`, `read`) or the ones given. The module is imported the
    first time one of them is called: a Claude Code export never imports the five other
    adapters (about a third of the package's import time at start-up)."""

    def lazy(name: str) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            return getattr(import_module(f"{__name__}.{module}"), name)(*args)

        call.__qualname__ = f"{module}.{name}"
        return call

    functions = {"detect": "detect", "plan": "plan", "read": "read", "locate": "locate", **names}
    lazies = {field: lazy(name) for field, name in functions.items()}
    return Adapter(harness, module=module, **lazies)


# One line per harness: its module, and any function not under its default name.
ADAPTERS: tuple[Adapter, ...] = (
    _adapter(Harness.CLAUDE_CODE, "claude_code"),
    _adapter(Harness.CODEX, "codex"),
    _adapter(Harness.PI, "pi"),
    _adapter(Harness.MUSE, "muse", read="read_group", explain="explain_rejected"),
    _adapter(Harness.GEMINI_CLI, "gemini_cli", claim="claim", role="role"),
    _adapter(Harness.OPENCODE, "opencode", claim="claim", role="role"),
)


def adapter_for(harness: Harness) -> Adapter | None:
    return next((a for a in ADAPTERS if a.harness is harness), None)
