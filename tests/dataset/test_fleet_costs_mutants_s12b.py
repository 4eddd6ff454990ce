"""The fleet's cost (`fleet/costs.py`): what the twelfth session's second mutation sample
found no test reading. A small hand-made Claude Code transcript (no journal of tests/data
has a response without a model, or a session without a folder, among priced requests), and
the split's `others` line on its own (a fleet of more than `TOP` projects is too many
journals to make for it)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.fleet import TOP
from agent_profiler.fleet.costs import _by
from datasets import collected

pytest.importorskip("duckdb")
pytest.importorskip("genai_prices")

runner = CliRunner()
USAGE = {"input_tokens": 1, "cache_read_input_tokens": 100, "output_tokens": 1}


def _response(mid: str, second: int, model: str | None) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": mid,
        "usage": USAGE,
        "content": [{"type": "text", "text": "ok"}],
    }
    if model is not None:
        message["model"] = model
    return {
        "type": "assistant",
        "sessionId": "s-1",
        "uuid": f"{mid}-u",
        "timestamp": f"2026-01-01T10:00:{second:02}Z",
        "message": message,
    }


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A transcript without a cwd (so no project) of two responses: one of a priced model,
    one whose message names no model."""
    path = tmp_path_factory.mktemp("made") / "s-1.jsonl"
    records = [_response("m1", 1, "claude-opus-4-5"), _response("m2", 2, None)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture(scope="module")
def cost(tmp_path_factory: pytest.TempPathFactory, made: Path) -> dict[str, Any]:
    root = collected(tmp_path_factory.mktemp("costs"), made)
    result = runner.invoke(app, ["fleet", str(root / "ds"), "--json"])
    assert result.exit_code == 0, result.output
    figures: dict[str, Any] = orjson.loads(result.stdout)["cost"]
    return figures


def test_a_response_without_a_model_is_unpriced_as_no_model(cost: dict[str, Any]) -> None:
    """A response whose journal names no model has no price, and is named as summary
    --cost names it, `(no model)` (fleet.costs.cost_figures__mutmut_108 named it None,
    __mutmut_111 `(NO MODEL)`)."""
    assert cost["unpriced_models"] == [{"model": "(no model)", "requests": 1}]
    assert cost["complete"] is False and cost["requests_priced"] == 1


def test_a_session_without_a_folder_is_billed_to_no_project(cost: dict[str, Any]) -> None:
    """The bill by project names a session whose journal gives no folder `(no project)`
    (fleet.costs.cost_figures__mutmut_191 wrote it in capitals)."""
    (row,) = cost["by"]["project"]
    assert row["name"] == "(no project)" and row["requests"] == 1 and row["share"] == 1.0
    assert row["usd"] == cost["billed"]["total_usd"] > 0


def test_the_streaming_outputs_said_are_the_priced_requests(
    cost: dict[str, Any], made: Path
) -> None:
    """Both responses carry a streaming output count (Claude Code's transcripts do), one of
    a priced model: the output line is the priced request's, so one of its outputs is a
    lower bound, as summary --cost says of the same transcript. The fleet counted every
    request of the dataset, priced or not ("for 2 requests"), and would call a bill whose
    only streaming count is unpriced a lower bound."""
    summary = runner.invoke(app, ["summary", "--cost", "--json", str(made)])
    assert summary.exit_code == 0, summary.output
    (row,) = orjson.loads(summary.stdout)
    assert row["cost"]["streaming_outputs"] == 1 and row["cost"]["output_lower_bound"]
    assert (cost["streaming_outputs"], cost["output_lower_bound"]) == (1, True)


def test_the_split_past_the_largest_is_one_line_of_the_others() -> None:
    """`TOP` + 3 projects: the `TOP` largest by USD, then one line of the three smallest,
    with their requests and their USD summed (fleet.costs._by__mutmut_21 summed no
    requests, a TypeError; __mutmut_24 took a third item of a pair, an IndexError)."""
    tallies = {f"p{i:02}": [i, Decimal(i)] for i in range(1, TOP + 4)}
    rows = _by(tallies)
    assert [row["name"] for row in rows] == [
        *(f"p{i:02}" for i in range(TOP + 3, 3, -1)),
        "3 others",
    ]
    total = sum(range(1, TOP + 4))
    assert rows[-1] == {"name": "3 others", "requests": 6, "usd": 6.0, "share": 6 / total}
    assert sum(row["requests"] for row in rows) == total


def test_the_bill_by_model_names_a_price_variant(tmp_path: Path) -> None:
    """Two responses of claude-opus-4-8, the first in fast mode (`usage.speed`, as the
    corpus's 2.1.179 session writes it; hand-made, as no journal of tests/data has one):
    the bill by model has a row of each, the fast one named with its variant and costing
    twice the other, as the receipt's `priced as` names it (fleet.costs
    .cost_figures__mutmut_183, drawn after the fix above, named both rows alike)."""
    records = [_response("m1", 1, "claude-opus-4-8"), _response("m2", 2, "claude-opus-4-8")]
    records[0]["message"]["usage"] = {**USAGE, "speed": "fast"}
    made = tmp_path / "fast.jsonl"
    made.write_text("".join(json.dumps(r) + "\n" for r in records))
    root = collected(tmp_path, made)
    result = runner.invoke(app, ["fleet", str(root / "ds"), "--json"])
    assert result.exit_code == 0, result.output
    cost = orjson.loads(result.stdout)["cost"]
    rows = {row["name"]: row for row in cost["by"]["model"]}
    fast, plain = "anthropic/claude-opus-4-8 (speed=fast)", "anthropic/claude-opus-4-8"
    assert rows.keys() == {fast, plain} and rows[fast]["requests"] == rows[plain]["requests"] == 1
    assert rows[fast]["usd"] == pytest.approx(2 * rows[plain]["usd"])
    assert cost["models"]["claude-opus-4-8 (speed=fast)"] == fast
