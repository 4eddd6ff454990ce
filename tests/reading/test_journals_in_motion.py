"""Journals read while their harness writes them (review "journals in motion").

A line written in two pieces: the reader met the end of the file in the middle of the
line, and the rest of it landed before the next read. Read on, the rest was a line of its
own ("not JSON"), one record was lost and every later line number was one too high. A
line without its newline is the last one there is: reading stops there. And a group read
twice (`--estimate calibrated`: once for its models, once with their family's ratios)
said the first read's counts and warnings of the second read's sessions. The writer is a
stand-in called at a fixed point of the read, so the race is the same on every run."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_profiler import jsonl, loader
from agent_profiler.adapters import JournalGroup, adapter_for
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.estimate import CLAUDE_47, TextClass, calibrated, use_estimator
from agent_profiler.jsonl import TRUNCATED_MESSAGE, read_jsonl, sniff
from agent_profiler.jsonl_open import HEAD_BYTES
from agent_profiler.model import Harness, Session


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


def test_sniffing_stops_at_a_whole_record_whose_newline_comes_later(
    tmp_path: Path, growing: Callable[[Path, bytes, bytes], Path]
) -> None:
    # GIVEN line 2 written whole but for its newline while the file is sniffed, its newline
    # and line 3 written before the next read
    path = growing(tmp_path / "live.jsonl", _line(1) + _line(2)[:-1], b"\n" + _line(3))
    # WHEN sniffed, THEN lines 1 and 2, as the file was: not line 3, which came later
    assert sniff(path) == [orjson.loads(_line(1)), orjson.loads(_line(2))]


def test_an_indented_record_cut_off_is_still_a_record_being_written(tmp_path: Path) -> None:
    # GIVEN a journal whose last record, indented, is cut off (no newline: still written)
    path = tmp_path / "cut.jsonl"
    path.write_bytes(_line(1) + b"  " + _line(2)[:30])
    # WHEN read, THEN the one warning says it may still be being written, not "not JSON"
    records, diagnostics = _read(path)
    assert [line for line, _ in records] == [1]
    assert _said(diagnostics) == [(2, "truncated-last-line", TRUNCATED_MESSAGE)]


# --- a group read twice for its tokenizer family (`--estimate calibrated`) ----------------

SHARED_RATIOS = {c: 4.0 for c in TextClass}
NEWER_RATIOS = {c: 2.0 for c in TextClass}  # Claude Opus 4.7 and later: a family of its own


def _transcript(requests: int) -> bytes:
    """A Claude Code transcript on claude-opus-4-8 (a model whose tokenizer family has
    ratios of its own in the table): a prompt, then `requests` requests reading a file."""
    records: list[dict[str, Any]] = []

    def add(kind: str, message: dict[str, Any]) -> None:
        n = len(records)
        records.append(
            {
                "type": kind,
                "sessionId": "s-1",
                "uuid": f"u-{n}",
                "parentUuid": f"u-{n - 1}" if n else None,
                "timestamp": f"2026-11-01T10:00:{n:02d}Z",
                "message": message,
            }
        )

    add("user", {"role": "user", "content": "Read the file, please."})
    for n in range(1, requests + 1):
        call = {"type": "tool_use", "id": f"t{n}", "name": "Read", "input": {"file_path": "a"}}
        usage = {"input_tokens": 1000 * n, "output_tokens": 20}
        add(
            "assistant",
            {"id": f"m{n}", "role": "assistant", "model": "claude-opus-4-8", "usage": usage,
             "content": [call]},
        )  # fmt: skip
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": "x = 1\n" * 50}
        add("user", {"role": "user", "content": [result]})
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def test_a_group_read_again_for_its_family_says_what_that_read_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a transcript caught with its last line half written, which the harness
    # completes (and goes on writing) between the loader's two reads of the group: the
    # first tells the models, the second measures with their family's ratios
    final = _transcript(4)
    path = tmp_path / "live.jsonl"
    path.write_bytes(_transcript(2) + final[len(_transcript(2)) :][:40])
    claude = adapter_for(Harness.CLAUDE_CODE)
    assert claude is not None
    reads: list[int] = []

    def read(group: JournalGroup, diagnostics: Diagnostics) -> list[Session]:
        sessions = claude.read(group, diagnostics)
        reads.append(diagnostics.lines_read)
        path.write_bytes(final)
        return sessions

    monkeypatch.setattr(loader, "adapter_for", lambda harness: replace(claude, read=read))
    table = calibrated(SHARED_RATIOS, 0.0, {}, {CLAUDE_47: NEWER_RATIOS})
    # WHEN loaded
    said = Diagnostics()
    with use_estimator(table):
        (session,) = loader.load([path], said).sessions
    # THEN the lines read, records used and warnings said are the second read's, whose
    # session is the one shown: the same as one read of the file as it is now, and no
    # warning of a line the first read met half written
    assert reads == [6, 9]
    alone = Diagnostics()
    with use_estimator(table):
        (again,) = loader.load([path], alone).sessions
    assert said.accounting() == alone.accounting() and said.warnings == []
    assert said.lines_read == 9 and said.records_used == alone.records_used
    assert len(session.responses) == len(again.responses) == 4


def test_a_journal_deleted_once_opened_is_read_whole_with_progress_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a journal removed between its opening and the look at its size for the
    # progress line (its harness's clean-up): the open file is still whole
    path = tmp_path / "gone.jsonl"
    path.write_bytes(b"".join(_line(n) for n in range(4001)))  # progress every 2,000 lines
    opened = jsonl.open_stream

    def open_then_remove(name: str) -> Any:
        stream = opened(name)
        Path(name).unlink()
        return stream

    monkeypatch.setattr(jsonl, "open_stream", open_then_remove)
    seen: list[int] = []
    diagnostics = Diagnostics(on_progress=lambda _path, done, size: seen.append(size))
    # WHEN read with progress on
    records = [value["n"] for _, value in read_jsonl(path, diagnostics)]
    # THEN every record is read, with no total for the progress line, and no error (the
    # size was an OSError that ended in an internal error naming the absolute path)
    assert records == list(range(4001)) and diagnostics.warning_total == 0
    assert seen == [0, 0]
