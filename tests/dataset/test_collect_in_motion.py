"""`collect` on journals that move while it runs (review-motion finding 4): a journal
that vanishes or cannot be read between the folder walk and its hash is one line naming
it (it was `internal error`, exit 70), is not entered in the manifest, and the next
collect reads it. The races are made deterministic: the file is changed right after the
walk (`loader.expand`), before collect hashes it. As root a `chmod 000` file is still
readable: its `open` refuses it instead."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dsfiles import run, sessions

import agent_profiler.loader as loader
from samples import CLAUDE_SMALL, CODEX_SMALL
from shared_paths import TESTS

pytest.importorskip("duckdb")

SPOTTER = TESTS / "data" / "journals" / "claude-code" / "spotter-2.1.39-subagents-compaction"
SUBAGENT = "agent-a881341.jsonl"
NOT_USABLE = "1 file not usable (said above), not collected"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name, source in (("cx", CODEX_SMALL), ("J", CLAUDE_SMALL)):
        Path(name).mkdir()
        shutil.copy(source, Path(name) / source.name)
    return tmp_path


def after(monkeypatch: pytest.MonkeyPatch, step: str, change: Callable[[], None]) -> None:
    """`change` made once, right after the collect's `loader.<step>` (expand or plan)."""
    real = getattr(loader, step)
    done: list[bool] = []

    def hooked(*args: Any) -> Any:
        value = real(*args)
        if not done:
            done.append(True)
            change()
        return value

    monkeypatch.setattr(loader, step, hooked)


def taken_away(path: Path) -> Callable[[], None]:
    """Deletes `path` now; the function returned puts it back with its size and mtime."""
    data, stat = path.read_bytes(), path.stat()
    path.unlink()

    def put_back() -> None:
        path.write_bytes(data)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))

    return put_back


def test_a_journal_gone_before_it_is_hashed_is_one_line(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a rollout deleted after the folder walk, before collect stats it
    rollout = Path("cx") / CODEX_SMALL.name
    restore: list[Callable[[], None]] = []
    after(monkeypatch, "expand", lambda: restore.append(taken_away(rollout)))
    # WHEN collected with another journal
    first = run("collect", "cx", "J", "--to", "ds")
    # THEN one line names it, the other is collected (it was `internal error`, exit 70)
    assert first.exit_code == 1, first.output
    assert f"error: {rollout}: cannot open: no such file or directory" in first.stderr
    assert "1 journal: 1 new" in first.stdout and NOT_USABLE in first.stdout
    assert sessions() == 1
    # AND found again, it is collected
    restore[0]()
    second = run("collect", "cx", "J", "--to", "ds")
    assert second.exit_code == 0, second.output
    assert sessions() == 2


def test_a_journal_unreadable_when_hashed_is_one_line(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a rollout that cannot be opened (permission denied: as root, by its `open`)
    rollout = Path("cx") / CODEX_SMALL.name
    real = Path.open

    def refused(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name == rollout.name:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refused)
    # WHEN collected with another journal
    result = run("collect", "cx", "J", "--to", "ds")
    # THEN one line names it and the collect goes on (it was `internal error`, exit 70)
    assert result.exit_code == 1, result.output
    assert f"error: {rollout}: cannot open: permission denied" in result.stderr
    assert "1 journal: 1 new" in result.stdout and NOT_USABLE in result.stdout
    assert sessions() == 1


def test_a_journal_of_a_group_read_again_gone_before_its_stat(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A journal of an old group found beside the one given (`locate.whole`), gone before
    collect stats it: its group's rows collected before are kept, as for a journal
    unusable now, and the collect goes on (it was `internal error`, exit 70)."""
    import agent_profiler.dataset.collect as collect_module

    shutil.copytree(SPOTTER, "sp")
    assert run("collect", "sp", "--to", "ds").exit_code == 0
    subagent = next(Path("sp").rglob(SUBAGENT))
    with subagent.open("a") as handle:
        handle.write("\n")  # changed: its group is read again, its parent found beside it
    parent = next(Path("sp").glob("*.jsonl.gz"))
    real = collect_module.whole

    def whole(*args: Any) -> Any:
        found = real(*args)
        parent.unlink()
        return found

    monkeypatch.setattr(collect_module, "whole", whole)
    result = run("collect", str(subagent), "--to", "ds")
    assert result.exit_code == 1, result.output
    assert f"{parent.name}: cannot open: no such file or directory" in result.stderr
    assert "its rows collected before are kept; 2 sessions\n" in result.stdout
