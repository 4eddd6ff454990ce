"""The closing lines of `export` and `report` (and the report's and fleet's headings) count
things in words that agree with the count — "0 subagents", "1 subagent", "2 subagents" —
and say what was read in the units read: a whole JSON document (Gemini CLI, an OpenCode
export) is one document, rows of a database are rows, neither is "1 line"."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.console import counted, sessions_line
from shared_paths import CORPUS, SHARED_REASON, TESTS

JOURNALS = TESTS / "data" / "journals"
SMALL = JOURNALS / "claude-code" / "handmade" / "small.jsonl"
SPOTTER = JOURNALS / "claude-code" / "spotter-2.1.39-subagents-compaction"
GEMINI_DOC = JOURNALS / "gemini-cli" / "magi-ui-0.4_session-2025-09-10T04-48-e7b3ecf2.json"
GEMINI = JOURNALS / "gemini-cli"
OPENCODE_DB = CORPUS / "opencode" / "monkeycode-v1.16.0-sqlite" / "opencode.db"
runner = CliRunner()


def _wrote(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code in (0, 1), result.output
    return next(x for x in result.output.splitlines() if x.startswith("wrote"))


def test_counted_words_agree_with_their_count() -> None:
    assert [counted(n, "subagent") for n in (0, 1, 2)] == [
        "0 subagents",
        "1 subagent",
        "2 subagents",
    ]
    assert counted(1_000, "process", "processes") == "1,000 processes"
    assert sessions_line(1, 0) == "1 session (0 subagents)"


@pytest.mark.parametrize(
    ("journal", "said"),
    [
        (SMALL, "1 session (0 subagents)"),
        (SPOTTER, "2 sessions (1 subagent)"),
        (GEMINI, "7 sessions (2 subagents)"),
    ],
    ids=["none", "one", "two"],
)
def test_export_and_report_count_sessions_and_subagents_in_agreeing_words(
    journal: Path, said: str, tmp_path: Path
) -> None:
    exported = _wrote(["export", str(journal), "-o", str(tmp_path / "t.pftrace")])
    reported = _wrote(["report", str(journal), "-o", str(tmp_path / "r.html")])
    for line in (exported, reported):
        assert f": {said}" in line
        assert "(s)" not in line and "subagent)" not in line.replace("1 subagent)", "")
    page = (tmp_path / "r.html").read_text()
    assert f'<p class="muted">{said} from ' in page


def test_a_whole_json_document_is_not_called_a_line(tmp_path: Path) -> None:
    # GIVEN a Gemini CLI session document (one JSON file of many messages)
    line = _wrote(["export", str(GEMINI_DOC), "-o", str(tmp_path / "t.pftrace")])
    # THEN the closing line says one document was read, and how many records it held
    assert ", 1 JSON document read, " in line and "line" not in line.split(": ", 1)[1]
    assert " records used, " in line


@pytest.mark.skipif(not OPENCODE_DB.is_file(), reason=SHARED_REASON)
def test_database_rows_are_counted_as_rows(tmp_path: Path) -> None:
    # GIVEN the corpus's real OpenCode database (opened read-only by the adapter)
    line = _wrote(["export", str(OPENCODE_DB), "-o", str(tmp_path / "t.pftrace")])
    # THEN its rows are rows, each one a record used or accounted for
    assert " database rows read, " in line and "line" not in line.split(": ", 1)[1]
    rows = int(line.split(" database rows read")[0].rsplit(" ", 1)[1].replace(",", ""))
    used = int(line.split(" records used")[0].rsplit(" ", 1)[1].replace(",", ""))
    assert rows >= used > 0
