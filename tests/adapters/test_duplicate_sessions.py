"""One session in several files (issue 15, point 2): a copy, a backup or a resumed run of the
same session gives every file its own session id and its own tracks, for every harness. The
contract checks run by `export_trace` add that track uuids are unique and every event's track
is declared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from samples import (
    CLAUDE_SMALL,
    CODEX_SMALL,
    GEMINI_DOCUMENT,
    GEMINI_JSONL,
    MUSE_SINGLE_TURN,
    OPENCODE_EXPORT,
    PI_LARGE,
)

JOURNALS = {
    "claude-code": CLAUDE_SMALL,
    "codex": CODEX_SMALL,
    "pi": PI_LARGE,
    "muse": MUSE_SINGLE_TURN,
    "gemini-cli": GEMINI_DOCUMENT,
    "gemini-cli-jsonl": GEMINI_JSONL,
    "opencode": OPENCODE_EXPORT,
}


def copies(source: Path, tmp: Path, count: int = 2) -> list[Path]:
    """The same journal in `count` folders, as a backup beside the original would be."""
    paths = []
    for index in range(count):
        folder = tmp / f"copy{index}"
        folder.mkdir(exist_ok=True)
        target = folder / source.name
        target.write_bytes(source.read_bytes())
        paths.append(target)
    return paths


def session_ids(view) -> list[str]:  # type: ignore[no-untyped-def]
    ids = []
    for capture in view.captures():
        profile = view.profile_of(capture.uuid)
        assert profile is not None
        ids.append(profile.args["session_id"])
    return ids


@pytest.mark.parametrize("harness", JOURNALS)
def test_two_copies_of_one_session_get_distinct_ids_and_tracks(
    harness: str, tmp_path: Path, export_trace
) -> None:  # type: ignore[no-untyped-def]
    # GIVEN the same real journal twice (a copy beside the original)
    paths = copies(JOURNALS[harness], tmp_path)
    # WHEN both are exported into one trace (export_trace runs the contract, which now
    # rejects a track uuid declared twice)
    exported = export_trace(*paths, require_addition=False)
    # THEN two sessions with distinct ids, each on its own tracks
    ids = session_ids(exported.view)
    assert len(ids) == 2 and len(set(ids)) == 2, ids
    assert ids[1] == f"{ids[0]}#2"


def test_three_copies_of_a_codex_rollout_in_one_folder(tmp_path: Path, export_trace) -> None:  # type: ignore[no-untyped-def]
    # GIVEN three copies of one rollout that Codex reads as one group (subagent links need it)
    paths = copies(JOURNALS["codex"], tmp_path, count=3)
    # WHEN exported together
    ids = session_ids(export_trace(*paths, require_addition=False).view)
    # THEN #2 and #3, not two sessions both renamed "#2" sharing every track
    base = ids[0]
    assert ids == [base, f"{base}#2", f"{base}#3"]


def test_summary_rows_of_copies_are_told_apart(tmp_path: Path) -> None:
    paths = [p for source in JOURNALS.values() for p in copies(source, tmp_path)]
    result = CliRunner().invoke(app, ["summary", *map(str, paths), "--json"])
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)
    ids = [row["session"] for row in rows]
    assert len(ids) == 2 * len(JOURNALS) and len(set(ids)) == len(ids), ids


OPENCODE_DB = Path("/work/shared/corpus/opencode/monkeycode-v1.16.0-sqlite/opencode.db")


@pytest.mark.skipif(not OPENCODE_DB.exists(), reason="needs the shared corpus")
def test_two_copies_of_an_opencode_database(tmp_path: Path, export_trace) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a real OpenCode database and its backup (copied to tmp: the corpus copy is never
    # opened where a reader could leave -wal/-shm files beside it)
    paths = copies(OPENCODE_DB, tmp_path)
    # WHEN both are exported together
    ids = session_ids(export_trace(*paths, require_addition=False).view)
    # THEN every session of the backup is there again, under its own id and tracks
    assert len(ids) % 2 == 0 and len(set(ids)) == len(ids), ids
    assert {i for i in ids if "#" not in i} == {i.split("#")[0] for i in ids}
