"""What each OpenCode message and part means for one session: the record tables (every
message role and part type, read or skipped on purpose), the token usage of a step, and
the `SessionBuilder` that replays one stored session (`opencode_storage.StoredSession`)
into a model `Session` (FORMATS-gemini-opencode.md §2; the format facts it relies on are
listed in `opencode.py`).

Separate from `opencode.py`, which finds and groups the files (detection, the database
before the storage folder, linking children to their `task` calls, `locate`): this
module is one session's meaning, that one is which sessions are read together."""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Iterator, Mapping
from dataclasses import field
from pathlib import Path
from typing import Any

import orjson

from agent_profiler.adapters import opencode_storage as storage
from agent_profiler.adapters.common import (
    MS,
    Clock,
    assumed_model_window,
    json_text,
    preview,
    recorded_usd,
    reference_time,
    text_field,
    warn_bad_usage,
    within_limits,
)
from agent_profiler.adapters.drafts import ToolArguments, ToolDraft
from agent_profiler.adapters.messages_draft import MessagesDraft
from agent_profiler.adapters.opencode_records import (
    SENT_WHEN_FAILED,
    bad_tokens,
    failed,
    not_sent_again,
    usage_of,
)
from agent_profiler.attribution import redacted_placeholders
from agent_profiler.console import counted
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.model import (
    Category,
    Compaction,
    Fact,
    Harness,
    Marker,
    Response,
    Session,
    SourceKind,
)
from agent_profiler.records import record

HARNESS = Harness.OPENCODE
# Every message role and part type this adapter knows, read (into which category, and why)
# or skipped on purpose (why not model input); anything else is "not recognised (not
# read)" with the first message it was met in (issue 28). Source: OpenCode `MessageV2`.
READ, SKIPPED = "read", "skipped on purpose"
MESSAGE_ROLES: dict[str, tuple[str, str]] = {
    "user": (READ, "its parts: the prompt, attached files, compaction requests"),
    "assistant": (READ, "its parts: text, reasoning, tool calls; tokens: a request per step"),
}
PART_TYPES: dict[str, tuple[str, str]] = {
    "text": (
        READ,
        "user → User prompts (synthetic: attached file or harness message); "
        "assistant → Assistant history",
    ),
    "reasoning": (READ, "reasoning text → Assistant history; opaque: listed as unmeasured"),
    "tool": (
        READ,
        "a tool call (arguments → Assistant) and its output → Tool results "
        "(once OpenCode pruned it, `time.compacted`: the placeholder it sends)",
    ),
    "file": (READ, "an attached file or image: listed as unmeasured (file-part)"),
    "compaction": (READ, "a compaction request: the next summary replaces the context"),
    "patch": (READ, "the files a step changed: a marker (not model input)"),
    "retry": (READ, "a retried request: a marker (not model input)"),
    "agent": (READ, "an @agent mention: noted; the prompt text holds it"),
    "subtask": (READ, "a subtask request: noted; the child session holds its work"),
    "step-start": (READ, "a step (one request) starts"),
    "step-finish": (READ, "a step ends: its tokens are the request's usage"),
    "snapshot": (SKIPPED, "a file-tree snapshot id for undo, never sent"),
}
_CONTEXT_PARTS = frozenset({"text", "reasoning", "tool", "file"})
_BOOKKEEPING_PARTS = frozenset({"step-start", "step-finish", "snapshot", "patch"})
_TRAILING_BOOKKEEPING = frozenset({"snapshot", "patch"})
# What OpenCode sends instead of a completed tool's output once its prune marked the part
# (`state.time.compacted`): `MessageV2.toModelMessages`; the call's `input` is still sent.
PRUNED_OUTPUT = "[Old tool result content cleared]"
PRUNED_LABEL = "Tool result (pruned by OpenCode)"


def _ns(value: object) -> int | None:
    """Epoch milliseconds → nanoseconds (every OpenCode time is epoch ms). A zeroed clock
    (0) is a time, the Unix epoch: the outlier rule judges it (issue 15.4)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 2**53:
        return None
    return int(value * MS)


def _time(record: Mapping[str, Any], key: str) -> int | None:
    time = record.get("time")
    return _ns(time.get(key)) if isinstance(time, dict) else None


@record
class _Pending:
    """A compaction asked for (the user `compaction` part), until its summary comes."""

    message_id: str
    start_ns: int
    auto: bool
    tail_start: str | None


@record
class _Prune:
    """A tool output OpenCode pruned (`SessionCompaction.prune`, after a turn): from the
    first request made at or after `at_ns` on, its result is the placeholder."""

    at_ns: int  # the part's `time.compacted` (0 when it is no time: the next request)
    call_id: str


@record
class _Call(ToolDraft):
    """`end_ns` is the part's end (its start while it runs); a call is complete once its
    state is `completed` or `error`."""

    finished: bool = False


@record
class SessionBuilder(MessagesDraft):
    stored: storage.StoredSession
    diagnostics: Diagnostics
    tools: list[_Call] = field(default_factory=list)
    provider: str | None = None  # of the first request with a reported size
    known_models: set[str] = field(default_factory=set)  # those in `models`, looked up
    pending: _Pending | None = None
    # Heaps, so that a request or a compaction takes what is due without passing all the
    # rest again: the prunes not in effect yet by (time, journal order); each message id's
    # first place in `order` (a compaction's cut, by lookup), and the messages not dropped
    # yet by it (`standing`).
    prunes: list[tuple[int, int, _Prune]] = field(default_factory=list)
    position: dict[str, int] = field(default_factory=dict)
    standing: list[tuple[int, str]] = field(default_factory=list)
    pruned: int = 0  # tool results replaced by the placeholder
    patches: int = 0
    clock: Clock | None = None  # the shared outlier rule for message times, set by run()
    message_ns: int = 0  # the current message's time, as placed by the clock

    def believed(self, ts: int | None) -> int | None:
        """A part's or completion's time when the outlier rule would believe it beside its
        message's; else None (a lie must not stretch the session, issue 15.4)."""
        return ts if ts is not None and within_limits(ts, self.message_ns) else None

    @property
    def is_child(self) -> bool:
        return bool(text_field(self.stored.info, "parentID"))

    def touch(self, ts: int | None) -> None:
        if ts is None:
            return
        self.start_ns = ts if self.start_ns is None else min(self.start_ns, ts)
        self.end_ns = ts if self.end_ns is None else max(self.end_ns, ts)
        self.last_ns = ts if self.last_ns is None else max(self.last_ns, ts)

    def make_clock(self) -> Clock:
        """The shared clock: a message created far from its neighbours is warned about by
        its place in the session's messages (`messages[6] (msg_…)`: an export, a database
        and the storage have no lines) and placed just after the message before it."""
        messages = self.stored.messages
        reference = reference_time(_time(m, "created") for m, _ in messages[:3])
        created = _time(self.stored.info, "created")
        origin = created if created is not None and within_limits(created, reference) else None
        return Clock(
            self.stored.source,
            self.diagnostics,
            expect_timestamps=False,
            origin_ns=origin if origin is not None else reference,
            reference_ns=reference,
            record_name=lambda n: f"messages[{n - 1}] ({messages[n - 1][0].get('id')})",
        )

    def run(self) -> None:
        self.clock = self.make_clock()
        created = _time(self.stored.info, "created")
        if created is not None and within_limits(created, self.clock.reference_ns):
            self.touch(created)
        for index, (message, parts) in enumerate(self.stored.messages):
            message_id = str(message.get("id"))
            at = self.position.setdefault(message_id, len(self.order))
            heapq.heappush(self.standing, (at, message_id))
            self.order.append(message_id)
            raw = _time(message, "created")
            if raw is None:
                self.diagnostics.note("opencode:message-without-time")
            created = self.clock.place(raw, index + 1)
            self.message_ns = created
            self.touch(created)
            role = text_field(message, "role")
            if role == "user":
                self.on_user(message_id, message, parts, created)
            elif role == "assistant":
                self.on_assistant(message_id, message, parts, created)
            else:
                self.diagnostics.not_recognised(f"opencode:message/{role}", self.where(message_id))

    def measured(self, response: Response, window_tokens: int | None = None) -> None:
        self.apply_prunes(response.start_ns)
        MessagesDraft.measured(self, response, window_tokens)

    def compacted(self, compaction: Compaction) -> None:
        self.apply_prunes(compaction.end_ns)
        MessagesDraft.compacted(self, compaction)

    def apply_prunes(self, ts: int) -> None:
        """The outputs pruned by `ts` are the placeholder in the context observed then:
        OpenCode reads the messages afresh for every request, so a request that starts
        after the prune sends it (the part's result item is replaced, not removed: the call
        and its arguments stay in the prompt)."""
        for prune in self.due_prunes(ts):
            item_id = f"result:{prune.call_id}"
            if item_id in self.log:  # not already gone with a compaction
                self.pruned += 1
                self.log.add(
                    item_id,
                    Category.RESULTS,
                    PRUNED_OUTPUT,
                    label=PRUNED_LABEL,
                    source_id=prune.call_id,
                    source_kind=SourceKind.TOOL,
                )

    def due_prunes(self, ts: int) -> list[_Prune]:
        """The prunes in effect by `ts`, taken from those waiting, in journal order."""
        due = []
        while self.prunes and self.prunes[0][0] <= ts:
            due.append(heapq.heappop(self.prunes))
        return [prune for _, _, prune in sorted(due, key=lambda entry: entry[1])]

    def where(self, message_id: str) -> str:
        """A message's place for a diagnostic: the database or export, and the message."""
        return f"{self.stored.source} (message {message_id})"

    # -- user ----------------------------------------------------------------

    def on_user(
        self, message_id: str, message: dict[str, Any], parts: list[dict[str, Any]], ts: int
    ) -> None:
        typed: list[str] = []
        for part in parts:
            kind = text_field(part, "type") or ""
            item_id = f"{message_id}:{part.get('id')}"
            if kind == "text":
                text = text_field(part, "text") or ""
                if part.get("ignored") is True:
                    continue
                if part.get("synthetic") is True:
                    # Injected by OpenCode: an `@file` read (the call's line, then the read
                    # tool's output: `<path>…</path><type>file</type><content>…`; 2.x: a
                    # text file attached, "Attached file: <name>", opencode_v2), or the
                    # nudge after compaction.
                    read = text.startswith(("Called the ", "<path>", "Attached file: "))
                    self.add(
                        message_id,
                        item_id,
                        Category.RESULTS if read else Category.OVERHEAD,
                        text,
                        label="Attached file" if read else "Harness message",
                    )
                else:
                    typed.append(text)
                    self.add_prompt(message_id, item_id, text)
            elif kind == "file":
                self.unmeasured["file-part"] += 1
            elif kind == "compaction":
                tail = text_field(part, "tail_start_id")
                self.pending = _Pending(message_id, ts, part.get("auto") is not False, tail)
            elif kind in {"agent", "subtask"}:
                self.diagnostics.note(f"opencode:part/{kind}")
            elif kind not in _BOOKKEEPING_PARTS:
                self.diagnostics.not_recognised(f"opencode:part/{kind}", self.where(message_id))
        if typed:
            self.start_turn(
                message_id, ts, typed, "agent" if self.is_child and not self.prompts else "user"
            )

    # -- assistant -----------------------------------------------------------

    def on_assistant(
        self, message_id: str, message: dict[str, Any], parts: list[dict[str, Any]], ts: int
    ) -> None:
        steps: list[list[dict[str, Any]]] = [[]]
        for part in parts:
            steps[-1].append(part)
            if text_field(part, "type") == "step-finish":
                steps.append([])
        # What follows the last step-finish without a step-start of its own is that step's
        # bookkeeping (OpenCode writes the step's `patch` after its finish), not a new,
        # unfinished request.
        if len(steps) > 1 and all(
            text_field(p, "type") in _TRAILING_BOOKKEEPING for p in steps[-1]
        ):
            steps[-2].extend(steps.pop())
        completed = self.believed(_time(message, "completed"))
        model = text_field(message, "modelID") or ""
        provider = text_field(message, "providerID")
        error = message.get("error")
        error_name = text_field(error, "name") if isinstance(error, dict) else None
        # A 1.x summary that failed is no compaction (`filterCompacted`: `summary && finish
        # && !error`): an interrupted one left the history as it was.
        summary = (
            message.get("summary") is True or text_field(message, "agent") == "compaction"
        ) and (not failed(error) or message.get(SENT_WHEN_FAILED) is True)
        start = ts
        stepped = any(text_field(p, "type") == "step-finish" for p in parts)
        for index, step in enumerate(steps):
            finish = next((p for p in step if text_field(p, "type") == "step-finish"), None)
            # The step's own usage; the message's only when it has no step-finish at all
            # (aborted, or an old build): a trailing unfinished step has none.
            tokens = finish.get("tokens") if finish is not None else None
            if finish is None and not stepped:
                tokens = message.get("tokens")
            usage = usage_of(tokens)
            if bad := bad_tokens(tokens):  # read as 0
                where = f"message {message_id}: usage"  # one file: its first listed, as any
                warn_bad_usage(self.diagnostics, self.stored.source, None, bad, list(bad), where)
            last = index == len(steps) - 1
            end = (completed if last and completed else None) or max(
                [start, *(t for p in step for t in _part_times(p) if self.believed(t))]
            )
            response_id = message_id if len(steps) == 1 else f"{message_id}#{index + 1}"
            response = Response(
                id=response_id,
                start_ns=start,
                end_ns=max(end, start),
                model=model,
                usage=usage,
                prompt_id=self.prompt_id,
                is_error=error_name is not None and last,
                stop_reason=(text_field(finish, "reason") if finish else None)
                or (error_name if last else None),
                recorded_usd=recorded_usd(finish if finish is not None else message, "cost"),
            )
            measured = usage.prompt_tokens > 0
            # A step that finished without error but with 0 in every usage field (some
            # providers report none): a request whose size is unknown (issue 15.6), drawn as
            # a response with usage unknown. An aborted or failed one stays a failed request.
            unmetered = (
                not measured
                and finish is not None
                and not response.is_error
                and not (usage.output_tokens or usage.reasoning_tokens)
            )
            if unmetered and not summary:
                self.unmetered.append(
                    dataclasses.replace(response, usage_known=False, output_tokens_reliable=False)
                )
            elif measured and not summary:
                self.measured(response)
            elif not measured and not unmetered:
                self.failed.append(response)
            if measured:
                if not summary:  # a compaction's size before is the last request's
                    self.last_reported = usage.prompt_tokens
                if model and model not in self.known_models:
                    self.known_models.add(model)
                    self.models.append(model)
                if provider and self.provider is None:
                    self.provider = provider
            for part in step:
                requested = measured or (unmetered and not summary)
                self.on_part(message_id, part, response_id if requested else None, summary)
            self.touch(response.end_ns)
            if summary and last:
                self.on_summary(message_id, response if measured else None)
            start = response.end_ns
        if not_sent_again(message, parts):
            # Its requests were made, but what they answered is never sent again: its
            # parts leave before the next request (the calls stay on Tools).
            self.drop([message_id])

    def on_part(
        self, message_id: str, part: dict[str, Any], response_id: str | None, summary: bool
    ) -> None:
        kind = text_field(part, "type") or ""
        item_id = f"{message_id}:{part.get('id')}"
        if part.get("metadata"):
            # The opaque reasoning a provider round-trips (Copilot's `reasoningOpaque`) is
            # not measured; a checkpoint scrubbed before publication (Entire) may have cut
            # it with `REDACTED`: the journal then holds less than was sent (a label).
            try:
                metadata = orjson.dumps(part["metadata"], default=str).decode()
            except TypeError:  # nesting beyond orjson's limit: nothing to label
                metadata = ""
            self.log.redacted_placeholders += redacted_placeholders(metadata)
        if kind == "text":
            text = text_field(part, "text") or ""
            self.add_response_text(
                message_id,
                item_id,
                text,
                response_id or "",
                label="Compaction summary" if summary else "Assistant text",
                category=Category.SUMMARIES if summary else Category.ASSISTANT,
            )
        elif kind == "reasoning":
            text = text_field(part, "text") or ""
            if text and text != "REDACTED":
                self.add_response_text(
                    message_id, item_id, text, response_id or "", label="Reasoning"
                )
            elif part.get("metadata"):
                self.unmeasured["encrypted-reasoning"] += 1
            elif text:  # all of it replaced by a placeholder
                self.log.redacted_placeholders += redacted_placeholders(text)
        elif kind == "tool":
            self.on_tool(message_id, part, response_id)
        elif kind == "file":
            self.unmeasured["file-part"] += 1
        elif kind == "patch":
            self.patches += 1
            files = part.get("files")
            count = len(files) if isinstance(files, list) else 0
            self.markers.append(Marker(self.last_ns or 0, "patch", counted(count, "file")))
        elif kind == "retry":
            self.markers.append(Marker(self.last_ns or 0, "retry", str(part.get("attempt"))))
        elif kind not in _BOOKKEEPING_PARTS and kind not in {"agent", "subtask", "compaction"}:
            self.diagnostics.not_recognised(f"opencode:part/{kind}", self.where(message_id))

    def on_tool(self, message_id: str, part: dict[str, Any], response_id: str | None) -> None:
        call_id = text_field(part, "callID") or str(part.get("id"))
        name = text_field(part, "tool") or "tool"
        state = part.get("state")
        state = state if isinstance(state, dict) else {}
        status = text_field(state, "status") or ""
        arguments = state.get("input")
        output = state.get("output") if status == "completed" else state.get("error")
        result = (
            output if isinstance(output, str) else ("" if output is None else json_text(output))
        )
        start = self.believed(_time(state, "start")) or self.last_ns or 0
        end = self.believed(_time(state, "end")) or start
        self.touch(start)
        self.touch(end)
        metadata = state.get("metadata")
        child = text_field(metadata, "sessionId") if isinstance(metadata, dict) else None
        finished = status in {"completed", "error"}
        self.add_tool_call(message_id, call_id, name, arguments)
        if finished:
            self.add_tool_result(message_id, call_id, result)
        times = state.get("time")
        compacted = times.get("compacted") if isinstance(times, dict) else None
        # Set by OpenCode's prune on completed parts only; tested for JavaScript truthiness.
        if status == "completed" and compacted not in (None, False, 0, ""):
            prune = _Prune(_ns(compacted) or 0, call_id)
            heapq.heappush(self.prunes, (prune.at_ns, len(self.tools), prune))
        self.tools.append(
            _Call(
                call_id,
                name,
                start,
                response_id,
                self.prompt_id,
                ToolArguments.of(arguments),
                end_ns=end,
                is_error=status == "error",
                result_chars=len(result),
                child_session=child,
                finished=finished,
            )
        )

    def on_summary(self, message_id: str, request: Response | None) -> None:
        """The summary is in; older messages leave the prompt (the kept tail stays).
        Items leave one by one rather than through `clear()`: the journal holds the
        conversation from its first request, so the head (system prompt, tools) is
        untouched by a compaction and is not measured again."""
        pending = self.pending
        self.pending = None
        removed = self.drop(self.leaving(pending))
        end = request.end_ns if request else (self.last_ns or 0)
        compaction_id = pending.message_id if pending else f"compaction:{message_id}"
        self.compacted(
            Compaction(
                id=compaction_id,
                start_ns=pending.start_ns if pending else (request.start_ns if request else end),
                end_ns=end,
                kind="compaction",
                trigger=("auto" if pending.auto else "manual") if pending else None,
                pre_tokens=self.last_reported,
                removed_items=removed,
                request=request,
                timing="compaction request → summary completed",
            )
        )

    def leaving(self, pending: _Pending | None) -> list[str]:
        """The messages a compaction drops: each before the one asking for it (or the tail
        it keeps; all but the summary when none asked), by its id's first place (a repeated
        id, damaged input, leaves with it), taken from those not dropped yet."""
        cut = self.position[pending.message_id] if pending else len(self.order) - 1
        if pending and pending.tail_start in self.position:
            cut = min(cut, self.position[pending.tail_start])
        leaving = []
        while self.standing and self.standing[0][0] < cut:
            leaving.append(heapq.heappop(self.standing)[1])
        return leaving

    # -- result --------------------------------------------------------------

    def finish(self) -> Session | None:
        if self.start_ns is None or self.end_ns is None:
            return None
        requested = self.requested()
        tools = tuple(
            c.finish(requested, c.end_ns or c.start_ns, incomplete=not c.finished)
            for c in self.tools
        )
        info = self.stored.info
        # The file's name, not its path: ~/.local/share/opencode/… spells the user name, and
        # a default trace is promised to hold no path (issue 15.3).
        facts: list[Fact] = [("storage", Path(self.stored.source).name)]
        for key in ("title", "slug", "agent"):
            if text_field(info, key):
                facts.append((f"session_{key}", preview(info[key])))
        if self.patches:
            facts.append(("patch_parts", self.patches))
        if self.pruned:
            facts.append(("pruned_tool_results", self.pruned))
        facts += self.failures(no_reason="no usage")
        window, window_source = assumed_model_window(self.responses)  # OpenCode states none
        return Session(
            harness=HARNESS,
            session_id=self.stored.id,
            start_ns=self.start_ns,
            end_ns=self.end_ns,
            sources=(self.stored.source,),
            models=tuple(self.models),
            provider=self.provider,
            window_tokens=window,
            window_source=window_source,
            project=text_field(info, "directory"),
            harness_version=(text_field(info, "version") or "").removeprefix("v") or None,
            parent_session=text_field(info, "parentID"),
            child_role="subagent" if self.is_child else None,
            incomplete=any(t.incomplete for t in tools),
            facts=tuple(facts),
            **self.timeline(tools),
        )


def _part_times(part: dict[str, Any]) -> Iterator[int]:
    for holder in (part, part.get("state")):
        if isinstance(holder, dict):
            for key in ("start", "end"):
                ts = _time(holder, key)
                if ts is not None:
                    yield ts


# --------------------------------------------------------------------------- reading
