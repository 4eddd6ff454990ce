"""Claude Code rules the eleventh session's mutation sample found untested
(`claude_response.py`, `claude_context.py`): hand-made edits of a real 2.1.14 journal and
of a 2.1.2 /context run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test_claude_truth import FIRST, edited
from typer.testing import CliRunner

from agent_profiler.adapters.claude_code import read_transcript
from agent_profiler.cli import app
from agent_profiler.diagnostics import Diagnostics
from rules_spy import sessions, write
from shared_paths import TESTS


def test_a_one_token_hour_long_cache_write_is_billed_as_one(tmp_path: Path) -> None:
    """Of the response's 5 cache-write tokens, 1 is written for an hour (usage.cache_creation's
    `ephemeral_1h_input_tokens`: 1): the request holds it, and the receipt bills 1 token at
    the 1-hour rate and 4 at the 5-minute one (a count of 1 was once taken for none:
    claude_response's merge_usage__mutmut_45)."""

    def one_hour(message: dict[str, Any]) -> None:
        message["usage"]["cache_creation"] = {
            "ephemeral_5m_input_tokens": 4,
            "ephemeral_1h_input_tokens": 1,
        }

    path = edited(tmp_path, one_hour)
    (session,) = sessions(path)
    response = next(r for r in session.responses if r.id == FIRST)
    assert (response.usage.cache_write_tokens, response.usage.cache_write_1h_tokens) == (5, 1)

    result = CliRunner().invoke(app, ["summary", "--json", "--cost", str(path)])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    billed = row["cost"]["billed"]
    assert billed["cache_write_1h"]["tokens"] == 1
    assert billed["cache_write_5m"]["tokens"] == 4


SIMONW = (
    TESTS
    / "data"
    / "journals"
    / "claude-code"
    / "context-command"
    / "simonw-cct-pr51_v2.1.2_44baca89.jsonl"
)


def test_an_unknown_context_layout_quotes_at_most_100_characters_of_the_screen(
    tmp_path: Path,
) -> None:
    """A 2.1.2 /context screen whose Skills row is renamed to a 300-character name: the
    run gives the one `context-command` warning, and the row it quotes is cut so that the
    reason after the layout's words is 100 characters, the last `…`
    (claude_context._conclude__mutmut_25 let 101 through)."""
    recs = [json.loads(line) for line in SIMONW.read_text(encoding="utf-8").splitlines()]
    message = recs[1]["message"]
    assert "Skills: " in message["content"]
    message["content"] = message["content"].replace("Skills: ", "S" * 300 + ": ")
    path = write(tmp_path, recs)
    diagnostics = Diagnostics()
    read_transcript(path, diagnostics)
    (warning,) = [w for w in diagnostics.warnings if w.kind == "context-command"]
    head = "/context output in an unknown screen layout: "
    assert warning.line == 2 and warning.message.startswith(head)
    quoted = warning.message.removeprefix(head)
    assert quoted.startswith("unknown category row 'SSS")
    assert len(quoted) == 100 and quoted.endswith("…")


def test_two_context_commands_left_without_output_are_two_warnings_in_line_order(
    tmp_path: Path,
) -> None:
    """A transcript that ends after two /context commands (the 2.1.2 run's command record
    twice, its output never written: the session was killed) is read, with one
    `context-command` warning per command, in line order
    (claude_context.ContextCommandTracker.finish__mutmut_19 sorted the two without a key:
    a traceback, and the transcript could not be read)."""
    command = json.loads(SIMONW.read_text(encoding="utf-8").splitlines()[0])
    again = {**command, "uuid": "d2f0c1aa-0000-4000-8000-000000000002"}
    path = write(tmp_path, [command, again])
    diagnostics = Diagnostics()
    read_transcript(path, diagnostics)
    warned = [(w.line, w.message) for w in diagnostics.warnings if w.kind == "context-command"]
    assert warned == [(1, "/context gave no output record"), (2, "/context gave no output record")]
