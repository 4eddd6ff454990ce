"""`summary`'s table and per-call lines (`summary_text.py`): what the twelfth session's
mutation sample found no test reading. The 2.1.14 compaction transcript of tests/data, and a
small hand-made one where no journal there serves two models."""

from __future__ import annotations

from pathlib import Path

from test_claude_code import DATA
from test_summary import U, _assistant, runner, summary_json, transcript

from agent_profiler.cli import app

COMPACTED = DATA / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"


def _table(path: Path, *args: str) -> str:
    result = runner.invoke(app, ["summary", *args, str(path)])
    assert result.exit_code == 0, result.output + result.stderr
    return result.stdout


def _cells(table: str) -> dict[str, str]:
    """The table's one session row, by column heading."""
    head, _, row, *_ = table.splitlines()
    names = [cell.strip() for cell in head.strip("|").split("|")]
    return dict(zip(names, (cell.strip() for cell in row.strip("|").split("|")), strict=True))


def test_the_tables_prompt_columns_are_the_sessions_first_peak_and_final() -> None:
    """The 2.1.14 transcript's first, peak and final prompts differ (142,454, 153,738 and
    79,149 tokens: it compacted); each column shows its own
    (summary_text.render_table__mutmut_28 drew the final one as `-`)."""
    (row,) = summary_json(COMPACTED)
    cells = _cells(_table(COMPACTED))
    assert (cells["first"], cells["peak"], cells["final"]) == ("142,454", "153,738", "79,149")
    assert cells["final"] == f"{row['final_prompt_tokens']:,}"


def test_a_compactions_size_after_from_the_next_request_says_so() -> None:
    """The 2.1.14 transcript's compaction records no size after it: the first request after
    it gives one, and the per-call line says where it came from
    (summary_text.render_calls__mutmut_37 changed those words)."""
    (row,) = summary_json(COMPACTED, args=("--calls",))
    (event,) = row["compaction_events"]
    assert event["post_tokens_source"] == "next-request"
    lines = [x for x in _table(COMPACTED, "--calls").splitlines() if x.startswith("compaction")]
    assert lines == [
        "compaction after call 9: compaction, trigger manual, 153,739 → 49,386 tokens "
        "(after: first request after it)"
    ]


def test_a_session_of_two_models_lists_them_in_order_with_their_requests(
    tmp_path: Path,
) -> None:
    """Two requests of `claude-a`, then one of `claude-b` (hand-made: no transcript of
    tests/data changes model): one line names both in order, each with its requests, one
    `request` and two `requests` (summary_text.render_table__mutmut_138 joined them with
    `XX, XX`, __mutmut_141 said `request` of every count, __mutmut_146 `requests` of 1 and
    `request` of 2)."""
    records = [_assistant(f"m{i}", U, [{"type": "text", "text": "ok"}], f"0{i}") for i in (1, 2, 3)]
    for record, model in zip(records, ("claude-a", "claude-a", "claude-b"), strict=True):
        record["message"]["model"] = model
    path = transcript(tmp_path / "two-models.jsonl", records)
    said = [x for x in _table(path).splitlines() if ": models in order: " in x]
    assert said == ["s-1: models in order: claude-a 2 requests, claude-b 1 request"]
