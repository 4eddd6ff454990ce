"""`discover`: every harness's folders, under their defaults and their environment variables,
and the listing's filters (a fake machine in tmp_path; small hand-made journals, since only
the first records are read, and a real Gemini CLI session for the located harnesses)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from agent_profiler.adapters.common import timestamp_ns
from agent_profiler.discover import FoundJournal, discover
from agent_profiler.model import Harness
from shared_paths import TESTS

DATA = TESTS / "data" / "journals"
GEMINI = DATA / "gemini-cli" / "entire-ab-2b9748b105-0_session.json"  # startTime 2026-01-15
GEMINI_START = "2026-01-15T20:51:48.582Z"


def _journal(path: Path, *records: dict[str, object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)
    return path


def _claude(path: Path, cwd: str, when: str | None = "2026-01-01T00:00:00Z") -> Path:
    record: dict[str, object] = {"type": "user", "sessionId": path.stem, "cwd": cwd}
    if when is not None:
        record["timestamp"] = when
    return _journal(path, record)


def _codex(path: Path, cwd: str, when: str) -> Path:
    # Codex names the cwd only inside the session_meta payload.
    return _journal(path, {"timestamp": when, "type": "session_meta", "payload": {"cwd": cwd}})


def _pi(path: Path, cwd: str, when: str) -> Path:
    return _journal(path, {"type": "session", "timestamp": when, "cwd": cwd})


MUSE = DATA / "muse" / "synthetic" / "sessions" / "2026" / "10" / "05"
MUSE_MAIN = MUSE / "01a20000-0000-7000-8000-00000000a001"  # workspace /home/USER/demo


def _muse(path: Path, source: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, path)
    return path


def _machine(home: Path) -> None:
    """One journal of every harness in its default folder under `home`."""
    claude = home / ".claude" / "projects" / "-work-app"
    _claude(claude / "c1.jsonl", "/work/app")
    _claude(claude / "agent-1.jsonl", "/work/app")  # a subagent: listed with its main file
    _codex(
        home / ".codex" / "sessions" / "2026" / "02" / "01" / "rollout-a.jsonl",
        "/work/codex",
        "2026-02-01T00:00:00Z",
    )
    _codex(
        home / ".codex" / "archived_sessions" / "rollout-b.jsonl.gz",
        "/work/old",
        "2025-12-01T00:00:00Z",
    )
    _pi(home / ".pi" / "agent" / "sessions" / "--work-pi--" / "p1.jsonl", "/work/pi", "2026-03-01")
    muse = home / ".local" / "share" / "muse" / "sessions" / "2026" / "04" / "01"
    _muse(muse / "m1" / "session.jsonl", MUSE_MAIN / "session.jsonl")
    subagent = MUSE_MAIN / "subagent" / "01a20000-0000-7000-8000-00000000c001" / "session.jsonl"
    _muse(muse / "m1" / "subagent" / "m2" / "session.jsonl", subagent)
    chats = home / ".gemini" / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(GEMINI, chats / "session-g1.json")


EXPECTED = [
    # Muse's first `recorded_at` (µs), read inside its first record, a retained frame
    (Harness.MUSE, "session.jsonl", "2026-10-04T07:46:40+00:00"),
    (Harness.PI, "p1.jsonl", "2026-03-01T00:00:00+00:00"),
    (Harness.CODEX, "rollout-a.jsonl", "2026-02-01T00:00:00+00:00"),
    (Harness.GEMINI_CLI, "session-g1.json", "2026-01-15T20:51:48+00:00"),
    (Harness.CLAUDE_CODE, "c1.jsonl", "2026-01-01T00:00:00+00:00"),
    (Harness.CODEX, "rollout-b.jsonl.gz", "2025-12-01T00:00:00+00:00"),
]


def _listed(found: list[FoundJournal]) -> list[tuple[Harness, str, object]]:
    return [(j.harness, j.path.name, j.to_json()["start"]) for j in found]


def test_every_harness_is_found_in_its_default_folders_newest_first(tmp_path: Path) -> None:
    _machine(tmp_path / "home")
    found = discover(env={"HOME": str(tmp_path / "home")})
    assert _listed(found) == EXPECTED
    # Muse's subagent and Claude Code's agent- files are left to their main journal.
    assert not any("subagent" in j.path.parts or j.path.name.startswith("agent-") for j in found)
    projects = {j.path.name: j.project for j in found}
    assert projects["rollout-a.jsonl"] == "/work/codex"  # from the session_meta payload
    assert projects["c1.jsonl"] == "/work/app" and projects["p1.jsonl"] == "/work/pi"
    assert projects["session.jsonl"] == "/home/USER/demo"  # Muse's workspace_root


def test_every_harness_honours_its_environment_variable(tmp_path: Path) -> None:
    _machine(tmp_path / "elsewhere")
    moved = tmp_path / "elsewhere"
    env = {
        "HOME": str(tmp_path / "empty-home"),
        "CLAUDE_CONFIG_DIR": str(moved / ".claude"),
        "CODEX_HOME": str(moved / ".codex"),
        "PI_CODING_AGENT_DIR": str(moved / ".pi" / "agent"),
        "XDG_DATA_HOME": str(moved / ".local" / "share"),
        "GEMINI_CLI_HOME": str(moved),
    }
    assert _listed(discover(env=env)) == EXPECTED
    assert discover(env={"HOME": str(tmp_path / "empty-home")}) == []


def test_one_harness_alone(tmp_path: Path) -> None:
    _machine(tmp_path / "home")
    env = {"HOME": str(tmp_path / "home")}
    for harness in (Harness.CODEX, Harness.PI, Harness.MUSE, Harness.GEMINI_CLI):
        expected = [row for row in EXPECTED if row[0] is harness]
        assert _listed(discover(env=env, harness=harness)) == expected


def test_an_unreadable_journal_is_passed_over_and_the_listing_goes_on(tmp_path: Path) -> None:
    # GIVEN a binary .jsonl, which the candidates give before the project's .jsonl.gz files
    project = tmp_path / "home" / ".claude" / "projects" / "-work-app"
    project.mkdir(parents=True)
    (project / "broken.jsonl").write_bytes(b"\x00\x00binary")
    (project / "empty.jsonl").write_bytes(b"")  # a session with nothing in it yet
    _claude(project / "good.jsonl.gz", "/work/app")
    # WHEN listed, THEN the readable one is there
    found = discover(env={"HOME": str(tmp_path / "home")})
    assert [j.path.name for j in found] == ["good.jsonl.gz"]


OVERRIDES = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR", "GEMINI_CLI_HOME")
OVERRIDES += ("OPENCODE_DB", "XDG_DATA_HOME")


def test_a_named_pipe_where_journals_live_is_passed_over(tmp_path: Path) -> None:
    """A named pipe in a harness's folder (`<session>.jsonl`, a Gemini CLI
    `session-*.json`) was opened to read its first records and discover waited for a
    writer forever; it is now passed over like an unreadable file. (A subprocess, so a
    regression fails on its timeout instead of hanging the suite.)"""
    home = tmp_path / "home"
    _machine(home)
    pipes = [
        home / ".claude" / "projects" / "-work-app" / "pipe.jsonl",
        home / ".codex" / "sessions" / "2026" / "02" / "01" / "rollout-pipe.jsonl",
        next((home / ".gemini" / "tmp").glob("*/chats")) / "session-2026-01-01T00-00-pipe.json",
    ]
    for pipe in pipes:
        os.mkfifo(pipe)
    done = subprocess.run(
        [sys.executable, "-m", "agent_profiler", "discover", "--json"],
        capture_output=True,
        text=True,
        env={
            **{k: v for k, v in os.environ.items() if not k.endswith(OVERRIDES)},
            "HOME": str(home),
        },
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    listed = {Path(j["path"]).name for j in json.loads(done.stdout)}
    assert listed == {row[1] for row in EXPECTED}


def test_the_project_filter_passes_over_the_others_and_goes_on(tmp_path: Path) -> None:
    project = tmp_path / "home" / ".claude" / "projects" / "-work"
    _claude(project / "other.jsonl", "/work/other")
    _claude(project / "wanted.jsonl.gz", "/work/Wanted")
    env = {"HOME": str(tmp_path / "home")}
    assert [j.path.name for j in discover(env=env, project="wanted")] == ["wanted.jsonl.gz"]


def test_since_keeps_what_starts_at_that_moment_and_judges_undated_files_by_mtime(
    tmp_path: Path,
) -> None:
    project = tmp_path / "home" / ".claude" / "projects" / "-work"
    _claude(project / "at.jsonl", "/work/a", "2026-01-01T00:00:00Z")
    _claude(project / "before.jsonl", "/work/b", "2025-12-31T23:59:59Z")
    undated_old = _claude(project / "undated-old.jsonl", "/work/c", when=None)
    undated_new = _claude(project / "undated-new.jsonl", "/work/d", when=None)
    since = timestamp_ns("2026-01-01T00:00:00Z")
    assert since is not None
    os.utime(undated_old, ns=(since - 10**9, since - 10**9))
    os.utime(undated_new, ns=(since + 10**9, since + 10**9))
    found = discover(env={"HOME": str(tmp_path / "home")}, since_ns=since)
    assert [j.path.name for j in found] == ["undated-new.jsonl", "at.jsonl"]
    # An undated journal is listed by its modification time, which it also reports.
    undated = found[0]
    assert undated.start_ns is None and undated.modified_ns == since + 10**9
    assert undated.to_json()["start"] is None
    assert undated.to_json()["modified"] == "2026-01-01T00:00:01+00:00"


def test_since_judges_a_located_session_by_its_start_else_its_mtime(tmp_path: Path) -> None:
    chats = tmp_path / "home" / ".gemini" / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    dated = chats / "session-dated.json"
    shutil.copy(GEMINI, dated)
    undated = chats / "session-undated.json"
    undated.write_text(GEMINI.read_text().replace('"startTime"', '"begun"'))
    start = timestamp_ns(GEMINI_START)
    assert start is not None
    later = start + 3600 * 10**9
    for path in (dated, undated):  # both written an hour after the dated one started
        os.utime(path, ns=(later, later))
    env = {"HOME": str(tmp_path / "home")}
    # Since half an hour after its start: the dated one is out though its mtime is later.
    found = discover(env=env, since_ns=start + 1800 * 10**9)
    assert [(j.path.name, j.start_ns, j.modified_ns) for j in found] == [
        ("session-undated.json", None, later)
    ]
    assert found[0].to_json()["modified"] == "2026-01-15T21:51:48+00:00"
    assert [j.path.name for j in discover(env=env, since_ns=start)] == [
        "session-undated.json",
        "session-dated.json",
    ]
