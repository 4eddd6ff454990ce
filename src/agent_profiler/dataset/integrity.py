"""Whether a dataset is whole before `fleet` reads it or `collect` builds on it, and what a
failure while writing one means.

A version's manifest lists its Parquet files with their sizes and hashes (`listing`), so
a file cut short, deleted or with a byte changed is named (`check`) instead of being a
DuckDB error with its SQL (exit 70), figures silently short of its rows, or silently
other figures. A manifest that is not JSON, not a manifest (a field of the wrong type, a
file listed outside its version), or a `current` that is no version of this dataset, is
named too (`load_manifest`). When DuckDB fails on a file (`explain`) of a dataset from
before the hashes, its files' ends are checked (the Parquet magic bytes, and a footer
length the file can hold), then each file is read, and the first DuckDB cannot read is
named (`unreadable`)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from agent_profiler.errors import AgentProfilerError, DatasetError, OutputError
from agent_profiler.output_errors import shown

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
    _own_version(directory, hint)
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


def _own_version(directory: Path, hint: str) -> None:
    """A `current` that is there is a link to a version of this dataset
    (`versions/<n>`): one into another dataset had `fleet` report that one's figures and
    `collect` delete that one's version as its own previous one (review-bad finding 24)."""
    current = directory / "current"
    if (directory / "versions").is_symlink():  # another dataset's, whose versions collect removes
        raise DatasetError(
            f"{directory / 'versions'}: damaged dataset file (a link, not this dataset's own "
            f"folder of versions); {hint}"
        )
    if not os.path.lexists(current):
        return
    try:
        target = os.readlink(current)
        versions = (directory / "versions").resolve(strict=True)
        resolved = current.resolve()
    except (OSError, RuntimeError):  # not a link (a folder, a file), a loop
        target, versions, resolved = "", Path(), Path("/")
    name = PurePosixPath(target).name
    if resolved.parent != versions or not (len(name) == 6 and name.isdigit()):
        raise DatasetError(
            f"{current}: damaged dataset file (not a link to a version of this dataset, "
            f"versions/<n>); {hint}"
        )


def _shaped(manifest: object) -> bool:
    """The keys and types collect and fleet read without looking again: every value they
    format, add up or open (review-bad finding 23: sizes as strings, a group's `sessions`
    a string, a listed file outside the version ended in `internal error`)."""
    if not isinstance(manifest, dict):
        return False
    numbers = all(type(manifest.get(k)) is int for k in ("version", "batch"))
    files, groups = manifest.get("files"), manifest.get("groups")
    if not numbers or not isinstance(files, dict) or not isinstance(groups, dict):
        return False
    return (
        all(_journal(e) for e in files.values())
        and all(_group(g) for g in groups.values())
        and _listed(manifest.get("parquet", {}))
    )


def _journal(entry: object) -> bool:
    return (
        isinstance(entry, dict)
        and type(entry.get("size")) is int
        and type(entry.get("mtime_ns")) is int
        and isinstance(entry.get("hash", ""), str)
        and isinstance(entry.get("group", ""), str | None)
    )


def _group(group: object) -> bool:
    if not isinstance(group, dict) or type(group.get("batch")) is not int:
        return False
    lists = (group.get("files"), group.get("ids", []), group.get("parents", []),
             group.get("unread", []))  # fmt: skip
    return (
        all(isinstance(v, list) and all(isinstance(k, str) for k in v) for v in lists)
        and type(group.get("sessions", 0)) is int
        and isinstance(group.get("stem"), str | None)
    )


def _listed(parquet: object) -> bool:
    """The version's files: each a Parquet file inside the version (a relative path
    without `..`), with a size, and a hash when one was written (`digest`)."""
    if not isinstance(parquet, dict):
        return False
    for name, entry in parquet.items():
        path = PurePosixPath(name)
        inside = not path.is_absolute() and ".." not in path.parts and "\\" not in name
        if not inside or path.suffix != ".parquet" or len(path.parts) < 2:
            return False
        if type(entry) is int:
            if entry < 0:
                return False
        elif not (
            isinstance(entry, list)
            and len(entry) == 2
            and type(entry[0]) is int
            and entry[0] >= 0
            and isinstance(entry[1], str)
        ):
            return False
    return True


def digest(path: Path) -> str:
    """A Parquet file's BLAKE2b hash (128 bits), as the manifest keeps it."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, lambda: hashlib.blake2b(digest_size=16)).hexdigest()


def listing(version: Path) -> dict[str, list[int | str]]:
    """Every Parquet file of a version being written, by its path in the version, with its
    size and its hash: the manifest keeps them (`check`)."""
    return {
        path.relative_to(version).as_posix(): [path.stat().st_size, digest(path)]
        for path in sorted(version.rglob("*.parquet"))
    }


def check(directory: Path, manifest: dict[str, Any], hint: str) -> None:
    """Every Parquet file the manifest lists is there, of the size it was written and with
    its bytes (their hash, where the manifest has one): a DatasetError naming the first
    that is not (and how many more). A byte changed inside a file (a bad disk, a copy gone
    wrong) changed fleet's figures without a word (review-bad finding 4)."""
    listed = manifest.get("parquet")
    if not isinstance(listed, dict):
        return  # a dataset from before the listing
    root, shown = directory / "current", version_shown(directory)
    problems = []
    for name, entry in listed.items():
        size, written = (entry, None) if isinstance(entry, int) else entry
        try:
            found = (root / name).stat().st_size
        except OSError:
            problems.append(f"{shown / name}: missing from the dataset (its manifest lists it)")
            continue
        if found != size:
            problems.append(
                f"{shown / name}: damaged dataset file ({found:,} bytes, written as {size:,})"
            )
            continue
        try:
            same = written is None or digest(root / name) == written
        except OSError as error:
            problems.append(f"{shown / name}: cannot read ({error.strerror})")
            continue
        if not same:
            why = _ends(root / name) or "its bytes changed since it was written"
            problems.append(f"{shown / name}: damaged dataset file ({why})")
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
        if reason := _ends(path):
            name = version_shown(directory) / path.relative_to(root)
            return DatasetError(f"{name}: damaged dataset file ({reason}); {hint}")
    return None


def _ends(path: Path) -> str | None:
    """What is wrong with a Parquet file's ends (`cut_short`), None when nothing."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4)
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - 8))
            end = handle.read(8)
    except OSError as error:
        return f"cannot read: {error.strerror}"
    footer = int.from_bytes(end[:4], "little")
    if head == end[4:] == PARQUET_MAGIC and 0 < footer <= size - 12:
        return None
    return "not a whole Parquet file"


def unreadable(directory: Path, hint: str) -> DatasetError | None:
    """The first Parquet file of the current version DuckDB cannot read whole (a footer
    damaged inside, with its length and magic bytes intact: DuckDB's plain `Error`, "don't
    know what type", "TProtocolException"), as a DatasetError; None when each reads. Only
    after DuckDB failed: it reads every file."""
    import duckdb

    from .parquet import literal

    root = directory / "current"
    connection = duckdb.connect(":memory:")
    try:
        for path in sorted(root.rglob("*.parquet")):
            try:
                result = connection.execute(f"SELECT * FROM read_parquet({literal(path)})")
                while result.fetchmany(10_000):
                    pass
            except duckdb.Error:
                name = version_shown(directory) / path.relative_to(root)
                return DatasetError(
                    f"{name}: damaged dataset file (not a Parquet file DuckDB can read); {hint}"
                )
    finally:
        connection.close()
    return None


def explain(directory: Path, error: BaseException, hint: str) -> AgentProfilerError | None:
    """What a failure while reading or writing the dataset at `directory` means for its
    user: a write the disk refused (an OutputError), a damaged file of the current version
    (a DatasetError); None for anything else (a bug, left as it is)."""
    if isinstance(error, OSError) and not isinstance(error, BrokenPipeError):
        return OutputError(
            f"{shown(directory)}: cannot write the dataset ({error.strerror or error}){_KEPT}"
        )
    import duckdb  # loaded already: the error is one of its

    if not isinstance(error, duckdb.InvalidInputException | duckdb.IOException):
        # Our own SQL's mistake (a binder or parser error: a bug, left as it is), unless a
        # file is damaged: a Parquet footer's length of 0, or longer than its file, is
        # DuckDB's plain `Error`, which a flipped byte gives even with the sizes listed.
        if not isinstance(error, duckdb.Error):
            return None
        return cut_short(directory, hint) or unreadable(directory, hint)
    text = str(error)
    full = next((words for words in _DISK_FULL if words in text), None)
    if full is not None:
        return OutputError(f"{shown(directory)}: cannot write the dataset ({full}){_KEPT}")
    # Its first line only (the SQL follows), its paths under the folder as given.
    said = text.splitlines()[0].replace(str(directory.resolve()), str(directory))[:300]
    return (
        cut_short(directory, hint)
        or unreadable(directory, hint)
        or DatasetError(f"{directory}: damaged dataset ({said}); {hint}")
    )
