"""The Context chart's time axis: a session without a long idle stretch is drawn exactly as
before the axis could break (goldens), one with long idle stretches has them collapsed to a
narrow labelled band with true elapsed-time ticks on each side."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_claude_code import SPOTTER_DIR, SPOTTER_ID
from test_report import CODEX, long_session, read

from agent_profiler.model import Session
from agent_profiler.report.data import session_data
from agent_profiler.report.svg import context_chart
from agent_profiler.summary import summarise
from conftest import GOLDEN

CODEX_SHORT = CODEX / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"


def chart_of(session: Session, window: int | None = None) -> str:
    return context_chart(session_data(summarise(session), session), window).svg


# --------------------------------------------------------------------------- no gap: unchanged


def _spotter_main() -> Session:
    return next(s for s in read(SPOTTER_DIR) if s.session_id == SPOTTER_ID and not s.is_subagent)


NO_GAP = {
    "chart-handmade-40.svg.txt": lambda: long_session(40),
    "chart-codex-20-34-25.svg.txt": lambda: read(CODEX_SHORT)[0],
    "chart-claude-code-spotter.svg.txt": _spotter_main,
}


@pytest.mark.parametrize("golden", sorted(NO_GAP))
def test_a_chart_without_a_long_gap_is_drawn_as_before(
    request: pytest.FixtureRequest, golden: str
) -> None:
    """The goldens were written by the chart before gaps were collapsed: a session with no
    idle stretch long enough must keep every coordinate. Stored one tag per line (`><`
    never occurs inside a text: `<` and `>` are escaped) so a change reads as a diff."""
    session = NO_GAP[golden]()
    svg = chart_of(session, session.window_tokens)
    path: Path = GOLDEN / golden
    if request.config.getoption("--update-golden"):
        path.write_text(svg.replace("><", ">\n<") + "\n", encoding="utf-8")
    assert path.exists(), f"missing {path}: run `make golden`"
    assert svg == path.read_text(encoding="utf-8").removesuffix("\n").replace(">\n<", "><")
