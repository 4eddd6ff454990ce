"""Nothing readable is lost, and the export says so: every non-blank line of every
bundled journal (all harnesses) is used, skipped with a reason, or warned about."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load

DATA = Path(__file__).resolve().parents[1] / "data" / "journals"
JOURNALS = sorted(
    p
    for p in DATA.rglob("*")
    if p.is_file() and (p.name.endswith((".jsonl", ".jsonl.gz")) or p.suffix == ".txt")
)
UNPARSED = ("not-json", "truncated-last-line")


@pytest.mark.parametrize("journal", JOURNALS, ids=lambda p: p.name[:50])
def test_every_line_is_used_skipped_or_warned(journal: Path) -> None:
    diagnostics = Diagnostics()
    result = load([journal], diagnostics)
    if result.failures:
        pytest.skip(f"not a journal on its own: {result.failures[0]}")
    unparsed = sum(diagnostics.warning_counts[k] for k in UNPARSED)
    assert diagnostics.lines_read == (
        diagnostics.records_used
        + diagnostics.skipped_total
        + diagnostics.unrecognised_total
        + unparsed
        + diagnostics.records_rejected
    )
    assert diagnostics.records_used > 0 or not result.sessions


def test_the_closing_line_and_the_trace_state_the_accounting(export_trace: Any) -> None:
    journal = DATA / "claude-code" / "gh-aw_sample_claude_log_new_format.txt"
    exported = export_trace(journal)
    line = next(x for x in exported.stdout.splitlines() if x.startswith("wrote"))
    assert "14 lines read, 6 records used, 0 skipped, 8 warnings" in line
    profile = next(s for s in exported.view.slices if s.name == "profile (1)")
    accounting = profile.args["accounting"]
    assert (accounting["lines_read"], accounting["records_used"]) == (14, 6)
    assert accounting["warnings"] == {"not-json": 8}
