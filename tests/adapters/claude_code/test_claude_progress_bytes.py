"""Claude Code's progress records (70% of a long transcript's lines, 40% of its bytes) are
told by their bytes and never parsed where nothing reads them (`jsonl.LineSkip`): every
Claude Code transcript of tests/data and the shared corpus exports to the same bytes, with
the same lines said, as when every line is parsed; and the test would see it if the byte
test never took a line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.jsonl import LineSkip
from realtp import SHARED
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "claude-code"
CORPUS = SHARED / "corpus" / "claude-code"
_MATCHES = LineSkip.matches  # (the test patches it)


def _files(root: Path) -> list[Path]:
    return sorted(
        p
        for pattern in ("*.jsonl", "*.jsonl.gz")
        for p in root.rglob(pattern)
        if p.is_file() and not p.name.startswith("agent-acompact")
    )


def _export(path: Path, out: Path) -> tuple[bytes, str, str]:
    result = CliRunner().invoke(
        app, ["export", str(path), "-o", str(out), "--no-compress", "--force"]
    )
    assert result.exit_code == 0, result.output + result.stderr
    text = result.stdout.replace(str(out), "OUT"), result.stderr.replace(str(out), "OUT")
    return out.read_bytes(), *text


def _both(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """`path` exported with the byte test, then with every line parsed: the same; how
    many lines the byte test took."""
    taken = 0
    matches = _MATCHES

    def counting(self: LineSkip, raw: bytes) -> bool:
        nonlocal taken
        found = matches(self, raw)
        taken += found
        return found

    monkeypatch.setattr(LineSkip, "matches", counting)
    skipping = _export(path, tmp_path / "skipping.pftrace")
    monkeypatch.setattr(LineSkip, "matches", lambda self, raw: False)
    parsing = _export(path, tmp_path / "parsing.pftrace")
    assert skipping[0] == parsing[0]  # the trace, byte for byte
    assert skipping[1:] == parsing[1:]  # what the export said (lines read, used, skipped)
    return taken


@pytest.mark.parametrize(
    ("root", "files", "lines"),
    [
        # Transcripts of a recent Claude Code (progress records after the first) take the path.
        pytest.param(DATA, 12, 100, id="tests-data"),
        pytest.param(
            CORPUS,
            10,
            1000,
            id="corpus",
            marks=pytest.mark.skipif(
                not CORPUS.is_dir(), reason=f"shared corpus not beside ({CORPUS})"
            ),
        ),
    ],
)
def test_every_transcript_exports_the_same(
    root: Path, files: int, lines: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = {str(p.relative_to(root)): _both(p, tmp_path, monkeypatch) for p in _files(root)}
    assert len(taken) >= files, taken
    assert sum(taken.values()) >= lines, taken


# --------------------------------------------------------------------------- the byte test


def _line(text: str) -> bytes:
    return text.encode() + b"\n"


PROGRESS = (
    '{"parentUuid":"p","isSidechain":false,"cwd":"/w","sessionId":"s","type":"progress",'
    '"data":{"type":"hook_progress"},"uuid":"u","timestamp":"2026-01-01T00:00:00.000Z"}'
)


@pytest.mark.parametrize(
    ("text", "taken"),
    [
        (PROGRESS, True),
        # another top-level type
        (PROGRESS.replace('"type":"progress"', '"type":"assistant"'), False),
        # `type` first: no comma before it (Claude Code writes it after the session's fields)
        ('{"type":"progress","data":{},"sessionId":"s"}', False),
        # a nested object's type, not the record's
        ('{"sessionId":"s","message":{"x":1,"type":"progress","data":{}},"type":"user"}', False),
        ('{"sessionId":"s","input":{"a":1,"type":"progress","b":2},"type":"user"}', False),
        # inside an array
        ('{"sessionId":"s","items":[1,"type":"progress",2],"type":"user"}', False),
        # quotes escaped inside a string never make the pattern
        ('{"sessionId":"s","text":"a,\\"type\\":\\"progress\\",b","type":"user"}', False),
        # a record that holds a message is parsed (the /context tracker reads any record's)
        (PROGRESS.replace('"data":', '"message":{"content":"x"},"data":'), False),
        # wherever it is: before the type (a top-level key), right before it, at the end
        (PROGRESS.replace('"cwd":"/w"', '"message":"x","cwd":"/w"'), False),
        (PROGRESS.replace('"cwd":"/w",', '"cwd":"/w","message":'), False),
        (PROGRESS[:-2] + ',"message":{}}', False),
        (PROGRESS.replace('"data":', '"nomessage":1,"data":'), True),  # (not that key)
        # a `{` inside an earlier string only makes the test say no
        (PROGRESS.replace('"cwd":"/w"', '"cwd":"/w{x}"'), False),
        # not an object at the line's start (a line that is no JSON object is parsed, to
        # be said to be one)
        (" " + PROGRESS, False),
        ('"s","type":"progress","data":{}}', False),
        # a damaged line: a record torn and another written on after it, cut short, or
        # with the key every record has before its type after it
        (PROGRESS[:120] + '{"parentUuid":"p","sessionId":"s","type":"system","n":1}', False),
        (PROGRESS[:-20], False),
        (
            PROGRESS.replace('"sessionId":"s",', "").replace('"uuid":', '"sessionId":"s","uuid":'),
            False,
        ),
        (PROGRESS + "\r", True),  # (a CRLF line)
        # past the window the line is parsed
        (PROGRESS.replace('"cwd":"/w"', '"cwd":"/' + "w" * 1100 + '"'), False),
    ],
)
def test_the_byte_test_takes_only_a_top_level_progress_record(text: str, taken: bool) -> None:
    assert LineSkip("progress", "sessionId", unless=(b'"message":',)).matches(_line(text)) is taken


def test_the_reader_yields_a_taken_line_as_its_bytes_only_while_active(tmp_path: Path) -> None:
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.jsonl import read_jsonl

    path = tmp_path / "t.jsonl"
    other = '{"sessionId":"s","type":"user","n":1}'
    path.write_bytes(b"".join(_line(t) for t in (other, PROGRESS, other, PROGRESS, PROGRESS)))
    skip = LineSkip("progress", "sessionId", unless=(b'"message":',))
    diagnostics = Diagnostics()
    seen: list[tuple[int, Any]] = []
    for number, value in read_jsonl(path, diagnostics, skip):
        seen.append((number, value))
        skip.active = number >= 3  # from line 4 on
    assert [type(v).__name__ for _, v in seen] == ["dict", "dict", "dict", "bytes", "bytes"]
    assert seen[3] == (4, _line(PROGRESS))
    # Counted as records read, as a parsed line is: the reader counts them as skipped.
    assert (diagnostics.lines_read, diagnostics.records_parsed) == (5, 5)


# --------------------------------------------------------------------------- what stays parsed

SESSION = "5e5510a0-0000-4000-8000-000000000001"


def _claude(kind: str, time: str, uuid: str | None, parent: object = None, **more: Any) -> bytes:
    """A record as Claude Code writes it: compact, its type after the session's fields."""
    record: dict[str, Any] = {} if parent is _NO_PARENT else {"parentUuid": parent}
    record |= {"isSidechain": False, "cwd": "/w", "sessionId": SESSION, "type": kind, **more}
    if uuid is not None:
        record["uuid"] = uuid
    return orjson.dumps(record | {"timestamp": f"2026-01-01T10:00:{time}.000Z"}) + b"\n"


_NO_PARENT = object()
_HOOK = {"data": {"type": "hook_progress", "hookEvent": "Stop"}}
_PROMPT = {"message": {"role": "user", "content": "hi"}}
_REPLY = {
    "message": {
        "model": "claude-sonnet-4-5",
        "id": "msg_A",
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "cache_read_input_tokens": 1000, "output_tokens": 5},
    }
}


def _read(tmp_path: Path, *lines: bytes) -> tuple[Any, int]:
    """The file's own builder, and how many lines the byte test took."""
    from agent_profiler.adapters.claude_transcript import read_transcript
    from agent_profiler.diagnostics import Diagnostics

    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(b"".join(lines))
    taken = 0
    skip = LineSkip.matches

    class Counting(LineSkip):
        def matches(self, raw: bytes) -> bool:
            nonlocal taken
            found = skip(self, raw)
            taken += found
            return found

    import agent_profiler.adapters.claude_transcript as transcript

    original, transcript.LineSkip = transcript.LineSkip, Counting  # type: ignore[misc]
    try:
        builders = read_transcript(path, Diagnostics())
    finally:
        transcript.LineSkip = original  # type: ignore[misc]
    return builders[""], taken


def _three_progress_records(tmp_path: Path, last: dict[str, Any]) -> tuple[Any, int]:
    """`_read` of a prompt at :00, its reply at :02, then progress records at :05 and :07
    (hook progress) and :09 (of `last`'s fields)."""
    return _read(
        tmp_path,
        _claude("user", "00", "u1", **_PROMPT),
        _claude("assistant", "02", "a1", "u1", **_REPLY),
        _claude("progress", "05", "p1", "a1", **_HOOK),
        _claude("progress", "07", "p2", "p1", **_HOOK),
        _claude("progress", "09", "p3", "p2", **last),
    )


def test_the_first_progress_record_is_parsed_for_the_spans_start(tmp_path: Path) -> None:
    """The span covers the records read no further from the first of them: it is parsed
    (its time judged against its neighbour), the later ones are taken as bytes."""
    builder, taken = _three_progress_records(tmp_path, _HOOK)
    assert taken == 2  # p2 and p3
    ns = 1_767_261_600_000_000_000  # 2026-01-01T10:00:00Z
    assert sorted(builder.outer) == [ns + 5_000_000_000, ns + 9_000_000_000]


def test_a_progress_record_that_is_the_first_records_parent_is_parsed(tmp_path: Path) -> None:
    """The file's first record's parent found later, in a progress record: the journal does
    not start mid-conversation (the parent's uuid is looked for in the bytes)."""
    from agent_profiler.model import MID_CONVERSATION

    lines = [
        _claude("user", "00", "u1", "P", **_PROMPT),
        _claude("progress", "01", "x1", "u1", **_HOOK),
        _claude("assistant", "02", "a1", "x1", **_REPLY),
        _claude("progress", "03", "P", None, **_HOOK),
    ]
    builder, taken = _read(tmp_path, *lines)
    assert taken == 0 and MID_CONVERSATION not in dict(builder.facts)
    # Without it, the journal starts mid-conversation; the other progress record is taken.
    builder, taken = _read(tmp_path, *lines[:3], _claude("progress", "03", "Q", None, **_HOOK))
    assert taken == 1 and MID_CONVERSATION in dict(builder.facts)


def test_a_progress_record_before_any_parent_is_known_is_parsed(tmp_path: Path) -> None:
    """The first record with a `parentUuid` says whether the journal starts mid-conversation:
    a progress record may be it, after a queued prompt (read no further, without a parent)."""
    from agent_profiler.model import MID_CONVERSATION

    builder, taken = _read(
        tmp_path,
        _claude("queue-operation", "00", None, _NO_PARENT, operation="enqueue"),
        _claude("progress", "01", "x1", "Q", **_HOOK),
        _claude("user", "02", "u1", None, **_PROMPT),
        _claude("assistant", "03", "a1", "u1", **_REPLY),
    )
    assert taken == 0 and MID_CONVERSATION in dict(builder.facts)


def test_a_torn_progress_line_is_said_to_be_no_json(tmp_path: Path) -> None:
    """A progress record cut by another written on the same line: parsed, and said (the
    record glued to it is lost, as it was before the byte test)."""
    from agent_profiler.adapters.claude_transcript import read_transcript
    from agent_profiler.diagnostics import Diagnostics

    torn = _claude("progress", "05", "p2", "p1", **_HOOK)[:150] + _claude(
        "user", "06", "u2", "p2", **_PROMPT
    )
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(
        _claude("user", "00", "u1", **_PROMPT)
        + _claude("progress", "01", "p1", "u1", **_HOOK)
        + torn
        + _claude("progress", "07", "p3", "p2", **_HOOK)
    )
    diagnostics = Diagnostics()
    read_transcript(path, diagnostics)
    assert [(w.kind, w.line) for w in diagnostics.warnings] == [("not-json", 3)]
    assert diagnostics.skipped["claude:progress"] == 2


def test_the_last_progress_record_bounds_the_span_whether_parsed_or_not(tmp_path: Path) -> None:
    """Progress records taken as bytes are kept apart from the parsed ones (in locals): the
    span's end is the last progress record's time either way."""
    nested = {"data": {"type": "agent_progress", "message": {"content": "x"}}}  # parsed
    builder, taken = _three_progress_records(tmp_path, nested)
    assert taken == 1  # p2
    ns = 1_767_261_600_000_000_000  # 2026-01-01T10:00:00Z
    assert sorted(builder.outer) == [ns + 5_000_000_000, ns + 9_000_000_000]


def test_progress_records_taken_as_bytes_are_counted_when_the_reading_is_closed(
    tmp_path: Path,
) -> None:
    """The one pass may close the reading before the end: the progress records read so
    far are counted as skipped all the same."""
    from agent_profiler.adapters.claude_transcript import Reading, transcript_lines
    from agent_profiler.diagnostics import Diagnostics

    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(
        b"".join(
            [
                _claude("user", "00", "u1", **_PROMPT),
                _claude("assistant", "02", "a1", "u1", **_REPLY),
                *(_claude("progress", f"0{n}", f"p{n}", "a1", **_HOOK) for n in range(3, 7)),
                _claude("user", "08", "u2", "a1", **_PROMPT),
                _claude("progress", "09", "p9", "u2", **_HOOK),
            ]
        )
    )
    diagnostics = Diagnostics()
    lines = transcript_lines(path, diagnostics, Reading())
    for record in lines:
        if record.get("uuid") == "u2":
            break
    lines.close()
    assert diagnostics.skipped["claude:progress"] == 4
