"""What a reader of the report sees on real journals (the review of the page read as a
user would, /work/notes/review-report.md): units on every duration, the part of the
reported size the estimate does not explain drawn and named, failures and responses
without usage counted, one name per category, and the sentences true of the session."""

from __future__ import annotations

from pathlib import Path

from test_report import Node, parse, read, section

from agent_profiler.model import Session
from agent_profiler.report import render_report
from shared_paths import TESTS

CLAUDE = TESTS / "data" / "journals" / "claude-code"
COMPACT_BOUNDARY = CLAUDE / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"
INIT_ONLY = CLAUDE / "trackgentic-mp9r3tbb_v2.1.143_init-only-no-result.jsonl"


def page_of(*paths: Path, cost: bool = False) -> tuple[list[Session], Node]:
    sessions = read(*paths)
    return sessions, parse(render_report(sessions, cost=cost))


def facts_line(view: Node) -> str:
    """A Context view's line of facts under its heading (harness, model, start, length)."""
    return view.find("p", class_="muted")[0].text()


# --------------------------------------------------------------------------- durations


def test_a_compaction_without_a_recorded_duration_took_an_unknown_time() -> None:
    """Claude Code's compact_boundary is one record: the journal does not say how long the
    compaction took, so the table says "—", not a bare 0."""
    sessions, page = page_of(COMPACT_BOUNDARY)
    (compaction,) = sessions[0].compactions
    assert compaction.end_ns == compaction.start_ns
    table = section(page, sessions[0].session_id).one("table", class_="compactions")
    took = table.find("td")[4].text()
    assert took == "—"


def test_a_session_shorter_than_a_second_lasted_under_a_second() -> None:
    sessions, page = page_of(INIT_ONLY)
    t0, t1 = sessions[0].start_ns, sessions[0].end_ns
    assert t1 - t0 < 1_000_000_000
    assert "lasted <1\u00a0s" in facts_line(section(page, sessions[0].session_id))
