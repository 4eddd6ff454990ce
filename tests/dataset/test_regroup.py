"""A collect's dataset is the one a fresh collect of the same files makes, whatever the
order and the collects in which they came (review-subagents finding 3): a subagent and its
parent collected in different runs stayed two groups for good — the child an orphan, the
launching call without `child_session`, the child's last output (Claude Code writes it
only into the parent's tool result) 996 tokens short — since a new file joined an old
group only when its path held the old main journal's file name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.dataset import TABLES
from agent_profiler.dataset.collect import collect
from agent_profiler.options import ReadOptions
from shared_paths import TESTS

duckdb = pytest.importorskip("duckdb")

JOURNALS = TESTS / "data" / "journals"
SPOTTER = JOURNALS / "claude-code" / "spotter-2.1.39-subagents-compaction"
PARENT = SPOTTER / "258c7280-ae70-4798-800f-63464d01a85d.jsonl.gz"
FOLDER = SPOTTER / "258c7280-ae70-4798-800f-63464d01a85d"
CHILD = FOLDER / "subagents" / "agent-a881341.jsonl"
CHATS = JOURNALS / "gemini-cli" / "expenses-tracker-0.37.1-subagents" / "agunginsani" / "chats"
GEMINI_MAIN = CHATS / "session-2026-04-12T01-18-01b2c62e.json"
GEMINI_NESTED = CHATS / "01b2c62e-cba4-4088-8755-b240504efb70"

# Per journal to copy: where it goes under the journals' folder.
CLAUDE_FOLDER_LATER = [[(PARENT, PARENT.name)], [(FOLDER, FOLDER.name)]]
CLAUDE_CHILD_ELSEWHERE = [[(PARENT, f"p/{PARENT.name}")], [(CHILD, f"other/{CHILD.name}")]]
GEMINI_NESTED_LATER = [
    [(GEMINI_MAIN, f"chats/{GEMINI_MAIN.name}")],
    [(GEMINI_NESTED, f"chats/{GEMINI_NESTED.name}")],
]
SCENARIOS = {
    "claude-folder-later": CLAUDE_FOLDER_LATER,
    # the subagents' folder first, then the session: the parent's plan takes the children
    # from its folder, and their old groups (orphans) went on beside it, counted twice
    "claude-folder-first": CLAUDE_FOLDER_LATER[::-1],
    "claude-child-elsewhere-later": CLAUDE_CHILD_ELSEWHERE,
    "claude-child-elsewhere-first": CLAUDE_CHILD_ELSEWHERE[::-1],
    "gemini-nested-later": GEMINI_NESTED_LATER,
    "gemini-nested-first": GEMINI_NESTED_LATER[::-1],
    # the compaction file alone in the session's folder, then the session: the session's
    # plan takes the file from its folder, and nothing else relates the two groups (a
    # compaction file holds no session of its own)
    "claude-compaction-first": [
        [
            (
                FOLDER / "subagents" / "agent-acompact-fffbd0.jsonl",
                f"{FOLDER.name}/subagents/agent-acompact-fffbd0.jsonl",
            )
        ],
        [(PARENT, PARENT.name)],
    ],
    # the compaction file in the session's folder, the child elsewhere, then the parent
    "claude-three-collects": [
        [(CHILD, f"other/{CHILD.name}")],
        [
            (
                FOLDER / "subagents" / "agent-acompact-fffbd0.jsonl",
                f"{FOLDER.name}/subagents/agent-acompact-fffbd0.jsonl",
            )
        ],
        [(PARENT, PARENT.name)],
    ],
}


def _rows(dataset: Path) -> dict[str, list[str]]:
    """Every table's rows, sorted: a table is a set of rows (the batch a row was written in
    is in its file's name only, and the manifest's; no column holds it)."""
    tables = {}
    connection = duckdb.connect()
    try:
        for table in TABLES:
            if not list((dataset / "current" / table).rglob("*.parquet")):
                tables[table] = []
                continue
            cursor = connection.execute(
                f"SELECT * FROM read_parquet('{dataset}/current/{table}/**/*.parquet', "
                "hive_partitioning = true)"
            )
            names = [d[0] for d in cursor.description]
            tables[table] = sorted(
                repr(sorted(zip(names, row, strict=True))) for row in cursor.fetchall()
            )
    finally:
        connection.close()
    return tables


def _groups(dataset: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The manifest's journals and groups, but the batch each group was written in."""
    manifest = json.loads((dataset / "current" / "manifest.json").read_text())
    groups = {
        k: {n: v for n, v in g.items() if n != "batch"} for k, g in manifest["groups"].items()
    }
    return manifest["files"], groups


def _place(journals: Path, copies: list[tuple[Path, str]]) -> None:
    for source, where in copies:
        target = journals / where
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copy(source, target)


def _sessions(dataset: Path) -> dict[str, dict[str, Any]]:
    connection = duckdb.connect()
    try:
        cursor = connection.execute(
            f"SELECT * FROM read_parquet('{dataset}/current/sessions/**/*.parquet', "
            "hive_partitioning = true)"
        )
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        connection.close()
    return {row["session_id"]: row for row in rows}


def _launches(dataset: Path) -> list[str]:
    connection = duckdb.connect()
    try:
        found = connection.execute(
            f"SELECT child_session FROM read_parquet('{dataset}/current/tool_calls/**/*.parquet',"
            " hive_partitioning = true) WHERE child_session IS NOT NULL ORDER BY 1"
        ).fetchall()
    finally:
        connection.close()
    return [row[0] for row in found]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_collecting_in_steps_makes_the_dataset_of_one_fresh_collect(
    tmp_path: Path, scenario: str
) -> None:
    journals = tmp_path / "j"
    journals.mkdir()
    dataset = tmp_path / "ds"
    for copies in SCENARIOS[scenario]:
        _place(journals, copies)
        result = collect([journals], dataset, options=ReadOptions(jobs=1))
        assert not result.failures
    fresh = tmp_path / "fresh"
    collect([journals], fresh, options=ReadOptions(jobs=1))
    assert _rows(dataset) == _rows(fresh)
    assert _groups(dataset) == _groups(fresh)
    if scenario == "claude-compaction-first":  # no subagent given: one session, compacted
        assert len(_sessions(fresh)) == 1
        return
    # and the fresh collect links every subagent (so the comparison above means that)
    subagents = [s for s in _sessions(fresh).values() if s["parent_session"]]
    assert subagents and len(_launches(fresh)) == (2 if "gemini" in scenario else 1)


def test_a_claude_child_collected_after_its_parent_is_linked_and_settled(tmp_path: Path) -> None:
    """The reviewer's figures: the child's output 3 (its file's streaming counts) became
    999 (its last request settled from the parent's tool result) once linked."""
    journals = tmp_path / "j"
    dataset = tmp_path / "ds"
    _place(journals, CLAUDE_CHILD_ELSEWHERE[0])
    collect([journals], dataset)
    _place(journals, CLAUDE_CHILD_ELSEWHERE[1])
    from typer.testing import CliRunner

    from agent_profiler.cli import app

    said = CliRunner().invoke(app, ["collect", str(journals), "--to", str(dataset)])
    # the parent, unchanged, read again with its new child: said so, not "not read"
    assert said.exit_code == 0, said.output
    assert "1 new, 0 changed, 1 unchanged (1 of them read again with the new journals" in (
        said.stdout
    )
    (child,) = [s for s in _sessions(dataset).values() if s["parent_session"]]
    assert child["output_tokens"] == 999
    assert _launches(dataset) == [child["session_id"]]
    # nothing new: nothing read, no version written
    again = collect([journals], dataset)
    assert (again.new, again.regrouped, again.version) == (0, 0, None)


def test_the_same_with_two_processes(tmp_path: Path) -> None:
    journals = tmp_path / "j"
    dataset = tmp_path / "ds"
    for copies in GEMINI_NESTED_LATER[::-1]:
        _place(journals, copies)
        collect([journals], dataset, options=ReadOptions(jobs=2))
    fresh = tmp_path / "fresh"
    collect([journals], fresh, options=ReadOptions(jobs=1))
    assert _rows(dataset) == _rows(fresh)


def test_a_parent_not_given_is_joined_by_the_first_collect_given_both(tmp_path: Path) -> None:
    """The parent collected from one folder, its child later from another alone: the
    parent's group cannot be read again (its file is not given), so the child stays an
    orphan, marked; a later collect given both joins them, though nothing is new."""
    parent, other = tmp_path / "p", tmp_path / "other"
    _place(parent, [(PARENT, PARENT.name)])
    _place(other, [(CHILD, CHILD.name)])
    dataset = tmp_path / "ds"
    collect([parent], dataset)
    alone = collect([other], dataset)
    assert (alone.new, alone.regrouped) == (1, 0)
    # (the parent's Task result names its child, read or not: the call keeps that id; the
    # child's rows are still those of an orphan until joined, checked against fresh below)
    assert _launches(dataset) == ["258c7280-ae70-4798-800f-63464d01a85d/a881341"]
    both = collect([parent, other], dataset)
    assert (both.new, both.changed, both.regrouped) == (0, 0, 2)
    assert len(_launches(dataset)) == 1
    fresh = tmp_path / "fresh"
    collect([parent, other], fresh)
    assert _rows(dataset) == _rows(fresh)
    assert collect([parent, other], dataset).version is None  # joined once, then left alone


def _as_before_ids(dataset: Path) -> None:
    """The dataset's manifest as collects wrote it before it kept each group's ids."""
    manifest_path = dataset / "current" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    for group in manifest["groups"].values():
        del group["ids"], group["parents"]
    manifest_path.write_text(json.dumps(manifest))


def test_a_dataset_whose_manifest_keeps_no_session_ids_is_joined_too(tmp_path: Path) -> None:
    """A dataset collected before the manifest kept each group's session ids: they are
    taken from its `sessions` table."""
    journals = tmp_path / "j"
    dataset = tmp_path / "ds"
    _place(journals, GEMINI_NESTED_LATER[0])
    collect([journals], dataset)
    _as_before_ids(dataset)
    _place(journals, GEMINI_NESTED_LATER[1])
    collect([journals], dataset)
    fresh = tmp_path / "fresh"
    collect([journals], fresh)
    assert _rows(dataset) == _rows(fresh)


def test_an_old_dataset_without_a_session_row_is_collected_into_too(tmp_path: Path) -> None:
    """A dataset from before the manifest kept session ids, whose only journal holds no
    session (a transcript of a summary line): it has no `sessions` table to take them from,
    and the next collect reads a new journal beside it as a fresh collect does."""
    journals = tmp_path / "j"
    journals.mkdir()
    (journals / "summary.jsonl").write_text('{"type":"summary","summary":"x","leafUuid":"y"}\n')
    dataset = tmp_path / "ds"
    collect([journals], dataset)
    _as_before_ids(dataset)
    _place(journals, GEMINI_NESTED_LATER[0])
    result = collect([journals], dataset)
    assert (result.new, result.failures) == (1, [])
    fresh = tmp_path / "fresh"
    collect([journals], fresh)
    assert _rows(dataset) == _rows(fresh)


def test_a_collect_stopped_while_joining_leaves_the_dataset_as_it_was(tmp_path: Path) -> None:
    """Stopped once the old group is read again with the new one (Ctrl-C): `current` is
    the version before, row for row; the next collect joins them."""
    journals = tmp_path / "j"
    dataset = tmp_path / "ds"
    _place(journals, CLAUDE_CHILD_ELSEWHERE[0])
    collect([journals], dataset)
    before = _rows(dataset)
    manifest = (dataset / "current" / "manifest.json").read_bytes()
    _place(journals, CLAUDE_CHILD_ELSEWHERE[1])

    def stop() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        collect([journals], dataset, after_rows=stop)
    assert _rows(dataset) == before
    assert (dataset / "current" / "manifest.json").read_bytes() == manifest
    assert [p.name for p in (dataset / "versions").iterdir()] == ["000001"]
    assert collect([journals], dataset).regrouped == 1
    assert len(_launches(dataset)) == 1


def test_the_command_says_nothing_more_and_exits_0(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agent_profiler.cli import app

    journals = tmp_path / "j"
    _place(journals, GEMINI_NESTED_LATER[1])
    runner = CliRunner()
    first = runner.invoke(app, ["collect", str(journals), "--to", str(tmp_path / "ds")])
    _place(journals, GEMINI_NESTED_LATER[0])
    second = runner.invoke(app, ["collect", str(journals), "--to", str(tmp_path / "ds")])
    for said in (first, second):
        assert said.exit_code == 0, said.output
        assert "Traceback" not in said.output
    assert "3 journals: 1 new, 0 changed" in second.stdout


# Files given one at a time, as `collect FILE` (review-diff findings 1, 2 and 11): the
# folder is not given, so an old group's files are not all given to the next collect.
GEMINI_CHILD = GEMINI_NESTED / "shcg5o.json"
LEGACY = JOURNALS / "claude-code" / "codemie-2.0.64-legacy-agent-files"
ONE_BY_ONE = {
    # finding 1: the parent's whole session was dropped ("not found now (kept)")
    "claude-parent-then-child-file": [PARENT, CHILD],
    # finding 2: the child's orphan group stayed beside the parent's (+2 subagents)
    "claude-child-file-then-parent": [CHILD, PARENT],
    "gemini-main-then-child-file": [GEMINI_MAIN, GEMINI_CHILD],
    "gemini-child-file-then-main": [GEMINI_CHILD, GEMINI_MAIN],
}


def _copy_tree(tmp_path: Path) -> Path:
    """The journals' folders copied, so that each file keeps its place beside the others."""
    journals = tmp_path / "j"
    shutil.copytree(SPOTTER, journals / "claude")
    shutil.copytree(CHATS, journals / "chats")
    return journals


def _copy_of(journals: Path, source: Path) -> Path:
    if source.is_relative_to(SPOTTER):
        return journals / "claude" / source.relative_to(SPOTTER)
    return journals / "chats" / source.relative_to(CHATS)


@pytest.mark.parametrize("scenario", ONE_BY_ONE)
def test_files_given_one_at_a_time_make_the_dataset_of_one_fresh_collect(
    tmp_path: Path, scenario: str
) -> None:
    journals = _copy_tree(tmp_path)
    given = [_copy_of(journals, source) for source in ONE_BY_ONE[scenario]]
    dataset = tmp_path / "ds"
    for path in given:
        result = collect([path], dataset, options=ReadOptions(jobs=1))
        # nothing "collected before and not found now (kept)" of a group read again: it
        # was read whole (a child file its parent's plan found beside it is a journal of
        # the dataset already: unchanged, its group is not read, its parent not given)
        assert result.failures == []
        assert result.missing == 0 or (result.version, result.unchanged) == (None, 1)
    fresh = tmp_path / "fresh"
    collect(given, fresh, options=ReadOptions(jobs=1))
    assert _rows(dataset) == _rows(fresh)
    assert _groups(dataset) == _groups(fresh)
    subagents = [s for s in _sessions(fresh).values() if s["parent_session"]]
    assert subagents and len(_launches(fresh)) == (2 if "gemini" in scenario else 1)


def test_a_growing_parent_given_alone_keeps_its_subagents(tmp_path: Path) -> None:
    """Collected from its folder, then the parent alone once it grew (a cron on a live
    session): its group is read again whole (Claude Code's legacy `agent-*.jsonl` beside
    it, which a plan of the parent alone does not take), not as the parent alone."""
    journals = tmp_path / "j"
    shutil.copytree(LEGACY, journals)
    main = journals / "-tmp-private" / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"
    dataset = tmp_path / "ds"
    collect([journals], dataset, options=ReadOptions(jobs=1))
    lines = main.read_bytes().splitlines(keepends=True)
    main.write_bytes(b"".join(lines) + lines[-1])  # the session grows
    grown = collect([main], dataset, options=ReadOptions(jobs=1))
    fresh = tmp_path / "fresh"
    collect([journals], fresh, options=ReadOptions(jobs=1))
    assert _rows(dataset) == _rows(fresh)
    assert _groups(dataset)[1] == _groups(fresh)[1]
    # the two subagents were read again with it, not "not found now (kept)"
    assert (grown.changed, grown.missing) == (1, 0)


def test_a_journal_of_the_group_no_longer_found_is_said(tmp_path: Path) -> None:
    """The group read again without a journal of it that is gone (not given, nor beside
    those given): said, its rows dropped, and its entry too (found again, it is new)."""
    journals = tmp_path / "j"
    shutil.copytree(LEGACY, journals)
    main = journals / "-tmp-private" / "4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl"
    dataset = tmp_path / "ds"
    collect([journals], dataset, options=ReadOptions(jobs=1))
    (journals / "-tmp-private" / "agent-36541525.jsonl").unlink()
    lines = main.read_bytes().splitlines(keepends=True)
    main.write_bytes(b"".join(lines) + lines[-1])
    said: list[str] = []
    grown = collect([main], dataset, options=ReadOptions(jobs=1), notice=said.append)
    assert said == [
        f"{main}: 1 journal of its session collected before not found now (not given, nor "
        "beside it): its session is read again without it, its rows dropped"
    ]
    assert (grown.changed, grown.missing) == (1, 0)
    fresh = tmp_path / "fresh"
    collect([journals], fresh, options=ReadOptions(jobs=1))
    assert _rows(dataset) == _rows(fresh)
    assert _groups(dataset) == _groups(fresh)
