"""A file's lines' verdicts worked out by a process with other work, a few hundred lines
at a time, and written without waiting (scan.Scanning: a one pass's export telling its
reading helper, stream/forked.py); and a reader handed the verdicts' pipe (scan.given)
takes them as it takes a scanning helper's."""

from __future__ import annotations

import gzip
import os
from array import array
from pathlib import Path
from typing import Any

import pytest
from test_scan import PROGRESS, _skip
from test_scan import spotter as spotter  # (the fixture)

from agent_profiler import scan
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.jsonl import LineSkip, read_jsonl


def _room(end: int, size: int = 2**20) -> None:
    import fcntl

    fcntl.fcntl(end, fcntl.F_SETPIPE_SZ, size)


def _helpers_verdicts(path: Path) -> bytes:
    """What scan.py's own helper writes for `path` (`_scan`, run here)."""
    read_end, write_end = os.pipe()
    _room(write_end)
    scan._scan(os.open(path, os.O_RDONLY), write_end, _skip())
    os.close(write_end)
    with os.fdopen(read_end, "rb") as verdicts:
        return verdicts.read()


def _drained(scanning: scan.Scanning, read_end: int) -> bytes:
    """Steps until it is done, the pipe read between them (as the helper reads it)."""
    os.set_blocking(read_end, False)
    got = bytearray()
    for _ in range(100_000):
        scanning.step()
        while True:
            try:
                chunk = os.read(read_end, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                return bytes(got)
            got += chunk
        if scanning.done:
            os.set_blocking(read_end, True)
            with os.fdopen(read_end, "rb") as rest:
                return bytes(got + rest.read())
    raise AssertionError("the scanning never ended")


def test_the_export_tells_what_the_helper_would(spotter: Path, tmp_path: Path) -> None:
    long = tmp_path / "long.jsonl"
    long.write_bytes((PROGRESS + b'{"type":"user"}\n') * scan.Scanning.STEP * 3 + PROGRESS)
    for path in (spotter, long):
        read_end, write_end = os.pipe()
        scanning = scan.Scanning(str(path), write_end, skip=_skip())
        told = _drained(scanning, read_end)
        assert told == _helpers_verdicts(path), path
        assert len(told) == 8 * path.read_bytes().count(b"\n")
    # (the spotter's progress records, and the long file's, are taken: not all zero)
    assert array("Q", _helpers_verdicts(long))[0] != 0


def test_a_step_is_a_few_hundred_lines_and_never_waits(tmp_path: Path) -> None:
    """Nobody reads the pipe (the helper is busy): steps go on, the verdicts held here up
    to `HELD` bytes, then they wait for room; read at last, they are all there, in order."""
    path = tmp_path / "long.jsonl"
    count = scan.Scanning.STEP * 40
    path.write_bytes(PROGRESS * count)
    read_end, write_end = os.pipe()
    _room(write_end, 4096)  # (the least a pipe may hold: 512 verdicts)
    scanning = scan.Scanning(str(path), write_end, skip=_skip())
    scanning.step()
    assert len(scanning._pending) == 8 * scan.Scanning.STEP - 4096  # one step, the pipe full
    for _ in range(100):  # more steps than the lines need: none waits
        scanning.step()
    assert not scanning.done
    assert len(scanning._pending) == 8 * count - 4096  # (HELD is more: every line told)
    told = _drained(scanning, read_end)
    assert told == _helpers_verdicts(path)


def test_steps_pause_once_held_is_reached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "long.jsonl"
    path.write_bytes(PROGRESS * scan.Scanning.STEP * 10)
    monkeypatch.setattr(scan.Scanning, "HELD", 8 * scan.Scanning.STEP * 2)
    read_end, write_end = os.pipe()
    _room(write_end, 4096)
    scanning = scan.Scanning(str(path), write_end, skip=_skip())
    for _ in range(20):
        scanning.step()
    # two steps' verdicts held, and the pipe's: the file read no further meanwhile
    assert len(scanning._pending) == scan.Scanning.HELD
    assert _drained(scanning, read_end) == _helpers_verdicts(path)


def test_the_export_stops_telling_once_the_helper_is_gone(spotter: Path) -> None:
    read_end, write_end = os.pipe()
    scanning = scan.Scanning(str(spotter), write_end, skip=_skip())
    os.close(read_end)
    scanning.step()  # (a write to a pipe no one reads: said by an error, not a signal)
    assert scanning.done
    with pytest.raises(OSError):
        os.fstat(write_end)  # closed
    scanning.step()  # nothing more, and no error
    scanning.close()


def test_a_file_that_cannot_be_read_is_told_of_no_line(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    scanning = scan.Scanning(str(tmp_path / "gone.jsonl"), write_end, skip=_skip())
    assert scanning.done
    with os.fdopen(read_end, "rb") as verdicts:
        assert verdicts.read() == b""  # (an end of file: the reader tests every line)


def _read(path: Path, skip: LineSkip) -> list[tuple[int, Any]]:
    with scan.allowed(False):  # (a one pass's helper: no scanning helper of its own)
        return list(read_jsonl(path, Diagnostics(), skip))


def test_a_reader_handed_the_verdicts_takes_them(
    spotter: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = _read(spotter, _skip())
    read_end, write_end = os.pipe()
    _room(write_end)
    os.write(write_end, _helpers_verdicts(spotter))
    os.close(write_end)
    tested: list[bytes] = []
    matches = LineSkip.matches

    def counted(skip: LineSkip, raw: bytes) -> bool:
        tested.append(raw)
        return matches(skip, raw)

    monkeypatch.setattr(LineSkip, "matches", counted)
    scan.given(read_end)
    assert _read(spotter, _skip()) == alone
    assert tested == []  # every line told: none tested here
    assert scan._given == []  # taken once: the next read is on its own
    assert _read(spotter, _skip()) == alone
    assert len(tested) > 100
    with pytest.raises(OSError):
        os.fstat(read_end)  # closed with the reading


def test_a_handed_pipe_is_let_go_where_the_file_is_compressed(
    spotter: Path, tmp_path: Path
) -> None:
    packed = tmp_path / "spotter.jsonl.gz"
    packed.write_bytes(gzip.compress(spotter.read_bytes()))
    read_end, write_end = os.pipe()
    scan.given(read_end)
    assert _read(packed, _skip()) == _read(spotter, _skip())
    assert scan._given == []
    with pytest.raises(OSError):
        os.fstat(read_end)  # closed: the teller's next write fails, and it stops
    os.close(write_end)
