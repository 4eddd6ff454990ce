"""Journals read while their harness writes them (review "journals in motion").

A line written in two pieces: the reader met the end of the file in the middle of the
line, and the rest of it landed before the next read. Read on, the rest was a line of its
own ("not JSON"), one record was lost and every later line number was one too high. A
line without its newline is the last one there is: reading stops there. The writer is a
stand-in called when the reader meets the end of the file, so the race is the same on
every run."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_profiler import jsonl
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.jsonl import TRUNCATED_MESSAGE, read_jsonl, sniff
from agent_profiler.jsonl_open import HEAD_BYTES


def _line(n: int) -> bytes:
    return orjson.dumps({"type": "message", "n": n, "text": "x" * 40}) + b"\n"


class _Growing(io.FileIO):
    """A file whose writer appends `rest` the first time the reader meets its end (the
    writer's second `write()` of a line, landing between two reads)."""

    def __init__(self, name: str, rest: bytes) -> None:
        super().__init__(name, "rb")
        self.rest = rest

    def readinto(self, buffer: Any) -> int:
        count = super().readinto(buffer)
        if count == 0 and self.rest:
            with open(self.name, "ab") as writer:
                writer.write(self.rest)
            self.rest = b""
        return count or 0


@pytest.fixture
def growing(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path, bytes, bytes], Path]:
    """`growing(path, written, rest)`: `path` holds `written`, and `rest` is appended the
    first time reading meets its end."""
    rests: dict[str, bytes] = {}

    def opened(name: str) -> io.BufferedReader[Any]:
        return io.BufferedReader(_Growing(name, rests.pop(name, b"")), HEAD_BYTES)

    monkeypatch.setattr(jsonl, "open_stream", opened)

    def make(path: Path, written: bytes, rest: bytes) -> Path:
        path.write_bytes(written)
        rests[str(path)] = rest
        return path

    return make


def _read(path: Path) -> tuple[list[tuple[int, object]], Diagnostics]:
    diagnostics = Diagnostics()
    return list(read_jsonl(path, diagnostics)), diagnostics


def _said(diagnostics: Diagnostics) -> list[tuple[int | None, str, str]]:
    return [(w.line, w.kind, w.message) for w in diagnostics.warnings]


@pytest.mark.parametrize("cut", [1, 3, 60])  # in the probe (line 1), after it, far after
def test_a_line_written_in_two_pieces_ends_the_read_there(
    tmp_path: Path, growing: Callable[[Path, bytes, bytes], Path], cut: int
) -> None:
    # GIVEN a journal whose line `cut` is half written when the reader reaches it, the
    # rest of it (and two more lines) written before the reader's next read
    before = b"".join(_line(n) for n in range(1, cut))
    half = _line(cut)[:25]
    rest = _line(cut)[25:] + _line(cut + 1) + _line(cut + 2)
    path = growing(tmp_path / "live.jsonl", before + half, rest)
    # WHEN read
    records, diagnostics = _read(path)
    # THEN the journal as of that line: every complete line with its own number, and the
    # one line still being written said once, by its number; nothing called "not JSON"
    assert [line for line, _ in records] == list(range(1, cut))
    assert [value["n"] for _, value in records] == list(range(1, cut))  # type: ignore[index]
    assert _said(diagnostics) == [(cut, "truncated-last-line", TRUNCATED_MESSAGE)]
    assert diagnostics.lines_read == cut
    assert path.read_bytes() == before + half + rest  # (the writer did write meanwhile)


def test_a_whole_record_whose_newline_comes_later_is_the_last_line_read(
    tmp_path: Path, growing: Callable[[Path, bytes, bytes], Path]
) -> None:
    # GIVEN line 3 written whole but for its newline, which comes with the next lines
    path = growing(tmp_path / "live.jsonl", _line(1) + _line(2) + _line(3)[:-1], b"\n" + _line(4))
    # WHEN read, THEN three records, numbered 1-3, and no blank line 4 that would put every
    # later number one too high; no warning (the record is whole)
    records, diagnostics = _read(path)
    assert [line for line, _ in records] == [1, 2, 3]
    assert diagnostics.warnings == [] and diagnostics.lines_read == 3


def test_sniffing_stops_at_a_line_still_being_written(
    tmp_path: Path, growing: Callable[[Path, bytes, bytes], Path]
) -> None:
    # GIVEN the same race while the file is sniffed for its harness
    path = growing(tmp_path / "live.jsonl", _line(1) + _line(2)[:30], _line(2)[30:] + _line(3))
    # WHEN sniffed, THEN the complete lines before it, not the rest of it or what followed
    assert sniff(path) == [orjson.loads(_line(1))]
