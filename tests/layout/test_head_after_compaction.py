"""The inferred head measured again after a compaction is named for what it then holds
(review-attr finding 3): the system prompt and tool schemas, and what the harness restored
that the journal does not show (Claude Code 2.1.39's re-read files and todos: spotter's head
25,876 → 30,330 tokens; the hidden summary of a Codex 0.140 remote compaction: 3,270 → 5,263
→ 5,147). Said so by the summary (table, legend, `--json`) and the report (estimation words,
legends, tables), as by the trace's `context` change label (test_head_label); a session
without a compaction keeps the first request's wording everywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_head_label import head_labels, no_compaction
from test_report import parse, section
from typer.testing import CliRunner

from agent_profiler.attribution import INFERRED_HEAD_LABEL
from agent_profiler.cli import app
from agent_profiler.model import AnchorKind, Category, Session
from agent_profiler.report import render_report
from agent_profiler.report.data import estimation_words
from agent_profiler.summary import summarise
from agent_profiler.views import (
    HEAD_AFTER_COMPACTION_LABEL,
    HEAD_LABEL,
    head_measured_after,
    unattributed_is_head,
)
from rules_spy import sessions
from samples import DATA
from shared_paths import CORPUS, SHARED_REASON

SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
SPOTTER_ID = "258c7280-ae70-4798-800f-63464d01a85d"
AGENTV = (
    CORPUS / "codex" / "agentv-0.140-0.141" / "agentv-a60726a745-0_v0.140.0_2compactions.jsonl.gz"
)
AGENTV_ID = "019ed99c-d00d-7613-b2e7-d2f512f78afd"

# What a session without a compaction was told before, word for word.
FIRST_LEGEND = (
    "?: system prompt and tool schemas, inferred (not in the journal: reported − estimated at "
    "the first request) where a session's Unattributed is only that; for Claude Code, one "
    "/context run in the session makes it exact"
)
FIRST_WORDS = (
    "Unattributed here is the system prompt and tool schemas, inferred (not in the journal: "
    "reported − estimated at the first request), named so below; one /context run in the "
    "session makes it exact."
)
AFTER_WORDS = (
    "Unattributed here is the system prompt, tools, restored context, inferred (not in the "
    "journal: reported − estimated at the first request and again after compaction {n}, so it "
    "also holds what the harness restored then), named so below{hint}."
)


def _spotter() -> tuple[Session, Session]:
    main, sub = sessions(SPOTTER)
    assert (main.session_id, len(main.compactions), len(sub.compactions)) == (SPOTTER_ID, 1, 0)
    return main, sub


# --------------------------------------------------------------------------- which compaction


def test_the_head_is_known_to_be_measured_again_after_spotters_compaction() -> None:
    main, sub = _spotter()
    assert unattributed_is_head(main) and unattributed_is_head(sub)
    assert (head_measured_after(main), head_measured_after(sub)) == (1, None)
    sizes = [
        t for x in main.snapshots for c, t in x.categories if c is Category.UNATTRIBUTED
    ]  # the reviewer's counts
    assert (sizes[0], sizes[-1]) == (25_876, 30_330)


@pytest.mark.skipif(not AGENTV.exists(), reason=SHARED_REASON)
def test_codex_remote_compactions_name_the_last_one() -> None:
    """Its head is measured again after each of its two compactions; the second time the
    head's own change may be past the 64 changes the snapshot keeps, so the compaction is
    found from the category's size."""
    (session,) = sessions(AGENTV)
    assert session.session_id == AGENTV_ID and unattributed_is_head(session)
    assert head_measured_after(session) == 2
    assert summarise(session).head_name == HEAD_AFTER_COMPACTION_LABEL
    words = estimation_words(session)
    assert AFTER_WORDS.format(n=2, hint="") in words


def test_a_session_without_a_compaction_keeps_the_first_requests_head(tmp_path: Path) -> None:
    (session,) = sessions(no_compaction(tmp_path))
    assert not session.compactions and unattributed_is_head(session)
    assert head_measured_after(session) is None
    assert head_labels(session) == [INFERRED_HEAD_LABEL]
    assert summarise(session).head_name == HEAD_LABEL
    assert FIRST_WORDS in estimation_words(session)


# --------------------------------------------------------------------------- summary


def test_the_summary_names_it_in_the_table_the_legend_and_json() -> None:
    result = CliRunner().invoke(app, ["summary", str(SPOTTER)])
    assert result.exit_code == 0, result.output
    main, sub = [line for line in result.stdout.splitlines() if SPOTTER_ID in line]
    assert f"{HEAD_AFTER_COMPACTION_LABEL} 51%" in main and HEAD_LABEL not in main
    assert f"{HEAD_LABEL} 29%" in sub
    (legend,) = [line for line in result.stdout.splitlines() if line.startswith("?: ")]
    assert legend == (
        "?: system prompt and tool schemas, inferred (not in the journal: reported − estimated "
        "at the first request) where a session's Unattributed is only that; system prompt, "
        "tools, restored context, inferred (not in the journal: reported − estimated at the "
        "first request and again after a compaction, so it also holds what the harness "
        "restored then) where a session's head was measured again; for Claude Code, one "
        "/context run in the session makes it exact"
    )
    data = json.loads(CliRunner().invoke(app, ["summary", "--json", str(SPOTTER)]).stdout)
    assert [(r["inferred_head"], r["inferred_head_after_compaction"]) for r in data] == [
        (True, 1),
        (True, None),
    ]


def test_the_summary_of_a_session_without_a_compaction_is_worded_as_before(
    tmp_path: Path,
) -> None:
    journal = no_compaction(tmp_path)
    result = CliRunner().invoke(app, ["summary", str(journal)])
    assert result.exit_code == 0, result.output
    assert f"{HEAD_LABEL} " in result.stdout and "restored" not in result.stdout
    assert FIRST_LEGEND in result.stdout.splitlines()
    (row,) = json.loads(CliRunner().invoke(app, ["summary", "--json", str(journal)]).stdout)
    assert (row["inferred_head"], row["inferred_head_after_compaction"]) == (True, None)


# --------------------------------------------------------------------------- report


def test_the_report_names_it_in_words_legends_and_tables() -> None:
    main, sub = _spotter()
    assert AFTER_WORDS.format(n=1, hint="; one /context run in the session makes it exact") in (
        estimation_words(main)
    )
    assert FIRST_WORDS in estimation_words(sub)
    page = parse(render_report([main, sub]))
    for session, name in ((main, HEAD_AFTER_COMPACTION_LABEL), (sub, HEAD_LABEL)):
        view = section(page, session.session_id)
        assert name in [li.text() for li in view.one("ul", class_="legend").find("li")]
        header = [th.text() for th in view.one("table", class_="snapshots").find("th")]
        assert header[-1] == name
        tips = [r.one("title").text() for r in view.one("g", class_="hover").find("rect")]
        assert all(f"  {name} " in tip for tip in tips if "  System prompt" in tip)
    assert "restored" not in section(page, sub.session_id).text()
    # The Overview's legend: each name its bars give Unattributed.
    overview = page.one("section", id="overview").one("ul", class_="legend").text()
    assert f"{HEAD_LABEL}, or {HEAD_AFTER_COMPACTION_LABEL} (as each bar names it)" in overview
    last = [x for x in main.snapshots if x.anchor is AnchorKind.RESPONSE][-1]
    assert dict(last.categories)[Category.UNATTRIBUTED] == 30_330


def test_the_report_of_a_session_without_a_compaction_is_worded_as_before(
    tmp_path: Path,
) -> None:
    page = render_report(sessions(no_compaction(tmp_path)))
    assert f"<span>{HEAD_LABEL}</span>" in page and FIRST_WORDS in page
    assert HEAD_AFTER_COMPACTION_LABEL not in page and "again after compaction" not in page
