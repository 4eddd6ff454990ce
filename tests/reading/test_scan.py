"""A long plain journal's skippable lines told by a helper on another core (scan.py): the
reader gets the records its own byte test gives, line for line, with the helper, without
it, and when the helper fails; a line that changed since the helper read it is parsed; a
line the helper did not tell is tested here; the helper never outlives the reading; and
none runs where it may not (a folder's workers, `--jobs 1`, a compressed or short file)."""

from __future__ import annotations

import gzip
import os
import shutil
from array import array
from pathlib import Path
from typing import Any

import pytest

from agent_profiler import pipeline, scan
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.jsonl import LineSkip, read_jsonl
from agent_profiler.writers import runs
from forks import FORK_TOLD, assert_helper_dies_with_its_parent, count_forks
from realtp import SHARED
from samples import SPOTTER_TRANSCRIPT

SPOTTER = SPOTTER_TRANSCRIPT
CORPUS = SHARED / "corpus" / "claude-code" / "transcripts"
MESSAGE = b'"message":'


def _skip() -> LineSkip:
    """The transcript reader's test (claude_transcript.transcript_lines), always on."""
    skip = LineSkip("progress", "sessionId", unless=(MESSAGE,))
    skip.active = True
    return skip


@pytest.fixture
def spotter(tmp_path: Path) -> Path:
    """The spotter transcript as a plain file (the helper reads plain files only)."""
    plain = tmp_path / "spotter.jsonl"
    with gzip.open(SPOTTER) as packed, plain.open("wb") as out:
        shutil.copyfileobj(packed, out)
    return plain


class _Scans:
    """The helpers started from now on: each LineScan, and its pid when it started.
    With `done`, each helper is waited for (and reaped) before the reading goes on, and
    must have ended with that exit code: its verdicts are all in the pipe."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, done: int | None = None) -> None:
        self.started: list[tuple[scan.LineScan, int]] = []
        start = scan.LineScan.start.__func__  # type: ignore[attr-defined]

        def spied(cls: type[scan.LineScan], stream: object, skip: LineSkip) -> Any:
            made = start(cls, stream, skip)
            if made is not None:
                assert made._pid is not None and made._pid > 0
                self.started.append((made, made._pid))
                if done is not None:
                    _, status = os.waitpid(made._pid, 0)
                    assert os.waitstatus_to_exitcode(status) == done
                    made._pid = None
            return made

        monkeypatch.setattr(scan.LineScan, "start", classmethod(spied))


def _read(path: Path, *, allowed: bool, skip: LineSkip | None = None) -> list[tuple[int, Any]]:
    """Every (line, value) `read_jsonl` yields for `path` with the transcript's test."""
    diagnostics = Diagnostics()
    with scan.allowed(allowed):
        return list(read_jsonl(path, diagnostics, skip or _skip()))


def _helpers_may_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan, "SCAN_AFTER", 0)
    monkeypatch.setattr(runs, "HELPER_MEMORY", 2**40)
    if not runs.helper_can_run():
        pytest.skip("a helper runs on Linux with a second core and no other thread")


def _transcripts(spotter: Path) -> list[Path]:
    found = [spotter]
    if CORPUS.is_dir():
        found += sorted(CORPUS.glob("*.jsonl"))
    return found


def test_the_helper_tells_every_line_as_the_reader_would(
    spotter: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _helpers_may_run(monkeypatch)
    scans = _Scans(monkeypatch, done=0)  # (every verdict sent before the reading goes on)
    for path in _transcripts(spotter):
        alone = _read(path, allowed=False)
        assert not scans.started
        helped = _read(path, allowed=True)
        ((made, _),) = scans.started
        assert helped == alone, path
        assert len(made.values) == path.read_bytes().count(b"\n"), path  # (complete lines)
        scans.started.clear()
    taken = [value for _, value in _read(spotter, allowed=True) if isinstance(value, bytes)]
    assert len(taken) > 100  # (the spotter transcript's progress records)


def test_the_reader_takes_the_helpers_verdicts(
    spotter: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the helper has told a line, this process does not test it again."""
    _helpers_may_run(monkeypatch)
    alone = _read(spotter, allowed=False)
    _Scans(monkeypatch, done=0)
    tested: list[int] = []
    matches = LineSkip.matches

    def counted(skip: LineSkip, raw: bytes) -> bool:
        tested.append(os.getpid())
        return matches(skip, raw)

    monkeypatch.setattr(LineSkip, "matches", counted)
    assert _read(spotter, allowed=True) == alone
    assert os.getpid() not in tested  # (the helper's own tests were in the helper)


def test_the_reader_never_waits_for_the_helper(
    spotter: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A helper that is behind (here: asleep) costs nothing but its own start: this
    process tests the lines it has not told yet."""
    import time

    _helpers_may_run(monkeypatch)
    alone = _read(spotter, allowed=False)
    monkeypatch.setattr(scan, "_scan", lambda source, out, skip: time.sleep(60))
    scans = _Scans(monkeypatch)
    began = time.monotonic()
    assert _read(spotter, allowed=True) == alone
    assert time.monotonic() - began < 30  # (not the helper's 60 s)
    ((made, pid),) = scans.started
    assert made._pid is None
    with pytest.raises(ChildProcessError):  # killed and reaped at the end of the reading
        os.waitpid(pid, os.WNOHANG)


def test_an_export_with_the_helper_writes_the_bytes_of_one_without(
    spotter: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An export in one process reads with a helper; `--jobs 1` with none: the same
    trace (checked against the contract and the importer's rules by `export_trace`)."""
    _helpers_may_run(monkeypatch)
    scans = _Scans(monkeypatch, done=0)
    alone = export_trace(spotter, args=("--jobs", "1"))
    assert not scans.started
    helped = export_trace(spotter)
    ((made, _),) = scans.started
    assert made.values  # (its verdicts were there to be read)
    assert helped.path.read_bytes() == alone.path.read_bytes()


def test_the_one_pass_reads_with_the_helper_too(
    spotter: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Claude Code pass (stream/claude.py) reads as the model path does: with a helper
    in one process, the same trace as with none."""
    from agent_profiler import stream
    from pass_spy import spy_on_try_group

    _helpers_may_run(monkeypatch)
    monkeypatch.setenv(stream.SWITCH, "1")
    handled = spy_on_try_group(monkeypatch)
    scans = _Scans(monkeypatch, done=0)
    alone = export_trace(spotter, args=("--jobs", "1"))
    assert not scans.started
    helped = export_trace(spotter)
    assert handled == [True, True]
    ((made, _),) = scans.started
    assert made.values
    assert helped.path.read_bytes() == alone.path.read_bytes()


def _scan_of(values: list[int], skip: LineSkip) -> scan.LineScan:
    """A LineScan reading `values` from a pipe whose writer has closed (no helper)."""
    read_end, write_end = os.pipe()
    os.write(write_end, array("Q", values).tobytes())
    os.close(write_end)
    return scan.LineScan(None, read_end, skip)


PROGRESS = (
    b'{"parentUuid":"p","sessionId":"s","type":"progress","data":{"type":"hook_progress"},'
    b'"uuid":"u","timestamp":"2026-01-01T00:00:00.000Z"}\n'
)


def _verdict(raw: bytes, skip: LineSkip) -> int:
    """What the helper sends for a line its test takes."""
    return len(raw) << 11 | raw.find(skip.marker) + 1


def test_a_line_is_taken_only_if_it_is_the_line_the_helper_took() -> None:
    skip = _skip()
    assert skip.matches(PROGRESS)
    right = _verdict(PROGRESS, skip)
    longer = PROGRESS.replace(b'"u"', b'"uu"')  # (still a progress record: the test takes it)
    moved = PROGRESS.replace(b'"s"', b'"st"').replace(b'"u"', b'""')  # its type 1 further
    assert len(moved) == len(PROGRESS) and skip.matches(moved)
    lines = [PROGRESS, longer, moved, PROGRESS]
    found = _scan_of([right, right, right, 0], skip)
    try:
        # THEN the line told is taken; one of another length or with its type elsewhere
        # (the file changed since the helper read it) is parsed, as is one it did not take
        assert [found.matches(n, raw) for n, raw in enumerate(lines, 1)] == [
            True,
            False,
            False,
            False,
        ]
        # and a line it never told (it ended first) is tested here
        assert found.matches(5, PROGRESS) is True
        assert found.matches(6, PROGRESS.replace(b'"data"', b'"message":1,"data"')) is False
    finally:
        found.close()


def test_a_part_the_reader_adds_to_unless_is_looked_for_here() -> None:
    """The transcript reader adds the first record's parent to `unless` while it looks for
    it: a line the helper took that holds it is parsed."""
    skip = _skip()
    found = _scan_of([_verdict(PROGRESS, skip)] * 2, skip)
    try:
        skip.unless = (MESSAGE, b'"uuid":"u"')
        assert found.matches(1, PROGRESS) is False
        skip.unless = (MESSAGE, b'"uuid":"v"')
        assert found.matches(2, PROGRESS) is True
    finally:
        found.close()


def test_a_helper_that_fails_leaves_the_test_here(
    spotter: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _helpers_may_run(monkeypatch)
    scans = _Scans(monkeypatch, done=1)  # (its 50 verdicts sent, then its failure)

    def failing(source: int, out: int, skip: LineSkip) -> None:
        os.lseek(source, 0, os.SEEK_SET)
        with open(source, "rb", closefd=False) as lines:  # the first 50 lines' verdicts
            first = [next(lines) for _ in range(50)]
        os.write(out, array("Q", [_verdict(r, skip) if skip.matches(r) else 0 for r in first]))
        raise RuntimeError("the helper fails")

    monkeypatch.setattr(scan, "_scan", failing)
    alone = _read(spotter, allowed=False)
    helped = _read(spotter, allowed=True)
    assert len(scans.started) == 1 and helped == alone
    assert len(scans.started[0][0].values) == 50


def test_closing_the_reading_early_ends_the_helper(
    spotter: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _helpers_may_run(monkeypatch)
    scans = _Scans(monkeypatch)

    def slow(source: int, out: int, skip: LineSkip) -> None:
        import time

        time.sleep(60)

    monkeypatch.setattr(scan, "_scan", slow)
    with scan.allowed(True):
        lines = read_jsonl(spotter, Diagnostics(), _skip())
        for _ in range(5):
            next(lines)
        lines.close()  # (as a reader that stops early, or an interrupted one, does)
    ((made, pid),) = scans.started
    assert pid > 0 and made._pid is None and made._fd < 0
    with pytest.raises(ChildProcessError):  # killed and reaped, not left asleep
        os.waitpid(pid, os.WNOHANG)


def test_no_helper_where_none_may_or_need_run(
    spotter: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _helpers_may_run(monkeypatch)
    scans = _Scans(monkeypatch)
    _read(spotter, allowed=False)  # not allowed (not an export in one process)
    _read(SPOTTER, allowed=True)  # compressed: the test is this process's
    monkeypatch.setattr(scan, "SCAN_AFTER", spotter.stat().st_size + 1)
    _read(spotter, allowed=True)  # shorter than SCAN_AFTER
    monkeypatch.setattr(scan, "SCAN_AFTER", 0)
    monkeypatch.setattr(runs, "HELPER_MEMORY", 0)
    _read(spotter, allowed=True)  # writers/runs.py's rules say no
    assert scans.started == []
    monkeypatch.setattr(runs, "HELPER_MEMORY", 2**40)
    _read(spotter, allowed=True)
    assert len(scans.started) == 1  # (the rules above were what said no)


def test_only_an_export_in_one_process_reads_with_a_helper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pipeline allows a helper where it allows a writing helper (writers/runs.py):
    an export read in this process, not a folder's worker, not `--jobs 1`, not `summary`."""
    from agent_profiler.loader import LoadResult, plan_inputs
    from agent_profiler.options import ReadOptions
    from agent_profiler.writers import TraceFacts

    asked: list[bool] = []
    read_group = pipeline.read_group

    def spied(*args: Any, **keywords: Any) -> Any:
        asked.append(scan._allowed[0])
        return read_group(*args, **keywords)

    monkeypatch.setattr(pipeline, "read_group", spied)
    (group,) = plan_inputs([SPOTTER], None, LoadResult())
    task = pipeline.GroupTask(0, group, ReadOptions())
    for use, out, allowed in (
        (pipeline.EncodeTrace(TraceFacts(), helper=True), True, True),
        (pipeline.EncodeTrace(TraceFacts(), helper=True), False, False),  # a worker's
        (pipeline.EncodeTrace(TraceFacts(), helper=False), True, False),  # --jobs 1
        (pipeline.SummariseRows(None), True, False),
    ):
        asked.clear()
        pipeline.run_group(task, use, {}, _Sink() if out else None)
        assert asked == [allowed], use
    assert scan._allowed == [False]  # (as it was, once the group is read)


class _Sink:
    def write(self, data: bytes) -> int:
        return len(data)


def test_a_signal_as_the_helper_starts_ends_the_helper(
    spotter: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C held back across the fork is raised when the mask is lifted, before the
    reading holds the helper: `start` kills and reaps it on its way out."""
    import contextlib

    _helpers_may_run(monkeypatch)

    @contextlib.contextmanager
    def interrupted_at_the_end() -> Any:
        yield None
        raise KeyboardInterrupt

    forks = count_forks(monkeypatch)
    monkeypatch.setattr(runs, "signals_held", interrupted_at_the_end)
    with pytest.raises(KeyboardInterrupt), scan.allowed(True):
        list(read_jsonl(spotter, Diagnostics(), _skip()))
    (pid,) = forks
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_the_helper_stops_at_a_line_still_being_written(tmp_path: Path) -> None:
    """A last line without its newline may be finished before the next read: read on, its
    rest would be a line of its own, and every verdict after it would be one line off."""
    skip = _skip()
    path = tmp_path / "live.jsonl"
    path.write_bytes(PROGRESS + b'{"type":"user"}\n' + PROGRESS + PROGRESS[:40])
    read_end, write_end = os.pipe()
    source = os.open(path, os.O_RDONLY)
    scan._scan(source, write_end, skip)  # (here, not in a helper)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as verdicts:
        told = array("Q", verdicts.read())
    assert list(told) == [_verdict(PROGRESS, skip), 0, _verdict(PROGRESS, skip)]


def test_the_helper_sends_its_verdicts_in_batches_and_the_rest(tmp_path: Path) -> None:
    skip = _skip()
    lines = [PROGRESS, b'{"type":"user"}\n'] * scan._BATCH + [PROGRESS]
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"".join(lines))
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)  # (a full pipe would be an error here, not a wait)
    _room(write_end)
    source = os.open(path, os.O_RDONLY)
    scan._scan(source, write_end, skip)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as verdicts:
        told = list(array("Q", verdicts.read()))
    assert told == [_verdict(PROGRESS, skip), 0] * scan._BATCH + [_verdict(PROGRESS, skip)]


def _room(end: int) -> None:
    """Room in the pipe for a test's verdicts (3 batches)."""
    import fcntl

    fcntl.fcntl(end, fcntl.F_SETPIPE_SZ, 2**20)


def test_the_pipe_holds_a_long_transcripts_verdicts(
    spotter: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The helper is not held up by a full pipe: 2**20 bytes, the verdicts of 131,072
    lines (the 100 MB bench transcript has 70,000)."""
    import fcntl

    _helpers_may_run(monkeypatch)
    scans = _Scans(monkeypatch)
    with scan.allowed(True):
        lines = read_jsonl(spotter, Diagnostics(), _skip())
        next(lines)
        ((made, _),) = scans.started
        assert fcntl.fcntl(made._fd, fcntl.F_GETPIPE_SZ) >= scan._PIPE
        lines.close()


def _open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_a_refused_fork_leaves_nothing_open(spotter: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _helpers_may_run(monkeypatch)

    def refused() -> int:
        raise OSError(11, "Resource temporarily unavailable")

    before = _open_descriptors()
    monkeypatch.setattr(os, "fork", refused)
    alone = _read(spotter, allowed=False)
    assert _read(spotter, allowed=True) == alone
    assert _open_descriptors() == before


def test_a_helper_reaped_elsewhere_is_let_be(
    spotter: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One reaped behind the reading's back (a caller that reaps every child) is not an
    error at the end of the reading."""
    _helpers_may_run(monkeypatch)
    scans = _Scans(monkeypatch)
    with scan.allowed(True):
        lines = read_jsonl(spotter, Diagnostics(), _skip())
        next(lines)
        ((made, pid),) = scans.started
        os.waitpid(pid, 0)
        lines.close()
    assert made._pid is None


@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
def test_ctrl_c_and_sigterm_end_a_helper_at_once(
    spotter: Path, monkeypatch: pytest.MonkeyPatch, signum: str
) -> None:
    """As a worker: Ctrl-C ends it with 130 without a traceback, SIGTERM by the signal,
    each at once (held across the fork, then taken again)."""
    import signal
    import time

    _helpers_may_run(monkeypatch)
    number = getattr(signal, signum)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # (as at a terminal)
    try:
        monkeypatch.setattr(scan, "_scan", lambda source, out, skip: time.sleep(60))
        scans = _Scans(monkeypatch)
        with scan.allowed(True):
            lines = read_jsonl(spotter, Diagnostics(), _skip())
            next(lines)
            ((made, pid),) = scans.started
            began = time.monotonic()
            os.kill(pid, number)
            _, status = os.waitpid(pid, 0)
            made._pid = None
            lines.close()
    finally:
        signal.signal(signal.SIGINT, before)
    assert time.monotonic() - began < 30
    if number == signal.SIGINT:
        assert os.waitstatus_to_exitcode(status) == 130
    else:
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM


def test_a_verdict_split_across_reads_is_joined() -> None:
    """The pipe may hand over part of a verdict (its writes are whole batches, its reads
    whatever has arrived): the part waits for the rest."""
    skip = _skip()
    values = [_verdict(PROGRESS, skip) if n % 3 else 0 for n in range(300)]
    data = array("Q", values).tobytes()
    read_end, write_end = os.pipe()
    os.write(write_end, data[:12])  # one verdict and a half
    found = scan.LineScan(None, read_end, skip)
    try:
        assert found.matches(1, PROGRESS) is False  # (its verdict: 0)
        assert len(found.values) == 1
        os.write(write_end, data[12:])
        os.close(write_end)
        assert found.matches(300, PROGRESS) is True
        assert list(found.values) == values
    finally:
        found.close()


def test_a_helper_behind_is_looked_at_again_only_after_the_lines_ahead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """This process never waits for the helper: when no verdict has come for a line, it
    tests that line and the next `_AHEAD` ones itself before it reads the pipe again."""
    skip = _skip()
    read_end, write_end = os.pipe()  # (the helper has sent nothing yet)
    found = scan.LineScan(None, read_end, skip)
    reads: list[int] = []
    real_read = os.read

    def counted(fd: int, size: int) -> bytes:
        reads.append(fd)
        return real_read(fd, size)

    monkeypatch.setattr(scan.os, "read", counted)
    try:
        lines = 4 * scan._AHEAD
        assert all(found.matches(n, PROGRESS) for n in range(1, lines + 1))
        assert len(reads) == lines // scan._AHEAD
        # the verdicts come: the next look reads them, and they are used from then on
        os.write(write_end, array("Q", [0] * (lines + 1)).tobytes())
        assert not found.matches(lines + 1, PROGRESS)  # (its verdict, not the test: 0)
    finally:
        found.close()
        os.close(write_end)


def test_a_file_of_just_the_size_is_scanned(spotter: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _helpers_may_run(monkeypatch)
    scans = _Scans(monkeypatch)
    monkeypatch.setattr(scan, "SCAN_AFTER", spotter.stat().st_size)
    _read(spotter, allowed=True)
    assert len(scans.started) == 1


SCAN_DRIVER = """
import os, sys, time
sys.path[:0] = [{src!r}]
from agent_profiler import scan
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.jsonl import LineSkip, read_jsonl
from agent_profiler.writers import runs
scan.SCAN_AFTER, runs.HELPER_MEMORY = 0, 2**40
scan._scan = lambda source, out, skip: time.sleep(60)
{fork_told}
skip = LineSkip("progress", "sessionId", unless=(b'"message":',))
skip.active = True
with scan.allowed(True):
    lines = read_jsonl({journal!r}, Diagnostics(), skip)
    next(lines)
    time.sleep(60)
"""


def test_a_helper_dies_with_its_parent(
    spotter: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parent killed outright (SIGKILL, the OOM killer) takes its helper with it
    (PR_SET_PDEATHSIG, as the workers): none is left reading its file."""
    _helpers_may_run(monkeypatch)
    driver = tmp_path / "driver.py"
    src = str(Path(scan.__file__).resolve().parents[1])
    driver.write_text(SCAN_DRIVER.format(src=src, journal=str(spotter), fork_told=FORK_TOLD))
    assert_helper_dies_with_its_parent(driver)
