"""The dataset's Parquet files, written and carried over by DuckDB (collect.py): a
batch's staged rows into one file per partition, the previous version's files hard-linked or
copied without the groups read again, a partition's many files merged into one."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from . import PARTITIONS, SCHEMA

MERGE_AT = 16  # files in one partition (one per collect) before they are merged into one

# The staging rows' stamp: which reading of its group a row comes from. A group may be
# read twice — the parent overrules a worker that used a session id an earlier group had
# (pipeline.run_groups reads it again, renamed `#2`), or a worker dies after writing its
# rows — and only the reading the parent accepts is kept (`write_table`): the rows of
# the other were written all the same, and the dataset held that session twice.
READING = "_read"


def link_or_filter(
    connection: Any,
    source: Path,
    destination: Path,
    old: dict[str, Any],
    dropped: set[str],
    batch: int,
) -> None:
    """Carry the previous version's files of one table into the new one: hard links for
    batches that hold no dropped group, a filtered copy for those that do. A partition
    that has gathered more than MERGE_AT files (one per collect) is merged into one file
    (`…m.parquet`, which may hold any batch's groups, so it is filtered whenever a group
    is dropped)."""
    if not source.exists():
        return
    touched = {old["groups"][g]["batch"] for g in dropped if g in old["groups"]}
    ids = ", ".join(f"'{g}'" for g in sorted(dropped)) or "''"
    partitions: dict[Path, list[Path]] = {}
    for path in sorted(source.rglob("*.parquet")):
        partitions.setdefault(path.parent, []).append(path)
    for folder, paths in partitions.items():
        target_folder = destination / folder.relative_to(source)
        target_folder.mkdir(parents=True, exist_ok=True)
        if len(paths) > MERGE_AT:
            merged = target_folder / f"b{batch:06d}_m.parquet"
            _copy_without(connection, paths, merged, ids)
            continue
        for path in paths:
            target = target_folder / path.name
            if _batch_of(path) not in touched and not (dropped and "_m" in path.stem):
                os.link(path, target)
            else:
                _copy_without(connection, [path], target.with_name(f"{path.stem}r.parquet"), ids)


def _copy_without(connection: Any, paths: list[Path], target: Path, ids: str) -> None:
    """The rows of `paths` but those of the dropped groups, into `target` (none: no file)."""
    files = "[" + ", ".join(literal(p) for p in paths) + "]"
    connection.execute(
        f"COPY (SELECT * FROM read_parquet({files}, hive_partitioning = false, "
        f"union_by_name = true) WHERE group_id NOT IN ({ids})) TO '{sql(target)}' "
        "(FORMAT parquet)"
    )
    counted = connection.execute(f"SELECT count(*) FROM read_parquet({literal(target)})")
    if not counted.fetchone()[0]:
        target.unlink()


def _batch_of(path: Path) -> int:
    """`b000003_0.parquet`, `b000003_0r.parquet` → 3."""
    return int(path.name[1:7])


def write_table(connection: Any, staging: Path, building: Path, table: str, batch: int) -> None:
    """This batch's rows of `table`, a Parquet file per partition (`harness=…/month=…`,
    Hive's layout, the partition columns in the path only). Each is one streaming copy of
    its staging files, in their order (a session's rows together, as each group wrote
    them): a sort or DuckDB's partitioned writer held the whole batch in memory and
    failed past its memory limit (a first collect of 300 long sessions)."""
    kinds = [*SCHEMA[table], (READING, "BIGINT")]
    columns = "{" + ", ".join(f"'{name}': '{kind}'" for name, kind in kinds) + "}"
    for folder in sorted((staging / table).glob("*=*/*=*")):
        files = "[" + ", ".join(literal(p) for p in sorted(folder.glob("*.jsonl"))) + "]"
        target = building / table / folder.relative_to(staging / table)
        target.mkdir(parents=True, exist_ok=True)
        out = target / f"b{batch:06d}_0.parquet"
        copied = connection.execute(
            f"COPY (SELECT * EXCLUDE ({READING}, {', '.join(PARTITIONS)}) FROM read_json("
            f"{files}, columns = {columns}, format = 'newline_delimited') WHERE {READING} IN "
            f"(SELECT reading FROM accepted)) TO '{sql(out)}' (FORMAT parquet)"
        ).fetchone()[0]
        if not copied:  # every row of a reading that was not kept
            out.unlink()
            for empty in (target, target.parent):
                with contextlib.suppress(OSError):  # not empty: other partitions' files
                    empty.rmdir()


def sql(path: Path) -> str:
    return str(path).replace("'", "''")


def literal(path: Path) -> str:
    """`path` as a quoted SQL string that DuckDB's `read_parquet` / `read_json` read as
    that one file: they take a name holding `*`, `?` or `[` as a glob, and a dataset in a
    folder named `ds?y` read `dsAy`'s files too (review-bad finding 13). Each is escaped as
    a one-character class (`[?]`); a glob has no escape for a backslash (DuckDB reads it
    as a folder's separator there), so a path holding both is refused."""
    readable(path)
    text = str(path)
    if any(c in text for c in "*?["):
        text = "".join(f"[{c}]" if c in "*?[" else c for c in text)
    return "'" + text.replace("'", "''") + "'"


def readable(folder: Path) -> None:
    """Refuse a dataset's folder whose path `literal` cannot give DuckDB (a UsageError)."""
    text = str(folder)
    if "\\" in text and any(c in text for c in "*?["):
        from agent_profiler.errors import UsageError

        raise UsageError(
            f"{folder}: a path holding a backslash and one of * ? [ cannot be read by "
            "DuckDB; rename or move the dataset's folder"
        )
