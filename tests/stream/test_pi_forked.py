"""The Pi pass with its reading in a forked helper (stream/forked.py), against the same
pass in one process: the same bytes and the same lines said, on every Pi journal of
tests/data and the corpus and on random hand-made sessions of test_pi_stream_cases (what
the pass does not handle falls back for the same reason, the helper's `NotHandled` said
in this process); the helper's failures and this process's own fall back to the model
path's bytes, with no process left behind; and a long journal has its reading forked by
default where the helper runs (the pass is Pi's default at any size)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_codex_forked import (
    FAILURES,
    _no_child_left,
    _said,
    hand_made_the_same,
    helper_fails,
    one_and_two,
    writing_side_refuses,
)
from test_codex_forked import forks as forks  # (the fixture)
from test_pi_stream import _journals, refusals
from test_pi_stream_cases import both, random_session

sys.path.insert(0, str(Path(__file__).parent.parent / "adapters" / "pi"))
from test_pi import Journal

from agent_profiler import stream
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.stream import forked, pi_reading
from agent_profiler.stream import pi as stream_pi
from agent_profiler.stream.log import ReadAgain
from pass_spy import spy_on_try_group
from shared_paths import TESTS


@pytest.mark.parametrize("path", _journals())
def test_the_same_bytes_with_the_reading_forked(
    path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    reasons = refusals(monkeypatch, stream_pi.PiPass)
    one, two = one_and_two(path, export_trace, monkeypatch, forks)
    assert two.path.read_bytes() == one.path.read_bytes()
    assert _said(two) == _said(one)
    # (one that falls back: for the same reason both ways, the helper's said here)
    assert reasons[: len(reasons) // 2] == reasons[len(reasons) // 2 :]


# Random sessions of test_pi_stream_cases: with and without compactions, calls ending in
# any order or never, branches, entries at one time; some fall back.
SEEDS = [0, 1, 2, 5, 8, 100, 101, 104]


@pytest.mark.parametrize("seed", SEEDS)
def test_hand_made_sessions_with_the_reading_forked(
    seed: int, tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    together = 0.05 if seed >= 100 else 0.0
    j = random_session(seed, compacts=seed % 3 == 2 or seed % 2 == 0, together=together)
    path = j.write(tmp_path / f"random-{seed}.jsonl")
    hand_made_the_same(path, pi_reading, stream_pi.PiPass, export_trace, monkeypatch, forks)


def _base(tmp_path: Path) -> Path:
    return random_session(1, compacts=False).write(tmp_path / "journal.jsonl")


def test_damaged_lines_are_said_the_same_way_by_the_helper(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    # GIVEN a journal with a cut line, a line that is no object and a type none knows:
    # warnings the helper's reading makes, and counts (lines read, records skipped)
    lines = _base(tmp_path).read_text().splitlines(keepends=True)
    lines.insert(6, '{"type": "message", "id": "cut", \n')
    lines.insert(9, "[1, 2]\n")
    lines.insert(12, '{"type": "mystery", "id": "m1", "timestamp": "2026-01-01T00:00:09.000Z"}\n')
    path = tmp_path / "damaged.jsonl"
    path.write_text("".join(lines))
    handled = spy_on_try_group(monkeypatch)
    one, two = one_and_two(path, export_trace, monkeypatch, forks)
    assert handled == [True, True]  # (the pass wrote it, both ways)
    # THEN this process says what the helper read, as the pass in one process says it
    assert "not recognised" in one.stderr and "not a JSON object" in one.stderr
    assert _said(two) == _said(one)
    assert two.path.read_bytes() == one.path.read_bytes()


@FAILURES
def test_the_helper_failing_falls_back_to_the_model_path(
    failure: Any,
    reason: bool,
    tmp_path: Path,
    export_trace: Any,
    monkeypatch: pytest.MonkeyPatch,
    forks: list[int],
) -> None:
    helper_fails(
        _base(tmp_path),
        pi_reading.PiReading,
        stream_pi.PiPass,
        failure,
        reason,
        export_trace,
        monkeypatch,
        forks,
    )


def test_the_writing_side_failing_ends_the_helper(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    writing_side_refuses(
        _base(tmp_path), pi_reading, stream_pi.PiPass, export_trace, monkeypatch, forks
    )


def test_a_journal_from_fork_after_to_fork_until_has_its_reading_forked_by_default(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    # GIVEN the default switch: the pass is Pi's at any size
    path = _base(tmp_path)
    size = path.stat().st_size
    monkeypatch.delenv(stream.SWITCH, raising=False)
    handled = spy_on_try_group(monkeypatch)
    # WHEN the journal is below FORK_AFTER: the pass in this process
    monkeypatch.setattr(forked, "FORK_AFTER", size + 1)
    below = export_trace(path, require_addition=False)
    assert handled == [True] and forks == []
    # WHEN it is at FORK_AFTER but past FORK_UNTIL (the pair's memory would pass the
    # target): the pass in this process too, the same bytes
    monkeypatch.setattr(forked, "FORK_AFTER", size)
    monkeypatch.setattr(stream_pi, "FORK_UNTIL", size - 1)
    past = export_trace(path, require_addition=False)
    assert handled == [True, True] and forks == []
    assert past.path.read_bytes() == below.path.read_bytes()
    # WHEN it is at FORK_AFTER and at FORK_UNTIL: its reading in a helper, writing what
    # the model path writes
    monkeypatch.setattr(stream_pi, "FORK_UNTIL", size)
    assert both(path, export_trace, monkeypatch)
    assert len(forks) == 1
    assert _no_child_left()


LONG = TESTS / "data" / "journals" / "pi" / "pi-mono_large-session_v1.jsonl"


def test_a_lean_reading_of_a_chain_lets_go_of_its_entries_and_says_the_same() -> None:
    # GIVEN the large session (a chain: each entry the child of the one before), read as a
    # helper reads it (lean, letting go), and as the pass in one process reads it
    def read(**lean: bool) -> tuple[Any, list[Any]]:
        reading = pi_reading.PiReading(LONG, Diagnostics(), **lean)
        batches = list(reading.batches())
        gone = sum(1 for entry in reading.builder.entries.values() if entry is None)
        ending = reading.ending()
        session, more = reading.finish(set())
        return (batches, ending, replace(session, responses=()), more), [gone]

    kept, [none_gone] = read()
    lean, [gone] = read(lean=True, let_go=True)
    # THEN it let go of nearly every entry, and handed on the same batches and session
    # (the session's facts counted from what it kept: the final branch's length)
    assert none_gone == 0 and gone > 0.9 * LONG.read_bytes().count(b"\n")
    assert lean == kept


def _branched(tmp_path: Path) -> Path:
    """A chain, then a prompt that branches from its first answer."""
    j = Journal()
    u1 = j.user(None, "look at the repo")
    a1 = j.assistant(u1, "which file?", 5_000)
    leaf = a1
    for n in range(6):
        u = j.user(leaf, f"step {n}")
        leaf = j.assistant(u, "done", 5_100 + 100 * n)
    u = j.user(a1, "back to the start")  # (a branch: its parent is long let go)
    j.assistant(u, "ok", 5_050)
    return j.write(tmp_path / "branched.jsonl")


def test_an_entry_off_the_chain_reads_the_journal_again_keeping_them(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    # GIVEN a session whose last prompt branches from an entry a lean reading let go
    path = _branched(tmp_path)
    monkeypatch.setattr(pi_reading, "BATCH_LINES", 1)
    with pytest.raises(ReadAgain):
        list(pi_reading.PiReading(path, Diagnostics(), lean=True, let_go=True).batches())
    # WHEN it is exported with its reading in a helper that lets go
    monkeypatch.setattr(stream_pi, "LET_GO_AFTER", 0)
    reasons = refusals(monkeypatch, stream_pi.PiPass)
    one, two = one_and_two(path, export_trace, monkeypatch, forks)
    # THEN the pass read it again in this process (no second helper), and wrote what it
    # writes in one process, which is what the model path writes
    assert reasons == ["an entry off the chain of the entries let go"]
    assert two.path.read_bytes() == one.path.read_bytes()
    assert _said(two) == _said(one)
    assert both(path, export_trace, monkeypatch)


def test_a_chain_exported_with_its_entries_let_go_is_the_same_trace(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    monkeypatch.setattr(stream_pi, "LET_GO_AFTER", 0)
    reasons = refusals(monkeypatch, stream_pi.PiPass)
    one, two = one_and_two(LONG, export_trace, monkeypatch, forks)
    assert reasons == []
    assert two.path.read_bytes() == one.path.read_bytes()
    assert _said(two) == _said(one)


def _refused(path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Why the pass fell back on `path` (it must), the model path's bytes written."""
    said = refusals(monkeypatch, stream_pi.PiPass)
    assert both(path, export_trace, monkeypatch) is False
    return said


def test_a_failed_responses_call_with_a_result_falls_back(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a request that failed with a call in it, whose result came all the same
    j = Journal()
    u1 = j.user(None, "read it")
    failed = j.assistant(u1, "", 2_000, stop="error", calls=(("c1", "read"),))
    r1 = j.result(failed, "c1", "it ran")
    j.assistant(r1, "done", 2_100)
    path = j.write(tmp_path / "failed-call-ran.jsonl")
    # THEN the pass falls back (its response's flows were written without the call)
    assert _refused(path, export_trace, monkeypatch) == [
        "a call of a failed response with a result"
    ]


def test_a_result_after_the_conversation_moved_on_falls_back(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a call the next prompt ended (no result yet), then a request written with it
    # ended there, then its result after all
    j = Journal()
    u1 = j.user(None, "read it")
    a1 = j.assistant(u1, "", 2_000, calls=(("c1", "read"),))
    u2 = j.user(a1, "meanwhile")
    a2 = j.assistant(u2, "an answer", 2_100)
    r1 = j.result(a2, "c1", "late")
    j.assistant(r1, "done", 2_200)
    path = j.write(tmp_path / "late-result.jsonl")
    # (a batch a line: the request after the prompt is taken before the result is read)
    monkeypatch.setattr(pi_reading, "BATCH_LINES", 1)
    assert _refused(path, export_trace, monkeypatch) == [
        "a call's result read after the conversation moved on"
    ]


def test_calls_without_a_measured_request_fall_back(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a session whose only request got no usage, with a call that ran
    j = Journal()
    u1 = j.user(None, "read it")
    a1 = j.assistant(u1, "", 0, stop="toolUse", calls=(("c1", "read"),))
    j.result(a1, "c1", "it ran")
    path = j.write(tmp_path / "unmeasured-call.jsonl")
    assert _refused(path, export_trace, monkeypatch) == [
        "compactions or calls without a measured request"
    ]


def _chain(tmp_path: Path, then: str | None = None) -> Path:
    """A session of the current format (ids and parent ids) that is one chain of entries
    with calls and results, then (`then`) an entry of that type."""
    j = Journal()
    leaf = j.user(None, "start")
    for n in range(8):
        a = j.assistant(leaf, "", 2_000 + 50 * n, calls=((f"c{n}", "read"),))
        leaf = j.assistant(j.result(a, f"c{n}", "r" * 300), "ok", 2_100 + 50 * n)
        leaf = j.user(leaf, f"step {n}")
    if then is not None:
        j.entry(then, leaf, summary="so far", firstKeptEntryId=leaf, tokensBefore=3_000)
    return j.write(tmp_path / "chain.jsonl")


def test_a_lean_reading_of_a_chain_of_the_current_format_reads_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a chain with ids and parent ids, read a line a batch, letting go
    monkeypatch.setattr(pi_reading, "BATCH_LINES", 1)
    path = _chain(tmp_path)
    reading = pi_reading.PiReading(path, Diagnostics(), lean=True, let_go=True)
    batches = list(reading.batches())
    # THEN it read to the end, letting go of the entries behind the last request
    assert len(batches) == 17 and reading.let_go_to > 20  # (a batch a request, and the end)
    # WHEN a compaction follows (it reads the history it keeps): it stops to read again
    monkeypatch.setattr(pi_reading, "BATCH_LINES", 1)
    again = pi_reading.PiReading(_chain(tmp_path, "compaction"), Diagnostics(), lean=True,
                                 let_go=True)  # fmt: skip
    with pytest.raises(ReadAgain):
        list(again.batches())


def test_a_branch_of_a_version_2_session_stops_a_lean_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a session of format 2 (ids and parent ids) whose last prompt branches from an
    # entry a lean reading let go
    monkeypatch.setattr(pi_reading, "BATCH_LINES", 1)
    j = Journal(version=2)
    u1 = j.user(None, "look at the repo")
    a1 = j.assistant(u1, "which file?", 5_000)
    leaf = a1
    for n in range(4):
        leaf = j.assistant(j.user(leaf, f"step {n}"), "done", 5_100 + 100 * n)
    j.assistant(j.user(a1, "back to the start"), "ok", 5_050)
    reading = pi_reading.PiReading(j.write(tmp_path / "v2.jsonl"), Diagnostics(), lean=True,
                                   let_go=True)  # fmt: skip
    # THEN the reading stops to read it again
    with pytest.raises(ReadAgain):
        list(reading.batches())
