"""An output is on disk before it is named (review outfail D9): nothing was fsynced, so a
crash or a power cut soon after a `--force` export could leave an empty file in place of the
user's old trace, and after a collect a `current` version whose manifest or Parquet files
were empty, a dataset `collect` then refused as damaged. The order of the calls is what is
checked (a crash cannot be made here): each file's fsync before the link or rename that
names it, and its folder's after."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.outputs import write_atomically
from samples import CLAUDE_SMALL, CODEX_SMALL

runner = CliRunner()
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/fd")


def _record(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every fsync (with the path its descriptor names, `(deleted)` for one with no name
    yet), link, rename and replace, in the order they were made."""
    calls: list[tuple[str, str]] = []
    real = {name: getattr(os, name) for name in ("fsync", "link", "rename", "replace")}

    def fsync(handle: int) -> None:
        calls.append(("fsync", os.readlink(f"/proc/self/fd/{handle}")))
        real["fsync"](handle)

    def naming(name: str) -> Any:
        def call(source: Any, destination: Any, *args: Any, **kwargs: Any) -> None:
            calls.append((name, os.fsdecode(destination)))
            real[name](source, destination, *args, **kwargs)

        return call

    monkeypatch.setattr(os, "fsync", fsync)
    for name in ("link", "rename", "replace"):
        monkeypatch.setattr(os, name, naming(name))
    return calls


@linux
@pytest.mark.parametrize("there", [False, True], ids=["new", "over-an-old-one"])
def test_an_output_is_on_disk_before_it_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, there: bool
) -> None:
    target = tmp_path / "t.pftrace"
    if there:
        target.write_bytes(b"the user's old trace")
    calls = _record(monkeypatch)
    write_atomically(target, lambda stream: stream.write(b"trace"))
    assert target.read_bytes() == b"trace"
    kinds = [kind for kind, _ in calls]
    named = max(i for i, kind in enumerate(kinds) if kind in ("link", "replace"))
    synced = [i for i, kind in enumerate(kinds) if kind == "fsync"]
    assert synced and synced[0] < kinds.index("link")  # the file, before its first name
    assert calls[synced[-1]] == ("fsync", str(tmp_path)) and synced[-1] > named  # its folder


@linux
def test_without_o_tmpfile_the_named_file_is_on_disk_before_it_is_renamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = os.open
    unnamed = getattr(os, "O_TMPFILE", 0)

    def open_(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
        if unnamed and flags & unnamed == unnamed:
            raise OSError(95, "Operation not supported", str(path))
        return real_open(path, flags, mode, **kw)

    monkeypatch.setattr(os, "open", open_)
    calls = _record(monkeypatch)
    write_atomically(tmp_path / "t.pftrace", lambda stream: stream.write(b"trace"))
    (temporary,) = (path for kind, path in calls if kind == "fsync" and path.endswith(".tmp"))
    assert calls == [
        ("fsync", temporary),
        ("replace", str(tmp_path / "t.pftrace")),
        ("fsync", str(tmp_path)),
    ]


@linux
def test_a_file_not_to_keep_is_not_synced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The price cache (durable=False): a cache lost in a crash is looked up again."""
    calls = _record(monkeypatch)
    write_atomically(tmp_path / "c.json", lambda stream: stream.write(b"{}"), durable=False)
    assert [kind for kind, _ in calls if kind == "fsync"] == []


@linux
@pytest.mark.parametrize("collects", [1, 2], ids=["first", "second"])
def test_a_dataset_version_is_on_disk_before_it_is_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collects: int
) -> None:
    """Its manifest and every new Parquet file fsynced before the version is renamed into
    place, `versions/` after that, and the dataset's folder after `current` is swapped."""
    dataset = tmp_path / "ds"
    if collects == 2:
        assert (
            runner.invoke(app, ["collect", str(CLAUDE_SMALL), "--to", str(dataset)]).exit_code == 0
        )
    calls = _record(monkeypatch)
    result = runner.invoke(app, ["collect", str(CODEX_SMALL), "--to", str(dataset)])
    assert result.exit_code == 0, result.stderr
    version = dataset / "versions" / f"{collects:06d}"
    renamed = calls.index(("rename", str(version)))
    swapped = calls.index(("replace", str(dataset / "current")))
    synced = {path for kind, path in calls[:renamed] if kind == "fsync"}
    building = {Path(p).parent for p in synced if p.endswith("manifest.json")}
    assert len(building) == 1  # the manifest, in the version being built
    (folder,) = building
    new = {  # this collect's batch (the last one's files are linked: on disk already)
        str(folder / path.relative_to(version))
        for path in version.rglob("*")
        if path.name == "manifest.json" or path.name.startswith(f"b{collects:06d}_")
    }
    assert len(new) > 5 and new <= synced
    assert ("fsync", str(dataset / "versions")) in calls[renamed:swapped]
    assert ("fsync", str(dataset)) in calls[swapped:]
