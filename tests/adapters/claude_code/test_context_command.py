"""`/context` runs read back from Claude Code transcripts (agent_profiler.adapters.claude_context).

The expected numbers below were read off each corpus file by eye (a dump of its records with
the escape codes shown), not produced by the module: every value names the record line and the
row it comes from. The 21 sessions live in the shared corpus beside the repository; four of them
are copied into tests/data (see its SOURCES.md) so that the main cases always run.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import shared_paths
from agent_profiler.adapters.claude_context import (
    ContextCommandFailure,
    ContextCommandTracker,
    ContextParseError,
    ContextRunResult,
    NativeSnapshot,
    parse_context_output,
    parse_tokens,
)
from agent_profiler.adapters.claude_context_screens import parse_markdown, parse_screen
from agent_profiler.model import Category
from shared_paths import TESTS

HERE = TESTS
COPIES = HERE / "data" / "journals" / "claude-code" / "context-command"
CORPUS = shared_paths.CORPUS / "claude-code" / "context-command"

S, T, R, K, M = (
    Category.SYSTEM,
    Category.TOOLS,
    Category.RULES,
    Category.SKILLS,
    Category.MESSAGES,
)
ESC = "\x1b"


@dataclass(frozen=True)
class Snap:
    line: int  # the output record
    timestamp: str
    model: str
    used: int
    window: int
    effective: int | None
    categories: dict[Category, int]
    items: dict[str, int] = field(default_factory=dict)  # id prefix → number of items
    grammar: str = "screen"
    text_line: int | None = None  # the meta markdown record, when there is one
    deferred: int = 0


@dataclass(frozen=True)
class Fail:
    line: int
    reason_contains: str


EXPECTED: dict[str, tuple[Snap | Fail, ...]] = {
    # 1.0.120, line 2: `claude-sonnet-4-20250514[1m] • 430k/1000k tokens (43%)`; System prompt
    # 3.2k, System tools 11.6k + MCP tools 12.1k + Custom agents 243, Memory files 6.0k,
    # Messages 396.9k; no buffer row. 25 MCP tools, 1 agent; of the 3 memory files the two
    # wrapped `Project (…` lines are skipped.
    "obra-episodic-memory_v1.0.120_0fae0449.jsonl": (
        Snap(
            2,
            "2025-09-20T04:35:17.816Z",
            "claude-sonnet-4-20250514",
            430_000,
            1_000_000,
            None,
            {S: 3_200, T: 11_600 + 12_100 + 243, R: 6_000, M: 396_900},
            {"mcp": 25, "agent": 1, "rule": 1},
        ),
    ),
    # 2.0.55, line 2: `92k/200k` includes `Autocompact buffer: 45.0k` → 47k used.
    # System prompt 3.1k, System tools 20.0k + Custom agents 2.0k, Memory files 929,
    # Messages 20.6k. 27 plugin agents, 2 memory files; SlashCommand Tool is no item.
    "crsmithdev-dotfiles_v2.0.55_1786f353.jsonl": (
        Snap(
            2,
            "2025-12-02T00:59:17.222Z",
            "claude-opus-4-5-20251101",
            92_000 - 45_000,
            200_000,
            155_000,
            {S: 3_100, T: 20_000 + 2_000, R: 929, M: 20_600},
            {"agent": 27, "rule": 2},
        ),
    ),
    # 2.0.57: line 2 is `<local-command-stderr>Error: 400 …`; line 4: `201k/200k (100%)`
    # including a 77.0k buffer → 124k, no Free space row. System prompt 2.9k, System tools
    # 16.3k + MCP tools 23.5k + Custom agents 380, Memory files 1.7k, Messages 78.8k.
    "smartagent-so-pai_v2.0.57_703e4528_stderr-then-stdout.jsonl": (
        Fail(2, "/context failed (590 characters of error output, not shown)"),
        Snap(
            4,
            "2025-12-03T11:42:31.546Z",
            "claude-opus-4-5-20251101",
            201_000 - 77_000,
            200_000,
            123_000,
            {S: 2_900, T: 16_300 + 23_500 + 380, R: 1_700, M: 78_800},
            {"mcp": 26, "agent": 7, "rule": 1},
        ),
    ),
    # 2.0.60, line 2: `66k/200k` with a 45.0k buffer → 21k. System prompt 3.2k, System tools
    # 15.4k + MCP tools 560 + Custom agents 121, Memory files 1.8k, Messages 8.
    "aroldzmitry-claude-config_v2.0.60_7cf0ccec.jsonl": (
        Snap(
            2,
            "2025-12-06T00:37:17.356Z",
            "claude-opus-4-5-20251101",
            66_000 - 45_000,
            200_000,
            155_000,
            {S: 3_200, T: 15_400 + 560 + 121, R: 1_800, M: 8},
            {"mcp": 1, "agent": 4, "rule": 1},
        ),
    ),
    # 2.0.76, line 2: `60k/200k`, no buffer, no Memory files or Skills row: the skills
    # section's items are not in the prompt. System prompt 3.1k, System tools 20.1k + MCP
    # tools 1.3k, Messages 35.3k.
    "aistrad-work_v2.0.76_6cf1b78b_no-autocompact.jsonl": (
        Snap(
            2,
            "2026-01-05T14:52:51.204Z",
            "claude-opus-4-5-20251101",
            60_000,
            200_000,
            None,
            {S: 3_100, T: 20_100 + 1_300, M: 35_300},
            {"mcp": 2},
        ),
    ),
    # 2.1.1, line 2: `145k/200k`, `Compact buffer: 3.0k`. System prompt 4.1k, System tools
    # 18.8k, Skills 3.1k, Messages 119.3k. 45 skill lines, 29 distinct names.
    "aistrad-work_v2.1.1_9f516e18_compact-buffer.jsonl": (
        Snap(
            2,
            "2026-01-08T09:21:30.049Z",
            "claude-opus-4-5-20251101",
            145_000,
            200_000,
            197_000,
            {S: 4_100, T: 18_800, K: 3_100, M: 119_300},
            {"skill": 29},
        ),
    ),
    # 2.1.2, line 2: `24k/200k`, buffer 45.0k not included. System prompt 2.9k, System tools
    # 15.6k + MCP tools 4.7k, Memory files 303, Skills 270, Messages 8.
    "simonw-cct-pr51_v2.1.2_44baca89.jsonl": (
        Snap(
            2,
            "2026-01-09T16:16:29.768Z",
            "claude-opus-4-5-20251101",
            24_000,
            200_000,
            155_000,
            {S: 2_900, T: 15_600 + 4_700, R: 303, K: 270, M: 8},
            {"mcp": 26, "rule": 1, "skill": 5},
        ),
    ),
    # 2.1.4 markdown in a user record, line 2: `**Tokens:** 21.8k / 200.0k (11%)`; System prompt
    # 3.4k, System tools 16.0k + MCP tools 1.3k + Custom agents 173, Memory files 477,
    # Skills 78, Messages 390, Autocompact buffer 45.0k.
    "aueidog-claude_v2.1.4_2b2a4297_markdown-in-user-record.jsonl": (
        Snap(
            2,
            "2026-01-18T01:35:14.612Z",
            "claude-sonnet-4-5-20250929",
            21_800,
            200_000,
            155_000,
            {S: 3_400, T: 16_000 + 1_300 + 173, R: 477, K: 78, M: 390},
            {"mcp": 5, "agent": 3, "rule": 1, "skill": 2},
            grammar="markdown",
        ),
    ),
    # 2.1.19, line 2 (printed twice, both copies equal): `142k/200k`, Compact buffer 3.0k.
    # System prompt 4.2k, System tools 19.1k + MCP tools 4.7k + Custom agents 514, Memory
    # files 3.4k, Skills 1.7k, Messages 101.3k. Skills: 39 lines, 37 distinct names.
    "aistrad-work_v2.1.19_1ea88c37.jsonl": (
        Snap(
            2,
            "2026-01-26T02:19:24.318Z",
            "claude-opus-4-5-20251101",
            142_000,
            200_000,
            197_000,
            {S: 4_200, T: 19_100 + 4_700 + 514, R: 3_400, K: 1_700, M: 101_300},
            {"mcp": 26, "agent": 9, "rule": 9, "skill": 37},
        ),
    ),
    # 2.1.23 without escapes, line 2: `38k/200k`, buffer 33.0k. System prompt 3.6k, System
    # tools 16.8k + MCP tools 13.8k + Custom agents 752, Memory files 2.0k, Skills 1.1k,
    # Messages 8.
    "jason-liu-0219-my-claude_v2.1.23_ac315b9f_no-ansi.jsonl": (
        Snap(
            2,
            "2026-01-29T14:59:32.968Z",
            "claude-opus-4-5-20251101",
            38_000,
            200_000,
            167_000,
            {S: 3_600, T: 16_800 + 13_800 + 752, R: 2_000, K: 1_100, M: 8},
            {"mcp": 48, "agent": 12, "rule": 2, "skill": 31},
        ),
    ),
    # 2.1.27, line 2: `41k/200k`, buffer 33.0k. System prompt 3.5k, System tools 15.8k + MCP
    # tools 13.5k + Custom agents 752, Memory files 2.0k, Skills 2.1k, Messages 3.8k.
    "jason-liu-0219-my-claude_v2.1.27_cbd3578f.jsonl": (
        Snap(
            2,
            "2026-01-31T19:11:30.350Z",
            "claude-opus-4-5-20251101",
            41_000,
            200_000,
            167_000,
            {S: 3_500, T: 15_800 + 13_500 + 752, R: 2_000, K: 2_100, M: 3_800},
            {"mcp": 46, "agent": 12, "rule": 2, "skill": 48},
        ),
    ),
    # 2.1.34, line 2: `85k/200k`, `33k` buffer (no `.0`). System prompt 3.7k, System tools
    # 16.7k, Memory files 1.1k, Skills 61, Messages 64k; the Skills section is empty.
    "mikeswain-claude_v2.1.34_9ec1038b.jsonl": (
        Snap(
            2,
            "2026-02-06T20:35:01.471Z",
            "claude-opus-4-6",
            85_000,
            200_000,
            167_000,
            {S: 3_700, T: 16_700, R: 1_100, K: 61, M: 64_000},
            {"rule": 1},
        ),
    ),
    # 2.1.69, line 2: `11k/200k`, no System/MCP tools rows; MCP tools listed on demand without
    # counts. System prompt 3.5k, Custom agents 1.7k, Memory files 859, Skills 3.5k,
    # Messages 1.8k. Skills: 36 User + 41 Plugin.
    "huzhongyin-ai-dofiles_v2.1.69_72958a8a_256color.jsonl": (
        Snap(
            2,
            "2026-04-24T02:35:36.725Z",
            "claude-opus-4.6",
            11_000,
            200_000,
            167_000,
            {S: 3_500, T: 1_700, R: 859, K: 3_500, M: 1_800},
            {"agent": 11, "rule": 1, "skill": 77},
        ),
    ),
    # 2.1.81 VS Code markdown, line 2: header 143.2k while the rows are System prompt 12,
    # Custom agents 20, Memory files 1, Skills 3.4k, Messages 1 (kept as printed). MCP tools
    # are listed at 0 tokens without a row: no items.
    "huzhongyin-ai-dofiles_v2.1.81_57649bcb_vscode-markdown.jsonl": (
        Snap(
            2,
            "2026-03-26T10:16:34.686Z",
            "claude-sonnet-4-6",
            143_200,
            200_000,
            167_000,
            {S: 12, T: 20, R: 1, K: 3_400, M: 1},
            {"agent": 20, "rule": 1, "skill": 74},
            grammar="markdown",
        ),
    ),
    # 2.1.114, line 2: three header lines `Sonnet 4.6 (1M context)` / `claude-sonnet-4-6[1m]` /
    # `122.6k/1m tokens (12%)`; buffer 33k. System prompt 7.4k, System tools 15.5k + MCP tools
    # 51 + Custom agents 863, Memory files 2k, Skills 2.5k, Messages 96.5k. Skills: 47 lines,
    # 35 distinct names (11 in both Project and User, `logistics` twice in Project).
    "leodchen-claude-config_v2.1.114_5247b30f.jsonl": (
        Snap(
            2,
            "2026-05-12T04:59:47.236Z",
            "claude-sonnet-4-6",
            122_600,
            1_000_000,
            967_000,
            {S: 7_400, T: 15_500 + 51 + 863, R: 2_000, K: 2_500, M: 96_500},
            {"mcp": 2, "agent": 7, "rule": 4, "skill": 35},
        ),
    ),
    # 2.1.116 VS Code markdown, line 2: `92k / 200k (46%)`. System prompt 6.9k, System tools
    # 16.2k + MCP tools 3.4k + Custom agents 1.7k, Memory files 2k, Skills 4.4k, Messages 57.4k.
    "huzhongyin-ai-dofiles_v2.1.116_20253f65_vscode-markdown.jsonl": (
        Snap(
            2,
            "2026-04-22T02:13:01.584Z",
            "claude-opus-4.6",
            92_000,
            200_000,
            167_000,
            {S: 6_900, T: 16_200 + 3_400 + 1_700, R: 2_000, K: 4_400, M: 57_400},
            {"mcp": 23, "agent": 11, "rule": 4, "skill": 99},
            grammar="markdown",
        ),
    ),
    # 2.1.123 VS Code markdown, line 2 (line 1's arguments hold a pasted 50.3k screen, which
    # must not be read): `86.7k / 200k (43%)`. System prompt 6.4k, Custom agents 5.5k, Memory
    # files 25.8k, Skills 21.7k, Messages 29.5k. 48 agents of which 4 at 0 tokens.
    "leodchen-claude-config_v2.1.123_07a593cf_vscode-markdown.jsonl": (
        Snap(
            2,
            "2026-04-29T04:32:39.340Z",
            "claude-sonnet-4-6",
            86_700,
            200_000,
            167_000,
            {S: 6_400, T: 5_500, R: 25_800, K: 21_700, M: 29_500},
            {"agent": 44, "rule": 47, "skill": 249},
            grammar="markdown",
        ),
    ),
    # 2.1.207: command line 1, screen line 2, markdown line 3: `62.5k / 1m (6%)`. System prompt
    # 4.4k, System tools 7.2k + Custom agents 71, Memory files 2.7k, Skills 3.6k, Messages
    # 44.6k; deferred MCP 31.4k + System 13.8k; no buffer. The 52 MCP tools are all deferred.
    "hannibal8856-claude_backup_v2.1.207_fdcca453.jsonl": (
        Snap(
            2,
            "2026-07-22T09:29:22.702Z",
            "claude-opus-4-8",
            62_500,
            1_000_000,
            None,
            {S: 4_400, T: 7_200 + 71, R: 2_700, K: 3_600, M: 44_600},
            {"agent": 1, "rule": 4, "skill": 36},
            grammar="markdown",
            text_line=3,
            deferred=31_400 + 13_800,
        ),
    ),
    # 2.1.222: a triple (lines 1–3, `22k / 1m`) and a run typed while busy (lines 4–5,
    # markdown in the output record, `368k / 1m`). Deferred 11.3k + 17.5k in both.
    "hannibal8856-claude_backup_v2.1.222_5a198443_incl-queued.jsonl": (
        Snap(
            2,
            "2026-08-05T10:46:29.833Z",
            "claude-opus-5",
            22_000,
            1_000_000,
            None,
            {S: 5_600, T: 8_300 + 155, R: 3_900, K: 4_100, M: 8},
            {"agent": 2, "rule": 3, "skill": 41},
            grammar="markdown",
            text_line=3,
            deferred=11_300 + 17_500,
        ),
        Snap(
            5,
            "2026-08-05T15:07:18.580Z",
            "claude-opus-5",
            368_000,
            1_000_000,
            None,
            {S: 5_600, T: 9_300 + 155, R: 3_900, K: 4_100, M: 345_100},
            {"agent": 2, "rule": 3, "skill": 41},
            grammar="markdown",
            deferred=11_300 + 17_500,
        ),
    ),
    # 2.1.225 (16 colours, 5-column grid), markdown line 3: `42.4k / 1m (4%)`. System prompt
    # 5.6k, System tools 9.7k + Custom agents 155, Memory files 2.8k, Skills 4.3k, Messages
    # 20k; deferred 11.3k + 18.3k.
    "hannibal8856-claude_backup_v2.1.225_43e7d642_16color.jsonl": (
        Snap(
            2,
            "2026-08-09T01:27:11.165Z",
            "claude-opus-5",
            42_400,
            1_000_000,
            None,
            {S: 5_600, T: 9_700 + 155, R: 2_800, K: 4_300, M: 20_000},
            {"agent": 2, "rule": 2, "skill": 41},
            grammar="markdown",
            text_line=3,
            deferred=11_300 + 18_300,
        ),
    ),
    # 2.1.232, markdown line 3: `103.9k / 1m (10%)`. System prompt 5.6k, System tools 9.1k +
    # Custom agents 155, Memory files 9.6k, Skills 4.7k, Messages 75.8k; deferred 11.3k + 19k.
    "hannibal8856-claude_backup_v2.1.232_c2bebb28.jsonl": (
        Snap(
            2,
            "2026-08-14T06:27:24.741Z",
            "claude-opus-5",
            103_900,
            1_000_000,
            None,
            {S: 5_600, T: 9_100 + 155, R: 9_600, K: 4_700, M: 75_800},
            {"agent": 2, "rule": 4, "skill": 43},
            grammar="markdown",
            text_line=3,
            deferred=11_300 + 19_000,
        ),
    ),
}


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def track(recs: list[dict[str, object]]) -> list[ContextRunResult]:
    tracker = ContextCommandTracker()
    results: list[ContextRunResult] = []
    for line, record in enumerate(recs, 1):
        results += tracker.feed(record, line)
    return results + tracker.finish()


def snapshots(results: list[ContextRunResult]) -> list[NativeSnapshot]:
    return [r for r in results if isinstance(r, NativeSnapshot)]


def failures(results: list[ContextRunResult]) -> list[ContextCommandFailure]:
    return [r for r in results if isinstance(r, ContextCommandFailure)]


def check_file(path: Path) -> None:
    results = track(records(path))
    expected = EXPECTED[path.name]
    assert len(results) == len(expected), results
    for got, want in zip(results, expected, strict=True):
        if isinstance(want, Fail):
            assert isinstance(got, ContextCommandFailure)
            assert got.line == want.line and want.reason_contains in got.reason
            continue
        assert isinstance(got, NativeSnapshot), got
        assert (got.line, got.timestamp, got.model) == (want.line, want.timestamp, want.model)
        assert (got.used_tokens, got.window_tokens) == (want.used, want.window)
        assert got.effective_window_tokens == want.effective
        assert dict(got.categories) == want.categories
        assert len(got.categories) >= 3
        assert got.grammar == want.grammar
        assert got.text_line == (want.text_line or want.line)
        assert got.deferred_tokens == want.deferred
        assert Counter(item.id.split(":", 1)[0] for item in got.items) == want.items
        # Items stay inside their category and never exceed a row by more than rounding.
        assert len({item.id for item in got.items}) == len(got.items)
        assert all(item.tokens > 0 for item in got.items)


LOCAL = sorted(p.name for p in COPIES.glob("*.jsonl"))


def test_the_copies_are_the_few_we_meant() -> None:
    assert len(LOCAL) == 4 and set(LOCAL) <= set(EXPECTED)


@pytest.mark.parametrize("name", LOCAL)
def test_copied_session(name: str) -> None:
    check_file(COPIES / name)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not beside the repository")
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_session(name: str) -> None:
    check_file(CORPUS / name)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not beside the repository")
def test_the_corpus_has_no_file_we_did_not_expect() -> None:
    assert sorted(p.name for p in CORPUS.glob("*.jsonl")) == sorted(EXPECTED)


# --------------------------------------------------------------------------- failures

SIMONW = COPIES / "simonw-cct-pr51_v2.1.2_44baca89.jsonl"
HANNIBAL = COPIES / "hannibal8856-claude_backup_v2.1.222_5a198443_incl-queued.jsonl"
SMARTAGENT = COPIES / "smartagent-so-pai_v2.0.57_703e4528_stderr-then-stdout.jsonl"
OBRA = COPIES / "obra-episodic-memory_v1.0.120_0fae0449.jsonl"


def test_a_failed_run_gives_one_failure_and_no_snapshot() -> None:
    results = track(records(SMARTAGENT)[:2])  # the stderr run alone
    assert results == [failures(results)[0]]
    assert results[0].line == 2 and "invalid_request_error" not in results[0].reason


@pytest.mark.parametrize("length", [12, 200, 201, 5000])
def test_a_failure_says_how_much_it_printed_never_what(length: int) -> None:
    """What /context printed on stderr is the journal's (an API error's body, whole
    messages): the warning says how long it is, never quotes it (it quoted 200 characters
    of a `400 {"type":"error",…}` body on stderr)."""
    command, output = records(SIMONW)
    message = ("Error: 400 " + "x" * length)[:length]
    output["message"] = {
        "role": "user",
        "content": f"<local-command-stderr>{message}\n</local-command-stderr>",
    }
    (failure,) = track([command, output])
    said = f"/context failed ({length:,} characters of error output, not shown)"
    assert failure == ContextCommandFailure(2, said)
    assert "Error" not in failure.reason


def _mutated(path: Path, line: int, old: str, new: str) -> list[dict[str, object]]:
    recs = records(path)
    record = recs[line - 1]
    if record["type"] == "system":
        assert old in str(record["content"])
        record["content"] = str(record["content"]).replace(old, new)
    else:
        message = record["message"]
        assert isinstance(message, dict) and old in message["content"]
        message["content"] = message["content"].replace(old, new)
    return recs


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # A new header form.
        ("24k/200k tokens (12%)", "24k of 200k tokens used (12%)"),
        # A category row renamed: is it context or a reserve? Unknown, so no snapshot.
        ("Skills: ", "Plugins: "),
        # A category line in a new shape.
        ("Messages: ", "Messages — "),
        # Percentages of something else than the window.
        ("(1.4%)", "(2.8%)"),
        # A window unit we do not know.
        ("24k/200k", "24k/200K"),
    ],
)
def test_an_unknown_screen_layout_gives_one_failure(old: str, new: str) -> None:
    results = track(_mutated(SIMONW, 2, old, new))
    assert snapshots(results) == []
    (failure,) = failures(results)
    assert failure.line == 2 and "unknown screen layout" in failure.reason


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("| Messages | 8 |", "| Conversation | 8 |"),
        ("**Tokens:** 22k / 1m (2%)", "**Tokens:** 22k of 1m"),
        ("| Category | Tokens | Percentage |", "| Category | Percentage | Tokens |"),
    ],
)
def test_an_unknown_markdown_layout_gives_one_failure_without_falling_back(
    old: str, new: str
) -> None:
    # Line 3 is the markdown copy of line 2's screen; the screen is fine, but the markdown
    # is preferred, and a markdown we cannot read is reported, not replaced by the screen.
    results = track(_mutated(HANNIBAL, 3, old, new)[:3])
    assert snapshots(results) == []
    (failure,) = failures(results)
    assert failure.line == 2 and "unknown markdown layout" in failure.reason


def test_a_command_without_output_is_reported_at_the_end() -> None:
    command = records(SIMONW)[0]
    results = track([command])
    assert results == [ContextCommandFailure(1, "/context gave no output record")]


def test_a_command_that_printed_nothing_is_reported_at_its_output() -> None:
    command, output = records(SIMONW)
    output["message"] = {
        "role": "user",
        "content": "<local-command-stdout> \n</local-command-stdout>",
    }
    assert track([command, output]) == [ContextCommandFailure(2, "/context printed nothing")]


def test_a_command_without_a_uuid_is_reported_at_its_line() -> None:
    command, output = records(SIMONW)
    del command["uuid"]
    assert track([output, command]) == [ContextCommandFailure(2, "/context command without a uuid")]


def test_a_command_answered_by_something_else_is_reported() -> None:
    command, output = records(SIMONW)
    output["message"] = {"role": "user", "content": "[Request interrupted by user]"}
    results = track([command, output])
    assert results == [ContextCommandFailure(1, "/context gave no output record")]


# --------------------------------------------------------------------------- finding runs


def test_runs_are_found_by_their_command_not_by_their_text() -> None:
    command, output = records(SIMONW)
    # The same screen answering another command is not a /context run.
    other = dict(command)
    other["message"] = {
        "role": "user",
        "content": "<command-name>/cost</command-name>\n"
        "            <command-message>cost</command-message>\n"
        "            <command-args>/context</command-args>",
    }
    assert track([other, output]) == []
    # Nor is an output that does not chain to the command.
    orphan = dict(output, parentUuid="somewhere-else")
    assert track([command, orphan]) == [ContextCommandFailure(1, "/context gave no output record")]


def test_command_message_first_is_accepted() -> None:
    command, output = records(SIMONW)
    command["message"] = {
        "role": "user",
        "content": "<command-message>context</command-message>\n"
        "            <command-name>/context</command-name>\n"
        "            <command-args></command-args>",
    }
    (snapshot,) = snapshots(track([command, output]))
    assert snapshot.used_tokens == 24_000


def test_a_screen_is_held_until_the_next_record_on_its_chain() -> None:
    recs = records(HANNIBAL)
    tracker = ContextCommandTracker()
    assert tracker.feed(recs[0], 1) == []
    assert tracker.feed(recs[1], 2) == []  # a markdown copy may follow
    (snapshot,) = tracker.feed(recs[2], 3)
    assert isinstance(snapshot, NativeSnapshot) and snapshot.grammar == "markdown"
    assert tracker.feed(recs[3], 4) == []
    (queued,) = tracker.feed(recs[4], 5)  # markdown in the output itself: no wait
    assert isinstance(queued, NativeSnapshot) and queued.line == 5
    assert tracker.finish() == []


def test_without_its_markdown_copy_the_screen_is_used() -> None:
    recs = records(HANNIBAL)
    # The screen alone, concluded by finish().
    (alone,) = track(recs[:2])
    assert isinstance(alone, NativeSnapshot) and alone.grammar == "screen"
    # The screen followed by an ordinary record on its chain.
    follower = {"type": "user", "uuid": "x", "parentUuid": recs[1]["uuid"], "message": {}}
    tracker = ContextCommandTracker()
    tracker.feed(recs[0], 1)
    tracker.feed(recs[1], 2)
    (screen,) = tracker.feed(follower, 3)
    assert isinstance(screen, NativeSnapshot) and screen.text_line == 2
    assert tracker.finish() == []


def test_only_a_meta_record_is_the_screens_markdown_copy() -> None:
    """The copy Claude Code 2.1.207+ writes after a screen is an `isMeta` record: the same
    markdown in a record that is not meta (a user pasting it) leaves the screen as it is."""
    recs = records(HANNIBAL)
    pasted = {**recs[2]}
    del pasted["isMeta"]
    (screen,) = track([recs[0], recs[1], pasted])
    assert isinstance(screen, NativeSnapshot)
    assert (screen.grammar, screen.text_line) == ("screen", 2)


def test_an_output_of_text_blocks_is_read_as_its_text() -> None:
    """An output whose content is a list of text blocks (not seen from /context, but what a
    user record may hold) is read as their text joined: the same snapshot."""
    command, output = records(SIMONW)
    message = output["message"]
    assert isinstance(message, dict) and isinstance(message["content"], str)
    text = message["content"]
    blocks = [{"type": "text", "text": text[:40]}, {"type": "text", "text": text[40:]}]
    as_blocks = {**output, "message": {**message, "content": blocks}}
    assert track([command, as_blocks]) == track([command, output])


def test_the_screen_and_its_markdown_copy_agree() -> None:
    recs = records(HANNIBAL)
    screen = parse_context_output(str(recs[1]["content"]), version="2.1.222")
    message = recs[2]["message"]
    assert isinstance(message, dict)
    markdown = parse_context_output(message["content"], version="2.1.222")
    assert screen.categories == markdown.categories
    assert (screen.used_tokens, screen.window_tokens) == (22_000, 1_000_000)
    assert screen.model == markdown.model == "claude-opus-5"
    # Only the markdown lists the deferred rows and the items.
    assert (screen.deferred_tokens, markdown.deferred_tokens) == (0, 28_800)
    assert screen.items == () and len(markdown.items) == 46


# --------------------------------------------------------------------------- the screen grammar


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("8", 8),
        ("929", 929),
        ("45.0k", 45_000),
        ("33k", 33_000),
        ("122.6k", 122_600),
        ("200.0k", 200_000),
        ("1000k", 1_000_000),
        ("1m", 1_000_000),
    ],
)
def test_token_values(text: str, tokens: int) -> None:
    assert parse_tokens(text) == tokens


@pytest.mark.parametrize("text", ["", "1,000", "12K", "k", "1.5g"])
def test_token_values_we_do_not_know(text: str) -> None:
    with pytest.raises(ContextParseError):
        parse_tokens(text)


def _grid(rows: list[str], width: int = 10) -> str:
    """A plain (colourless) screen: one row of grid cells before each right-hand line."""
    cells = " ".join("⛶" for _ in range(width)) + " "
    return "\n".join(f"{cells}  {row}" if row else cells for row in rows)


PLAIN_ROWS = [
    "claude-opus-4-5-20251101 · 38k/200k tokens (19%)",
    "",
    "Estimated usage by category",
    "⛁ System prompt: 3.6k tokens (1.8%)",
    "⛁ System tools: 16.8k tokens (8.4%)",
    "⛁ Memory files: 2.0k tokens (1.0%)",
    "⛁ Skills: 929 tokens (0.5%)",
    "⛁ Messages: 8 tokens (0.0%)",
    "⛶ Free space: 129k (64.5%)",
    "⛝ Autocompact buffer: 33.0k tokens (16.5%)",
]


def test_plain_screen_values_and_free_space_without_tokens() -> None:
    snapshot = parse_screen(" Context Usage\n" + _grid(PLAIN_ROWS), version="2.1.23")
    assert dict(snapshot.categories) == {S: 3_600, T: 16_800, R: 2_000, K: 929, M: 8}
    assert snapshot.free_tokens == 129_000
    assert (snapshot.reserve_tokens, snapshot.effective_window_tokens) == (33_000, 167_000)
    assert snapshot.used_tokens == 38_000  # 2.1.x: the header excludes the buffer
    assert snapshot.rows[-2:] == (("Free space", 129_000), ("Autocompact buffer", 33_000))


def test_a_20_header_includes_the_buffer() -> None:
    text = " Context Usage\n" + _grid(PLAIN_ROWS)
    assert parse_screen(text, version="2.0.60").used_tokens == 38_000 - 33_000
    assert parse_screen(text, version="2.1.2").used_tokens == 38_000


def test_lines_below_the_grid_keep_their_bullet() -> None:
    # 2.1.19+: more right-hand lines than grid rows; the extra ones are indented.
    rows = _grid(PLAIN_ROWS[:6]).split("\n")
    below = [" " * 22 + row for row in PLAIN_ROWS[6:]]
    snapshot = parse_screen("\n".join([" Context Usage", *rows, *below]))
    assert dict(snapshot.categories)[M] == 8 and snapshot.free_tokens == 129_000


def test_the_three_header_forms() -> None:
    rows = PLAIN_ROWS[3:]
    old = parse_screen(
        _grid(["Context Usage", "claude-sonnet-4-20250514[1m] • 38k/200k tokens (19%)", *rows])
    )
    middle = parse_screen(" Context Usage\n" + _grid(PLAIN_ROWS))
    new = parse_screen(
        " Context Usage\n"
        + _grid(["Opus 5", "claude-opus-5[1m]", "38k/200k tokens (19%)", "", *rows])
    )
    assert old.model == "claude-sonnet-4-20250514" and new.model == "claude-opus-5"
    assert middle.model == "claude-opus-4-5-20251101"
    for snapshot in (old, middle, new):
        assert (snapshot.used_tokens, snapshot.window_tokens) == (38_000, 200_000)
        assert snapshot.categories == middle.categories


@pytest.mark.parametrize(
    ("header", "near"),
    [
        (["Opus 5", "claude opus 5", "38k/200k tokens (19%)"], 2),  # a model id with spaces
        (["one", "two", "three", "38k/200k tokens (19%)"], 2),  # too many lines above totals
        (["Opus 5", "claude-opus-5 · 38k/200k tokens (19%)"], 1),  # inline after a line
        (["38k/200k tokens (19%)"], 0),  # totals without a model line
    ],
)
def test_header_forms_we_do_not_know(header: list[str], near: int) -> None:
    """Refused at the line that cannot be a header (`near`), not at a later one."""
    with pytest.raises(ContextParseError) as caught:
        parse_screen(" Context Usage\n" + _grid([*header, "", *PLAIN_ROWS[3:]]))
    assert str(caught.value) == f"unknown header near {header[near]!r}"


def test_a_screen_printed_twice_is_read_once_from_the_last_frame() -> None:
    (_, output) = records(SIMONW)
    message = output["message"]
    assert isinstance(message, dict)
    body = message["content"].removeprefix("<local-command-stdout>")
    body = body.removesuffix("</local-command-stdout>")
    frame = body.rsplit(f"{ESC}[?2026h", 1)[1].removesuffix(f"{ESC}[?2026l")
    stale = frame.replace("24k/200k tokens (12%)", "99k/200k tokens (50%)")
    begin, end = f"{ESC}[?2026h", f"{ESC}[?2026l"
    text = f"{begin}{stale}{end}{begin}{frame}{end}{begin}\n{end}"
    snapshot = parse_screen(text)
    assert snapshot.used_tokens == 24_000
    assert len(snapshot.items) == 26 + 1 + 5  # not doubled


def test_escape_codes_do_not_matter() -> None:
    (_, output) = records(SIMONW)
    message = output["message"]
    assert isinstance(message, dict)
    coloured = parse_context_output(message["content"])
    plain = parse_context_output(
        message["content"].replace(f"{ESC}[1m", "").replace(f"{ESC}[22m", "")
    )
    assert coloured == plain


def test_operating_system_commands_do_not_matter() -> None:
    # A title and a hyperlink (OSC 0 and OSC 8, ended by BEL and by ST), as a terminal
    # library may print them around a row.
    plain = _grid(PLAIN_ROWS)
    linked = plain.replace(
        "Messages", f"{ESC}]8;;file:///tmp/x{ESC}\\Messages{ESC}]8;;{ESC}\\"
    ).replace("Skills", f"{ESC}]0;claude{chr(7)}Skills")
    assert linked != plain
    assert parse_screen(" Context Usage\n" + linked) == parse_screen(" Context Usage\n" + plain)


def test_an_unknown_escape_sequence_is_refused() -> None:
    text = " Context Usage\n" + _grid(PLAIN_ROWS).replace("Messages", f"{ESC}PMessages")
    with pytest.raises(ContextParseError):
        parse_screen(text)


def test_old_detail_items_with_their_origin_after_the_name() -> None:
    (snapshot,) = snapshots(track(records(SMARTAGENT)))
    items = {item.id: item for item in snapshot.items}
    tts = items["mcp:mcp__elevenlabs__text_to_speech"]
    assert (tts.category, tts.tokens) == (T, 1_900)
    assert "elevenlabs" in tts.label
    engineer = items["agent:engineer"]
    assert (engineer.category, engineer.tokens) == (T, 64) and "User" in engineer.label
    memory = items["rule:/Users/pretor/Documents/PAI - TPOS/CLAUDE.md"]
    assert (memory.category, memory.tokens) == (R, 1_700) and "Project" in memory.label


def test_detail_sections_groups_wraps_and_unknown_headings() -> None:
    details = [
        "",
        "└ stray: 10 tokens",  # an item under no heading at all: not counted
        "",
        "Memory files · /memory",
        "└ User (/a/CLAUDE.md): 63 tokens",
        "└ Project                                                            1.3k",
        "(/b/.claude/CLAUDE.md):tokens",  # continues the wrapped line above: skipped
        "└ Project (/c/CLAUDE.md): 1.7k tokens",
        "",
        "Skills · /skills",
        "",
        "User",
        "├ adr: 100 tokens",
        "└ tdd: 50 tokens",
        "",
        "Plugins",  # a heading we do not know: its items are not skills
        "└ foo: 40 tokens",
        "",
        "/context all to expand",
    ]
    text = " Context Usage\n" + _grid(PLAIN_ROWS) + "\n" + "\n".join(details)
    items = {item.id: item for item in parse_screen(text, version="2.1.19").items}
    assert {key: item.tokens for key, item in items.items()} == {
        "rule:/a/CLAUDE.md": 63,
        "rule:/c/CLAUDE.md": 1_700,
        "skill:adr": 100,
        "skill:tdd": 50,
    }
    assert items["rule:/c/CLAUDE.md"].label == "/c/CLAUDE.md (Project)"
    assert items["skill:adr"].label == "adr (User)" and items["skill:adr"].category is K


def test_wrapped_detail_lines_are_skipped() -> None:
    (snapshot,) = snapshots(track(records(OBRA)))
    rules = [item for item in snapshot.items if item.category is R]
    assert [(r.id, r.tokens) for r in rules] == [("rule:/Users/testuser/.claude/CLAUDE.md", 2_600)]
    assert dict(snapshot.categories)[R] == 6_000  # the row stays exact


# --------------------------------------------------------------------------- the markdown grammar

MARKDOWN = """## Context Usage

**Model:** claude-opus-5[1m]<BR>
**Tokens:** 12.5k / 1m (1%)

### Estimated usage by category

| Category | Tokens | Percentage |
|----------|--------|------------|
| System prompt | 5.6k | 0.6% |
| System tools | 2k | 0.2% |
| MCP tools (deferred) | 11.3k | 1.1% |
| Memory files | 900 | 0.1% |
| Skills | 150 | 0.0% |
| Messages | 3.8k | 0.4% |
| Free space | 987.5k | 98.8% |

### MCP Tools

| Tool | Server | Tokens |
|------|--------|--------|
| mcp__srv__deferred_tool | srv | 1.2k |

### Memory Files

| Type | Path | Tokens |
|------|------|--------|
| User | /home/u/.claude/CLAUDE.md | 900 |
| Project | /p/CLAUDE.md | 0 |

### Skills

| Skill | Source | Tokens |
|-------|--------|--------|
| adr | User | ~100 |
| adr | Project | < 20 |
| review | Built-in | ~30 |
""".replace("<BR>", "  ")  # two trailing spaces: a markdown line break, as printed


def test_markdown_rows_items_and_deferred_tools() -> None:
    snapshot = parse_markdown(MARKDOWN, timestamp="t", line=7)
    assert (snapshot.timestamp, snapshot.line, snapshot.text_line) == ("t", 7, 7)
    assert snapshot.model == "claude-opus-5"
    assert (snapshot.used_tokens, snapshot.window_tokens) == (12_500, 1_000_000)
    assert snapshot.effective_window_tokens is None and snapshot.deferred_tokens == 11_300
    assert dict(snapshot.categories) == {S: 5_600, T: 2_000, R: 900, K: 150, M: 3_800}
    assert snapshot.estimated_tokens == 12_450
    items = {item.id: item for item in snapshot.items}
    # No `MCP tools` row: the listed (deferred) tool is not in the prompt. The 0-token file
    # is not either. The skill listed for User and Project is one item with both copies.
    assert set(items) == {"rule:/home/u/.claude/CLAUDE.md", "skill:adr", "skill:review"}
    assert items["skill:adr"].tokens == 120 and items["skill:adr"].label == "adr (User, Project)"
    assert items["skill:review"].category is K


def test_a_skill_listed_twice_without_its_source_says_how_many_times() -> None:
    text = MARKDOWN.replace("| adr | User | ~100 |", "| adr |  | ~100 |")
    items = {
        item.id: item
        for item in parse_markdown(text.replace("| adr | Project |", "| adr |  |")).items
    }
    assert items["skill:adr"].label == "adr ×2" and items["skill:adr"].tokens == 120
    items = {item.id: item for item in parse_markdown(text).items}
    assert items["skill:adr"].label == "adr (Project) ×2"
    # Listed once, a skill is its name.
    assert items["skill:review"].label == "review (Built-in)"


def test_an_unknown_markdown_line_is_named() -> None:
    text = MARKDOWN.replace("**Tokens:** 12.5k / 1m (1%)", "**Tokens:** 12.5k of 1m")
    with pytest.raises(ContextParseError) as caught:
        parse_markdown(text)
    assert str(caught.value) == "unknown line '**Tokens:** 12.5k of 1m'"


def test_markdown_categories_heading_of_214() -> None:
    text = MARKDOWN.replace("### Estimated usage by category", "### Categories")
    assert parse_markdown(text).categories == parse_markdown(MARKDOWN).categories


def test_markdown_item_tables_we_do_not_know_only_lose_items() -> None:
    text = MARKDOWN.replace("| Skill | Source | Tokens |", "| Name | Kind | Size |")
    snapshot = parse_markdown(text)
    assert [item.id for item in snapshot.items] == ["rule:/home/u/.claude/CLAUDE.md"]
    assert snapshot.categories == parse_markdown(MARKDOWN).categories


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("## Context Usage", "## Context"),
        ("| Skills | 150 | 0.0% |", "| Plugins | 150 | 0.0% |"),
        ("| Messages | 3.8k | 0.4% |", ""),
        ("| Skills | 150 | 0.0% |", "| Skills | 150 | 0.0% |\n| Skills | 150 | 0.0% |"),
        ("(1%)", "(9%)"),
        ("| System prompt | 5.6k | 0.6% |", "| System prompt | 5.6k | 6% |"),
    ],
)
def test_markdown_layouts_we_do_not_know(old: str, new: str) -> None:
    with pytest.raises(ContextParseError):
        parse_markdown(MARKDOWN.replace(old, new))


def test_token_counts_are_read_exactly_as_decimal_reads_them() -> None:
    """parse_tokens reads `122.6k` in integers (no float, and no decimal import): on random
    counts it gives what Decimal's exact product, truncated, gives."""
    import random
    from decimal import Decimal

    units = {"": 1, "k": 1_000, "m": 1_000_000}
    rng = random.Random(32)
    for _ in range(5000):
        whole = str(rng.randint(0, 10 ** rng.randint(0, 7)))
        decimals = rng.choice([None, str(rng.randint(0, 999)).zfill(rng.randint(1, 4))])
        unit = rng.choice(list(units))
        text = whole + (f".{decimals}" if decimals is not None else "") + unit
        assert parse_tokens(text) == int(Decimal(f"{whole}.{decimals or 0}") * units[unit]), text
