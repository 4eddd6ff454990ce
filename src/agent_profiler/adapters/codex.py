"""Codex CLI and Desktop rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).

Owns what is Codex-specific (FORMATS.md §3): the `{timestamp, type, payload}`
envelope, which `response_item`s the model sees and which category each is,
one request per `token_count`, compaction, and subagent rollouts (read in one group
with their parent: one group per session tree, so that trees can be read in parallel).
The record tables and item helpers are in `codex_records`, one rollout's builder in
`codex_rollout`, what its `response_item` and `compacted` lines do in `codex_items` and
its `event_msg` lines in `codex_events`; this module detects rollouts, dispatches their
lines and groups the threads.

Format facts these modules rely on, with the surprise each one holds:
- `last_token_usage.input_tokens` already includes `cached_input_tokens`: the
  request's prompt is `input_tokens`, never input + cached (§3.3);
- Desktop 0.104 writes every `token_count` twice: a repeat has the same
  `total_token_usage` and is one request; `info: null` is not a request;
- the system prompt is recorded (`session_meta.base_instructions`), the tool
  schemas are not: they become the inferred head item (§3.4);
- `event_msg`s are UI events, not model input; only `response_item`s (and
  `compacted.replacement_history`) are in context;
- sanitised rollouts replace text by `[REDACTED_… len=N …]`: N characters are
  estimated as usual and the item's label says the length came from a marker;
- a request's start is not recorded: it is the time of the input that
  triggered it (the user message or the last tool output before it) (§3.7).
"""

from __future__ import annotations

import os
import re
import stat
from collections import deque
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from agent_profiler.adapters.codex_records import (
    KNOWN_PARTS,
    READ_LINE_TYPES,
    SKIPPED_LINE_TYPES,
    thread_spawn,
)
from agent_profiler.adapters.common import journal_clock, text_field
from agent_profiler.diagnostics import Diagnostics, journal_name
from agent_profiler.errors import JournalError
from agent_profiler.jsonl import open_journal, read_jsonl, sniff
from agent_profiler.model import Harness, Session

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from agent_profiler.adapters import JournalGroup, Located, SniffedFile
    from agent_profiler.adapters.codex_rollout import RolloutBuilder

# The modules that read a rollout are imported by `read_rollout`: detection asks this
# module's `detect` of every journal that is not Claude Code's, and a Pi export paid for
# importing them.


def detect(values: list[object]) -> bool:
    """Codex rollouts: `{timestamp, type, payload}` lines, usually `session_meta` first."""
    for value in values:
        if not isinstance(value, dict):
            continue
        if (
            text_field(value, "type") in READ_LINE_TYPES
            and isinstance(value.get("payload"), dict)
            and ("timestamp" in value)
        ):
            return True
    return False


def read_rollout(path: Path, diagnostics: Diagnostics) -> RolloutBuilder:
    from agent_profiler.adapters.codex_rollout import RolloutBuilder

    builder = RolloutBuilder(str(path), diagnostics)
    deque(rollout_lines(builder, path), maxlen=0)
    return builder


def rollout_lines(builder: RolloutBuilder, path: Path) -> Iterator[int]:
    """Each line of the rollout at `path` read into `builder`, the rollout's first time so
    far yielded after each line handed to it (the one pass, stream/codex.py, reads along;
    `read_rollout` runs it through); once the last is read, the builder's start and end
    are set."""
    from agent_profiler.adapters.codex_agents import on_inter_agent, on_rollout_reference
    from agent_profiler.adapters.codex_events import on_event
    from agent_profiler.adapters.codex_items import on_compacted, on_response_item

    diagnostics, source = builder.diagnostics, builder.path
    clock = journal_clock(path, diagnostics, source)
    # What each read line type does, looked up once per line instead of an if-chain;
    # every handler takes (payload, time, line).
    handlers: dict[str, Callable[[dict[str, Any], int, int], None]] = {
        "session_meta": builder.on_session_meta,
        "turn_context": builder.on_turn_context,
        "response_item": partial(on_response_item, builder),
        "event_msg": partial(on_event, builder),
        "compacted": partial(on_compacted, builder),
        "inter_agent_communication": partial(on_inter_agent, builder),
        "rollout_reference": partial(on_rollout_reference, builder),
    }
    assert handlers.keys() == READ_LINE_TYPES
    time = clock.time
    on_item = handlers["response_item"]
    # The rollout's first and last times (kept here, set at the end): no time yet is an
    # empty range; every time is ≥ 0 and far below 2**70.
    start, end = 1 << 70, -1
    for line, value in read_jsonl(path, diagnostics):
        if value.__class__ is not dict:
            diagnostics.reject(source, line, "line is not a JSON object")
            continue
        kind = value.get("type")
        # Any non-string type (a damaged line) is no type: it is unhashable, perhaps.
        handler = handlers.get(kind) if kind.__class__ is str else None
        if handler is None:
            if kind.__class__ is not str or not kind:
                kind = "untyped"  # as Claude Code's and Gemini CLI's lines say it
            if kind in SKIPPED_LINE_TYPES:
                diagnostics.skip(f"codex:{kind}")
            else:
                diagnostics.not_recognised(f"codex:{kind}", source, line)
            continue
        payload = value.get("payload")
        if payload.__class__ is not dict:
            diagnostics.warn(source, line, "bad-shape", f"{kind} line without a payload")
            continue
        ts = time(value, line)
        if ts < start:
            start = ts
        if ts > end:
            end = ts
        if handler is on_item:
            _unknown_parts(payload, diagnostics, source, line)
        builder.line = line
        handler(payload, ts, line)
        yield start
    if end >= 0:
        builder.start_ns, builder.end_ns = start, end


def _unknown_parts(item: dict[str, Any], diagnostics: Diagnostics, source: str, line: int) -> None:
    """A content part of a type no Codex build is known to write (in a message, a
    reasoning item, a tool's output) is an `unknown-block` warning with its place, as a
    Claude Code block is: the parts beside it are still read. None in almost every item:
    one loop over its parts, in this one call."""
    for key in _PART_LISTS:
        parts = item.get(key)
        if parts.__class__ is not list:
            continue
        for part in parts:
            kind = part.get("type") if part.__class__ is dict else None
            if kind.__class__ is not str or kind not in KNOWN_PARTS:
                text = part.get("text") if part.__class__ is dict else None
                said = "its text read" if isinstance(text, str) else "not read"
                diagnostics.warn(
                    source,
                    line,
                    "unknown-block",
                    f"content part of type '{journal_name(kind or 'untyped')}' not recognised "
                    f"({said})",
                )


# The keys of a `response_item` that hold content parts.
_PART_LISTS = ("content", "summary", "output")


def read_rollouts(
    paths: list[Path], diagnostics: Diagnostics, given: int | None = None
) -> list[Session]:
    """Read rollouts together so that a subagent rollout links to its parent's
    `spawn_agent` call when both are given.

    The first `given` paths (all by default) are rollouts given, the others ones found
    beside them (`_children_beside`). A rollout given that cannot be read now (deleted,
    made a folder or unreadable since it was planned) is an input that could not be used,
    as any other harness's journal: its own `error:` line (`Diagnostics.failed`, exit 1),
    beside the sessions the group's other rollouts hold (the loader makes it the group's
    error when nothing else was read). One found beside is an `unreadable` warning: it may
    be no child of theirs."""
    builders: list[RolloutBuilder] = []
    for index, path in enumerate(paths):
        try:
            builders.append(_read_now(path, diagnostics))
        except JournalError as error:
            if given is None or index < given:
                diagnostics.failed(error)
            else:
                diagnostics.warn(error.path, error.line, "unreadable", error.message)
    # A v2 spawn's output names the child by its agent path, which the child's session_meta
    # repeats beside its parent's thread id (`codex_agents.spawn_output`).
    by_path = {(b.parent_session, b.agent_path): b for b in builders if b.agent_path}
    for builder in builders:
        for call_id, agent in builder.spawn_paths.items():
            child = by_path.get((builder.session_id, agent))
            if child is not None and child.session_id:
                builder.spawned.setdefault(call_id, child.session_id)
    by_id = {b.session_id: b for b in builders if b.session_id}
    for builder in builders:
        for child_id in builder.spawned.values():
            child = by_id.get(child_id)
            if child is not None and child.parent_session is None:
                child.parent_session = builder.session_id
    sessions = [s for b in builders if (s := b.finish()) is not None]
    calls = {child: call for b in builders for call, child in b.spawned.items()}
    return [
        s if s.parent_session is None else _with_parent_call(s, calls.get(s.session_id))
        for s in sessions
    ]


def _read_now(path: Path, diagnostics: Diagnostics) -> RolloutBuilder:
    """`read_rollout`, or, when a plain rollout is gone and its `x.jsonl.zst` is there,
    that: Codex compresses a rollout a week old (and removes the plain one), perhaps
    between the plan and this read. Nothing is counted of a file that cannot be opened."""
    try:
        return read_rollout(path, diagnostics)
    except JournalError:
        cold = path.with_name(f"{path.name}.zst")
        if path.name.endswith(".jsonl") and not os.path.lexists(path) and cold.is_file():
            return read_rollout(cold, diagnostics)
        raise


def _with_parent_call(session: Session, call_id: str | None) -> Session:
    return replace(session, parent_call_id=call_id) if call_id else session


def _thread_links(head: list[object]) -> list[str]:
    """The thread ids a rollout's head ties it to, read as `RolloutBuilder` reads them: its
    own (the first `session_meta.id`), then its parent (`thread_spawn.parent_thread_id`)
    and the children whose `collab_agent_spawn_end` it holds. Nothing when no session_meta
    of the head has an id: such a rollout is named by its file and linked to no other."""
    own: str | None = None
    links: list[str] = []
    for value in head:
        if not isinstance(value, dict) or not isinstance(value.get("payload"), dict):
            continue
        payload, kind = value["payload"], value.get("type")
        if kind == "session_meta":
            if own is None and isinstance(payload.get("id"), str) and payload["id"]:
                own = payload["id"]
            spawn = thread_spawn(payload.get("source"))
            parent = spawn.get("parent_thread_id") if spawn is not None else None
            if isinstance(parent, str) and parent:
                links.append(parent)
        elif kind == "event_msg" and payload.get("type") == "collab_agent_spawn_end":
            call_id, child = payload.get("call_id"), payload.get("new_thread_id")
            if isinstance(call_id, str) and isinstance(child, str) and child:
                links.append(child)
    return [own, *links] if own is not None else []


def plan(files: list[SniffedFile]) -> list[JournalGroup]:
    """One group per session tree, so that independent trees can be read in parallel.

    A subagent links to its parent's spawn call only when both are read in one group, and
    a child's own `session_meta` names its parent (`source.subagent.thread_spawn.
    parent_thread_id`, FORMATS §3.6), so the trees are found from the sniffed heads alone:
    rollouts are in one group when they share a session id (a copy, a resumed session:
    the loader renames the second), when one names the other as its parent, or when one's
    head holds the spawn of the other (a child that does not name its parent), and
    transitively (a grandchild joins its grandparent). A spawn recorded after the head,
    of a child that does not name its parent, is not seen: the two are read apart and
    not linked. A rollout without a session id in its head is a group of its own.
    Groups come in the order of their first file, files in their given order, then the
    subagent rollouts not given that were found beside them (`_children_beside`)."""
    from agent_profiler.adapters import JournalGroup

    root = list(range(len(files)))  # union-find over the files; a set's root is its first

    def find(index: int) -> int:
        while root[index] != index:
            root[index] = root[root[index]]
            index = root[index]
        return index

    first: dict[str, int] = {}  # thread id -> the first file tied to it
    owns: dict[str, int] = {}  # a file's own thread id -> the first file that is it
    for index, file in enumerate(files):
        links = _thread_links(file.head)
        for thread in links:
            a, b = find(index), find(first.setdefault(thread, index))
            root[max(a, b)] = min(a, b)
        if links:
            owns.setdefault(links[0], index)
    trees: dict[int, list[Path]] = {}
    for index, file in enumerate(files):
        trees.setdefault(find(index), []).append(file.path)
    grown = _children_beside(files, {thread: find(index) for thread, index in owns.items()})
    # A group with rollouts found beside the ones given says how many of its first ones
    # were given (`read` tells them apart); "" when each was.
    return [
        JournalGroup(
            Harness.CODEX,
            None,
            (*paths, *grown.get(tree, ())),
            f"{_GIVEN}{len(paths)}" if tree in grown else "",
        )
        for tree, paths in trees.items()
    ]


_GIVEN = "given:"  # a group's variant: its first N rollouts were given (`plan`)


def _children_beside(files: list[SniffedFile], threads: dict[str, int]) -> dict[int, list[Path]]:
    """The subagent rollouts of the threads given that were not given themselves, found
    where Codex writes them (FORMATS §3.6: a rollout of its own in the same date tree,
    whose `session_meta` names its parent): in the given rollouts' folders and, for a
    `YYYY/MM/DD` folder, the next day's (a child started after midnight); so a rollout
    given alone is read with its subagents, as a Claude Code session is. Grandchildren
    too. `threads`: each given thread's tree; the files found, by tree.

    Cheap in a folder of thousands (`codex exec` in CI): a rollout named (by its start
    time) before every rollout given is not opened, and one opened is read only from its
    first line's first bytes (`_sibling_links`). One that cannot be read is put in the
    tree of its folder, so that its reader names it and says why (it may be a child)."""
    given = {f.path for f in files}
    resolved: set[str] | None = None  # the given files resolved, once a file is not given
    folders = dict.fromkeys(f.path.parent for f in files)
    for folder in list(folders):
        folders.update(dict.fromkeys(_next_day(folder)))
    earliest = _earliest(given)
    children: dict[str, list[tuple[Path, str]]] = {}  # parent thread -> (file, its thread)
    damaged: dict[Path, list[Path]] = {}  # a folder's damaged rollouts that may be children
    for folder in folders:
        real_folder: str | None = None
        for path in _rollouts_in(folder):
            if path in given:  # a folder's walk gives its files as found here
                continue
            started = _started(path.name)
            if earliest is not None and started is not None and started < earliest:
                continue  # it started before every rollout given: a child of none of them
            if resolved is None:
                resolved = {os.path.realpath(p) for p in given}
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode):  # a link: to a file given, perhaps
                if os.path.realpath(path) in resolved or not path.is_file():
                    continue
            elif not stat.S_ISREG(mode):
                continue
            else:  # a file: its real path is its folder's, resolved once, and its name
                real_folder = real_folder or os.path.realpath(folder)
                if os.path.join(real_folder, path.name) in resolved:
                    continue
            try:
                links = _sibling_links(path)  # a child's: [own, parent]
            except (JournalError, OSError):
                damaged.setdefault(folder, []).append(path)
                continue
            if len(links) == 2:
                children.setdefault(links[1], []).append((path, links[0]))
    named = set(threads)  # a thread given is read from the files given only
    grown: dict[int, list[Path]] = {}
    queue = list(threads)
    while queue:
        parent = queue.pop()
        for path, child in children.pop(parent, ()):
            if child in named:
                continue
            grown.setdefault(threads[parent], []).append(path)
            if child not in threads:
                threads[child] = threads[parent]
                queue.append(child)
    # A rollout beside them that cannot be read may be a child: read with the first tree
    # given in its folder (or the day before), its reader says which file and why, rather
    # than it being passed over and the user told to pass a file that is right there.
    by_folder: dict[Path, int] = {}
    for file in files:
        if file.path.parent not in by_folder and (own := _thread_links(file.head)):
            by_folder[file.path.parent] = threads[own[0]]
    after: dict[Path, int] | None = None  # a next day's folder → the first tree the day before
    for folder, paths in damaged.items():
        tree = by_folder.get(folder)
        if tree is None:
            if after is None:  # once: looked for again for each folder, days × days
                after = {}
                for given_folder, given_tree in by_folder.items():
                    for day in _next_day(given_folder):
                        after.setdefault(day, given_tree)
            tree = after.get(folder)
        if tree is not None:
            grown.setdefault(tree, []).extend(paths)
    return grown


# A sibling's first line is read up to this many (decompressed) bytes: Codex writes the
# session_meta's ids and its `source` (the parent a child names) before its long
# `base_instructions`, so a child is known from its first bytes.
_SIBLING_BYTES = 64 * 1024
_SIBLING_STEP = 8 * 1024
_BLANK = b"\xef\xbb\xbf \t\r\n"  # a byte-order mark and blank lines before the first line
_NAME_TIME = re.compile(r"rollout-(\d{4})-(\d\d)-(\d\d)T(\d\d)-(\d\d)-(\d\d)")
# Rollout names are in local time: a child started after its parent may be named up to an
# hour earlier when the clocks go back (or a zone's offset changes): allowed for.
_NAME_SLACK = 3 * 3600


def _started(name: str) -> int | None:
    """When a rollout started by its name (`rollout-YYYY-MM-DDTHH-MM-SS-…`), in seconds
    of the proleptic calendar (only compared), or None when the name holds no time."""
    import datetime

    match = _NAME_TIME.match(name)
    if match is None:
        return None
    try:
        y, mo, d, h, mi, s = (int(part) for part in match.groups())
        day = datetime.date(y, mo, d).toordinal()
    except ValueError:
        return None
    return day * 86400 + h * 3600 + mi * 60 + s


def _earliest(given: set[Path]) -> int | None:
    """The earliest start of the rollouts given, less `_NAME_SLACK` (a rollout beside them
    named before it is a child of none), or None when a given rollout's name holds no time
    (then every sibling is looked at)."""
    starts = [_started(path.name) for path in given]
    if not starts or any(start is None for start in starts):
        return None
    return min(start for start in starts if start is not None) - _NAME_SLACK


def _sibling_links(path: Path) -> list[str]:
    """`_thread_links` of a sibling's first line, decompressed 8 KiB at a time and no
    further than `_SIBLING_BYTES`: a sibling is no child as soon as its `base_instructions`
    key comes without a `parent_thread_id` before it (Codex writes the session_meta's
    `source`, where a child names its parent, before its long base instructions); a
    first line longer than `_SIBLING_BYTES` is read whole (`sniff`) only when it names a
    parent. Raises what `open_journal`'s stream raises for a file that cannot be read."""
    head, ended = b"", False
    chunk = bytearray(_SIBLING_STEP)
    with open_journal(path) as stream:
        raw: Any = getattr(stream, "raw", stream)  # unbuffered: only what is asked is decompressed
        while len(head) < _SIBLING_BYTES:
            count = raw.readinto(chunk)
            if not count:
                ended = True
                break
            head += bytes(chunk[:count])
            start = head.lstrip(_BLANK)
            if b"\n" in start:
                break
            key = start.find(b'"base_instructions"')
            if key >= 0 and b'"parent_thread_id"' not in start[:key]:
                return []
    head = head.lstrip(_BLANK)
    line, newline, _ = head.partition(b"\n")
    if newline or ended:  # the whole first line (or file)
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            return []
        return _thread_links([value])
    if b'"parent_thread_id"' not in head:
        return []
    return _thread_links(sniff(path, max_lines=1))


def _rollouts_in(folder: Path) -> list[Path]:
    """The rollouts of a folder by their names, in name order (none when it cannot be
    listed); a cold `x.jsonl.zst` beside its plain `x.jsonl` is left out, as Codex reads
    the plain one (the folder walk does the same)."""
    try:
        names = {
            p.name: p
            for p in folder.iterdir()
            if p.name.startswith("rollout-") and p.name.endswith(_ROLLOUT_SUFFIXES)
        }
    except OSError:
        return []
    return [
        path
        for name, path in sorted(names.items())
        if not (name.endswith(".zst") and name.removesuffix(".zst") in names)
    ]


_ROLLOUT_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst")


def _next_day(folder: Path) -> list[Path]:
    """The next day's folder of a Codex `sessions/YYYY/MM/DD` folder, when there is one."""
    import datetime

    day, month, year = folder.name, folder.parent.name, folder.parent.parent.name
    if not (len(day) == len(month) == 2 and len(year) == 4 and (day + month + year).isdigit()):
        return []
    try:
        then = datetime.date(int(year), int(month), int(day)) + datetime.timedelta(days=1)
    except (ValueError, OverflowError):  # 2026/02/31: not a date; 9999/12/31: no next day
        return []
    after = (
        folder.parent.parent.parent / f"{then.year:04d}" / f"{then.month:02d}" / f"{then.day:02d}"
    )
    return [after] if after.is_dir() else []


def read(group: JournalGroup, diagnostics: Diagnostics) -> list[Session]:
    given = int(group.variant.removeprefix(_GIVEN)) if group.variant else None
    return read_rollouts(list(group.paths), diagnostics, given)


# --------------------------------------------------------------------------- discover

# Tools that can change the workspace: a repeated call after one of these is not a repeat.
MUTATING_TOOLS = frozenset(
    {
        "apply_patch",
        "exec_command",
        "shell",
        "local_shell",
        "local_shell_call",
        "write_stdin",
        "container.exec",
    }
)
NATIVE_COMPOSITION: tuple[str, ...] = ()  # a rollout reports totals only


def locate(env: Mapping[str, str]) -> Iterator[Located]:
    """`$CODEX_HOME`, else `~/.codex`: `sessions/YYYY/MM/DD/rollout-*.jsonl` and
    `archived_sessions/`. A rollout older than a week is `rollout-*.jsonl.zst`; one beside
    its `.jsonl` is left out, as Codex does (the plain copy is the one written again)."""
    from agent_profiler.adapters import locating, walk

    root = locating.folder(env, "CODEX_HOME", ".codex")
    paths = (
        p
        for sub in ("sessions", "archived_sessions")
        for p in walk.matching(root / sub, "rollout-*.jsonl*")
        if not (p.name.endswith(".jsonl.zst") and p.with_name(p.name[:-4]).exists())
    )
    yield from locating.jsonl_sessions(paths)
