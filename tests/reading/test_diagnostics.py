"""Diagnostics: what is kept of the warnings, the accounting written into traces, and the
lines the command prints about them."""

from __future__ import annotations

from agent_profiler.diagnostics import Diagnostics


def _warned(count: int, keep_first: int = 3) -> Diagnostics:
    diagnostics = Diagnostics(keep_first=keep_first)
    for line in range(1, count + 1):
        diagnostics.warn("j.jsonl", line, "not-json" if line % 2 else "bad-shape", f"bad {line}")
    return diagnostics


def test_the_first_warnings_are_kept_and_all_are_counted() -> None:
    diagnostics = _warned(4)
    assert [w.line for w in diagnostics.warnings] == [1, 2, 3]
    assert diagnostics.warning_counts == {"not-json": 2, "bad-shape": 2}
    assert [w.line for w in _warned(3).warnings] == [1, 2, 3]


def test_the_accounting_names_records_not_recognised_only_when_there_are_some() -> None:
    diagnostics = _warned(1)
    diagnostics.lines_read, diagnostics.records_parsed = 10, 9
    diagnostics.skip("claude:progress")
    assert diagnostics.accounting() == (
        ("lines_read", 10),
        ("records_used", 8),
        ("records_skipped", {"claude:progress": 1}),
        ("warnings", {"not-json": 1}),
    )
    diagnostics.not_recognised("claude:brand-new")
    diagnostics.not_recognised("claude:brand-new")
    assert diagnostics.accounting() == (
        ("lines_read", 10),
        ("records_used", 6),
        ("records_skipped", {"claude:progress": 1}),
        ("records_not_recognised", {"claude:brand-new": 2}),
        ("warnings", {"not-json": 1}),
    )


def test_the_summary_lines_count_what_they_do_not_show() -> None:
    assert Diagnostics().summary_lines() == []
    shown = _warned(3).summary_lines(first=3)
    assert shown == [
        "3 warning(s) (bad-shape: 1, not-json: 2)",
        "  j.jsonl:1: bad 1",
        "  j.jsonl:2: bad 2",
        "  j.jsonl:3: bad 3",
    ]
    more = _warned(7, keep_first=20).summary_lines(first=3)
    assert more[0] == "7 warning(s) (bad-shape: 3, not-json: 4)"
    assert more[1:4] == ["  j.jsonl:1: bad 1", "  j.jsonl:2: bad 2", "  j.jsonl:3: bad 3"]
    assert more[4:] == ["  … and 4 more"]
