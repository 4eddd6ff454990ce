"""Pi coding agent sessions (`~/.pi/agent/sessions/--<cwd>--/<ts>_<uuid>.jsonl`).

Owns what is Pi-specific (FORMATS.md §4): the session header and its three
versions, which category each entry is, one request per assistant message with
usage, and compaction; the entry tree and its active branch live in `pi_tree`,
the record tables and message text in `pi_records`, what each message does in
`pi_messages`.

Format facts these modules rely on, with the surprise each one holds:
- a session is a tree, not a list: entries link by `id`/`parentId` and the
  branches the user left live on in the same file. The context of a request is
  the path from its parent entry to the root (`buildSessionContext`); entries on
  abandoned branches are not in it, even though they sit "above" it in the file;
- version 1 has no ids: Pi migrates it on load (`migrateV1ToV2`): ids in file
  order, parent = the previous entry, and a compaction's `firstKeptEntryIndex`
  is an index into the parsed lines *counting the header*. Done the same way
  here, in memory, with stable ids (`line-N`) instead of random ones;
- after a compaction the context is its summary, then the entries from
  `firstKeptEntryId` up to it, then the entries after it; only the latest
  compaction on the path counts, and its summary is sent wrapped in a fixed
  preamble, which is part of the prompt (`core/messages.ts`);
- prompt size = input + cacheRead + cacheWrite (`input` is the uncached part
  for every provider). Aborted and error responses usually have all-zero
  usage: they are requests without a reported size, never requests of 0;
- an aborted or error assistant message is not replayed to the model
  (`transformMessages`), so its content is in no later context, and its tool
  calls never ran (`agent-loop.ts` stops before executing them);
- `custom` entries are not in context, `custom_message` entries (and the
  `custom` message role, `hookMessage` in v2) are; a user `!` command
  (`bashExecution`) is, unless `excludeFromContext` (`!!`);
- the system prompt and the tool schemas are not stored before v0.80: they
  become the inferred head item; since, `system` messages hold them (`on_system`);
- times: an assistant `message.timestamp` (epoch ms) is taken when the request
  starts, the entry's ISO `timestamp` when the finished message is appended;
  a v1 header is written at the first save, after the first entries;
- a fork (header `branchedFrom` in v1, `parentSession` since 0.31) begins with a
  copy of its source's entries, written as they were (ids and times kept) right
  after its header, which is written at the fork: they are all dated before it.
  They are the fork's starting context, not its requests (`_inherited`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_profiler.adapters.common import (
    MS,
    TOKEN_LIMIT,
    Clock,
    assumed_model_window,
    bad_counts,
    journal_clock,
    text_field,
    timestamp_ns,
    token_count,
    warn_bad_usage,
)
from agent_profiler.adapters.drafts import CompactionDraft, finish_prompts, handed_over
from agent_profiler.adapters.pi_facts import session_facts
from agent_profiler.adapters.pi_messages import (
    ROLE_HANDLERS,
    USAGE_COUNTS,
    Tool,
    extension_message,
    on_checkpoint,
    on_context_edit,
    on_usage,
    summary_request,
)
from agent_profiler.adapters.pi_records import (
    BRANCH_PREFIX,
    BRANCH_SUFFIX,
    COMPACTION_PREFIX,
    COMPACTION_SUFFIX,
    CURRENT_VERSION,
    ENTRY_TYPES,
    ROLE_PARTS,
    SKIPPED,
    epoch_ms,
    unknown_parts,
)
from agent_profiler.adapters.pi_tree import Branch, Entry, measured_part
from agent_profiler.attribution import ContextLog, Observation
from agent_profiler.diagnostics import Diagnostics, journal_name
from agent_profiler.jsonl import read_jsonl
from agent_profiler.model import (
    Category,
    Harness,
    Marker,
    Prompt,
    Response,
    Session,
    ToolCall,
    shared,
)
from agent_profiler.records import record

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Set

    from agent_profiler.adapters import JournalGroup, Located, SniffedFile

HARNESS = Harness.PI
# Entries that are understood and carry nothing the model sees.
_NOT_IN_CONTEXT = frozenset(k for k, (how, _) in ENTRY_TYPES.items() if how == SKIPPED)
# A message's own epoch-ms time is used only when it is at most this long before
# its entry was appended; anything else is a damaged value.
_MAX_MESSAGE_LEAD_NS = 24 * 3600 * 1_000_000_000
# The entry types as one object each (`model.shared`), looked up without a call per entry.
_KINDS = {kind: shared(kind) for kind in ENTRY_TYPES}


def detect(values: list[object]) -> bool:
    """Pi sessions open with a `{"type": "session", "id", ...}` header: `version` and
    `cwd` since v2, `provider`/`modelId` in v1. Claude Code records carry
    `sessionId`, Codex lines a `payload`: neither starts with such a header."""
    first = values[0] if values else None
    if not isinstance(first, dict) or text_field(first, "type") != "session":
        return False
    if "payload" in first or "sessionId" in first or text_field(first, "id") is None:
        return False
    version = first.get("version")
    return (
        (isinstance(version, int) and not isinstance(version, bool))
        or text_field(first, "cwd") is not None
        or (text_field(first, "provider") is not None and text_field(first, "modelId") is not None)
    )


@record
class SessionBuilder:
    """Accumulates one Pi session file."""

    path: str
    diagnostics: Diagnostics
    log: ContextLog = field(default_factory=ContextLog)
    entries: dict[str, Entry] = field(default_factory=dict)
    branch: Branch = field(init=False)
    line_ids: list[str | None] = field(default_factory=list)  # parsed line → entry id (v1)
    version: int | None = None  # None until the header (or the first entry) is read
    session_id: str = ""
    project: str | None = None
    header_model: str | None = None
    header_provider: str | None = None
    header_thinking_level: str | None = None
    forked_from: str | None = None
    # A fork begins with a copy of its source's entries, their own times kept (all before
    # its header's): the context it starts with, not requests it made (`on_record`).
    fork_ns: int | None = None  # the fork's header time, while its copied entries are read
    inherited_entries: int = 0
    inherited_requests: int = 0  # assistant messages among them: the source's requests
    name: str | None = None
    last_entry: str | None = None  # in file order: a v1 entry's parent, and Pi's leaf
    responses: list[Response] = field(default_factory=list)
    # Requests that got no usage (aborted or failed before any came): not in
    # `responses`, which all carry a reported size (see `finish`).
    unmeasured_requests: list[Response] = field(default_factory=list)
    tools: dict[str, Tool] = field(default_factory=dict)
    open_tools: list[Tool] = field(default_factory=list)
    prompts: list[Prompt] = field(default_factory=list)
    compactions: list[CompactionDraft] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    providers: list[str] = field(default_factory=list)
    requests_by_level: Counter[str] = field(default_factory=Counter)
    # The system-prompt items in force (`pi_messages.on_system`): key → (entry, item).
    system_items: dict[str, tuple[str, str]] = field(default_factory=dict)
    unmeasured: Counter[str] = field(default_factory=Counter)
    start_ns: int | None = None
    end_ns: int | None = None

    def __post_init__(self) -> None:
        self.branch = Branch(self.entries)

    # -- helpers ------------------------------------------------------------

    def touch(self, ts: int) -> None:
        self.start_ns = ts if self.start_ns is None else min(self.start_ns, ts)
        self.end_ns = ts if self.end_ns is None else max(self.end_ns, ts)

    def warn(self, line: int, message: str) -> None:
        self.diagnostics.warn(self.path, line, "bad-shape", message)

    def message_time(self, message: dict[str, Any], entry: Entry) -> int:
        """When the message was created (epoch ms), or else when it was appended."""
        value = message.get("timestamp")
        # `epoch_ms`, inline for an int (nearly every message, twice a request)
        created = value * MS if type(value) is int and 0 < value < 2**53 else epoch_ms(value)
        if created is None or not 0 <= entry.time_ns - created <= _MAX_MESSAGE_LEAD_NS:
            return entry.time_ns
        # `touch`, inlined (a message's time is never after its entry's, which was touched)
        start = self.start_ns
        if start is None or created < start:
            self.start_ns = created
        return created

    def apply(self, leaving: list[str], entering: list[str], keep: Set[str] = frozenset()) -> None:
        entries = self.entries
        if leaving:
            remove = self.log.remove
            for entry_id in leaving:
                for part in entries[entry_id].parts:
                    if part.id not in keep:  # (a system item a compaction keeps)
                        remove(part.id)
        enter = self.log.enter
        for entry_id in entering:
            for part in entries[entry_id].parts:
                enter(part)

    # -- records ------------------------------------------------------------

    def on_record(self, value: object, line: int, clock: Clock) -> None:
        # Called for every line: field reads are inlined (`text_field`, `touch`) and the
        # entry types dispatch through a table (a 50 MB journal has 55,000 lines).
        if not isinstance(value, dict):
            self.line_ids.append(None)
            self.diagnostics.reject(self.path, line, "line is not a JSON object")
            return
        kind = value.get("type")
        if type(kind) is not str:
            kind = ""
        if kind == "session":
            self.line_ids.append(None)
            placed = clock.time(value, line)
            self.touch(placed)
            self.on_header(value, line, placed)
            return
        if self.version is None:
            self.version = CURRENT_VERSION if text_field(value, "id") else 1
            self.warn(line, f"no session header before the first entry; read as v{self.version}")
        fork = self.fork_ns
        if fork is not None and self._inherited(value, fork):
            ts = fork  # in the fork, its copied history is there from its start
        else:
            ts = clock.time(value, line)
            start = self.start_ns
            if start is None or ts < start:
                self.start_ns = ts
            end = self.end_ns
            if end is None or ts > end:
                self.end_ns = ts
        entry = self._new_entry(value, kind, line, ts)
        self.line_ids.append(entry.id)
        message = value.get("message")
        role = message.get("role") if type(message) is dict else None
        if type(role) is not str:
            role = None
        if role != "toolResult" and self.open_tools:
            # The conversation moved on: a call still without a result got none.
            for tool in self.open_tools:
                tool.moved_on_ns = ts
            self.open_tools.clear()
        if kind == "message":
            if not isinstance(message, dict):
                self.warn(line, "message entry without a message")
                return
            on_role = ROLE_HANDLERS.get(role) if role is not None else None
            usage = message.get("usage") if role == "assistant" else None
            if type(usage) is dict:
                # `bad_counts`, asked only when a count is not one (its list made per request)
                for key in USAGE_COUNTS:
                    count = usage.get(key)
                    if count is not None and not (type(count) is int and 0 <= count < TOKEN_LIMIT):
                        bad = bad_counts(usage, USAGE_COUNTS)
                        warn_bad_usage(self.diagnostics, self.path, line, usage, bad)  # read as 0
                        break
            if on_role is not None:
                on_role(self, entry, message)
                self._unknown_parts(role, message.get("content"), line)  # type: ignore[arg-type]
            else:
                # A role no Pi build is known to write: not read, which is no choice.
                self.diagnostics.not_recognised(f"pi:message/{role}", self.path, line)
            return
        handler = _ENTRY_HANDLERS.get(kind)
        if handler is not None:
            handler(self, entry, value, line)
        elif kind in _NOT_IN_CONTEXT:
            self.diagnostics.skip(f"pi:{kind}")
        else:
            self.diagnostics.not_recognised(f"pi:{kind}", self.path, line)

    def _inherited(self, value: dict[str, Any], fork: int) -> bool:
        """Whether an entry is one a fork copied from its source: Pi copies them first,
        as they were, their times included (all before the fork's header). They are the
        context the fork starts with, not its requests: read for their parts only (the
        handlers look at `fork_ns`), on neither the fork's clock nor its span."""
        ts = timestamp_ns(value.get("timestamp"))
        if ts is not None and ts < fork:
            self.inherited_entries += 1
            return True
        self.fork_ns = None  # the fork's own history starts here
        return False

    def on_branch_summary(self, entry: Entry, value: dict[str, Any], line: int) -> None:
        summary = text_field(value, "summary")
        if summary:
            text = BRANCH_PREFIX + summary + BRANCH_SUFFIX
            entry.parts = (
                measured_part(f"{entry.id}:summary", Category.SUMMARIES, text, "Branch summary"),
            )

    def on_custom_message(self, entry: Entry, value: dict[str, Any], line: int) -> None:
        extension_message(self, entry, value)
        self._unknown_parts("custom", value.get("content"), line)

    def _unknown_parts(self, role: str, content: object, line: int) -> None:
        """A content part of a type Pi is not known to write: not read, said with its place
        (`unknown-block`, as a Claude Code or Codex block), the parts beside it read."""
        if type(content) is not list or (known := ROLE_PARTS.get(role)) is None:
            return
        for block in content:  # (nearly always: every part known, and no list is made)
            # (a type that is no string, a list say, cannot be looked up in `known`)
            if type(block) is not dict or type(kind := block.get("type")) is not str:
                break
            if kind not in known:
                break
        else:
            return
        for part in unknown_parts(role, content):
            said = f"content part of type '{journal_name(part)}' not recognised (not read)"
            self.diagnostics.warn(self.path, line, "unknown-block", said)

    def on_model_change(self, entry: Entry, value: dict[str, Any], line: int) -> None:
        if self.fork_ns is not None:
            return  # the source's change, before the fork
        model = text_field(value, "modelId") or "?"
        provider = text_field(value, "provider")
        self.markers.append(
            Marker(entry.time_ns, "model_change", f"{provider}/{model}" if provider else model)
        )

    def on_thinking_level_change(self, entry: Entry, value: dict[str, Any], line: int) -> None:
        level = text_field(value, "thinkingLevel") or "?"
        entry.thinking_level = level
        if self.fork_ns is not None:
            return  # the source's change, before the fork
        self.markers.append(Marker(entry.time_ns, "thinking_level_change", level))

    def on_session_info(self, entry: Entry, value: dict[str, Any], line: int) -> None:
        self.name = text_field(value, "name") or self.name

    def on_header(self, value: dict[str, Any], line: int, placed_ns: int) -> None:
        if self.version is not None:
            self.diagnostics.skip("pi:repeated-header")
            return
        version = value.get("version")
        self.version = version if isinstance(version, int) and not isinstance(version, bool) else 1
        if self.version > CURRENT_VERSION:
            self.diagnostics.warn(
                self.path,
                line,
                "unknown-version",
                f"session version {self.version} is newer than {CURRENT_VERSION}; read as v3",
            )
        self.session_id = text_field(value, "id") or ""
        self.project = text_field(value, "cwd")
        self.header_model = text_field(value, "modelId")
        self.header_provider = text_field(value, "provider")
        self.header_thinking_level = text_field(value, "thinkingLevel")
        # A fork names the file it came from (v3 `parentSession`, v1 `branchedFrom`).
        # It is not a subagent, so it is a fact, not `Session.parent_session`.
        parent = text_field(value, "parentSession") or text_field(value, "branchedFrom")
        if parent:
            self.forked_from = Path(parent).name
            # When the fork was made: its header's own time, unless the clock did not
            # believe it (none, or an outlier): then no entry is taken as copied.
            fork = timestamp_ns(value.get("timestamp"))
            self.fork_ns = fork if fork == placed_ns else None

    def _new_entry(self, value: dict[str, Any], kind: str, line: int, ts: int) -> Entry:
        """The entry with its id and parent; v1 entries get them the way Pi migrates."""
        entries = self.entries
        parent = self.last_entry
        version = self.version
        if version is not None and version >= 2:
            raw_id = value.get("id")
            raw_parent = value.get("parentId")
            if type(raw_id) is str and raw_id and raw_id not in entries:
                entry_id = raw_id  # (nearly every entry)
                parent = raw_parent if isinstance(raw_parent, str) else None
            elif type(raw_id) is not str or not raw_id:
                entry_id = f"line-{line}"
                self.warn(line, "entry without an id; linked to the previous entry")
            else:
                entry_id = f"line-{line}"
                self.warn(
                    line,
                    f"entry id '{journal_name(raw_id)}' repeats; this one is read as '{entry_id}'",
                )
                parent = raw_parent if isinstance(raw_parent, str) else None
            if parent is not None and parent not in entries:
                # Pi appends a child after its parent, so this is damage: a root.
                self.warn(
                    line,
                    f"parentId '{journal_name(parent)}' is not an earlier entry; read as a root",
                )
                parent = None
        else:
            entry_id = f"line-{line}"
        above = entries.get(parent) if parent is not None else None
        # By position: keywords cost 1,200 instructions an entry (0.5% of reading Pi).
        entry = Entry(
            entry_id,
            parent,
            _KINDS.get(kind) or shared(kind),
            ts,
            (),  # parts
            None,  # first_kept
            above.prompt_id if above else None,  # prompt_id
            above.thinking_level if above else self.header_thinking_level,  # thinking_level
        )
        entries[entry_id] = entry
        self.last_entry = entry_id
        return entry

    def on_compaction(self, entry: Entry, value: dict[str, Any], line: int) -> None:
        summary = text_field(value, "summary") or ""
        text = COMPACTION_PREFIX + summary + COMPACTION_SUFFIX
        checkpoint = (
            ()
            if self.fork_ns is not None
            else on_checkpoint(self, entry, value.get("systemMessage"))
        )
        entry.parts = (
            *checkpoint,
            measured_part(f"{entry.id}:summary", Category.SUMMARIES, text, "Compaction summary"),
        )
        entry.first_kept = text_field(value, "firstKeptEntryId")
        index = value.get("firstKeptEntryIndex")
        if entry.first_kept is None and isinstance(index, int) and not isinstance(index, bool):
            # v1: an index into the parsed lines, the header counting as line 0.
            target = self.line_ids[index] if 0 <= index < len(self.line_ids) else None
            if target is None:
                self.warn(line, f"firstKeptEntryIndex {index} names no entry; nothing kept")
            entry.first_kept = target
        if self.fork_ns is not None:
            return  # the source's compaction: the fork starts from what it left
        # Items leave one by one rather than through `ContextLog.clear()`, which would
        # measure the inferred head again: a Pi journal holds the conversation from its
        # first request on, so the head is the system prompt and tool schemas, which a
        # compaction does not touch (measuring again would fold estimate error into it).
        # For the same reason the prompt and tools of `system` messages (v0.80+) stay,
        # unless the compaction's own checkpoint replaced them (`on_checkpoint`).
        leaving, entering = self.branch.move_to(entry.id)
        held = {item_id for _, item_id in self.system_items.values()}
        self.apply(leaving, entering, keep=held)
        removed = sum(len(self.entries[e].parts) for e in leaving)
        self.log.observe(
            Observation.after_compaction(
                entry.time_ns,
                entry.id,
            )
        )
        above = self.entries.get(entry.parent) if entry.parent else None
        start = min(above.time_ns, entry.time_ns) if above else entry.time_ns
        self.compactions.append(
            CompactionDraft(
                entry.id,
                start,
                entry.time_ns,
                trigger="extension" if value.get("fromHook") is True else None,
                pre_tokens=token_count(value.get("tokensBefore")) or None,
                removed_items=removed,
                request=summary_request(entry, value, start),
                timing="previous entry → compaction entry",
            )
        )

    # -- result -------------------------------------------------------------

    def finish(self) -> Session | None:
        if self.start_ns is None or self.end_ns is None:
            return None
        end = self.end_ns
        if not self.responses and not self.compactions:
            # No request to anchor a snapshot on: show what the final branch holds.
            self.apply(*self.branch.move_to(self.last_entry))
            self.log.observe(
                Observation.session_end(
                    end,
                    model=self.header_model,
                )
            )
        # Pi executes no tool of an aborted or failed message.
        not_run = sum(1 for t in self.tools.values() if t.end_ns is None and t.from_failed_response)
        facts = tuple(session_facts(self, not_run))
        # The entry tree has served (facts were its last reader): it goes before the
        # session's calls and snapshots are made, so a long session never holds both.
        self.entries.clear()
        self.branch = Branch(self.entries)
        response_ids = {r.id for r in self.responses}
        tools: list[ToolCall] = []
        still_open = False  # a call without a result when the journal ends
        for t in handed_over(self.tools):  # each draft goes once its call is made
            if t.end_ns is None and t.from_failed_response:
                continue
            if t.end_ns is not None:
                tool_end, timing = t.end_ns, ""
            elif t.moved_on_ns is not None:
                tool_end, timing = t.moved_on_ns, "journal: call → next entry (no result)"
            else:
                tool_end, timing = end, "journal: call → end of journal (no result)"
                still_open = True
            tools.append(t.finish(response_ids, tool_end, timing=timing))
        self.open_tools.clear()
        prompts = finish_prompts(self.prompts, self.responses, tools)
        compactions = tuple(c.finish() for c in self.compactions)
        snapshots = self.log.replay()
        models = list(self.models)
        if not models and self.header_model:
            models.append(self.header_model)
        window, window_source = assumed_model_window(self.responses)  # Pi states none
        return Session(
            harness=HARNESS,
            session_id=self.session_id or Path(self.path).name.split(".")[0],
            start_ns=self.start_ns,
            end_ns=end,
            sources=(self.path,),
            models=tuple(models),
            provider=(self.providers[0] if self.providers else self.header_provider),
            window_tokens=window,
            window_source=window_source,
            project=self.project,
            incomplete=still_open,
            prompts=prompts,
            responses=tuple(self.responses),
            tool_calls=tuple(tools),
            compactions=compactions,
            snapshots=tuple(snapshots),
            unmeasured=self.log.unmeasured(self.unmeasured),
            facts=facts,
            failed_requests=tuple(self.unmeasured_requests),
            markers=tuple(self.markers),
        )


# What each entry type other than `message` does (the types in _NOT_IN_CONTEXT are skipped).
_ENTRY_HANDLERS: dict[str, Callable[[SessionBuilder, Entry, dict[str, Any], int], None]] = {
    "compaction": SessionBuilder.on_compaction,
    "branch_summary": SessionBuilder.on_branch_summary,
    "custom_message": SessionBuilder.on_custom_message,
    "model_change": SessionBuilder.on_model_change,
    "thinking_level_change": SessionBuilder.on_thinking_level_change,
    "context_edit": on_context_edit,
    "usage": on_usage,
    "session_info": SessionBuilder.on_session_info,
}


# --------------------------------------------------------------------------- reading


def read_session(path: Path, diagnostics: Diagnostics) -> SessionBuilder:
    source = str(path)
    builder = SessionBuilder(source, diagnostics)
    clock = journal_clock(path, diagnostics, source)
    on_record = builder.on_record
    for line, value in read_jsonl(path, diagnostics):
        on_record(value, line, clock)
    return builder


def read_sessions(paths: list[Path], diagnostics: Diagnostics) -> list[Session]:
    sessions = []
    for path in paths:
        session = read_session(path, diagnostics).finish()
        if session is not None:
            sessions.append(session)
    return sessions


def plan(files: list[SniffedFile]) -> list[JournalGroup]:
    """One group per file: Pi has no subagent files, and a fork is a session of its own."""
    # Imported here: the adapters package imports this module before defining it.
    from agent_profiler.adapters import JournalGroup

    return [JournalGroup(HARNESS, f.path) for f in files]


def read(group: JournalGroup, diagnostics: Diagnostics) -> list[Session]:
    return read_sessions(list(group.paths), diagnostics)


# --------------------------------------------------------------------------- discover

# Tools that can change the workspace: a repeated call after one of these is not a repeat.
MUTATING_TOOLS = frozenset({"bash", "edit", "write"})
NATIVE_COMPOSITION: tuple[str, ...] = ()  # Pi reports totals only


def locate(env: Mapping[str, str]) -> Iterator[Located]:
    """`$PI_CODING_AGENT_DIR`, else `~/.pi/agent`: `sessions/--<cwd>--/*.jsonl`."""
    from agent_profiler.adapters import locating, walk

    root = locating.folder(env, "PI_CODING_AGENT_DIR", ".pi", "agent") / "sessions"
    paths = (p for pattern in ("*.jsonl", "*.jsonl.gz") for p in walk.matching(root, pattern, 1))
    yield from locating.jsonl_sessions(paths)
