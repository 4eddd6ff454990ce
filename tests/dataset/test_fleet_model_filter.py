"""`fleet --model NAME` picks a model by any of its names: `claude-opus-4-5` missed the
Claude Code sessions that record it as `claude-opus-4-5-20251101` (55 requests, $4.65 of
the corpus), though the receipt priced both as one model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from datasets import collected
from shared_paths import TESTS

pytest.importorskip("duckdb")

runner = CliRunner()
DATA = TESTS / "data" / "journals"
JOURNALS = (
    DATA / "pi" / "pi-mono_before-compaction_v1.jsonl.gz",  # claude-opus-4-5
    DATA / "claude-code" / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl",  # -20251101
    DATA / "codex" / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz",
)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return collected(tmp_path_factory.mktemp("model"), *JOURNALS) / "ds"


def _sessions(dataset: Path, model: str) -> dict[str, Any]:
    result = runner.invoke(app, ["fleet", str(dataset), "--json", "--no-cost", "--model", model])
    assert result.exit_code == 0, result.output
    sessions: dict[str, Any] = orjson.loads(result.stdout)["sessions"]
    return sessions


@pytest.mark.parametrize(
    "name",
    [
        "claude-opus-4-5",
        "claude-opus-4-5-20251101",
        "claude-opus-4.5",
        "anthropic/claude-opus-4-5",
        "Claude-Opus-4-5",
        "claude-opus-4-5@20251101",
    ],
)
def test_a_model_is_picked_by_any_of_its_names(dataset: Path, name: str) -> None:
    sessions = _sessions(dataset, name)
    assert sessions["by_model"] == {"claude-opus-4-5": 1, "claude-opus-4-5-20251101": 1}


@pytest.mark.parametrize("name", ["claude-opus-4", "claude-opus-4-5-2025", "opus-4-5", "gpt-5"])
def test_another_model_is_not_picked(dataset: Path, name: str) -> None:
    assert _sessions(dataset, name)["count"] == 0


def test_the_filter_is_said_as_given(dataset: Path) -> None:
    result = runner.invoke(app, ["fleet", str(dataset), "--no-cost", "--model", "claude-opus-4.5"])
    assert result.stdout.startswith("fleet ds (--model claude-opus-4.5): 2 sessions ")
