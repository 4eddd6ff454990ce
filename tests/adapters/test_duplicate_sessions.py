"""One session in several files (issue 15, point 2; review of subagents, finding 4). Files
with the same decompressed bytes (a copy beside the original, a `.jsonl` beside its
`.jsonl.gz`, an export and its gzip) are one journal: read once, with one warning naming
the file and the one it repeats, for every harness and any --jobs. Files that hold one
session id with other bytes (a resumed run, a longer copy) each keep their session, the
later ones as `#2`, `#3`, said in one warning each. The contract checks run by
`export_trace` add that track uuids are unique and every event's track is declared."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from samples import (
    CLAUDE_SMALL,
    CODEX_SMALL,
    DATA,
    GEMINI_DOCUMENT,
    GEMINI_JSONL,
    MUSE_SINGLE_TURN,
    OPENCODE_EXPORT,
    PI_LARGE,
)
from shared_paths import CORPUS, SHARED_REASON

JOURNALS = {
    "claude-code": CLAUDE_SMALL,
    "codex": CODEX_SMALL,
    "pi": PI_LARGE,
    "muse": MUSE_SINGLE_TURN,
    "gemini-cli": GEMINI_DOCUMENT,
    "gemini-cli-jsonl": GEMINI_JSONL,
    "opencode": OPENCODE_EXPORT,
}
SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
SPOTTER_MAIN = "258c7280-ae70-4798-800f-63464d01a85d.jsonl.gz"


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


def variants(source: Path, tmp: Path, count: int = 2) -> list[Path]:
    """The journal, then `count` − 1 files holding its records with other bytes (one more
    blank line each at the end, decompressed): the same session id, not the same file."""
    data = gzip.decompress(source.read_bytes()) if source.name.endswith(".gz") else None
    paths = [source]
    for index in range(1, count):
        folder = tmp / f"variant{index}"
        folder.mkdir(exist_ok=True)
        target = folder / source.name.removesuffix(".gz")
        target.write_bytes((data or source.read_bytes()) + b"\n" * index)
        paths.append(target)
    return paths


def session_ids(view) -> list[str]:  # type: ignore[no-untyped-def]
    ids = []
    for capture in view.captures():
        profile = view.profile_of(capture.uuid)
        assert profile is not None
        ids.append(profile.args["session_id"])
    return ids


def warned(stderr: str, kind: str) -> list[str]:
    """The listed warnings of one kind (their lines, stripped), by the words each kind says."""
    words = {"same-bytes": ": the same bytes as ", "session-repeated": "another file read holds"}
    return [line.strip() for line in stderr.splitlines() if words[kind] in line]


@pytest.mark.parametrize("harness", JOURNALS)
def test_two_copies_with_the_same_bytes_are_read_once(
    harness: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, export_trace
) -> None:  # type: ignore[no-untyped-def]
    # GIVEN the same real journal twice (a copy beside the original), named relatively
    monkeypatch.chdir(tmp_path)
    paths = [p.relative_to(tmp_path) for p in copies(JOURNALS[harness], tmp_path)]
    # WHEN both are exported into one trace
    exported = export_trace(*paths, require_addition=False)
    # THEN one session, and one warning naming the copy and the file it repeats
    assert len(session_ids(exported.view)) == 1
    name = JOURNALS[harness].name
    assert warned(exported.stderr, "same-bytes") == [
        f"copy1/{name}: the same bytes as copy0/{name}: read once"
    ]
    assert "same-bytes: 1)" in exported.stderr or "same-bytes: 1," in exported.stderr


@pytest.mark.parametrize("harness", JOURNALS)
def test_files_holding_one_session_with_other_bytes_keep_each_its_session(
    harness: str, tmp_path: Path, export_trace
) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a real journal and a file with its records and one more blank line
    paths = variants(JOURNALS[harness], tmp_path)
    # WHEN both are exported into one trace (export_trace runs the contract, which
    # rejects a track uuid declared twice)
    exported = export_trace(*paths, require_addition=False)
    # THEN two sessions with distinct ids, each on its own tracks, the second said
    ids = session_ids(exported.view)
    assert len(ids) == 2 and ids[1] == f"{ids[0]}#2", ids
    (line,) = warned(exported.stderr, "session-repeated")
    assert f"{paths[1].name}: another file read holds session {ids[0]} too" in line
    assert line.endswith(f"this one is shown as {ids[0]}#2"), line


def test_three_files_of_a_codex_rollout_in_one_folder(tmp_path: Path, export_trace) -> None:  # type: ignore[no-untyped-def]
    # GIVEN three files of one rollout (other bytes) that Codex reads as one group
    paths = variants(JOURNALS["codex"], tmp_path, count=3)
    # WHEN exported together
    ids = session_ids(export_trace(*paths, require_addition=False).view)
    # THEN #2 and #3, not two sessions both renamed "#2" sharing every track
    base = ids[0]
    assert ids == [base, f"{base}#2", f"{base}#3"]


def test_summary_rows_of_copies_and_of_other_files(tmp_path: Path) -> None:
    # GIVEN every harness's journal, a copy of it and a file of it with other bytes
    paths = [
        p
        for source in JOURNALS.values()
        for p in copies(source, tmp_path) + variants(source, tmp_path)[1:]
    ]
    # WHEN summarised
    result = CliRunner().invoke(app, ["summary", *map(str, paths), "--json"])
    assert result.exit_code == 0, result.stderr
    # THEN a row for the journal and one for the other file (`#2`), none for the copy
    ids = [row["session"] for row in json.loads(result.stdout)]
    assert len(ids) == 2 * len(JOURNALS) and len(set(ids)) == len(ids), ids
    assert sum(i.endswith("#2") for i in ids) == len(JOURNALS)
    assert f"same-bytes: {len(JOURNALS)}" in result.stderr
    assert f"session-repeated: {len(JOURNALS)}" in result.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_folder_with_a_jsonl_beside_its_gz_is_one_session_tree(
    jobs: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, export_trace
) -> None:  # type: ignore[no-untyped-def]
    # GIVEN the spotter's session folder (a subagent, a compaction) with its main journal
    # unzipped beside the .gz ("I unzipped it to look"), and a copy of the folder
    monkeypatch.chdir(tmp_path)
    shutil.copytree(SPOTTER, "sp")
    Path("sp", SPOTTER_MAIN.removesuffix(".gz")).write_bytes(
        gzip.decompress(Path("sp", SPOTTER_MAIN).read_bytes())
    )
    shutil.copytree("sp", "again")
    # WHEN exported with one process or two
    exported = export_trace(Path("sp"), Path("again"), args=("--jobs", jobs))
    # THEN one session and its subagent: 152 + 3 responses, not twice (310)
    assert len(session_ids(exported.view)) == 2
    assert "2 sessions (1 subagent), 155 responses" in exported.stdout
    plain = SPOTTER_MAIN.removesuffix(".gz")
    said = warned(exported.stderr, "same-bytes")
    assert said[:2] == [
        f"sp/{SPOTTER_MAIN}: the same bytes as sp/{plain}: read once",
        f"again/{plain}: the same bytes as sp/{plain}: read once",
    ]
    assert "warnings (same-bytes: 5)" in exported.stderr
    # AND the same bytes with either number of processes
    other = export_trace(Path("sp"), Path("again"), args=("--jobs", "2" if jobs == "1" else "1"))
    assert exported.path.read_bytes() == other.path.read_bytes()


def test_an_opencode_export_beside_its_gzip_is_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, export_trace
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    name = OPENCODE_EXPORT.name
    Path(name).write_bytes(OPENCODE_EXPORT.read_bytes())
    Path(f"{name}.gz").write_bytes(gzip.compress(OPENCODE_EXPORT.read_bytes()))
    exported = export_trace(Path(name), Path(f"{name}.gz"), require_addition=False)
    assert len(session_ids(exported.view)) == 1
    assert warned(exported.stderr, "same-bytes") == [
        f"{name}.gz: the same bytes as {name}: read once"
    ]


def test_a_copys_short_name_keeps_the_sessions_short_id(tmp_path: Path, export_trace) -> None:  # type: ignore[no-untyped-def]
    # GIVEN the spotter's session (a subagent) and a longer copy of both of its files
    folder = tmp_path / "longer"
    shutil.copytree(SPOTTER, folder)
    for path in folder.rglob("*.jsonl*"):
        data = (
            gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        )
        path.unlink()
        path.with_name(path.name.removesuffix(".gz")).write_bytes(data + b"\n")
    # WHEN both are exported
    view = export_trace(SPOTTER, folder).view
    # THEN the copy's groups are named by the short id and its `#2` (was `01a85d#2`)
    names = {track.name for track in view.tracks.values()}
    assert any(n.startswith("Claude Code 258c7280#2 ") for n in names), sorted(names)
    assert any(n.startswith("Subagent a881341#2 of 258c7280#2 via Task") for n in names)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=SHARED_REASON)
def test_two_copies_of_an_opencode_database_are_read_once(tmp_path: Path, export_trace) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a real OpenCode database and its backup (copied to tmp: the corpus copy is never
    # opened where a reader could leave -wal/-shm files beside it)
    database = CORPUS / "opencode" / "monkeycode-v1.16.0-sqlite" / "opencode.db"
    paths = copies(database, tmp_path)
    # WHEN both are exported together
    exported = export_trace(*paths, require_addition=False)
    # THEN the backup is read once: no session twice
    ids = session_ids(exported.view)
    assert ids and not any("#" in i for i in ids), ids
    assert "same-bytes: 1" in exported.stderr
    # AND a database with a write-ahead log beside it is not compared: its rows may differ
    Path(f"{paths[1]}-wal").write_bytes(b"")
    ids = session_ids(export_trace(*paths, require_addition=False).view)
    assert len(ids) == 2 * len(set(i.split("#")[0] for i in ids)), ids


def test_a_shorter_copy_without_its_subagents_names_its_own_unread_child(
    tmp_path: Path, export_trace
) -> None:  # type: ignore[no-untyped-def]
    """A copy of the spotter's main file (other bytes: one line less), given without its
    subagents' folder beside the original: its Task call kept the original's child id, so
    the trace drew an arrow from the copy to the original's subagent while saying the copy's
    was not read. The copy's call names the copy's own child (`…#2/a881341`), not read, and
    no arrow leaves it."""
    copy = tmp_path / "copy" / SPOTTER_MAIN.removesuffix(".gz")
    copy.parent.mkdir()
    lines = gzip.decompress((SPOTTER / SPOTTER_MAIN).read_bytes()).split(b"\n")
    copy.write_bytes(b"\n".join(lines[:-3]) + b"\n")
    exported = export_trace(SPOTTER, copy.parent)
    view = exported.view
    sid = SPOTTER_MAIN.removesuffix(".jsonl.gz")
    launches = {
        s.args["child_session"]: s
        for s in view.slices
        if s.name == "Task" and "child_session" in s.args
    }
    assert sorted(launches) == [f"{sid}#2/a881341", f"{sid}/a881341"]
    # each has its response's arrow; only the original's also goes to its subagent
    original, renamed = launches[f"{sid}/a881341"], launches[f"{sid}#2/a881341"]
    assert len(original.flow_ids) == len(renamed.flow_ids) + 1 == 2
    assert "session-repeated" in exported.stderr and "not the same bytes" not in exported.stderr


def test_of_two_copies_the_one_with_its_subagents_folder_is_read(tmp_path: Path) -> None:
    """The first of two equal files was kept: given a bare copy first, the session lost its
    subagent, and the warning said to pass a folder that was right beside the other copy."""
    bare = tmp_path / "bk" / SPOTTER_MAIN
    bare.parent.mkdir()
    bare.write_bytes((SPOTTER / SPOTTER_MAIN).read_bytes())
    for order in ([bare, SPOTTER / SPOTTER_MAIN], [SPOTTER / SPOTTER_MAIN, bare]):
        result = CliRunner().invoke(app, ["summary", *map(str, order), "--json"])
        assert result.exit_code == 0, result.output
        rows = json.loads(result.stdout)
        assert [r.get("parent") is not None for r in rows] == [False, True], order
        assert "subagent-not-read" not in result.stderr
        (said,) = warned(result.stderr, "same-bytes")
        # the bare copy is the one left out: the original, with its folder, is read
        assert SPOTTER.name in said.split(": the same bytes as ")[1], said
