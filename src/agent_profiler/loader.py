"""From command-line paths to model sessions: expand directories, detect each
file's harness by content, group files into session trees, and read them.

A file that cannot be used at all (unreadable, not a journal) is reported in
`LoadResult.failures` and the others are still read (SPEC §6)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import field
from pathlib import Path
from typing import NamedTuple

from agent_profiler import estimate
from agent_profiler.adapters import ADAPTERS, JournalGroup, SniffedFile, adapter_for
from agent_profiler.adapters.walk import walk_tree
from agent_profiler.collector import fewer_collections
from agent_profiler.diagnostics import Diagnostics, error_text
from agent_profiler.errors import JournalError, UsageError
from agent_profiler.inputs import STDIN as STDIN
from agent_profiler.inputs import copy_of, dead_link, is_dataset, os_reason, unopenable
from agent_profiler.inputs import is_stream as is_stream
from agent_profiler.jsonl import is_json, json_document, sniff
from agent_profiler.links import Link as Link
from agent_profiler.links import cut_cycles, with_unread_children
from agent_profiler.links import parent_links as parent_links
from agent_profiler.links import rename as _rename
from agent_profiler.links import unread_links as unread_links
from agent_profiler.links import warn_missing_parents as warn_missing_parents
from agent_profiler.links import warn_unread_children as warn_unread_children
from agent_profiler.model import Harness, Session
from agent_profiler.own import own_output
from agent_profiler.records import record

# `.jsonl.zst`: Codex's rollouts older than a week (zstd); read as a plain one is.
JOURNAL_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst")
SIDECAR_SUFFIXES = (".meta.json", ".md")  # read with their journal, or documentation
_NO_JOURNALS = (
    "no journals found (*.jsonl, *.jsonl.gz, *.jsonl.zst, Gemini CLI sessions, OpenCode files)"
)
# Where a saved `claude -p --output-format stream-json` run is likely to be: a folder walk
# does not read it (any text file could be), but the note on the files not read names it.
_LOG_SUFFIXES = (".txt", ".log")
_NOT_FILE = "not a regular file (a pipe, a socket or a device): not read in a folder walk"


@record
class LoadResult:
    sessions: list[Session] = field(default_factory=list)
    failures: list[JournalError] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    ignored: int = 0  # files in the given folders that are not journals (JOURNAL_SUFFIXES)
    ignored_logs: int = 0  # of those, the .txt and .log files (a `-p` stream-json run's)
    copies: list[tuple[str, Path]] = field(default_factory=list)  # see Expanded
    # (file, the earlier file with its bytes): read once (repeats.distinct), said once each
    repeats: list[tuple[Path, Path]] = field(default_factory=list)


class Expanded(NamedTuple):
    files: list[Path]
    failures: list[JournalError]
    ignored: int  # files in the given folders that are not journals (and not hidden)
    ignored_logs: int  # of those, the .txt and .log files: a saved stream-json run, perhaps
    # (name given, its copy) for each input that can be read only once (a pipe, `-`): it is
    # read from a temporary copy, and the messages about it say the name given (`<stdin>`).
    copies: list[tuple[str, Path]]


def expand(inputs: Iterable[Path]) -> Expanded:
    """Files named on the command line are taken as they are (a pipe, and `-` for
    standard input, through a copy: `inputs.copy_of`); directories are walked (without following
    symlinked directories, so a loop cannot hang us) for `*.jsonl`, `*.jsonl.gz` and
    `*.jsonl.zst` (the number of other files that are not hidden is returned, so the user
    can be told). A `x.jsonl.zst` beside its `x.jsonl` is left out without a word, as Codex
    does: the plain copy is the one it appends to (a compressed thread written again).
    Order is deterministic."""
    files: list[Path] = []
    failures: list[JournalError] = []
    ignored = logs = 0
    copies: list[tuple[str, Path]] = []
    seen: set[Path] = set()
    streams: set[str] = set()
    for path in inputs:
        name = str(path)
        keys: dict[Path, Path] = {}
        if name == STDIN or is_stream(path):
            if name in streams:
                continue  # what it gave was read the first time
            streams.add(name)
            try:
                copy = copy_of(path)
            except JournalError as error:
                failures.append(error)
                continue
            copies.append(("<stdin>" if name == STDIN else name, copy))
            candidates = [copy]
        elif reason := unopenable(path):
            failures.append(JournalError(name, reason))
            continue
        elif path.is_dir() and is_dataset(path):
            # A dataset `collect` wrote (Parquet files, no journal): walked, it was "no
            # journal here" and a note of 120 other files not read.
            import shlex  # here: start-up does not pay for it

            failures.append(
                JournalError(
                    name,
                    "a dataset written by `collect`, not journals: read it with "
                    f"`agent-profiler fleet {shlex.quote(name)}`",
                )
            )
            continue
        elif path.is_dir():
            found = []
            closed: list[OSError] = []  # folders the walk could not open (no permission)
            for root, dirs, names in walk_tree(path, closed.append):
                dirs.sort()
                present = set(names)
                for name in sorted(names):
                    if name.endswith(".jsonl.zst") and name.removesuffix(".zst") in present:
                        continue  # Codex reads the plain copy (`expand`)
                    dead = dead_link(Path(root) / name)
                    role = "dead" if dead else _walk_role(Path(root) / name)
                    if dead and name.endswith(JOURNAL_SUFFIXES):
                        failures.append(JournalError(os.path.join(root, name), dead))
                    elif role == "read":
                        found.append(Path(root) / name)
                    elif role == "stream":
                        failures.append(JournalError(os.path.join(root, name), _NOT_FILE))
                    elif (
                        not role
                        and not name.endswith(SIDECAR_SUFFIXES)
                        # Hidden files are no one's journals (.DS_Store, an editor's swap
                        # file, this export's own temporary file when it writes in here).
                        and not name.startswith(".")
                    ):
                        ignored += 1
                        logs += name.endswith(_LOG_SUFFIXES)
            # Said, not skipped without a word (the rest is read all the same).
            failures += [
                JournalError(str(e.filename), f"cannot open: {os_reason(e)}") for e in closed
            ]
            if not found and not (closed and str(closed[0].filename) == str(path)):
                failures.append(JournalError(str(path), _NO_JOURNALS))
            candidates = found
            # The walk follows no symlinked folder: a found file resolves to the folder,
            # resolved once, and its relative path (unless the file itself is a symlink).
            # Resolving each of 5,000 files was most of a re-collect's second.
            base = path.resolve()
            keys = {
                f: f.resolve() if os.path.islink(f) else base / f.relative_to(path) for f in found
            }
        elif path.exists():
            candidates = [path]
        else:
            failures.append(JournalError(str(path), dead_link(path) or "no such file or directory"))
            continue
        for candidate in candidates:
            key = keys.get(candidate) or (candidate.resolve() if candidate.exists() else candidate)
            if key not in seen:
                seen.add(key)
                files.append(candidate)
    return Expanded(files, failures, ignored, logs, copies)


def reads(inputs: Iterable[Path], path: Path) -> bool:
    """Whether reading `inputs` reads the existing file `path`: it is one of them, or lies
    in a folder among them and the walk takes it (or a member of it, like a database's
    write-ahead log). An export must never write its trace over a journal it reads."""
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return False
    for given in inputs:
        if str(given) == STDIN:
            continue
        try:
            source = given.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        if source == target:
            return True
        if source.is_dir() and target.is_relative_to(source) and _walk_role(target):
            return True
    return False


def _walk_role(path: Path) -> str:
    """What a folder walk makes of a file: "read" (a journal), "member" (read with one, as
    a database's write-ahead log), "stream" (a pipe named like one: opened, it waits for a
    writer forever; named on the command line, it is read) or "" (not read)."""
    if is_stream(path):
        return "stream" if path.name.endswith((*JOURNAL_SUFFIXES, ".json", ".db")) else ""
    return "read" if path.name.endswith(JOURNAL_SUFFIXES) else _role(path)


def _role(path: Path) -> str:
    """What a non-JSONL file in a walked folder is to the adapters that read such files."""
    roles = {a.role(path) for a in ADAPTERS if a.role is not None}
    return "read" if "read" in roles else ("member" if "member" in roles else "")


def plan(
    files: list[Path], harness: Harness | None
) -> tuple[list[JournalGroup], list[JournalError]]:
    """Detect each file's harness and group the files of one session tree."""
    by_harness: dict[Harness, list[SniffedFile]] = {}
    failures: list[JournalError] = []
    for path in files:
        own = own_output(path)
        if own is not None:
            failures.append(JournalError(str(path), own))
            continue
        try:
            head = sniff(path)
        except JournalError as error:
            claimed = [a.harness for a in ADAPTERS if a.claim is not None and a.claim(path)]
            if claimed and (harness is None or harness in claimed):
                by_harness.setdefault(harness or claimed[0], []).append(SniffedFile(path, []))
                continue
            if claimed and harness is not None:
                # A Gemini CLI document or an OpenCode export forced to another harness.
                failures.append(_wrong_harness(path, harness))
                continue
            reason = (
                next((why for a in ADAPTERS if a.explain and (why := a.explain(path))), None)
                or json_document(path)
                or _gzip_damage(path)
            )
            failures.append(JournalError(str(path), reason) if reason else error)
            continue
        if not head:
            failures.append(JournalError(str(path), _no_records(path)))
            continue
        if harness is not None:
            chosen: Harness | None = harness
        else:
            chosen = next((a.harness for a in ADAPTERS if a.detect(head)), None)
        if chosen is None:
            known = ", ".join(a.harness.value for a in ADAPTERS)
            reason = f"not a journal of a supported harness ({known}); try --harness"
            if not any(value.__class__ is dict for value in head):  # `json.dump(records)`
                reason = "a JSON array, not a JSONL journal (one JSON object per line)"
            failures.append(JournalError(str(path), reason))
            continue
        by_harness.setdefault(chosen, []).append(SniffedFile(path, _slim_head(head)))
    groups: list[JournalGroup] = []
    for chosen, sniffed in by_harness.items():
        adapter = adapter_for(chosen)
        if adapter is None:
            supported = ", ".join(a.harness.value for a in ADAPTERS)
            raise UsageError(
                f"harness {chosen.value!r} is not supported yet (supported: {supported})"
            )
        groups += adapter.plan(sniffed)
    return groups, failures


@record
class GroupRead:
    """One journal group, read: its sessions (ids made unique against the groups read
    before it), what could not be used, and the ids as the journals spelled them."""

    sessions: list[Session]
    failures: list[JournalError]
    paths: tuple[Path, ...] = ()  # the files read; empty when the group was not used
    journal_ids: tuple[str, ...] = ()  # session ids before renaming, in reading order


def read_group(
    group: JournalGroup,
    diagnostics: Diagnostics,
    seen: dict[str, int],
    *,
    harness: Harness | None = None,
) -> GroupRead:
    """Read one group with its adapter. `seen` counts the session ids of the groups read
    before (a repeated id is renamed, `_rename`) and is updated. A group depends on nothing
    else, so groups can be read apart and in any process. A file of it that the adapter
    could not read beside the others (`Diagnostics.failed`) is among its failures, with the
    sessions read; with none read, the group's failures are all it is."""
    adapter = adapter_for(group.harness)
    assert adapter is not None
    # The export's estimator, with this harness's framing cost (estimate.py): chosen
    # here, once per group, so the adapters need not know it.
    measure = estimate.current().for_harness(group.harness.value)
    # What the read counted is kept apart, under a forced --harness until the group is
    # known to read as that harness (a wrong guess is one line, not that line and every
    # record type of the file "not recognised" by the wrong adapter), and under a table
    # with ratios per tokenizer family until it is known which read's sessions are used.
    counted = diagnostics if harness is None and not measure.ratios_by_family else Diagnostics(
        keep_first=diagnostics.keep_first, on_progress=diagnostics.on_progress
    )  # fmt: skip
    said = diagnostics.warning_counts["no-session"]  # an adapter may say what a file is
    start = len(counted.failures)  # the files of this group that could not be read
    try:
        with estimate.use_estimator(measure), fewer_collections():
            sessions = adapter.read(group, counted)
        # A calibrated table with class ratios per tokenizer family: the models the group's
        # requests name choose them; read once more when they are not the ones used.
        chosen = measure.for_models(r.model for s in sessions for r in s.responses)
        if chosen is not measure:
            # What is said (lines read, records used, warnings) is this read's, whose
            # sessions are used: a journal still being written may have grown since the
            # first. Its progress is not shown again.
            counted, start = Diagnostics(keep_first=diagnostics.keep_first), 0
            with estimate.use_estimator(chosen), fewer_collections():
                sessions = adapter.read(group, counted)
        if chosen.ratios_by_family:
            sessions = [estimate.with_family_fact(s, chosen) for s in sessions]
    except JournalError as error:
        others = [_detected(p) for p in group.paths] if harness is not None else []
        if harness is not None and all(h not in {None, harness} for h in others):
            # A forced --harness whose adapter refused another harness's file (the
            # OpenCode export reader given a Claude Code transcript): a wrong guess.
            return GroupRead([], [_wrong_harness(p, harness) for p in group.paths])
        failures = _taken(counted, start)
        if counted is not diagnostics:
            diagnostics.absorb(counted)
        return GroupRead([], [error, *failures])
    except Exception as error:  # a bug: lose this group, keep the others
        return GroupRead(
            [],
            [
                JournalError(
                    str(group.main or group.extras[0]),
                    f"could not be read ({type(error).__name__}: {error_text(error)}); please "
                    "report this with the harness and its version",
                )
            ],
        )
    if harness is not None and not any(_holds_something(s) for s in sessions):
        # A forced --harness that makes nothing of a file is a wrong guess, not an
        # empty session: say so by name, and keep it out of the output.
        return GroupRead([], [_wrong_harness(path, harness) for path in group.paths])
    failures = _taken(counted, start)
    if counted is not diagnostics:
        diagnostics.absorb(counted)
    if failures and not sessions:
        # Nothing read but files that failed: the group's error, as one given alone (never
        # followed by "no session records" of the same files).
        return GroupRead([], failures)
    if not sessions and diagnostics.warning_counts["no-session"] == said:
        # e.g. a Claude Code file holding only titles and file snapshots
        diagnostics.warn(
            str(group.main or group.extras[0]),
            None,
            "no-session",
            "no session records (nothing to show)",
        )
    sessions = with_unread_children(sessions)
    journal_ids = tuple(s.session_id for s in sessions)
    # Ids unique first (a cycle is of the sessions shown), then a cycle of parents cut.
    renamed = cut_cycles(_rename(sessions, seen, diagnostics), diagnostics)
    return GroupRead(renamed, failures, group.paths, journal_ids)


def _taken(diagnostics: Diagnostics, start: int) -> list[JournalError]:
    """The failures an adapter said (`Diagnostics.failed`) since `start`, taken out: they
    are the group's (`GroupRead.failures`), not the diagnostics of every group read."""
    taken = diagnostics.failures[start:]
    del diagnostics.failures[start:]
    return taken


# What a plan keeps of a file's head (SniffedFile.head): the records' small facts (ids,
# types, flags, small nested objects), not their text. Plans group files by ids; the whole
# first 50 records of 300 journals were ≈ 60 MB held until every file was sniffed.
_HEAD_STRING_LIMIT = 256
_HEAD_DEPTH = 16  # deep enough for every id a plan reads (Codex: 5 levels)


def _slim_head(head: list[object]) -> list[object]:
    """The head with every string over _HEAD_STRING_LIMIT characters and every list left
    out of its records (dicts kept to _HEAD_DEPTH levels); a record that is not an object
    stays in its place as None."""
    return [_slim(value, _HEAD_DEPTH) if isinstance(value, dict) else None for value in head]


def _slim(record: dict[str, object], depth: int) -> dict[str, object]:
    slim: dict[str, object] = {}
    for key, value in record.items():
        if isinstance(value, str):
            if len(value) <= _HEAD_STRING_LIMIT:
                slim[key] = value
        elif isinstance(value, dict):
            if depth > 1:
                slim[key] = _slim(value, depth - 1)
        elif not isinstance(value, list):
            slim[key] = value
    return slim


def load(
    inputs: Iterable[Path],
    diagnostics: Diagnostics,
    *,
    harness: Harness | None = None,
    progress: Callable[[int, int, JournalGroup], None] | None = None,
) -> LoadResult:
    """Read every journal; `progress(done, total, group)` is called after each group."""
    result = LoadResult()
    groups = plan_inputs(inputs, harness, result, diagnostics)
    seen: dict[str, int] = {}
    for done, group in enumerate(groups, start=1):
        read = read_group(group, diagnostics, seen, harness=harness)
        result.failures += read.failures
        if read.paths:
            result.sessions += read.sessions
            result.files += read.paths
        if progress is not None:
            progress(done, len(groups), group)
    warn_missing_parents(parent_links(result.sessions), diagnostics)
    warn_unread_children(unread_links(result.sessions), diagnostics, failed=result.failures)
    return result


def plan_inputs(
    inputs: Iterable[Path],
    harness: Harness | None,
    result: LoadResult,
    diagnostics: Diagnostics | None = None,
) -> list[JournalGroup]:
    """The journal groups of these inputs; what cannot be read goes to `result.failures`.
    A file with the bytes of an earlier one is read once (`repeats.distinct`), in the
    parent before any group is formed, so with any --jobs; each repeat is one warning."""
    from agent_profiler.diagnostics import shown_path
    from agent_profiler.repeats import distinct

    files, failures, result.ignored, result.ignored_logs, copies = expand(inputs)
    result.failures += failures
    result.copies += copies
    files, repeats = distinct(files)
    result.repeats += repeats
    for repeat, first in repeats:
        if diagnostics is not None:
            diagnostics.warn(
                str(repeat),
                None,
                "same-bytes",
                f"the same bytes as {shown_path(str(first))}: read once",
            )
    groups, failures = plan(files, harness)
    result.failures += failures
    return groups


def _holds_something(session: Session) -> bool:
    return bool(
        session.prompts
        or session.responses
        or session.tool_calls
        or session.compactions
        or any(snapshot.categories or snapshot.reported_tokens for snapshot in session.snapshots)
        or session.failed_requests
        or session.unmetered_responses
    )


def _detected(path: Path) -> Harness | None:
    """The harness a file reads as without --harness: by its JSONL head, else by the
    adapters that claim files the JSONL sniff refuses (a JSON document, a database)."""
    try:
        head = sniff(path)
    except JournalError:
        head = []
    return next((a.harness for a in ADAPTERS if a.detect(head)), None) or next(
        (a.harness for a in ADAPTERS if a.claim is not None and a.claim(path)), None
    )


def _no_records(path: Path) -> str:
    """Why a file gave not one record: empty, or what its bytes look like instead (a
    journal whose lines end in a carriage return alone, a JSON document cut short, lines
    that are none of them JSON): "empty journal" said of a file full of bytes misled. A
    file of no bytes, or a journal whose one line has no newline yet, is most likely one
    its harness is writing (a Gemini CLI session is rewritten from 0 bytes on every
    message; a Codex rollout's first record is long): said so."""
    try:
        with open(path, "rb") as stream:  # (a .gz or .zst that gave nothing: empty or damaged)
            start = stream.read(1 << 16)
            if len(start) == 1 << 16:  # (a longer file: whether it ends its line)
                stream.seek(-1, os.SEEK_END)
            end = stream.read(1) or start[-1:]
    except OSError:
        return "empty journal (no records)"
    text = start.lstrip()
    if not start:
        return "empty journal (0 bytes; it may be being written or rewritten right now)"
    if not text or path.name.endswith((".gz", ".zst")):
        return "empty journal (no records)"
    if b"\r" in text and b"\n" not in text and is_json(text.split(b"\r", 1)[0]):
        return (
            "its lines end in a carriage return alone (\\r), so it reads as one line that is "
            "not JSON: convert its line endings (tr '\\r' '\\n')"
        )
    if text[:1] in (b"{", b"[") and b"\n" not in text.rstrip():
        if end != b"\n" and path.name.endswith(JOURNAL_SUFFIXES):
            return (
                "its only line is incomplete (no newline at the end; the journal may still be "
                "being written)"
            )
        return "one line of JSON that does not parse: a JSON document cut short?"
    return "no line of it is JSON: not a journal"


def _gzip_damage(path: Path) -> str | None:
    """Why a `.gz` file none of whose start reads as a journal is damaged (a gzipped JSON
    document cut short: its first line, the document's start, is no JSON), or None. Its
    error said "not a JSONL journal" of a Gemini CLI or OpenCode `.json.gz` cut short."""
    if not path.name.endswith(".gz"):
        return None
    import gzip  # here: only a file that failed pays for it
    import zlib

    try:
        with gzip.open(path, "rb") as stream:
            for _ in range(256):  # 256 MB read whole is a stream that is not damaged early
                if not stream.read(1 << 20):
                    break
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        return f"corrupt or truncated gzip stream ({error or type(error).__name__}); not read"
    except OSError:
        return None
    return None


def _wrong_harness(path: Path, harness: Harness) -> JournalError:
    detected = _detected(path)
    hint = (
        f"it looks like {'an' if detected.value[0] in 'aeiou' else 'a'} {detected.value} "
        "journal; drop --harness"
        if detected is not None and detected is not harness
        else "is --harness right?"
    )
    return JournalError(str(path), f"nothing in it reads as {harness.value} ({hint})")
