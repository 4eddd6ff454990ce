"""Muse Code (Meta): the adapter — detection, which logs form one session tree, sessions.

Owns grouping a session's logs (`…/muse/sessions/YYYY/MM/DD/<id>/session.jsonl`, its
subagent and approval-review logs), linking children to parents, and finishing each
session (FORMATS-muse.md §1, §6); one log's events are read by `muse_journal`, a
request's byte lanes by `muse_lanes`.

Format facts this module relies on, with the surprise each one holds:
- line 1 is not an envelope but a `retained_frame` whose children are whole
  envelopes stored as JSON *strings* (`record_json`, decoded a second time); they
  are permission records and add nothing to the context (§2.2);
- `retained_marker` lines stand in for dropped live-only records: no time, no
  content; they are skipped and counted (`omitted_live_only`) (§2.3);
- `recorded_at` is *microseconds* since the epoch (§2.1);
- a log may hold envelopes of other streams (mirrored workflow children): only
  `stream.id == this session's id` is read; approval-review logs
  (`stream.kind:"approval.review.runtime"`, a synthetic clock) are never read as a
  timeline (§1, §2.1);
- `model_completed.usage.input_tokens` already includes `cached_tokens`: it is the
  request's whole prompt; `goal_usage_attribution` repeats the same numbers and is
  never added (§5.13, §5.14);
- `model_completed` has no response id and is written at the end of the call:
  start = `recorded_at − duration_ms`; whether the assistant message comes before
  or after it depends on the version (1.4.2 before, 1.1.1 after) (§4);
- `model_input_trace_recorded` (schema 2, `full_request`) states what the request
  carried, lane by lane, in bytes: the snapshot's categories are those lanes /4
  (`native-bytes/4`), while the changes still come from transcript items. Its
  `tool_specs` lane says 0 bytes although the tools are sent, so
  `input_tokens − Σ lanes/4` is its own labelled item, never scaled into the lanes
  (§5.5);
- the `context` lane is *one* developer message of all context blocks: it is split
  by each block's `context_block_diagnostic.text_bytes` (kept unredacted when the
  text itself was redacted); the few bytes left over are the join glue (§5.2, §5.5);
- reasoning is stored encrypted (`text` empty) and tool-call `args` are JSON
  strings (§5.8, §5.10);
- compaction budgets (`budget_before/after.estimated_prompt_tokens`) are Muse's
  own heuristic estimates, not provider counts; the summariser's call is in no
  `model_completed`, only in `summarizer_usage` (§5.18);
- reminder children (memory/skill/goal/verify...) run in their own
  `subagent/<id>/session.jsonl` (when one exists): their usage is not in the
  parent log (§6);
- `muse export` writes a JSON *array* of bare `payload.event` objects: no
  envelopes, so no times, streams or usage; it is refused with a clear message.

How they are shown: a request without lanes (older builds) falls back to transcript
items (chars/4, inferred head; `item_stage` says so); a reminder child is a tool-like
span named after its agent (call id = its task id) that links to its child session;
a model call reporting zero tokens (`--provider echo`) is not a request.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_profiler.adapters.common import Clock
from agent_profiler.adapters.drafts import finish_prompts
from agent_profiler.adapters.muse_drafts import Tool
from agent_profiler.adapters.muse_journal import (
    APPROVAL_MESSAGE,
    EXPORT_MESSAGE,
    ApprovalReviewLogError,
    JournalBuilder,
    is_event_list,
)
from agent_profiler.adapters.muse_records import (
    APPROVAL_DIR,
    APPROVAL_STREAM,
    HARNESS,
    MUSE_SPARK_WINDOW,
    SESSION_FILE,
    SUBAGENT_DIR,
    WINDOW_SOURCE,
)
from agent_profiler.adapters.muse_records import (
    NOT_IN_LANES_ID as NOT_IN_LANES_ID,  # re-exported: the id tests and writers look for
)
from agent_profiler.attribution import Observation
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import JournalError
from agent_profiler.jsonl import read_head, read_jsonl
from agent_profiler.model import Coverage, Prompt, Session, ToolCall

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from agent_profiler.adapters import JournalGroup, Located, SniffedFile


def detect(values: list[object]) -> bool:
    """Muse journals: envelopes `{stream{kind,id}, payload_type, recorded_at, ...}`, or the
    `retained_frame` / `retained_marker` lines. No `sessionId` (Claude), no
    `{timestamp, type, payload}` (Codex), no `{"type": "session"}` header (Pi)."""
    for value in values:
        if isinstance(value, list) and is_event_list(value):
            return True  # a one-line `muse export` array: read() explains why it is refused
        if not isinstance(value, dict) or "type" in value or "sessionId" in value:
            continue
        if "retained_frame" in value or "retained_marker" in value:
            return True
        if (
            isinstance(value.get("stream"), dict)
            and isinstance(value.get("payload_type"), str)
            and "recorded_at" in value
        ):
            return True
    return False


def plan(files: list[SniffedFile]) -> list[JournalGroup]:
    """One group per session tree: a `session.jsonl` with the `subagent/<id>/session.jsonl`
    logs below it (given or on disk, nested too). Approval-review logs given beside their
    session ride along and are skipped; one given alone is its own group (refused)."""
    from agent_profiler.adapters import JournalGroup

    given = {_key(f.path): f for f in files}
    order: list[str] = []
    members: dict[str, list[Path]] = {}
    for file in files:
        if _is_approval_review(file.path, file.head):
            owner = file.path.parent.parent / SESSION_FILE
            root = _topmost_given(owner, given) if _key(owner) in given else None
        else:
            root = _topmost_given(file.path, given)
        key = _key(root) if root is not None else _key(file.path)
        if key not in members:
            members[key] = []
            order.append(key)
        if key != _key(file.path):
            members[key].append(file.path)
    groups = []
    for key in order:
        main = given[key].path
        extras: dict[str, Path] = {_key(p): p for p in members[key]}
        if main.name == SESSION_FILE:
            for child in _subagent_logs(main.parent):
                extras.setdefault(_key(child), child)
        extras.pop(key, None)
        logs = sorted(extras.values())
        # The logs only found below the session (not given): one that cannot be read is a
        # warning, not the user's error (`read_group`).
        found = [str(i) for i, log in enumerate(logs) if _key(log) not in given]
        variant = _FOUND + ",".join(found) if found else ""
        groups.append(JournalGroup(HARNESS, main, tuple(logs), variant))
    return groups


_FOUND = "found:"  # a group's variant: the indices of its extras found, not given (`plan`)


def _key(path: Path) -> str:
    try:
        return str(path.resolve())
    except OSError:
        return str(path)


def _parent_log(path: Path) -> Path | None:
    """`<parent>/subagent/<id>/session.jsonl` → `<parent>/session.jsonl`."""
    if path.name == SESSION_FILE and path.parent.parent.name == SUBAGENT_DIR:
        return path.parent.parent.parent / SESSION_FILE
    return None


def _topmost_given(path: Path, given: dict[str, Any]) -> Path:
    top, current = path, _parent_log(path)
    while current is not None:
        if _key(current) in given:
            top = current
        current = _parent_log(current)
    return top


def _subagent_logs(folder: Path) -> list[Path]:
    found: list[Path] = []
    try:
        children = sorted((folder / SUBAGENT_DIR).glob(f"*/{SESSION_FILE}"))
    except OSError:
        return found
    for child in children:
        if child.is_file():
            found.append(child)
            found += _subagent_logs(child.parent)
    return found


def _is_approval_review(path: Path, head: list[object]) -> bool:
    if path.parent.name == APPROVAL_DIR:
        return True
    for value in head:
        if isinstance(value, dict) and isinstance(value.get("stream"), dict):
            return bool(value["stream"].get("kind") == APPROVAL_STREAM)
    return False


# -- the journal ------------------------------------------------------------------------------


# -- sessions -------------------------------------------------------------------------------


def finish_session(
    journal: JournalBuilder, parent: tuple[str, str | None, str] | None = None
) -> Session | None:
    """The session; `parent` = (parent session id, linking call or task id, role)."""
    if journal.session_id is None or journal.start_ns is None or journal.end_ns is None:
        return None
    for run in journal.runs.values():
        journal.drop(run)  # output began, no usage came
    end = journal.end_ns
    requests = journal.requests
    # A request is kept only once its usage is read (model_completed): never None here.
    sizes = [r.usage.prompt_tokens if r.usage else None for r in requests]
    for compaction in journal.compactions:
        index = compaction.requests_before
        if index > 0:
            compaction.pre_tokens = sizes[index - 1]
        if index < len(requests):
            compaction.post_tokens = sizes[index]
        if compaction.observation is not None:
            journal.log.settle(compaction.observation, reported_tokens=compaction.post_tokens)
    if not requests and not journal.compactions:
        # No request to anchor a snapshot on (zero usage, an excerpt): show what the
        # transcript holds at the end.
        journal.log.observe(
            Observation.session_end(
                end,
                model=journal.models[0] if journal.models else journal.default_model,
            )
        )
    native = sum(1 for r in requests if r.native)
    snapshots = journal.log.replay(coverage=Coverage.PARTIAL, infer_head=not native)
    responses = tuple(
        r.finish(prompt_id=journal.runs[r.run_id].prompt_id if r.run_id in journal.runs else None)
        for r in requests
    )
    response_ids = {r.id for r in responses}
    spawned = {link: child for child, (link, _) in journal.children.items()}
    run_ends = {run.prompt_id: run.end_ns for run in journal.runs.values() if run.prompt_id}
    tools = []
    for tool in [*journal.tools.values(), *journal.reminders.values()]:
        fallback_end = run_ends.get(tool.prompt_id) if tool.prompt_id else None
        tools.append(_tool_call(tool, response_ids, spawned, fallback_end or end))
    prompts = finish_prompts(
        [Prompt(p.id, p.start_ns, p.start_ns, p.chars, "user", p.preview) for p in journal.prompts],
        responses,
        tools,
        first_from_agent=parent is not None,
        ends_at_least=run_ends,
    )
    compactions = tuple(c.finish() for c in journal.compactions)
    last = max(
        [end]
        + [r.end_ns for r in responses]
        + [t.end_ns for t in tools]
        + [p.end_ns for p in prompts]
        + [c.end_ns for c in compactions]
    )
    window = MUSE_SPARK_WINDOW if any(m.startswith("muse-spark") for m in journal.models) else None
    return Session(
        harness=HARNESS,
        session_id=journal.session_id,
        start_ns=journal.start_ns,
        end_ns=last,
        sources=(journal.path,),
        models=tuple(journal.models),
        provider=journal.provider,
        window_tokens=window,
        window_source=WINDOW_SOURCE if window else None,
        project=journal.project,
        harness_version=journal.version,
        parent_session=parent[0] if parent else None,
        parent_call_id=parent[1] if parent else None,
        child_role=parent[2] if parent else None,
        incomplete=any(t.incomplete for t in tools if t.call_id in journal.tools)
        or any(run.prompt_id and run.end_ns is None for run in journal.runs.values()),
        prompts=prompts,
        responses=responses,
        tool_calls=tuple(tools),
        compactions=compactions,
        snapshots=tuple(snapshots),
        unmeasured=journal.log.unmeasured(journal.unmeasured),
        facts=tuple(_facts(journal, native)),
    )


def _facts(journal: JournalBuilder, native: int) -> list[tuple[str, str]]:
    facts: list[tuple[str, str]] = []
    if journal.build:
        facts.append(("build", journal.build))
    if journal.requests:
        facts.append(
            (
                "native_lane_requests",
                f"{native} of {len(journal.requests)} requests have model_input_trace_recorded "
                "lanes (native-bytes/4); the others are transcript items (chars/4)",
            )
        )
    notes = {
        "omitted_live_only": "retained_marker lines (dropped live-only records)",
        "goal_usage_attribution": "records not added: they repeat model_completed",
        "zero_usage_model_completed": "model calls that reported no tokens: not requests",
        "requests-without-usage": "requests that began but never completed",
        "repeated_traces": "model_input_trace_recorded repeated for one step (retry)",
        "reminder_children": "reminder child sessions linked",
        "reminder_children_without_log_path": "reminder children with no log path",
        "approval_reviews": "automatic approval reviews (their own logs; not read)",
    }
    for key, note in notes.items():
        if journal.counts[key]:
            facts.append((key, f"{journal.counts[key]} {note}"))
    if journal.counts["approval_reviews"]:
        facts.append(
            (
                "approval_review_tokens",
                f"{journal.counts['approval_review_input_tokens']} in / "
                f"{journal.counts['approval_review_output_tokens']} out (not this context)",
            )
        )
    return facts + journal.facts


def _tool_call(
    tool: Tool, response_ids: set[str], spawned: dict[str, str], fallback_end: int
) -> ToolCall:
    timing = ""
    start, end = tool.start_ns, tool.end_ns
    if tool.exec_start_ns is not None and tool.exec_end_ns is not None:
        start, end = tool.exec_start_ns, max(tool.exec_end_ns, tool.exec_start_ns)
        timing = "journal: tool task/effect started → ended"
    elif end is None and tool.exec_end_ns is not None:
        end = tool.exec_end_ns
    if tool.reminder:
        timing = "journal: reminder child linked/started → task ended (a background child run)"
    return tool.finish(
        response_ids,
        end if end is not None else fallback_end,
        start_ns=start,
        incomplete=end is None,
        timing=timing,
        child_session=spawned.get(tool.call_id),
        by_model=not tool.reminder,
    )


# -- reading ----------------------------------------------------------------------------------


def _starts_like_export(path: Path) -> bool:
    try:
        # The guarded reader: a damaged gzip here is "not an export", never a crash.
        head = read_head(path, 64 * 1024)
    except JournalError:
        return False
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[") and b'"kind"' in head


def explain_rejected(path: Path) -> str | None:
    """Why a file that is not JSONL may still be Muse's: a `muse export` array."""
    return EXPORT_MESSAGE if _starts_like_export(path) else None


def read_journal(path: Path, diagnostics: Diagnostics) -> JournalBuilder:
    """Read one Muse log. Raises `JournalError` for a file that is no journal, for a
    `muse export` array, and (`ApprovalReviewLogError`) for an approval-review log."""
    source = str(path)
    builder = JournalBuilder(source, diagnostics)
    clock = Clock(source, diagnostics, expect_timestamps=True)
    records = read_jsonl(path, diagnostics)
    try:
        first = next(records, None)
    except JournalError as error:
        if _starts_like_export(path):
            raise JournalError(source, EXPORT_MESSAGE) from error
        raise
    if first is not None:
        builder.on_line(first[1], first[0], clock)
        for line, value in records:
            builder.on_line(value, line, clock)
    if builder.session_id is None and builder.bare_events:
        raise JournalError(source, EXPORT_MESSAGE)
    return builder


def read_group(group: JournalGroup, diagnostics: Diagnostics) -> list[Session]:
    """Read a session tree: the main log and its subagent logs, each linked to its parent
    (by the parent's reminder-child link or spawn call, else by the folder it lives in)."""
    builders: list[JournalBuilder] = []
    indices = group.variant.removeprefix(_FOUND).split(",") if group.variant else []
    found = {group.extras[int(i)] for i in indices}
    for path in group.paths:
        is_main = path == group.main
        try:
            if path.parent.name == APPROVAL_DIR:
                raise ApprovalReviewLogError(str(path), APPROVAL_MESSAGE)
            builders.append(read_journal(path, diagnostics))
        except ApprovalReviewLogError as error:
            if is_main:
                raise JournalError(error.path, error.message, error.line) from None
            diagnostics.skip("muse:approval-review-log")
        except JournalError as error:
            if is_main:
                raise
            if path in found:
                diagnostics.warn(error.path, error.line, "unreadable", error.message)
            else:  # a log given: the user's error (its own line), the rest still read
                diagnostics.failed(error)
    links: dict[str, tuple[str, str, str]] = {}
    for builder in builders:
        for child, (link, role) in builder.children.items():
            if builder.session_id:
                links.setdefault(child, (builder.session_id, link, role))
    by_path = {_key(Path(b.path)): b for b in builders}
    sessions = []
    for builder in builders:
        parent: tuple[str, str | None, str] | None = None
        if builder.session_id in links:
            parent = links[builder.session_id]
        else:
            parent_log = _parent_log(Path(builder.path))
            if parent_log is not None:
                owner = by_path.get(_key(parent_log))
                parent_id = owner.session_id if owner and owner.session_id else None
                parent = (parent_id or parent_log.parent.name, None, "subagent")
        session = finish_session(builder, parent)
        if session is not None:
            sessions.append(session)
    return sessions


def read_files(paths: list[Path], diagnostics: Diagnostics) -> list[Session]:
    """Plan and read Muse logs directly (what the loader does once the adapter is
    registered): sniff each file, group the session trees, read each group."""
    from agent_profiler.adapters import SniffedFile
    from agent_profiler.jsonl import sniff

    sniffed = []
    for path in paths:
        try:
            sniffed.append(SniffedFile(path, sniff(path)))
        except JournalError as error:
            if _starts_like_export(path):
                raise JournalError(str(path), EXPORT_MESSAGE) from error
            raise
    groups = plan(sniffed)
    return [session for group in groups for session in read_group(group, diagnostics)]


# --------------------------------------------------------------------------- discover

# Tools that can change the workspace: a repeated call after one of these is not a repeat.
MUTATING_TOOLS = frozenset(
    {"bash", "shell", "exec_command", "edit", "write", "apply_patch", "write_file", "edit_file"}
)
# A request's lanes (muse_lanes.py): the harness's own split of what it sent.
NATIVE_COMPOSITION = ("request lanes",)


def locate(env: Mapping[str, str]) -> Iterator[Located]:
    """`${XDG_DATA_HOME:-~/.local/share}/muse/sessions/YYYY/MM/DD/<id>/session.jsonl`;
    subagent logs are read with their session."""
    from agent_profiler.adapters import locating, walk

    root = locating.data_home(env) / "muse" / "sessions"
    paths = (p for p in walk.matching(root, "session.jsonl") if "subagent" not in p.parts)
    yield from locating.jsonl_sessions(paths, head_facts)


def head_facts(head: list[object]) -> tuple[str | None, int | None]:
    """The workspace (`runtime.session.metadata`'s `workspace_root`) and the first
    `recorded_at` (µs) of a Muse session's first records, a retained frame's children
    (records as JSON text) included: `discover` showed neither."""
    import orjson

    project: str | None = None
    start: int | None = None
    for value in head:
        if not isinstance(value, dict):
            continue
        records: list[object] = [value]
        children = value.get("children")
        for child in children if isinstance(children, list) else ():
            text = child.get("record_json") if isinstance(child, dict) else None
            if isinstance(text, str):
                try:
                    records.append(orjson.loads(text))
                except orjson.JSONDecodeError:
                    continue
        for record in records:
            if not isinstance(record, dict):
                continue
            at = record.get("recorded_at")
            if start is None and type(at) is int and 0 < at < 2**63 // 1000:
                start = at * 1000
            payload = record.get("payload")
            inner = payload.get("record") if isinstance(payload, dict) else None
            root = inner.get("workspace_root") if isinstance(inner, dict) else None
            if project is None and isinstance(root, str):
                project = root
    return project, start
