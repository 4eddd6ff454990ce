"""The inferred head is named for what it is (issue 29): in the summary and the report it is
"System prompt and tool schemas, inferred" ("System prompt, tools, restored context,
inferred" once measured again after a compaction: test_head_after_compaction), with the
hint that one /context run makes it exact (Claude Code); the trace's counter keeps the
contract's `Context: Unattributed`. A Codex rollout whose Unattributed also holds other
items keeps the plain name."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.views import HEAD_AFTER_COMPACTION_LABEL, HEAD_LABEL, unattributed_is_head
from rules_spy import sessions
from samples import DATA

SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
CODEX = next((DATA / "codex").glob("rollout-2026-02-23T20-34-25-*.jsonl"))


def test_summary_names_the_head_and_says_how_to_make_it_exact() -> None:
    result = CliRunner().invoke(app, ["summary", str(SPOTTER)])
    assert result.exit_code == 0, result.output
    rows = [line for line in result.stdout.splitlines() if "258c7280" in line]
    # The subagent's head is the first request's; the parent's was measured again after its
    # compaction, so it holds what Claude Code restored too (review-attr finding 3).
    assert len(rows) == 2
    assert f"{HEAD_AFTER_COMPACTION_LABEL} " in rows[0] and f"{HEAD_LABEL} " in rows[1]
    assert "Unattributed 51%" not in result.stdout
    assert "one /context run in the session makes it exact" in result.stdout
    data = json.loads(CliRunner().invoke(app, ["summary", "--json", str(SPOTTER)]).stdout)
    assert [row["inferred_head"] for row in data] == [True, True]
    assert [row["inferred_head_after_compaction"] for row in data] == [1, None]


def test_only_an_unattributed_that_is_the_head_is_renamed() -> None:
    (codex,) = sessions(CODEX)
    assert not unattributed_is_head(codex)  # developer-role items are Unattributed too
    result = CliRunner().invoke(app, ["summary", str(CODEX)])
    # The category keeps its own name (52% of this session's end composition since its
    # encrypted reasoning is sized from reasoning_output_tokens).
    assert "Unattributed 58%" in result.stdout and HEAD_LABEL not in result.stdout


def test_the_trace_keeps_the_contract_label(export_trace: Any) -> None:
    view = export_trace(SPOTTER).view
    names = {t.name for t in view.tracks.values()}
    assert "Context: Unattributed" in names
    assert not any(HEAD_LABEL in n for n in names)
