"""Claude Code: the adapter — detection, which files form one session, transcript reading.

Owns `~/.claude/projects/…/<session>.jsonl` transcripts and how subagent and compaction
files link to their session (FORMATS.md §1–2); a transcript is read record by record by
`claude_transcript` (what each record means: `claude_session`), `-p` stream-json output
by `claude_stream`.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from agent_profiler.adapters import walk

# A transcript's reading, record by record, is claude_transcript's (a light module: what
# it reads with is imported when it reads).
from agent_profiler.adapters.claude_transcript import read_transcript as read_transcript
from agent_profiler.adapters.common import text_field
from agent_profiler.diagnostics import Diagnostics, journal_name
from agent_profiler.errors import JournalError
from agent_profiler.model import Harness, Marker, Response, Session

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from agent_profiler.adapters import JournalGroup, Located, SniffedFile
    from agent_profiler.adapters.claude_session import SessionBuilder

# The modules that read a transcript are imported by the functions that read one: detection
# runs this module's `detect` on every journal first, and a Codex or Pi export paid for
# importing them (76M instructions, 5% of reading a 5 MB Pi journal).

HARNESS = Harness.CLAUDE_CODE


# --------------------------------------------------------------------------- detection


def detect(values: list[object]) -> bool:
    """True when the first records look like Claude Code (transcript or stream-json)."""
    for value in values:
        if not isinstance(value, dict):
            continue
        if "sessionId" in value and text_field(value, "type") in {
            "user",
            "assistant",
            "system",
            "progress",
            "summary",
            "file-history-snapshot",
            "queue-operation",
            "attachment",
            # What a transcript may hold alone while its first turn is being written (a
            # resumed session's pointer, the UI's titles, tags and modes): its own, named
            # as such, not "not a journal of a supported harness".
            "last-prompt",
            "pr-link",
            "ai-title",
            "custom-title",
            "agent-name",
            "agent-setting",
            "tag",
            "mode",
            "permission-mode",
        }:
            return True
        if text_field(value, "type") == "system" and text_field(value, "subtype") in {
            "init",
            "hook_started",
            "hook_response",
        }:
            return "session_id" in value
        if (
            text_field(value, "type") in {"assistant", "user"}
            and "session_id" in value
            and isinstance(value.get("message"), dict)
        ):
            return True
        if text_field(value, "type") == "summary" and "leafUuid" in value:
            return True
        if text_field(value, "type") == "file-history-snapshot" and "snapshot" in value:
            return True
    return False


def is_stream_json(values: list[object]) -> bool:
    return any(isinstance(v, dict) and "session_id" in v and "sessionId" not in v for v in values)


# --------------------------------------------------------------------------- file readers


def api_error_facts(builder: SessionBuilder) -> None:
    """`api_errors` and `api_errors_by_status` on the profile, from the session's markers."""
    if errors := [m for m in builder.markers if m.kind == "api_error"]:
        statuses = Counter(m.value.partition(",")[0] for m in errors)
        builder.facts.append(("api_errors", len(errors)))
        builder.facts.append(
            ("api_errors_by_status", ", ".join(f"{s}: {n}" for s, n in statuses.most_common()))
        )


def _on_api_error(builder: SessionBuilder, record: dict[str, Any], ts: int) -> None:
    """A failed API call Claude Code retries (`system/api_error`): an Events instant saying
    its status, the API's error type and the attempt, never the error's text (it may quote
    the request)."""
    error = record.get("error")
    error = error if isinstance(error, dict) else {}
    status = error.get("status")
    said = str(status) if type(status) is int else "no status"
    try:  # the API's own body, as text: {"type":"error","error":{"type":"overloaded_error",…}}
        body = orjson.loads(error.get("message", "").partition(" ")[2] or b"null")
        kind = body["error"]["type"]
    except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError):
        kind = None
    if isinstance(kind, str) and kind.isidentifier():
        said += f" {kind}"
    attempt, most = record.get("retryAttempt"), record.get("maxRetries")
    if type(attempt) is int and type(most) is int:
        said += f", attempt {attempt} of {most}"
    builder.markers.append(Marker(ts, "api_error", said))


def on_api_retry(builder: SessionBuilder, frame: dict[str, Any], ts: int) -> None:
    """A stream-json run's failed API call that Claude Code retries (`system/api_retry`:
    `error_status`, `error` the error's kind, `attempt`, `max_retries`): the same Events
    instant as a transcript's `system/api_error`."""
    status = frame.get("error_status")
    said = str(status) if type(status) is int else "no status"
    kind = frame.get("error")
    if isinstance(kind, str) and kind.replace("-", "_").isidentifier():
        said += f" {kind}"
    attempt, most = frame.get("attempt"), frame.get("max_retries")
    if type(attempt) is int and type(most) is int:
        said += f", attempt {attempt} of {most}"
    builder.markers.append(Marker(ts, "api_error", said))


# --------------------------------------------------------------------------- plan


def plan(files: list[SniffedFile]) -> list[JournalGroup]:
    """One group per main transcript with its subagent files; one per stream-json file;
    subagent files whose session is not given are read on their own (orphans)."""
    from agent_profiler.adapters import JournalGroup

    groups: dict[str, tuple[Path | None, list[Path], str]] = {}
    orphans: list[tuple[str, Path]] = []
    order: list[str] = []
    # The subagent files each transcript's folder holds (`<name>/subagents/`), taken by its
    # group whatever the session ids inside: a file given is read there, once. A transcript
    # rewritten with another session (its name reused) held a folder whose files, given, were
    # also keyed by their own session id: read twice, the subagent `#2`.
    taken: set[Path] = set()
    for file in files:
        if is_stream_json(file.head):
            key = f"stream:{file.path}"
            groups[key] = (file.path, [], "stream-json")
            order.append(key)
            continue
        session_id, sidechain = _identity(file.head)
        if sidechain or file.path.name.startswith("agent-"):
            orphans.append((session_id or str(file.path), file.path))
            continue
        key = session_id or str(file.path)
        if key in groups:
            # Another file with the same sessionId (a copy, a resumed session): read it
            # too, as its own group; its subagents attach to the first one.
            key = f"{key}@{file.path}"
        found = subagent_files(file.path)
        taken.update(found)
        groups[key] = (file.path, found, "")
        order.append(key)
    # Each group's extras as a set beside the list (which keeps their order): a folder of
    # thousands of subagent files given looked each one up in the list of all the others.
    members: dict[str, set[Path]] = {}
    for session_id, path in orphans:
        if path in taken:
            continue  # in the group of the transcript whose folder holds it
        if session_id in groups and groups[session_id][2] == "":
            extras = groups[session_id][1]
            known = members.get(session_id)
            if known is None:
                known = members[session_id] = set(extras)
            if path not in known:
                known.add(path)
                extras.append(path)
        else:
            key = f"orphan:{path}"
            groups[key] = (None, [path], "")
            order.append(key)
    given = {file.path for file in files}
    return [
        JournalGroup(HARNESS, main, tuple(extras), variant or _found(extras, given))
        for main, extras, variant in (groups[k] for k in order)
    ]


_FOUND = "found:"  # a group's variant: the indices of its extras found, not given (`plan`)


def _found(extras: list[Path], given: set[Path]) -> str:
    """The variant naming the subagent files only found beside their session (not given:
    one that cannot be read is a warning, not the user's error), "" when all were given."""
    found = [str(i) for i, path in enumerate(extras) if path not in given]
    return _FOUND + ",".join(found) if found else ""


def _identity(head: list[object]) -> tuple[str | None, bool]:
    for value in head:
        if isinstance(value, dict) and isinstance(value.get("sessionId"), str):
            return value["sessionId"], bool(value.get("isSidechain"))
    return None, False


def read(group: JournalGroup, diagnostics: Diagnostics) -> list[Session]:
    found = group.variant.removeprefix(_FOUND).split(",") if _FOUND in group.variant else []
    return read_group(
        group.main,
        list(group.extras),
        diagnostics,
        stream_json=group.variant == "stream-json",
        beside={group.extras[int(i)] for i in found},
    )


# --------------------------------------------------------------------------- groups


def subagent_files(main: Path) -> list[Path]:
    """Files that belong to a main transcript: `<session>/subagents/**/agent-*.jsonl`."""
    stem = main.name.removesuffix(".gz").removesuffix(".jsonl")
    folder = main.parent / stem / "subagents"
    if not folder.is_dir():
        return []
    return sorted(p for p in walk.matching(folder, "agent-*.jsonl*") if p.is_file())


def _sidecar(path: Path) -> tuple[str | None, str | None]:
    """(spawning tool call, parent agent) from `agent-<id>.meta.json`, when present."""
    name = path.name.removesuffix(".gz").removesuffix(".jsonl")
    meta = path.with_name(f"{name}.meta.json")
    try:
        data = orjson.loads(meta.read_bytes())
    except (OSError, ValueError):
        return None, None
    if not isinstance(data, dict):
        return None, None
    call, parent = data.get("toolUseId"), data.get("parentAgentId")
    return (
        call if isinstance(call, str) else None,
        parent if isinstance(parent, str) and parent else None,
    )


def read_group(
    main: Path | None,
    extras: list[Path],
    diagnostics: Diagnostics,
    stream_json: bool = False,
    beside: set[Path] | frozenset[Path] = frozenset(),
) -> list[Session]:
    """Read a main journal and the subagent/compaction files attached to it. One of
    those that cannot be read is the user's error when given (`Diagnostics.failed`: its
    own `error:` line, the rest read), a warning when only found `beside` its session."""
    if stream_json:
        from agent_profiler.adapters.claude_stream import read_stream_json

        assert main is not None
        return read_stream_json(main, diagnostics)
    builders: dict[str, SessionBuilder] = {}
    main_builder: SessionBuilder | None = None
    if main is not None:
        found = read_transcript(main, diagnostics)
        for key, builder in found.items():
            builders[builder.session_id] = builder
            if key == "":
                main_builder = builder
    compaction_requests: list[SessionBuilder] = []
    for path in extras:
        try:
            found = read_transcript(path, diagnostics)
        except JournalError as error:
            if main is None and len(extras) == 1:
                # A subagent file given without its session is its group's only file: one
                # that cannot be read is an error, as a main transcript's is (a warning was
                # followed by "no session records" of the same file, and exit 0).
                raise
            if path in beside:
                diagnostics.warn(error.path, error.line, "unreadable", error.message)
            else:
                diagnostics.failed(error)
            continue
        call, parent_agent = _sidecar(path)
        for builder in found.values():
            if "acompact" in path.name or (builder.agent_id or "").startswith("acompact"):
                compaction_requests.append(builder)
                continue
            if call:  # the builder was made from this file just now: it has no call yet
                builder.parent_call_id = call
            if parent_agent and builder.parent_session is not None:
                # A nested agent: its parent is another subagent of the same session.
                builder.parent_session = f"{builder.parent_session}/{parent_agent}"
            if builder.session_id in builders:
                builders[builder.session_id].sources.append(str(path))
                continue
            builders[builder.session_id] = builder
    _link_subagents(builders)
    for request in compaction_requests:
        owner = request.parent_session or request.session_id
        if main_builder is not None and owner == main_builder.session_id:
            _attach_compaction_request(main_builder, request)
        else:  # given without its session: said for what it is (the loader says no more)
            # (or in the folder of a transcript rewritten with another session since: not
            # that session's compaction)
            diagnostics.warn(
                request.sources[0],
                None,
                "no-session",
                "the compaction request of session "
                f"{journal_name(request.parent_session or request.session_id)}: pass the "
                "session's file (its request is shown on the session's compaction)",
            )
    sessions = [s for b in builders.values() if (s := b.finish()) is not None]
    return sessions


def _link_subagents(builders: dict[str, SessionBuilder]) -> None:
    by_parent_agents: dict[str, str] = {}
    final_usage: dict[str, dict[str, object]] = {}
    for builder in builders.values():
        for agent_id, call_id in builder.agent_results.items():
            by_parent_agents[f"{builder.session_id}/{agent_id}"] = call_id
        for agent_id, agent_usage in builder.agent_usage.items():
            final_usage[f"{builder.session_id}/{agent_id}"] = agent_usage
    for builder in builders.values():
        if builder.parent_session is None:
            continue
        if (last_usage := final_usage.get(builder.session_id)) is not None:
            _settle_last_usage(builder, last_usage)
        call = builder.parent_call_id or by_parent_agents.get(builder.session_id)
        builder.parent_call_id = call
        parent = builders.get(builder.parent_session)
        if parent is None:
            continue
        if call and call in parent.tools:
            parent.tools[call].child_session = builder.session_id
        parent.cover(builder)
    # A subagent whose file was not read keeps its name on the launching call (the id it
    # has when read: `<session>/<agentId>`); links.with_unread_children counts it.
    for builder in builders.values():
        root = builder.session_id.partition("/")[0]
        for agent_id, call_id in builder.agent_results.items():
            tool = builder.tools.get(call_id)
            if tool is not None and tool.child_session is None:
                child = f"{root}/{agent_id}"
                if child not in builders:
                    tool.child_session = child


def _settle_last_usage(builder: SessionBuilder, usage: dict[str, object]) -> None:
    """The parent's `toolUseResult.usage` of a subagent is its last request's final usage
    (FORMATS §1.4): before 2.1.16x the subagent's own records held a streaming output count
    (3 where 997 was billed). Merged into that request when its input side is the same."""
    requests = [d for d in builder.responses.values() if d.is_request]
    if not requests:
        return
    last = max(requests, key=lambda d: d.end_ns)
    same = all(
        usage.get(key) == last.usage.get(key, 0)
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    if same:
        last.merge_usage(usage)
        last.final_usage = True


def _attach_compaction_request(main: SessionBuilder, request: SessionBuilder) -> None:
    """The `agent-acompact-*` file is the summarisation request of a compaction."""
    session = request.finish()
    if session is None or not session.responses or not main.compactions:
        return
    response = session.responses[-1]
    nearest = min(main.compactions, key=lambda c: abs(c.end_ns - response.end_ns))
    # The file replays old reminders first; the request starts at its own trigger.
    start = response.start_ns
    nearest.request = Response(
        id=response.id,
        start_ns=start,
        end_ns=response.end_ns,
        model=response.model,
        usage=response.usage,
        output_tokens_reliable=response.output_tokens_reliable,
        price_context=response.price_context,
    )
    if start < nearest.start_ns:
        nearest.start_ns = start
        nearest.timing = "summarisation request (agent-acompact file) → boundary record"
    main.sources.extend(request.sources)


# --------------------------------------------------------------------------- discover

# Tools that can change the workspace: a repeated call after one of these is not a repeat.
MUTATING_TOOLS = frozenset({"Bash", "Edit", "MultiEdit", "NotebookEdit", "Write"})
# Claude Code's own composition screens, parsed where a session holds them.
NATIVE_COMPOSITION = ("/context",)


def locate(env: Mapping[str, str]) -> Iterator[Located]:
    """`$CLAUDE_CONFIG_DIR`, else `~/.claude`: `projects/<project>/<session>.jsonl`. Subagent
    files are read with their session, so they are not listed on their own."""
    from agent_profiler.adapters import locating

    root = locating.folder(env, "CLAUDE_CONFIG_DIR", ".claude") / "projects"
    paths = (
        p
        for pattern in ("*.jsonl", "*.jsonl.gz")
        for p in walk.matching(root, pattern, 1)
        if not p.name.startswith("agent-")
    )
    yield from locating.jsonl_sessions(paths)
