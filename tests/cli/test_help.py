"""`--help` reads cleanly: every command's help renders, flags carry no `<bool>`, and text
wraps only where the line is full (no docstring line break kept mid-sentence, as
`growth,⏎ fill` once was)."""

from __future__ import annotations

import itertools
import re

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from agent_profiler.cli import app

WIDTH = 80
ROW = re.compile(r"-|\S+ {2,}\S")  # an option, or a name column then its help
COMMANDS = sorted(get_command(app).commands)  # type: ignore[attr-defined]


def render(*args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], terminal_width=WIDTH)
    assert result.exit_code == 0, result.output
    return result.output


def early_breaks(text: str, width: int) -> list[str]:
    """Lines broken before they were full: a continuation line (indented to where the
    previous line's text starts, and not a new row of a table) whose first word would have
    fitted on that line."""
    found = []
    lines = text.splitlines()
    for line, after in itertools.pairwise(lines):
        if not line.strip() or not after.strip() or ROW.match(after.lstrip()):
            continue
        indent = len(after) - len(after.lstrip())
        columns = {len(line) - len(line.lstrip())}
        columns |= {m.end() for m in re.finditer(r"\S {2,}(?=\S)", line)}
        if indent == 0 or indent not in columns:
            continue
        if len(line) + 1 + len(after.split()[0]) <= width:
            found.append(f"{line!r} ⏎ {after.strip()!r}")
    return found


def test_every_command_is_listed_with_a_whole_sentence() -> None:
    top = render()
    assert COMMANDS == ["collect", "discover", "export", "fleet", "open", "report", "summary"]
    for command in COMMANDS:
        (row,) = [line for line in top.splitlines() if line.strip().startswith(command + " ")]
        assert row.rstrip().endswith(".") and "..." not in row, row


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_reads_cleanly(command: str) -> None:
    text = render(*([command] if command else []))
    assert "<bool>" not in text
    # an option's value is named for what it is (FILE, DIR, N, TOKENS), not by its type
    options = [line for line in text.splitlines() if line.lstrip().startswith("-")]
    typed = {"<path>", "<integer>", "<text>", "<str>", "<float>"}
    assert [line for line in options if typed & set(line.split())] == []
    assert early_breaks(text, WIDTH) == []
    # the docstring's own paragraphs survive as paragraphs, rewrapped
    assert "\n\n" in text


def test_the_checker_sees_a_kept_line_break() -> None:
    kept = (
        "  Compare sessions side by side: calls, first/peak/final prompt size, growth,\n"
        "  fill, compactions.\n"
    )
    assert early_breaks(kept, WIDTH) == []  # 'fill,' would not fit: a real wrap
    broken = "  Compare sessions side by side: calls,\n  fill, compactions.\n"
    assert early_breaks(broken, WIDTH) == [
        "'  Compare sessions side by side: calls,' ⏎ 'fill, compactions.'"
    ]
    option = "  --window TOKENS    Context window in tokens, for the\n" + " " * 21 + "fill.\n"
    assert len(early_breaks(option, WIDTH)) == 1


def test_collect_does_not_offer_stdin_it_refuses() -> None:
    """collect's help said `- for stdin`; `collect -` says it reads no pipe."""
    assert "stdin" not in render("collect")
    refused = CliRunner().invoke(app, ["collect", "-", "--to", "ds"], input="{}\n")
    assert refused.exit_code == 2 and "not a pipe (-)" in refused.stderr
    assert "- for stdin" in render("export")  # the commands that read one say so
