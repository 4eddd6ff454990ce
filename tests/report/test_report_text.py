"""The report's formatting of numbers, times, dates, ids and untrusted text."""

from __future__ import annotations

import time

import pytest

from agent_profiler.model import Category, shared
from agent_profiler.report.text import (
    clock_text,
    duration,
    esc,
    percent,
    short_id,
    short_tokens,
    utc,
)

S = 1_000_000_000


@pytest.mark.parametrize(
    ("ns", "shown"),
    [
        (-5 * S, "0:00:00"),
        (0, "0:00:00"),
        (59 * S + S // 2, "0:00:59"),
        (3599 * S, "0:59:59"),
        (3600 * S, "1:00:00"),
        (90_061 * S, "25:01:01"),
    ],
)
def test_elapsed_clock(ns: int, shown: str) -> None:
    assert clock_text(ns) == shown


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "<1 s"),
        (0.4, "<1 s"),
        (0.6, "<1 s"),
        (1, "1 s"),
        (59, "59 s"),
        (60, "1 min"),
        (61, "1 min 1 s"),
        (3600, "1 h"),
        (3661, "1 h 1 min"),
        (5400, "1 h 30 min"),
        (7200.2, "2 h"),
    ],
)
def test_elapsed_in_words(seconds: float, shown: str) -> None:
    assert duration(seconds) == shown


def test_untrusted_text_is_escaped_for_attributes_too() -> None:
    assert esc('<a href="x">\'&') == "&lt;a href=&quot;x&quot;&gt;&#x27;&amp;"
    assert esc(12) == "12"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0, "0%"),
        (0.001, "<1%"),
        (0.004999, "<1%"),
        (0.005, "0%"),
        (0.0051, "1%"),
        (0.25, "25%"),
        (1.5, "150%"),
    ],
)
def test_shares(value: float, shown: str) -> None:
    assert percent(value) == shown


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0, "0"),
        (500, "500"),
        (999, "999"),
        (1_000, "1k"),
        (50_000, "50k"),
        (1_000_000, "1M"),
        (1_500_000, "1.5M"),
    ],
)
def test_axis_token_labels(value: float, shown: str) -> None:
    assert short_tokens(value) == shown


def test_dates_are_utc_whatever_the_machine_s_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # +05:30, no summer time
    time.tzset()
    try:
        assert utc(0) == "1970-01-01 00:00:00 UTC"
        assert utc(1_767_225_599 * S + S // 2) == "2025-12-31 23:59:59 UTC"
    finally:
        monkeypatch.undo()
        time.tzset()


def test_long_ids_are_shortened_as_the_trace_names_the_session() -> None:
    """The report showed a Codex session as `019eef3d…`, the trace as `259027c5`: a
    time-ordered UUID (version 7) starts with the time, shared by sessions started
    together, so the trace shows its last 8 digits, and now the report does too."""
    assert short_id("0123456789abcdef") == "0123456789abcdef"  # 16: kept
    assert short_id("0123456789abcdef0") == "…9abcdef0"  # the trace's: its last 8
    assert short_id("258c7280-ae70-4798-800f-63464d01a85d") == "258c7280…"  # version 4: head
    assert short_id("019eef3d-1111-7222-8333-4444259027c5") == "…259027c5"  # version 7: tail


def test_a_copys_id_is_shortened_with_its_mark_after() -> None:
    """The loader's `#2` (another file holding the id) stays after the shortened id: the
    report showed `…63464d01a85d#2` against `258c7280…`, an unrelated-looking session."""
    assert short_id("258c7280-ae70-4798-800f-63464d01a85d#2") == "258c7280…#2"
    assert short_id("019eef3d-1111-7222-8333-4444259027c5#3") == "…259027c5#3"
    assert short_id("0123456789abcdef#2") == "0123456789abcdef#2"  # 18, its base 16: kept


def test_shared_text_is_one_object_and_other_strings_stay_as_they_are() -> None:
    text = "".join(["claude-", "opus"])
    assert shared(text) is shared("claude-opus")
    assert shared(Category.RESULTS) is Category.RESULTS  # a str subclass: not interned
