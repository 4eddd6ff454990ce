"""The summary table draws a subagent under its parent, indented by its depth: worked out
once per session, not by walking each row's chain (sessions × depth)."""

from __future__ import annotations

import dataclasses

from agent_profiler.model import Harness, Session
from agent_profiler.summary import SessionSummary, summarise
from agent_profiler.summary_text import render_table


class CountedName(str):
    """A session name that counts the times it is hashed (each dict lookup of it)."""

    hashed = 0

    def __hash__(self) -> int:
        CountedName.hashed += 1
        return str.__hash__(self)

    __eq__ = str.__eq__


def _row(name: str, parent: str | None) -> SessionSummary:
    base = summarise(Session(Harness.CLAUDE_CODE, "s", 0, 1, ("j.jsonl",)))
    return dataclasses.replace(base, session=name, parent=parent)


def _chain(n: int, counted: bool = False) -> list[SessionSummary]:
    make = CountedName if counted else str
    names = [make(f"s{i}") for i in range(n)]
    return [_row(names[i], names[i - 1] if i else None) for i in range(n)]


def _names(table: str) -> list[str]:
    return [line.split("|")[1].rstrip() for line in table.splitlines()[2:] if line[:1] == "|"]


def test_each_subagent_is_indented_by_its_depth() -> None:
    rows = [*_chain(4), _row("other", "s1"), _row("lost", "gone"), _row("top", None)]
    assert _names(render_table(rows)) == [
        " s0",
        "   └ s1",
        "     └ s2",
        "       └ s3",
        "     └ other",
        " lost (subagent)",
        " top",
    ]


def test_a_cycle_of_parents_ends() -> None:
    """Sessions naming each other as parent (cut where links are settled; the table does
    not rely on it) are drawn at the cap, as many levels as there are rows."""
    rows = [_row("a", "b"), _row("b", "a"), _row("c", "a")]
    assert _names(render_table(rows)) == [f" {'  ' * 3}└ {n}" for n in "abc"]  # 3 rows


def test_the_indents_cost_grows_with_the_rows_not_rows_times_depth() -> None:
    work = []
    for n in (400, 800):
        rows = _chain(n, counted=True)
        CountedName.hashed = 0
        render_table(rows)
        work.append(CountedName.hashed)
    # A walk up each row's chain hashed n²/2 names: 4× at twice the rows.
    assert work[1] <= 2.3 * work[0], work
