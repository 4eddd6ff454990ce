"""A journal that changes between the plan and its read: Codex compresses a rollout a week
old to `x.jsonl.zst` and removes the plain one, a clean-up deletes it, something puts a
folder in its place. The race is made deterministic as the review of journals in motion
made it: `loader.plan` is wrapped, and the files are changed right after it returns.

A rollout given that cannot be opened any more is an input that could not be used, as any
other harness's journal: one `error:` line naming it and exit 1, never a warning followed
by "no session records (nothing to show)" of the same file and exit 0. A plain rollout
Codex compressed meanwhile is read from its `.jsonl.zst`. A rollout only found beside the
one given (a child, perhaps) stays a warning; a Claude Code subagent file given alone is
its group's only file, so it is an error too."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler import loader
from agent_profiler.cli import app
from agent_profiler.diagnostics import Diagnostics
from rules_spy import record, write
from samples import CODEX_PLAIN, CODEX_SMALL, codex_meta
from shared_paths import TESTS

DATA = TESTS / "data" / "journals"
CODEX_ID = "019c8bfe-ec25-79e0-97d7-bda6a9c575ff"  # CODEX_SMALL's thread
SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
SUBAGENT = SPOTTER / "258c7280-ae70-4798-800f-63464d01a85d" / "subagents" / "agent-a881341.jsonl"
NO_SESSION = "no session records"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Journals named relative to the current folder, as stderr names them."""
    monkeypatch.chdir(tmp_path)


def _after_planning(monkeypatch: pytest.MonkeyPatch, change: Callable[[], None]) -> None:
    real = loader.plan

    def plan(files: list[Path], harness: object) -> object:
        planned = real(files, harness)  # type: ignore[arg-type]
        change()
        return planned

    monkeypatch.setattr(loader, "plan", plan)


def _summary(*paths: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["summary", *map(str, paths), "--json", "-j", "1"])
    assert "Traceback" not in result.output + result.stderr
    assert "internal error" not in result.stderr
    return result.exit_code, result.stderr


def _deleted(path: Path) -> None:
    path.unlink()


def _folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


@pytest.mark.parametrize(
    ("change", "reason"),
    [(_deleted, "no such file or directory"), (_folder, "is a directory")],
    ids=["deleted", "a folder"],
)
def test_a_rollout_given_that_cannot_be_opened_when_read_is_an_error(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    change: Callable[[Path], None],
    reason: str,
) -> None:
    rollout = Path(CODEX_SMALL.name)
    shutil.copy(CODEX_SMALL, rollout)
    _after_planning(monkeypatch, lambda: change(rollout))
    code, stderr = _summary(rollout)
    assert code == 1
    assert f"error: {rollout}: cannot open: {reason}" in stderr.splitlines()
    assert NO_SESSION not in stderr and "warning" not in stderr


def test_a_rollout_compressed_by_codex_after_planning_is_read_from_its_zst(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    zstd = pytest.importorskip("backports.zstd")
    expected = loader.load([CODEX_SMALL], Diagnostics()).sessions[0]
    rollout = Path(CODEX_SMALL.name)
    shutil.copy(CODEX_SMALL, rollout)
    cold = Path(f"{rollout.name}.zst")

    def compress() -> None:  # as Codex does: the .zst written, then the plain one removed
        cold.write_bytes(zstd.compress(rollout.read_bytes()))
        rollout.unlink()

    _after_planning(monkeypatch, compress)
    diagnostics = Diagnostics()
    result = loader.load([rollout], diagnostics)
    assert result.failures == [] and diagnostics.warnings == []
    (session,) = result.sessions
    assert (session.session_id, session.sources) == (CODEX_ID, (str(cold),))
    assert len(session.responses) == len(expected.responses) > 0


def _tree(folder: Path) -> tuple[Path, Path]:
    """A parent rollout and its child's, side by side (as Codex writes them), named
    relative to the current folder."""
    lines = [record(CODEX_PLAIN, n) for n in (6, 7, 10)]
    parent = write(folder, [codex_meta("thread-p"), *lines], "rollout-parent.jsonl")
    child = write(folder, [codex_meta("thread-c", "thread-p"), *lines], "rollout-child.jsonl")
    return parent.relative_to(folder), child.relative_to(folder)


def test_a_child_given_that_vanishes_costs_its_file_not_its_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given both, the child deleted after planning: the parent is still read; the child
    is its own `error:` line (it was a `read-error` warning), and the exit code says an
    input could not be used."""
    parent, child = _tree(tmp_path)
    _after_planning(monkeypatch, lambda: child.unlink())
    diagnostics = Diagnostics()
    result = loader.load([parent, child], diagnostics)
    assert [s.session_id for s in result.sessions] == ["thread-p"]
    assert [(f.path, f.message) for f in result.failures] == [
        (str(child), "cannot open: no such file or directory")
    ]
    assert diagnostics.warnings == [] and diagnostics.failures == []
    parent, child = _tree(tmp_path)  # again, for the command
    code, stderr = _summary(parent, child)
    assert code == 1
    assert [line for line in stderr.splitlines() if child.name in line] == [
        f"error: {child}: cannot open: no such file or directory"
    ]
    assert NO_SESSION not in stderr and "warning" not in stderr


def test_a_child_only_found_beside_that_vanishes_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given the parent alone, its child is found beside it; deleted after planning, it is
    an `unreadable` warning (it was not asked for), and the parent is read."""
    parent, child = _tree(tmp_path)
    _after_planning(monkeypatch, lambda: child.unlink())
    diagnostics = Diagnostics()
    result = loader.load([parent], diagnostics)
    assert result.failures == []
    assert [s.session_id for s in result.sessions] == ["thread-p"]
    assert [(w.path, w.kind) for w in diagnostics.warnings] == [(str(child), "unreadable")]
    assert diagnostics.damaged == 0


def test_a_subagent_file_given_alone_that_vanishes_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Claude Code subagent file given without its session is read on its own: deleted
    after planning, it was an `unreadable` warning, then "no session records" of the same
    file, and exit 0."""
    agent = Path(SUBAGENT.name)
    shutil.copy(SUBAGENT, agent)
    _after_planning(monkeypatch, lambda: os.unlink(agent))
    code, stderr = _summary(agent)
    assert code == 1
    assert f"error: {agent}: cannot open: no such file or directory" in stderr.splitlines()
    assert NO_SESSION not in stderr and "warning" not in stderr
