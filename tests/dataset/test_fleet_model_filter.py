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
from samples import pi_fork_source
from shared_paths import TESTS

pytest.importorskip("duckdb")

runner = CliRunner()
DATA = TESTS / "data" / "journals"
JOURNALS = (
    pi_fork_source(),  # claude-opus-4-5 (the corpus fork's source: the fork made no request)
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


def _same(a: str, b: str) -> bool:
    import duckdb

    from agent_profiler.fleet import _MODEL_NAME

    sql = f"SELECT {_MODEL_NAME.format('?')} = {_MODEL_NAME.format('?')}"
    connection = duckdb.connect()
    try:
        row = connection.execute(sql, [a, b]).fetchone()
    finally:
        connection.close()
    assert row is not None
    return bool(row[0])


@pytest.mark.parametrize(
    ("given", "recorded"),
    [
        ("claude-haiku-4-5", "converse/jp.anthropic.claude-haiku-4-5-20251001-v1:0"),
        ("claude-sonnet-4-5", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ("claude-sonnet-4-5", "anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ("gpt-4o", "gpt-4o-2024-08-06"),
        ("gpt-5.5", "openai/gpt-5.5"),
    ],
)
def test_one_models_names(given: str, recorded: str) -> None:
    assert _same(given, recorded)


@pytest.mark.parametrize(
    ("given", "recorded"),
    [
        ("deepseek-v3", "deepseek-v2"),  # a version in the name is the model's own
        ("deepseek-v3", "deepseek"),
        ("llama-v2", "llama"),
        ("claude-opus-4-6", "claude-opus-4-5"),
        ("gpt-4o", "gpt-4o-mini"),
        ("claude-opus-4", "claude-opus-4-5"),
    ],
)
def test_other_models_stay_apart(given: str, recorded: str) -> None:
    assert not _same(given, recorded)
