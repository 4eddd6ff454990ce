"""The helpers every adapter shares (adapters/common.py): journal times, token counts, sizes,
digests, and the per-file clock with its one outlier rule. Times are those of the real
2026-05-11 Codex rollout (tests/data/journals/codex), edited where the corpus has no example
(a record a day back, a year ahead, undated); the clock is watched through the Codex reader,
where each `user_message` record (line 7, copied) becomes a prompt at the time the clock
gave it, and a warning names the record by path:line."""

from __future__ import annotations

import gzip
import os
import time
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters.common import (
    MS,
    Clock,
    args_digest,
    clock_origin,
    is_damaged_gzip,
    json_text,
    record_time_text,
    reference_time,
    text_field,
    timestamp_ns,
    token_count,
    within_limits,
)
from agent_profiler.diagnostics import LATER, Diagnostics
from agent_profiler.errors import JournalError
from agent_profiler.loader import load
from rules_spy import raw_lines, record, write
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "codex"
PLAIN = DATA / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz"
START = "2026-05-11T08:27:17.495Z"  # line 7, the first user_message
START_NS = 1_778_488_037_495_000_000
DAY = 86_400 * 1_000_000_000


# -- journal times ----------------------------------------------------------------------------


def test_an_iso_time_is_nanoseconds_since_the_epoch() -> None:
    """Line 7's time, the same instant with an offset and naive (UTC), and with microseconds."""
    assert timestamp_ns(record(PLAIN, 7)["timestamp"]) == START_NS
    assert timestamp_ns("2026-05-11T11:27:17.495+03:00") == START_NS
    assert timestamp_ns("2026-05-11T08:27:17.495") == START_NS
    assert timestamp_ns("2026-05-11T08:27:17.495123Z") == START_NS + 123_000
    assert timestamp_ns("2026-05-11T08:27:17.000001Z") == START_NS - 495_000_000 + 1_000


def test_times_a_trace_cannot_hold_are_none() -> None:
    """Not text (Pi's epoch milliseconds), not a date, before 1970, or past 2262 (Perfetto's
    unsigned 64-bit nanoseconds); the Unix epoch itself and the last microsecond before
    2**63 ns are times."""
    assert timestamp_ns(1_778_488_037_495) is None
    assert timestamp_ns(None) is None
    assert timestamp_ns("yesterday") is None
    assert timestamp_ns("1969-12-31T23:59:59.999999Z") is None
    assert timestamp_ns("1970-01-01T00:00:00Z") == 0
    assert timestamp_ns("1970-01-01T00:00:00.000001Z") == 1_000
    assert timestamp_ns("2262-04-11T23:47:16.854775Z") == 9_223_372_036_854_775_000
    assert timestamp_ns("2262-04-11T23:47:16.854776Z") is None


def test_a_record_time_is_written_to_the_second_in_utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Warnings name a record's time in UTC, whatever the machine's time zone."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert record_time_text(START_NS) == "2026-05-11T08:27:17Z"
        assert record_time_text(0) == "1970-01-01T00:00:00Z"
    finally:
        monkeypatch.undo()
        time.tzset()


# -- counts, texts, sizes, digests ------------------------------------------------------------


def test_a_token_count_is_a_non_negative_integer_below_10_to_the_15() -> None:
    """Line 10's input_tokens is a count; a boolean, a negative, a float, a string, None or
    anything from 10**15 up is damage and counts as 0."""
    usage = record(PLAIN, 10)["payload"]["info"]["last_token_usage"]
    assert token_count(usage["input_tokens"]) == 18_703
    assert token_count(10**15 - 1) == 10**15 - 1
    for damaged in (True, False, -5, 12.0, "12", None, 10**15, [3]):
        assert token_count(damaged) == 0, damaged


def test_a_text_field_is_only_ever_a_string() -> None:
    line = record(PLAIN, 7)
    assert text_field(line, "type") == "event_msg"
    assert text_field(line["payload"], "images") is None  # a list where text belongs
    assert text_field(line, "missing") is None


def test_json_text_is_compact_and_survives_nesting_orjson_cannot_write() -> None:
    """Line 197's search action as compact JSON; a list nested 300 deep (orjson writes at
    most 255 levels) is measured by its repr instead of failing the export."""
    action = record(PLAIN, 197)["payload"]["action"]
    assert json_text(action) == (
        '{"type":"search","query":"OpenCode config compact context percentage compact '
        'threshold env var OPENCODE_CONFIG_CONTENT","queries":["OpenCode config compact '
        'context percentage compact threshold env var OPENCODE_CONFIG_CONTENT","opencode '
        'config autocompact compact threshold context"]}'
    )
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    assert json_text(deep) == repr(deep)


def test_an_arguments_digest_ignores_key_order_and_tells_inputs_apart() -> None:
    """Line 9's exec_command arguments: the same keys in another order have the same
    16-hex-digit digest; another command has another; inputs too deep for JSON are told apart
    by their repr."""
    arguments: dict[str, Any] = {
        "cmd": "sed -n '1,180p' SKILL.md",
        "workdir": "/Users/Sample_User/repos",
        "yield_time_ms": 1000,
    }
    reordered = dict(reversed(list(arguments.items())))
    digest = args_digest(arguments)
    assert len(digest) == 16 and int(digest, 16) >= 0
    assert args_digest(reordered) == digest
    assert args_digest({**arguments, "cmd": "ls"}) != digest
    deep_a: Any = "a"
    deep_b: Any = "b"
    for _ in range(300):
        deep_a, deep_b = [deep_a], [deep_b]
    assert args_digest(deep_a) == args_digest(json_loads_copy(deep_a))
    assert args_digest(deep_a) != args_digest(deep_b)


def json_loads_copy(value: Any) -> Any:
    """An equal but distinct copy of a nested list (no recursion limit)."""
    depth = 0
    while isinstance(value, list):
        value, depth = value[0], depth + 1
    for _ in range(depth):
        value = [value]
    return value


def test_a_damaged_gzip_is_told_from_a_readable_or_missing_file(tmp_path: Path) -> None:
    """The real gzipped rollout is readable; the same cut after 20 bytes is damaged; cut
    after 60,000 of its 165,648 bytes it still gives its head, so it is not (the reader
    names its damage later); a missing file and a plain-text file are not damaged gzips."""
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(raw_lines(PLAIN)[0].encode())[:20])
    late = tmp_path / "late.json.gz"
    late.write_bytes(PLAIN.read_bytes()[:60_000])
    assert is_damaged_gzip(late) is False
    plain = tmp_path / "plain.json"
    plain.write_text(raw_lines(PLAIN)[0])
    assert is_damaged_gzip(cut) is True
    assert is_damaged_gzip(PLAIN) is False
    assert is_damaged_gzip(plain) is False
    assert is_damaged_gzip(tmp_path / "missing.json.gz") is False


# -- the clock, watched through the Codex reader ----------------------------------------------


def _prompt_line(stamp: object) -> dict[str, Any]:
    line = record(PLAIN, 7)
    if stamp is ...:
        line.pop("timestamp")
    else:
        line["timestamp"] = stamp
    return line


def _placed(tmp_path: Path, stamps: list[object]) -> tuple[list[int], list[str], Path]:
    """Where the clock puts one user_message per stamp (`...`: no timestamp key), and the
    warnings, as `path:line: message` (a missing time is `bad-timestamp`, a far one
    `time-outlier`)."""
    path = write(tmp_path, [_prompt_line(s) for s in stamps])
    diagnostics = Diagnostics()
    result = load([path], diagnostics)
    assert result.failures == []
    (session,) = result.sessions
    for warning in diagnostics.warnings:
        kind = "bad-timestamp" if "missing" in warning.message else "time-outlier"
        assert warning.kind == kind, warning
    return [p.start_ns for p in session.prompts], [str(w) for w in diagnostics.warnings], path


def test_an_undated_record_is_placed_1_ms_after_the_one_before(tmp_path: Path) -> None:
    """Two undated records after line 7 (no key, then an unreadable time): 1 ms apart; the
    first is listed by path:line, and each is counted (one warning said one of many)."""
    times, warnings, path = _placed(tmp_path, [START, ..., "soon"])
    assert times == [START_NS, START_NS + MS, START_NS + 2 * MS]
    assert warnings == [
        f"{path}:2: missing or unreadable timestamp; placed 1 ms after the previous record "
        f"(the first in this file; {LATER})"
    ]


def test_undated_records_before_the_first_dated_one_end_just_before_it(tmp_path: Path) -> None:
    times, warnings, path = _placed(tmp_path, [None, None, START])
    assert times == [START_NS - 2 * MS, START_NS - MS, START_NS]
    assert warnings == [
        f"{path}:1: missing or unreadable timestamp; placed 1 ms after the previous record "
        f"(the first in this file; {LATER})"
    ]


def test_a_journal_without_any_time_ends_when_the_file_was_last_written(tmp_path: Path) -> None:
    path = write(tmp_path, [_prompt_line(None) for _ in range(3)])
    os.utime(path, ns=(START_NS, START_NS))
    result = load([path], Diagnostics())
    (session,) = result.sessions
    assert [p.start_ns for p in session.prompts] == [
        START_NS - 3 * MS,
        START_NS - 2 * MS,
        START_NS - MS,
    ]


def test_a_record_a_day_or_more_back_is_an_outlier(tmp_path: Path) -> None:
    """Line 7, then a record exactly one day back (believed: a day is the limit), then one
    a day and a millisecond back of that (an outlier, placed 1 ms after it)."""
    day_back = "2026-05-10T08:27:17.495Z"
    times, warnings, path = _placed(tmp_path, [START, day_back, "2026-05-09T08:27:17.494Z"])
    assert times == [START_NS, START_NS - DAY, START_NS - DAY + MS]
    assert warnings == [
        f"{path}:3: timestamp 2026-05-09T08:27:17Z is 1 day before the record before it; "
        "placed just after that record"
    ]


HONEST = [START, "2026-05-11T08:27:18.495Z", "2026-05-11T08:27:19.495Z"]  # the head agrees
LAST_NS = START_NS + 2_000 * MS


def test_a_record_more_than_a_year_ahead_is_an_outlier(tmp_path: Path) -> None:
    """After an honest head: exactly 365 days ahead is believed (a session resumed after a
    holiday); 365 days and 1 ms ahead of that is not, and its warning says how far after."""
    year = "2027-05-11T08:27:19.495Z"
    times, warnings, path = _placed(tmp_path, [*HONEST, year, "2028-05-10T08:27:19.496Z", year])
    ahead = LAST_NS + 365 * DAY
    assert times[3:] == [ahead, ahead + MS, ahead]
    assert warnings == [
        f"{path}:5: timestamp 2028-05-10T08:27:19Z is 365 days after the record before it; "
        "placed just after that record"
    ]


def test_two_records_in_a_row_at_a_new_time_are_a_real_jump(tmp_path: Path) -> None:
    """A session resumed two years later: the first record at the new time is doubted, the
    second (exactly a day after it: within the limit) is believed, and the clock follows."""
    later = "2028-05-11T08:27:19.495Z"
    later_ns = LAST_NS + 731 * DAY
    times, warnings, _ = _placed(tmp_path, [*HONEST, later, "2028-05-12T08:27:19.495Z", later])
    assert times[3:] == [LAST_NS + MS, later_ns + DAY, later_ns]
    assert len(warnings) == 1


def test_a_second_lie_more_than_a_day_from_the_first_is_doubted_too(tmp_path: Path) -> None:
    later = "2028-05-11T08:27:19.495Z"
    times, warnings, _ = _placed(tmp_path, [*HONEST, later, "2028-05-12T08:27:19.496Z"])
    assert times[3:] == [LAST_NS + MS, LAST_NS + 2 * MS]
    assert len(warnings) == 2


def test_a_lone_lie_between_honest_records_is_doubted_each_time(tmp_path: Path) -> None:
    """Two lies two years ahead, each between honest records: the honest record between them
    clears the first, so the second is doubted too (not taken for a real jump)."""
    lie = "2028-05-11T08:27:19.495Z"
    honest = "2026-05-11T08:27:20.495Z"
    times, warnings, _ = _placed(tmp_path, [*HONEST, lie, honest, lie, honest])
    after = LAST_NS + 1_000 * MS
    assert times[3:] == [LAST_NS + MS, after, after + MS, after]
    assert len(warnings) == 2


def test_a_time_before_2000_is_never_believed(tmp_path: Path) -> None:
    """The Unix epoch after line 7 (and a zeroed clock twice in a row, which is no jump), and
    2000-01-01 itself, which is a time (the earliest plausible one)."""
    times, warnings, path = _placed(
        tmp_path, [START, "1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z"]
    )
    assert times == [START_NS, START_NS + MS, START_NS + 2 * MS]
    assert warnings == [
        f"{path}:{line}: timestamp 1970-01-01T00:00:00Z is 20,584 days before the record "
        "before it; placed just after that record"
        for line in (2, 3)
    ]
    millennium = 946_684_800 * 1_000_000_000
    (first, *_), none, _ = _placed(tmp_path, ["2000-01-01T00:00:00Z", "2000-01-01T00:00:01Z"])
    assert (first, none) == (millennium, [])


def test_a_lie_on_the_first_record_is_judged_by_its_neighbours(tmp_path: Path) -> None:
    """Line 1 dated 2099, the next two honest: the median of the first three times is the
    reference, so the lie is named as far from the times around it, and is placed where an
    undated first record goes: 1 ms before the first honest one."""
    times, warnings, path = _placed(
        tmp_path, ["2099-06-01T00:00:00Z", START, "2026-05-11T08:27:18.495Z"]
    )
    assert times == [START_NS - MS, START_NS, START_NS + 1_000 * MS]
    assert warnings == [
        f"{path}:1: timestamp 2099-06-01T00:00:00Z is 26,684 days from the times around it; "
        "placed just after that record"
    ]


def test_an_epoch_time_with_nothing_to_judge_it_by_is_before_2000(tmp_path: Path) -> None:
    times, warnings, path = _placed(tmp_path, ["1970-01-01T00:00:00Z", ...])
    assert warnings[0] == (
        f"{path}:1: timestamp 1970-01-01T00:00:00Z is before 2000, so not a real time; "
        "placed just after that record"
    )
    assert times[1] == times[0] + MS


# -- the clock's other callers: synthetic steps, named records --------------------------------


def test_a_clock_with_its_own_spacing_and_record_names() -> None:
    """A synthetic timeline (Claude Code stream-json) steps by the journal's own durations;
    a document without lines (a Gemini CLI session) names the record in its warnings."""
    diagnostics = Diagnostics()
    clock = Clock(
        "session.json",
        diagnostics,
        expect_timestamps=True,
        origin_ns=START_NS,
        spacing=lambda line: line * 10 * MS,
        record_name=lambda line: f"messages[{line - 1}]",
    )
    assert clock.place(None, 1) == START_NS
    assert clock.place(None, 2) == START_NS + 20 * MS
    assert clock.place(0, 3) == START_NS + 50 * MS
    assert [str(w) for w in diagnostics.warnings] == [
        "session.json: messages[0]: missing or unreadable timestamp; placed 1 ms after the "
        f"previous record (the first in this file; {LATER})",
        "session.json: messages[2]: timestamp 1970-01-01T00:00:00Z is before 2000, so not a "
        "real time; placed just after that record",
    ]
    assert [(w.line, w.kind) for w in diagnostics.warnings] == [
        (None, "bad-timestamp"),
        (None, "time-outlier"),
    ]


def test_a_clock_that_expects_no_times_does_not_warn() -> None:
    diagnostics = Diagnostics()
    clock = Clock("stream.jsonl", diagnostics, expect_timestamps=False)
    assert [clock.place(None, n) for n in (1, 2, 3)] == [0, MS, 2 * MS]
    assert diagnostics.warnings == []


def test_the_reference_is_the_median_of_the_first_three_plausible_times() -> None:
    t = [START_NS + n * MS for n in range(4)]
    assert reference_time([t[3], t[0], t[1], t[2]]) == t[1]  # of t3, t0, t1: a fourth is late
    assert reference_time([t[2], t[0], t[1]]) == t[1]
    assert reference_time([None, 0, t[0], t[1]]) == t[1]  # of two, the later
    assert reference_time([t[0]]) == t[0]
    assert reference_time([None, 0]) is None


def test_within_limits_is_the_outlier_rule_beside_one_reference() -> None:
    assert within_limits(START_NS, None) is True
    assert within_limits(START_NS - DAY, START_NS) is True
    assert within_limits(START_NS - DAY - 1, START_NS) is False
    assert within_limits(START_NS + 365 * DAY, START_NS) is True
    assert within_limits(START_NS + 365 * DAY + 1, START_NS) is False
    assert within_limits(946_684_800 * 1_000_000_000, None) is True
    assert within_limits(946_684_800 * 1_000_000_000 - 1, None) is False


def test_the_origin_of_undated_records(tmp_path: Path) -> None:
    """1 ms per undated record before the first dated one that is plausible and near the
    reference; with none, before the file's modification time (0 for a missing file)."""
    lines = [{"type": "x"}, "not a record", {"timestamp": "1999-12-31T23:59:59Z"}]
    lines += [{"timestamp": "2099-01-01T00:00:00Z"}, {"timestamp": START}]
    assert clock_origin(lines, PLAIN, START_NS) == START_NS - 4 * MS
    assert clock_origin(lines, PLAIN) == timestamp_ns("2099-01-01T00:00:00Z") - 3 * MS
    path = tmp_path / "undated.jsonl"
    path.write_text("{}\n")
    os.utime(path, ns=(START_NS, START_NS))
    assert clock_origin([{}, {}], path) == START_NS - 2 * MS
    assert clock_origin([{}, {}], tmp_path / "missing.jsonl") == 0
    assert clock_origin([], path) == START_NS
    assert clock_origin([], tmp_path / "missing.jsonl") == 0


@pytest.mark.parametrize("stamp", ["2026-05-11T08:27:17.495Z", None])
def test_a_journal_clock_names_its_warnings_by_the_given_source(
    tmp_path: Path, stamp: str | None
) -> None:
    from agent_profiler.adapters.common import journal_clock

    path = write(tmp_path, [_prompt_line(None), _prompt_line(stamp)])
    diagnostics = Diagnostics()
    clock = journal_clock(path, diagnostics, "shown-name.jsonl")
    assert clock.place(None, 1) == (START_NS - MS if stamp else clock.origin_ns)
    assert [(w.path, w.line, w.kind) for w in diagnostics.warnings] == [
        ("shown-name.jsonl", 1, "bad-timestamp")
    ]
    assert clock.reference_ns == (START_NS if stamp else None)
    default = journal_clock(path, Diagnostics())
    assert default.path == str(path)


def test_a_records_time_is_timestamp_ns_placed_by_the_clock() -> None:
    """`Clock.time` parses the usual timestamp itself (inline, once a line): whatever the
    value, it gives what `place(timestamp_ns(value))` gives, with the same warnings."""
    values: list[object] = [
        "2026-02-23T11:54:58.922Z",
        "2026-02-23T11:54:58.922Z",  # the same again
        "2026-02-23T17:24:59.5+05:30",  # an offset
        "2026-02-23T11:55:00",  # naive: UTC
        "2026-02-23T11:55:00.123456Z",
        "2026-02-30T00:00:00Z",  # no such day
        "garbage",
        "",
        None,
        1771847698,
        "1969-12-31T23:59:59.999999Z",  # before the epoch
        "1999-12-31T23:59:59Z",  # before 2000: an outlier
        "2262-04-11T23:47:16.854776Z",  # past 2**63 ns
        "2026-02-20T11:55:00Z",  # three days back: an outlier
        "2026-02-20T11:55:01Z",  # … and again: a real jump
        "2026-02-20T11:55:02-00:00",
    ]
    got, expected = Diagnostics(), Diagnostics()
    clock = Clock("x.jsonl", got, expect_timestamps=True)
    reference = Clock("x.jsonl", expected, expect_timestamps=True)
    times = [clock.time({"timestamp": value}, line) for line, value in enumerate(values, 1)]
    assert times == [
        reference.place(timestamp_ns(value), line) for line, value in enumerate(values, 1)
    ]
    assert [(w.line, w.kind, w.message) for w in got.warnings] == [
        (w.line, w.kind, w.message) for w in expected.warnings
    ]
    assert got.warning_counts == expected.warning_counts and len(got.warnings) >= 3


def _journals() -> list[Path]:
    """Every JSONL journal of tests/data and the shared corpus (the files the clock reads)."""
    from shared_paths import CORPUS

    found = []
    for root in (TESTS / "data" / "journals", CORPUS):
        for suffix in ("*.jsonl", "*.jsonl.gz"):
            found += sorted(root.rglob(suffix)) if root.is_dir() else []
    return found


def test_the_clock_reads_the_head_only_to_its_third_time_and_finds_the_same() -> None:
    """journal_clock stops at the third plausible time: the reference and the origin are
    those of the whole head (50 records) on every journal of tests/data and the corpus."""
    from agent_profiler.adapters.common import journal_clock
    from agent_profiler.jsonl import sniff
    from shared_paths import CORPUS

    journals = _journals()
    assert len(journals) >= 20
    compared = 0
    for path in journals:
        try:
            head = sniff(path)
        except JournalError:
            continue  # (not a journal: a deliberately broken test file)
        reference = reference_time(
            timestamp_ns(value.get("timestamp")) for value in head if isinstance(value, dict)
        )
        clock = journal_clock(path, Diagnostics())
        assert (clock.reference_ns, clock.origin_ns) == (
            reference,
            clock_origin(head, path, reference),
        ), path
        compared += 1
    assert compared >= (40 if CORPUS.is_dir() else 20)


def test_the_clock_stops_reading_the_head_at_its_third_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent_profiler.adapters.common as common

    taken: list[object] = []
    real = common.head_values

    def counting(path: Any, max_lines: int = 50) -> Any:
        for value in real(path, max_lines):
            taken.append(value)
            yield value

    monkeypatch.setattr(common, "head_values", counting)
    t = [START_NS + n * MS for n in range(60)]
    stamps = [record_time_text(ts).replace("Z", f".{n:03d}Z") for n, ts in enumerate(t)]
    # GIVEN an undated record, a lie (2099), then dated records
    path = tmp_path / "head.jsonl"
    lines = [{"type": "meta"}, {"timestamp": "2099-01-01T00:00:00Z"}]
    lines += [{"timestamp": stamp} for stamp in stamps[1:]]
    path.write_text("".join(json_text(line) + "\n" for line in lines))
    clock = common.journal_clock(path, Diagnostics())
    # THEN it read up to its third plausible time (2099, then two), no further
    assert len(taken) == 4
    assert clock.reference_ns == timestamp_ns(stamps[2])
    assert clock.origin_ns == timestamp_ns(stamps[1]) - 2 * MS
    # AND with fewer than three times it reads the whole head
    taken.clear()
    path.write_text("".join(json_text({"n": n}) + "\n" for n in range(60)))
    os.utime(path, ns=(START_NS, START_NS))
    clock = common.journal_clock(path, Diagnostics())
    assert len(taken) == 50
    assert clock.origin_ns == START_NS - 50 * MS
