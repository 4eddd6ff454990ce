"""Golden decoded text: the whole trace of the synthetic Claude Code journal, as text.

A change of the writer shows up here as a readable diff. After an intended change run
`make golden` (pytest --update-golden) and review the diff like code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import GOLDEN

SMALL = Path(__file__).parent / "data" / "journals" / "claude-code" / "handmade" / "small.jsonl"


@pytest.mark.parametrize(("journal", "golden"), [(SMALL, "claude-code-small.txt")])
def test_golden_text(
    export_trace: Any, request: pytest.FixtureRequest, journal: Path, golden: str
) -> None:
    # GIVEN the synthetic journal WHEN exported THEN its decoded text equals the golden file
    text = export_trace(journal).view.to_text()
    path = GOLDEN / golden
    if request.config.getoption("--update-golden"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing {path}: run `make golden`"
    assert text == path.read_text(encoding="utf-8")
