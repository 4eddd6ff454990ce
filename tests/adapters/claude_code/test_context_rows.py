"""The rules that turn a `/context` breakdown's rows into one snapshot
(claude_context_rows.build_snapshot), on hand-made rows of the 2.1.23 plain screen of
test_context_command (`PLAIN_ROWS`): how far a printed percentage may be from its
rounded tokens, what a refusal says, and what a screen without a row leaves unset."""

from __future__ import annotations

import pytest

from agent_profiler.adapters.claude_context_rows import (
    ContextParseError,
    NativeSnapshot,
    Parsed,
    RawItem,
    Row,
    build_snapshot,
    half_step,
)
from agent_profiler.model import Category

WINDOW = 200_000


def _rows(**changed: tuple[int, float, float]) -> list[Row]:
    """The plain screen's rows (tokens, percent, half of the last printed digit)."""
    rows = {
        "System prompt": (3_600, 1.8, 50.0),
        "System tools": (16_800, 8.4, 50.0),
        "Memory files": (2_000, 1.0, 50.0),
        "Skills": (929, 0.5, 0.5),
        "Messages": (8, 0.0, 0.5),
        "Free space": (129_000, 64.5, 500.0),
        "Autocompact buffer": (33_000, 16.5, 50.0),
    }
    rows.update(changed)
    return [Row(name, *values) for name, values in rows.items()]


def _snapshot(
    rows: list[Row] | None = None,
    *,
    used: int = 38_000,
    header_pct: int = 19,
    window: int = WINDOW,
    version: str | None = "2.1.23",
    items: list[RawItem] | None = None,
) -> NativeSnapshot:
    parsed = Parsed(
        model="claude-opus-4-5-20251101",
        used=used,
        used_slack=half_step("38k"),
        window=window,
        header_pct=header_pct,
        rows=_rows() if rows is None else rows,
        items=items or [],
    )
    return build_snapshot(
        parsed, grammar="screen", version=version, timestamp=None, line=7, text_line=None
    )


def _refusal(rows: list[Row] | None = None, **options: int) -> str:
    with pytest.raises(ContextParseError) as caught:
        _snapshot(rows, **options)
    return str(caught.value)


def test_the_plain_screen_as_one_snapshot() -> None:
    snapshot = _snapshot()
    expected = {
        Category.SYSTEM: 3_600,
        Category.TOOLS: 16_800,
        Category.RULES: 2_000,
        Category.SKILLS: 929,
        Category.MESSAGES: 8,
    }
    # each category that has a row, once, in Category's order
    assert snapshot.categories == tuple((c, expected[c]) for c in Category if c in expected)
    assert (snapshot.free_tokens, snapshot.reserve_tokens) == (129_000, 33_000)
    assert snapshot.text_line == snapshot.line == 7


def test_a_header_percent_one_point_off_its_rounded_tokens_is_read() -> None:
    """38k of 200k is 19%; Claude Code may print 20% (its own unrounded used count), one
    point off and a little more when the printed thousands hide up to 500 tokens."""
    assert _snapshot(header_pct=20).used_tokens == 38_000
    assert _snapshot(header_pct=18).used_tokens == 38_000
    # 38k of 40k is 95%; 38,500 would be 96.25%: 97% is within what the rounding allows
    empty = [Row("System prompt", 0, 0.0, 0.5), Row("Messages", 0, 0.0, 0.5)]
    assert _snapshot(empty, window=40_000, header_pct=97).window_tokens == 40_000
    assert _refusal(empty, window=40_000, header_pct=98).startswith("header says 98%")
    assert _refusal(header_pct=21) == "header says 21% but 38000/200000 is not that"


def test_a_window_of_no_tokens_is_refused_in_words() -> None:
    assert _refusal(window=0) == "window of 0 tokens"


def test_a_rows_percent_is_checked_within_its_printed_digits() -> None:
    """System prompt 3.6k (3,550 to 3,649 tokens) of 200k: 1.775% to 1.825%; printed with
    one decimal, so 1.8 ± 0.05 more: a percentage past 1.875 is not this row's."""
    assert _snapshot(_rows(**{"System prompt": (3_600, 1.875, 50.0)}))
    refused = _refusal(_rows(**{"System prompt": (3_600, 1.8752, 50.0)}))
    assert refused == "row 'System prompt': 3600 is not 1.8752% of 200000"


def test_a_screen_without_a_free_space_row_has_no_free_tokens() -> None:
    rows = [row for row in _rows() if row.name != "Free space"]
    snapshot = _snapshot(rows)
    assert snapshot.free_tokens is None
    assert snapshot.rows[-1] == ("Autocompact buffer", 33_000)


def test_a_row_of_an_unknown_name_is_refused_by_its_name() -> None:
    """A new row might be context or a new kind of reserve: no snapshot, and the warning
    names the row."""
    rows = [*_rows(), Row("Plugins", 150, 0.1, 0.5)]
    assert _refusal(rows) == "unknown category row 'Plugins'"


def test_a_20_header_is_read_without_its_reserve_down_to_nothing_used() -> None:
    """2.0.x counted the Autocompact buffer (33k) in its header's total: a header of 33k is
    nothing used, one of 32k cannot be that screen's."""
    assert _snapshot(used=33_000, header_pct=17, version="2.0.60").used_tokens == 0
    assert _snapshot(used=33_000, header_pct=17, version="2.1.23").used_tokens == 33_000
    refused = _refusal(used=32_000, header_pct=16, version="2.0.60")
    assert refused == "header total smaller than its reserve"
