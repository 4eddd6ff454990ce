"""Issue 28.5 on the corpus's Claude Code ≥ 2.1.16x sessions (planetfall 2.1.179 and
2.1.165; GPL-3.0, read from ../shared, skipped when absent): the median estimate error after
the first request, from `summary --json`, for the default chars/4 and `--estimate
calibrated`.

What holds today is pinned (hidden thinking, images and attachments, and numbered file
listings counted as code, took it from 51% / 51% (chars/4) and 40% / 34% (calibrated) to the
numbers below). The issue's targets (≤ 15% and ≤ 10%): the calibrated one is met on both, with
the shipped table and leave-one-input-out (the table fitted without the session: its model's
tokenizer family, Claude Opus 4.7 and later, has class ratios of its own, then fitted on the
other session alone). chars/4 stays a strict expected failure with the reason: the remaining
error is dense JavaScript at ≈ 2.1 characters per token (docs/estimates.md), which a flat
characters ÷ 4 (SPEC §3) cannot see. When a change meets one, its test fails and must become a
plain assertion."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.estimate import CLAUDE_47
from shared_paths import CORPUS, REPO, SHARED_REASON

sys.path.insert(0, str(REPO / "scripts"))

TRANSCRIPTS = CORPUS / "claude-code" / "transcripts"
P179 = TRANSCRIPTS / "planetfall-39648afe5b-4_v2.1.179_queued-commands.jsonl"
P165 = TRANSCRIPTS / "planetfall-68d6759acfe5-1_v2.1.165_api-errors_images.jsonl.gz"
pytestmark = pytest.mark.skipif(not P179.exists() or not P165.exists(), reason=SHARED_REASON)

# Pinned today (median after the first request): a regression guard just above each.
TODAY = {
    ("2.1.179", "chars/4"): 0.25,
    ("2.1.165", "chars/4"): 0.23,
    ("2.1.179", "calibrated"): 0.025,
    ("2.1.165", "calibrated"): 0.06,
}
TARGET = {"chars/4": 0.15, "calibrated": 0.10}
CASES = [(P179, "2.1.179"), (P165, "2.1.165")]


def _median(path: Path, estimate: str) -> float:
    result = CliRunner().invoke(app, ["summary", "--json", "--estimate", estimate, str(path)])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    assert row["estimate_error_requests"] >= 5  # the target is for sessions of ≥ 5 requests
    return float(row["estimate_error_median"])


@pytest.mark.parametrize("estimate", ["chars/4", "calibrated"])
@pytest.mark.parametrize(("path", "version"), CASES)
def test_median_error_is_held_where_it_is_today(path: Path, version: str, estimate: str) -> None:
    assert _median(path, estimate) <= TODAY[(version, estimate)]


MISSES = pytest.mark.xfail(
    strict=True,
    reason="dense code at ≈ 2.1 chars/token on claude-opus-4-8 (docs/estimates.md), which "
    "chars/4 (SPEC §3) cannot see: issue 28.5's chars/4 target is not met",
)


@pytest.mark.parametrize(
    ("path", "estimate"),
    [
        pytest.param(P179, "chars/4", marks=MISSES, id="2.1.179-chars/4"),
        pytest.param(P165, "chars/4", marks=MISSES, id="2.1.165-chars/4"),
        pytest.param(P179, "calibrated", id="2.1.179-calibrated"),
        pytest.param(P165, "calibrated", id="2.1.165-calibrated"),
    ],
)
def test_issue_28_targets(path: Path, estimate: str) -> None:
    assert _median(path, estimate) <= TARGET[estimate]


@pytest.mark.slow
@pytest.mark.parametrize(("path", "version"), CASES)
def test_issue_28_calibrated_target_leave_one_input_out(
    path: Path, version: str, corpus_points_by_input: dict[str, list[Any]]
) -> None:
    """The shipped table was fitted on both sessions; here each is measured with the table
    `scripts/calibrate.py` fits without it (as `scripts/fidelity.py` does): its tokenizer
    family's ratios then come from the other session alone."""
    import _corpus
    import calibrate

    training = [p for name, pts in corpus_points_by_input.items() if name != path.name for p in pts]
    assert corpus_points_by_input[path.name] and not any(p.input == path.name for p in training)
    table = calibrate.fit(training)
    assert CLAUDE_47 in table.ratios_by_family  # fitted on the other session
    (session,) = _corpus.read(path, table.estimator())
    errors = _corpus.errors(session)
    assert len(errors) >= 5
    assert statistics.median(errors) <= TARGET["calibrated"]
