"""Gemini CLI chat recordings (`~/.gemini/tmp/<project>/chats/session-*.json[l]`).

Owns what is Gemini-specific (FORMATS-gemini-opencode.md §1): which records are
requests, what each request's prompt held, compression, and how subagent
recordings link to the call that ran them. The two containers are read and
replayed by `gemini_recording`, and one recording is mapped onto the model by
`gemini_session`; this module detects, groups and links.

Format facts these modules rely on, with the surprise each one holds:
- ≤0.38 a session is ONE pretty-printed JSON document, rewritten whole on every
  change (so it is parsed whole, and a cut-off copy is salvaged message by
  message); ≥0.39 it is an append log whose message lines repeat the same `id`
  each time the message changes: the last version wins, in first-seen order;
  `$set.messages` replaces the whole list (≥0.44 history sync), `$rewindTo`
  drops a message and everything after it;
- one request = one `gemini` record with `tokens`. `tokens.input` is the API's
  `promptTokenCount`: the whole prompt, and it INCLUDES `tokens.cached`
  (`cachedContentTokenCount`, a subset); `tokens.output` is the visible output
  and `tokens.thoughts` the thinking, NOT inside `output`; `tokens.tool`
  (`toolUsePromptTokenCount`) was 0 in every real file (§1.5). A record without
  tokens (a cancelled request) or with all-zero tokens has no reported size;
- tool results are embedded in the call (`toolCalls[].result`), and are what the
  next request sends back; a call's `timestamp` is taken on completion, the
  record's when the response ended, so a call runs from the one to the other;
  from 0.44 the same results are repeated as synthetic `user` turns of
  `functionResponse` parts, which are not prompts and are not counted twice;
- thoughts are summaries and are stripped from history: not in later prompts;
- never recorded: the system prompt and tool declarations (and ≤0.43 the
  environment turn), so they are the inferred head; from 0.44 the environment
  turn is the first user message `<session_context>…`;
- compression is an `info` record (empty content in 0.18–0.32, "Context
  compressed from X% to Y%." from 0.33) and the summary is not stored, so after
  one the context is cleared and the head measured again (the summary is in it);
- subagents: ≥0.37 `chats/<parentSessionId>/<agentId>.json[l]` (`kind:
  "subagent"`; read with the main file given alone), ≤0.35 a sibling file sharing
  the parent's `sessionId` (and, started in the same minute, its file name: one
  overwrites the other); linked to the launching call by `toolCalls[].agentId`
  (≥0.39) or else among the calls running when the subagent started: one that ran
  a subagent (`resultDisplay.isSubagentProgress`, "Subagent '<name>' finished")
  before the others, which run in parallel. A ≥0.37 file out of its parent's folder
  names no parent: it is looked for among its project's sessions read, else unknown.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agent_profiler.adapters.common import MS, is_damaged_gzip, text_field, timestamp_ns
from agent_profiler.adapters.gemini_recording import (
    BOM,
    HEADER_ID,
    Recording,
    is_header,
    load_recording,
    project_of,
)
from agent_profiler.adapters.gemini_session import HARNESS, CallDraft, SessionBuilder
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.jsonl import peek
from agent_profiler.model import Session, ToolCall

if TYPE_CHECKING:
    from agent_profiler.adapters import JournalGroup, Located, SniffedFile

# What a ≤0.35 subagent's first prompt starts with (codebase investigator, §1.9).
_SUBAGENT_PROMPT = re.compile(r"^\s*Your task is to ")


def detect(values: list[object]) -> bool:
    """A JSONL recording's header line, or a one-line JSON document: `sessionId` and
    `projectHash` (no other harness format we know has `projectHash`)."""
    if values and is_header(values[0]):
        return True
    # A log that lost its header line (seen when ~/.gemini moved while the CLI ran): a
    # `$set` line, or a `gemini` record (no other harness has that type, nor a `uuid`-less
    # user record with `thoughts`/`tokens`).
    return any(
        isinstance(value, dict)
        and (
            set(value) == {"$set"}
            or (text_field(value, "type") == "gemini" and "sessionId" not in value)
        )
        for value in values[:20]
    )


def claim(path: Path) -> bool:
    """A pretty-printed session document (≤0.38, `/export-session`): refused by the
    JSONL sniff, recognised by its header keys near the top."""
    head = peek(path).removeprefix(BOM)  # the document reader strips a BOM too
    return head.lstrip()[:1] == b"{" and b'"projectHash"' in head and b'"sessionId"' in head


def role(path: Path) -> str:
    """Session documents met while walking a folder (`.jsonl` ones are read anyway)."""
    name = path.name
    if not name.endswith((".json", ".json.gz")):
        return ""
    in_chats = path.parent.name == "chats" and name.startswith("session-")
    if in_chats or path.parent.parent.name == "chats":
        return "read"
    # Anywhere else (a copy, an `/export-session` file): by its header keys; a damaged
    # gzip that has no readable head is read too, so its damage is reported (issue 15.1).
    return "read" if claim(path) or (name.endswith(".gz") and is_damaged_gzip(path)) else ""


# --------------------------------------------------------------------------- trees


def _is_subagent(recording: Recording) -> bool:
    if recording.kind == "subagent":
        return True
    if recording.kind == "main":
        return False
    nested = recording.path.parent.parent.name == "chats"
    return nested or bool(_SUBAGENT_PROMPT.match(recording.first_prompt()))


def _stem_of(name: str) -> str:
    return name.split(".")[0]


def _own_id(recording: Recording) -> bool:
    """A ≥0.37 subagent: its own id, which names its file (`<agentId>.json[l]`), and
    `directories` in its header; a ≤0.35 sibling shares its parent's id."""
    return recording.kind == "subagent" and (
        "directories" in recording.header or _stem(recording.path) == recording.session_id
    )


def _stem(path: Path) -> str:
    return _stem_of(path.name)


def _parent_id(recording: Recording) -> str | None:
    """≥0.37 the folder is named after the parent session, and a file of one elsewhere
    does not say whose it is (None: found by its calls, or not known); ≤0.35 the ids are
    shared."""
    if recording.path.parent.parent.name == "chats":
        return recording.path.parent.name
    return None if _own_id(recording) else recording.session_id


def read_group(group: JournalGroup, diagnostics: Diagnostics) -> list[Session]:
    """Read a session tree: main recordings and their subagents, linked to the calls
    that launched them."""
    recordings = [load_recording(path, diagnostics) for path in group.paths]
    modern = {r.session_id for r in recordings if r.container == "jsonl" and not _is_subagent(r)}
    mains: list[Session] = []
    children: list[tuple[Recording, Session]] = []
    tree = _Tree()
    for recording in recordings:
        child = _is_subagent(recording)
        if not child and recording.container != "jsonl" and recording.session_id in modern:
            # A resumed legacy session is copied into a new .jsonl beside it (≥0.39).
            diagnostics.note("gemini-cli:legacy-json-superseded")
            continue
        builder = SessionBuilder(recording, diagnostics, subagent=child)
        builder.run()
        session = builder.finish()
        if session is None:
            continue
        if child:
            children.append((recording, session))
        else:
            mains.append(session)
            tree.calls[session.session_id] = builder.calls
            tree.projects[session.session_id] = recording.header.get("projectHash")
    return _with_links(mains, _link(mains, children, tree, diagnostics), tree)


@dataclasses.dataclass
class _Tree:
    """What linking needs of each main session read: its call drafts (their `agentId`,
    whether each ran a subagent and its words) and its `projectHash`; and, made the first
    time a subagent asks, each main session's calls indexed (`agents`, `running`), so a
    parent of thousands of subagents is not scanned whole once per subagent."""

    calls: dict[str, Mapping[str, CallDraft]] = dataclasses.field(default_factory=dict)
    projects: dict[str, object] = dataclasses.field(default_factory=dict)
    taken: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    agents: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    running: dict[int, _Running] = dataclasses.field(default_factory=dict)

    def agent_calls(self, parent: str) -> dict[str, str]:
        """agentId → the id of the first of the parent's call drafts naming it."""
        found = self.agents.get(parent)
        if found is None:
            found = self.agents[parent] = {}
            for draft in self.calls[parent].values():
                if draft.agent_id is not None:
                    found.setdefault(draft.agent_id, draft.call_id)
        return found

    def running_calls(self, parent: Session) -> _Running:
        found = self.running.get(id(parent))
        if found is None:
            found = self.running[id(parent)] = _Running(parent)
        return found


class _Running:
    """A main session's tool calls by the moment each began (its response's start when
    earlier: a call is recorded on completion), with the latest end so far at each, to
    find the calls running at a moment without going through all the others."""

    def __init__(self, parent: Session) -> None:
        began = {r.id: r.start_ns for r in parent.responses}
        timed = sorted(
            (min(call.start_ns, began.get(call.response_id or "", call.start_ns)), place)
            for place, call in enumerate(parent.tool_calls)
        )
        self.firsts = [first for first, _ in timed]
        self.calls = [(place, parent.tool_calls[place]) for _, place in timed]
        self.reach = list(itertools.accumulate((c.end_ns for _, c in self.calls), max))

    def at(self, start: int, slack: int) -> Iterator[tuple[int, ToolCall]]:
        """(place in the session's calls, call) of each call that began by `start` +
        `slack` and had not ended before `start`."""
        index = bisect.bisect_right(self.firsts, start + slack) - 1
        while index >= 0 and self.reach[index] >= start:
            place, call = self.calls[index]
            if call.end_ns >= start:
                yield place, call
            index -= 1


def _link(
    mains: list[Session],
    children: list[tuple[Recording, Session]],
    tree: _Tree,
    diagnostics: Diagnostics,
) -> list[Session]:
    by_id = {s.session_id: s for s in mains}
    result = []
    for recording, child in children:
        parent_id = _parent_id(recording)
        agent = recording.session_id if recording.session_id != parent_id else _stem(recording.path)
        if parent_id is None:  # a ≥0.37 file outside its parent's folder: its project's
            project = recording.header.get("projectHash")
            candidates = [s for s in mains if project and tree.projects[s.session_id] == project]
        else:
            candidates = [by_id[parent_id]] if parent_id in by_id else []
        found = _launching_call(candidates, tree, recording, agent, child.start_ns)
        if found is not None:
            tree.taken.add(found)
            parent_id = found[0]
        why = None if parent_id in by_id else _unknown_parent(recording, parent_id, candidates)
        if why is not None:
            diagnostics.warn(str(recording.path), None, "parent-not-exported", why[0])
            result.append(
                dataclasses.replace(
                    child,
                    session_id=agent if parent_id is None else f"{parent_id}/{agent}",
                    parent_session=parent_id,  # a ≤0.35 sibling's is known, if not read
                    agent_id=agent,
                    child_role="subagent",
                    facts=(*child.facts, ("child_role", "subagent"), ("parent_unknown", why[1])),
                )
            )
            continue
        result.append(
            dataclasses.replace(
                child,
                session_id=f"{parent_id}/{agent}",
                parent_session=parent_id,
                parent_call_id=found[1] if found else None,
                agent_id=agent,
                child_role="subagent",
            )
        )
    return result


def _unknown_parent(
    recording: Recording, parent_id: str | None, candidates: list[Session]
) -> tuple[str, str] | None:
    """Why the parent of a subagent whose parent was not read cannot be shown (the warning,
    the fact), or None: its parent is named, and the loader says it was not given."""
    if parent_id is None:
        agent = recording.session_id
        where = "its file is not in its parent's chats/<session id>/ folder, and"
        if candidates:
            seen = f"{len(candidates)} session{'s' * (len(candidates) > 1)} of its project read"
            return (
                f"subagent {agent}: its parent could not be determined ({where} no call of "
                f"the {seen} was running when it started)",
                "no call of its project's sessions read ran it",
            )
        return (
            f"subagent {agent}: its parent could not be determined ({where} no session of "
            "its project was read): pass its parent's session file with it",
            "not in a chats/<parent id>/ folder, and no session of its project read",
        )
    if _parent_id(recording) == recording.session_id and not _sibling_on_disk(recording):
        short = recording.session_id[:8]
        return (
            f"subagent {parent_id}/{_stem(recording.path)}: its parent's recording (session "
            f"{short}…) is missing from its folder: not copied, or overwritten by this "
            "subagent's own file (Gemini CLI ≤0.35 names both session-<minute>-<id>.json)",
            f"session {short}…, whose recording is missing (not copied, or overwritten)",
        )
    return None


def _sibling_on_disk(recording: Recording) -> bool:
    """≤0.35: another file of the same id (`session-<minute>-<id8>.json`) in the folder of
    this sibling subagent, its parent's recording or another sibling (True if unreadable)."""
    short = recording.session_id[:8]
    try:
        names = [p.name for p in recording.path.parent.iterdir()]
    except OSError:
        return True
    return any(
        name != recording.path.name
        and name.startswith("session-")
        and _stem_of(name).endswith(f"-{short}")
        for name in names
    )


def _launching_call(
    candidates: list[Session], tree: _Tree, child: Recording, agent: str, start: int
) -> tuple[str, str] | None:
    """(parent id, call id) of the call that ran this subagent: the one whose `agentId`
    names it (≥0.39); before that, among the calls still running when it started (a call
    is recorded on completion; 2 s of slack for the recorder's own start), one that ran a
    subagent and whose words name this one (its result holds the subagent's `summary`, or
    its task prompt an argument of the call), then one that ran a subagent, then the
    shortest (Gemini CLI runs a turn's calls in parallel: a shorter one was running too)."""
    for parent in candidates:
        named_id = tree.agent_calls(parent.session_id).get(agent)
        if named_id is not None:
            return parent.session_id, named_id
    # Ranked, then the first in candidate and call order (as a scan in that order keeps it).
    best: tuple[tuple[bool, bool, int, str], int, int, str, str] | None = None
    for order, parent in enumerate(candidates):
        drafts = tree.calls[parent.session_id]
        for place, call in tree.running_calls(parent).at(start, 2_000 * MS):
            if (parent.session_id, call.call_id) in tree.taken:
                continue
            draft = drafts.get(call.call_id)
            launch = draft is not None and draft.launch
            named = draft is not None and launch and _names(draft, child)
            rank = (not named, not launch, call.end_ns - call.start_ns, call.call_id)
            found = (rank, order, place, parent.session_id, call.call_id)
            if best is None or found[:3] < best[:3]:
                best = found
    return (best[3], best[4]) if best else None


def _names(call: CallDraft, child: Recording) -> bool:
    """The launching call's words name this subagent: its result holds the start of the
    subagent's `summary` (≥0.37 header: its answer), or one of its arguments (the question)
    is in the subagent's task prompt. Compared with their whitespace collapsed."""
    summary = text_field(child.header, "summary")
    head = " ".join(summary.split())[:60] if summary else ""
    if head and head in " ".join(call.said.split()):
        return True
    prompt = " ".join(child.first_prompt().split())
    return any(" ".join(asked.split()) in prompt for asked in call.asked)


def _with_links(mains: list[Session], children: list[Session], tree: _Tree) -> list[Session]:
    """Each launching call names its child: the one read, or, from ≥0.39's `agentId`, the
    id a child read from `chats/<parent>/` would have (the loader counts those not read);
    an older call whose child was not read names none (a time is no name)."""
    launched = {c.parent_call_id: c.session_id for c in children if c.parent_call_id}
    out = []
    for session in mains:
        drafts = tree.calls.get(session.session_id, {})
        named = {
            call_id: f"{session.session_id}/{draft.agent_id}"
            for call_id, draft in drafts.items()
            if draft.agent_id
        }
        calls = tuple(
            dataclasses.replace(t, child_session=launched.get(t.call_id) or named[t.call_id])
            if t.call_id in launched or t.call_id in named
            else t
            for t in session.tool_calls
        )
        out.append(dataclasses.replace(session, tool_calls=calls))
    return out + children


_PROJECT_HASH = re.compile(rb'"projectHash"\s*:\s*"([^"\\]{1,200})"')
_RECORDING_SUFFIXES = (".json", ".jsonl", ".json.gz", ".jsonl.gz")
_FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")  # a session id as a folder


@dataclasses.dataclass(frozen=True)
class _Planned:
    """What the plan knows of a file: its tree's key (its session id; a nested subagent's
    folder name), its `projectHash`, whether it is nested in `chats/<id>/`, and whether it
    may be a ≥0.37 subagent outside its parent's folder (named `<its id>.json[l]`)."""

    path: Path
    key: str
    project: str | None
    nested: bool
    stray: bool


def _planned(file: SniffedFile) -> _Planned:
    path = file.path
    if path.parent.parent.name == "chats":
        return _Planned(path, path.parent.name, None, True, False)
    first = file.head[0] if file.head else None
    if isinstance(first, dict) and text_field(first, "sessionId"):
        key, project = str(first["sessionId"]), text_field(first, "projectHash")
    else:
        head = peek(path)
        found, hashed = HEADER_ID.search(head), _PROJECT_HASH.search(head)
        key = found.group(1).decode(errors="replace") if found else str(path)
        project = hashed.group(1).decode(errors="replace") if hashed else None
    stray = not path.name.startswith("session-") and _stem(path) == key
    return _Planned(path, key, project, False, stray)


def plan(files: list[SniffedFile]) -> list[JournalGroup]:
    """One group per session tree: a session's files (legacy and resumed copies,
    ≤0.35 sibling subagents) and its nested subagent folder, `chats/<session id>/`, read
    with a main file given alone (as `discover` lists it). A ≥0.37 subagent file outside
    its parent's folder does not say whose it is: it is read with every main session of
    its project given, whose calls may tell (`_launching_call`)."""
    from agent_profiler.adapters import JournalGroup

    planned = [_planned(file) for file in files]
    strays = {p.project for p in planned if p.stray and p.project}
    trees: dict[str, list[Path]] = {}
    moved = {p.key: f"project:{p.project}" for p in planned if not p.nested and p.project in strays}
    for entry in planned:
        trees.setdefault(moved.get(entry.key, entry.key), []).append(entry.path)
    given = {p.path for p in planned}  # a folder walk gave its nested files as found here
    resolved: set[Path] | None = None  # resolved once, only for a file not given so
    grown: set[str] = set()  # the trees a main file's folder added recordings to
    for entry in planned:
        if entry.nested or entry.stray or not _FOLDER_NAME.fullmatch(entry.key):
            continue
        for path in _recordings_in(entry.path.parent / entry.key):
            if path in given:
                continue
            if resolved is None:
                resolved = {_resolved(p) for p in given}
            if _resolved(path) not in resolved:
                resolved.add(_resolved(path))
                trees[moved.get(entry.key, entry.key)].append(path)
                grown.add(moved.get(entry.key, entry.key))
    if grown:  # a recording given elsewhere with the very bytes of one found: read once
        from agent_profiler.repeats import distinct

        for key in grown:
            trees[key] = distinct(trees[key])[0]
    return [JournalGroup(HARNESS, None, tuple(paths)) for paths in trees.values()]


def _recordings_in(folder: Path) -> list[Path]:
    """The subagent recordings of a `chats/<session id>/` folder, in name order (none when
    there is no such folder, or it cannot be read)."""
    try:
        if not folder.is_dir():
            return []
        return [
            p
            for p in sorted(folder.iterdir())
            if p.name.endswith(_RECORDING_SUFFIXES) and not p.name.startswith(".") and p.is_file()
        ]
    except OSError:
        return []


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return path


def read(group: JournalGroup, diagnostics: Diagnostics) -> list[Session]:
    return read_group(group, diagnostics)


# --------------------------------------------------------------------------- discover


def locate(env: Mapping[str, str]) -> Iterator[Located]:
    """`$GEMINI_CLI_HOME/.gemini` (Gemini CLI's `homedir()` honours it), else
    `~/.gemini`: main recordings under `tmp/<project>/chats/`; subagents are read
    with them. A legacy `.json` with a `.jsonl` beside it for the same id is left out."""
    from agent_profiler.adapters import Located, walk

    home = Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or Path.home())
    chats = sorted(walk.matching(home / ".gemini" / "tmp", "chats", 1))
    for folder in chats:
        # Not the `.jsonl.unreadable-<ms>` copy of a file it could not reload, nor a
        # `.jsonl.tmp-<pid>` left by a rewrite: only its session files (the walk's names).
        names = sorted(
            p.name
            for p in walk.matching(folder, "session-*.json*", 0)
            if p.name.endswith(_RECORDING_SUFFIXES)
        )
        stems = {n.split(".")[0] for n in names if n.endswith((".jsonl", ".jsonl.gz"))}
        for name in names:
            if name.endswith((".json", ".json.gz")) and name.split(".")[0] in stems:
                continue
            path = folder / name
            if not path.is_file():
                continue  # a named pipe or a device: opening it would wait for a writer
            found = re.search(rb'"startTime"\s*:\s*"([^"]+)"', peek(path, 2048))
            start = timestamp_ns(found.group(1).decode()) if found else None
            # `discover` lists this machine's files by their paths: the project dir's
            # name is no secret there (a trace never shows it: `project_of`).
            slug = None if re.fullmatch(r"[0-9a-f]{64}", folder.parent.name) else folder.parent.name
            yield Located(path, project_of(Recording(path, {})) or slug, start)


# Tools that can change the workspace: a repeated call after one of these is not a repeat.
MUTATING_TOOLS = frozenset({"run_shell_command", "write_file", "replace", "edit"})
NATIVE_COMPOSITION: tuple[str, ...] = ()  # Gemini CLI reports totals only
