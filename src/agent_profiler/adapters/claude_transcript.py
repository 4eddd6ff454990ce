"""Claude Code: one transcript file read record by record (`transcript_lines`, which the
one pass, stream/claude.py, reads along; `read_transcript` runs it through) into
builders keyed by thread: "" for the file's own, agentId for sidechain records of
another agent found in it. What each record means is `claude_session`'s; which files
form a session is `claude_code`'s."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from agent_profiler.adapters.common import believed_times, journal_clock, text_field
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.jsonl import LineSkip, read_jsonl
from agent_profiler.model import MID_CONVERSATION

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterable, Sequence

    from agent_profiler.adapters.claude_context import ContextCommandFailure, NativeSnapshot
    from agent_profiler.adapters.claude_session import SessionBuilder
    from agent_profiler.attribution import ContextLog
    from agent_profiler.scan import Told

_UNSEEN = object()
_MESSAGE = b'"message":'  # a key wherever it is in a line: quotes in a string are escaped


@functools.cache
def _skipped_names() -> dict[str, str]:
    """The skip counter's name of each record type read no further (`claude:progress`:
    most of a long transcript's records), made once."""
    from agent_profiler.adapters.claude_records import RECORD_TYPES

    return {kind: f"claude:{kind}" for kind, known in RECORD_TYPES.items() if not known.read}


@functools.cache
def _timed_names() -> frozenset[str]:
    """The skip counters of the record types read no further whose time is the session's
    (claude_records.TIMED: a hook or tool running, a prompt queued): the span covers them."""
    from agent_profiler.adapters.claude_records import TIMED

    return frozenset(f"claude:{kind}" for kind in TIMED)


def read_transcript(
    path: Path, diagnostics: Diagnostics, *, label: str | None = None
) -> dict[str, SessionBuilder]:
    """Read one transcript file into builders keyed by thread: "" for the file's own
    thread, agentId for sidechain records of another agent found in it."""
    reading = Reading()
    for _ in transcript_lines(path, diagnostics, reading, label=label):
        pass
    return reading.builders


class Reading:
    """What one transcript's reading holds beside its lines (`transcript_lines` fills it):
    its builders by thread, the log each is made with (`new_log`: a ContextLog unless
    the one pass gives its own), and the first record read no further whose time is the
    session's, with the time it was judged against (the span covers it)."""

    __slots__ = ("builders", "first", "first_near", "main_key", "new_log")

    def __init__(self, new_log: Callable[[], ContextLog] | None = None) -> None:
        self.builders: dict[str, SessionBuilder] = {}
        self.new_log = new_log
        self.main_key: str | None = None
        self.first: dict[str, Any] | None = None
        self.first_near: int | None = None


def progress_skip(told: Told | None = None) -> LineSkip:
    """The byte test a transcript's lines are read with (`transcript_lines`), as it is
    when the reading starts: its progress records taken unparsed, but for one holding a
    `message`. A one pass's export tells its reading helper each line's verdict by it
    (stream/forked.py)."""
    return LineSkip("progress", "sessionId", unless=(_MESSAGE,), told=told)


def transcript_lines(
    path: Path, diagnostics: Diagnostics, reading: Reading, *, label: str | None = None
) -> Generator[dict[str, Any]]:
    """Each record of the transcript at `path` read into `reading`'s builders; each one
    read further than a count (not progress, not a file-history snapshot) is yielded just
    before it is read (the one pass, stream/claude.py, reads along: it sees the record,
    and at the next one what it did; `read_transcript` runs it through); once the last is
    read, what only the end knows is set (a /context run concluded by the end, the span's
    outer times, the facts)."""
    from agent_profiler.adapters.claude_attachments import (
        on_attachment,
        on_content_replacement,
        on_voice_talk,
    )
    from agent_profiler.adapters.claude_code import _on_api_error, api_error_facts
    from agent_profiler.adapters.claude_compaction import on_compact_boundary, on_microcompact
    from agent_profiler.adapters.claude_content import on_local_command
    from agent_profiler.adapters.claude_context import (
        ContextCommandFailure,
        ContextCommandTracker,
    )
    from agent_profiler.adapters.claude_native import on_native_context
    from agent_profiler.adapters.claude_records import RECORD_TYPES, SYSTEM_SUBTYPES
    from agent_profiler.adapters.claude_session import SessionBuilder
    from agent_profiler.adapters.claude_told import new_told

    skipped_names, timed = _skipped_names(), _timed_names()
    source = label or str(path)
    builders = reading.builders
    new_log = reading.new_log
    clock = journal_clock(path, diagnostics, source)
    main_key: str | None = None
    forks: list[dict[str, Any]] = []  # fork-context-ref records (`_inherited`)
    commands = ContextCommandTracker()
    # The parent of the file's first record while no record of the file is that parent: a
    # journal that starts mid-conversation (its first turns in another file, or lost).
    opening: object = _UNSEEN

    def native(results: Sequence[NativeSnapshot | ContextCommandFailure]) -> None:
        # /context is typed in the main thread: its runs belong to the file's own session.
        owner = builders.get(main_key or "")
        for result in results:
            if isinstance(result, ContextCommandFailure):
                diagnostics.warn(source, result.line, "context-command", result.reason)
            elif owner is not None:
                on_native_context(owner, result, clock.last or 0)

    skipped = diagnostics.skipped
    # The first record read no further whose time is the session's (with what the clock
    # judged it against there), and the last record of each kind read no further: their
    # times are parsed once, at the end (progress records are most of a transcript).
    first: dict[str, Any] | None = None
    first_near: int | None = None
    last: dict[str, dict[str, Any] | bytes] = {}
    # Progress records are read as bytes, unparsed, where they are counted and nothing else
    # (`LineSkip`): not while the span's first time is not known or a /context run awaits
    # its output (`unparsed.active`), nor one with a `message` (the /context tracker reads
    # any record's: `ignores`), nor one that may be the first record's parent (its uuid).
    # The tool calls' measures are worked out by the helper that runs the test, if one
    # does (claude_told.py).
    unparsed = progress_skip(new_told())
    progress_name = skipped_names["progress"]
    # The progress records read as bytes are counted and the last one kept in locals, put
    # in `skipped` and `last` when the reading ends or is closed (the one pass may stop
    # early): a subscript of the Counter and of `last` was most of what such a line cost.
    progress_lines = 0
    last_progress: bytes | None = None
    for line, value in read_jsonl(path, diagnostics, unparsed):
        if value.__class__ is bytes:
            progress_lines += 1
            last_progress = value  # (its bytes: parsed at the end, `_time_of`)
            continue
        if not isinstance(value, dict):
            diagnostics.reject(source, line, "record is not a JSON object")
            continue
        if opening is not None:  # (nearly every file: None from its first record on)
            if opening is _UNSEEN:
                if "parentUuid" in value:
                    opening = value["parentUuid"]  # the first record's parent (None: a root)
                    if opening is not None:  # looked for in the progress records' bytes too
                        unparsed.unless = (_MESSAGE, b'"uuid":' + orjson.dumps(opening))
            elif value.get("uuid") == opening:
                opening = None  # its parent is in the file after all
                unparsed.unless = (_MESSAGE,)
        kind = value.get("type")
        if not isinstance(kind, str):  # text_field, inline: every record passes here
            kind = None
        skip = skipped_names.get(kind) if kind is not None else None
        if skip is not None:
            # Most records of a long transcript (progress, file-history snapshots): counted
            # as skipped, and the /context tracker mostly has nothing to see in them.
            skipped[skip] += 1
            if not commands.ignores(value) and (concluded := commands.feed(value, line)):
                native(concluded)
            last[skip] = value
            if skip == progress_name:
                last_progress = None  # (a progress record parsed: the last one so far)
            if first is None and skip in timed:
                first, first_near = value, clock.neighbour()
                reading.first, reading.first_near = first, first_near
            unparsed.active = opening is not _UNSEEN and first is not None and commands.idle()
            continue
        try:
            yield value  # (a record read further, before it is: the pass checks what it may do)
        except GeneratorExit:  # closed: what was read is counted
            if progress_lines:
                skipped[progress_name] += progress_lines
            raise
        concluded = commands.feed(value, line)
        if concluded:
            native(concluded)
        unparsed.active = opening is not _UNSEEN and first is not None and commands.idle()
        known = RECORD_TYPES.get(kind or "")
        if known is None:
            name = f"claude:{kind}" if kind else "claude:untyped"
            diagnostics.not_recognised(name, source, line)
            continue
        if kind in _OWN_THREADS:  # (2.1.3xx: written to the thread's own file, no time)
            if kind == "fork-context-ref":
                forks.append(value)  # the file's own thread: known by its end
            elif (owner := builders.get(main_key or "")) is not None:
                on_content_replacement(owner, value, line)
            else:  # before any message of the file: no result to replace
                diagnostics.note(f"claude:{kind} before any message")
            continue
        session_id = value.get("sessionId")
        if not isinstance(session_id, str):
            diagnostics.reject(source, line, "record without sessionId")
            continue
        agent = value.get("agentId") if value.get("isSidechain") else None
        key = agent if isinstance(agent, str) else ""
        if main_key is None:
            main_key = reading.main_key = key
        builder = builders.get(key)
        if builder is None:
            builder = SessionBuilder(
                f"{session_id}/{key}" if key else session_id,
                source,
                diagnostics,
                new_log() if new_log is not None else None,
            )
            builder.told = unparsed.told
            if key:
                builder.parent_session = session_id
                builder.agent_id = key
                builder.child_role = "subagent"
            builders[key] = builder
        ts = clock.time(value, line)
        builder.records += 1
        # builder.touch(ts), inline: every record read
        if builder.start_ns is None or ts < builder.start_ns:
            builder.start_ns = ts
        if builder.end_ns is None or ts > builder.end_ns:
            builder.end_ns = ts
        if not (builder.version and builder.project):  # else on_meta has nothing to learn
            builder.on_meta(value)
        if kind == "user":
            builder.on_user(value, ts, line)
        elif kind == "assistant":
            builder.on_assistant(value, ts, line, source)
        elif kind == "attachment":
            on_attachment(builder, value, ts, line)
        else:
            subtype = text_field(value, "subtype")
            if subtype == "compact_boundary":
                on_compact_boundary(builder, value, ts)
            elif subtype == "microcompact_boundary":
                on_microcompact(builder, value, ts)
            elif subtype == "api_error":
                _on_api_error(builder, value, ts)
            elif subtype == "local_command":
                on_local_command(builder, value, line)
            elif subtype == "voice_call_talk":  # a user turn, stored as `system` (2.1.3xx)
                on_voice_talk(builder, value, line)
            elif subtype in SYSTEM_SUBTYPES:
                diagnostics.skip(f"claude:system/{subtype}")
            else:
                diagnostics.not_recognised(f"claude:system/{subtype}", source, line)
    if progress_lines:
        skipped[progress_name] += progress_lines
    if last_progress is not None:
        last[progress_name] = last_progress
    native(commands.finish())
    if not clock.seen_timestamp:
        _synthetic(builders.values())
    elif first is not None and (main := builders.get(main_key or "")) is not None:
        # A dated session's span covers the records it reads no further: a SessionStart
        # hook run minutes before the first prompt, Stop hooks after the last record.
        # Each time is judged by the clock's outlier rule, against its neighbour.
        near = clock.neighbour()
        ends = [(_time_of(last[name]), near) for name in timed if name in last]
        main.outer += believed_times((first.get("timestamp"), first_near), *ends)
    if isinstance(opening, str) and (main := builders.get(main_key or "")) is not None:
        main.facts.append((MID_CONVERSATION, "its first record's parent is not in the journal"))
    if forks and (main := builders.get(main_key or "")) is not None:
        _inherited(main, forks)
    for builder in builders.values():
        api_error_facts(builder)


# Records that name no thread of their own (no `isSidechain`): the file's own thread's.
_OWN_THREADS = frozenset({"content-replacement", "fork-context-ref"})


def _inherited(main: SessionBuilder, forks: list[dict[str, Any]]) -> None:
    """A forked agent's file starts from its parent's first `contextLength` messages, sent
    before its own and not written in it (2.1.3xx `fork-context-ref`): context no count
    of ours holds, said as `unmeasured` and as a fact."""
    for fork in forks:
        main.unmeasured["inherited-context"] += 1
        length = fork.get("contextLength")
        if isinstance(length, int) and not isinstance(length, bool) and length > 0:
            main.facts.append(("inherited_messages", length))


def _time_of(record: dict[str, Any] | bytes) -> object:
    """A record's `timestamp`, of a record read as its bytes (`LineSkip`) too: parsed
    here, once; a line that is no JSON has none (it was never checked)."""
    if isinstance(record, bytes):
        try:
            record = orjson.loads(record)
        except ValueError:
            return None
        if not isinstance(record, dict):
            return None
    return record.get("timestamp")


def _synthetic(builders: Iterable[SessionBuilder]) -> None:
    """A transcript without a single readable time (each record a `bad-timestamp`): its
    records are 1 ms apart, ending at the file's modification time. Said on the profile
    (`clock = synthetic`), in the summary and the report, as for stream-json: these times
    are made up, and its durations are not the session's."""
    for builder in builders:
        builder.facts += [("clock", "synthetic"), ("clock_durations", "none")]
        builder.timing = (
            "synthetic: no timestamps in the journal; its records are placed 1 ms apart, "
            "the last at the file's modification time"
        )
