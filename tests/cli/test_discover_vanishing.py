"""`discover` while a harness removes folders (Codex moving a day's rollouts, a clean-up of
old sessions): a folder listed in its parent and gone when it is opened is passed over,
and the listing goes on. Python 3.11's `Path.glob`/`rglob` let only a PermissionError
pass: the FileNotFoundError ended `discover` in an internal error (exit 70), 5 runs in 60
while a folder was removed and made again. The race is made deterministic here: the
folder is removed at the moment the walk opens it (`os.scandir`)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters.claude_code import subagent_files
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.discover import discover
from agent_profiler.loader import load
from agent_profiler.model import Harness
from shared_paths import TESTS

DATA = TESTS / "data" / "journals"
MUSE = DATA / "muse" / "synthetic" / "sessions" / "2026" / "10" / "05"
MUSE_LOG = MUSE / "01a20000-0000-7000-8000-00000000a001" / "session.jsonl"
GEMINI = DATA / "gemini-cli" / "entire-ab-2b9748b105-0_session.json"
SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
SPOTTER_ID = "258c7280-ae70-4798-800f-63464d01a85d"


def _write(path: Path, record: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record) + "\n")


def _two(home: Path, harness: Harness) -> tuple[Path, Path]:
    """Two sessions of `harness` in two folders of its tree under `home`: (the folder that
    will vanish, the session file that stays)."""
    when = "2026-02-01T00:00:00Z"
    if harness is Harness.CODEX:
        meta = {"timestamp": when, "type": "session_meta", "payload": {"cwd": "/w"}}
        sessions = home / ".codex" / "sessions" / "2026"
        _write(sessions / "01" / "20" / "rollout-gone.jsonl", meta)
        _write(sessions / "02" / "01" / "rollout-kept.jsonl", meta)
        return sessions / "01" / "20", sessions / "02" / "01" / "rollout-kept.jsonl"
    if harness is Harness.CLAUDE_CODE:
        projects = home / ".claude" / "projects"
        for name in ("-gone", "-kept"):
            _write(projects / name / "s.jsonl", {"type": "user", "sessionId": name, "cwd": "/w"})
        return projects / "-gone", projects / "-kept" / "s.jsonl"
    if harness is Harness.PI:
        sessions = home / ".pi" / "agent" / "sessions"
        for name in ("--gone--", "--kept--"):
            _write(sessions / name / "p.jsonl", {"type": "session", "timestamp": when, "cwd": "/w"})
        return sessions / "--gone--", sessions / "--kept--" / "p.jsonl"
    if harness is Harness.MUSE:
        sessions = home / ".local" / "share" / "muse" / "sessions" / "2026"
        for day in ("01", "02"):
            (sessions / day / "m").mkdir(parents=True)
            shutil.copy(MUSE_LOG, sessions / day / "m" / "session.jsonl")
        return sessions / "01", sessions / "02" / "m" / "session.jsonl"
    assert harness is Harness.GEMINI_CLI
    tmp = home / ".gemini" / "tmp"
    for project in ("gone", "kept"):
        (tmp / project / "chats").mkdir(parents=True)
        shutil.copy(GEMINI, tmp / project / "chats" / "session-g.json")
    # The project's `chats` folder itself: listed as `*/chats`, gone when its files are.
    return tmp / "gone" / "chats", tmp / "kept" / "chats" / "session-g.json"


@pytest.fixture
def vanishing(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[Path]]:
    """The folders put in the set are removed when a walk opens them, as if the harness
    had removed them just after their parent was listed."""
    doomed: set[Path] = set()
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if not isinstance(path, int) and Path(path) in doomed:  # (rmtree scans by fd)
            doomed.discard(Path(path))
            shutil.rmtree(path)
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    yield doomed


@pytest.mark.parametrize(
    "harness",
    [Harness.CODEX, Harness.CLAUDE_CODE, Harness.PI, Harness.MUSE, Harness.GEMINI_CLI],
    ids=lambda h: h.value,
)
def test_a_folder_that_vanishes_while_discover_walks_is_passed_over(
    tmp_path: Path, vanishing: set[Path], harness: Harness
) -> None:
    gone, kept = _two(tmp_path / "home", harness)
    vanishing.add(gone)
    found = discover(env={"HOME": str(tmp_path / "home")}, harness=harness)
    assert not vanishing, "the folder was not walked"
    assert [j.path for j in found] == [kept]


def test_a_subagents_folder_that_vanishes_while_an_export_plans_is_no_subagent(
    tmp_path: Path, vanishing: set[Path]
) -> None:
    """A Claude Code transcript's `subagents/` folder removed just after it was seen:
    planning the export walked it with `rglob` and ended in an internal error; the
    session is now read, without the subagents that are gone."""
    shutil.copytree(SPOTTER, tmp_path / "s")
    main = tmp_path / "s" / f"{SPOTTER_ID}.jsonl.gz"
    assert len(subagent_files(main)) == 2
    vanishing.add(tmp_path / "s" / SPOTTER_ID / "subagents")
    result = load([main], Diagnostics())
    assert not vanishing, "the folder was not walked"
    assert result.failures == []
    assert [s.session_id for s in result.sessions] == [SPOTTER_ID]
