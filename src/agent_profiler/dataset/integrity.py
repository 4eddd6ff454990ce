"""Whether a dataset is whole before `fleet` reads it or `collect` builds on it, and what a
failure while writing one means.

A version's manifest lists its Parquet files with their sizes (`listing`), so a file cut
short or deleted is named (`check`) instead of being a DuckDB error with its SQL (exit 70)
or, deleted, figures silently short of its rows. A manifest that is not JSON, or not a
manifest, is named too (`load_manifest`). When DuckDB fails on a file (`explain`), a
dataset from before the listing, or a file damaged without changing its size, has its
files' ends checked: the Parquet magic bytes, and a footer length the file can hold."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from agent_profiler.errors import AgentProfilerError, DatasetError, OutputError

MANIFEST = "manifest.json"
PARQUET_MAGIC = b"PAR1"  # a Parquet file's first and last four bytes
FLEET_HINT = "collect into a new folder to make the dataset again from its journals"
COLLECT_HINT = "the dataset was not changed; " + FLEET_HINT
_KEPT = "; nothing of this collect was kept"
# DuckDB's words for a write the disk refused (its IOException also covers unreadable files).
_DISK_FULL = ("No space left on device", "Disk quota exceeded", "File too large")


def version_shown(directory: Path) -> Path:
    """The current version's folder as the user can find it: `DS/versions/000003` (the
    `current` symlink's target, under the folder as given), else `DS/current`."""
    current = directory / "current"
    try:
        return directory / "versions" / Path(os.readlink(current)).name
    except OSError:
        return current


def load_manifest(directory: Path, hint: str) -> dict[str, Any] | None:
    """The current version's manifest, None when there is no version yet. A `current` that
    leads nowhere, a manifest that is not JSON or not shaped as one, is a DatasetError."""
    current = directory / "current"
    path = current / MANIFEST
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if os.path.islink(current):  # it names a version that is gone
            raise DatasetError(
                f"{version_shown(directory)}: missing from the dataset (its `current` "
                f"version); {hint}"
            ) from None
        return None
    except OSError as error:
        raise DatasetError(f"{directory}: cannot read its manifest ({error.strerror})") from error
    shown = version_shown(directory) / MANIFEST
    try:
        manifest = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise DatasetError(f"{shown}: damaged dataset file (not JSON); {hint}") from None
    if not _shaped(manifest):
        raise DatasetError(f"{shown}: damaged dataset file (not a manifest); {hint}")
    return manifest  # type: ignore[no-any-return]


def _shaped(manifest: object) -> bool:
    """The keys and types collect and fleet read without looking again."""
    if not isinstance(manifest, dict):
        return False
    numbers = all(type(manifest.get(k)) is int for k in ("version", "batch"))
    files, groups = manifest.get("files"), manifest.get("groups")
    if not numbers or not isinstance(files, dict) or not isinstance(groups, dict):
        return False
    entries = all(
        isinstance(e, dict) and type(e.get("size")) is int and type(e.get("mtime_ns")) is int
        for e in files.values()
    )
    return entries and all(
        isinstance(g, dict) and type(g.get("batch")) is int and isinstance(g.get("files"), list)
        for g in groups.values()
    )


def listing(version: Path) -> dict[str, int]:
    """Every Parquet file of a version being written, by its path in the version, with its
    size: the manifest keeps it (`check`)."""
    return {
        path.relative_to(version).as_posix(): path.stat().st_size
        for path in sorted(version.rglob("*.parquet"))
    }


def check(directory: Path, manifest: dict[str, Any], hint: str) -> None:
    """Every Parquet file the manifest lists is there, of the size it was written: a
    DatasetError naming the first that is not (and how many more)."""
    listed = manifest.get("parquet")
    if not isinstance(listed, dict):
        return  # a dataset from before the listing
    root, shown = directory / "current", version_shown(directory)
    problems = []
    for name, size in listed.items():
        try:
            found = (root / name).stat().st_size
        except OSError:
            problems.append(f"{shown / name}: missing from the dataset (its manifest lists it)")
            continue
        if found != size:
            problems.append(
                f"{shown / name}: damaged dataset file ({found:,} bytes, written as {size:,})"
            )
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise DatasetError(f"{problems[0]}{more}; {hint}")


def cut_short(directory: Path, hint: str) -> DatasetError | None:
    """The first Parquet file of the current version without its magic bytes at both ends
    (a file cut short, or not Parquet), or whose footer's length, written before the last
    magic bytes, is 0 or more than the file holds (DuckDB's "Footer length error"), as a
    DatasetError; None when each file is whole so far as its ends tell."""
    root = directory / "current"
    for path in sorted(root.rglob("*.parquet")):
        try:
            with path.open("rb") as handle:
                head = handle.read(4)
                size = os.fstat(handle.fileno()).st_size
                handle.seek(max(0, size - 8))
                end = handle.read(8)
        except OSError as error:
            reason = f"cannot read: {error.strerror}"
        else:
            footer = int.from_bytes(end[:4], "little")
            if head == end[4:] == PARQUET_MAGIC and 0 < footer <= size - 12:
                continue
            reason = "not a whole Parquet file"
        name = version_shown(directory) / path.relative_to(root)
        return DatasetError(f"{name}: damaged dataset file ({reason}); {hint}")
    return None


def explain(directory: Path, error: BaseException, hint: str) -> AgentProfilerError | None:
    """What a failure while reading or writing the dataset at `directory` means for its
    user: a write the disk refused (an OutputError), a damaged file of the current version
    (a DatasetError); None for anything else (a bug, left as it is)."""
    if isinstance(error, OSError) and not isinstance(error, BrokenPipeError):
        return OutputError(
            f"{directory}: cannot write the dataset ({error.strerror or error}){_KEPT}"
        )
    import duckdb  # loaded already: the error is one of its

    if not isinstance(error, duckdb.InvalidInputException | duckdb.IOException):
        # Our own SQL's mistake (a binder or parser error: a bug, left as it is), unless a
        # file is damaged: a Parquet footer's length of 0, or longer than its file, is
        # DuckDB's plain `Error`, which a flipped byte gives even with the sizes listed.
        return cut_short(directory, hint) if isinstance(error, duckdb.Error) else None
    text = str(error)
    full = next((words for words in _DISK_FULL if words in text), None)
    if full is not None:
        return OutputError(
            f"{directory}: cannot write the dataset ({full}); nothing of this collect was kept"
        )
    # Its first line only (the SQL follows), its paths under the folder as given.
    said = text.splitlines()[0].replace(str(directory.resolve()), str(directory))[:300]
    return cut_short(directory, hint) or DatasetError(
        f"{directory}: damaged dataset ({said}); {hint}"
    )
