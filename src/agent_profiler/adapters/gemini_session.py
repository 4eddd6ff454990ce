"""What each message of one Gemini CLI recording means: the message-type table, the
context window per model, the text of a call's embedded result, and the `SessionBuilder`
that maps one replayed recording (`gemini_recording.Recording`) onto a model `Session`
(FORMATS-gemini-opencode.md §1; the format facts it relies on are listed in
`gemini_cli.py`).

Separate from `gemini_cli.py`, which detects the files, groups a session with its
subagent recordings, links each subagent to the call that ran it and locates the
sessions on this machine: this module is one recording's meaning, that one the tree."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import field
from typing import Any

from agent_profiler.adapters import gemini_compression as compression
from agent_profiler.adapters import gemini_timing as timing
from agent_profiler.adapters.common import (
    Clock,
    bad_counts,
    preview,
    reference_time,
    text_field,
    timestamp_ns,
    token_count,
    warn_bad_usage,
    within_limits,
)
from agent_profiler.adapters.drafts import ToolArguments, ToolDraft
from agent_profiler.adapters.gemini_compression import next_reported
from agent_profiler.adapters.gemini_recording import (
    Recording,
    parts,
    project_of,
    result_text,
    split_attached,
)
from agent_profiler.adapters.gemini_timing import STREAM_END, CallTime, late_calls
from agent_profiler.adapters.gemini_windows import window_for
from agent_profiler.adapters.messages_draft import MessagesDraft
from agent_profiler.console import counted
from agent_profiler.diagnostics import Diagnostics, journal_name
from agent_profiler.model import Category, Compaction, Harness, Marker, Response, Session, Usage
from agent_profiler.records import record

HARNESS = Harness.GEMINI_CLI
# Every message type a Gemini CLI recording is known to hold, read (into which category,
# and why) or skipped; another type is "not recognised (not read)" with its first place
# (issue 28). Parts of a message's content: gemini_recording.PART_KINDS.
MESSAGE_TYPES: dict[str, tuple[str, str]] = {
    "user": ("read", "text → User prompts; session context → Environment and Rules; results"),
    "gemini": ("read", "text and tool calls → Assistant history; tokens: a request"),
    "info": ("read", "a CLI notice (not model input): a marker, e.g. request cancelled"),
    "warning": ("read", "a CLI warning (not model input): a marker"),
    "error": ("read", "a CLI error (not model input): a marker, an API error a failed request"),
}
SESSION_CONTEXT = "<session_context>"
STATE_SNAPSHOT = "<state_snapshot>"  # the compression summary turn (≥0.44 history)
_LOADED_CONTEXT = re.compile(r"<loaded_context>.*?</loaded_context>", re.DOTALL)


# What the subagent runtime itself says to a subagent that ran out of turns or time, or
# stopped calling tools (local-executor's final warning, ≥0.37): a user-role message no
# one typed. Real: expenses-tracker 0.37.1 `ngzcxj`, "You have exceeded the maximum number
# of turns. You have one final chance to complete the task with a short grace period. …"
_RUNTIME_NUDGE = re.compile(r"^\s*You have [^\n]{0,80}\. You have one final chance to complete")


# --------------------------------------------------------------------------- content


# --------------------------------------------------------------------------- mapping


# A call that ran a subagent (≥0.37): its result begins "Subagent 'cli_help' finished."
_SUBAGENT_RESULT = re.compile(r"^\s*Subagent '[^'\n]*' finished")


@record
class CallDraft(ToolDraft):
    """`end_ns` is when the call completed (its request's end when that is not recorded);
    a call without an embedded result is incomplete. `launch`: the call ran a subagent
    (`resultDisplay.isSubagentProgress`, its `agentName` the call's name, or a result
    "Subagent '<name>' finished"); then `said` holds its result and `asked` its string
    arguments, the words that can name which subagent it ran (gemini_cli._names)."""

    agent_id: str | None = None
    has_result: bool = False
    launch: bool = False
    said: str = ""
    asked: tuple[str, ...] = ()
    timing: str = STREAM_END


@record
class SessionBuilder(MessagesDraft):
    """Maps one replayed recording onto the model."""

    recording: Recording
    diagnostics: Diagnostics
    calls: dict[str, CallDraft] = field(default_factory=dict)
    # A subagent's recording: no user types into it, so each of its prompts comes from the
    # agent that launched it (its task, a follow-up) or from the runtime (`harness`).
    subagent: bool = False
    # Inside a `$set.messages` checkpoint: its new turns are history (re-synced, or the
    # compressed summary), not new prompts; only a record with usage is a request.
    replaying: bool = False
    clock: Clock | None = None  # the shared outlier rule, set up by run()
    # The last `gemini` record since the last user turn: (its id if a request, its
    # request's start, its end); a later usage-less record may hold its late calls.
    before: tuple[str | None, int, int] | None = None
    # Where each message id first is in `order`, kept with it: a rewind's place by lookup.
    position: dict[str, int] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return str(self.recording.path)

    def where(self, message_id: str) -> tuple[str, int | None]:
        """A message's place for a diagnostic: its line in a JSONL log; in a JSON document,
        the file named with the message's place in its `messages` list."""
        line = self.recording.lines.get(message_id)
        name = self.recording.record_name(line) if line is not None else None
        return (f"{self.path} ({name})", None) if name else (self.path, line)

    def place_of(self, message_id: str) -> tuple[str, int | None, str]:
        """(path, line, `messages[6]: ` or "") of a message: a warning that may repeat on
        many messages (`Diagnostics.warn_each`) is listed once per file, so the file is its
        path and a document's message is named in its text."""
        line = self.recording.lines.get(message_id)
        name = self.recording.record_name(line) if line is not None else None
        return (self.path, None, f"{name}: ") if name else (self.path, line, "")

    def make_clock(self) -> Clock:
        """The shared clock (issue 15.4): a message dated far from its neighbours is warned
        about by line (JSONL) or by its index in `messages` (a document) and placed just
        after the message before it. Judged against the median of the first three times."""
        recording = self.recording
        messages = [recording.messages[v] for e, v in recording.events if e == "message"]
        reference = reference_time(timestamp_ns(m.get("timestamp")) for m in messages[:3])
        start = timestamp_ns(recording.header.get("startTime"))
        first = next(
            (ts for m in messages if (ts := timestamp_ns(m.get("timestamp"))) is not None), None
        )
        origin = next(
            (t for t in (start, first, reference) if t is not None and within_limits(t, reference)),
            None,
        )
        document = recording.record_name(1) is not None
        return Clock(
            self.path,
            self.diagnostics,
            expect_timestamps=False,
            origin_ns=origin,
            reference_ns=reference,
            record_name=(lambda line: recording.record_name(line) or "") if document else None,
        )

    def touch(self, ts: int) -> None:
        self.start_ns = ts if self.start_ns is None else min(self.start_ns, ts)
        self.end_ns = ts if self.end_ns is None else max(self.end_ns, ts)

    def time(self, message_id: str, record: Mapping[str, Any]) -> int:
        ts = timestamp_ns(record.get("timestamp"))
        if ts is None and record.get("timestamp") is not None:
            # There but no time ("never", a number): damage, said with its place.
            value = record.get("timestamp")
            shown = f"'{journal_name(value)}'" if isinstance(value, str) else journal_name(value)
            path, line, name = self.place_of(message_id)
            self.diagnostics.warn_each(
                path,
                line,
                "bad-timestamp",
                f"{name}timestamp {shown} unreadable; placed 1 ms after the message before it",
            )
        elif ts is None:
            self.diagnostics.note("gemini-cli:message-without-timestamp")
        if self.clock is None:
            self.clock = self.make_clock()
        return self.clock.place(ts, self.recording.lines.get(message_id, 0))

    # -- events --------------------------------------------------------------

    def run(self) -> None:
        header = self.recording.header
        self.clock = self.make_clock()
        ts = timestamp_ns(header.get("startTime"))
        if ts is not None and within_limits(ts, self.clock.reference_ns):
            self.touch(ts)
        for event, value in self.recording.events:
            if event == "message":
                self.on_message(value)
            elif event == "checkpoint":
                self.on_checkpoint(value)
            elif event == "rewind":
                self.on_rewind(value)

    def on_message(self, message_id: str) -> None:
        record = self.recording.messages[message_id]
        kind = text_field(record, "type") or ""
        ts = self.time(message_id, record)
        self.touch(ts)
        self.position.setdefault(message_id, len(self.order))
        self.order.append(message_id)
        if kind == "user":
            self.on_user(message_id, record, ts)
        elif kind == "gemini":
            self.on_gemini(message_id, record, ts)
        elif kind == "info":
            self.on_info(message_id, record, ts)
        elif kind in MESSAGE_TYPES:  # warning, error
            self.on_notice(message_id, kind, record, ts)
        else:
            # Not a type any Gemini CLI build is known to write: not read, which is no choice.
            self.diagnostics.not_recognised(
                f"gemini-cli:{kind or 'untyped'}", *self.where(message_id)
            )
        self.last_ns = max(ts, self.last_ns or ts)

    def on_user(self, message_id: str, record: dict[str, Any], ts: int) -> None:
        self.before = None
        texts: list[str] = []
        nudges: list[str] = []  # a subagent runtime's own words (`_RUNTIME_NUDGE`)
        inside = False  # in the block of files `@path` attached
        for index, (kind, text, call_id) in enumerate(parts(record.get("content"))):
            item_id = f"{message_id}:{index}"
            if kind == "media":
                self.unmeasured["media-part"] += 1
            elif kind == "unknown":
                self.diagnostics.not_recognised(f"gemini-cli:part/{text}", *self.where(message_id))
            elif kind == "result":
                # ≥0.44 repeats results as a user turn: the same bytes as the call's result
                # (in a history written again, the only copy: its call's record has left).
                if call_id in self.calls and f"result:{call_id}" in self.log:
                    self.diagnostics.note("gemini-cli:synthetic-result-turn")
                elif call_id in self.calls:
                    self.add_tool_result(message_id, call_id, text)
                else:
                    self.add(message_id, item_id, Category.RESULTS, text, label="Tool result")
            elif self.replaying and text.lstrip().startswith(STATE_SNAPSHOT):
                self.add(message_id, item_id, Category.SUMMARIES, text, label="Compression summary")
            elif text.lstrip().startswith(SESSION_CONTEXT):
                loaded = "".join(_LOADED_CONTEXT.findall(text))
                self.add(
                    message_id,
                    item_id,
                    Category.ENVIRONMENT,
                    _LOADED_CONTEXT.sub("", text),
                    label="Session context (environment)",
                )
                if loaded:
                    self.add(
                        message_id,
                        f"{item_id}:loaded",
                        Category.RULES,
                        loaded,
                        label="Loaded context (GEMINI.md, extensions)",
                    )
            elif self.subagent and _RUNTIME_NUDGE.match(text):
                nudges.append(text)
                self.add(message_id, item_id, Category.OVERHEAD, text, label="Runtime notice")
            else:
                # What `@path` attached is a file's text, as a read's result; not typed.
                typed, attached, inside = split_attached(text, inside)
                if attached:
                    label = "Attached file"
                    file_id = f"{item_id}:file" if typed else item_id
                    self.add(message_id, file_id, Category.RESULTS, attached, label=label)
                if typed or not attached:
                    texts.append(typed)
                    self.add_prompt(message_id, item_id, typed)
        if (texts or nudges) and not self.replaying:
            source = "harness" if nudges and not texts else "agent" if self.subagent else "user"
            self.start_turn(message_id, ts, texts or nudges, source)

    def on_gemini(self, message_id: str, record: dict[str, Any], ts: int) -> None:
        model = text_field(record, "model") or ""
        tokens = record.get("tokens")
        if tokens is not None and not isinstance(tokens, dict):  # a list, a number: no usage
            path, line, name = self.place_of(message_id)
            kind = type(tokens).__name__
            self.diagnostics.warn_each(
                path,
                line,
                "bad-usage",
                f"{name}tokens is no object of counts (a {kind}); read as 0",
            )
        tokens = tokens if isinstance(tokens, dict) else {}
        if tokens and (bad := bad_counts(tokens)):  # each read as 0: said, with its place
            path, line, name = self.place_of(message_id)
            warn_bad_usage(self.diagnostics, path, line, tokens, bad, f"{name}tokens")
        # `input` is promptTokenCount: the whole prompt, cached tokens INCLUDED.
        prompt, cached, output, thoughts, tool = (
            token_count(tokens.get(k)) for k in ("input", "cached", "output", "thoughts", "tool")
        )
        start = self.last_ns if self.last_ns is not None and self.last_ns <= ts else ts
        thought_times = [
            t
            for t in (timestamp_ns(th.get("timestamp")) for th in _dicts(record.get("thoughts")))
            if t is not None and t <= ts and within_limits(ts, t)  # a lying one is left out
        ]
        start = min([start, *thought_times])
        calls = _dicts(record.get("toolCalls"))
        if (
            not self.replaying
            and self.before
            and late_calls(record, calls, (self.before[1], self.before[2]))
        ):
            # The calls of the response before, written after a notice: no request.
            owner, _, end = self.before
            self.diagnostics.note("gemini-cli:late-call-record")
            for index, call in enumerate(calls):
                self.on_call(message_id, index, call, ts, owner, CallTime(end))
            return
        times = timing.plan(calls, start, ts) if not self.replaying else None
        response = Response(
            id=message_id,
            start_ns=start,
            end_ns=times.end_ns if times else ts,
            model=model,
            usage=Usage(
                prompt_tokens=prompt,
                input_tokens=prompt,  # Gemini's own meaning, as for Codex: cached included
                # Thinking is billed as output but not inside `output` (candidatesTokenCount):
                # added, so output means the whole completion, as for the other harnesses.
                output_tokens=output + thoughts,
                cache_read_tokens=min(cached, prompt),
                reasoning_tokens=thoughts,
            ),
            prompt_id=self.prompt_id,
        )
        if prompt:
            self.measured(response, window_for(model)[0])
            self.last_reported = prompt
            if model and model not in self.models:
                self.models.append(model)
            if tool:
                self.diagnostics.note("gemini-cli:tool-use-prompt-tokens")
        elif not self.replaying and tokens and not any(token_count(v) for v in tokens.values()):
            # Every usage field 0: a request was made (its text and calls are here), its size
            # is unknown (issue 15.6): a response span with usage unknown, not a failure.
            self.unmetered.append(
                dataclasses.replace(response, usage_known=False, output_tokens_reliable=False)
            )
        elif not self.replaying and not tokens and "model" not in record:
            # A model turn Gemini CLI wrote itself (≥0.44 `recordSyntheticMessage`, e.g.
            # "Binary content received"): no model, so no request. Every real one names it.
            self.diagnostics.note("gemini-cli:synthetic-model-turn")
        elif not self.replaying:
            reason = "no usage recorded (cancelled?)" if not tokens else "usage unreadable"
            self.failed.append(dataclasses.replace(response, stop_reason=reason))
        requested = bool(prompt) or any(r.id == message_id for r in self.unmetered)
        # Responses merged into this record (tool calls only, usage lost): unknown size.
        merged = [f"{message_id}#{k}" for k in range(1, len(times.merged) + 1)] if times else []
        for merged_id, (begin, end) in zip(merged, times.merged if times else [], strict=True):
            self.diagnostics.note("gemini-cli:merged-response")
            unknown = Response(merged_id, begin, end, model, Usage(0), self.prompt_id)
            self.unmetered.append(
                dataclasses.replace(unknown, usage_known=False, output_tokens_reliable=False)
            )
        self.before = (message_id if requested else None, start, response.end_ns)
        content = "".join(text for kind, text, _ in parts(record.get("content")) if kind == "text")
        if content:
            self.add_response_text(message_id, f"{message_id}:text", content, message_id)
        if self.replaying and not calls:  # a turn written again: its calls as parts only
            for call in _dicts([p.get("functionCall") for p in _dicts(record.get("content"))]):
                known = self.calls.get(text_field(call, "id") or "")
                if known is not None and f"call:{known.call_id}" not in self.log:
                    self.add_tool_call(message_id, known.call_id, known.name, call.get("args"))
        for index, call in enumerate(calls):
            at = times.calls[index] if times else CallTime(ts)
            issuer = merged[at.request - 1] if at.request else message_id if requested else None
            self.on_call(message_id, index, call, ts, issuer, at)

    def on_call(
        self,
        message_id: str,
        index: int,
        call: dict[str, Any],
        ts: int,
        response: str | None,
        at: CallTime,
    ) -> None:
        """A call of the record dated `ts`; `at`: when it started, and from what."""
        call_id = text_field(call, "id") or f"{message_id}:call{index}"
        name = text_field(call, "name") or "tool"
        arguments = call.get("args")
        end = timestamp_ns(call.get("timestamp"))
        if end is not None and not within_limits(end, ts):
            end = None  # a completion dated far from its request: not believed (issue 15.4)
        result, media = result_text(call.get("result"))
        self.unmeasured["media-part"] += media
        has_result = call.get("result") is not None
        if self.replaying and call_id in self.calls:
            end = None  # a re-synced copy of a call already on the timeline
        else:
            self.calls[call_id] = self._call(call_id, name, at, end, response, call, result)
        if end is not None:
            self.last_ns = max(self.last_ns or end, end)
            self.touch(end)
        self.add_tool_call(message_id, call_id, name, arguments)
        if has_result:
            self.add_tool_result(message_id, call_id, result)

    def _call(
        self,
        call_id: str,
        name: str,
        at: CallTime,
        end: int | None,
        response: str | None,
        call: dict[str, Any],
        result: str,
    ) -> CallDraft:
        display = call.get("resultDisplay")
        display = display if isinstance(display, dict) else {}
        launch = (
            display.get("isSubagentProgress") is True
            or text_field(display, "agentName") == name
            or bool(_SUBAGENT_RESULT.match(result))
        )
        arguments = call.get("args")
        asked = (
            tuple(v for v in arguments.values() if isinstance(v, str) and len(v) >= 16)
            if launch and isinstance(arguments, dict)
            else ()
        )
        return CallDraft(
            call_id,
            name,
            at.start_ns,
            response,
            self.prompt_id,
            ToolArguments.of(call.get("args")),
            end_ns=max(end or at.start_ns, at.start_ns),
            is_error=text_field(call, "status") in {"error", "cancelled"},
            result_chars=len(result),
            agent_id=text_field(call, "agentId"),
            has_result=call.get("result") is not None,
            launch=launch,
            said=result if launch else "",
            asked=asked,
            timing=at.timing,
        )

    def on_info(self, message_id: str, record: dict[str, Any], ts: int) -> None:
        if isinstance(binary := record.get("content"), list):  # ≥0.44: binary tool output
            self.unmeasured["media-part"] += sum(k == "media" for k, _, _ in parts(binary))
            return  # (the model's input, as the user's turn: media, not measured)
        content = text_field(record, "content")
        said = compression.notice(content)
        recording = self.recording
        manual = said is not None and said.trigger == "manual"
        after = next_reported(recording.events, recording.messages, message_id) if manual else 0
        pre = self.last_reported
        if said is None or (manual and not (pre and 0 < after < pre)):
            # Not a compression; `/compress` that compressed nothing (the next request is
            # no smaller, or there is none to tell) is only its marker.
            if said is None:
                self.markers.append(Marker(ts, "info", preview(content or "")))
            else:
                why = "the next request is no smaller" if after else "no request after it"
                self.markers.append(Marker(ts, "info", f"/compress: nothing compressed ({why})"))
            return
        if any(
            c.id.startswith("checkpoint:") and c.end_ns >= (self.last_ns or 0)
            for c in self.compactions[-1:]
        ):
            return  # ≥0.44: its `$set.messages` just before was the compression
        # The summary is not stored: the turns the compressed prompt keeps verbatim stay;
        # the others leave; the next request measures the head again (it then holds the
        # summary, labelled inferred by the engine).
        live = [m for m in self.order if m in self.items]
        first = compression.kept_from((m, recording.messages[m]) for m in live)
        kept = set(live[live.index(first) :]) if first is not None else set()  # one scan
        removed = self.drop(m for m in live if m not in kept)
        # Nothing more leaves, but the head is measured again at the next request.
        self.log.clear(keep=frozenset(Category))
        self.compacted(
            Compaction(
                id=message_id,
                start_ns=self.last_ns or ts,
                end_ns=ts,
                kind="compaction",
                trigger=said.trigger,
                pre_tokens=said.pre_tokens or pre,
                post_tokens=said.post_tokens,
                removed_items=removed,
                timing="previous record → compression notice",
            )
        )

    def on_notice(self, message_id: str, kind: str, record: dict[str, Any], ts: int) -> None:
        content = text_field(record, "content") or ""
        self.markers.append(Marker(ts, kind, preview(content)))
        if kind == "error" and "API Error" in content:
            start = self.last_ns if self.last_ns is not None and self.last_ns <= ts else ts
            self.failed.append(
                Response(
                    message_id, start, ts, "", Usage(0), self.prompt_id, True, preview(content)
                )
            )

    def on_checkpoint(self, ids: list[str]) -> None:
        """`$set.messages`: the list becomes exactly `ids`. Ids seen before stay (no new
        request); those missing leave the context. History sync may re-write the same
        turns under new (hex) ids, so it is a compression only when the list shrank:
        fewer new turns than turns that left. The turns before without the last ones are a
        rollback (≥0.55, after a failed or cancelled request: geminiChat.ts `rollback`),
        an instant on Events as a rewind is; an empty one (`/clear`) is history replaced."""
        messages = self.recording.messages  # (the list holds turns: no info, error, warning)
        turns = [m for m in self.order if messages[m].get("type") in ("user", "gemini")]
        rollback = 0 < len(ids) < len(turns) and ids == turns[: len(ids)]
        keep = set(ids)
        leaving = [m for m in self.order if m not in keep]
        removed = self.drop(leaving)
        self.order = [m for m in self.order if m in keep]
        self.position = {}
        for at, message_id in enumerate(self.order):
            self.position.setdefault(message_id, at)
        seen = set(self.order)
        new = 0
        self.replaying = True
        for message_id in ids:
            if message_id not in seen:
                self.on_message(message_id)
                seen.add(message_id)
                new += 1
        self.replaying = False
        if rollback:
            left = counted(len(turns) - len(ids), "message")
            self.markers.append(Marker(self.last_ns or 0, "rollback", f"rolled back {left}"))
        elif removed and new < len(leaving):
            ts = self.last_ns or 0
            compaction_id = f"checkpoint:{len(self.compactions)}"
            # The summary is in the new list: the head (system prompt, tools) is kept.
            self.compacted(
                Compaction(
                    id=compaction_id,
                    start_ns=ts,
                    end_ns=ts,
                    kind="compaction",
                    trigger="history replaced ($set.messages)",
                    pre_tokens=self.last_reported,
                    removed_items=removed,
                )
            )

    def on_rewind(self, target: object) -> None:
        at = self.position.get(target, 0) if isinstance(target, str) else 0
        leaving = self.order[at:]
        self.drop(leaving)
        del self.order[at:]
        for message_id in leaving:
            if self.position.get(message_id, -1) >= at:
                del self.position[message_id]
        # Before any dated record there is no moment yet: `finish` places it at the start.
        self.markers.append(Marker(self.last_ns or 0, "rewind", str(target)[:80]))

    # -- result --------------------------------------------------------------

    def finish(self) -> Session | None:
        if self.start_ns is None or self.end_ns is None or not self.recording.events:
            return None
        start = self.start_ns
        self.markers = [m if m.time_ns else Marker(start, m.kind, m.value) for m in self.markers]
        requested = self.requested()
        tools = tuple(
            c.finish(requested, end, incomplete=not c.has_result, timing=c.timing)
            for c in self.calls.values()
            for end in (c.end_ns or c.start_ns,)
        )
        window, window_source = window_for(self.models[0] if self.models else None)
        header = self.recording.header
        facts = [("recording_format", self.recording.container)]
        if text_field(header, "summary"):
            facts.append(("session_summary", preview(header["summary"])))
        facts += self.failures(no_reason="none")
        return Session(
            harness=HARNESS,
            session_id=self.recording.session_id,
            start_ns=self.start_ns,
            end_ns=self.end_ns,
            sources=(self.path,),
            models=tuple(self.models),
            provider="google",
            window_tokens=window,
            window_source=window_source,
            project=project_of(self.recording),
            facts=tuple(facts),
            **self.timeline(tools),
        )


def _dicts(value: object) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
