"""Every session of tests/data and the shared corpus, each journal read on its own: its
context snapshots, in the session's order, do not go back in time, and no request starts
before its own prompt. A snapshot earlier than the one before it draws the context counters
back to a stale value after it (a Claude Code microcompaction stamped after the request it
preceded did, until the request started at the boundary); a request before its prompt loses
the flow from the prompt's input (a queued prompt's did). The exceptions are the journals'
own, each named with its reason: a new harness version that breaks the order fails here."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.model import Session
from shared_paths import SHARED, TESTS

ROOTS = (TESTS / "data" / "journals", SHARED / "corpus")
NOT_JOURNALS = (".md", ".py")
# (journal name, the later one's id): the journal's own order, not the reader's.
SNAPSHOTS_BACK = {
    # Pi dates each request from its message's creation: this one was created 3.4 s before
    # the one written before it (the one pass reorders them: docs/onepass.md).
    ("pi-mono_large-session_v1.jsonl", "line-466"),
}
BEFORE_PROMPT = {
    ("pi-mono_large-session_v1.jsonl", "line-463"),  # (as above: created 1.3 s earlier)
    # The hand-made Muse 1.1.1 session: its duration_ms (300) is longer than its run so far.
    ("session.jsonl", "request-1"),
}


def _journals() -> list[Path]:
    found = []
    for root in ROOTS:
        if root.is_dir():
            found += [
                p
                for p in sorted(root.rglob("*"))
                if p.is_file()
                and not p.name.endswith(NOT_JOURNALS)
                and p.name != "SOURCES.md"
                and not p.name.startswith("make_")
            ]
    return found


def _sessions() -> list[tuple[str, Session]]:
    """Each journal's sessions, read the way `load` reads one path (files that are no
    journal, and journals it cannot read, give none)."""
    read = []
    for path in _journals():
        result = load([path], Diagnostics())
        read += [(path.name, session) for session in result.sessions]
    return read


@pytest.fixture(scope="module")
def sessions() -> list[tuple[str, Session]]:
    read = _sessions()
    assert len({s.harness for _, s in read}) >= 5, "the journals of tests/data were not found"
    return read


def test_snapshots_do_not_go_back_in_time(sessions: list[tuple[str, Session]]) -> None:
    back = set()
    for name, session in sessions:
        for before, after in pairwise(session.snapshots):
            if after.time_ns < before.time_ns:
                back.add((name, after.anchor_id))
    assert back <= SNAPSHOTS_BACK, sorted(back - SNAPSHOTS_BACK)


def test_no_request_starts_before_its_prompt(sessions: list[tuple[str, Session]]) -> None:
    early = set()
    for name, session in sessions:
        prompts = {p.id: p.start_ns for p in session.prompts}
        for response in session.responses:
            if response.start_ns < prompts.get(response.prompt_id or "", response.start_ns):
                early.add((name, response.id))
            assert response.start_ns <= response.end_ns, (name, response.id)
        for call in session.tool_calls:
            assert call.start_ns <= call.end_ns, (name, call.call_id)
    assert early <= BEFORE_PROMPT, sorted(early - BEFORE_PROMPT)


def test_the_shared_corpus_is_read_when_it_is_beside() -> None:
    if not (SHARED / "corpus").is_dir():
        pytest.skip(f"shared corpus not beside ({SHARED / 'corpus'})")
    names = {p.name for p in _journals()}
    assert "planetfall-39648afe5b-4_v2.1.179_queued-commands.jsonl" in names
