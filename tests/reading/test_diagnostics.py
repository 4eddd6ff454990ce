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
        "3 warnings (bad-shape: 1, not-json: 2)",
        "  j.jsonl:1: bad 1",
        "  j.jsonl:2: bad 2",
        "  j.jsonl:3: bad 3",
    ]
    more = _warned(7, keep_first=20).summary_lines(first=3)
    assert more[0] == "7 warnings (bad-shape: 3, not-json: 4)"
    assert more[1:4] == ["  j.jsonl:1: bad 1", "  j.jsonl:2: bad 2", "  j.jsonl:3: bad 3"]
    assert more[4:] == ["  … and 4 more"]


def test_whole_documents_and_database_rows_are_not_called_lines() -> None:
    # GIVEN what a mixed read counted: lines of JSONL, whole JSON documents, database rows
    diagnostics = Diagnostics()
    assert diagnostics.read_text() == "0 lines read"
    diagnostics.documents_read = 1
    # THEN one document is one document, not "1 line"
    assert diagnostics.read_text() == "1 JSON document read"
    diagnostics.lines_read, diagnostics.rows_read = 2, 40
    assert diagnostics.read_text() == "2 lines, 1 JSON document and 40 database rows read"
    # AND the trace's accounting names each unit, the lines always
    assert dict(diagnostics.accounting())["documents_read"] == 1
    assert dict(diagnostics.accounting())["rows_read"] == 40
    assert dict(Diagnostics().accounting()).keys() == {
        "lines_read",
        "records_used",
        "records_skipped",
        "warnings",
    }


def test_absorb_adds_documents_and_rows() -> None:
    first, second = Diagnostics(), Diagnostics()
    second.documents_read, second.rows_read = 3, 7
    first.absorb(second)
    assert (first.documents_read, first.rows_read) == (3, 7)


def test_absorb_keeps_which_warnings_were_listed() -> None:
    # A file read in a Diagnostics of its own (a group read twice for its models' ratios)
    # whose first bad usage is listed there: a later one said here is counted, not listed
    # a second time as "the first in this file".
    first, second = Diagnostics(), Diagnostics()
    second.warn_each("j.jsonl", 3, "bad-usage", "usage count is no token count")
    first.absorb(second)
    first.warn_each("j.jsonl", 9, "bad-usage", "usage count is no token count")
    assert [w.line for w in first.warnings] == [3]
    assert first.warning_counts["bad-usage"] == 2


def test_absorb_adds_what_the_other_counted_after_what_this_one_did() -> None:
    """A journal group read on its own (in a worker, or read twice for its models' ratios)
    is added to the run's: every count summed, its failures and listed warnings after this
    one's, the first place of a record type not recognised kept where it was first met
    (the warnings listed: the next test)."""
    from agent_profiler.errors import JournalError

    first, second = _warned(2, keep_first=3), _warned(2, keep_first=3)
    for diagnostics, name in ((first, "j.jsonl"), (second, "k.jsonl")):
        diagnostics.lines_read, diagnostics.documents_read, diagnostics.rows_read = 5, 2, 7
        diagnostics.records_parsed, diagnostics.records_rejected = 4, 1
        diagnostics.skip("claude:progress")
        diagnostics.note("claude:orphan-result")
        diagnostics.not_recognised("claude:new", name, 3)
        diagnostics.failed(JournalError(name, "cannot open: no such file or directory"))
        diagnostics.warn_each(name, 9, "bad-usage", "usage count is no token count")
    second.not_recognised("claude:newer", "k.jsonl", 4)
    first.absorb(second)
    assert [(w.path, w.line) for w in first.warnings] == [
        ("j.jsonl", 1), ("j.jsonl", 2), ("j.jsonl", 9)
    ]  # fmt: skip
    assert first.warning_counts == {"not-json": 2, "bad-shape": 2, "bad-usage": 2}
    assert (first.lines_read, first.documents_read, first.rows_read) == (10, 4, 14)
    assert (first.records_parsed, first.records_rejected) == (8, 2)
    assert first.skipped == {"claude:progress": 2}
    assert first.notes == {"claude:orphan-result": 2}
    assert first.unrecognised == {"claude:new": 2, "claude:newer": 1}
    assert first.unrecognised_at == {"claude:new": "j.jsonl:3", "claude:newer": "k.jsonl:4"}
    assert [f.path for f in first.failures] == ["j.jsonl", "k.jsonl"]
    assert first.listed == {("bad-usage", "j.jsonl"), ("bad-usage", "k.jsonl")}


def test_absorb_lists_the_others_first_warnings_in_the_room_left() -> None:
    first, second = _warned(2, keep_first=3), _warned(3, keep_first=3)
    first.absorb(second)
    assert [w.message for w in first.warnings] == ["bad 1", "bad 2", "bad 1"]
    first.absorb(_warned(1))
    assert len(first.warnings) == 3 and first.warning_total == 6


def test_forget_failed_takes_back_only_the_unreadable_warnings_of_the_files_failed() -> None:
    """A file said on its own `error:` line is not also an `unreadable` warning: that
    warning is taken back, counted out, and the others (another file's `unreadable`, the
    file's other warnings) stay, counted."""
    from agent_profiler.errors import JournalError

    diagnostics = Diagnostics()
    for path in ("a.jsonl", "b.jsonl"):
        diagnostics.warn(path, None, "unreadable", "cannot open: no such file or directory")
    diagnostics.warn("a.jsonl", 3, "not-json", "not JSON (unexpected character)")
    diagnostics.forget_failed([JournalError("a.jsonl", "cannot open: no such file")])
    assert [(w.path, w.kind) for w in diagnostics.warnings] == [
        ("b.jsonl", "unreadable"),
        ("a.jsonl", "not-json"),
    ]
    assert diagnostics.warning_counts == {"unreadable": 1, "not-json": 1}
    diagnostics.forget_failed([JournalError("b.jsonl", "cannot open: no such file")])
    assert diagnostics.warning_counts == {"not-json": 1}
    assert diagnostics.summary_lines()[0] == "1 warning (not-json: 1)"
