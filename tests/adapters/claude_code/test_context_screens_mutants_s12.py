"""`/context` screen rules the twelfth session's mutation sample found untested
(`claude_context_screens.py`): the 2.1.2 run's real screen (tests/data/journals), edited
where it has no example (each docstring says how)."""

from __future__ import annotations

import json
from pathlib import Path

from test_context_command import SIMONW

from agent_profiler.adapters.claude_code import read_transcript
from agent_profiler.adapters.claude_context_screens import parse_screen
from agent_profiler.diagnostics import Diagnostics
from rules_spy import write

TITLE = " \x1b[1mContext Usage"  # how the last frame of the 2.1.2 screen begins


def _records() -> list[dict[str, object]]:
    return [json.loads(line) for line in SIMONW.read_text(encoding="utf-8").splitlines()]


def _screen(records: list[dict[str, object]]) -> str:
    """Line 2's screen, its `<local-command-stdout>` tags removed."""
    message = records[1]["message"]
    assert isinstance(message, dict)
    text = str(message["content"])
    return text.removeprefix("<local-command-stdout>").removesuffix("</local-command-stdout>")


def test_blank_rows_above_the_title_are_passed_over() -> None:
    """The 2.1.2 screen with two blank rows printed above its title, inside its last frame,
    reads as the same snapshot (claude_context_screens.parse_screen__mutmut_10 went back to
    the second row at each blank one, and never left the first two)."""
    screen = _screen(_records())
    assert screen.count(TITLE) == 1
    assert parse_screen(screen.replace(TITLE, "\n\n" + TITLE)) == parse_screen(screen)


def test_a_screen_with_a_line_before_its_title_is_refused_in_words(tmp_path: Path) -> None:
    """A line printed above the title inside the last frame (a layout not known): the run
    gives no snapshot, and its `context-command` warning says why, in the words the user
    reads (claude_context_screens.parse_screen__mutmut_18 wrote them in capitals)."""
    records = _records()
    message = records[1]["message"]
    assert isinstance(message, dict)
    message["content"] = str(message["content"]).replace(TITLE, "Compacting…\n" + TITLE)
    diagnostics = Diagnostics()
    read_transcript(write(tmp_path, records), diagnostics)
    (warning,) = [w for w in diagnostics.warnings if w.kind == "context-command"]
    assert (warning.line, warning.message) == (
        2,
        "/context output in an unknown screen layout: the screen does not start with its title",
    )
