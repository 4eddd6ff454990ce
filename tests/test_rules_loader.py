"""loader.py's own rules, in this process (the command-line tests that also reach them run
the tool in a subprocess, where a mutation run cannot see): what a folder walk counts, the
failures of inputs that are not journals, and the warning for a subagent without its parent."""

from __future__ import annotations

import shutil
from pathlib import Path

from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import expand, load, plan, warn_missing_parents
from samples import CLAUDE_SMALL, DATA


def test_a_folder_walk_reads_journals_counts_other_files_and_skips_members(
    tmp_path: Path,
) -> None:
    # GIVEN a folder with a journal, two unrelated files, a sidecar, and an OpenCode
    # database with its write-ahead log (a member: read with the database, not counted)
    shutil.copy(CLAUDE_SMALL, tmp_path / "a.jsonl")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "image.png").write_bytes(b"x")
    (tmp_path / "a.meta.json").write_text("{}")
    (tmp_path / "opencode.db").write_bytes(b"")
    (tmp_path / "opencode.db-wal").write_bytes(b"")
    files, failures, ignored = expand([tmp_path])
    assert [f.name for f in files] == ["a.jsonl", "opencode.db"]
    assert failures == []
    assert ignored == 2  # notes.txt and image.png: the sidecar and the member are not others


def test_inputs_that_are_not_journals_fail_by_name(tmp_path: Path) -> None:
    missing = tmp_path / "gone.jsonl"
    empty_folder = tmp_path / "empty"
    empty_folder.mkdir()
    files, failures, _ = expand([missing, empty_folder])
    assert files == []
    assert [(f.path, f.message) for f in failures] == [
        (str(missing), "no such file or directory"),
        (str(empty_folder), "no journals (*.jsonl, *.jsonl.gz) found"),
    ]
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n\n")
    groups, failures = plan([blank], None)
    assert groups == []
    assert [(f.path, f.message) for f in failures] == [(str(blank), "empty journal (no records)")]


def test_a_subagent_whose_parent_is_not_exported_is_one_warning_naming_it() -> None:
    diagnostics = Diagnostics()
    warn_missing_parents(
        [
            ("child", "parent", "c.jsonl"),
            ("parent-here", None, "p.jsonl"),
            ("kid", "parent-here", "k"),
        ],
        diagnostics,
    )
    assert [(w.path, w.kind, w.message) for w in diagnostics.warnings] == [
        (
            "c.jsonl",
            "parent-not-exported",
            "subagent child: its parent session is not in this export (pass the parent "
            "journal or its folder to link them)",
        )
    ]


def test_load_reads_every_group_and_names_what_it_could_not(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json at all\n")
    result = load([DATA / "codex", bad], Diagnostics())
    assert len(result.sessions) == 4
    assert {p.name for p in result.files} == {p.name for p in (DATA / "codex").iterdir()} - {
        "SOURCES.md"
    }
    assert [f.path for f in result.failures] == [str(bad)]
