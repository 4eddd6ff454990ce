"""A file that gave not one record is said for what it is: "empty journal (no records)"
was said of a minified JSON document cut in half and of a journal whose lines end in a
carriage return alone, both full of bytes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from shared_paths import TESTS

DATA = TESTS / "data" / "journals"
OPENCODE = DATA / "opencode" / "ses_2bef25635ffe8EzID0I1Oeymal.export.json"
SMALL = DATA / "claude-code" / "handmade" / "small.jsonl"


def _said(path: Path) -> str:
    result = CliRunner().invoke(app, ["summary", str(path)])
    assert result.exit_code == 1, result.output
    return result.stderr.splitlines()[0]


def test_a_json_document_cut_short_is_said_to_be_one(tmp_path: Path) -> None:
    document = json.dumps(json.loads(OPENCODE.read_text()), separators=(",", ":"))
    path = tmp_path / "ses_x.export.json"
    path.write_text(document[: len(document) // 2])
    said = _said(path)
    assert said == (
        f"error: {path.name}: one line of JSON that does not parse: a JSON document cut short?"
    )


def test_lines_ending_in_a_carriage_return_alone_are_said(tmp_path: Path) -> None:
    path = tmp_path / "mac.jsonl"
    path.write_bytes(SMALL.read_bytes().replace(b"\n", b"\r"))
    assert "its lines end in a carriage return alone (\\r)" in _said(path)
    assert "tr '\\r' '\\n'" in _said(path)


@pytest.mark.parametrize("content", [b"", b"  \n\n\t\n"])
def test_an_empty_journal_is_still_called_empty(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    assert _said(path).startswith(f"error: {path.name}: empty journal (")
    packed = tmp_path / "empty.jsonl.gz"
    packed.write_bytes(gzip.compress(content))
    assert _said(packed) == f"error: {packed.name}: empty journal (no records)"


WRITING = "the journal may still be being written"
ZERO_BYTES = "empty journal (0 bytes; it may be being written or rewritten right now)"


@pytest.mark.parametrize("name", ["empty.jsonl", "session-2026-01-01T00-00-0a1b2c3d.json"])
def test_a_file_of_no_bytes_may_be_one_being_written(tmp_path: Path, name: str) -> None:
    # GIVEN a file of 0 bytes: a journal just created, or a Gemini CLI session caught
    # between its rewrite's truncation and its write (review "journals in motion")
    path = tmp_path / name
    path.write_bytes(b"")
    # THEN said to be empty, and why it may be
    assert _said(path) == f"error: {name}: {ZERO_BYTES}"


@pytest.mark.parametrize("size", [300, 100_000])  # within the bytes looked at, and beyond
def test_a_journal_whose_one_line_has_no_newline_yet_may_be_being_written(
    tmp_path: Path, size: int
) -> None:
    # GIVEN a Codex rollout whose first record is still being written (no newline yet)
    line = json.dumps({"type": "session_meta", "payload": {"instructions": "x" * size}})
    path = tmp_path / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
    path.write_text(line[: size // 2])
    # THEN said in the reader's own words, not as a JSON document cut short
    assert _said(path) == (
        f"error: {path.name}: its only line is incomplete (no newline at the end; {WRITING})"
    )
    # a JSON document is written whole, not line by line: one cut short is said so
    document = tmp_path / "state.json"
    document.write_text(line[: size // 2])
    assert _said(document).endswith(
        "one line of JSON that does not parse: a JSON document cut short?"
    )


@pytest.mark.parametrize("content", [b"{\x8aNB\x01\rgarbage\r\x02", b"[not json\rnor this\r"])
def test_bytes_with_a_carriage_return_that_are_no_json_are_not_said_to_be_lines(
    tmp_path: Path, content: bytes
) -> None:
    """Only a file whose first line ending in a carriage return is JSON is told to convert
    its line endings: random bytes that happened to start with a brace were told so (and
    a test writing random bytes failed one run in a few hundred)."""
    path = tmp_path / "noise.jsonl"
    path.write_bytes(content)
    said = _said(path)
    assert "carriage return" not in said
    assert said.startswith(f"error: {path.name}: ")
