"""Small real journals the tests share, one or two per harness (copies in tests/data/journals,
with their sources in each harness's SOURCES.md)."""

from __future__ import annotations

import atexit
import functools
import gzip
import json
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.model import Session

DATA = Path(__file__).parent / "data" / "journals"

CLAUDE_SMALL = DATA / "claude-code" / "handmade" / "small.jsonl"
# The spotter session's own transcript (Claude Code 2.1.39; its subagents beside it).
SPOTTER_TRANSCRIPT = (
    DATA
    / "claude-code"
    / "spotter-2.1.39-subagents-compaction"
    / "258c7280-ae70-4798-800f-63464d01a85d.jsonl.gz"
)
# Claude Code 2.1.14 (entire.io): the transcript most hand-made Claude Code cases are edited from.
CLAUDE_E4B = DATA / "claude-code" / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"
CODEX_SMALL = (
    DATA / "codex" / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
)
# Codex CLI 0.125 (codemie): the plain rollout most hand-made Codex cases are edited from.
CODEX_PLAIN = (
    DATA / "codex" / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz"
)
PI_LARGE = DATA / "pi" / "pi-mono_large-session_v1.jsonl"
# A v1 fork (header `branchedFrom`): its first 1,001 entries are a copy of its source's, its
# own history is one thinking-level change (docs/traces.md, Pi forks).
PI_FORK = DATA / "pi" / "pi-mono_before-compaction_v1.jsonl.gz"
PI_FORK_SOURCE_ID = "d97339c6-6c10-4827-846b-9ff1d9c3dc37"
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


@functools.cache
def pi_fork_source() -> Path:
    """The session PI_FORK was forked from, as far as the fork holds it (the source itself is
    not published): the entries the fork copied, lines 2–1,002, under the fork's header
    without `branchedFrom`, with the id and time the source's file name gives (a v1 fork's
    header is its source's with a new id, time and `branchedFrom`). Same line numbers as
    PI_FORK: a v1 session with its own 471 measured requests and two compactions. Written
    once per test run into a temporary folder."""
    lines = gzip.decompress(PI_FORK.read_bytes()).decode("utf-8").split("\n")
    header = json.loads(lines[0])
    forked = header.pop("branchedFrom") and header["timestamp"]  # ISO: compared as text
    header.update(id=PI_FORK_SOURCE_ID, timestamp="2025-12-09T00:52:54.397Z")
    copied = [line for line in lines[1:] if line and json.loads(line)["timestamp"] < forked]
    assert len(copied) == 1_001
    folder = Path(tempfile.mkdtemp(prefix="agent-profiler-pi-source-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    out = folder / f"2025-12-09T00-52-54-397Z_{PI_FORK_SOURCE_ID}.jsonl"
    out.write_text("\n".join([json.dumps(header), *copied]) + "\n", encoding="utf-8")
    return out


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


def codex_meta(thread: str, parent: str | None = None) -> dict[str, object]:
    """CODEX_PLAIN's `session_meta` line as thread `thread` (a subagent of `parent`), its
    base instructions left out."""
    from rules_spy import record

    meta = record(CODEX_PLAIN, 1)
    payload = meta["payload"]
    payload.pop("base_instructions")
    payload["id"] = thread
    if parent is not None:
        payload["source"] = {"subagent": {"thread_spawn": {"parent_thread_id": parent}}}
    return meta
