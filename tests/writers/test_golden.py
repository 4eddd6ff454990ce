"""Golden text: whole exports of small real journals, one per harness, and of the Chrome JSON
writer, as text: a change of what a user sees shows up here as a readable diff.

The Perfetto goldens are the decoded text of the trace (tests/traceview.py); the Chrome JSON
golden is the document as canonical pretty JSON (sorted keys, one-space indent); the HTML
report's golden is the text a reader sees (charts left out: tests/report/test_report.py has
them). After an intended change run `make golden` (pytest --update-golden) and review the
diff like code."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from conftest import DATA, GOLDEN

SMALL = DATA / "claude-code" / "handmade" / "small.jsonl"
HIDDEN = DATA / "claude-code" / "handmade" / "hidden.jsonl"
SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
CODEX = DATA / "codex" / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
PI = DATA / "pi" / "pi-mono_large-session_v1_first-25-lines.jsonl"
MUSE = DATA / "muse" / "hcn-1.4.2-R4684.1_meta_single-turn_retained-frame.session.jsonl"
GEMINI = DATA / "gemini-cli" / "magi-ui-0.4_session-2025-09-10T04-48-e7b3ecf2.json"
OPENCODE = DATA / "opencode" / "ses_2bef25635ffe8EzID0I1Oeymal.export.json"

PERFETTO_GOLDENS = [
    (SMALL, "claude-code-small.txt"),
    (HIDDEN, "claude-code-hidden.txt"),
    (CODEX, "codex-rollout-20-34-25.txt"),
    (PI, "pi-large-session-first-25-lines.txt"),
    (MUSE, "muse-hcn-single-turn.txt"),
    (GEMINI, "gemini-cli-magi-ui.txt"),
    (OPENCODE, "opencode-ses-2bef.txt"),
]
SINGLE_REQUEST = {MUSE}


def _check(request: pytest.FixtureRequest, text: str, golden: str) -> None:
    path = GOLDEN / golden
    if request.config.getoption("--update-golden"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing {path}: run `make golden`"
    assert text == path.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("journal", "golden"), PERFETTO_GOLDENS, ids=[g for _, g in PERFETTO_GOLDENS]
)
def test_golden_text(
    export_trace: Any, request: pytest.FixtureRequest, journal: Path, golden: str
) -> None:
    # GIVEN a small real journal (a hand-made one for Claude Code)
    # WHEN exported THEN its decoded text equals the golden file
    # (a single-request journal has no addition after its first snapshot to require)
    exported = export_trace(journal, require_addition=journal not in SINGLE_REQUEST)
    _check(request, exported.view.to_text(), golden)


def test_golden_chrome_json(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    # GIVEN the hand-made Claude Code journal WHEN exported as Chrome JSON
    out = tmp_path / "trace.json"
    result = CliRunner().invoke(app, ["export", str(SMALL), "-o", str(out)])
    assert result.exit_code == 0, result.output + result.stderr
    # THEN the document, as canonical pretty JSON, equals the golden file
    document = json.loads(out.read_bytes())
    text = json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    _check(request, text, "chrome-json-claude-code-small.json")


class _VisibleText(HTMLParser):
    """An HTML page as the lines a reader sees: a line per block (paragraph, heading, table
    row, list item), cells joined by ` | `, a cell's second line after a space, each link's
    target and each tooltip after its text as `[→#…]` and `[title: …]`; SVG, styles and
    scripts left out."""

    BLOCKS = frozenset(
        [
            "p",
            "h1",
            "h2",
            "h3",
            "tr",
            "li",
            "div",
            "section",
            "table",
            "ul",
            "details",
            "summary",
            "dl",
            "figure",
            "nav",
            "thead",
            "tbody",
        ]
    )
    CELLS = frozenset({"td", "th", "dt", "dd"})
    HIDDEN = frozenset({"svg", "style", "script"})

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.words: list[str] = []
        self.hidden = 0

    def _end_line(self) -> None:
        line = " ".join("".join(self.words).split())
        if line:
            self.lines.append(line)
        self.words = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.HIDDEN:
            self.hidden += 1
        if self.hidden:
            return
        if tag in self.BLOCKS:
            self._end_line()
        elif tag in self.CELLS and self.words:
            self.words.append(" | ")
        elif tag in {"small", "br"}:  # a line of its own in the page (td small: a block)
            self.words.append(" ")
        found = dict(attrs)
        if found.get("title"):
            self.words.append(f" [title: {found['title']}] ")
        if tag == "a" and found.get("href"):
            self.words.append(f" [→{found['href']}] ")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.HIDDEN:
            self.hidden -= 1
        elif not self.hidden and tag in self.BLOCKS:
            self._end_line()

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.words.append(data)


def visible_text(page: str) -> str:
    reader = _VisibleText()
    reader.feed(page)
    reader.close()
    reader._end_line()
    return "\n".join(reader.lines) + "\n"


REPORT_GOLDENS = [
    # a real Claude Code session with a subagent and a compaction
    ([SPOTTER], "report-claude-code-spotter.txt"),
    # a window the journal states (Codex), a synthetic clock (stream-json without times),
    # a session without a model (Muse's echo provider), Gemini CLI's document
    (
        [
            CODEX,
            DATA / "claude-code" / "gh-aw_sample_claude_log_new_format.txt",
            DATA / "muse" / "codeburn-1.1.1-R2514.1_echo-provider_excerpt.session.jsonl",
            GEMINI,
        ],
        "report-four-harness-cases.txt",
    ),
]


@pytest.mark.parametrize(("journals", "golden"), REPORT_GOLDENS, ids=[g for _, g in REPORT_GOLDENS])
def test_golden_report_text(
    tmp_path: Path, request: pytest.FixtureRequest, journals: list[Path], golden: str
) -> None:
    # GIVEN real journals WHEN reported as HTML
    out = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", *map(str, journals), "-o", str(out)])
    assert result.exit_code == 0, result.output + result.stderr
    # THEN what the report says (its tables, numbers, links and notes) equals the golden
    _check(request, visible_text(out.read_text(encoding="utf-8")), golden)
