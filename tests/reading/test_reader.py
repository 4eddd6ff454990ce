"""The shared JSONL reader: streaming, splitting, decoding, hostile lines, gzip, refusals."""

from __future__ import annotations

import errno
import gc
import gzip
import io
import os
import threading
from collections.abc import Generator
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_profiler import jsonl, jsonl_open
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import DamagedJournalError, JournalError
from agent_profiler.jsonl import (
    NOT_JOURNAL_MESSAGE,
    PROBE_LINES,
    TRUNCATED_MESSAGE,
    UTF16_MESSAGE,
    Record,
    open_journal,
    read_jsonl,
    sniff,
)

OK1 = b'{"n": 1}'
OK2 = b'{"n": 2}'


def _write(tmp_path: Path, data: bytes, name: str = "journal.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _read(path: Path) -> tuple[list[Record], Diagnostics]:
    diagnostics = Diagnostics()
    # read_jsonl yields plain (line, value) pairs shaped as Record
    return [Record(*pair) for pair in read_jsonl(path, diagnostics)], diagnostics


def _warnings(diagnostics: Diagnostics) -> list[tuple[int | None, str]]:
    return [(w.line, w.kind) for w in diagnostics.warnings]


def _gzip(lines: list[bytes]) -> bytes:
    return gzip.compress(b"".join(line + b"\n" for line in lines), mtime=0)


# --- splitting and line numbers ----------------------------------------------------------


def test_records_carry_1_based_line_numbers_across_blank_lines(tmp_path: Path) -> None:
    # GIVEN two records separated by an empty line and a whitespace-only line
    path = _write(tmp_path, OK1 + b"\n\n  \t \n" + OK2 + b"\n\n")
    # WHEN read
    records, diagnostics = _read(path)
    # THEN only the records come back, numbered as in the file, silently
    assert records == [Record(1, {"n": 1}), Record(4, {"n": 2})]
    assert diagnostics.lines_read == 2
    assert diagnostics.warning_total == 0


def test_unicode_line_separators_inside_strings_do_not_split_records(tmp_path: Path) -> None:
    # GIVEN raw U+2028, U+2029 and U+0085 inside JSON strings (legal JSON; str.splitlines
    # would cut these records into pieces)
    texts = ["a\u2028b", "c\u2029d", "e\u0085f"]
    path = _write(tmp_path, b"".join(orjson.dumps({"t": t}) + b"\n" for t in texts))
    assert "\u2028".encode() in path.read_bytes()  # really raw, not \\u escapes
    # WHEN read
    records, diagnostics = _read(path)
    # THEN three intact records on lines 1-3
    assert records == [Record(i + 1, {"t": t}) for i, t in enumerate(texts)]
    assert diagnostics.warning_total == 0


def test_crlf_line_endings_are_stripped(tmp_path: Path) -> None:
    path = _write(tmp_path, OK1 + b"\r\n\r\n" + b'{"s": "x"}\r\n')
    records, diagnostics = _read(path)
    assert records == [Record(1, {"n": 1}), Record(3, {"s": "x"})]
    assert diagnostics.warning_total == 0


def test_utf8_bom_at_file_start_is_removed(tmp_path: Path) -> None:
    path = _write(tmp_path, b"\xef\xbb\xbf" + OK1 + b"\n" + OK2 + b"\n")
    records, diagnostics = _read(path)
    assert records == [Record(1, {"n": 1}), Record(2, {"n": 2})]
    assert diagnostics.warning_total == 0


def test_non_object_values_are_passed_through_for_the_adapter_to_judge(tmp_path: Path) -> None:
    path = _write(tmp_path, OK1 + b'\n42\n"s"\n[1]\n')
    records, _ = _read(path)
    assert [r.value for r in records] == [{"n": 1}, 42, "s", [1]]


def test_huge_single_line_of_5_mb_parses(tmp_path: Path) -> None:
    # GIVEN one ~5 MB record between two small ones
    big = "x" * 5_000_000
    path = _write(tmp_path, OK1 + b"\n" + orjson.dumps({"big": big}) + b"\n" + OK2 + b"\n")
    # WHEN read
    records, diagnostics = _read(path)
    # THEN all three parse, the big one intact
    assert [r.line for r in records] == [1, 2, 3]
    assert records[1].value == {"big": big}
    assert diagnostics.warning_total == 0


# --- decoding ----------------------------------------------------------------------------


def test_bad_utf8_is_replaced_and_warned_once_per_file(tmp_path: Path) -> None:
    # GIVEN stray 0xff bytes mid-line on lines 2 and 4
    path = _write(tmp_path, OK1 + b'\n{"s": "a\xffb"}\n' + OK2 + b'\n{"s": "\xff"}\n')
    # WHEN read
    records, diagnostics = _read(path)
    # THEN every record survives with U+FFFD, and ONE warning names the first line
    assert records == [
        Record(1, {"n": 1}),
        Record(2, {"s": "a\ufffdb"}),
        Record(3, {"n": 2}),
        Record(4, {"s": "\ufffd"}),
    ]
    assert _warnings(diagnostics) == [(2, "bad-utf8")]
    assert dict(diagnostics.warning_counts) == {"bad-utf8": 1}
    assert str(diagnostics.warnings[0]).startswith(f"{path}:2: invalid UTF-8")


def test_bad_utf8_on_a_line_that_is_not_json_either(tmp_path: Path) -> None:
    path = _write(tmp_path, OK1 + b"\ngarb\xffage\n" + OK2 + b"\n")
    records, diagnostics = _read(path)
    assert [r.line for r in records] == [1, 3]
    assert _warnings(diagnostics) == [(2, "bad-utf8"), (2, "not-json")]
    # The reason is the parser's, for the line as read again with the bad byte replaced.
    try:
        orjson.loads("garb\ufffdage")
    except orjson.JSONDecodeError as error:
        reason = f"{error.msg} at column {error.colno}"
    assert diagnostics.warnings[1].message == f"not JSON ({reason})"


def test_a_long_reason_is_cut_to_the_limit_with_an_ellipsis() -> None:
    reason = jsonl_open.reason(OSError("x" * 200))
    assert len(reason) == jsonl_open.REASON_LIMIT and reason == "x" * 79 + "…"
    assert jsonl_open.reason(OSError("x" * 80)) == "x" * 80


def test_an_error_without_a_message_is_said_by_its_kind() -> None:
    # (a decompressor's bare EOFError: a warning never ends in "()")
    assert jsonl_open.reason(EOFError()) == "EOFError"


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"\xff\xfe" + '{"a": 1}\n'.encode("utf-16-le"), id="utf16-le-bom"),
        pytest.param(b"\xfe\xff" + '{"a": 1}\n'.encode("utf-16-be"), id="utf16-be-bom"),
        pytest.param('{"a": 1}\r\n{"b": 2}\r\n'.encode("utf-16-le"), id="utf16-le-no-bom"),
        pytest.param('{"a": 1}\n'.encode("utf-16-be"), id="utf16-be-no-bom"),
    ],
)
def test_utf16_files_are_refused_before_anything_is_yielded(tmp_path: Path, data: bytes) -> None:
    path = _write(tmp_path, data)
    diagnostics = Diagnostics()
    records = read_jsonl(path, diagnostics)
    with pytest.raises(JournalError) as caught:
        next(records)
    assert caught.value.message == UTF16_MESSAGE
    assert caught.value.line is None
    assert str(caught.value) == f"{path}: {UTF16_MESSAGE}"
    assert diagnostics.lines_read == 0
    with pytest.raises(JournalError, match="UTF-16"):
        sniff(path)


# --- hostile lines -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "hostile",
    [
        pytest.param(b"1" * 5_000, id="5000-digit-integer"),
        pytest.param(b'{"n": ' + b"9" * 5_000 + b"}", id="5000-digit-integer-in-object"),
        pytest.param(b"[" * 100_000, id="100000-nested-brackets"),
        pytest.param(b"[" * 100_000 + b"]" * 100_000, id="100000-nested-balanced"),
        pytest.param(b"Infinity", id="Infinity"),
        pytest.param(b'{"x": -Infinity}', id="minus-Infinity"),
        pytest.param(b"NaN", id="NaN"),
        pytest.param(b'{"x": NaN}', id="NaN-in-object"),
        pytest.param(b'{"a": 1,}', id="trailing-comma"),
        pytest.param(b"{'a': 1}", id="single-quotes"),
    ],
)
def test_a_hostile_line_is_one_not_json_warning_and_reading_goes_on(
    tmp_path: Path, hostile: bytes
) -> None:
    # GIVEN a hostile line between two good ones
    path = _write(tmp_path, OK1 + b"\n" + hostile + b"\n" + OK2 + b"\n")
    # WHEN read
    records, diagnostics = _read(path)
    # THEN it is skipped with exactly one warning formatted path:line: not JSON (reason)
    assert records == [Record(1, {"n": 1}), Record(3, {"n": 2})]
    assert _warnings(diagnostics) == [(2, "not-json")]
    text = str(diagnostics.warnings[0])
    assert text.startswith(f"{path}:2: not JSON (")
    assert text.endswith(")")
    assert len(text) < len(str(path)) + 120  # a short reason, not the line echoed back
    assert diagnostics.lines_read == 3


def test_hostile_lines_of_a_peer_review_all_in_one_file(tmp_path: Path) -> None:
    # GIVEN a BOM, CRLF endings, separators in strings, a stray 0xff, and the
    # unparseable classics, in one file
    lines = [
        b"\xef\xbb\xbf" + OK1,  # 1
        '{"t": "\u2028\u2029\u0085"}'.encode(),  # 2
        b'{"s": "\xff"}',  # 3
        b"Infinity",  # 4
        b"NaN",  # 5
        b"7" * 5_000,  # 6
        b"[" * 100_000,  # 7
        b"",  # 8
        OK2,  # 9
    ]
    path = _write(tmp_path, b"".join(line + b"\r\n" for line in lines))
    # WHEN read
    records, diagnostics = _read(path)
    # THEN the exact outcome
    assert records == [
        Record(1, {"n": 1}),
        Record(2, {"t": "\u2028\u2029\u0085"}),
        Record(3, {"s": "\ufffd"}),
        Record(9, {"n": 2}),
    ]
    assert _warnings(diagnostics) == [
        (3, "bad-utf8"),
        (4, "not-json"),
        (5, "not-json"),
        (6, "not-json"),
        (7, "not-json"),
    ]
    assert dict(diagnostics.warning_counts) == {"bad-utf8": 1, "not-json": 4}
    assert diagnostics.lines_read == 8


# --- the last line -----------------------------------------------------------------------


def test_truncated_last_line_is_one_truncated_warning(tmp_path: Path) -> None:
    # GIVEN a journal still being written: the last line is cut off, no newline
    path = _write(tmp_path, OK1 + b'\n{"type": "assist')
    # WHEN read
    records, diagnostics = _read(path)
    # THEN the complete record is kept and one "truncated-last-line" warning, no not-json
    assert records == [Record(1, {"n": 1})]
    assert _warnings(diagnostics) == [(2, "truncated-last-line")]
    assert str(diagnostics.warnings[0]) == f"{path}:2: {TRUNCATED_MESSAGE}"
    assert "incomplete" in TRUNCATED_MESSAGE
    assert diagnostics.lines_read == 2


def test_complete_last_line_without_newline_parses(tmp_path: Path) -> None:
    path = _write(tmp_path, OK1 + b"\n" + OK2)
    records, diagnostics = _read(path)
    assert records == [Record(1, {"n": 1}), Record(2, {"n": 2})]
    assert diagnostics.warning_total == 0


def test_unparseable_line_with_newline_at_the_end_is_not_json_not_truncated(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path, OK1 + b'\n{"type": "assist\n')
    _, diagnostics = _read(path)
    assert _warnings(diagnostics) == [(2, "not-json")]


def test_non_json_text_as_last_line_without_newline_is_not_json(tmp_path: Path) -> None:
    # A last line that does not even start like JSON was never a record being written.
    path = _write(tmp_path, OK1 + b"\nsegfault (core dumped)")
    _, diagnostics = _read(path)
    assert _warnings(diagnostics) == [(2, "not-json")]


def test_only_record_still_being_written_is_not_refused(tmp_path: Path) -> None:
    # GIVEN a journal whose very first record is still being written
    path = _write(tmp_path, b'{"type": "user", "mess')
    # WHEN read / sniffed
    records, diagnostics = _read(path)
    # THEN no records, one truncated warning, and no JournalError
    assert records == []
    assert _warnings(diagnostics) == [(1, "truncated-last-line")]
    assert sniff(path) == []


# --- journal or not ----------------------------------------------------------------------


@pytest.mark.parametrize("data", [b"", b"\n\n  \r\n\t\n", b"\xef\xbb\xbf\n"])
def test_empty_file_yields_nothing_and_raises_nothing(tmp_path: Path, data: bytes) -> None:
    path = _write(tmp_path, data)
    records, diagnostics = _read(path)
    assert records == []
    assert diagnostics.warning_total == 0
    assert diagnostics.lines_read == 0
    assert sniff(path) == []


def test_stream_json_with_debug_lines_merged_in_is_a_journal_with_warnings(
    tmp_path: Path,
) -> None:
    # GIVEN `claude -p` stream-json with stderr [DEBUG] lines interleaved, first line garbage
    lines = [b"[DEBUG] starting", b"[DEBUG] config ok", OK1, b"[DEBUG] tool", OK2]
    path = _write(tmp_path, b"".join(line + b"\n" for line in lines))
    # WHEN read
    records, diagnostics = _read(path)
    # THEN the frames come through and each debug line is a not-json warning, in order
    assert records == [Record(3, {"n": 1}), Record(5, {"n": 2})]
    assert _warnings(diagnostics) == [(1, "not-json"), (2, "not-json"), (4, "not-json")]
    assert str(diagnostics.warnings[0]).startswith(f"{path}:1: not JSON (")
    assert diagnostics.lines_read == 5
    assert sniff(path) == [{"n": 1}, {"n": 2}]


def test_text_file_is_refused_naming_its_first_non_blank_line(tmp_path: Path) -> None:
    # GIVEN prose, with a blank first line
    path = _write(tmp_path, b"\n# Notes\n\nThis is not a journal.\n")
    diagnostics = Diagnostics()
    # WHEN read / sniffed
    with pytest.raises(JournalError) as caught:
        next(read_jsonl(path, diagnostics))
    # THEN one JournalError at line 2, and no stray warnings from the probe
    assert caught.value.message == NOT_JOURNAL_MESSAGE
    assert caught.value.line == 2
    assert str(caught.value) == f"{path}:2: {NOT_JOURNAL_MESSAGE}"
    assert diagnostics.warning_total == 0
    with pytest.raises(JournalError, match="not a JSONL journal"):
        sniff(path)


def test_json_scalars_only_are_not_a_journal(tmp_path: Path) -> None:
    path = _write(tmp_path, b'1\n2\n"three"\n')
    with pytest.raises(JournalError, match="not a JSONL journal"):
        _read(path)


def test_the_probe_limit_decides_between_journal_and_not(tmp_path: Path) -> None:
    # GIVEN one file with PROBE_LINES - 1 garbage lines before JSON, one with PROBE_LINES
    almost = _write(tmp_path, b"junk\n" * (PROBE_LINES - 1) + OK1 + b"\n", "almost.jsonl")
    too_many = _write(tmp_path, b"junk\n" * PROBE_LINES + OK1 + b"\n", "too-many.jsonl")
    # WHEN read
    records, diagnostics = _read(almost)
    # THEN the first is a journal with one warning per garbage line; the second is refused
    assert records == [Record(PROBE_LINES, {"n": 1})]
    assert dict(diagnostics.warning_counts) == {"not-json": PROBE_LINES - 1}
    with pytest.raises(JournalError) as caught:
        _read(too_many)
    assert caught.value.line == 1


def test_binary_file_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 40)
    with pytest.raises(JournalError) as caught:
        _read(path)
    assert caught.value.message == NOT_JOURNAL_MESSAGE
    assert caught.value.line == 1
    with pytest.raises(JournalError, match="not a JSONL journal"):
        sniff(path)


def test_nul_before_any_record_is_refused_naming_its_line(tmp_path: Path) -> None:
    # GIVEN NUL bytes on line 3, after a line holding only a BOM and a blank line, and good
    # records after them (and more NUL): what comes first decides
    path = _write(tmp_path, jsonl.UTF8_BOM + b"\n\n\x00\x00\n" + OK1 + b"\n\x00\n")
    # WHEN read, THEN refused as binary, at the first line that is not blank
    with pytest.raises(JournalError) as caught:
        _read(path)
    assert caught.value.message == NOT_JOURNAL_MESSAGE
    assert caught.value.line == 3


def test_nul_block_after_good_records_is_a_journal_with_a_warning(tmp_path: Path) -> None:
    # GIVEN a journal after a crash: a NUL-filled block after two good records
    path = _write(tmp_path, OK1 + b"\n" + OK2 + b"\n" + b"\x00" * 4096 + b"\n" + OK1 + b"\n")
    # WHEN read
    records, diagnostics = _read(path)
    # THEN the good records survive and the NUL line is one not-json warning
    assert [r.line for r in records] == [1, 2, 4]
    assert _warnings(diagnostics) == [(3, "not-json")]


def test_huge_first_line_that_is_not_json_is_refused_without_reading_it(
    tmp_path: Path,
) -> None:
    # GIVEN a first line longer than the peeked head, not starting like JSON
    path = _write(tmp_path, b"x" * (jsonl.HEAD_BYTES + 10) + b"\n" + OK1 + b"\n")
    # WHEN read, THEN refused from the head alone
    with pytest.raises(JournalError) as caught:
        _read(path)
    assert caught.value.line == 1


# --- gzip and paths ----------------------------------------------------------------------


def test_gzip_is_read_transparently(tmp_path: Path) -> None:
    path = _write(tmp_path, _gzip([OK1, b"", OK2]), "journal.jsonl.gz")
    records, diagnostics = _read(path)
    assert records == [Record(1, {"n": 1}), Record(3, {"n": 2})]
    assert diagnostics.warning_total == 0
    assert sniff(path) == [{"n": 1}, {"n": 2}]


def test_gzip_is_detected_by_magic_bytes_not_suffix(tmp_path: Path) -> None:
    # GIVEN a gzip journal without .gz and a plain journal named .gz
    zipped = _write(tmp_path, _gzip([OK1]), "zipped.jsonl")
    plain = _write(tmp_path, OK2 + b"\n", "plain.jsonl.gz")
    # WHEN read, THEN both parse
    assert _read(zipped)[0] == [Record(1, {"n": 1})]
    assert _read(plain)[0] == [Record(1, {"n": 2})]


def test_gzip_with_bom_crlf_and_separators(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf" + '{"t": "\u2028"}\r\n'.encode() + OK2 + b"\r\n"
    path = _write(tmp_path, gzip.compress(data), "j.jsonl.gz")
    assert _read(path)[0] == [Record(1, {"t": "\u2028"}), Record(2, {"n": 2})]


def test_gzip_utf16_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, gzip.compress(b"\xff\xfe" + '{"a": 1}\n'.encode("utf-16-le")))
    with pytest.raises(JournalError, match="UTF-16"):
        _read(path)


def test_truncated_gzip_keeps_the_records_read_so_far(tmp_path: Path) -> None:
    # GIVEN a gzip journal cut off halfway (a copy interrupted mid-transfer)
    lines = [orjson.dumps({"i": i, "pad": "p" * (i % 50)}) for i in range(3000)]
    whole = _gzip(lines)
    path = _write(tmp_path, whole[: len(whole) // 2], "cut.jsonl.gz")
    # WHEN read
    records, diagnostics = _read(path)
    # THEN a prefix of the records, in order, and one bad-gzip warning, no traceback
    assert 0 < len(records) < len(lines)
    assert [r.line for r in records] == list(range(1, len(records) + 1))
    assert all(r.value == {"i": i, "pad": "p" * (i % 50)} for i, r in enumerate(records))
    assert [w.kind for w in diagnostics.warnings] == ["bad-gzip"]
    assert f"after line {len(records)}" in diagnostics.warnings[0].message
    # AND sniff still returns the values it got
    assert sniff(path)[:2] == [{"i": 0, "pad": ""}, {"i": 1, "pad": "p"}]


def test_gzip_with_corrupt_crc_keeps_records_and_warns(tmp_path: Path) -> None:
    data = bytearray(_gzip([OK1, OK2]))
    data[-8] ^= 0xFF  # the CRC32 in the trailer
    path = _write(tmp_path, bytes(data), "crc.jsonl.gz")
    records, diagnostics = _read(path)
    assert _warnings(diagnostics) == [(None, "bad-gzip")]
    assert len(records) <= 2


def test_gzip_magic_then_garbage_is_a_warning_in_read_and_an_error_in_sniff(
    tmp_path: Path,
) -> None:
    # GIVEN gzip magic bytes followed by garbage
    path = _write(tmp_path, b"\x1f\x8b" + b"garbage" * 10, "bad.jsonl.gz")
    # WHEN read, THEN nothing and one bad-gzip warning, not a traceback
    records, diagnostics = _read(path)
    assert records == []
    assert _warnings(diagnostics) == [(None, "bad-gzip")]
    assert str(diagnostics.warnings[0]).startswith(f"{path}: corrupt or truncated gzip stream")
    assert "at the start" in diagnostics.warnings[0].message
    assert diagnostics.warnings[0].message.endswith("nothing in it could be read")
    # AND sniff, which must say why a file is unusable, raises
    with pytest.raises(JournalError, match="gzip"):
        sniff(path)


@pytest.mark.parametrize("name", ["a |b c.jsonl", "with space|pipe.jsonl.gz"])
def test_paths_with_pipes_and_spaces_work(tmp_path: Path, name: str) -> None:
    data = _gzip([OK1, b"oops"]) if name.endswith(".gz") else OK1 + b"\noops\n"
    path = _write(tmp_path, data, name)
    records, diagnostics = _read(path)
    assert records == [Record(1, {"n": 1})]
    assert str(diagnostics.warnings[0]).startswith(f"{tmp_path / name}:2: not JSON (")
    # str paths work as well as Path objects
    assert [line for line, _ in read_jsonl(str(path), Diagnostics())] == [1]


# --- opening -----------------------------------------------------------------------------


def test_missing_file_is_a_journal_error(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    with pytest.raises(JournalError) as caught:
        open_journal(path)
    assert str(caught.value) == f"{path}: cannot open: no such file or directory"
    with pytest.raises(JournalError, match="no such file"):
        _read(path)
    with pytest.raises(JournalError, match="no such file"):
        sniff(path)


def test_directory_is_a_journal_error(tmp_path: Path) -> None:
    with pytest.raises(JournalError) as caught:
        open_journal(tmp_path)
    assert caught.value.message == "cannot open: is a directory"
    assert caught.value.path == str(tmp_path)


def test_permission_denied_is_a_journal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a file the OS refuses to open (simulated: the tests may run as root)
    path = _write(tmp_path, OK1 + b"\n")
    real_file_io = io.FileIO

    def refusing(name: str, *args: object, **kwargs: object) -> io.FileIO:
        if os.fspath(name) == str(path):
            raise PermissionError(13, "Permission denied", name)
        return real_file_io(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(io, "FileIO", refusing)
    # WHEN opened, THEN a JournalError saying why
    with pytest.raises(JournalError) as caught:
        open_journal(path)
    assert caught.value.message == "cannot open: permission denied"


class _FailingDisk(io.FileIO):
    """A plain file whose disk fails (EIO) once its first `good` bytes are read."""

    good = 0

    def readinto(self, buffer: Any) -> int:
        left = self.good - self.tell()
        if left <= 0:
            raise OSError(errno.EIO, "Input/output error")
        return super().readinto(memoryview(buffer)[:left])


def test_a_read_error_of_a_plain_journal_keeps_the_records_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a plain journal whose disk fails after its first two lines
    path = _write(tmp_path, OK1 + b"\n" + OK2 + b"\n" + OK1 + b"\n")
    monkeypatch.setattr(_FailingDisk, "good", 2 * len(OK1 + b"\n"))
    monkeypatch.setattr(io, "FileIO", _FailingDisk)
    # WHEN read, THEN the two records and one warning that says a read failed (not a
    # compressed stream: the file is plain), and a raw read raises our error saying so
    records, diagnostics = _read(path)
    assert [r.line for r in records] == [1, 2]
    assert [(w.kind, w.message) for w in diagnostics.warnings] == [
        (
            "read-error",
            "read error after line 2 ([Errno 5] Input/output error); records before it are kept",
        )
    ]
    with pytest.raises(DamagedJournalError) as caught, open_journal(path) as stream:
        stream.read()
    assert caught.value.message == "read error ([Errno 5] Input/output error)"


def test_a_journal_whose_disk_fails_at_its_first_read_is_one_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a journal that opens, and whose first read fails (EIO)
    path = _write(tmp_path, OK1 + b"\n")
    monkeypatch.setattr(io, "FileIO", _FailingDisk)
    # WHEN opened to be read, sniffed or read raw, THEN one error: its file and the reason
    for reading in (_read, sniff, open_journal):
        with pytest.raises(JournalError) as caught:
            reading(path)
        assert str(caught.value) == f"{path}: cannot read: input/output error"


def test_an_os_error_without_the_systems_words_is_said_by_its_message_or_kind() -> None:
    """`cannot open: …` / `cannot read: …` take the system's words (`strerror`); an OSError
    raised without them (by a library, not the system) is said by its message, else by its
    kind, the first letter lower case as the system's words are."""
    assert jsonl_open.os_reason(OSError(errno.EIO, "Input/output error")) == "input/output error"
    assert jsonl_open.os_reason(OSError("Stale handle")) == "stale handle"
    assert jsonl_open.os_reason(TimeoutError()) == "timeoutError"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads all")
def test_unreadable_file_is_a_journal_error(tmp_path: Path) -> None:
    path = _write(tmp_path, OK1 + b"\n")
    path.chmod(0)
    with pytest.raises(JournalError, match="permission denied"):
        open_journal(path)


def test_open_journal_decompresses_and_closes_the_underlying_file(tmp_path: Path) -> None:
    path = _write(tmp_path, _gzip([OK1]), "j.jsonl.gz")
    with open_journal(path) as stream:
        assert stream.read() == OK1 + b"\n"
        # the guarded stream (issue 15.1) wraps the GzipFile, which wraps the file
        gzipped = stream.raw.stream  # type: ignore[attr-defined]
        assert isinstance(gzipped, gzip.GzipFile)
        inner = gzipped.fileobj
    assert inner is not None and inner.closed


# --- sniff -------------------------------------------------------------------------------


def test_peek_gives_the_decompressed_head_or_nothing(tmp_path: Path) -> None:
    path = _write(tmp_path, _gzip([OK1, OK2]), "j.jsonl.gz")
    assert jsonl.peek(path, 5) == OK1[:5]
    assert jsonl.peek(path) == OK1 + b"\n" + OK2 + b"\n"
    # A file a sniffer cannot read is not of its format: no bytes, no error.
    assert jsonl.peek(tmp_path / "missing.json") == b""
    assert jsonl.peek(tmp_path) == b""
    assert jsonl.peek(_write(tmp_path, b"\x1f\x8bgarbage", "bad.gz")) == b""


def test_sniff_returns_parsed_values_of_the_first_non_blank_lines(tmp_path: Path) -> None:
    # GIVEN a bad line, blank lines and 10 records
    body = b"[DEBUG] x\n\n" + b"".join(orjson.dumps({"i": i}) + b"\n" for i in range(10))
    path = _write(tmp_path, body)
    # WHEN sniffed with max_lines=4 (counts non-blank lines, the bad one included)
    values = sniff(path, max_lines=4)
    # THEN the parsed values among those lines only, and no exception for the bad line
    assert values == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert len(sniff(path)) == 10


# --- streaming ---------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a named pipe")
def test_records_are_yielded_before_the_file_is_complete(tmp_path: Path) -> None:
    # GIVEN a named pipe whose writer sends one record, then waits for the reader
    fifo = tmp_path / "live.jsonl"
    os.mkfifo(fifo)
    first_seen = threading.Event()
    seen_before_close: list[bool] = []

    def writer() -> None:
        with open(fifo, "wb") as out:
            out.write(OK1 + b"\n")
            out.flush()
            seen_before_close.append(first_seen.wait(timeout=5))
            out.write(OK2 + b"\n")

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        # WHEN the reader takes the first record
        records = read_jsonl(fifo, Diagnostics())
        first = next(records)
        first_seen.set()
        rest = list(records)
    finally:
        first_seen.set()
        thread.join(timeout=10)
    # THEN it arrived while the writer still held the file open (no whole-file read)
    assert seen_before_close == [True]
    assert first == Record(1, {"n": 1})
    assert rest == [Record(2, {"n": 2})]


def test_abandoned_reader_closes_its_file(tmp_path: Path) -> None:
    # filterwarnings=error turns a leaked file (ResourceWarning) into a failure.
    path = _write(tmp_path, OK1 + b"\n" + OK2 + b"\n")
    records = read_jsonl(path, Diagnostics())
    assert next(records) == Record(1, {"n": 1})
    assert isinstance(records, Generator)
    records.close()
    gc.collect()


def test_progress_reports_bytes_read_so_far(tmp_path: Path) -> None:
    # GIVEN a 10,000-line journal and a progress callback
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"".join(b'{"n": %d, "pad": "%s"}\n' % (i, b"x" * 50) for i in range(10_000)))
    seen: list[tuple[int, int]] = []
    diagnostics = Diagnostics(on_progress=lambda name, done, size: seen.append((done, size)))
    # WHEN it is read
    assert sum(1 for _ in read_jsonl(path, diagnostics)) == 10_000
    # THEN the callback saw positions that only grow, within the file's size
    assert len(seen) == 5
    positions = [done for done, _ in seen]
    assert positions == sorted(positions) and positions[0] > 0
    assert all(size == path.stat().st_size and done <= size for done, size in seen)
