"""Small real journals the tests share, one or two per harness (copies in tests/data/journals,
with their sources in each harness's SOURCES.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.model import Session

DATA = Path(__file__).parent / "data" / "journals"

CLAUDE_SMALL = DATA / "claude-code" / "handmade" / "small.jsonl"
CODEX_SMALL = (
    DATA / "codex" / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
)
PI_LARGE = DATA / "pi" / "pi-mono_large-session_v1.jsonl"
MUSE_SINGLE_TURN = DATA / "muse" / "hcn-1.4.2-R4684.1_meta_single-turn_retained-frame.session.jsonl"
# A Gemini CLI session is a JSON document (≤0.38) or a JSONL log (≥0.39).
GEMINI_DOCUMENT = DATA / "gemini-cli" / "entire-ab-2b9748b105-0_session.json"
GEMINI_JSONL = (
    DATA
    / "gemini-cli"
    / "tp-tutor-0.39.1-jsonl"
    / "anthonyguera"
    / "chats"
    / "session-2026-04-24T23-16-c8b2cbd9.jsonl"
)
# Two `opencode export` documents: a session with a task subagent, and an explore subagent.
OPENCODE_EXPORT = DATA / "opencode" / "ses_fd4c895f0ffe6gKgxHiEgiQCcd.export.json"
OPENCODE_EXPLORE = DATA / "opencode" / "ses_2bef25635ffe8EzID0I1Oeymal.export.json"


def read(*paths: Path) -> tuple[list[Session], Diagnostics]:
    """The sessions of journals that read without failures, and what reading them noted
    and warned."""
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.loader import load

    diagnostics = Diagnostics()
    result = load(list(paths), diagnostics)
    assert result.failures == [], result.failures
    return result.sessions, diagnostics


def read_single(path: Path) -> tuple[Session, Diagnostics]:
    """The one session of a journal that reads without failures, and its diagnostics."""
    sessions, diagnostics = read(path)
    (session,) = sessions
    return session, diagnostics
