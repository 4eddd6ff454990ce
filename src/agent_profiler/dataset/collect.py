"""`collect PATH… --to DIR`: journals into the dataset's Parquet tables, incrementally,
in parallel, atomically.

- Incremental: `manifest.json` (in each version) keeps, per journal (given, or found beside
  those given and read with them: beside.py), a key (a hash of its resolved path: the
  dataset holds no path), its size, mtime and a BLAKE2b hash of its bytes, and the journal
  group it was read in. A journal whose size and mtime are
  unchanged is not read; one whose size or mtime moved but whose bytes hash the same is
  not read either. A journal group is read again when one of its files changed (its old
  rows are dropped from the batch files that held them) or when a new file belongs to it
  (a new subagent of a known session, a parent of a subagent collected before, the same
  session in a second file: regroup.py), so that the dataset is the one a fresh collect
  of the same files makes. Journals no longer found are kept: the dataset is an archive
  (Claude Code deletes transcripts after 30 days). A journal rewritten in place has its rows
  replaced, one reading per group; when it lost what it held, that is said
  (changes.replaced).
- Parallel: groups are read by pipeline.run_groups (worker processes per core); each
  worker appends its groups' rows to JSON-lines files of its own, which DuckDB reads and
  writes as Parquet, Hive-partitioned by harness and month.
- Atomic: the next version is built in `versions/.building-…` (unchanged batch files
  hard-linked, new ones written), renamed into place, and `current` is swapped to it in
  one rename. An interrupted collect leaves `current` as it was; its leftovers (a killed
  one's too: its version, its `.current-<pid>` link) are removed by the next collect. One
  collect at a time (a lock file).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import field
from pathlib import Path
from typing import Any

import orjson

from agent_profiler.adapters import JournalGroup
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import JournalError, OutputError, UsageError
from agent_profiler.model import frozen
from agent_profiler.options import ReadOptions
from agent_profiler.output_errors import shown
from agent_profiler.outputs import sync_folder, sync_tree
from agent_profiler.records import record

from . import SCHEMA, TABLES
from .beside import UNREAD, Beside, look
from .changes import content_hash, file_key, replaced, scan
from .integrity import COLLECT_HINT, MANIFEST, check, cut_short, explain, listing, load_manifest
from .locate import whole
from .parquet import MERGE_AT as MERGE_AT
from .parquet import READING, link_or_filter, readable, sql, write_table
from .reading import Reader, stem
from .reading import WriteRows as WriteRows
from .refuse import Refuse, forget, unread
from .regroup import UNJOINED, facts, pending, regroup

# DuckDB's memory while it writes a version: each Parquet file is one streaming copy,
# whatever the batch's size (`parquet.write_table`).
MEMORY_LIMIT = "160MB"
PRICES = "prices-cache.json"  # fleet's (fleet/command.py), beside the versions
FORMAT = 1
# How the rows are made, revised when a column's meaning changes (its name and type do
# not): a dataset of another revision has every journal read again once, as for columns.
# 2: tool_calls.result_tokens counts what the tool returned, not its call's arguments;
# sessions.model is the model that served most requests, not the first.
ROWS = 2


@frozen
class Progress:
    """Where a collect shows how far it is: group by group, and inside one large file."""

    groups: Callable[[int, int, JournalGroup], None] | None = None
    bytes: Callable[[str, int, int], None] | None = None


@record
class CollectResult:
    journals: int = 0
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    missing: int = 0  # in the manifest, not found under the given paths (kept)
    groups_read: int = 0
    rows: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    failures: list[JournalError] = field(default_factory=list)
    version: int | None = None  # the version written (None: nothing to do)
    jobs: int = 1
    sessions_total: int = 0
    ignored: int = 0  # files in the given folders that are not journals (not read)
    ignored_logs: int = 0  # of those, the .txt and .log files (loader.Expanded)
    refused: int = 0  # new or changed files that could not be used (in `failures`)
    # New or changed journals not read for their group's reading failed on another of its
    # journals (refused: a subagent of a session whose file is gone when read).
    withheld: int = 0
    kept: int = 0  # old groups kept as they were: a journal of theirs unusable now
    # Unchanged journals read again: the dataset's tables were written with other columns.
    reread: int = 0
    # Unchanged journals read again with new ones whose sessions they relate to (a
    # subagent's parent, a parent's subagent, the same session): regroup.py.
    regrouped: int = 0
    # What was found beside the journals given (beside.py): the journals a plan took
    # with them that changed, are new or were not read last time, and the unchanged
    # journals given read again with them.
    beside: Beside | None = None
    # New files with the bytes of a journal the dataset holds (a backup, a second copy of
    # a folder): not collected, so that no session is counted twice.
    copies: int = 0
    # The warnings and records not recognised of the journals read, as export says them.
    diagnostics: Diagnostics = field(default_factory=Diagnostics)


def columns() -> dict[str, list[str]]:
    """Each table's columns as this version writes them (kept in the manifest)."""
    return {table: [name for name, _ in SCHEMA[table]] for table in TABLES}


def current_dir(target: Path) -> Path:
    return target / "current"


def read_manifest(target: Path) -> dict[str, Any]:
    """The current version's manifest (a damaged one is a DatasetError naming it), or the
    manifest of no version yet."""
    manifest = load_manifest(target, COLLECT_HINT)
    if manifest is None:
        return {"format": FORMAT, "version": 0, "batch": 0, "files": {}, "groups": {}}
    if manifest.get("format") != FORMAT:
        raise OutputError(
            f"{shown(target)}: a dataset of another format; collect into a new folder"
        )
    return manifest


@contextlib.contextmanager
def _locked(target: Path) -> Iterator[None]:
    try:
        handle = (target / ".lock").open("a")
    except OSError as error:
        raise OutputError(f"{shown(target)}: cannot write here ({error.strerror})") from error
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            raise OutputError(
                f"{shown(target)}: another collect is writing this dataset"
            ) from error
        yield


def collect(
    inputs: list[Path],
    target: Path,
    *,
    options: ReadOptions | None = None,
    force: bool = False,
    notice: Callable[[str], None] | None = None,
    after_rows: Callable[[], None] | None = None,
    progress: Progress | None = None,
) -> CollectResult:
    """Collect `inputs` into the dataset at `target` (created when absent).
    `after_rows`: called once the rows are staged (the tests interrupt a collect there);
    `progress`: the displays export shows (console.group_progress and byte_progress)."""
    from agent_profiler.inputs import unopenable
    from agent_profiler.outputs import refuse_option_name

    options = options or ReadOptions()
    refuse_option_name(target, "--to")
    readable(target)  # a name DuckDB takes as a glob it cannot escape
    if reason := unopenable(target):  # a name over 255 bytes, a folder without search rights
        raise OutputError(
            f"{shown(target)}: cannot write here ({reason.removeprefix('cannot open: ')})"
        )
    if target.exists() and not target.is_dir():
        raise UsageError(f"--to {target} is a file: name a folder for the dataset")
    if not force and _someone_elses(target):
        raise UsageError(
            f"--to {target}: a folder that is neither empty nor a dataset; name a new folder "
            "(or pass --force to collect into it)"
        )
    created = not target.exists()
    # A first collect into a folder that was there (`--force`): what it adds, it removes
    # again when it fails; the folder's own files stay.
    before = None if created else set(os.listdir(target))
    try:
        result = _collect(inputs, target, options, notice, after_rows, progress)
    except BaseException:
        _undo_first(target, before)  # a failed or interrupted first collect leaves no skeleton
        raise
    if result.version is None:
        # Nothing was collected by a first collect (a misspelt journal, only unusable
        # files): no empty dataset is left behind for `fleet` to report.
        _undo_first(target, before)
    return result


def _undo_first(target: Path, before: set[str] | None) -> None:
    """What a first collect made in `target`: the folder itself (`before` None), or the
    names it added among someone's files (`--force`). A dataset's later collect keeps all,
    and so does one into an empty folder made for it (fleet then says it is empty)."""
    if before is None:
        shutil.rmtree(target, ignore_errors=True)
        return
    if not before or "versions" in before:
        return
    for name in set(os.listdir(target)) - before:
        path = target / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _someone_elses(target: Path) -> bool:
    """A folder holding files and no dataset (a dataset has `versions/`; what a collect
    writes beside it is its own), where a collect would mix its folders with them."""
    try:
        names = set(os.listdir(target))
    except OSError:
        return False  # absent, or said when it is written
    return "versions" not in names and bool(names - {".lock", "current", PRICES})


def _collect(
    inputs: list[Path],
    target: Path,
    options: ReadOptions,
    notice: Callable[[str], None] | None,
    after_rows: Callable[[], None] | None,
    progress: Progress | None,
) -> CollectResult:
    from agent_profiler.loader import expand, plan

    try:
        target.mkdir(parents=True, exist_ok=True)
        (target / "versions").mkdir(exist_ok=True)
    except OSError as error:
        raise OutputError(f"{shown(target)}: {error.strerror or error}") from error
    result = CollectResult()
    with _locked(target):
        old = read_manifest(target)  # first: a damaged dataset is left as it is
        if old["version"]:
            check(target, old, COLLECT_HINT)  # a file cut short or gone is not built on
            if "parquet" not in old and (damaged := cut_short(target, COLLECT_HINT)):
                raise damaged
        # What a collect killed on its way left: a version being built, or one made and
        # not (or no longer) current.
        live = current_dir(target).resolve() if current_dir(target).is_symlink() else None
        for leftover in (target / "versions").iterdir():
            if leftover.resolve() != live:
                shutil.rmtree(leftover, ignore_errors=True)
        # And the link to a new version, killed before it was swapped in as `current`.
        for name in os.listdir(target):
            link = target / name
            pid = name.removeprefix(".current-")
            if pid != name and pid.isdigit() and link.is_symlink():
                link.unlink(missing_ok=True)
        held = old.get("estimate")  # None: a new dataset, or one from before it was kept
        if held and held != options.estimate.value:
            # Its rows' estimated tokens would mix two estimators without a word (a second
            # collect with the default said "nothing new or changed", or added chars/4 rows
            # beside calibrated ones).
            raise UsageError(
                f"--to {target}: its sessions were estimated with --estimate {held}, not "
                f"{options.estimate.value}; a dataset holds one estimate (pass --estimate "
                f"{held}, or collect into a new folder)"
            )
        expanded = expand(inputs)
        result.failures += expanded.failures
        result.ignored, result.ignored_logs = expanded.ignored, expanded.ignored_logs
        files: dict[str, Path] = {}
        folders: dict[str, str] = {}
        keys: dict[Path, str] = {}
        for path in expanded.files:
            keys[path] = file_key(path, folders)
            files.setdefault(keys[path], path)
        result.journals = len(files)
        result.missing = sum(1 for key in old["files"] if key not in files)
        entries: dict[str, dict[str, Any]] = dict(old["files"])
        # Tables written with other columns (a column added since, or a manifest from
        # before they were kept): every journal still here is read again, once, so that
        # its rows have every column (a dataset's new column was NULL until the journal
        # changed, and `collect` said "nothing new or changed").
        outdated = bool(old["files"]) and (
            old.get("columns") != columns() or old.get("rows", 1) != ROWS
        )
        if outdated:
            # A journal not given this time keeps its old rows: marked, so that the collect
            # that is given it reads it again (the manifest's columns are the new ones then).
            for key in old["files"].keys() - files.keys():
                entries[key] = old["files"][key] | {"stale": True}
        changes = scan(files, old, entries, result, outdated)
        fresh, reread, copies, unusable = (changes.fresh, changes.reread, changes.copies,
                                           changes.unusable)  # fmt: skip
        result.failures += unusable.values()
        # A journal that cannot be looked at is refused below, with those that cannot be
        # planned: no group is read again for it, and it is not planned.
        stale = _affected_groups(old, [k for k in fresh if k not in unusable], files)
        # And those a journal found beside the ones given makes so (it changed, or could
        # not be read last time), though no journal given changed: beside.py.
        beside = result.beside = Beside(set(files), entries, lambda p: file_key(p, folders),
                                        {}, {}, {}, set())  # fmt: skip
        look(old, files, stale, beside, options.harness)
        result.failures += beside.failures
        result.missing -= sum(1 for k in beside.found if k in old["files"])
        stale |= beside.groups
        waiting = pending(old["groups"], files)  # a group to join, now given whole
        if not fresh and not stale and not waiting:
            result.sessions_total = sum(g.get("sessions", 0) for g in old["groups"].values())
            return result
        # A group read again is read whole (a subagent given alone, a parent that grew):
        # its journals not given are looked for beside those given; one not found is said.
        known = files | beside.found
        found, lost = whole(old["groups"], stale, known, lambda p: file_key(p, folders))
        for key, path in found.items():
            _refresh(entries, key, path)
        result.missing -= sum(1 for k in found if k in old["files"])  # read again: not missing
        files = files | found
        to_plan = set(fresh)
        for group_id in stale:
            to_plan.update(k for k in old["groups"][group_id]["files"] if k in files)
        to_plan -= unusable.keys()  # once: a comprehension's condition is run per journal
        paths = [files[k] for k in files if k in to_plan]
        groups, failures = plan(paths, options.harness)
        refuse = Refuse(set(fresh), entries, old, result, reread, copies, outdated,
                        beside.changed, notice)  # fmt: skip
        # A journal not found beside those given that their plan took (a Claude Code
        # session's subagents, below its file) is read with its group: not said lost.
        planned = {file_key(p, folders) for g in groups for p in g.paths}
        for group_id, (anchor, gone) in lost.items():
            for key in (k for k in gone if k in planned):  # found again: new, read with it
                result.missing -= entries.pop(key, None) is not None
            if gone := [key for key in gone if key not in planned]:
                refuse.lost[group_id] = (anchor, gone)  # said once its group is read or kept
        result.failures += failures
        keyed = list(unusable.items())
        keyed += [(keys.get(Path(f.path)) or file_key(Path(f.path), folders), f) for f in failures]
        # A journal collected before and unusable now keeps its group's rows (refuse.py).
        spoilt = {old["files"][k].get("group") for k, _ in keyed if k in old["files"]}
        if spoilt := {g for g in spoilt if g in old["groups"]}:
            held = refuse.keep(spoilt, (k for g in spoilt for k in stale.pop(g, ())))
            for key, failed in keyed:
                if key in held:
                    refuse.copies_refused(key, failed)
            keyed = [(k, f) for k, f in keyed if k not in held]
            paths = [p for p in paths if (keys.get(p) or file_key(p, folders)) not in held]
            groups = plan(paths, options.harness)[0]
        for key, failed in keyed:
            # A file that cannot be used (not a journal, unreadable) is no journal of the
            # dataset: it is not counted as one, and not kept in the manifest, so the next
            # collect tries it again and says so again (kept, it was "unchanged" from then
            # on, and never named again).
            refuse(key, failed)
        if not groups and not stale and not waiting:  # nothing could be used: no version to write
            result.sessions_total = sum(g.get("sessions", 0) for g in old["groups"].values())
            return result
        building = target / "versions" / f".building-{old['version'] + 1}-{os.getpid()}"
        try:
            _write_version(target, building, old, entries, groups, stale, result, options,
                           notice, after_rows, (keys, files), progress or Progress(),
                           refuse)  # fmt: skip
        except BaseException as error:
            # A full disk, a damaged file, Ctrl-C: nothing of this collect is left behind.
            _discard(target, building, old["version"] + 1)
            problem = explain(target, error, COLLECT_HINT)
            if problem is None:
                raise
            raise problem from error
    return result


def _discard(target: Path, building: Path, version: int) -> None:
    """What a collect that failed made: its version being built, or built and not current."""
    shutil.rmtree(building, ignore_errors=True)
    (target / f".current-{os.getpid()}").unlink(missing_ok=True)
    final = target / "versions" / f"{version:06d}"
    if final.exists() and current_dir(target).resolve() != final.resolve():
        shutil.rmtree(final, ignore_errors=True)


def _affected_groups(
    old: dict[str, Any], fresh: list[str], files: dict[str, Path]
) -> dict[str, set[str]]:
    """Old groups to read again, each with the new or changed journals that make it so:
    one of their files changed, or a new file belongs with them (its path holds the
    group's main journal's name: a Claude Code session's `<id>/subagents/…`; or the group
    holds it already: a subagent its parent's plan took from its folder, given now)."""
    groups: dict[str, set[str]] = {}
    stems: dict[str, str] = {}
    holders: dict[str, str] = {}
    for group_id, group in old["groups"].items():
        if group.get("stem"):
            stems[group["stem"]] = group_id
        holders |= dict.fromkeys(group["files"], group_id)
    for key in fresh:
        group_id = old["files"].get(key, {}).get("group")
        if group_id:
            groups.setdefault(group_id, set()).add(key)
        elif key not in old["files"]:
            if key in holders:
                groups.setdefault(holders[key], set()).add(key)
            for part in files[key].parts[:-1]:
                if part in stems:
                    groups.setdefault(stems[part], set()).add(key)
    return {g: keys for g, keys in groups.items() if g in old["groups"]}


def _refresh(entries: dict[str, dict[str, Any]], key: str, path: Path) -> None:
    """A journal found beside those given, read again with its group: its entry as its
    bytes are now (as a collect given it keeps it). One gone or unreadable since it was
    found keeps its entry: its plan names it, and its group is kept as collected."""
    if key not in entries:
        return
    entry = {k: v for k, v in entries[key].items() if k != "stale"}
    try:
        stat = os.stat(path)
        if (entry["size"], entry["mtime_ns"]) != (stat.st_size, stat.st_mtime_ns):
            entry |= {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
                      "hash": content_hash(path)}  # fmt: skip
    except OSError:
        return
    entries[key] = entry


def _write_version(
    target: Path,
    building: Path,
    old: dict[str, Any],
    entries: dict[str, dict[str, Any]],
    groups: list[JournalGroup],
    stale: dict[str, set[str]],
    result: CollectResult,
    options: ReadOptions,
    notice: Callable[[str], None] | None,
    after_rows: Callable[[], None] | None,
    given: tuple[dict[Path, str], dict[str, Path]],  # the journals' keys; each key's journal
    progress: Progress,
    refuse: Refuse,
) -> None:
    from agent_profiler.links import Unread, warn_unread_children
    from agent_profiler.pipeline import jobs_for

    keys, files = given

    def key_of(path: Path) -> str:
        return keys.get(path) or file_key(path)

    version = old["version"] + 1
    batch = old["batch"] + 1
    staging = building / ".staging"
    staging.mkdir(parents=True)
    result.jobs = jobs_for(options.jobs, groups)
    beside = result.beside
    assert beside is not None
    reader = Reader(str(staging), options, notice, progress.groups, progress.bytes, key_of,
                    beside.note)  # fmt: skip
    carried = {k: v for k, v in old["groups"].items() if k not in stale}
    # The old groups the new files' sessions relate to are planned and read again with
    # them (regroup.py): the dataset is the one a fresh collect of the same files makes.
    reads, joined, unjoined = regroup(target, files, reader(groups), carried, reader, refuse,
                                      options.harness)  # fmt: skip
    # Of the old groups read again, the journals given are counted (among the unchanged);
    # those not given were read now (a plan took them from their folder): not "missing".
    named = set(keys.values())
    again = [k for g in joined for k in carried[g]["files"]]
    result.regrouped = sum(1 for k in again if k in named)
    result.missing -= sum(1 for k in again if k not in named and k in old["files"])
    read_ids = {r.group_id for r in reads}
    manifest_groups = {k: v for k, v in carried.items() if k not in joined | read_ids}
    dropped = {k for k in old["groups"] if k not in manifest_groups}
    accepted: list[int] = []  # the readings whose rows are kept (READING)
    unread_children: list[Unread] = []  # subagents named by the sessions read, not read (links.py)
    read_ids = {i for read in reads for i in read.outcome.journal_ids}
    for read in reads:
        group, group_id, outcome = read.group, read.group_id, read.outcome
        members = [key_of(p) for p in group.paths]
        # A journal the reading could not read is not collected: said as an error, and
        # left out of the manifest so that the next collect reads it (refuse.unread).
        failed = unread(outcome, group.paths, members, entries)
        # (an error is said once: a file refused when planned is in the group read too)
        said = {failure.path for failure in (*result.failures, *outcome.failures)}
        result.failures += [*outcome.failures, *(e for e in failed.values() if e.path not in said)]
        forget(outcome.diagnostics, failed.values())
        result.diagnostics.absorb(outcome.diagnostics)
        whole = not outcome.paths or (bool(failed) and not outcome.value["sessions"])
        broken = whole or bool(outcome.diagnostics.damaged)
        if spoilt := refuse.spoilt(members, manifest_groups, broken, failed):
            manifest_groups |= spoilt  # its old rows kept, this reading's not (refuse.py)
            dropped -= spoilt.keys()
            continue
        if whole:
            # The journals that failed are refused, each said; the others were not read
            # for them (withheld: no error names them). A reading no failure names is
            # refused whole, as its error is said.
            said_apart = set(failed) or set(members)
            for path, key in zip(group.paths, members, strict=True):
                why = [f for f in outcome.failures if f.path == str(path)] or outcome.failures
                refuse(key, failed.get(key) or (why[0] if why else None), own=key in said_apart)
            continue
        for key, error in failed.items():  # its session collected without it
            refuse(key, error)
            entries.pop(key, None)  # read again with its group: not kept, even unchanged
        # The journals found beside those given: entered as they were before the read.
        unread_now = beside.enter(members, group_id, failed)
        read_now = list(zip(members, group.paths, strict=True))
        fresh = (refuse.fresh - refuse.reread) | beside.changed  # not read again unchanged
        for line in replaced(old, entries, read_now, fresh, read_ids):
            if notice is not None:
                notice(line)
        for key in members:
            if key in entries:
                entries[key]["group"] = group_id
        result.groups_read += 1
        accepted.append(outcome.value[READING])
        unread_children += outcome.unread
        for name in TABLES:
            result.rows[name] += outcome.value[name]
        manifest_groups[group_id] = {
            "batch": batch,
            "files": sorted(members),  # not in the order given: one group, one entry
            "stem": stem(group),
            "sessions": outcome.value["sessions"],
            **facts(outcome.journal_ids, outcome.links),
        } | ({UNJOINED: True} if group_id in unjoined else {})
        if unread_now:  # read again by the next collect that finds one
            manifest_groups[group_id][UNREAD] = unread_now
    refuse.settle()  # the journals lost of the groups read again: out of the manifest
    warn_unread_children(unread_children, result.diagnostics, "collect", failed=result.failures)
    if after_rows is not None:
        after_rows()
    if not accepted and not dropped:
        # Every group read was refused (`--harness codex` of Claude Code journals): no
        # version to write, and a folder this collect made is not left behind (`collect`).
        shutil.rmtree(building)
        result.sessions_total = sum(g.get("sessions", 0) for g in old["groups"].values())
        return
    import duckdb

    connection = duckdb.connect(":memory:")
    try:
        # The staging files' order: a session's rows stay together in a Parquet file.
        connection.execute("SET preserve_insertion_order = true")
        # Bounded: the collect's peak memory stays that of reading the journals.
        connection.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
        connection.execute(f"SET temp_directory = '{sql(building / '.spill')}'")
        old_root = current_dir(target)
        connection.execute("CREATE TEMP TABLE accepted (reading BIGINT)")
        connection.execute("INSERT INTO accepted SELECT unnest(?::BIGINT[])", [accepted])
        for table in TABLES:
            link_or_filter(connection, old_root / table, building / table, old, dropped, batch)
            write_table(connection, staging, building, table, batch)
    finally:
        connection.close()
    shutil.rmtree(staging)
    manifest = {
        "format": FORMAT,
        "version": version,
        "batch": batch,
        "estimate": options.estimate.value,  # how every row's estimated tokens were made
        "columns": columns(),  # a later version with other columns reads every journal again
        "rows": ROWS,  # and so does one that makes them another way
        "files": entries,
        "groups": manifest_groups,
        "parquet": listing(building),  # every file with its size: fleet checks them
    }
    (building / MANIFEST).write_bytes(orjson.dumps(manifest))
    # On disk before it is named, and each name after (fsync): a crash soon after left a
    # `current` whose manifest or Parquet files were empty, a damaged dataset (docs/dataset.md).
    sync_tree(building)
    final = target / "versions" / f"{version:06d}"
    if final.exists():  # a version renamed into place but never made current
        shutil.rmtree(final)
    os.rename(building, final)
    sync_folder(final.parent)
    link = target / f".current-{os.getpid()}"
    link.unlink(missing_ok=True)
    link.symlink_to(Path("versions") / final.name)
    previous = old_root.resolve() if old_root.is_symlink() else None
    os.replace(link, old_root)
    sync_folder(target)
    if previous is not None and previous != final.resolve():
        shutil.rmtree(previous, ignore_errors=True)
    result.version = version
    result.sessions_total = sum(g.get("sessions", 0) for g in manifest_groups.values())
