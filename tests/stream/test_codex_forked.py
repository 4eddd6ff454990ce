"""The Codex pass with its reading in a forked helper (stream/forked.py), against the
same pass in one process: the same bytes and the same lines said, on every rollout of
tests/data and the corpus and on the hand-made ones of test_codex_stream_cases (what the
pass does not handle falls back for the same reason, the helper's `NotHandled` said in
this process); the helper's failures and this process's own fall back to the model
path's bytes, with no process left behind; and an export of one long rollout takes the
pass by default where the helper runs, and only there."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from test_codex_stream import _journals
from test_codex_stream_cases import CASES, SMALL, read_lines, write_lines
from test_pi_stream import refusals
from test_pi_stream_cases import both

from agent_profiler import stream
from agent_profiler.stream import codex as stream_codex
from agent_profiler.stream import codex_reading, forked
from agent_profiler.stream.log import NotHandled
from agent_profiler.writers import runs
from pass_spy import spy_on_try_group

NEVER = 2**62  # a FORK_AFTER no rollout reaches: the pass in one process


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The helpers forked from now on (their pids), wherever one may run (this test
    process is larger than HELPER_MEMORY, which is lifted)."""
    monkeypatch.setattr(runs, "HELPER_MEMORY", 2**40)
    if not runs.helper_can_run():
        pytest.skip("no helper can run here (not Linux, one core, or other threads)")
    monkeypatch.setattr(forked, "FORK_AFTER", 0)
    made: list[int] = []
    original = forked.ForkedReading.__init__

    def spy(self: forked.ForkedReading, pid: int, *args: Any) -> None:
        made.append(pid)
        original(self, pid, *args)

    monkeypatch.setattr(forked.ForkedReading, "__init__", spy)
    return made


def _no_child_left() -> bool:
    """Every helper was reaped (none running, none a zombie)."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def _said(exported: Any) -> tuple[str, str]:
    """What an export said, its output's name and size left out."""
    name = re.compile(re.escape(str(exported.path)) + r"( \([0-9.]+ [KM]?B\))?")
    return name.sub("OUT", exported.stdout), name.sub("OUT", exported.stderr)


def one_and_two(
    path: Path,
    export_trace: Any,
    monkeypatch: pytest.MonkeyPatch,
    forks: list[int],
    helpers: int = 1,
) -> tuple[Any, Any]:
    """`path` exported by the pass in one process, then with its reading forked (in
    `helpers` helpers: 0 for a group the pass does not try)."""
    monkeypatch.setenv(stream.SWITCH, "1")
    monkeypatch.setattr(forked, "FORK_AFTER", NEVER)
    one = export_trace(path, require_addition=False)
    assert forks == []
    monkeypatch.setattr(forked, "FORK_AFTER", 0)
    two = export_trace(path, require_addition=False)
    assert len(forks) == helpers
    assert _no_child_left()
    return one, two


@pytest.mark.parametrize("path", _journals())
def test_the_same_bytes_with_the_reading_forked(
    path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    one, two = one_and_two(path, export_trace, monkeypatch, forks)
    assert two.path.read_bytes() == one.path.read_bytes()
    assert _said(two) == _said(one)


@pytest.mark.parametrize("case", sorted(CASES))
def test_hand_made_rollouts_with_the_reading_forked(
    case: str, tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    change, _ = CASES[case]
    lines = read_lines(SMALL)
    change(lines)
    path = write_lines(tmp_path, SMALL, lines)
    hand_made_the_same(
        path, codex_reading, stream_codex.CodexPass, export_trace, monkeypatch, forks
    )


def hand_made_the_same(
    path: Path,
    reading: Any,
    writing: type,
    export_trace: Any,
    monkeypatch: pytest.MonkeyPatch,
    forks: list[int],
) -> None:
    """A hand-made journal read a record a batch (as the helper hands them on; `reading`:
    the reading side's module): the same bytes both ways, and a case the pass
    (`writing`) does not handle falls back for one reason both ways (the helper's
    NotHandled said here)."""
    monkeypatch.setattr(reading, "BATCH_LINES", 1)
    reasons = refusals(monkeypatch, writing)
    one, two = one_and_two(path, export_trace, monkeypatch, forks)
    assert two.path.read_bytes() == one.path.read_bytes()
    assert _said(two) == _said(one)
    assert reasons[: len(reasons) // 2] == reasons[len(reasons) // 2 :]


def test_damaged_lines_are_said_the_same_way_by_the_helper(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    # GIVEN a rollout with a cut line, a line that is no object and a type none knows:
    # warnings the helper's reading makes, and counts (lines read, records skipped)
    lines = SMALL.read_text().splitlines(keepends=True)
    lines.insert(20, '{"timestamp": "2026-02-23T19:34:41.000Z", "type": "event_msg", \n')
    lines.insert(30, "[1, 2]\n")
    lines.insert(40, '{"timestamp": "2026-02-23T19:34:42.000Z", "type": "mystery"}\n')
    path = tmp_path / SMALL.name
    path.write_text("".join(lines))
    one, two = one_and_two(path, export_trace, monkeypatch, forks)
    # THEN this process says what the helper read, as the pass in one process says it
    assert "not recognised" in one.stderr and "line is not a JSON object" in one.stderr
    assert _said(two) == _said(one)
    assert two.path.read_bytes() == one.path.read_bytes()


def _model_path(path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(stream.SWITCH, "0")
    expected = export_trace(path, require_addition=False)
    monkeypatch.setenv(stream.SWITCH, "1")
    return expected


def _raise(error: BaseException) -> Any:
    def failure() -> None:
        raise error

    return failure


FAILURES = pytest.mark.parametrize(
    ("failure", "reason"),
    [
        (_raise(NotHandled("a case the reading does not handle")), True),
        (_raise(RuntimeError("a bug")), False),
        (lambda: os._exit(3), False),  # (the helper ends without a word: killed, say)
    ],
    ids=["not-handled", "exception", "ended"],
)


def helper_fails(
    path: Path,
    reading: type,
    writing: type,
    failure: Any,
    reason: bool,
    export_trace: Any,
    monkeypatch: pytest.MonkeyPatch,
    forks: list[int],
) -> None:
    """The reading side (`reading`, in the helper, which is forked with it) fails after
    its first batch (`failure()` runs there): the pass (`writing`) lets the group go, the
    model path writes it, the helper is gone."""
    expected = _model_path(path, export_trace, monkeypatch)
    original = reading.batches  # type: ignore[attr-defined]

    def batches(self: Any) -> Any:
        for number, batch in enumerate(original(self)):
            if number == 1:
                failure()
            yield batch

    monkeypatch.setattr(sys.modules[reading.__module__], "BATCH_LINES", 4)
    monkeypatch.setattr(reading, "batches", batches)
    reasons = refusals(monkeypatch, writing)
    handled = spy_on_try_group(monkeypatch)
    got = export_trace(path, require_addition=False)
    assert len(forks) == 1
    assert handled == [False]
    assert got.path.read_bytes() == expected.path.read_bytes()
    assert _said(got) == _said(expected)
    assert reasons == (["a case the reading does not handle"] if reason else [])
    assert _no_child_left()


@FAILURES
def test_the_helper_failing_falls_back_to_the_model_path(
    failure: Any,
    reason: bool,
    export_trace: Any,
    monkeypatch: pytest.MonkeyPatch,
    forks: list[int],
) -> None:
    helper_fails(
        SMALL,
        codex_reading.CodexReading,
        stream_codex.CodexPass,
        failure,
        reason,
        export_trace,
        monkeypatch,
        forks,
    )


def writing_side_refuses(
    path: Path,
    reading: Any,
    writing: type,
    export_trace: Any,
    monkeypatch: pytest.MonkeyPatch,
    forks: list[int],
) -> None:
    """The writing side (this process: `writing`'s `_take`) refusing its second batch,
    the helper still reading: the helper is killed and reaped, and the model path writes
    the group."""
    expected = _model_path(path, export_trace, monkeypatch)
    monkeypatch.setattr(reading, "BATCH_LINES", 4)
    original = writing._take  # type: ignore[attr-defined]
    taken: list[int] = []

    def take(self: Any, batch: Any) -> None:
        taken.append(1)
        if len(taken) == 2:
            raise NotHandled("the writing side refuses")
        original(self, batch)

    monkeypatch.setattr(writing, "_take", take)
    got = export_trace(path, require_addition=False)
    assert len(forks) == 1 and len(taken) == 2
    assert _no_child_left()
    assert got.path.read_bytes() == expected.path.read_bytes()


def test_the_writing_side_failing_ends_the_helper(
    export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    writing_side_refuses(
        SMALL, codex_reading, stream_codex.CodexPass, export_trace, monkeypatch, forks
    )


def taken_by_default_when_long(
    path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    """Below FORK_AFTER the model path, no helper; at it the pass, its reading in a
    helper, which writes what the model path writes; with the switch at 0, the model
    path."""
    monkeypatch.delenv(stream.SWITCH, raising=False)
    monkeypatch.setattr(forked, "FORK_AFTER", path.stat().st_size + 1)
    handled = spy_on_try_group(monkeypatch)
    export_trace(path, require_addition=False)
    assert handled == [] and forks == []
    monkeypatch.setattr(forked, "FORK_AFTER", path.stat().st_size)
    assert both(path, export_trace, monkeypatch)
    assert len(forks) == 1
    monkeypatch.setenv(stream.SWITCH, "0")
    before = len(handled)
    export_trace(path, require_addition=False)
    assert len(handled) == before and len(forks) == 1
    assert _no_child_left()


def test_a_long_rollout_alone_takes_the_pass_by_default_where_the_helper_runs(
    export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    taken_by_default_when_long(SMALL, export_trace, monkeypatch, forks)
