"""Claude Code's tool calls measured on the scan helper's core (adapters/claude_told.py,
scan.py `Told`): a transcript read with the helper's measures gives the sessions it gives
without them, call for call, on every Claude Code transcript of tests/data and the corpus
and on a hand-made one holding what measuring a call meets; the reader does take them; an
answer of another call, or none yet, is measured here; an estimator that needs the text
asks for none; answers come in line order, in batches that may be split across reads."""

from __future__ import annotations

import gzip
import json
import marshal
import os
import shutil
import time
from array import array
from pathlib import Path
from typing import Any

import pytest

from agent_profiler import estimate, scan
from agent_profiler.adapters import claude_session, claude_told
from agent_profiler.adapters.drafts import argument_digests, argument_previews
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.jsonl import LineSkip
from agent_profiler.loader import load
from agent_profiler.model import Session
from agent_profiler.writers import runs
from realtp import SHARED
from samples import DATA, SPOTTER_TRANSCRIPT

CORPUS = SHARED / "corpus" / "claude-code" / "transcripts"


@pytest.fixture
def helpers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A helper for every plain transcript read (however short), each let run until it
    has told the whole file (or 10 s), so the reading meets its answers; the count of
    answers the reader took is returned in the list."""
    monkeypatch.setattr(scan, "SCAN_AFTER", 0)
    monkeypatch.setattr(runs, "HELPER_MEMORY", 2**40)
    if not runs.helper_can_run():
        pytest.skip("a helper runs on Linux with a second core and no other thread")
    start = scan.LineScan.start.__func__  # type: ignore[attr-defined]

    def ahead(cls: type[scan.LineScan], stream: object, skip: LineSkip) -> Any:
        made = start(cls, stream, skip)
        if made is not None and made._pid is not None:
            waited = time.monotonic() + 10
            while time.monotonic() < waited and not os.waitpid(made._pid, os.WNOHANG)[0]:
                time.sleep(0.01)  # (a pipe full of answers holds it until they are read)
        return made

    monkeypatch.setattr(scan.LineScan, "start", classmethod(ahead))
    return _taken(monkeypatch)


def _taken(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The count of answers the reader takes from now on (in a list)."""
    taken = [0]
    told = claude_session.told_measures

    def counted(*args: Any) -> Any:
        measures = told(*args)
        taken[0] += measures is not None
        return measures

    monkeypatch.setattr(claude_session, "told_measures", counted)
    return taken


def _sessions(path: Path, *, allowed: bool) -> list[Session]:
    diagnostics = Diagnostics()
    with scan.allowed(allowed):
        result = load([path], diagnostics)
    assert not result.failures, result.failures
    return result.sessions


def _plain(path: Path, tmp_path: Path) -> Path:
    """A transcript as a plain file (the helper reads plain files only)."""
    if path.suffix != ".gz":
        return path
    plain = tmp_path / path.with_suffix("").name
    with gzip.open(path) as packed, plain.open("wb") as out:
        shutil.copyfileobj(packed, out)
    return plain


def _transcripts(tmp_path: Path) -> list[Path]:
    found = [_plain(SPOTTER_TRANSCRIPT, tmp_path)]
    found += sorted((DATA / "claude-code").glob("*.jsonl"))
    if CORPUS.is_dir():
        found += sorted(CORPUS.glob("*.jsonl"))
    return found


def test_sessions_read_with_the_helpers_measures_are_the_ones_read_without(
    helpers: list[int], tmp_path: Path
) -> None:
    spotter = _plain(SPOTTER_TRANSCRIPT, tmp_path)
    for keep in (False, True):  # (an export's default, and --previews)
        with argument_previews(keep):
            for path in _transcripts(tmp_path):
                alone = _sessions(path, allowed=False)
                taken = helpers[0]
                assert _sessions(path, allowed=True) == alone, path
                if path == spotter:  # (a transcript: its answers were taken; a
                    # stream-json file is read by another reader, without them)
                    calls = sum(len(s.tool_calls) for s in alone)
                    assert helpers[0] - taken == calls > 100


# What measuring a call meets, each call a line of its own unless said.
CALLS: list[list[dict[str, Any]]] = [
    [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "git status"}}],
    [{"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {"file_path": "/a/b.py"}}],
    [  # two calls and a text in one line
        {"type": "tool_use", "id": "toolu_3", "name": "Grep", "input": {"pattern": "x"}},
        {"type": "text", "text": "and"},
        {
            "type": "tool_use",
            "id": "toolu_4",
            "name": "WebFetch",
            "input": {"url": "https://h.example/p"},
        },
    ],
    [
        {
            "type": "tool_use",
            "id": "toolu_5",
            "name": "Write",
            "input": {"content": "a REDACTED b REDACTED"},
        }
    ],
    [
        {
            "type": "tool_use",
            "id": "toolu_6",
            "name": "Edit",
            "input": {"old": "naïve ☃ 日本", "b": [1, {"c": None}]},
        }
    ],
    [
        {
            "type": "server_tool_use",
            "id": "srvtoolu_7",
            "name": "web_search",
            "input": {"query": "q"},
        }
    ],
    [{"type": "tool_use", "id": "toolu_8", "name": "Odd", "input": "a string input"}],
    [{"type": "tool_use", "id": "toolu_9", "name": "NoInput"}],
    [{"type": "tool_use", "id": "toolu_10", "input": {"k": 1}}],  # no name: "tool"
    [{"type": "tool_use", "id": 11, "name": "BadId", "input": {}}],  # no call
    [
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls -la"}}
    ],  # again
    [{"id": "toolu_12", "type": "tool_use", "name": "Late", "input": {"a": 1}}],  # not told
    [{"type": "tool_use", "id": "toolu_13", "name": ""}],  # no characters at all
    [{"type": "tool_use", "id": "toolu_14", "name": "x"}],  # one
    [{"type": "tool_use", "id": "toolu_15", "name": "Bad", "input": {"s": "BAD"}}],  # not told
    [{"type": "tool_use", "id": "toolu_16", "name": "WebFetch", "input": {"url": "http://[x/"}}],
]
# Calls whose answers the reader takes (of each line's, toolu_1 twice), and calls made.
TOLD, MADE = 14, 15


def _handmade(path: Path) -> Path:
    """A transcript of CALLS, each answered, with a progress record whose message holds a
    call (not read: no answer is taken for it), an assistant record whose message is no
    object but that has the marker's bytes, `REDACTED` placeholders in a prompt, a call and
    a result, and a line the helper cannot parse (a byte that is no UTF-8, which the reader
    mends: `BAD`)."""
    lines: list[str] = []
    parent = None
    clock = 0

    def add(record: dict[str, Any]) -> None:
        nonlocal parent, clock
        clock += 1
        uuid = f"u{len(lines)}"
        record.update(
            parentUuid=parent,
            isSidechain=False,
            sessionId="s1",
            uuid=uuid,
            timestamp=f"2026-01-01T00:00:{clock:02d}.000Z",
        )
        parent = uuid
        lines.append(json.dumps(record, separators=(",", ":"), ensure_ascii=False))

    add({"type": "user", "message": {"role": "user", "content": "do it, REDACTED"}})
    add({"type": "assistant", "message": [], "x": {"type": "tool_use", "id": "toolu_0"}})
    for index, blocks in enumerate(CALLS):
        usage = {"input_tokens": 10 + index, "output_tokens": 5, "server_tool_use": {}}
        message = {"id": f"msg_{index}", "model": "claude-sonnet-4-6", "role": "assistant"}
        message.update(content=blocks, usage=usage, stop_reason="tool_use")
        add({"type": "assistant", "message": message})
        progress = {"type": "assistant", "message": {"content": blocks}}
        add({"type": "progress", "data": {"message": progress}})
        results = [
            {"type": "tool_result", "tool_use_id": b["id"], "content": "ok REDACTED"}
            for b in blocks
            if b["type"] == "tool_use" and isinstance(b["id"], str)
        ]
        if results:
            add({"type": "user", "message": {"role": "user", "content": results}})
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(data.replace(b'"BAD"', b'"B\xffD"'))
    return path


def test_every_kind_of_call_is_measured_as_without_the_helper(
    helpers: list[int], tmp_path: Path
) -> None:
    path = _handmade(tmp_path / "calls.jsonl")
    for keep in (False, True):
        for digests in (False, True):
            with argument_previews(keep), argument_digests(digests):
                alone = _sessions(path, allowed=False)
                taken = helpers[0]
                helped = _sessions(path, allowed=True)
                assert helped == alone
                assert helpers[0] - taken == TOLD, (keep, digests)
    assert len({c.call_id for c in alone[0].tool_calls}) == MADE
    (session,) = alone
    calls = {c.call_id: c for c in session.tool_calls}
    assert calls["toolu_6"].arg_bytes > len('{"old":"naïve ☃ 日本","b":[1,{"c":null}]}')  # bytes
    assert calls["toolu_2"].target == "path:b.py"


def test_answers_worked_out_here_are_what_the_reader_makes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The helper's work done in this process, line by line (`answer` on each line, as the
    helper runs it): the sessions are the ones read without answers. (The helper's own
    run is checked above; this one is seen by coverage and mutation testing.)"""
    path = _handmade(tmp_path / "calls.jsonl")
    made = claude_told.new_told

    def here() -> scan.Told | None:
        told = made()
        if told is not None:
            lines = path.read_bytes().split(b"\n")

            class Here:
                def told(self, number: int) -> object:
                    raw = lines[number - 1]
                    marked = any(part in raw for part in claude_told.MARKERS)
                    return claude_told.answer(raw) if marked else None

            told.scan = Here()  # type: ignore[assignment]
        return told

    for keep in (False, True):
        with argument_previews(keep):
            alone = _sessions(path, allowed=False)
            taken = _taken(monkeypatch)
            monkeypatch.setattr(claude_told, "new_told", here)
            assert _sessions(path, allowed=False) == alone
            assert taken[0] == TOLD
            monkeypatch.undo()


def test_an_answer_is_taken_only_for_its_call() -> None:
    """The answer of the block at that place, if it is the call read here (its id and
    name: a file rewritten between the two reads is measured here)."""
    measures = (10, 0, ((), (), 8, "", ""))
    answer = ((0, "toolu_1", "Bash", measures), (2, "toolu_2", "Read", measures))

    class Scan:
        def told(self, number: int) -> object:
            return answer if number == 5 else None

    told = scan.Told(claude_told.MARKERS, claude_told.answer)
    told.scan = Scan()  # type: ignore[assignment]
    assert claude_told.told_measures(told, 5, 0, "toolu_1", "Bash") == measures
    assert claude_told.told_measures(told, 5, 2, "toolu_2", "Read") == measures
    assert claude_told.told_measures(told, 5, 1, "toolu_1", "Bash") is None  # no call there
    assert claude_told.told_measures(told, 5, 0, "toolu_9", "Bash") is None  # another call
    assert claude_told.told_measures(told, 5, 0, "toolu_1", "Read") is None
    assert claude_told.told_measures(told, 6, 0, "toolu_1", "Bash") is None  # not told
    assert claude_told.told_measures(None, 5, 0, "toolu_1", "Bash") is None
    told.scan = None
    assert claude_told.told_measures(told, 5, 0, "toolu_1", "Bash") is None


def test_the_helpers_answer_is_the_readers_measure() -> None:
    """`answer` finds a line's calls where `on_assistant` does, and measures each as
    `_on_tool_use` would; lines that are no assistant's have none."""
    blocks = [*CALLS[2], "text", *CALLS[3], *CALLS[5], *CALLS[8], *CALLS[9]]
    blocks.append({"type": "text", "id": "not_a_call", "text": "t"})
    line = {"type": "assistant", "message": {"content": blocks}}
    found = claude_told.answer(json.dumps(line).encode())
    assert found is not None
    assert [(i, c, n) for i, c, n, _ in found] == [
        (0, "toolu_3", "Grep"),
        (2, "toolu_4", "WebFetch"),
        (4, "toolu_5", "Write"),
        (5, "srvtoolu_7", "web_search"),
        (6, "toolu_10", "tool"),  # (no name)
    ]
    text, measures = claude_told.call_measures("Write", CALLS[3][0]["input"])
    assert found[2][3] == measures
    assert measures[0] == len(text) and measures[1] == 2  # two REDACTED placeholders
    assert claude_told.answer(json.dumps({**line, "type": "progress"}).encode()) is None
    no_call = {"type": "assistant", "message": {"content": [{"type": "text", "text": "t"}]}}
    assert claude_told.answer(json.dumps(no_call).encode()) is None
    assert claude_told.answer(b'{"type":"assistant","message":{"content":"tool_use\\""}}') is None
    assert claude_told.answer(b'{"type":"assistant", not json tool_use"') is None


def test_no_answers_are_asked_where_the_estimator_needs_the_text(
    helpers: list[int], tmp_path: Path
) -> None:
    path = _handmade(tmp_path / "calls.jsonl")
    assert claude_told.new_told() is not None  # (chars / 4, the default)
    with estimate.use_estimator(estimate.calibrated()):
        assert claude_told.new_told() is None
        alone = _sessions(path, allowed=False)
        assert _sessions(path, allowed=True) == alone
    assert helpers[0] == 0


def _frame(answers: list[tuple[int, object]]) -> bytes:
    data = marshal.dumps(answers)
    return len(data).to_bytes(4, "little") + data


RAW = b'{"a":1}\n'


def test_answers_are_taken_for_the_line_read_in_order_and_whole() -> None:
    """An answer is given for the line just read if its verdict says it has one and the
    line read is as long as the helper's; asking for a line lets go of the answers before
    it; a batch read in parts waits for its rest."""
    told = scan.Told((b"x",), lambda raw: None)
    skip = LineSkip("progress", "sessionId", told=told)
    verdicts_read, verdicts_write = os.pipe()
    read_end, write_end = os.pipe()
    found = scan.LineScan(None, verdicts_read, skip, read_end)
    assert told.scan is found
    answered = {3, 7, 15, 20, 25}
    verdicts = [len(RAW) << 11 if n in answered else 0 for n in range(1, 31)]
    os.write(verdicts_write, array("Q", verdicts).tobytes())

    def read(number: int, raw: bytes = RAW) -> object:
        assert found.matches(number, raw) is False  # (none of these lines is taken)
        return told.take(number)

    try:
        first = _frame([(3, "three"), (7, "seven")])
        os.write(write_end, first[:9])  # its length and part of its data
        assert read(3) is None  # (not whole yet: measured here)
        os.write(write_end, first[9:] + _frame([(15, "fifteen")]))
        assert read(3) == "three"
        assert not found._told_rest  # (batches read whole are let go)
        assert told.take(3) == "three"  # (a line's second call)
        assert read(5) is None  # (no answer, by its verdict)
        assert told.take(7) is None  # (not the line read)
        assert read(7) == "seven"
        assert read(15) == "fifteen"
        os.write(write_end, _frame([(20, "twenty"), (25, "twenty-five")]))
        assert read(20, b'{"a":12}\n') is None  # another line than the helper's: rewritten
        assert read(25) == "twenty-five"
        assert told.take(20) is None  # (let go: lines are asked for in order)
        os.close(write_end)
        assert read(30) is None
    finally:
        found.close()
        os.close(verdicts_write)
    assert told.scan is None
    assert told.take(25) is None


def test_an_answer_whole_in_the_pipe_is_given_while_the_next_batch_is_in_part() -> None:
    """A read that ends halfway through a batch still gives the answers of the batches
    before it, and the part waits for its rest (each batch taken once)."""
    told = scan.Told((b"x",), lambda raw: None)
    skip = LineSkip("progress", "sessionId", told=told)
    verdicts_read, verdicts_write = os.pipe()
    read_end, write_end = os.pipe()
    found = scan.LineScan(None, verdicts_read, skip, read_end)
    os.write(verdicts_write, array("Q", [len(RAW) << 11] * 3).tobytes())
    try:
        second = _frame([(2, "two"), (3, "three")])
        os.write(write_end, _frame([(1, "one")]) + second[:6])
        assert found.matches(1, RAW) is False
        assert told.take(1) == "one"
        os.write(write_end, second[6:])
        assert found.matches(2, RAW) is False
        assert told.take(2) == "two"
        assert list(found._told) == [(2, "two"), (3, "three")]  # (the first batch once)
    finally:
        found.close()
        os.close(verdicts_write)
        os.close(write_end)


PROGRESS = b'{"sessionId":"s","type":"progress","a":1}\n'


@pytest.mark.parametrize("on_zero", ["verdicts", "answers"])
def test_a_pipe_on_descriptor_zero_is_read_and_closed(on_zero: str) -> None:
    """A process started without standard input gets descriptor 0 for a pipe: the
    helper's verdicts or answers are read and closed there as on any other."""
    told = scan.Told((b"x",), lambda raw: None)
    skip = LineSkip("progress", "sessionId", told=told)
    skip.active = True
    assert skip.matches(PROGRESS)
    saved = os.dup(0)
    try:
        verdicts_read, verdicts_write = os.pipe()
        answers_read, answers_write = os.pipe()
        low = verdicts_read if on_zero == "verdicts" else answers_read
        os.dup2(low, 0)
        os.close(low)
        verdicts_read = 0 if on_zero == "verdicts" else verdicts_read
        answers_read = 0 if on_zero == "answers" else answers_read
        found = scan.LineScan(None, verdicts_read, skip, answers_read)
        # the helper did not take line 1 (its verdict: 0) and told line 2's answer
        os.write(verdicts_write, array("Q", [0, len(RAW) << 11]).tobytes())
        os.write(answers_write, _frame([(2, "two")]))
        assert found.matches(1, PROGRESS) is False  # (by its verdict, not by the test)
        assert found.matches(2, RAW) is False
        assert told.take(2) == "two"
        found.close()
        with pytest.raises(OSError):
            os.fstat(0)  # (closed with the rest)
        assert told.scan is None
        os.close(verdicts_write)
        os.close(answers_write)
    finally:
        os.dup2(saved, 0)
        os.close(saved)


def test_the_helper_sends_each_answer_once_before_the_verdicts_of_its_lines(
    tmp_path: Path,
) -> None:
    """Answers go in a batch per batch of verdicts, each batch before its verdicts, each
    answer once; the lines without the marker are not worked on; a line whose work fails
    has no answer, and the helper goes on."""
    worked: list[bytes] = []

    def compute(raw: bytes) -> object:
        worked.append(raw)
        if b"2000" in raw:
            raise RecursionError  # (nested deeper than the helper's stack: left to the reader)
        return raw.count(b"x")

    told = scan.Told((b"x",), compute)
    skip = LineSkip("progress", "sessionId", told=told)
    lines = [b'{"a":"x%d"}\n' % n if n % 1000 == 0 else b'{"a":1}\n' for n in range(1, 5001)]
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"".join(lines))
    verdicts_read, verdicts_write = os.pipe()
    read_end, write_end = os.pipe()
    for end in (verdicts_write, write_end):
        os.set_blocking(end, False)  # (a full pipe would be an error here, not a wait)
    source = os.open(path, os.O_RDONLY)
    scan._scan(source, verdicts_write, skip, write_end)
    for end in (verdicts_write, write_end):
        os.close(end)
    with os.fdopen(verdicts_read, "rb") as verdicts:
        told_lines = [n for n, v in enumerate(array("Q", verdicts.read()), 1) if v]
    with os.fdopen(read_end, "rb") as answers:
        data = answers.read()
    batches = []
    while data:
        size = int.from_bytes(data[:4], "little")
        batches.append(marshal.loads(data[4 : 4 + size]))
        data = data[4 + size :]
    assert batches == [[(1000, 1), (3000, 1), (4000, 1)], [(5000, 1)]]
    assert len(worked) == 5
    # each line answered says so in its verdict, with its length; the others are 0
    assert told_lines == [1000, 3000, 4000, 5000]


def test_a_line_rewritten_after_the_helper_read_it_is_measured_here(
    helpers: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file rewritten in place between the two reads, a call of the same id and name
    with longer arguments: the call read here is measured, not the helper's."""
    path = _handmade(tmp_path / "calls.jsonl")
    # (20,000 progress records first: the calls are past what the reading has buffered)
    filler = b'{"type":"progress","sessionId":"s1","uuid":"p","data":{}}\n' * 20_000
    path.write_bytes(filler + path.read_bytes())
    after = path.read_bytes().replace(b'"git status"', b'"git status --porcelain=v2"')
    start = scan.LineScan.start.__func__  # type: ignore[attr-defined]  (the fixture's)

    def rewritten(cls: type[scan.LineScan], stream: object, skip: LineSkip) -> Any:
        made = start(cls, stream, skip)  # (the helper has read the file as it was)
        path.write_bytes(after)  # (the same file: what the reading reads from here on)
        return made

    monkeypatch.setattr(scan.LineScan, "start", classmethod(rewritten))
    taken = helpers[0]
    helped = _sessions(path, allowed=True)
    assert helpers[0] - taken == TOLD - 1  # (every call but the rewritten one)
    assert helped == _sessions(path, allowed=False)  # (the file as it is now)
    (call,) = [c for c in helped[0].tool_calls if c.call_id == "toolu_1"]
    assert call.arg_bytes == len('{"command":"git status --porcelain=v2"}')


@pytest.mark.parametrize("one_pass", [False, True], ids=["model path", "one pass"])
def test_an_export_with_the_helpers_measures_writes_the_bytes_of_one_without(
    helpers: list[int],
    tmp_path: Path,
    export_trace: Any,
    monkeypatch: pytest.MonkeyPatch,
    one_pass: bool,
) -> None:
    """The trace, byte for byte (checked against the contract and the importer's rules by
    `export_trace`), with the model path and with the Claude Code pass."""
    from agent_profiler import stream

    monkeypatch.setenv(stream.SWITCH, "1" if one_pass else "0")
    spotter = _plain(SPOTTER_TRANSCRIPT, tmp_path)
    alone = export_trace(spotter, args=("--jobs", "1"))
    assert helpers[0] == 0
    helped = export_trace(spotter)
    assert helpers[0] > 100  # (the spotter's calls: each taken once per reading)
    assert helped.path.read_bytes() == alone.path.read_bytes()
