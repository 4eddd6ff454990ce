"""A rollout beside the ones given that cannot be read goes with the first tree given in
its folder or, in a next day's folder, the day before (`codex._children_beside`). That
day was looked for again for each such folder among all the folders given: days × days
(2,000 days given took 25 s). The work is counted (next days worked out), not timed."""

from __future__ import annotations

import datetime
import json
from itertools import pairwise
from pathlib import Path

import pytest
from test_codex_plan import _day, _plan, _rollout

from agent_profiler.adapters import SniffedFile, codex

BROKEN = b"\x1f\x8b\x08\x00garbage"  # a gzip's header, then no gzip: cannot be read


def _next_days_worked_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, days: int) -> int:
    """Every other day given (one rollout each); the day after each holds a rollout that
    cannot be read."""
    files = []
    day = datetime.date(2020, 1, 1)
    for index in range(days):
        given = tmp_path / str(days) / "sessions" / f"{day:%Y/%m/%d}"
        after = day + datetime.timedelta(days=1)
        broken = tmp_path / str(days) / "sessions" / f"{after:%Y/%m/%d}"
        given.mkdir(parents=True)
        broken.mkdir(parents=True)
        head = {"type": "session_meta", "payload": {"id": f"thread-{index}"}}
        path = given / f"rollout-{day:%Y-%m-%d}T10-00-00-{index:08d}.jsonl"
        path.write_text(json.dumps(head) + "\n")
        (broken / f"rollout-{after:%Y-%m-%d}T10-00-00-b{index:07d}.jsonl.gz").write_bytes(BROKEN)
        files.append(SniffedFile(path, [head]))
        day += datetime.timedelta(days=2)
    worked_out = 0
    real = codex._next_day

    def next_day(folder: Path) -> list[Path]:
        nonlocal worked_out
        worked_out += 1
        return real(folder)

    monkeypatch.setattr(codex, "_next_day", next_day)
    groups = codex.plan(files)
    monkeypatch.undo()
    assert [len(g.paths) for g in groups] == [2] * days  # each with the day after's
    return worked_out


def test_broken_rollouts_of_many_next_days_are_placed_in_linear_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Doubling the days given doubles the next days worked out (each broken rollout's
    folder looked for among the next days of every folder given: 50 → 100 days went from
    1,325 to 5,150)."""
    counts = [_next_days_worked_out(tmp_path, monkeypatch, n) for n in (25, 50, 100)]
    assert counts[-1] <= 3 * 100, counts
    assert all(later <= 2.2 * earlier for earlier, later in pairwise(counts)), counts


def test_a_broken_rollout_goes_with_its_folders_tree_else_the_day_befores(
    tmp_path: Path,
) -> None:
    """Rollouts given on the 3rd and the 4th; a broken one on the 4th goes with the 4th's
    tree (not with the 3rd's, whose next day the 4th is too), one on the 5th (not given)
    with the 4th's, the day before; one on the 6th with none (no day before it given)."""
    third, fourth, fifth, sixth = (_day(tmp_path, day) for day in ("03", "04", "05", "06"))
    first = _rollout(third, "first", "thread-a")
    second = _rollout(fourth, "second", "thread-b")
    for folder in (fourth, fifth, sixth):
        (folder / f"rollout-broken-{folder.name}.jsonl.gz").write_bytes(BROKEN)
    assert _plan(first, second) == [
        ("rollout-first.jsonl",),
        ("rollout-second.jsonl", "rollout-broken-04.jsonl.gz", "rollout-broken-05.jsonl.gz"),
    ]
