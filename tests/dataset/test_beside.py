"""A journal a plan finds beside one given (a Codex child rollout beside its parent given
alone, a Claude Code subagent's file beside its session's) is a journal of the manifest
too: a later collect of the parent alone, unchanged, reads the group again when only the
child grew (Codex children keep writing while their parent waits), or when the child could
not be read last time; and still reads nothing when nothing changed. It was read with its
group and never looked at again: "nothing new or changed", the child's rows stale or never
collected."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from dsfiles import edit_manifest, run
from test_regroup import SPOTTER, _groups, _rows, _sessions

import agent_profiler.jsonl as jsonl
from agent_profiler.errors import JournalError
from rules_spy import record, write
from samples import CODEX_PLAIN, codex_meta

pytest.importorskip("duckdb")

SUBAGENT = "agent-a881341.jsonl"
TURN = [record(CODEX_PLAIN, n) for n in (6, 7, 10)]  # a prompt, its request's usage
MORE = [record(CODEX_PLAIN, n) for n in (8, 9, 14)]  # a call, and the next request's usage
LATER = [record(CODEX_PLAIN, n) for n in (24, 27, 28)]  # another, and the next request's


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def rollouts(folder: Path) -> tuple[Path, Path]:
    """A parent rollout and its child's side by side, as Codex writes them."""
    folder.mkdir(parents=True)
    parent = write(folder, [codex_meta("thread-p"), *TURN], "rollout-parent.jsonl")
    child = write(folder, [codex_meta("thread-c", "thread-p"), *TURN], "rollout-child.jsonl")
    return parent, child


def grow(path: Path, records: list[dict[str, Any]]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)


def requests_of(session_id: str, dataset: str = "ds") -> int:
    return int(_sessions(Path(dataset))[session_id]["requests"])


def as_fresh(*args: str) -> None:
    """The dataset `ds` is the one a fresh collect of `args` makes (its rows, its manifest's
    journals and groups)."""
    fresh = run("collect", *args, "--to", "fresh", "--jobs", "1")
    assert fresh.exit_code == 0, fresh.output
    assert _rows(Path("ds")) == _rows(Path("fresh"))
    assert _groups(Path("ds")) == _groups(Path("fresh"))


def collect(*args: str) -> Any:
    result = run("collect", *args, "--to", "ds", "--jobs", "1")
    assert result.exit_code == 0, result.output + result.stderr
    return result


def test_a_child_that_grew_beside_its_parent_given_alone_is_read_again(here: Path) -> None:
    # GIVEN a Codex parent collected alone, its child rollout found beside it
    parent, child = rollouts(Path("day"))
    collect(str(parent))
    assert requests_of("thread-c") == 1
    # WHEN the child alone grows (its parent waits) and the parent alone is collected again
    grow(child, MORE)
    again = collect(str(parent))
    # THEN the group is read again: the child's new request is there, and the line says why
    assert requests_of("thread-c") == 2
    assert (
        "; 1 journal: 0 new, 0 changed, 1 unchanged (1 of them read again: 1 journal found "
        "beside them changed); read 1 journal group"
    ) in again.stdout
    # AND the dataset is the one a fresh collect of the parent makes
    as_fresh(str(parent))


def _refused(name: str, monkeypatch: pytest.MonkeyPatch, *, opened: bool = True) -> None:
    """The file `name` cannot be opened when read (permission denied: as root a `chmod
    000` file is still readable, so its read's open refuses it); nor at all (`opened`
    False: `os.open` refuses it too)."""
    real, real_open = jsonl.open_stream, os.open

    def open_stream(path: str) -> Any:
        if Path(path).name == name:
            raise JournalError(path, "cannot open: permission denied")
        return real(path)

    def os_open(path: Any, *args: Any, **kwargs: Any) -> int:
        if Path(path).name == name:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(jsonl, "open_stream", open_stream)
    if not opened:
        monkeypatch.setattr(os, "open", os_open)


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of groups each reading of the collects from now on reads."""
    import agent_profiler.pipeline as pipeline

    reads: list[int] = []
    real = pipeline.run_groups

    def run_groups(tasks: Any, *args: Any, **kwargs: Any) -> Any:
        reads.append(len(tasks))
        return real(tasks, *args, **kwargs)

    monkeypatch.setattr(pipeline, "run_groups", run_groups)
    return reads


def test_a_subagent_found_beside_that_could_not_be_read_is_read_next_time(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a Claude Code session given alone, one of its subagents' files unreadable
    shutil.copytree(SPOTTER, "sp")
    (parent,) = Path("sp").glob("*.jsonl.gz")
    subagent = next(Path("sp").rglob(SUBAGENT))
    with monkeypatch.context() as patched:
        _refused(SUBAGENT, patched)
        first = run("collect", str(parent), "--to", "ds", "--jobs", "1")
    # THEN it is said, and the session is collected without it
    assert f"{subagent}: cannot open: permission denied" in first.stderr, first.stderr
    assert "1 session in the dataset" in first.stdout
    assert len(_sessions(Path("ds"))) == 1
    # AND while it still cannot be opened, it is said again without reading its group
    reads = _reads(monkeypatch)
    with monkeypatch.context() as patched:
        _refused(SUBAGENT, patched, opened=False)
        still = run("collect", str(parent), "--to", "ds", "--jobs", "1")
    assert (still.exit_code, reads) == (1, [])
    assert f"error: {subagent}: cannot open: permission denied\n" in still.stderr
    assert "ds: nothing new or changed; 1 journal: 0 new, 0 changed, 1 unchanged" in still.stdout
    # WHEN the parent alone, unchanged, is collected again with the file readable
    second = collect(str(parent))
    assert reads == [1]
    # THEN the session is read again with it: the subagent's rows arrive
    assert "1 journal found beside them not read last time" in second.stdout
    assert "2 sessions in the dataset" in second.stdout
    assert len(_sessions(Path("ds"))) == 2
    as_fresh(str(parent))


def test_a_subagent_found_beside_that_opens_but_is_refused_is_not_read_again(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file found beside that opens but that its read refuses (UTF-16 text) made every
    collect read its group again, and write a new version with the same rows."""
    # GIVEN a Claude Code session given alone, one of its subagents' files UTF-16 text
    shutil.copytree(SPOTTER, "sp")
    (parent,) = Path("sp").glob("*.jsonl.gz")
    subagent = next(Path("sp").rglob(SUBAGENT))
    kept = subagent.read_bytes()
    subagent.write_bytes('{"type": "user"}\n'.encode("utf-16"))
    said = f"error: {subagent}: {jsonl.UTF16_MESSAGE}\n"
    first = run("collect", str(parent), "--to", "ds", "--jobs", "1")
    assert said in first.stderr, first.stderr
    assert len(_sessions(Path("ds"))) == 1
    # WHEN it is collected again, nothing changed
    reads = _reads(monkeypatch)
    for _ in range(2):
        again = run("collect", str(parent), "--to", "ds", "--jobs", "1")
        # THEN the file is said again, its group is not read, and no version is made
        assert (again.exit_code, reads) == (1, []), again.stdout + again.stderr
        assert said in again.stderr
        assert "ds: nothing new or changed; 1 journal: 0 new, 0 changed, 1 unchanged" in (
            again.stdout
        )
    # WHEN it is emptied: its head refuses nothing now (no record at all), so its group is
    # read again
    subagent.write_bytes(b"")
    emptied = run("collect", str(parent), "--to", "ds", "--jobs", "1")
    assert "internal error" not in emptied.stderr, emptied.stderr
    assert reads == [1]
    assert "1 journal found beside them not read last time" in emptied.stdout
    # WHEN it is saved again as UTF-8: its group is read again, and its rows arrive
    subagent.write_bytes(kept)
    second = collect(str(parent))
    assert reads == [1, 1]
    assert "1 journal found beside them changed" in second.stdout
    assert len(_sessions(Path("ds"))) == 2
    as_fresh(str(parent))


def test_a_subagent_that_was_the_group_s_only_unread_journal_is_read_once_it_reads(
    here: Path,
) -> None:
    """The group's only journal not given is one its read refused (no entry, listed as
    unread): the group is still planned again, and read once the file reads. (The session
    of the tests above has a second subagent, kept in the manifest, which alone would make
    its group looked at.)"""
    # GIVEN a Claude Code session given alone with one subagent, whose file is UTF-16 text
    shutil.copytree(SPOTTER, "sp")
    (parent,) = Path("sp").glob("*.jsonl.gz")
    subagents = sorted(Path("sp").rglob("agent-*.jsonl"))
    subagent = next(p for p in subagents if p.name == SUBAGENT)
    for other in subagents:
        if other != subagent:
            other.unlink()
    kept = subagent.read_bytes()
    subagent.write_bytes('{"type": "user"}\n'.encode("utf-16"))
    first = run("collect", str(parent), "--to", "ds", "--jobs", "1")
    assert first.exit_code == 1 and jsonl.UTF16_MESSAGE in first.stderr, first.stderr
    assert len(_sessions(Path("ds"))) == 1
    # WHEN it is saved again as UTF-8 and the session alone, unchanged, is collected
    subagent.write_bytes(kept)
    again = collect(str(parent))
    # THEN its group is read again, the subagent's rows with it
    assert "1 journal found beside them not read last time" in again.stdout
    assert len(_sessions(Path("ds"))) == 2
    as_fresh(str(parent))


def test_an_unchanged_group_is_not_read_again(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a Codex parent and a Claude Code session, each collected alone with the journals
    # found beside them
    parent, _ = rollouts(Path("day"))
    shutil.copytree(SPOTTER, "sp")
    (session,) = Path("sp").glob("*.jsonl.gz")
    collect(str(parent), str(session))
    # WHEN collected again, nothing changed (a `touch` of a child is no change)
    Path("day", "rollout-child.jsonl").touch()
    import agent_profiler.dataset.beside as beside
    import agent_profiler.dataset.changes as changes

    reads, hashed = _reads(monkeypatch), []
    real_hash = changes.content_hash

    def content_hash(path: Path) -> str:
        hashed.append(path.name)
        return real_hash(path)

    monkeypatch.setattr(changes, "content_hash", content_hash)
    monkeypatch.setattr(beside, "content_hash", content_hash)
    again = collect(str(parent), str(session))
    # THEN no group is read: the child touched is hashed (its mtime moved), nothing else
    assert "nothing new or changed; 2 journals: 0 new, 0 changed, 2 unchanged (not read)" in (
        again.stdout
    )
    assert (reads, hashed) == ([], ["rollout-child.jsonl"])
    assert "collected before and not found now" not in again.stdout


def test_a_dataset_collected_before_found_beside_journals_were_kept(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A manifest written before it kept the journals found beside those given (nor the
    journals of a group it could not read): collected into as before, and once its group
    is read again (its parent changed), its child is kept and looked at too."""
    parent, child = rollouts(Path("day"))
    collect(str(parent))

    def as_before(manifest: dict[str, Any]) -> None:
        given = {k: v for k, v in manifest["files"].items() if len(manifest["files"]) == 1 or (
            v["size"] == parent.stat().st_size)}  # fmt: skip
        manifest["files"] = given
        for group in manifest["groups"].values():
            group.pop("unread", None)

    edit_manifest(as_before)
    # the child grew: a manifest that does not hold it cannot tell (as before)
    grow(child, MORE)
    assert "nothing new or changed" in collect(str(parent)).stdout
    assert requests_of("thread-c") == 1
    # the parent changed: its group is read again, its child with it, and kept now
    grow(parent, MORE)
    assert "0 new, 1 changed" in collect(str(parent)).stdout
    assert (requests_of("thread-p"), requests_of("thread-c")) == (2, 2)
    grow(child, LATER)
    assert "1 journal found beside them changed" in collect(str(parent)).stdout
    assert requests_of("thread-c") == 3


def test_a_changed_parent_given_alone_does_not_say_its_subagents_are_gone(here: Path) -> None:
    """A group read again (its parent changed, given alone) finds its subagents' files
    where its plan finds them (below the session's file): they were looked for in the
    parent's folder and the two above only, and said "not found now" while read."""
    shutil.copytree(SPOTTER, "sp")
    (packed,) = Path("sp").glob("*.jsonl.gz")
    main = packed.with_suffix("")
    main.write_bytes(gzip.decompress(packed.read_bytes()))
    packed.unlink()
    collect(str(main))
    lines = main.read_bytes().splitlines(keepends=True)
    main.write_bytes(b"".join(lines) + lines[-1])
    again = collect(str(main))
    assert "not found now" not in again.stderr + again.stdout
    assert "0 new, 1 changed" in again.stdout
    as_fresh(str(main))


def test_a_child_found_beside_that_stops_at_damage_now_keeps_its_rows(here: Path) -> None:
    """As a journal given that changed and stops at damage (test_journal_damaged_later):
    the group's rows collected before are kept, and the next collect tries it again."""
    parent, child = rollouts(Path("day"))
    packed = child.with_name(child.name + ".gz")
    packed.write_bytes(gzip.compress(child.read_bytes()))
    child.unlink()
    collect(str(parent))
    before = _rows(Path("ds"))
    grown = gzip.decompress(packed.read_bytes()) + b"".join(
        json.dumps(r).encode() + b"\n" for r in MORE
    )
    whole = gzip.compress(grown)
    packed.write_bytes(whole[: len(whole) // 3])  # it grew, and was cut short
    result = run("collect", str(parent), "--to", "ds", "--jobs", "1")
    assert result.exit_code == 1, result.output
    assert "corrupt or truncated gzip stream" in result.stderr
    assert "1 session whose journal collected before is unusable or damaged now" in result.stdout
    assert _rows(Path("ds")) == before
    packed.write_bytes(whole)  # whole again: read
    assert "1 journal found beside them changed" in collect(str(parent)).stdout
    assert requests_of("thread-c") == 2
