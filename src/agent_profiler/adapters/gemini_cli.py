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
  "subagent"`), ≤0.35 a sibling file sharing the parent's `sessionId`; linked to
  the launching call by `toolCalls[].agentId` (≥0.39) or else by the call whose
  run contains the subagent's start.
"""

from __future__ import annotations

import dataclasses
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
)
from agent_profiler.adapters.gemini_session import HARNESS, SessionBuilder, project_of
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.jsonl import peek
from agent_profiler.model import Session

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


def _parent_id(recording: Recording) -> str:
    """≥0.37 the folder is named after the parent session; ≤0.35 the ids are shared."""
    if recording.path.parent.parent.name == "chats":
        return recording.path.parent.name
    return recording.session_id


def read_group(group: JournalGroup, diagnostics: Diagnostics) -> list[Session]:
    """Read a session tree: main recordings and their subagents, linked to the calls
    that launched them."""
    recordings = [load_recording(path, diagnostics) for path in group.paths]
    modern = {r.session_id for r in recordings if r.container == "jsonl" and not _is_subagent(r)}
    mains: list[Session] = []
    children: list[tuple[Recording, Session]] = []
    agents: dict[str, dict[str, str]] = {}  # session id → agentId (≥0.39) → call id
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
            agents[session.session_id] = {
                c.agent_id: c.call_id for c in builder.calls.values() if c.agent_id
            }
    return _with_links(mains, _link(mains, children, agents))


def _link(
    mains: list[Session],
    children: list[tuple[Recording, Session]],
    agents: dict[str, dict[str, str]],
) -> list[Session]:
    by_id = {s.session_id: s for s in mains}
    taken: set[str] = set()
    result = []
    for recording, child in children:
        parent_id = _parent_id(recording)
        agent = (
            recording.session_id
            if recording.session_id != parent_id
            else (recording.path.name.split(".")[0])
        )
        parent = by_id.get(parent_id)
        call_id = None
        if parent is not None:
            call_id = agents.get(parent_id, {}).get(agent) or _launching_call(
                parent, child.start_ns, taken
            )
            if call_id:
                taken.add(call_id)
        result.append(
            dataclasses.replace(
                child,
                session_id=f"{parent_id}/{agent}",
                parent_session=parent_id,
                parent_call_id=call_id,
                agent_id=agent,
                child_role="subagent",
            )
        )
    return result


def _launching_call(parent: Session, start: int, taken: set[str]) -> str | None:
    """Before `agentId` (≤0.38): the call still running when the subagent started (its
    call is recorded on completion; 2 s of slack for the recorder's own start)."""
    began = {r.id: r.start_ns for r in parent.responses}
    around = [
        c
        for c in parent.tool_calls
        if c.call_id not in taken
        and min(c.start_ns, began.get(c.response_id or "", c.start_ns)) - 2_000 * MS
        <= start
        <= c.end_ns
    ]
    around.sort(key=lambda c: (c.end_ns - c.start_ns, c.call_id))
    return around[0].call_id if around else None


def _with_links(mains: list[Session], children: list[Session]) -> list[Session]:
    launched = {c.parent_call_id: c.session_id for c in children if c.parent_call_id}
    out = []
    for session in mains:
        calls = tuple(
            dataclasses.replace(t, child_session=launched[t.call_id])
            if t.call_id in launched
            else t
            for t in session.tool_calls
        )
        out.append(dataclasses.replace(session, tool_calls=calls))
    return out + children


def _session_key(file: SniffedFile) -> str:
    path = file.path
    if path.parent.parent.name == "chats":
        return path.parent.name  # a nested subagent: its parent's session id
    first = file.head[0] if file.head else None
    if isinstance(first, dict) and text_field(first, "sessionId"):
        return str(first["sessionId"])
    found = HEADER_ID.search(peek(path))
    return found.group(1).decode(errors="replace") if found else str(path)


def plan(files: list[SniffedFile]) -> list[JournalGroup]:
    """One group per session tree: a session's files (legacy and resumed copies,
    ≤0.35 sibling subagents) and its nested subagent folder."""
    from agent_profiler.adapters import JournalGroup

    trees: dict[str, list[Path]] = {}
    for file in files:
        trees.setdefault(_session_key(file), []).append(file.path)
    return [JournalGroup(HARNESS, None, tuple(paths)) for paths in trees.values()]


def read(group: JournalGroup, diagnostics: Diagnostics) -> list[Session]:
    return read_group(group, diagnostics)


# --------------------------------------------------------------------------- discover


def locate(env: Mapping[str, str]) -> Iterator[Located]:
    """`$GEMINI_CLI_HOME/.gemini` (Gemini CLI's `homedir()` honours it), else
    `~/.gemini`: main recordings under `tmp/<project>/chats/`; subagents are read
    with them. A legacy `.json` with a `.jsonl` beside it for the same id is left out."""
    from agent_profiler.adapters import Located

    home = Path(env.get("GEMINI_CLI_HOME") or env.get("HOME") or Path.home())
    chats = sorted((home / ".gemini" / "tmp").glob("*/chats"))
    for folder in chats:
        names = sorted(p.name for p in folder.glob("session-*.json*"))
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
